//! The jail's protective mounts, made by the init while it still holds
//! `CAP_SYS_ADMIN` in the jail's user namespace (bubblewrap's `--cap-add`),
//! then every capability is dropped before the command starts.
//!
//! Made here rather than by bubblewrap because bubblewrap re-reads the whole
//! mount table for each of its mounts (a hundred cost it about 40 ms); a
//! mount here is a few system calls (about 8 µs).
//!
//! Each path is opened with `RESOLVE_NO_SYMLINKS` and mounted on through
//! that descriptor (the new mount API), so a link swapped in on the way can
//! never aim a mount elsewhere:
//!
//! * `--pin PATH`: the directory bound onto itself, writable as before. A
//!   mount point cannot be renamed or removed (`EBUSY`), so no command can
//!   move it, or anything beneath it, out of its name.
//! * `--ro PATH`: the file or directory bound onto itself read-only (and a
//!   mount point too).
//! * `--hide PATH`: an empty read-only directory, or `/dev/null`, on top.
//!
//! A path that is missing is skipped (it went away since the host looked);
//! one that turned into a link fails the jail.

use std::ffi::CString;

/// The empty path the `*_EMPTY_PATH` flags name a descriptor with.
const EMPTY: &std::ffi::CStr = c"";

/// What to do at one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Pin,
    ReadOnly,
    Hide,
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Closes a descriptor when dropped.
struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closing a descriptor this program opened.
        unsafe { libc::close(self.0) };
    }
}

/// `path` as an `O_PATH` descriptor, no link followed on the way.
fn open_path(path: &CString) -> Result<Option<Fd>, String> {
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: openat2 reads `how` (of the size given) and the path.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    } as i32;
    if fd >= 0 {
        return Ok(Some(Fd(fd)));
    }
    match errno() {
        libc::ENOENT => Ok(None),
        libc::ELOOP => Err(format!("{} became a symbolic link", path.to_string_lossy())),
        e => Err(format!("cannot open {}: errno {e}", path.to_string_lossy())),
    }
}

/// A detached copy of the mount tree at `from` (a descriptor, or `path`
/// relative to the root).
fn clone_tree(from: i32, path: &std::ffi::CStr) -> Result<Fd, String> {
    // SAFETY: open_tree takes a descriptor, a path and flags.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            from,
            path.as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | AT_RECURSIVE
                | libc::AT_EMPTY_PATH as libc::c_uint,
        )
    } as i32;
    if fd < 0 {
        return Err(format!("cannot clone a mount: errno {}", errno()));
    }
    Ok(Fd(fd))
}

fn set_attr(tree: &Fd, attr_set: u64) -> Result<(), String> {
    let attr = MountAttr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr reads `attr` of the size given.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.0,
            EMPTY.as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(format!("cannot make a mount read-only: errno {}", errno()));
    }
    Ok(())
}

/// Attach the detached `tree` onto what `target` refers to.
fn attach(tree: &Fd, target: &Fd) -> Result<(), String> {
    // SAFETY: move_mount takes descriptors, empty paths and flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.0,
            EMPTY.as_ptr(),
            target.0,
            EMPTY.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return Err(format!("cannot attach a mount: errno {}", errno()));
    }
    Ok(())
}

/// An empty read-only tmpfs, detached.
fn empty_tmpfs() -> Result<Fd, String> {
    // SAFETY: fsopen/fsconfig/fsmount take strings and integers.
    unsafe {
        let fs = libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), libc::FSOPEN_CLOEXEC) as i32;
        if fs < 0 {
            return Err(format!("cannot make a tmpfs: errno {}", errno()));
        }
        let fs = Fd(fs);
        let created = libc::syscall(
            libc::SYS_fsconfig,
            fs.0,
            libc::FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        );
        if created != 0 {
            return Err(format!("cannot make a tmpfs: errno {}", errno()));
        }
        let mount = libc::syscall(
            libc::SYS_fsmount,
            fs.0,
            libc::FSMOUNT_CLOEXEC,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        ) as i32;
        if mount < 0 {
            return Err(format!("cannot mount a tmpfs: errno {}", errno()));
        }
        Ok(Fd(mount))
    }
}

/// Carry out `ops` in order.
pub fn apply(ops: &[(Op, CString)]) -> Result<(), String> {
    for (op, path) in ops {
        let Some(target) = open_path(path)? else {
            continue;
        };
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes into `stat`.
        if unsafe { libc::fstat(target.0, &mut stat) } != 0 {
            return Err(format!("cannot examine {}", path.to_string_lossy()));
        }
        let is_dir = stat.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let tree = match op {
            Op::Pin | Op::ReadOnly => clone_tree(target.0, EMPTY)?,
            Op::Hide if is_dir => empty_tmpfs()?,
            Op::Hide => clone_tree(libc::AT_FDCWD, c"/dev/null")?,
        };
        if *op != Op::Pin {
            set_attr(&tree, MOUNT_ATTR_RDONLY)?;
        }
        attach(&tree, &target).map_err(|e| format!("{e} at {}", path.to_string_lossy()))?;
    }
    Ok(())
}

/// Drop every capability for good: ambient and inheritable ones, the
/// bounding set, then the permitted and effective sets (`keep` excepted,
/// for this program only).
pub fn drop_capabilities(keep: Option<u32>) -> Result<(), String> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    // SAFETY: prctl and capset with plain integers and live structs.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        for cap in 0..64 {
            if Some(cap) != keep {
                // Fails past the last capability this kernel knows; fine.
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
        }
        let mut data = [Data::default(); 2];
        if let Some(cap) = keep {
            let (word, bit) = ((cap / 32) as usize, 1u32 << (cap % 32));
            data[word].effective = bit;
            data[word].permitted = bit;
        }
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        if libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) != 0 {
            return Err(format!("cannot drop capabilities: errno {}", errno()));
        }
    }
    Ok(())
}

//! The socket broker: no jailed process reaches a Unix socket outside the
//! jail's own roots, network on or off.
//!
//! A pathname Unix socket is found by its inode, whatever the network
//! namespace, and a read-only mount does not stop a `connect` to it, so the
//! jail's view alone would let a command reach any daemon whose socket it
//! can see (a container engine's, a desktop session's bus, an SSH agent's).
//! So the command runs under a seccomp filter ([`filter`]) that
//!
//! * hands every `connect` to this program (a user notification), which
//!   makes the connection itself on the command's own socket (taken with
//!   `pidfd_getfd`), after looking at the address it copied: a pathname
//!   socket must lie on a writable mount of the jail (its write roots and
//!   its own emptied `/tmp`, `/run`, …; everything else of the host is
//!   mounted read-only), else `EACCES`. Doing the `connect` here, on a copy
//!   of the address, leaves no window in which the command could change
//!   the address (or the descriptor) between the check and the use;
//! * refuses datagram Unix sockets (`EACCES`): a datagram can be addressed
//!   to any socket file with `sendto` or `sendmsg`, which no filter can see
//!   into; stream and seqpacket sockets, and socket pairs of those, work;
//! * refuses `io_uring_setup`, whose rings connect without a system call;
//! * refuses a new user namespace (`unshare` or `clone` with
//!   `CLONE_NEWUSER`; `clone3`, whose flags it cannot see, is `ENOSYS`, and
//!   C libraries fall back to `clone`): bubblewrap's `--disable-userns`,
//!   which would take the init's right to mount with it.
//!
//! This program shares the jail's network namespace, Landlock domain and
//! mount namespace with the command, so a connection it makes is one the
//! command could make itself, apart from the check.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const AF_UNIX: u32 = libc::AF_UNIX as u32;
const SOCK_TYPE_MASK: u32 = 0xf;

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xc000_00b7;

/// The command's seccomp program (see the module docs).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn filter() -> Vec<libc::sock_filter> {
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_NOTIFY: u32 = 0x7fc0_0000;
    const RET_DENY: u32 = 0x0005_0000 | libc::EACCES as u32;
    const RET_KILL: u32 = 0x8000_0000;
    const RET_NOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;
    const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
    const NR: u32 = 0;
    const ARCH_AT: u32 = 4;
    const ARG0: u32 = 16;
    const ARG1: u32 = 24;
    let op = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let ld = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let jge = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let jset = libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K;
    let and = libc::BPF_ALU | libc::BPF_AND | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    // Jump offsets count from the next instruction; the targets are the
    // returns from 20 on.
    vec![
        // 0: another ABI has other numbers: killed, as by the host's filter.
        op(ld, ARCH_AT, 0, 0),
        op(jeq, ARCH, 1, 0),
        op(ret, RET_KILL, 0, 0),
        op(ld, NR, 0, 0),
        // 4: x32 numbers.
        op(jge, 0x4000_0000, 16, 0),
        op(jeq, libc::SYS_connect as u32, 17, 0),
        op(jeq, libc::SYS_io_uring_setup as u32, 13, 0),
        // 7: clone3's flags are behind a pointer: refused as unknown, and C
        // libraries fall back to clone.
        op(jeq, libc::SYS_clone3 as u32, 16, 0),
        op(jeq, libc::SYS_unshare as u32, 3, 0),
        op(jeq, libc::SYS_clone as u32, 2, 0),
        op(jeq, libc::SYS_socket as u32, 3, 0),
        op(jeq, libc::SYS_socketpair as u32, 2, 10),
        // 12: unshare or clone: no new user namespace (one would give the
        // command all capabilities over mounts of its own).
        op(ld, ARG0, 0, 0),
        op(jset, libc::CLONE_NEWUSER as u32, 11, 8),
        // 14: socket or socketpair: of a Unix socket, only stream and
        // seqpacket types.
        op(ld, ARG0, 0, 0),
        op(jeq, AF_UNIX, 0, 6),
        op(ld, ARG1, 0, 0),
        op(and, SOCK_TYPE_MASK, 0, 0),
        op(jeq, libc::SOCK_STREAM as u32, 3, 0),
        op(jeq, libc::SOCK_SEQPACKET as u32, 2, 0),
        // 20: refused.
        op(ret, RET_DENY, 0, 0),
        // 21: x32.
        op(ret, RET_KILL, 0, 0),
        // 22: allowed.
        op(ret, RET_ALLOW, 0, 0),
        // 23: connect: this program decides.
        op(ret, RET_NOTIFY, 0, 0),
        // 24: clone3.
        op(ret, RET_NOSYS, 0, 0),
        // 25: a new user namespace.
        op(ret, RET_EPERM, 0, 0),
    ]
}

/// In the command's process, before exec: install [`filter`] and return
/// the notification descriptor (`None` where the kernel has no seccomp
/// notifications: the command then runs without the broker).
pub fn install(filter: &[libc::sock_filter]) -> Result<Option<i32>, i32> {
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    let flags = [
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
    ];
    let mut last = 0;
    for flag in flags {
        // SAFETY: seccomp reads `program`, which points at `filter`.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flag,
                &program as *const libc::sock_fprog,
            )
        } as i32;
        if fd >= 0 {
            return Ok(Some(fd));
        }
        last = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if last != libc::EINVAL {
            break;
        }
    }
    if last == libc::EINVAL || last == libc::ENOSYS {
        Ok(None)
    } else {
        Err(last)
    }
}

/// Send `fd` over the Unix socket `channel` (the command's side, before
/// exec).
pub fn send_fd(channel: i32, fd: i32) -> bool {
    // SAFETY: a control message with one descriptor, in a buffer sized for
    // it by CMSG_SPACE.
    unsafe {
        let mut byte = [1u8];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let space = libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as usize;
        let mut control = [0u8; 64];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>(), fd);
        libc::sendmsg(channel, &msg, 0) == 1
    }
}

/// Receive a descriptor sent by [`send_fd`]; `None` when the other side
/// closed without sending one (exec failed, or no broker).
pub fn receive_fd(channel: i32) -> Option<OwnedFd> {
    // SAFETY: as in `send_fd`, receiving into live buffers.
    unsafe {
        let mut byte = [0u8];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u8; 64];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len();
        loop {
            let n = libc::recvmsg(channel, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if n != 1 {
                return None;
            }
            break;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>());
        Some(OwnedFd::from_raw_fd(fd))
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Take one notification from `listener` and answer it (on a thread of its
/// own when the connection may block). Returns false when the listener is
/// done (no process left under the filter).
pub fn serve_one(listener: i32) -> bool {
    // SAFETY: a zeroed notification buffer for the kernel to fill.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one `seccomp_notif`.
    if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) } != 0 {
        let e = errno();
        // Interrupted, or the task went away before it was received.
        return e == libc::EINTR || e == libc::ENOENT;
    }
    let Some(request) = Request::read(listener, &notif) else {
        return true;
    };
    if request.may_block() {
        let _ = std::thread::Builder::new()
            .name("broker".into())
            .spawn(move || request.answer(listener));
    } else {
        request.answer(listener);
    }
    true
}

/// One `connect` to make on the command's behalf.
struct Request {
    id: u64,
    pid: i32,
    /// The command's own socket (the same open file, taken from it).
    socket: Result<OwnedFd, i32>,
    /// The address it passed, copied.
    address: Result<Vec<u8>, i32>,
}

impl Request {
    fn read(listener: i32, notif: &libc::seccomp_notif) -> Option<Request> {
        let pid = notif.pid as i32;
        let (fd, address, length) = (
            notif.data.args[0] as i32,
            notif.data.args[1],
            notif.data.args[2] as usize,
        );
        let socket = take_fd(pid, fd);
        let address = read_memory(pid, address, length.min(128));
        // The process may have been replaced by another with its id while
        // its memory was read: then the answer goes nowhere.
        // SAFETY: the ioctl reads one u64.
        if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &notif.id) } != 0 {
            return None;
        }
        Some(Request {
            id: notif.id,
            pid,
            socket,
            address,
        })
    }

    /// Whether the connection may wait (a blocking socket).
    fn may_block(&self) -> bool {
        match &self.socket {
            Ok(s) => {
                // SAFETY: F_GETFL on a descriptor this program owns.
                let flags = unsafe { libc::fcntl(s.as_raw_fd(), libc::F_GETFL) };
                flags & libc::O_NONBLOCK == 0
            }
            Err(_) => false,
        }
    }

    fn answer(self, listener: i32) {
        let result = match (&self.socket, &self.address) {
            (Err(e), _) | (_, Err(e)) => Err(*e),
            (Ok(socket), Ok(address)) => connect(self.pid, socket.as_raw_fd(), address),
        };
        let mut response = libc::seccomp_notif_resp {
            id: self.id,
            val: 0,
            error: result.err().map_or(0, |e| -e),
            flags: 0,
        };
        // SAFETY: the ioctl reads one response; a task gone meanwhile makes
        // it fail, which changes nothing.
        unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
    }
}

/// The descriptor `fd` of process `pid`, as a descriptor of this program.
fn take_fd(pid: i32, fd: i32) -> Result<OwnedFd, i32> {
    // SAFETY: pidfd_open and pidfd_getfd take integers.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if pidfd < 0 {
            return Err(libc::ESRCH);
        }
        let pidfd = OwnedFd::from_raw_fd(pidfd);
        let taken = libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) as i32;
        if taken < 0 {
            return Err(match errno() {
                libc::EBADF => libc::EBADF,
                _ => libc::EACCES,
            });
        }
        Ok(OwnedFd::from_raw_fd(taken))
    }
}

/// `length` bytes at `address` in process `pid`.
fn read_memory(pid: i32, address: u64, length: usize) -> Result<Vec<u8>, i32> {
    let mut buffer = vec![0u8; length];
    let local = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: length,
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: length,
    };
    // SAFETY: reads into `buffer`, which is `length` bytes long.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(libc::EFAULT);
    }
    buffer.truncate(n as usize);
    Ok(buffer)
}

/// Connect `socket` to the copied `address` as the command asked, a
/// pathname Unix socket only if it is the jail's own.
fn connect(pid: i32, socket: i32, address: &[u8]) -> Result<(), i32> {
    // SAFETY: getsockopt writes one int.
    let domain = unsafe {
        let mut domain: i32 = 0;
        let mut size = std::mem::size_of::<i32>() as libc::socklen_t;
        if libc::getsockopt(
            socket,
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&mut domain as *mut i32).cast(),
            &mut size,
        ) != 0
        {
            return Err(errno());
        }
        domain
    };
    let family = address
        .get(..2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]) as i32);
    let pathname = domain == libc::AF_UNIX
        && family == Some(libc::AF_UNIX)
        && address.get(2).is_some_and(|b| *b != 0);
    let result = if pathname {
        let path: Vec<u8> = address[2..]
            .iter()
            .copied()
            .take_while(|b| *b != 0)
            .collect();
        let target = own_socket(pid, &path)?;
        let mut name: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        name.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let via = format!("/proc/self/fd/{}", target.as_raw_fd());
        for (slot, byte) in name.sun_path.iter_mut().zip(via.bytes()) {
            *slot = byte as libc::c_char;
        }
        // SAFETY: connect reads `name` of the size given.
        unsafe {
            libc::connect(
                socket,
                (&name as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        }
    } else {
        // SAFETY: connect reads the copied address of its own length.
        unsafe {
            libc::connect(
                socket,
                address.as_ptr().cast(),
                address.len() as libc::socklen_t,
            )
        }
    };
    if result == 0 { Ok(()) } else { Err(errno()) }
}

/// The socket file `path` names for process `pid` (relative to its working
/// directory), opened without following it further than `connect` would,
/// if it lies on a writable mount of the jail; `EACCES` otherwise.
fn own_socket(pid: i32, path: &[u8]) -> Result<OwnedFd, i32> {
    let c_path = CString::new(path).map_err(|_| libc::EINVAL)?;
    let base = if path.first() == Some(&b'/') {
        None
    } else {
        let cwd = CString::new(format!("/proc/{pid}/cwd")).expect("no NUL");
        // SAFETY: open returns a new descriptor or -1.
        let fd = unsafe {
            libc::open(
                cwd.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(libc::ESRCH);
        }
        // SAFETY: a descriptor just opened.
        Some(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let dir = base.as_ref().map_or(libc::AT_FDCWD, |b| b.as_raw_fd());
    // SAFETY: openat returns a new descriptor or -1.
    let fd = unsafe { libc::openat(dir, c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a descriptor just opened.
    let target = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fstat and fstatvfs write into zeroed structs.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(target.as_raw_fd(), &mut stat) != 0 {
            return Err(errno());
        }
        if stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(libc::ECONNREFUSED);
        }
        let mut fs: libc::statvfs = std::mem::zeroed();
        if libc::fstatvfs(target.as_raw_fd(), &mut fs) != 0 {
            return Err(errno());
        }
        // Everything of the host outside the roots is read-only in the jail.
        if fs.f_flag & libc::ST_RDONLY != 0 {
            return Err(libc::EACCES);
        }
    }
    Ok(target)
}

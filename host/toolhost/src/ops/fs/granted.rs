//! A granted directory pinned to what was approved.
//!
//! A grant names a directory by its path, but a path is only a name: once
//! the host has started, a tool that can write beside it may rename it, or
//! replace it with a symbolic link to the user's home. A [`GrantedDir`]
//! holds the directory itself open (an `O_PATH` descriptor, which reads
//! nothing by itself), so everything the host gives a component reaches the
//! directory that was approved, never what is at its path later:
//!
//! * the `fs-read` and `fs-write` Operations work through handles made from
//!   it ([`crate::ops::fs::LocalFs::pinned`]);
//! * a WASI preopen opens it again through `/proc/self/fd` ([`Self::reopen_path`]);
//! * the process jail binds it by descriptor, and Landlock's rules name the
//!   descriptor; a program is not started while the path names something
//!   else ([`Self::replaced`]), since it would find that at the path.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A directory as it was approved: its real path then, and the directory
/// itself, held open.
#[derive(Clone, Debug)]
pub struct GrantedDir {
    path: PathBuf,
    fd: Arc<OwnedFd>,
    dev: u64,
    ino: u64,
}

impl GrantedDir {
    /// The directory `fd` (an open descriptor of it), approved as `path`
    /// (its real path: no symbolic link in it).
    pub fn from_fd(path: PathBuf, fd: OwnedFd) -> io::Result<GrantedDir> {
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return Err(io::Error::other(format!(
                "{} is not a directory",
                path.display()
            )));
        }
        Ok(GrantedDir {
            path,
            fd: Arc::new(fd),
            dev: stat.st_dev,
            ino: stat.st_ino,
        })
    }

    /// The directory at `path` now, following symbolic links (for
    /// directories a person names as they are, such as the workspace).
    pub fn open(path: &Path) -> io::Result<GrantedDir> {
        let real = path.canonicalize()?;
        let fd = rustix::fs::open(
            &real,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        GrantedDir::from_fd(real, fd)
    }

    /// Its real path when it was approved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory itself.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A path that opens this very directory whatever lies at
    /// [`Self::path`] now (`/proc/self/fd/N`, a link the kernel resolves to
    /// the open directory, not to a name), for APIs that take a path.
    pub fn reopen_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// A `cap-std` handle on the directory itself.
    pub fn dir(&self) -> io::Result<cap_std::fs::Dir> {
        let fd = rustix::io::fcntl_dupfd_cloexec(&*self.fd, 0)?;
        Ok(cap_std::fs::Dir::from_std_file(std::fs::File::from(fd)))
    }

    /// What lies at its path now, when that is no longer this directory:
    /// `it is now a symbolic link to /home/u`, `it is missing`, `it is now
    /// another directory`. `None` while the path names this directory
    /// itself (not through a symbolic link of its own).
    pub fn replaced(&self) -> Option<String> {
        match std::fs::symlink_metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Some("it is missing".into()),
            Err(e) => Some(format!("it cannot be examined: {e}")),
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&self.path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                Some(format!("it is now a symbolic link to {target}"))
            }
            Ok(meta) => {
                use std::os::unix::fs::MetadataExt;
                if (meta.dev(), meta.ino()) == (self.dev, self.ino) {
                    None
                } else if meta.is_dir() {
                    Some("it is now another directory".into())
                } else {
                    Some("it is now a file".into())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_keeps_the_approved_directory_and_says_what_replaced_it() {
        let (_tmp, base) = crate::testing::real_temp_dir();
        let docs = base.join("docs");
        std::fs::create_dir(&docs).unwrap();
        std::fs::write(docs.join("a.txt"), "approved").unwrap();
        std::fs::create_dir(base.join("home")).unwrap();
        std::fs::write(base.join("home/a.txt"), "secret").unwrap();
        let granted = GrantedDir::open(&docs).unwrap();
        assert_eq!(granted.replaced(), None);

        std::fs::rename(&docs, base.join("docs.old")).unwrap();
        assert_eq!(granted.replaced().as_deref(), Some("it is missing"));
        std::os::unix::fs::symlink(base.join("home"), &docs).unwrap();
        assert_eq!(
            granted.replaced(),
            Some(format!(
                "it is now a symbolic link to {}",
                base.join("home").display()
            ))
        );
        // Every way in still reaches the approved directory.
        let through_proc = std::fs::read_to_string(granted.reopen_path().join("a.txt")).unwrap();
        assert_eq!(through_proc, "approved");
        let dir = granted.dir().unwrap();
        assert_eq!(dir.read_to_string("a.txt").unwrap(), "approved");

        std::fs::remove_file(&docs).unwrap();
        std::fs::create_dir(&docs).unwrap();
        assert_eq!(
            granted.replaced().as_deref(),
            Some("it is now another directory")
        );
    }
}

//! The host's temp directory, and each command's own temp directory in it:
//! nothing a command does to its `TMPDIR` (change its mode, replace it,
//! fill it) reaches the next command or the next start.
//!
//! * The root, `<system temp>/toolhost-<uid>`, is the host's (full-output
//!   files live there); no command writes in it. At start it is made
//!   private (0700) where missing, and repaired where something changed it:
//!   a wrong mode is set back, a file or link in its place is moved aside,
//!   a directory of another user's is left alone for one of our own. What
//!   was repaired is said once.
//! * Each command gets `tmp-<random>` in it as its `TMPDIR` (its only
//!   writable place beside the workspace), removed with everything in it
//!   once the command and every process it started are gone.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The host's temp directory (made private, repaired where changed) and,
/// when something had to be repaired, what.
pub fn temp_root() -> io::Result<(PathBuf, Option<String>)> {
    let uid = rustix::process::getuid().as_raw();
    let system = std::env::temp_dir();
    let dir = system.join(format!("toolhost-{uid}"));
    let made = |dir: &Path| -> io::Result<bool> {
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    };
    made(&dir)?;
    let meta = std::fs::symlink_metadata(&dir)?;
    let shown = dir.display();
    let report = if meta.is_dir() && meta.uid() == uid {
        let mode = meta.mode() & 0o7777;
        if mode == 0o700 {
            None
        } else {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
            Some(format!("{shown} had mode {mode:o}; set back to 700"))
        }
    } else if meta.uid() == uid {
        // A file or a link in its place: moved aside, kept for a look.
        let what = if meta.file_type().is_symlink() {
            "a symbolic link"
        } else {
            "not a directory"
        };
        let aside = system.join(format!(
            "toolhost-{uid}.moved-{}",
            crate::files::unique_suffix()
        ));
        std::fs::rename(&dir, &aside)?;
        made(&dir)?;
        Some(format!(
            "{shown} was {what}; moved to {} and made anew",
            aside.display()
        ))
    } else {
        // Another user's: nothing of it is used. One of our own beside it.
        let own = system.join(format!("toolhost-{uid}-{}", crate::files::unique_suffix()));
        made(&own)?;
        return Ok((
            own.canonicalize()?,
            Some(format!(
                "{shown} belongs to uid {}; using {} instead",
                meta.uid(),
                own.display()
            )),
        ));
    };
    Ok((dir.canonicalize()?, report))
}

/// One command's temp directory, removed (with all in it) when dropped.
#[derive(Debug)]
pub(crate) struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// A new private directory in `root`. Where the root was made unusable
    /// meanwhile (its mode changed), it is set back to 0700 once and the
    /// directory made again.
    pub(crate) fn create(root: &Path) -> io::Result<Scratch> {
        let attempt = || {
            let path = root.join(format!("tmp-{}", crate::files::unique_suffix()));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .map(|()| Scratch { path })
        };
        attempt().or_else(|e| {
            let ours = std::fs::symlink_metadata(root)
                .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::getuid().as_raw());
            if !ours {
                return Err(e);
            }
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))?;
            attempt()
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A command may have closed its own directories to itself.
        make_removable(&self.path);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Give the owner search and write permission on every directory beneath
/// `path` (not following links), so that it can be removed.
fn make_removable(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    if meta.mode() & 0o700 != 0o700 {
        let _ = std::fs::set_permissions(
            path,
            std::fs::Permissions::from_mode(meta.mode() & 0o7777 | 0o700),
        );
    }
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_removable(&entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_goes_with_all_in_it_even_when_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(tmp.path()).unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::create_dir_all(path.join("a/b")).unwrap();
        std::fs::write(path.join("a/b/f"), "x").unwrap();
        std::fs::set_permissions(path.join("a"), std::fs::Permissions::from_mode(0o0)).unwrap();
        drop(scratch);
        assert!(!path.exists());
        // A root closed meanwhile is opened again for the next one.
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
        let next = Scratch::create(tmp.path()).unwrap();
        assert!(next.path().is_dir());
    }
}

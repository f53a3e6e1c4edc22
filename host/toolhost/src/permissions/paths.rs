//! Paths outside the granted roots: asked about where a file Operation
//! finds one, and reached, once allowed, through a backend rooted at the
//! place the person approved.
//!
//! The question names the path's real path (every symbolic link resolved),
//! so a link in the workspace that leads to `~/.ssh` is asked about as
//! `~/.ssh/…`, and the Operation then runs on that real path, never on the
//! name the tool gave: what was approved is what is read or written. A
//! protected path (toolhost's own configuration, a workspace's
//! `toolhost.toml` and `.toolhost/`, `.git/hooks/`, `.git/config`) is never
//! asked about. A directory is approved with everything in it; a file
//! alone. What a call was allowed lasts for the call (its other Operations
//! on the same place are not asked again); "session" and "always" answers
//! are the asker's and the rules'.

use super::ask::{CallAsking, Need, Place};
use crate::files::real_or_planned;
use crate::ops::fs::{ErrorCode, FsError, LocalFs, fs_error};
use crate::ops::usage::Usage;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// `path` (absolute) with `.` and `..` resolved lexically (as Pi resolves
/// them), then every symbolic link of its longest existing prefix; `None`
/// when it is not absolute.
pub(crate) fn real_path(path: &str) -> Option<PathBuf> {
    crate::ops::fs::normalize(path).map(|lexical| real_or_planned(&lexical))
}

/// The nearest directory at or above `path` that exists.
fn existing_dir(path: &Path) -> Option<PathBuf> {
    let mut dir = path;
    loop {
        if dir.is_dir() {
            return Some(dir.to_path_buf());
        }
        dir = dir.parent()?;
    }
}

impl CallAsking {
    /// The backend that reaches `path`, refused as `refused` because it is
    /// outside the call's roots, when a rule or the person allows the call
    /// to read it (or to write it, `write`; to create it as a directory,
    /// `mkdir`), and the real path to run the Operation on. The error keeps the refusal's code and first line, and
    /// says on the next line why it stands and what the person can do.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn beyond(
        &self,
        path: &str,
        write: bool,
        mkdir: bool,
        refused: &FsError,
        cancel: &CancellationToken,
        usage: &Usage,
    ) -> Result<(Arc<LocalFs>, String), FsError> {
        let Some(real) = real_path(path) else {
            return Err(refused.clone());
        };
        if self.protected.out_of_reach(&real) {
            return Err(fs_error(
                ErrorCode::Protected,
                format!("{} is protected", real.display()),
            ));
        }
        let real_text = real.to_string_lossy().into_owned();
        if let Some(fs) = self.place_for(&real, write, mkdir) {
            return Ok((fs, real_text));
        }
        let directory = mkdir || real.is_dir();
        let need = Need::Path {
            path: real_text.clone(),
            write,
            directory,
        };
        if let Err(text) = self.need(need, &refused.message, cancel, usage).await {
            let message = if text.starts_with(&refused.message) {
                text
            } else {
                format!("{}\n{text}", refused.message)
            };
            return Err(FsError {
                code: refused.code,
                message,
            });
        }
        let root = if directory {
            real.clone()
        } else {
            real.parent()
                .and_then(existing_dir)
                .ok_or_else(|| refused.clone())?
        };
        let fs = LocalFs::new(std::slice::from_ref(&root))
            .map_err(|e| fs_error(ErrorCode::Other, format!("{}: {e}", root.display())))?
            .protect(self.protected.as_ref().clone());
        // The directory opened must be the one asked about: a name swapped
        // for a link since then is refused.
        if crate::ops::fs::FsRead::roots(&fs).first() != Some(&root.to_string_lossy().into_owned())
        {
            return Err(refused.clone());
        }
        let fs = Arc::new(fs);
        self.places.lock().expect("places lock").push(Place {
            real,
            directory,
            write,
            fs: fs.clone(),
        });
        Ok((fs, real_text))
    }

    fn place_for(&self, real: &Path, write: bool, mkdir: bool) -> Option<Arc<LocalFs>> {
        let places = self.places.lock().expect("places lock");
        places
            .iter()
            .find(|p| p.covers(real, write, mkdir))
            .map(|p| p.fs.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_path_resolves_dots_links_and_a_missing_tail() {
        let (_tmp, base) = crate::testing::real_temp_dir_with(&["notes"]);
        std::os::unix::fs::symlink(base.join("notes"), base.join("link")).unwrap();
        let at = |p: &str| real_path(&format!("{}/{p}", base.display()));
        assert_eq!(at("link/a.md"), Some(base.join("notes/a.md")));
        assert_eq!(at("x/../link/new/b.md"), Some(base.join("notes/new/b.md")));
        assert_eq!(real_path("relative/path"), None);
    }
}

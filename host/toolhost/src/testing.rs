//! What the library's unit tests share.

use std::path::PathBuf;

/// A new temporary directory and its real path (with any link on the way
/// to it resolved, as the host's checks compare real paths); the directory
/// is removed when the first part is dropped.
pub(crate) fn real_temp_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let real = dir.path().canonicalize().expect("its real path");
    (dir, real)
}

/// [`real_temp_dir`] with the directories `dirs` (relative) made in it.
pub(crate) fn real_temp_dir_with(dirs: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let (dir, real) = real_temp_dir();
    for made in dirs {
        std::fs::create_dir_all(real.join(made)).expect("a directory in it");
    }
    (dir, real)
}

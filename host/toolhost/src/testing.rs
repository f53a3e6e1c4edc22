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

//! The full-output files of one host's shell tools, readable by `read`.
//!
//! `bash` saves a long output to a file in the host's temp directory and
//! names it in its result (`Full output: /tmp/toolhost-1000/toolhost-bash-
//! <hex>.log`), as Pi's does; Pi's `read` then opens it. The temp directory
//! is no root of `read` here: it holds every session's files and each
//! command's own scratch directory. So the shell tools' writer records each
//! file it creates ([`Recorded`]), and `read` may read exactly those files,
//! by the path its result named ([`WithOutputs`]): read-only, only this
//! host's, never another session's log or anything else in the directory.

use super::{DirEntry, FsError, FsRead, FsWrite, Metadata};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The paths of the full-output files one host's shell tools created.
#[derive(Debug, Default)]
pub(crate) struct OutputFiles(Mutex<HashSet<String>>);

impl OutputFiles {
    fn contains(&self, path: &str) -> bool {
        self.0.lock().expect("output files lock").contains(path)
    }

    fn insert(&self, path: &str) {
        let mut files = self.0.lock().expect("output files lock");
        if !files.contains(path) {
            files.insert(path.to_string());
        }
    }
}

/// The shell tools' writer in the temp directory, recording each file it
/// writes in `files`.
#[derive(Debug)]
pub(crate) struct Recorded {
    pub inner: Arc<dyn FsWrite>,
    pub files: Arc<OutputFiles>,
}

impl Recorded {
    fn noted(&self, path: &str, written: Result<(), FsError>) -> Result<(), FsError> {
        if written.is_ok() {
            self.files.insert(path);
        }
        written
    }
}

impl FsWrite for Recorded {
    fn write_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        self.noted(path, self.inner.write_file(path, contents))
    }

    fn append_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        self.noted(path, self.inner.append_file(path, contents))
    }

    fn create_dir_all(&self, path: &str) -> Result<(), FsError> {
        self.inner.create_dir_all(path)
    }

    fn access(&self, path: &str) -> Result<(), FsError> {
        self.inner.access(path)
    }

    fn lock_key(&self, path: &str) -> Result<String, FsError> {
        self.inner.lock_key(path)
    }

    fn roots(&self) -> Vec<String> {
        self.inner.roots()
    }

    fn is_remote(&self) -> bool {
        self.inner.is_remote()
    }
}

/// `read`'s view: its own roots, and the recorded full-output files, read
/// from the temp directory (`outputs`).
#[derive(Debug)]
pub(crate) struct WithOutputs {
    pub inner: Arc<dyn FsRead>,
    pub files: Arc<OutputFiles>,
    pub outputs: Arc<dyn FsRead>,
}

impl WithOutputs {
    fn for_path(&self, path: &str) -> &dyn FsRead {
        if self.files.contains(path) {
            self.outputs.as_ref()
        } else {
            self.inner.as_ref()
        }
    }
}

impl FsRead for WithOutputs {
    fn stat(&self, path: &str) -> Result<Metadata, FsError> {
        self.for_path(path).stat(path)
    }

    fn read(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        self.for_path(path).read(path, offset, max_bytes)
    }

    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        self.inner.list_dir(path)
    }

    fn roots(&self) -> Vec<String> {
        self.inner.roots()
    }

    fn read_unlinked(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        self.for_path(path).read_unlinked(path, offset, max_bytes)
    }

    fn list_dir_unlinked(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        self.inner.list_dir_unlinked(path)
    }

    fn is_remote(&self) -> bool {
        self.inner.is_remote()
    }

    fn protects(&self, path: &str) -> bool {
        self.for_path(path).protects(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::fs::{ErrorCode, LocalFs};

    #[test]
    fn read_reaches_the_files_the_shell_wrote_and_nothing_else_of_the_temp_directory() {
        let (_tmp, base) = crate::testing::real_temp_dir();
        let (ws, temp) = (base.join("ws"), base.join("temp"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&temp).unwrap();
        let other = temp.join("toolhost-bash-0000000000000001.log");
        std::fs::write(&other, "another session's output").unwrap();
        let files = Arc::new(OutputFiles::default());
        let temp_fs = Arc::new(LocalFs::new(std::slice::from_ref(&temp)).unwrap());
        let shell = Recorded {
            inner: temp_fs.clone(),
            files: files.clone(),
        };
        let read = WithOutputs {
            inner: Arc::new(LocalFs::new(std::slice::from_ref(&ws)).unwrap()),
            files,
            outputs: temp_fs,
        };
        let mine = temp.join("toolhost-bash-0000000000000002.log");
        let mine = mine.to_str().unwrap();
        shell.append_file(mine, b"this session's output").unwrap();
        assert_eq!(read.read(mine, 0, 100).unwrap(), b"this session's output");
        assert_eq!(read.stat(mine).unwrap().size, 21);
        let refused = read.read(other.to_str().unwrap(), 0, 100).unwrap_err();
        assert_eq!(refused.code, ErrorCode::OutsideRoots);
        assert_eq!(
            read.list_dir(temp.to_str().unwrap()).unwrap_err().code,
            ErrorCode::OutsideRoots
        );
        assert_eq!(read.roots(), [ws.to_str().unwrap()]);
    }
}

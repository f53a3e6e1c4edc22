//! The file Operations of a remote workspace: each one a request to its
//! service, whose own local backend (its roots, its protected paths) gives
//! the answer.

use super::Connection;
use super::wire::{Op, Reply};
use crate::ops::fs::{DirEntry, ErrorCode, FsError, FsRead, FsWrite, Metadata, fs_error};
use std::sync::Arc;

/// The files of a remote workspace, read and written by its service.
#[derive(Clone, Debug)]
pub struct RemoteFs {
    connection: Arc<Connection>,
}

impl RemoteFs {
    pub fn new(connection: Arc<Connection>) -> RemoteFs {
        RemoteFs { connection }
    }

    /// `op`'s reply, or the error it answered with, or the connection's.
    fn ask(&self, op: Op, body: Vec<u8>) -> Result<(Reply, Vec<u8>), FsError> {
        match self.connection.ask(op, body) {
            Ok((Reply::FsError { error }, _)) => Err(error),
            Ok(answer) => Ok(answer),
            Err(why) => Err(fs_error(ErrorCode::Other, why)),
        }
    }

    /// What `pick` takes of `op`'s reply and body; a reply it does not
    /// take answers out of turn.
    fn answered<T>(
        &self,
        op: Op,
        body: Vec<u8>,
        pick: impl FnOnce(Reply, Vec<u8>) -> Result<T, Reply>,
    ) -> Result<T, FsError> {
        let (reply, bytes) = self.ask(op, body)?;
        pick(reply, bytes).map_err(|other| unexpected(&other))
    }

    fn done(&self, op: Op, body: Vec<u8>) -> Result<(), FsError> {
        self.answered(op, body, |reply, _| match reply {
            Reply::Done => Ok(()),
            other => Err(other),
        })
    }

    fn read_with(
        &self,
        path: &str,
        offset: u64,
        max: u64,
        unlinked: bool,
    ) -> Result<Vec<u8>, FsError> {
        let path = path.into();
        let op = Op::Read {
            path,
            offset,
            max,
            unlinked,
        };
        self.answered(op, Vec::new(), |reply, bytes| match reply {
            Reply::Bytes => Ok(bytes),
            other => Err(other),
        })
    }

    fn list_with(&self, path: &str, unlinked: bool) -> Result<Vec<DirEntry>, FsError> {
        let op = Op::ListDir {
            path: path.into(),
            unlinked,
        };
        self.answered(op, Vec::new(), |reply, _| match reply {
            Reply::Entries { entries } => Ok(entries),
            other => Err(other),
        })
    }
}

fn unexpected(reply: &Reply) -> FsError {
    fs_error(ErrorCode::Other, super::out_of_turn(reply))
}

impl FsRead for RemoteFs {
    /// Judged here by the path's shape, as the service judges the real one
    /// there: the workspace's own toolhost.toml and .toolhost/, and anything
    /// in or named `.git`.
    fn protects(&self, path: &str) -> bool {
        let path = std::path::Path::new(path);
        let rel = path.strip_prefix(self.connection.root()).unwrap_or(path);
        rel == std::path::Path::new("toolhost.toml")
            || rel.starts_with(".toolhost")
            || path.components().any(|c| c.as_os_str() == ".git")
    }

    fn stat(&self, path: &str) -> Result<Metadata, FsError> {
        let op = Op::Stat { path: path.into() };
        self.answered(op, Vec::new(), |reply, _| match reply {
            Reply::Metadata { metadata } => Ok(metadata),
            other => Err(other),
        })
    }

    fn read(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        self.read_with(path, offset, max_bytes, false)
    }

    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        self.list_with(path, false)
    }

    fn roots(&self) -> Vec<String> {
        vec![self.connection.root().to_string()]
    }

    fn read_unlinked(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        self.read_with(path, offset, max_bytes, true)
    }

    fn list_dir_unlinked(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        self.list_with(path, true)
    }

    fn is_remote(&self) -> bool {
        true
    }
}

impl FsWrite for RemoteFs {
    fn write_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        self.done(Op::Write { path: path.into() }, contents.to_vec())
    }

    fn append_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        self.done(Op::Append { path: path.into() }, contents.to_vec())
    }

    fn create_dir_all(&self, path: &str) -> Result<(), FsError> {
        self.done(Op::CreateDirAll { path: path.into() }, Vec::new())
    }

    fn access(&self, path: &str) -> Result<(), FsError> {
        self.done(Op::Access { path: path.into() }, Vec::new())
    }

    fn lock_key(&self, path: &str) -> Result<String, FsError> {
        let op = Op::LockKey { path: path.into() };
        self.answered(op, Vec::new(), |reply, _| match reply {
            Reply::Key { key } => Ok(key),
            other => Err(other),
        })
    }

    fn roots(&self) -> Vec<String> {
        vec![self.connection.root().to_string()]
    }

    fn is_remote(&self) -> bool {
        true
    }
}

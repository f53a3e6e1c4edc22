//! `fs-types`, `fs-read` and `fs-write`: the file Operations' types at the
//! edge, and their glue.

use super::{fs_read, fs_types, fs_write};
use crate::ops::fs::{self, FsError, MutationLock, lock_file_in_turn};
use crate::wit::OpsCtx;
use wasmtime::component::Resource;

impl From<fs::ErrorCode> for fs_types::ErrorCode {
    fn from(code: fs::ErrorCode) -> Self {
        use fs::ErrorCode as C;
        match code {
            C::NotFound => Self::NotFound,
            C::NotADirectory => Self::NotADirectory,
            C::IsADirectory => Self::IsADirectory,
            C::AlreadyExists => Self::AlreadyExists,
            C::PermissionDenied => Self::PermissionDenied,
            C::OutsideRoots => Self::OutsideRoots,
            C::TooManyLinks => Self::TooManyLinks,
            C::InvalidInput => Self::InvalidInput,
            C::Cancelled => Self::Cancelled,
            C::Other => Self::Other,
            C::Protected => Self::Protected,
        }
    }
}

impl From<FsError> for fs_types::FsError {
    fn from(e: FsError) -> Self {
        fs_types::FsError {
            code: e.code.into(),
            message: e.message,
        }
    }
}

impl From<fs::EntryKind> for fs_types::EntryKind {
    fn from(kind: fs::EntryKind) -> Self {
        match kind {
            fs::EntryKind::File => Self::File,
            fs::EntryKind::Directory => Self::Directory,
            fs::EntryKind::Symlink => Self::Symlink,
            fs::EntryKind::Other => Self::Other,
        }
    }
}

impl From<fs::Metadata> for fs_types::Metadata {
    fn from(m: fs::Metadata) -> Self {
        fs_types::Metadata {
            kind: m.kind.into(),
            size: m.size,
            modified_ms: m.modified_ms,
        }
    }
}

impl From<fs::DirEntry> for fs_types::DirEntry {
    fn from(e: fs::DirEntry) -> Self {
        fs_types::DirEntry {
            name: e.name,
            kind: e.kind.map(Into::into),
        }
    }
}

/// What an Operation does to a path outside the roots, as
/// [`OpsCtx::or_beyond`] asks about it: (write, create as a directory).
const WRITE: (bool, bool) = (true, false);
const MKDIR: (bool, bool) = (true, true);

/// A result of the Operations, in the interface's types.
fn wit<T, U: From<T>>(r: Result<T, FsError>) -> wasmtime::Result<Result<U, fs_types::FsError>> {
    Ok(r.map(U::from).map_err(Into::into))
}

impl fs_types::Host for OpsCtx<'_> {}

impl fs_read::Host for OpsCtx<'_> {
    async fn stat(
        &mut self,
        path: String,
    ) -> wasmtime::Result<Result<fs_types::Metadata, fs_types::FsError>> {
        wit(self.reading(&path, |fs, p| fs.stat(p)).await)
    }

    async fn read_file(
        &mut self,
        path: String,
        offset: u64,
        max_bytes: u64,
    ) -> wasmtime::Result<Result<Vec<u8>, fs_types::FsError>> {
        wit(self
            .reading(&path, move |fs, p| fs.read(p, offset, max_bytes))
            .await)
    }

    async fn list_dir(
        &mut self,
        path: String,
    ) -> wasmtime::Result<Result<Vec<fs_types::DirEntry>, fs_types::FsError>> {
        let entries = self.reading(&path, |fs, p| fs.list_dir(p)).await;
        Ok(entries
            .map(|entries| entries.into_iter().map(Into::into).collect())
            .map_err(Into::into))
    }
}

impl fs_write::Host for OpsCtx<'_> {
    async fn write_file(
        &mut self,
        path: String,
        contents: Vec<u8>,
    ) -> wasmtime::Result<Result<(), fs_types::FsError>> {
        wit(self
            .writing(&path, WRITE, move |fs, p| fs.write_file(p, &contents))
            .await)
    }

    async fn append_file(
        &mut self,
        path: String,
        contents: Vec<u8>,
    ) -> wasmtime::Result<Result<(), fs_types::FsError>> {
        wit(self
            .writing(&path, WRITE, move |fs, p| fs.append_file(p, &contents))
            .await)
    }

    async fn create_dir_all(
        &mut self,
        path: String,
    ) -> wasmtime::Result<Result<(), fs_types::FsError>> {
        wit(self
            .writing(&path, MKDIR, |fs, p| fs.create_dir_all(p))
            .await)
    }

    async fn access(&mut self, path: String) -> wasmtime::Result<Result<(), fs_types::FsError>> {
        wit(self.on_writer(&path, WRITE, |fs, p| fs.access(p)).await)
    }

    async fn lock(
        &mut self,
        path: String,
    ) -> wasmtime::Result<Result<Resource<MutationLock>, fs_types::FsError>> {
        let key = match self.on_writer(&path, WRITE, |fs, p| fs.lock_key(p)).await {
            Ok(key) => key,
            Err(e) => return Ok(Err(e.into())),
        };
        match lock_file_in_turn(key, self.cancel, self.turn).await {
            Ok(lock) => Ok(Ok(self.table.push(lock)?)),
            Err(e) => Ok(Err(e.into())),
        }
    }
}

impl fs_write::HostMutationLock for OpsCtx<'_> {
    fn drop(&mut self, lock: Resource<MutationLock>) -> wasmtime::Result<()> {
        self.table.delete(lock)?;
        Ok(())
    }
}

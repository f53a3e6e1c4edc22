//! `fs-types`, `fs-read` and `fs-write`: the file Operations' types at the
//! edge, and their glue.

use super::{fs_read, fs_types, fs_write};
use crate::ops::fs::{self, FsError, FsWrite, MutationLock, lock_file_in_turn};
use crate::tape::{Asked, taped, taped_withholding};
use crate::wit::OpsCtx;
use crate::wit::ctx::Access;
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

/// What a file Operation answers the component: its outcome, unless the
/// host failed.
type Answer<T> = wasmtime::Result<Result<T, fs_types::FsError>>;

/// A result of the Operations, in the interface's types.
fn wit<T, U: From<T>>(r: Result<T, FsError>) -> Answer<U> {
    Ok(r.map(U::from).map_err(Into::into))
}

impl fs_types::Host for OpsCtx<'_> {}

impl fs_read::Host for OpsCtx<'_> {
    async fn stat(&mut self, path: String) -> Answer<fs_types::Metadata> {
        let tape = self.on_tape(|_| Asked::Stat { path: path.clone() });
        wit(taped(tape, self.reading(&path, |fs, p| fs.stat(p))).await?)
    }

    async fn read_file(&mut self, path: String, offset: u64, max_bytes: u64) -> Answer<Vec<u8>> {
        let tape = self.on_tape(|_| Asked::Read {
            path: path.clone(),
            offset,
            max: max_bytes,
        });
        // Judged only when the answer is recorded: no cost untaped.
        let (caps, shown) = (self.caps, path.clone());
        let withheld = move |read: &Result<Vec<u8>, FsError>| {
            let fs = caps.fs_read.as_ref().filter(|_| read.is_ok())?;
            fs.protects(&shown).then_some("a protected path")
        };
        let read = self.reading(&path, move |fs, p| fs.read(p, offset, max_bytes));
        wit(taped_withholding(tape, withheld, read).await?)
    }

    async fn list_dir(&mut self, path: String) -> Answer<Vec<fs_types::DirEntry>> {
        let tape = self.on_tape(|_| Asked::ListDir { path: path.clone() });
        let entries = taped(tape, self.reading(&path, |fs, p| fs.list_dir(p))).await?;
        Ok(entries
            .map(|entries| entries.into_iter().map(Into::into).collect())
            .map_err(Into::into))
    }
}

impl OpsCtx<'_> {
    /// `contents` written to `path`, or appended to it.
    async fn put(&mut self, path: String, contents: Vec<u8>, append: bool) -> Answer<()> {
        let tape = self.on_tape(|blobs| {
            let (path, bytes) = (path.clone(), blobs.keep(&contents));
            match append {
                true => Asked::Append { path, bytes },
                false => Asked::Write { path, bytes },
            }
        });
        let put = move |fs: &(dyn FsWrite + 'static), p: &str| match append {
            true => fs.append_file(p, &contents),
            false => fs.write_file(p, &contents),
        };
        wit(taped(tape, self.writing(&path, Access::WRITE, put)).await?)
    }
}

impl fs_write::Host for OpsCtx<'_> {
    async fn write_file(&mut self, path: String, contents: Vec<u8>) -> Answer<()> {
        self.put(path, contents, false).await
    }

    async fn append_file(&mut self, path: String, contents: Vec<u8>) -> Answer<()> {
        self.put(path, contents, true).await
    }

    async fn create_dir_all(&mut self, path: String) -> Answer<()> {
        let tape = self.on_tape(|_| Asked::CreateDirAll { path: path.clone() });
        let made = self.writing(&path, Access::MKDIR, |fs, p| fs.create_dir_all(p));
        wit(taped(tape, made).await?)
    }

    async fn access(&mut self, path: String) -> Answer<()> {
        let tape = self.on_tape(|_| Asked::Access { path: path.clone() });
        let checked = self.writing(&path, Access::CHECK, |fs, p| fs.access(p));
        wit(taped(tape, checked).await?)
    }

    async fn lock(&mut self, path: String) -> Answer<Resource<MutationLock>> {
        // The key is the backend's (on tape); the lock is this host's.
        let tape = self.on_tape(|_| Asked::Lock { path: path.clone() });
        let key = self.writing(&path, Access::CHECK, |fs, p| fs.lock_key(p));
        let key = match taped(tape, key).await? {
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

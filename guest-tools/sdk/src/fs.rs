//! Filesystem access through the host's `fs-read` Operations, with the error
//! texts models know from Pi (Node's `CODE: description, op 'path'`, spec §7.2)
//! and toolhost's sandbox refusal (spec §7.1).
//!
//! Paths given here are absolute (see [`crate::path::resolve_to_cwd`]). The
//! host refuses anything outside the granted roots, whatever the path says.

pub use crate::bindings::toolhost::tool::fs_types::{
    DirEntry, EntryKind, ErrorCode, FsError, Metadata,
};
/// A held per-file mutation lock (see [`lock`]); dropping it releases the file.
pub use crate::bindings::toolhost::tool::fs_write::MutationLock;
use crate::bindings::toolhost::tool::{fs_read, fs_write};
use crate::tool::{Context, OPERATION_ABORTED};

/// Largest chunk the host returns per read.
pub const MAX_READ_CHUNK: u64 = 4 * 1024 * 1024;

/// Metadata of `path`, following symlinks.
pub fn stat(path: &str) -> Result<Metadata, FsError> {
    fs_read::stat(path)
}

/// Up to `max_bytes` bytes of `path` from `offset` (an empty result is end of file).
pub fn read_chunk(path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
    fs_read::read_file(path, offset, max_bytes)
}

/// The entries of the directory `path`, in no particular order.
pub fn list_dir(path: &str) -> Result<Vec<DirEntry>, FsError> {
    fs_read::list_dir(path)
}

/// Replace the file at `path` atomically (temporary file + rename), keeping an
/// existing file's permissions. The parent directory must exist. Needs the
/// `fs-write` grant.
pub fn write_file(path: &str, contents: &[u8]) -> Result<(), FsError> {
    fs_write::write_file(path, contents)
}

/// Append to the file at `path`, creating it if missing.
pub fn append_file(path: &str, contents: &[u8]) -> Result<(), FsError> {
    fs_write::append_file(path, contents)
}

/// `mkdir -p`.
pub fn create_dir_all(path: &str) -> Result<(), FsError> {
    fs_write::create_dir_all(path)
}

/// `access(path, R_OK | W_OK)`: the file exists and may be read and written.
pub fn access(path: &str) -> Result<(), FsError> {
    fs_write::access(path)
}

/// Wait for and take the mutation lock of `path` (Pi's `withFileMutationQueue`):
/// hold it across a read-modify-write so parallel calls on the same file
/// (through any alias) do not lose each other's changes.
pub fn lock(path: &str) -> Result<MutationLock, FsError> {
    fs_write::lock(path)
}

/// Call `f` with consecutive chunks of the file until it ends or `f` returns
/// `false`.
pub fn for_each_chunk(path: &str, mut f: impl FnMut(&[u8]) -> bool) -> Result<(), FsError> {
    let mut offset = 0u64;
    loop {
        let chunk = read_chunk(path, offset, MAX_READ_CHUNK)?;
        if chunk.is_empty() || !f(&chunk) {
            return Ok(());
        }
        offset += chunk.len() as u64;
    }
}

/// Node's error code for an [`ErrorCode`].
pub fn node_code(code: ErrorCode) -> (&'static str, &'static str) {
    match code {
        ErrorCode::NotFound => ("ENOENT", "no such file or directory"),
        ErrorCode::NotADirectory => ("ENOTDIR", "not a directory"),
        ErrorCode::IsADirectory => ("EISDIR", "illegal operation on a directory"),
        ErrorCode::AlreadyExists => ("EEXIST", "file already exists"),
        ErrorCode::PermissionDenied => ("EACCES", "permission denied"),
        ErrorCode::TooManyLinks => ("ELOOP", "too many symbolic links encountered"),
        ErrorCode::InvalidInput => ("EINVAL", "invalid argument"),
        ErrorCode::OutsideRoots => ("EACCES", "permission denied"),
        ErrorCode::Cancelled => ("ECANCELED", "operation canceled"),
        ErrorCode::Other => ("EIO", "i/o error"),
        ErrorCode::Protected => ("EACCES", "permission denied"),
    }
}

/// `ENOENT: no such file or directory, access '/abs/path'`.
pub fn node_message(code: ErrorCode, op: &str, abs: &str) -> String {
    let (code, description) = node_code(code);
    format!("{code}: {description}, {op} '{abs}'")
}

/// The refusal of a path outside the granted roots (spec §7.1), naming the
/// path as the model wrote it.
pub fn outside_message(raw: &str, ctx: &Context) -> String {
    if ctx.roots.len() > 1 {
        format!(
            "Path is outside the granted roots ({}): {raw}",
            ctx.roots.join(", ")
        )
    } else {
        format!("Path is outside the workspace: {raw}")
    }
}

/// The refusal of a protected path (`toolhost.toml`, `.toolhost/`, …; see
/// docs/pi.md, the differences from Pi), naming the path as the model wrote it.
pub fn protected_message(raw: &str) -> String {
    format!("Path is protected: {raw}")
}

/// The model-facing text of a failed operation `op` on `abs` (resolved from
/// the argument `raw`): the sandbox refusal, `Operation aborted`, or Node's text.
///
/// A refusal the host explains further (the permission rules, what the
/// person can grant: the lines after the first of its message) keeps that
/// explanation on the lines after the sandbox's.
pub fn error_text(err: &FsError, op: &str, abs: &str, raw: &str, ctx: &Context) -> String {
    match err.code {
        ErrorCode::OutsideRoots => match err.message.split_once('\n') {
            Some((_, why)) => format!("{}\n{why}", outside_message(raw, ctx)),
            None => outside_message(raw, ctx),
        },
        ErrorCode::Protected => protected_message(raw),
        ErrorCode::Cancelled => OPERATION_ABORTED.to_string(),
        code => node_message(code, op, abs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_messages() {
        assert_eq!(
            node_message(ErrorCode::NotFound, "access", "/w/123"),
            "ENOENT: no such file or directory, access '/w/123'"
        );
    }
}

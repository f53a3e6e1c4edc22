//! The `fs-read` and `fs-write` Operations: their types and traits (here), a
//! local backend confined to granted roots (`local`), an in-memory backend
//! for tests (`memory`), the per-file mutation locks (`lock`), granted
//! directories pinned to what was approved (`granted`), and the shell's
//! full-output files that `read` may open (`outputs`).
//!
//! # What the local backend defends against
//!
//! A tool (possibly hostile) names any absolute path. The backend must touch
//! nothing outside the granted roots:
//!
//! * `..` is resolved lexically first (as Pi's `path.resolve` does), so
//!   `/ws/../etc/passwd` is `/etc/passwd` and is refused by prefix.
//! * Absolute paths outside every root are refused by prefix.
//! * Symlinks are followed with `cap-std` handles opened on each root: on
//!   Linux this is `openat2(RESOLVE_BENEATH)`, so the kernel refuses any
//!   resolution that leaves the root, including a symlink swapped in while the
//!   call runs (no check-then-use race).
//! * A symlink with an absolute target that stays inside a root (which
//!   `RESOLVE_BENEATH` refuses) is resolved step by step here, then opened
//!   again through the handle, so the kernel still has the last word.
//! * Opens are non-blocking, so a FIFO in the workspace cannot hang a call.
//! * Writes resolve symlinks first (a write through a link changes its
//!   target, as Node's does), then create a temporary file in the target's
//!   directory handle and rename it over the target: readers never see a
//!   half-written file, and nothing is created outside the roots.
//! * Writes never change a [protected path](ProtectedPaths): the check is
//!   made on the directory handle the change happens in (its real path), so
//!   a symlink swapped in after the path was resolved cannot steer a write
//!   into `.toolhost/` or `.git/hooks/` either.

mod granted;
mod local;
mod lock;
mod memory;
mod outputs;

pub use crate::ops::protect::ProtectedPaths;
pub use granted::GrantedDir;
pub use local::LocalFs;
pub(crate) use local::RealPath;
pub use lock::{MutationLock, lock_file};
pub(crate) use lock::{MutationOrder, Turn, TurnSlot, lock_file_in_turn};
pub use memory::{MemoryFs, MemoryNode};
pub(crate) use outputs::{OutputFiles, Recorded, WithOutputs};

use std::collections::VecDeque;
use std::path::{Component, Path, PathBuf};

/// Why a file operation failed: the code a tool acts on, and a message
/// naming the path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FsError {
    pub code: ErrorCode,
    pub message: String,
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The kinds of [`FsError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ErrorCode {
    NotFound,
    NotADirectory,
    IsADirectory,
    AlreadyExists,
    PermissionDenied,
    /// The path resolves (lexically or through a symlink) outside every root.
    OutsideRoots,
    TooManyLinks,
    InvalidInput,
    Cancelled,
    Other,
    /// A protected path ([`ProtectedPaths`]): no tool may change it.
    Protected,
}

/// What a directory entry or a path is (after following symlinks, where said).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    Other,
}

/// A file's kind, size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Metadata {
    pub kind: EntryKind,
    pub size: u64,
    /// Milliseconds since the Unix epoch, when known.
    pub modified_ms: Option<i64>,
}

/// A directory entry: its name and the kind of its (followed) target, when
/// that is reachable.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DirEntry {
    pub name: String,
    pub kind: Option<EntryKind>,
}

/// Largest chunk returned by one read (guests loop for more).
pub const MAX_READ_CHUNK: u64 = 4 * 1024 * 1024;

/// Symlinks followed in one resolution before giving up (Linux's limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// Read access to a set of roots (Pi's `ReadOperations`). Paths are absolute.
pub trait FsRead: Send + Sync + std::fmt::Debug {
    /// Metadata of `path`, following symlinks.
    fn stat(&self, path: &str) -> Result<Metadata, FsError>;
    /// Up to `max_bytes` (capped at [`MAX_READ_CHUNK`]) bytes from `offset`.
    fn read(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError>;
    /// The directory's entries with the kinds of their (followed) targets.
    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FsError>;
    /// The granted roots, as absolute paths.
    fn roots(&self) -> Vec<String>;
    /// [`FsRead::read`] of a path that is its own real path: a symbolic
    /// link anywhere beneath the root is refused ([`ErrorCode::TooManyLinks`])
    /// instead of followed, so that what was checked by name (an MCP
    /// resource's hidden paths) is what is opened, whatever link is swapped
    /// in meanwhile. Backends without links may keep the default.
    fn read_unlinked(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        self.read(path, offset, max_bytes)
    }
    /// Whether its files are on another machine (a remote workspace): its
    /// operations wait on the network, so the glue runs them on the
    /// blocking pool, and nothing beyond its roots is ever reached through
    /// this machine's disk instead.
    fn is_remote(&self) -> bool {
        false
    }

    /// Whether `path` is a protected path ([`crate::ops::protect`]): one
    /// whose bytes a recording of the call never holds.
    fn protects(&self, path: &str) -> bool {
        let _ = path;
        false
    }

    /// [`FsRead::list_dir`] of a directory that is its own real path, as
    /// [`FsRead::read_unlinked`] reads a file: opened beneath the root with
    /// every link on the way refused, so a listing judged by name (an MCP
    /// completion) lists that directory and no other. A link entry keeps
    /// the kind [`EntryKind::Symlink`] (it is not followed).
    fn list_dir_unlinked(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        self.list_dir(path)
    }
}

/// Write access to a set of roots (Pi's write/edit operations). Paths are absolute.
pub trait FsWrite: Send + Sync + std::fmt::Debug {
    /// Replace the file atomically, keeping an existing file's permissions.
    fn write_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError>;
    /// Append to the file, creating it if missing.
    fn append_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError>;
    /// `mkdir -p`.
    fn create_dir_all(&self, path: &str) -> Result<(), FsError>;
    /// `access(R_OK | W_OK)`: the file exists and may be read and written.
    fn access(&self, path: &str) -> Result<(), FsError>;
    /// The identity of the file for mutation locks: its real path, or its
    /// resolved path when it does not exist yet (Pi's queue key).
    fn lock_key(&self, path: &str) -> Result<String, FsError>;
    /// The granted roots, as absolute paths.
    fn roots(&self) -> Vec<String>;

    /// Whether its files are on another machine ([`FsRead::is_remote`]).
    fn is_remote(&self) -> bool {
        false
    }
}

pub(crate) fn fs_error(code: ErrorCode, message: impl Into<String>) -> FsError {
    FsError {
        code,
        message: message.into(),
    }
}

fn protected(path: &str) -> FsError {
    fs_error(ErrorCode::Protected, format!("{path} is protected"))
}

fn outside(path: &str) -> FsError {
    fs_error(
        ErrorCode::OutsideRoots,
        format!("{path} is outside the granted roots"),
    )
}

/// Lexically normalise an absolute path; `None` if it is not absolute.
pub(crate) fn normalize(path: &str) -> Option<PathBuf> {
    path.starts_with('/')
        .then(|| PathBuf::from(pi_compat::path::normalize(path)))
}

/// [`normalize`], or the backends' error for a path that is not absolute.
fn absolute(path: &str) -> Result<PathBuf, FsError> {
    normalize(path).ok_or_else(|| {
        fs_error(
            ErrorCode::InvalidInput,
            format!("{path} is not an absolute path"),
        )
    })
}

/// The steps of a path for a link walk: its names and `..` components.
fn path_steps(path: &Path) -> VecDeque<PathBuf> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(PathBuf::from(s)),
            Component::ParentDir => Some(PathBuf::from("..")),
            _ => None,
        })
        .collect()
}

/// A walk along an absolute path one component at a time, following
/// symlinks: the state both backends' resolution share. The backend looks at
/// each step's candidate path and either takes it ([`LinkWalk::enter`]),
/// follows it as a link ([`LinkWalk::follow`]) or gives up.
pub(super) struct LinkWalk {
    queue: VecDeque<PathBuf>,
    current: PathBuf,
    hops: usize,
}

impl LinkWalk {
    pub(super) fn new(abs: &Path) -> Self {
        LinkWalk {
            queue: path_steps(abs),
            current: PathBuf::from("/"),
            hops: 0,
        }
    }

    /// The next step's name and the path it names; `..` and `.` are taken
    /// care of here. `None` when the path is walked.
    pub(super) fn next_step(&mut self) -> Option<(PathBuf, PathBuf)> {
        while let Some(name) = self.queue.pop_front() {
            if name == Path::new("..") {
                self.current.pop();
            } else if name != Path::new(".") {
                let candidate = self.current.join(&name);
                return Some((name, candidate));
            }
        }
        None
    }

    /// Whether steps remain after the one just taken.
    pub(super) fn has_more(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Take the step's candidate as the path walked so far.
    pub(super) fn enter(&mut self, candidate: PathBuf) {
        self.current = candidate;
    }

    /// Take the candidate and the rest of the path as they are, following
    /// nothing more (past a missing component).
    pub(super) fn enter_rest(&mut self, candidate: PathBuf) {
        self.current = candidate;
        self.current.extend(self.queue.drain(..));
    }

    /// Look at the step `name` again.
    pub(super) fn retry(&mut self, name: PathBuf) {
        self.queue.push_front(name);
    }

    /// Count one hop through a symlink: `false` once there have been more than
    /// [`MAX_SYMLINK_HOPS`] (a loop, or a chain too long to follow).
    pub(super) fn hop(&mut self) -> bool {
        self.hops += 1;
        self.hops <= MAX_SYMLINK_HOPS
    }

    /// Continue through a symlink to `target`: an absolute target starts again
    /// from `/`; its steps come before the rest of the path.
    pub(super) fn follow(&mut self, target: &Path) {
        if target.is_absolute() {
            self.current = PathBuf::from("/");
        }
        for step in path_steps(target).into_iter().rev() {
            self.queue.push_front(step);
        }
    }

    /// The path walked so far (all of it once [`LinkWalk::next_step`] is `None`).
    pub(super) fn current(&self) -> &Path {
        &self.current
    }

    pub(super) fn into_path(self) -> PathBuf {
        self.current
    }
}

//! The `process` Operations: running programs for tools such as bash (Pi's
//! `BashOperations`), confined by a [`ProcessPolicy`].
//!
//! # What a child gets
//!
//! * Only a program the policy names (a bare name looked up on the policy's
//!   `PATH`, or an absolute path), with its own arguments; never one from a
//!   place tools can write ([`ProcessPolicy::no_programs_from`]).
//! * Its granted directories as they were approved: a pinned root
//!   ([`ProcessPolicy::read_root_pinned`]) is bound into the jail from its
//!   held descriptor, and nothing starts while its path names something
//!   else.
//! * An environment built from nothing: the host variables on an allowlist
//!   (`PATH`, `HOME`, locale, terminal, …; never tokens or keys), the
//!   command's own variables, then `TOOLHOST_SESSION_ID` (spec §7.16).
//! * A working directory that exists and lies inside the policy's roots.
//! * stdin `/dev/null` (or, for [session processes](session), a pipe or a
//!   terminal: [`Input`]); stdout and stderr on two pipes merged into one
//!   stream (a terminal carries both).
//! * Its own session and process group (`setsid`, like Node's `detached`), so
//!   the whole group can be stopped and no terminal reaches it.
//! * Where the kernel offers Landlock: write access only beneath the write
//!   roots (plus `/dev/null` and friends), reading everywhere, no signals to
//!   processes outside its domain (ABI ≥ 6), and unless the policy allows
//!   the [network](ProcessPolicy::network), no TCP `connect` or `bind`
//!   (ABI ≥ 4). Without Landlock the child runs unconfined and [`landlock()`]
//!   says why; a policy may instead
//!   [require](ProcessPolicy::require_landlock) it and refuse to spawn.
//! * Unless the policy allows the network, a seccomp filter refuses every
//!   `socket(AF_INET | AF_INET6, …)` with `EACCES`: TCP, and the UDP and raw
//!   sockets Landlock does not cover (DNS included). Unix sockets stay.
//!
//! # Lifetime: no process outlives its call
//!
//! A supervisor task per child owns the process, reads its pipes and delivers
//! [`ChildEvent`]s through a bounded channel (so a slow tool slows the child
//! down instead of growing a buffer). The leader is waited for with a pidfd
//! and is *not reaped* until its whole group is gone: the zombie keeps the
//! group id reserved, so signalling the group can never hit a reused id.
//!
//! * Natural end (Pi's rule, §1.9): the leader exited and both pipes closed,
//!   or stayed quiet for 100 ms (re-armed by every chunk). `exit` is
//!   delivered, then any member left in the group is stopped.
//! * Timeout, call cancellation, [`Child::kill`] and dropping the [`Child`]
//!   stop the group: SIGTERM, then SIGKILL after 2 s (§7.14), then
//!   `timed-out` or `cancelled`. A final SIGKILL to the group always precedes
//!   reaping.
//! * If the async runtime drops the supervisor (shutdown), its destructor
//!   SIGKILLs the group at once.
//!
//! A member that leaves the group (`setsid`, `setpgid`) escapes the group
//! signals; in the [`jail`] it still ends with the call, since the jail's PID
//! namespace ends with its init. Without the jail such a member outlives the
//! call ([`Confinement`] says which applies).
//!
//! # Where the code is
//!
//! `policy` decides what a child gets and spawns it; `confine` holds the
//! layers that confine it (the jail, Landlock, seccomp, the limits, the
//! network), each with its prepare and apply step, in one list that
//! [`doctor`] reports too; `supervisor` runs the child to its end; `sys`
//! holds every raw system call made between fork and exec, and all of this
//! Operation's `unsafe`; [`jail`] builds the bubblewrap jail, [`limits`] the
//! call's cgroups.
//!
//! # Output order
//!
//! Pi reads stdout and stderr as two Node streams, so output written in one
//! burst arrives grouped per stream, in the order the pipes became readable
//! (C082: `echo out; echo err >&2; echo out2` gives `out out2 err`). The
//! supervisor reproduces that: both pipes and the pidfd sit in one epoll set,
//! whose ready list is in readiness order; after the pipes were quiet it waits
//! [`COALESCE`] before reading, as Node's event loop does by being busy.

mod confine;
pub mod doctor;
mod input;
pub mod jail;
pub mod limits;
mod policy;
mod probe_cache;
pub mod scratch;
pub mod secrets;
pub mod session;
mod supervisor;
mod sys;
#[cfg(test)]
mod tests;

use confine::Plan;
pub use confine::landlock::probe as landlock;
pub use input::{Input, InputEnd, RemoteInput};
pub use policy::{Confinement, JailMode, ProcessPolicy};
pub(crate) use policy::{place_of, resolve_program};
use supervisor::*;
use sys::*;

use crate::ops::fs::GrantedDir;
use crate::ops::protect::{GitGuard, ProtectedPaths};
use futures::future::BoxFuture;
pub use jail::View;
use limits::CallCgroup;
pub use limits::ProcessLimits;
use rustix::event::epoll;
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use std::collections::VecDeque;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Quiet time after the leader exited before the call completes (Pi's
/// `EXIT_STDIO_GRACE_MS`): descendants holding the pipes but silent do not
/// keep the call open.
pub const EXIT_QUIET: Duration = Duration::from_millis(100);
/// Between SIGTERM and SIGKILL when a group is stopped (spec §7.14).
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long to wait after the pipes woke up from quiet (no output for at
/// least as long) before reading them, so that a burst arrives grouped.
pub const COALESCE: Duration = Duration::from_millis(5);
/// Largest output chunk (one read of one pipe).
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Most bytes one `next` hands the tool: the chunks already waiting are
/// joined up to this, so a fast command costs the tool one call per
/// megabyte, not one per pipe read.
pub const DELIVERY_BYTES: usize = 1 << 20;
/// Events buffered between the supervisor and the tool. With [`CHUNK_BYTES`]
/// this caps buffered output at about 1 MiB per child.
const CHANNEL_EVENTS: usize = 16;
/// After SIGKILL, how long to wait for the group to vanish before giving up
/// (a process in uninterruptible sleep cannot die sooner).
const KILL_WAIT: Duration = Duration::from_secs(3);
/// How often a stopping group is checked.
const STOP_POLL: Duration = Duration::from_millis(10);
/// How often the leader is checked when the kernel has no pidfds.
const EXIT_POLL: Duration = Duration::from_millis(20);

/// Host variables a child may inherit: what programs need to behave normally
/// (find programs, home, language, terminal type, time zone), nothing secret.
const ENV_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "TZ",
    "TMPDIR",
];
/// Prefixes of allowlisted host variables (the locale categories).
const ENV_ALLOWLIST_PREFIXES: &[&str] = &["LC_"];
/// `PATH` when the host has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// The variable carrying the session id (spec §7.16).
pub const SESSION_ID_VAR: &str = "TOOLHOST_SESSION_ID";

/// The processes one call started. The call's end waits until every one of
/// them is gone, its jail included, so that what runs after it (the git
/// guard) sees all they did and nothing of theirs runs on.
#[derive(Clone, Debug)]
pub struct Spawned {
    live: Arc<tokio::sync::watch::Sender<usize>>,
    /// What the git guard of a remote workspace put back of what they
    /// changed there, as each ended.
    undone: Arc<Mutex<Vec<Undone>>>,
}

/// A file the git guard put back, on the machine of a remote workspace.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Undone {
    pub path: String,
    /// What was put back and why, as the guard says it.
    pub sentence: String,
}

impl Default for Spawned {
    fn default() -> Self {
        Spawned {
            live: Arc::new(tokio::sync::watch::Sender::new(0)),
            undone: Arc::default(),
        }
    }
}

impl Spawned {
    /// A token held by one child's supervisor until the child is gone.
    fn token(&self) -> SpawnToken {
        self.live.send_modify(|n| *n += 1);
        SpawnToken(self.live.clone())
    }

    /// A hold on the call for a process started elsewhere: released when
    /// it is gone, told what the other side's git guard put back.
    pub(crate) fn held(&self) -> Held {
        Held {
            _token: self.token(),
            undone: self.undone.clone(),
        }
    }

    /// What the git guard of a remote workspace put back of what these
    /// processes changed, taken.
    pub(crate) fn take_undone(&self) -> Vec<Undone> {
        std::mem::take(&mut *self.undone.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Wait until every process started through this tracker is gone, or
    /// `limit` passed; whether they all are.
    pub async fn all_gone(&self, limit: Duration) -> bool {
        let mut live = self.live.subscribe();
        tokio::time::timeout(limit, live.wait_for(|n| *n == 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// A process of a [`Spawned`] that runs elsewhere ([`Spawned::held`]).
pub struct Held {
    _token: SpawnToken,
    undone: Arc<Mutex<Vec<Undone>>>,
}

impl Held {
    /// What the other side's git guard put back once the process ended.
    pub(crate) fn undone(&self, undone: Vec<Undone>) {
        let mut list = self.undone.lock().unwrap_or_else(|e| e.into_inner());
        list.extend(undone);
    }
}

/// One live child of a [`Spawned`]; dropped when it is gone.
pub(super) struct SpawnToken(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for SpawnToken {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A program to run: what a tool asks the process Operations for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Command {
    /// A name looked up on the policy's `PATH`, or an absolute path.
    pub program: String,
    pub args: Vec<String>,
    /// Absolute working directory inside the policy's roots.
    pub cwd: String,
    /// Variables set on top of the policy's environment (only those the
    /// policy lets a command set).
    pub env: Vec<(String, String)>,
    /// Stop the command after this many milliseconds.
    pub timeout_ms: Option<u64>,
}

/// Why a command could not be started.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessError {
    pub code: ProcessErrorCode,
    pub message: String,
}

/// The kinds of [`ProcessError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ProcessErrorCode {
    /// The program is not one the policy names.
    NotAllowed,
    NotFound,
    CwdNotFound,
    /// A malformed command (a relative or outside working directory, a NUL).
    InvalidInput,
    Cancelled,
    Other,
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExitStatus {
    Code(i32),
    /// Killed by this signal (`SIGKILL`, …).
    Signal(String),
    /// Stopped when its timeout (this many ms) ran out.
    TimedOut(u64),
    /// Stopped because the call was cancelled or the child was killed.
    Cancelled,
    /// Its processes hit a limit of the call; the text names it.
    LimitExceeded(String),
}

/// What a running command produces, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildEvent {
    /// Bytes of stdout or stderr, in arrival order.
    Output(Vec<u8>),
    /// The end (repeated by every later `next`).
    Exit(ExitStatus),
}

pub(crate) fn error(code: ProcessErrorCode, message: impl Into<String>) -> ProcessError {
    ProcessError {
        code,
        message: message.into(),
    }
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// A running process group. Dropping it stops the group.
pub struct Child {
    events: mpsc::Receiver<ChildEvent>,
    control: Arc<Control>,
    /// The final event, repeated by every later `next`.
    last: Option<ChildEvent>,
    /// An event received while joining output, delivered next.
    held: Option<ChildEvent>,
}

impl std::fmt::Debug for Child {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Child").field("last", &self.last).finish()
    }
}

impl Child {
    /// The next event: output, or the final `exit` (repeated from then on).
    pub async fn next(&mut self) -> ChildEvent {
        if let Some(last) = &self.last {
            return last.clone();
        }
        let event = match self.held.take() {
            Some(event) => event,
            None => match self.events.recv().await {
                Some(event) => event,
                // The supervisor always ends with `exit`; only a panic there
                // closes the channel without one.
                None => ChildEvent::Exit(ExitStatus::Cancelled),
            },
        };
        match event {
            ChildEvent::Exit(_) => {
                self.last = Some(event.clone());
                event
            }
            ChildEvent::Output(mut bytes) => {
                // Join what is already waiting, in arrival order; an exit
                // (or a chunk that would pass the bound) waits its turn.
                while bytes.len() < DELIVERY_BYTES {
                    match self.events.try_recv() {
                        Ok(ChildEvent::Output(more))
                            if bytes.len() + more.len() <= DELIVERY_BYTES =>
                        {
                            bytes.extend_from_slice(&more);
                        }
                        Ok(other) => {
                            self.held = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                ChildEvent::Output(bytes)
            }
        }
    }

    /// [`Self::next`], or `None` when nothing happened within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<ChildEvent> {
        tokio::time::timeout(wait, self.next()).await.ok()
    }

    /// Stop the group (SIGTERM, SIGKILL after [`STOP_GRACE`]); `next` then
    /// reports `cancelled` unless the child had already ended.
    pub fn kill(&self) {
        self.control.request(StopReason::Killed);
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.control.request(StopReason::Dropped);
    }
}

/// The feeding end of a [`Child`] whose process runs elsewhere (a remote
/// workspace's service): what it sends is what the child's `next` gives,
/// in order, and it learns when the child is killed or dropped.
pub struct ChildFeed {
    events: mpsc::Sender<ChildEvent>,
    control: Arc<Control>,
}

impl ChildFeed {
    /// A child and the end that feeds it.
    pub fn new() -> (ChildFeed, Child) {
        let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
        let control = Arc::new(Control::default());
        let child = Child {
            events: rx,
            control: control.clone(),
            last: None,
            held: None,
        };
        (
            ChildFeed {
                events: tx,
                control,
            },
            child,
        )
    }

    /// Hand `event` on, waiting while the child has [`CHANNEL_EVENTS`]
    /// unread; `false` when the child is gone.
    pub async fn send(&self, event: ChildEvent) -> bool {
        self.events.send(event).await.is_ok()
    }

    /// Until the child is killed or dropped.
    pub async fn stop_requested(&self) {
        self.control.requested().await;
    }
}

/// What a process may be given by its tool's grant, as a remote
/// workspace's service applies it: never beyond that service's own roots,
/// protected paths and jail, whatever this says.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ProcessGrant {
    /// The programs it may run.
    pub programs: Vec<String>,
    /// Whether it has the network.
    pub network: bool,
    /// Variables a command may set itself.
    pub command_env: Vec<String>,
    /// Its default timeout, in milliseconds.
    pub default_timeout_ms: Option<u64>,
}

/// Starts processes elsewhere: [`ProcessPolicy::remote`] hands it every
/// spawn.
pub trait RemoteSpawn: Send + Sync + std::fmt::Debug {
    /// Start the request's command; the child, and the end that writes its
    /// input unless it reads nothing.
    fn spawn(&self, request: RemoteRequest) -> BoxFuture<'_, Result<Started, ProcessError>>;
}

/// A child, and the host's end of its input when it reads one.
pub type Started = (Child, Option<InputEnd>);

/// A spawn a [`RemoteSpawn`] makes: the command, its input, the policy's
/// grant, the call's cancellation, and a hold the call's end waits for
/// (kept until the process is gone).
pub struct RemoteRequest {
    pub command: Command,
    pub input: Input,
    pub grant: ProcessGrant,
    pub cancel: CancellationToken,
    pub hold: Held,
}

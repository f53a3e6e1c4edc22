//! Session processes: commands that outlive the call that started them but
//! not their session (a dev server, a test watcher, a REPL), beside Pi's
//! `bash`, whose every process ends with its call.
//!
//! A [`SessionProcesses`] belongs to one session of a front end (a `serve`
//! or MCP session, one `toolhost run`, a library host). Each command runs as
//! `bash`'s do, in the jail of the policy it is started under, with stdin a
//! pipe or a terminal ([`Input`]); a task per process keeps its output
//! ([`Output`]: the first [`HEAD_BYTES`] and a rolling last [`TAIL_BYTES`],
//! the bytes dropped between them counted) until someone reads it.
//!
//! Everything ends: a process [stopped](SessionProcesses::stop) (SIGTERM,
//! then SIGKILL after 2 s, as a call's), all of them when the session ends
//! ([`SessionProcesses::end`], or dropping it), after the session was idle
//! for its idle time, and when the host dies however (the jail's PID
//! namespace ends with the host's thread that started it). At most
//! [`MAX_PROCESSES`] run at once. Nothing here blocks: reading and listing
//! take a short lock and copy.

use super::{ChildEvent, ProcessPolicy, STOP_GRACE};
use super::{Command, ExitStatus, Input, InputEnd, ProcessError, ProcessErrorCode, Spawned, error};
use crate::ops::protect::{GitGuard, guard::Writer};
use crate::ops::usage::Usage;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Most processes of one session running at once.
pub const MAX_PROCESSES: usize = 8;
/// Most processes a session lists (running and ended): the oldest ended one
/// is forgotten first.
pub const MAX_LISTED: usize = 32;
/// The first bytes of a process's output, always kept.
pub const HEAD_BYTES: usize = 64 * 1024;
/// The last bytes of a process's output, kept rolling.
pub const TAIL_BYTES: usize = 1 << 20;
/// How long a session may leave its processes alone before they are stopped.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);
/// How long a stop waits for the process to be gone.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// How often the git guard settles what running processes changed (as it
/// does after every call): what they make git run is undone within this.
pub const GUARD_INTERVAL: Duration = Duration::from_secs(2);

/// A process's output: the first [`HEAD_BYTES`], then the last
/// [`TAIL_BYTES`]; what fell between them is counted, not kept.
#[derive(Debug, Default)]
pub struct Output {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Every byte the process wrote.
    total: u64,
}

impl Output {
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = HEAD_BYTES - self.head.len();
        if room > 0 && self.tail.is_empty() {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= TAIL_BYTES {
            self.tail.clear();
            bytes = &bytes[bytes.len() - TAIL_BYTES..];
        }
        let over = (self.tail.len() + bytes.len()).saturating_sub(TAIL_BYTES);
        self.tail.drain(..over);
        self.tail.extend(bytes);
    }

    /// What was written from byte `from` on that is still kept, and how many
    /// bytes of it are not.
    pub fn since(&self, from: u64) -> (Vec<u8>, u64) {
        let head_end = self.head.len() as u64;
        let tail_start = self.total - self.tail.len() as u64;
        let mut out = Vec::new();
        let mut at = from.min(self.total);
        if at < head_end {
            out.extend_from_slice(&self.head[at as usize..]);
            at = head_end;
        }
        let dropped = tail_start.saturating_sub(at);
        let at = at.max(tail_start);
        out.extend(self.tail.range((at - tail_start) as usize..));
        (out, dropped)
    }

    /// Bytes held.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn total(&self) -> u64 {
        self.total
    }
}

/// What a process is doing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum State {
    Running,
    Exited(ExitStatus),
}

/// A session process, as listed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessInfo {
    pub id: u32,
    /// The command line it was started with.
    pub command: String,
    pub terminal: bool,
    pub state: State,
    /// When it started (wall clock), and how long it ran or has run.
    pub started: SystemTime,
    pub age: Duration,
    /// Bytes of output it wrote in all.
    pub output_bytes: u64,
}

impl ProcessInfo {
    /// Its end as a front end tells it: `{id, command, exitCode, signal,
    /// text}` (`exitCode` and `signal` null when it was stopped).
    pub fn to_json(&self) -> serde_json::Value {
        let (code, signal) = match &self.state {
            State::Exited(ExitStatus::Code(code)) => (Some(*code), None),
            State::Exited(ExitStatus::Signal(signal)) => (None, Some(signal.clone())),
            _ => (None, None),
        };
        serde_json::json!({
            "id": self.id,
            "command": self.command,
            "exitCode": code,
            "signal": signal,
            "text": self.ended(),
        })
    }

    /// A sentence on its end for a person or a model: `Process 2 (npm run
    /// dev) exited with code 1 after 3s.`
    pub fn ended(&self) -> String {
        let how = match &self.state {
            State::Running => "is running".to_string(),
            State::Exited(ExitStatus::Code(code)) => format!("exited with code {code}"),
            State::Exited(ExitStatus::Signal(signal)) => format!("was killed by {signal}"),
            State::Exited(ExitStatus::LimitExceeded(text)) => format!("was stopped: {text}"),
            State::Exited(ExitStatus::Cancelled | ExitStatus::TimedOut(_)) => {
                "was stopped".to_string()
            }
        };
        let command = crate::display::escape(&self.command);
        format!(
            "Process {} ({command}) {how} after {:.1}s.",
            self.id,
            self.age.as_secs_f64()
        )
    }
}

/// New output of a process, and its state after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub info: ProcessInfo,
    pub output: Vec<u8>,
    /// Bytes written since the last read that are no longer kept.
    pub dropped: u64,
}

struct Proc {
    id: u32,
    command: String,
    terminal: bool,
    started: SystemTime,
    started_at: Instant,
    state: Mutex<ProcState>,
    /// Bumped at every output and at the exit.
    changed: tokio::sync::watch::Sender<u64>,
    stop: CancellationToken,
    input: tokio::sync::Mutex<Option<InputEnd>>,
    /// Its place among the git guard's writers while it runs.
    writer: Mutex<Option<Writer>>,
}

#[derive(Default)]
struct ProcState {
    output: Output,
    exit: Option<(ExitStatus, Instant)>,
    /// Where the last read ended.
    read_to: u64,
}

impl Proc {
    fn info(&self) -> ProcessInfo {
        let state = self.state.lock().expect("process state lock");
        let (state_now, age) = match &state.exit {
            Some((status, at)) => (State::Exited(status.clone()), *at - self.started_at),
            None => (State::Running, self.started_at.elapsed()),
        };
        ProcessInfo {
            id: self.id,
            command: self.command.clone(),
            terminal: self.terminal,
            state: state_now,
            started: self.started,
            age,
            output_bytes: state.output.total(),
        }
    }

    fn running(&self) -> bool {
        self.state
            .lock()
            .expect("process state lock")
            .exit
            .is_none()
    }

    /// The output since the last read, which this read ends.
    fn take(&self) -> Read {
        let (output, dropped) = {
            let mut state = self.state.lock().expect("process state lock");
            let from = state.read_to;
            state.read_to = state.output.total();
            state.output.since(from)
        };
        Read {
            info: self.info(),
            output,
            dropped,
        }
    }

    /// Wait until it exits or `wait` passes (or `cancel` fires).
    async fn wait_exit(&self, wait: Duration, cancel: &CancellationToken) {
        let mut changed = self.changed.subscribe();
        let _ = tokio::time::timeout(wait, async {
            tokio::select! {
                _ = changed.wait_for(|_| !self.running()) => {}
                _ = cancel.cancelled() => {}
            }
        })
        .await;
    }
}

/// Settle what `writer` changed since it began.
pub(crate) async fn settle(writer: Writer) -> Vec<crate::ops::protect::guard::Reverted> {
    tokio::task::spawn_blocking(move || {
        let reverted = writer.guard().settle(writer.watch());
        drop(writer);
        reverted
    })
    .await
    .unwrap_or_default()
}

/// Where a session's process ends, and what the git guard undid of what
/// they changed, are recorded: the audit log, wired by the host
/// (`crate::audit::ProcessAudit`), so that the Operations stay below it.
pub(crate) trait ProcessRecord: Send + Sync {
    /// The end of `info` (its start, writes and stop are in the lines of the
    /// calls that made them).
    fn ended(&self, info: &ProcessInfo);
    /// What the git guard undid of what the processes `ids` changed.
    fn reverted(&self, ids: &[u32], reverted: &[crate::ops::protect::guard::Reverted]);
}

/// The processes of one session (see the module docs).
pub struct SessionProcesses {
    procs: Arc<Mutex<Table>>,
    /// The session's end: every process's stop token is its child.
    ended: CancellationToken,
    /// Every process until it is gone.
    spawned: Spawned,
    idle: Duration,
    last_use: Arc<Mutex<Instant>>,
    /// Every process's end, as it happens.
    exits: tokio::sync::broadcast::Sender<ProcessInfo>,
    audit: Option<Arc<dyn ProcessRecord>>,
    /// The cgroup all of them lie in, made at the first start with its
    /// policy's limits: they hold for the session's processes together.
    cgroup: std::sync::OnceLock<Option<Arc<super::limits::SessionCgroup>>>,
}

/// Exits kept for a front end that reads them late.
const EXITS_KEPT: usize = 64;

#[derive(Default)]
struct Table {
    next_id: u32,
    list: Vec<Arc<Proc>>,
    /// Starts between their reservation and their place in `list`.
    starting: usize,
    watchdog: bool,
    guardian: bool,
}

/// A start's place among the session's processes, given back when dropped
/// (the process is then in the list, or never started).
struct Reserved<'a>(&'a Mutex<Table>);

impl Reserved<'_> {
    /// The process took its place in `table` (locked by the caller).
    fn taken(self, table: &mut Table) {
        table.starting -= 1;
        std::mem::forget(self);
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.0.lock().expect("session processes lock").starting -= 1;
    }
}

impl std::fmt::Debug for SessionProcesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionProcesses")
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

impl Default for SessionProcesses {
    fn default() -> Self {
        SessionProcesses::new(DEFAULT_IDLE)
    }
}

impl SessionProcesses {
    /// A session's processes, stopped after `idle` without any use.
    pub fn new(idle: Duration) -> SessionProcesses {
        SessionProcesses {
            procs: Arc::new(Mutex::new(Table::default())),
            ended: CancellationToken::new(),
            spawned: Spawned::default(),
            idle,
            last_use: Arc::new(Mutex::new(Instant::now())),
            exits: tokio::sync::broadcast::Sender::new(EXITS_KEPT),
            audit: None,
            cgroup: std::sync::OnceLock::new(),
        }
    }

    /// Write each process's end to `audit`.
    pub(crate) fn audited(mut self, audit: Option<Arc<dyn ProcessRecord>>) -> SessionProcesses {
        self.audit = audit;
        self
    }

    /// A new session's processes, with this one's idle time and audit log
    /// (for a front end that keeps one per client session).
    pub fn sibling(&self) -> SessionProcesses {
        SessionProcesses::new(self.idle).audited(self.audit.clone())
    }

    /// Every process's end from now on, as it happens (a process stopped
    /// because its session ended included): for a front end to tell its
    /// client.
    pub fn exits(&self) -> tokio::sync::broadcast::Receiver<ProcessInfo> {
        self.exits.subscribe()
    }

    fn used(&self) {
        *self.last_use.lock().expect("last use lock") = Instant::now();
    }

    fn find(&self, id: u32) -> Result<Arc<Proc>, ProcessError> {
        self.used();
        let table = self.procs.lock().expect("session processes lock");
        table
            .list
            .iter()
            .find(|p| p.id == id)
            .cloned()
            .ok_or_else(|| {
                let known: Vec<String> = table.list.iter().map(|p| p.id.to_string()).collect();
                let known = if known.is_empty() {
                    "this session has none".to_string()
                } else {
                    format!("this session has {}", known.join(", "))
                };
                error(
                    ProcessErrorCode::InvalidInput,
                    format!("no process {id}: {known}"),
                )
            })
    }

    /// Start `command` (shown as `shown`) under `policy` with `input`;
    /// `guard`, the git guard over what it may write, settles what it
    /// changes while it runs and when it ends. Refused when
    /// [`MAX_PROCESSES`] run already, or after [`Self::end`].
    pub async fn start(
        &self,
        policy: &ProcessPolicy,
        mut command: Command,
        shown: &str,
        input: Input,
        (usage, guard): (&Usage, Option<&Arc<GitGuard>>),
    ) -> Result<ProcessInfo, ProcessError> {
        self.used();
        if self.ended.is_cancelled() {
            return Err(error(ProcessErrorCode::Cancelled, "the session has ended"));
        }
        // A place reserved under the lock, so two starts at once cannot both
        // pass; the spawn (a jail's start) happens outside it, so listing
        // and reading never wait for one.
        let id = {
            let mut table = self.procs.lock().expect("session processes lock");
            let running = table.list.iter().filter(|p| p.running()).count() + table.starting;
            if running >= MAX_PROCESSES {
                let ids: Vec<String> = table
                    .list
                    .iter()
                    .filter(|p| p.running())
                    .map(|p| p.id.to_string())
                    .collect();
                return Err(error(
                    ProcessErrorCode::NotAllowed,
                    format!(
                        "this session already runs {MAX_PROCESSES} processes, the most it may run \
                     at once ({}); stop one first",
                        ids.join(", ")
                    ),
                ));
            }
            table.next_id += 1;
            table.starting += 1;
            table.next_id
        };
        let reserved = Reserved(&self.procs);
        // No timeout: it runs until stopped, or until the session ends.
        command.timeout_ms = None;
        let mut policy = policy.clone().default_timeout(None);
        let cgroup = self.cgroup.get_or_init(|| {
            super::limits::SessionCgroup::create(policy.process_limits())
                .ok()
                .flatten()
                .map(Arc::new)
        });
        if let Some(cgroup) = cgroup {
            policy = policy.in_session_cgroup(cgroup.clone());
        }
        let stop = self.ended.child_token();
        let writer = guard.map(|g| g.writer());
        let (mut child, input_end) = policy
            .spawn_with_input_anywhere(command, input, stop.clone(), &self.spawned, usage)
            .await?;
        let proc = Arc::new(Proc {
            id,
            command: shown.to_string(),
            terminal: matches!(input, Input::Terminal { .. }),
            started: SystemTime::now(),
            started_at: Instant::now(),
            state: Mutex::new(ProcState::default()),
            changed: tokio::sync::watch::Sender::new(0),
            stop,
            input: tokio::sync::Mutex::new(input_end),
            writer: Mutex::new(writer),
        });
        let mut table = self.procs.lock().expect("session processes lock");
        reserved.taken(&mut table);
        // Forget the oldest ended processes past the list's bound.
        while table.list.len() >= MAX_LISTED {
            match table.list.iter().position(|p| !p.running()) {
                Some(i) => drop(table.list.remove(i)),
                None => break,
            }
        }
        table.list.push(proc.clone());
        let info = proc.info();
        let keeper = proc.clone();
        let (exits, audit) = (self.exits.clone(), self.audit.clone());
        tokio::spawn(async move {
            loop {
                match child.next().await {
                    ChildEvent::Output(bytes) => {
                        keeper
                            .state
                            .lock()
                            .expect("process state lock")
                            .output
                            .push(&bytes);
                    }
                    ChildEvent::Exit(status) => {
                        keeper.state.lock().expect("process state lock").exit =
                            Some((status, Instant::now()));
                        keeper.changed.send_modify(|n| *n += 1);
                        break;
                    }
                }
                keeper.changed.send_modify(|n| *n += 1);
            }
            // Its stdin closes with it.
            keeper.input.lock().await.take();
            let ended = keeper.info();
            // What it changed, settled before it leaves the guard's writers.
            let writer = keeper.writer.lock().expect("writer lock").take();
            if let Some(writer) = writer {
                let reverted = settle(writer).await;
                if let Some(audit) = &audit {
                    audit.reverted(&[ended.id], &reverted);
                }
            }
            if let Some(audit) = audit {
                audit.ended(&ended);
            }
            let _ = exits.send(ended);
        });
        if !table.watchdog {
            table.watchdog = true;
            self.watch_idle();
        }
        if guard.is_some() && !table.guardian {
            table.guardian = true;
            self.guard_while_running();
        }
        Ok(info)
    }

    /// Settle, every [`GUARD_INTERVAL`], what the running processes
    /// changed beneath their guards' roots, until none runs under a guard.
    fn guard_while_running(&self) {
        let table = Arc::downgrade(&self.procs);
        let (ended, audit) = (self.ended.clone(), self.audit.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = ended.cancelled() => {}
                    _ = tokio::time::sleep(GUARD_INTERVAL) => {}
                }
                let Some(procs) = table.upgrade() else { return };
                let (guards, ids) = {
                    let mut table = procs.lock().expect("session processes lock");
                    let mut guards: Vec<Arc<GitGuard>> = Vec::new();
                    let mut ids = Vec::new();
                    for p in &table.list {
                        if let Some(writer) = p.writer.lock().expect("writer lock").as_ref() {
                            ids.push(p.id);
                            if !guards.iter().any(|g| Arc::ptr_eq(g, writer.guard())) {
                                guards.push(writer.guard().clone());
                            }
                        }
                    }
                    if guards.is_empty() {
                        // The next guarded start starts this again.
                        table.guardian = false;
                        return;
                    }
                    (guards, ids)
                };
                for guard in guards {
                    let reverted = tokio::task::spawn_blocking(move || guard.settle(guard.watch()))
                        .await
                        .unwrap_or_default();
                    if let Some(audit) = &audit {
                        audit.reverted(&ids, &reverted);
                    }
                }
            }
        });
    }

    /// Stop every process once the session was left alone for its idle time.
    fn watch_idle(&self) {
        let (last_use, idle, ended) = (self.last_use.clone(), self.idle, self.ended.clone());
        let table = Arc::downgrade(&self.procs);
        tokio::spawn(async move {
            loop {
                let due = *last_use.lock().expect("last use lock") + idle;
                tokio::select! {
                    _ = ended.cancelled() => return,
                    _ = tokio::time::sleep_until(due) => {}
                }
                if last_use.lock().expect("last use lock").elapsed() < idle {
                    continue;
                }
                let Some(table) = table.upgrade() else { return };
                for p in &table.lock().expect("session processes lock").list {
                    p.stop.cancel();
                }
                // Later starts run as before; the idle time starts anew.
                *last_use.lock().expect("last use lock") = Instant::now();
            }
        });
    }

    /// Its output since the last read, after waiting up to `wait` for it to
    /// exit (a poll, without waiting).
    pub async fn read(
        &self,
        id: u32,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<Read, ProcessError> {
        let proc = self.find(id)?;
        proc.wait_exit(wait, cancel).await;
        self.used();
        Ok(proc.take())
    }

    /// Write `bytes` to its stdin (its terminal), then [`Self::read`].
    pub async fn write(
        &self,
        id: u32,
        bytes: &[u8],
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<Read, ProcessError> {
        let proc = self.find(id)?;
        if !bytes.is_empty() {
            let input = proc.input.lock().await;
            let Some(input) = input.as_ref() else {
                let why = if proc.running() {
                    "its input is closed"
                } else {
                    "it has exited"
                };
                return Err(error(
                    ProcessErrorCode::InvalidInput,
                    format!("cannot write to process {id}: {why}"),
                ));
            };
            let written = tokio::select! {
                r = tokio::time::timeout(wait.max(Duration::from_secs(1)), input.write_all(bytes)) => r,
                _ = cancel.cancelled() => return Err(error(ProcessErrorCode::Cancelled, "the call was cancelled")),
            };
            let failed = |why: String| {
                let message = format!("cannot write to process {id}: {why}");
                Err(error(ProcessErrorCode::Other, message))
            };
            match written {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return failed(e.to_string()),
                Err(_) => return failed("it does not read its input".into()),
            }
        }
        proc.wait_exit(wait, cancel).await;
        self.used();
        Ok(proc.take())
    }

    /// Every process of the session, oldest first.
    pub fn list(&self) -> Vec<ProcessInfo> {
        self.used();
        let table = self.procs.lock().expect("session processes lock");
        table.list.iter().map(|p| p.info()).collect()
    }

    /// Stop it (SIGTERM, SIGKILL after 2 s) and wait until it is gone; its
    /// output since the last read.
    pub async fn stop(&self, id: u32) -> Result<Read, ProcessError> {
        let proc = self.find(id)?;
        proc.stop.cancel();
        proc.wait_exit(STOP_GRACE + STOP_WAIT, &CancellationToken::new())
            .await;
        Ok(proc.take())
    }

    /// End the session: stop every process, and wait (at most `limit`) until
    /// all are gone; whether they are.
    pub async fn end(&self, limit: Duration) -> bool {
        self.ended.cancel();
        self.spawned.all_gone(limit).await
    }
}

impl Drop for SessionProcesses {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::super::JailMode;
    use super::super::tests::command;
    use super::*;
    use std::path::Path;

    fn policy(dir: &Path, jail: JailMode) -> ProcessPolicy {
        super::super::tests::policy(dir).jail(jail)
    }

    /// Start `script` in `dir` under `p`, with no guard.
    async fn start(
        sp: &SessionProcesses,
        p: &ProcessPolicy,
        script: &str,
        dir: &Path,
        input: Input,
    ) -> ProcessInfo {
        sp.start(
            p,
            command(script, dir),
            script,
            input,
            (&Usage::default(), None),
        )
        .await
        .unwrap()
    }

    /// Read process `id` until its output so far (beginning with `held`,
    /// what the caller's last write or start already returned of it)
    /// contains `needle` (at most 20 s); all it read.
    async fn read_until(sp: &SessionProcesses, id: u32, needle: &str, held: String) -> String {
        let mut text = held;
        let give_up = Instant::now() + Duration::from_secs(20);
        while !text.contains(needle) {
            assert!(Instant::now() < give_up, "{needle:?} never came: {text:?}");
            let read = sp
                .read(id, Duration::from_millis(50), &CancellationToken::new())
                .await
                .unwrap();
            text.push_str(&String::from_utf8_lossy(&read.output));
        }
        text
    }

    /// Write `input` to the process `id`, then read until `needle` comes
    /// (what the write returned counts); all that was read.
    async fn answered(
        sp: &SessionProcesses,
        id: u32,
        input: &[u8],
        needle: &str,
        cancel: &CancellationToken,
    ) -> String {
        let wrote = sp.write(id, input, Duration::ZERO, cancel).await.unwrap();
        read_until(sp, id, needle, said(&wrote)).await
    }

    fn said(read: &Read) -> String {
        String::from_utf8_lossy(&read.output).into_owned()
    }

    /// Whether a process whose command line holds `marker` exists.
    fn running(marker: &str) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
    }

    async fn gone(marker: &str) -> bool {
        for _ in 0..500 {
            if !running(marker) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    fn modes() -> Vec<JailMode> {
        let mut modes = vec![JailMode::Off];
        if matches!(
            super::super::jail::support(),
            super::super::jail::Support::Available { .. }
        ) {
            modes.push(JailMode::Required);
        }
        modes
    }

    /// For each jail mode here: the mode, a directory, a policy that runs
    /// `sh` there, and an empty table of session processes.
    fn set_ups() -> Vec<(JailMode, tempfile::TempDir, ProcessPolicy, SessionProcesses)> {
        let set_up = |jail| {
            let dir = tempfile::tempdir().unwrap();
            let p = policy(dir.path(), jail);
            (jail, dir, p, SessionProcesses::default())
        };
        modes().into_iter().map(set_up).collect()
    }

    #[tokio::test]
    async fn a_pipe_and_a_terminal_carry_input_and_output_across_calls() {
        for (jail, dir, p, sp) in set_ups() {
            let cat = start(
                &sp,
                &p,
                "while read l; do echo got:$l; done",
                dir.path(),
                Input::Pipe,
            )
            .await;
            let cancel = CancellationToken::new();
            answered(&sp, cat.id, b"one\n", "got:one", &cancel).await;
            let text = answered(&sp, cat.id, b"two\n", "got:two", &cancel).await;
            assert!(!text.contains("got:one"), "read twice: {text:?}");

            let script = "test -t 0 && echo a-terminal; stty size; read l; echo got:$l";
            let tty = start(
                &sp,
                &p,
                script,
                dir.path(),
                Input::Terminal {
                    rows: 30,
                    cols: 100,
                },
            )
            .await;
            assert!(tty.terminal);
            let text = read_until(&sp, tty.id, "30 100", String::new()).await;
            assert!(text.contains("a-terminal"), "{jail:?}: {text:?}");
            answered(&sp, tty.id, b"three\r", "got:three", &cancel).await;
            let last = sp
                .read(tty.id, Duration::from_secs(10), &cancel)
                .await
                .unwrap();
            assert_eq!(
                last.info.state,
                State::Exited(ExitStatus::Code(0)),
                "{jail:?}"
            );
            let listed = sp.list();
            assert_eq!(listed.len(), 2);
            assert_eq!(listed[0].state, State::Running);
            assert!(sp.end(Duration::from_secs(10)).await, "{jail:?}");
        }
    }

    #[tokio::test]
    async fn the_ninth_process_is_refused_and_nothing_survives_the_session() {
        for (jail, dir, p, sp) in set_ups() {
            let marker = format!("session-marker-{}-{jail:?}", std::process::id());
            // Each leaves a child behind in a session of its own, as a
            // daemon would.
            let script = format!("setsid sh -c 'sleep 1000; : {marker}' & sleep 1001; : {marker}");
            for _ in 0..MAX_PROCESSES {
                start(&sp, &p, &script, dir.path(), Input::Null).await;
            }
            let refused = sp
                .start(
                    &p,
                    command("true", dir.path()),
                    "true",
                    Input::Null,
                    (&Usage::default(), None),
                )
                .await
                .unwrap_err();
            assert!(
                refused
                    .message
                    .starts_with("this session already runs 8 processes"),
                "{refused:?}"
            );
            // A stopped one makes room.
            let stopped = sp.stop(1).await.unwrap();
            assert!(
                matches!(stopped.info.state, State::Exited(_)),
                "{stopped:?}"
            );
            start(&sp, &p, &script, dir.path(), Input::Null).await;
            assert!(running(&marker));
            drop(sp);
            if jail == JailMode::Required {
                assert!(gone(&marker).await, "a process outlived its session");
            } else {
                // Outside the jail a member that left the group survives
                // (as with bash): only the group ends.
                assert!(gone(&format!("sleep 1001; : {marker}")).await);
                let _ = std::process::Command::new("pkill")
                    .arg("-f")
                    .arg(&marker)
                    .status();
            }
        }
    }

    /// The process limit holds for the session's processes together (its
    /// cgroup), not only for each: two that fit alone do not fit together.
    #[tokio::test]
    async fn the_sessions_processes_share_its_cgroups_limits() {
        if matches!(
            super::super::limits::enforcement(),
            super::super::limits::Enforcement::Rlimits { .. }
        ) {
            eprintln!("NOTE: no cgroups here; limits are per process, not tested together");
            return;
        }
        for jail in modes() {
            let dir = tempfile::tempdir().unwrap();
            let p = policy(dir.path(), jail).limits(super::super::ProcessLimits {
                max_processes: 40,
                memory_bytes: 1 << 30,
            });
            let sp = SessionProcesses::default();
            let script = |name: &str| {
                format!("for i in $(seq 25); do sleep 100 & done; echo started-{name}; wait")
            };
            let a = start(&sp, &p, &script("a"), dir.path(), Input::Null).await;
            read_until(&sp, a.id, "started-a", String::new()).await;
            let b = start(&sp, &p, &script("b"), dir.path(), Input::Null).await;
            // The shell cannot start all of its children (and gives up).
            let text = read_until(&sp, b.id, "fork", String::new()).await;
            assert!(!text.contains("started-b"), "{jail:?}: {text:?}");
            // Alone, the same fits: the limit is the session's.
            sp.stop(a.id).await.unwrap();
            sp.read(b.id, Duration::from_secs(10), &CancellationToken::new())
                .await
                .unwrap();
            let cgroup = sp.cgroup.get().unwrap().as_ref().unwrap();
            for _ in 0..500 {
                if cgroup.processes() == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let c = start(&sp, &p, &script("c"), dir.path(), Input::Null).await;
            read_until(&sp, c.id, "started-c", String::new()).await;
            assert!(sp.end(Duration::from_secs(10)).await);
        }
    }

    #[tokio::test]
    async fn an_idle_session_stops_its_processes() {
        let dir = tempfile::tempdir().unwrap();
        let jail = *modes().last().unwrap();
        let p = policy(dir.path(), jail);
        let sp = SessionProcesses::new(Duration::from_millis(300));
        let marker = format!("idle-marker-{}", std::process::id());
        let info = start(
            &sp,
            &p,
            &format!("sleep 1000; : {marker}"),
            dir.path(),
            Input::Null,
        )
        .await;
        assert!(running(&marker));
        assert!(
            gone(&marker).await,
            "the idle time passed and it still runs"
        );
        // Its end, once its keeper has seen it.
        let ended = sp
            .read(info.id, Duration::from_secs(10), &CancellationToken::new())
            .await
            .unwrap();
        assert!(
            matches!(ended.info.state, State::Exited(ExitStatus::Cancelled)),
            "{ended:?}"
        );
    }

    #[test]
    fn output_keeps_its_head_and_a_rolling_tail_and_counts_what_it_dropped() {
        let mut out = Output::default();
        out.push(b"hello ");
        assert_eq!(out.since(0), (b"hello ".to_vec(), 0));
        assert_eq!(out.since(3), (b"lo ".to_vec(), 0));
        // Past the head, in pieces, more than the tail holds.
        let big = vec![b'x'; TAIL_BYTES];
        out.push(&vec![b'h'; HEAD_BYTES]);
        out.push(&big);
        out.push(b"the end");
        assert_eq!(out.held(), HEAD_BYTES + TAIL_BYTES);
        let (text, dropped) = out.since(0);
        assert_eq!(text.len(), HEAD_BYTES + TAIL_BYTES);
        assert!(text.starts_with(b"hello hhh"));
        assert!(text.ends_with(b"xxthe end"));
        assert_eq!(dropped, 6 + 7, "what fell between head and tail");
        assert_eq!(out.total(), (6 + HEAD_BYTES + TAIL_BYTES + 7) as u64);
        // A reader that had read everything before sees only what is new.
        let before = out.total();
        out.push(b"!");
        assert_eq!(out.since(before), (b"!".to_vec(), 0));
        // One write larger than the tail keeps its own last bytes.
        let mut out = Output::default();
        out.push(&vec![b'a'; HEAD_BYTES + 3 * TAIL_BYTES]);
        assert_eq!(out.held(), HEAD_BYTES + TAIL_BYTES);
        assert_eq!(out.since(0).1, 2 * TAIL_BYTES as u64);
    }
}

//! Recording and replaying calls at the sandbox boundary: everything a
//! component asks of the host (each Operation with what it answered, the
//! clocks it read, the random bytes it drew) is written to a recording as
//! it happens, and a replay serves the same component the same answers
//! from it instead of from the machine (`docs/recording.md`).
//!
//! Each call has its [`CallTape`], made by the session's [`Deck`] when the
//! call is prepared: recording, it writes every answer through the
//! [`Recorder`]; replaying, it hands out the answers of the recorded call
//! of the same id in order, and the first question that differs from the
//! recorded one is a divergence that ends the call ([`CallTape::diverged`]).
//! The WIT glue asks through [`taped`]; the call's WASI clocks and random
//! generators are the tape's ([`wasi`]).

mod file;
pub(crate) mod files;
mod stdio;
pub(crate) mod wasi;

pub(crate) use file::{Blobs, Recorder};
pub use file::{
    DEFAULT_LIMIT, FORMAT, RecordedCall, RecordedComponent, RecordedEnd, RecordedMessage,
    RecordedOp, Recording, RecordingHeader,
};
pub use stdio::{Counted, HeldAnswers, RecordedInput, replayed_stdio};

use crate::message::{ToolCall, ToolResult};
use crate::ops::fs;
use crate::ops::http_client::{Answered, Field, HttpTape, OnTape, Received, Sent};
use crate::ops::process::{ChildEvent, ExitStatus};
use crate::ops::search::{Found, Query};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What a component asked of the host, as a recording holds it and a
/// replay compares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Asked {
    Stat {
        path: String,
    },
    Read {
        path: String,
        offset: u64,
        max: u64,
    },
    ListDir {
        path: String,
    },
    /// `bytes` is the digest of what it wrote (kept in the recording).
    Write {
        path: String,
        bytes: String,
    },
    Append {
        path: String,
        bytes: String,
    },
    CreateDirAll {
        path: String,
    },
    Access {
        path: String,
    },
    Lock {
        path: String,
    },
    Search {
        query: Query,
    },
    /// A program started; `env` holds the names of the variables it set,
    /// never their values.
    Spawn {
        program: String,
        args: Vec<String>,
        cwd: String,
        env: Vec<String>,
        timeout_ms: Option<u64>,
    },
    /// The next event of the call's `child`th process (from 0), waiting at
    /// most `wait_ms` when given.
    Next {
        child: usize,
        wait_ms: Option<u32>,
    },
    Kill {
        child: usize,
    },
    /// Whether the call was cancelled.
    Cancelled,
    ActiveTools,
    AllTools,
    SetActiveTools {
        names: Vec<String>,
    },
    CallableTools,
    /// A call of another tool through the host.
    CallTool {
        name: String,
        arguments: String,
    },
    /// A session process started (`input`: `none`, `pipe`, or
    /// `terminal ROWSxCOLS`); `env` holds the variables' names only.
    SessionStart {
        program: String,
        args: Vec<String>,
        cwd: String,
        env: Vec<String>,
        input: String,
        shown: String,
    },
    /// Session process `id`'s output, waiting at most `wait_ms`.
    SessionRead {
        id: u32,
        wait_ms: u32,
    },
    /// Bytes written to session process `id` (their digest; none when it
    /// only reads), then its output.
    SessionWrite {
        id: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<String>,
        wait_ms: u32,
    },
    SessionList,
    SessionStop {
        id: u32,
    },
    /// Requests to the person's client, each its key, kind and parameters
    /// as sent.
    Client {
        requests: Vec<(String, crate::ops::client::ClientMethod, Value)>,
    },
    /// A file or directory opened through WASI files, where the component
    /// sees it (`files`).
    WasiOpen {
        path: String,
        write: bool,
    },
    /// An HTTP request as the component made it; `body` is the digest of
    /// its body (kept in the recording), unless it had none.
    Http {
        method: String,
        url: String,
        headers: Vec<Field>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
    },
}

impl Asked {
    /// What it asks, as a divergence names it: a verb and its object, the
    /// path relative to `cwd` where it lies beneath it.
    pub(crate) fn said(&self, cwd: &str) -> (&'static str, String) {
        let rel = |path: &str| {
            std::path::Path::new(path)
                .strip_prefix(cwd)
                .ok()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| path.to_string(), |p| p.to_string_lossy().into_owned())
        };
        match self {
            Asked::Stat { path } => ("stat", rel(path)),
            Asked::Read { path, offset, .. } if *offset > 0 => {
                ("read", format!("{} from byte {offset}", rel(path)))
            }
            Asked::Read { path, .. } => ("read", rel(path)),
            Asked::ListDir { path } => ("list", rel(path)),
            Asked::Write { path, .. } => ("write", rel(path)),
            Asked::Append { path, .. } => ("append to", rel(path)),
            Asked::CreateDirAll { path } => ("create the directory", rel(path)),
            Asked::Access { path } => ("check access to", rel(path)),
            Asked::Lock { path } => ("lock", rel(path)),
            Asked::Search { query } => ("search", rel(query.root())),
            Asked::Spawn { program, args, .. } => {
                let mut line = vec![program.clone()];
                line.extend(args.iter().cloned());
                ("run", line.join(" "))
            }
            Asked::Next { child, .. } => ("read the output of", format!("process {child}")),
            Asked::Kill { child } => ("stop", format!("process {child}")),
            Asked::Cancelled => ("check", "whether it was cancelled".into()),
            Asked::ActiveTools => ("list", "the active tools".into()),
            Asked::AllTools => ("list", "all tools".into()),
            Asked::SetActiveTools { names } => ("set", format!("the active tools to {names:?}")),
            Asked::CallableTools => ("list", "the tools it may call".into()),
            Asked::CallTool { name, .. } => ("call", format!("the tool {name}")),
            Asked::Http { method, url, .. } => ("send", format!("{method} {url}")),
            Asked::SessionStart { shown, .. } => ("start", format!("the session process {shown}")),
            Asked::SessionRead { id, .. } => ("read", format!("session process {id}")),
            Asked::SessionWrite { id, .. } => ("write to", format!("session process {id}")),
            Asked::SessionList => ("list", "the session's processes".into()),
            Asked::SessionStop { id } => ("stop", format!("session process {id}")),
            Asked::Client { requests } => {
                let keys: Vec<&str> = requests.iter().map(|(key, ..)| key.as_str()).collect();
                ("ask", format!("the client for {}", keys.join(", ")))
            }
            Asked::WasiOpen { path, write: false } => ("open", rel(path)),
            Asked::WasiOpen { path, write: true } => ("open for writing", rel(path)),
        }
    }

    /// `self` and `recorded` as a divergence names them: "read src/b.rs;
    /// the recording has src/a.rs next".
    fn against(&self, recorded: &Asked, cwd: &str) -> String {
        let ((verb, what), (was_verb, was)) = (self.said(cwd), recorded.said(cwd));
        if verb == was_verb && what != was {
            format!("{verb} {what}; the recording has {was} next")
        } else if verb == was_verb {
            // The same object, asked differently (another range, other bytes).
            format!(
                "{verb} {what} as {}; the recording has {} next",
                compact(self),
                compact(recorded)
            )
        } else {
            format!("{verb} {what}; the recording has {was_verb} {was} next")
        }
    }
}

/// A question in its recorded form, for a divergence between two asked the
/// same way of the same object.
fn compact(asked: &Asked) -> String {
    serde_json::to_string(asked).unwrap_or_default()
}

/// An answer as a recording holds it: plain JSON, with bytes kept once
/// each in the recording's blobs and named by their digest.
pub(crate) trait Taped: Sized {
    fn put(&self, blobs: &dyn Blobs) -> Value;
    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self>;
}

macro_rules! taped_as_json {
    ($($t:ty),* $(,)?) => {$(
        impl Taped for $t {
            fn put(&self, _: &dyn Blobs) -> Value {
                serde_json::to_value(self).unwrap_or(Value::Null)
            }
            fn take(value: &Value, _: &dyn Blobs) -> Option<Self> {
                serde_json::from_value(value.clone()).ok()
            }
        }
    )*};
}

taped_as_json!(
    (),
    bool,
    String,
    Vec<String>,
    fs::Metadata,
    Vec<fs::DirEntry>,
    Found,
    ToolResult,
    ExitStatus,
    crate::ops::nested::NestedResult,
    crate::ops::process::session::ProcessInfo,
    Vec<crate::ops::process::session::ProcessInfo>,
    Vec<Value>,
);

/// A session process's output, its bytes kept as a blob.
impl Taped for crate::ops::process::session::Read {
    fn put(&self, blobs: &dyn Blobs) -> Value {
        json!({ "info": self.info, "output": self.output.put(blobs), "dropped": self.dropped })
    }

    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self> {
        Some(crate::ops::process::session::Read {
            info: serde_json::from_value(value.get("info")?.clone()).ok()?,
            output: Vec::take(value.get("output")?, blobs)?,
            dropped: value.get("dropped")?.as_u64()?,
        })
    }
}

impl Taped for Vec<u8> {
    fn put(&self, blobs: &dyn Blobs) -> Value {
        json!({ "blob": blobs.keep(self) })
    }

    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self> {
        blobs.get(value.get("blob")?.as_str()?)
    }
}

/// An outcome: `{"ok": …}` or `{"err": …}`.
impl<T: Taped, E: Serialize + DeserializeOwned> Taped for Result<T, E> {
    fn put(&self, blobs: &dyn Blobs) -> Value {
        match self {
            Ok(t) => json!({ "ok": t.put(blobs) }),
            Err(e) => json!({ "err": serde_json::to_value(e).unwrap_or(Value::Null) }),
        }
    }

    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self> {
        match (value.get("ok"), value.get("err")) {
            (Some(ok), None) => T::take(ok, blobs).map(Ok),
            (None, Some(err)) => serde_json::from_value(err.clone()).ok().map(Err),
            _ => None,
        }
    }
}

impl<T: Taped> Taped for Option<T> {
    fn put(&self, blobs: &dyn Blobs) -> Value {
        self.as_ref().map_or(Value::Null, |t| t.put(blobs))
    }

    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self> {
        match value {
            Value::Null => Some(None),
            value => T::take(value, blobs).map(Some),
        }
    }
}

impl Taped for ChildEvent {
    fn put(&self, blobs: &dyn Blobs) -> Value {
        match self {
            ChildEvent::Output(bytes) => json!({ "output": bytes.put(blobs) }),
            ChildEvent::Exit(status) => json!({ "exit": status.put(blobs) }),
        }
    }

    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self> {
        if let Some(output) = value.get("output") {
            return Vec::take(output, blobs).map(ChildEvent::Output);
        }
        ExitStatus::take(value.get("exit")?, blobs).map(ChildEvent::Exit)
    }
}

/// A response as the component read it, its body kept as a blob.
impl Taped for Received {
    fn put(&self, blobs: &dyn Blobs) -> Value {
        let mut value = json!({
            "status": self.status,
            "headers": self.headers,
            "body": self.body.put(blobs),
        });
        if let Some(trailers) = &self.trailers {
            value["trailers"] = json!(trailers);
        }
        if let Some(failed) = &self.failed {
            value["failed"] = json!(failed);
        }
        value
    }

    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self> {
        fn field<T: DeserializeOwned>(value: &Value, key: &str) -> Option<T> {
            serde_json::from_value(value.get(key)?.clone()).ok()
        }
        Some(Received {
            status: u16::try_from(value.get("status")?.as_u64()?).ok()?,
            headers: field(value, "headers")?,
            body: Vec::take(value.get("body")?, blobs)?,
            trailers: field(value, "trailers"),
            failed: field(value, "failed"),
        })
    }
}

/// A call's HTTP requests, on its tape (`ops::http_client`'s taped
/// requests ask through this).
impl HttpTape for CallTape {
    fn ask(self: Arc<Self>, sent: &Sent) -> OnTape {
        let asked = Asked::Http {
            method: sent.method.clone(),
            url: sent.url.clone(),
            headers: sent.headers.clone(),
            body: (!sent.body.is_empty()).then(|| self.blobs().keep(&sent.body)),
        };
        if let Some(replayed) = self.replayed::<Answered>(&asked) {
            return OnTape::Replayed(replayed);
        }
        let at = self.reserve();
        OnTape::Recording(Box::new(move |answered: &Answered| {
            self.record_at(at, asked, answered, None);
        }))
    }

    fn not_allowed(&self, sent: &Sent) -> String {
        self.diverge(format!(
            "the component asked to send {} {}, which its grant does not allow now",
            sent.method, sent.url
        ))
    }
}

/// Where hosts record their calls ([`crate::HostBuilder::record`]): one
/// file, opened by the first host built with it; a host built again with
/// the same (an MCP server reloading its tools) goes on writing it.
#[derive(Clone, Debug)]
pub struct RecordTo {
    pub(crate) path: std::path::PathBuf,
    pub(crate) command: String,
    pub(crate) limit: u64,
    pub(crate) opened: Arc<std::sync::OnceLock<Arc<Recorder>>>,
}

impl RecordTo {
    /// Record to `path`; `command` names what ran, for the recording's
    /// header (`replay` prints as `call`, `call --json`, `run` and `run
    /// --json` print; anything else as result messages).
    pub fn new(path: impl Into<std::path::PathBuf>, command: impl Into<String>) -> RecordTo {
        RecordTo {
            path: path.into(),
            command: command.into(),
            limit: DEFAULT_LIMIT,
            opened: Default::default(),
        }
    }

    /// Stop recording past `bytes` (default [`DEFAULT_LIMIT`]): the
    /// recording's last line says so; the calls go on.
    pub fn limit(mut self, bytes: u64) -> RecordTo {
        self.limit = bytes;
        self
    }
}

/// What the session records its calls to, or replays them from.
#[derive(Debug)]
pub(crate) enum Deck {
    Record(Arc<Recorder>),
    Replay(Arc<Replaying>),
}

/// A recording being replayed: the calls of each id, handed out in their
/// recorded order.
#[derive(Debug)]
pub(crate) struct Replaying {
    recording: Arc<Recording>,
    calls: Mutex<HashMap<String, VecDeque<usize>>>,
    /// The divergences not yet taken ([`Replaying::divergences`]).
    diverged: Mutex<Vec<String>>,
    /// The recorded calls begun and not yet ended, and the news of an end.
    running: Mutex<Vec<usize>>,
    ended: tokio::sync::Notify,
    /// The extensions served by other components than the recorded ones.
    replaced: Vec<String>,
}

impl Replaying {
    /// A replay of `recording`, with the extensions named in `replaced`
    /// served by other components than the recorded ones (what a new
    /// version does differently is the point).
    pub(crate) fn new(recording: Arc<Recording>, replaced: Vec<String>) -> Replaying {
        let mut calls: HashMap<String, VecDeque<usize>> = HashMap::new();
        for (i, call) in recording.calls.iter().enumerate() {
            calls.entry(call.id.clone()).or_default().push_back(i);
        }
        Replaying {
            recording,
            calls: Mutex::new(calls),
            diverged: Mutex::new(Vec::new()),
            running: Mutex::new(Vec::new()),
            ended: tokio::sync::Notify::new(),
            replaced,
        }
    }

    /// `message`'s calls are about to run: each one the recording holds is
    /// running from now on, for the ends of the others to wait on
    /// ([`CallTape::turn_to_end`]), whichever is prepared first.
    fn expect(&self, message: &Value) {
        let ids = message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("toolCall"))
            .filter_map(|block| block.get("id").and_then(Value::as_str));
        let calls = self.calls.lock().expect("replay lock");
        let mut running = self.running.lock().expect("replay lock");
        for id in ids {
            if let Some(&i) = calls.get(id).and_then(VecDeque::front)
                && !running.contains(&i)
            {
                running.push(i);
            }
        }
    }

    /// The recorded workspace.
    pub(crate) fn workspace(&self) -> &str {
        &self.recording.header.workspace
    }

    /// The calls' divergences since this was last asked, in order.
    pub(crate) fn divergences(&self) -> Vec<String> {
        std::mem::take(&mut *self.diverged.lock().expect("replay lock"))
    }
}

/// The component that serves a call, as the tape records it.
pub(crate) struct Serving<'a> {
    pub call: &'a ToolCall,
    pub digest: &'a str,
    pub source: String,
    pub parent: Option<&'a str>,
}

impl Deck {
    /// A front end sends `message`'s calls (`any_tool`: whether they may
    /// name a tool the model could not call): recorded, so that a replay
    /// sends them the same way.
    pub(crate) fn message(&self, message: &Value, any_tool: bool) {
        match self {
            Deck::Record(recorder) => recorder.message(message, any_tool),
            Deck::Replay(replaying) => replaying.expect(message),
        }
    }

    /// The extensions a host loaded, recorded with their grants.
    pub(crate) fn components(&self, components: &[RecordedComponent]) {
        if let Deck::Record(recorder) = self {
            recorder.components(components);
        }
    }

    /// Why the recording stopped before the calls did (recording: once
    /// every line queued so far is written), or the divergences since last
    /// asked (replaying).
    pub(crate) fn report(&self) -> Vec<String> {
        match self {
            Deck::Record(recorder) => {
                recorder.flush();
                recorder.stopped().into_iter().collect()
            }
            Deck::Replay(replaying) => replaying.divergences(),
        }
    }

    /// The tape of a call about to be prepared.
    pub(crate) fn begin(&self, serving: Serving<'_>) -> Arc<CallTape> {
        let id = serving.call.id.clone();
        match self {
            Deck::Record(recorder) => {
                let seed = recorder.seed();
                let n = recorder.begin_call(&serving, seed);
                Arc::new(CallTape::new(
                    id,
                    Mode::Record {
                        recorder: recorder.clone(),
                        n,
                    },
                    seed,
                ))
            }
            Deck::Replay(replaying) => {
                let found = replaying
                    .calls
                    .lock()
                    .expect("replay lock")
                    .get_mut(&id)
                    .and_then(VecDeque::pop_front);
                if let Some(i) = found {
                    let mut running = replaying.running.lock().expect("replay lock");
                    if !running.contains(&i) {
                        running.push(i);
                    }
                }
                let recorded = found.map(|i| &replaying.recording.calls[i]);
                let (seed, refused) = match recorded {
                    None => (
                        0,
                        Some("the recording holds no call of this id".to_string()),
                    ),
                    Some(recorded) => (
                        recorded.seed,
                        refusal(recorded, &serving, &replaying.replaced),
                    ),
                };
                let tape = CallTape::new(
                    id,
                    Mode::Replay {
                        replaying: replaying.clone(),
                        call: found,
                    },
                    seed,
                );
                if let Some(why) = refused {
                    tape.diverge(why);
                }
                Arc::new(tape)
            }
        }
    }
}

/// Why `recorded` cannot be replayed by what serves it now, if it cannot.
fn refusal(recorded: &RecordedCall, now: &Serving<'_>, replaced: &[String]) -> Option<String> {
    if recorded.tool != now.call.name {
        return Some(format!(
            "the recording has a call of {}, and this is a call of {}",
            recorded.tool, now.call.name
        ));
    }
    let stem = std::path::Path::new(&recorded.source)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    let replacing = stem.is_some_and(|name| replaced.contains(&name));
    if recorded.digest != now.digest && !replacing {
        return Some(format!(
            "its component is {} and the recording's was {} ({})",
            now.digest, recorded.digest, recorded.source
        ));
    }
    if let Some(what) = recorded.beyond.first() {
        return Some(format!(
            "its component used {what}, which recordings do not hold, so it is not replayed"
        ));
    }
    None
}

enum Mode {
    Record {
        recorder: Arc<Recorder>,
        /// The call's number in the recording.
        n: u64,
    },
    Replay {
        replaying: Arc<Replaying>,
        /// Its index among the recording's calls (`None`: not recorded).
        call: Option<usize>,
    },
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Record { n, .. } => write!(f, "Record({n})"),
            Mode::Replay { call, .. } => write!(f, "Replay({call:?})"),
        }
    }
}

/// One call's tape: what it asked and was answered, in order, with the
/// clocks and random bytes it saw.
#[derive(Debug)]
pub(crate) struct CallTape {
    id: String,
    mode: Mode,
    started: Instant,
    /// `wasi:random/insecure-seed`'s value for the call.
    pub(crate) seed: u128,
    state: Mutex<TapeState>,
    /// Replaying: the tree its WASI directories are served from
    /// ([`files`]).
    scratch: std::sync::OnceLock<tempfile::TempDir>,
}

#[derive(Debug, Default)]
struct TapeState {
    /// The next question's index.
    next: usize,
    /// The resource of each process the call started, in order.
    children: Vec<u32>,
    /// What the call saw of clocks and random (recording), or how much of
    /// what was recorded it has used (replaying).
    seen: wasi::Seen,
    /// The first divergence, once there is one.
    diverged: Option<String>,
    /// The cwd its `execute` was given (for paths in divergences).
    cwd: String,
    /// Its end event's place among the recording's (recording).
    order: Option<u64>,
    ended: bool,
    /// Its WASI directories are recorded (once per call).
    wasi_dirs_kept: bool,
}

impl CallTape {
    fn new(id: String, mode: Mode, seed: u128) -> CallTape {
        CallTape {
            id,
            mode,
            started: Instant::now(),
            seed,
            state: Mutex::new(TapeState::default()),
            scratch: std::sync::OnceLock::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TapeState> {
        self.state.lock().expect("tape lock")
    }

    fn recorded(&self) -> Option<&RecordedCall> {
        match &self.mode {
            Mode::Replay {
                replaying,
                call: Some(i),
            } => replaying.recording.calls.get(*i),
            _ => None,
        }
    }

    pub(crate) fn is_replaying(&self) -> bool {
        matches!(self.mode, Mode::Replay { .. })
    }

    /// Where bytes are kept (recording) or found (replaying).
    pub(crate) fn blobs(&self) -> &dyn Blobs {
        match &self.mode {
            Mode::Record { recorder, .. } => recorder.as_ref(),
            Mode::Replay { replaying, .. } => replaying.recording.as_ref(),
        }
    }

    /// The first divergence, unless the call has none.
    pub(crate) fn diverged(&self) -> Option<String> {
        self.state().diverged.clone()
    }

    /// Note a divergence (only the first counts) and say it.
    pub(crate) fn diverge(&self, why: String) -> String {
        let said = format!("call {}: {why}", self.id);
        let mut state = self.state();
        if let Some(first) = &state.diverged {
            return first.clone();
        }
        state.diverged = Some(said.clone());
        drop(state);
        if let Mode::Replay { replaying, .. } = &self.mode {
            replaying
                .diverged
                .lock()
                .expect("replay lock")
                .push(said.clone());
        }
        said
    }

    /// The context `execute` gets: `live` recorded (recording), or the
    /// recorded one (replaying). `cwd` says where relative paths in
    /// divergences start.
    pub(crate) fn context<C: Serialize + DeserializeOwned>(
        &self,
        live: C,
        cwd: impl Fn(&C) -> String,
    ) -> C {
        let context = match (&self.mode, self.recorded()) {
            (Mode::Record { recorder, n }, _) => {
                let context = serde_json::to_string(&live).unwrap_or_default();
                recorder.put(format!(r#"{{"call":{n},"context":{context}}}"#));
                live
            }
            (Mode::Replay { .. }, Some(recorded)) => recorded
                .context
                .clone()
                .and_then(|c| serde_json::from_value(c).ok())
                .unwrap_or(live),
            (Mode::Replay { .. }, None) => live,
        };
        self.state().cwd = cwd(&context);
        context
    }

    /// The recorded answer to `asked` (replaying): `Err` with the
    /// divergence when the recording has something else next. `None` when
    /// recording: the caller asks the machine and [`Self::record`]s it.
    pub(crate) fn replayed<T: Taped>(&self, asked: &Asked) -> Option<Result<T, String>> {
        let Mode::Replay { replaying, .. } = &self.mode else {
            return None;
        };
        let recording = &replaying.recording;
        let mut state = self.state();
        if let Some(diverged) = &state.diverged {
            return Some(Err(diverged.clone()));
        }
        let i = state.next;
        state.next += 1;
        let cwd = state.cwd.clone();
        drop(state);
        let Some(recorded) = self.recorded() else {
            return Some(Err(
                self.diverge("the recording holds no call of this id".into())
            ));
        };
        let (verb, what) = asked.said(&cwd);
        let Some(op) = recorded.ops.get(i) else {
            return Some(Err(self.diverge(format!(
                "the component asked to {verb} {what}; the recording has nothing more for this call"
            ))));
        };
        if &op.asked != asked {
            let why = format!("the component asked to {}", asked.against(&op.asked, &cwd));
            return Some(Err(self.diverge(why)));
        }
        if let Some(why) = &op.withheld {
            return Some(Err(self.diverge(format!(
                "the recording withholds what {verb} {what} answered: {why}"
            ))));
        }
        Some(T::take(&op.answer, recording.as_ref()).ok_or_else(|| {
            self.diverge(format!(
                "the recording's answer to {verb} {what} is not one this question has"
            ))
        }))
    }

    /// Record `answer` to `asked` (recording; nothing when replaying).
    /// `withheld`: why its bytes are not kept (a protected path's).
    pub(crate) fn record<T: Taped>(&self, asked: Asked, answer: &T, withheld: Option<&str>) {
        self.record_at(self.reserve(), asked, answer, withheld);
    }

    /// The place of the next question among the call's (its answer
    /// recorded there later with [`Self::record_at`], when other questions
    /// may be answered before it: a request whose response is still being
    /// read).
    fn reserve(&self) -> usize {
        let mut state = self.state();
        state.next += 1;
        state.next - 1
    }

    fn record_at<T: Taped>(&self, i: usize, asked: Asked, answer: &T, withheld: Option<&str>) {
        let Mode::Record { recorder, n } = &self.mode else {
            return;
        };
        let ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let ms = (ms * 1000.0).round() / 1000.0;
        let answer = match withheld {
            Some(_) => Value::Null,
            None => answer.put(recorder.as_ref()),
        };
        /// A question's line, written as it is (no intermediate JSON tree).
        #[derive(Serialize)]
        struct Line<'a> {
            call: u64,
            op: usize,
            ms: f64,
            asked: &'a Asked,
            answer: Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            withheld: Option<&'a str>,
        }
        let line = Line {
            call: *n,
            op: i,
            ms,
            asked: &asked,
            answer,
            withheld,
        };
        recorder.put(serde_json::to_string(&line).unwrap_or_default());
    }

    /// The call started its `k`th process as resource `rep`.
    pub(crate) fn child_started(&self, rep: u32) {
        self.state().children.push(rep);
    }

    /// The index of the process held as resource `rep`.
    pub(crate) fn child_of(&self, rep: u32) -> usize {
        let state = self.state();
        state
            .children
            .iter()
            .position(|&r| r == rep)
            .unwrap_or(state.children.len())
    }

    /// The call ended with `result`: its end recorded with what it saw of
    /// the clocks and random (recording); when replaying, a divergence if
    /// the recording had more for it, or another result.
    pub(crate) fn end(&self, result: &ToolResult, is_error: bool) {
        let mut state = self.state();
        if std::mem::replace(&mut state.ended, true) {
            return;
        }
        match &self.mode {
            Mode::Record { recorder, n } => {
                let (seen, order) = (std::mem::take(&mut state.seen), state.order);
                drop(state);
                let seen = seen.put(recorder.as_ref());
                /// The end's line, written as it is (no JSON tree of the
                /// result first: its texts may be long).
                #[derive(Serialize)]
                struct Line<'a> {
                    call: u64,
                    end: End<'a>,
                    seen: wasi::SeenKept<'a>,
                }
                #[derive(Serialize)]
                struct End<'a> {
                    result: Kept<'a>,
                    is_error: bool,
                    order: Option<u64>,
                }
                let line = Line {
                    call: *n,
                    end: End {
                        result: Kept::of(result, recorder.as_ref()),
                        is_error,
                        order,
                    },
                    seen,
                };
                recorder.put(serde_json::to_string(&line).unwrap_or_default());
            }
            Mode::Replay { replaying, call } => {
                if let Some(i) = call {
                    replaying
                        .running
                        .lock()
                        .expect("replay lock")
                        .retain(|j| j != i);
                    replaying.ended.notify_waiters();
                }
                let (next, cwd) = (state.next, state.cwd.clone());
                let leftover = state.diverged.is_none().then(|| {
                    let recorded = self.recorded()?;
                    recorded.ops.get(next).map(|op| op.asked.said(&cwd))
                });
                drop(state);
                if let Some(Some((verb, what))) = leftover {
                    self.diverge(format!(
                        "the component finished; the recording has {verb} {what} next"
                    ));
                } else if let Some(recorded) = self.recorded()
                    && let Some(end) = &recorded.end
                    && (end.result != *result || end.is_error != is_error)
                    && self.diverged().is_none()
                {
                    self.diverge(difference(&end.result, end.is_error, result, is_error));
                }
            }
        }
    }
}

impl CallTape {
    /// Its end event goes out now: recording, its place among the ends is
    /// noted (what a replay keeps to).
    pub(crate) fn ending(&self) {
        if let Mode::Record { recorder, .. } = &self.mode {
            let order = recorder.next_end();
            self.state().order.get_or_insert(order);
        }
    }

    /// Replaying, wait until every call whose end the recording has before
    /// this one's, and which this replay runs too, has ended: the calls of
    /// a parallel batch end in their recorded order, so their events come
    /// as the recorded command printed them.
    pub(crate) async fn turn_to_end(&self) {
        let Mode::Replay {
            replaying,
            call: Some(me),
        } = &self.mode
        else {
            return;
        };
        let calls = &replaying.recording.calls;
        let Some(mine) = calls[*me].end_rank else {
            return;
        };
        // Bounded: a call that never runs here (its tool is missing, which
        // the replay reports) holds the others up no longer than this.
        let given_up = tokio::time::Instant::now() + END_WAIT;
        loop {
            let ended = replaying.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let before = replaying
                .running
                .lock()
                .expect("replay lock")
                .iter()
                .any(|&j| j != *me && calls[j].end_rank.is_some_and(|r| r < mine));
            if !before || tokio::time::timeout_at(given_up, ended).await.is_err() {
                return;
            }
        }
    }
}

/// The longest a replayed call waits for those the recording ended first.
const END_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Texts at least this long are kept as blobs in a recorded result.
const KEPT_TEXT: usize = 256;

/// `result` as a recording holds it: each long text block's text kept
/// once by its digest (`"blob"` in place of `"text"`), as the bytes a tool
/// read are; a `read` of a whole file then costs its result nothing more.
/// Its fields are [`ToolResult`]'s, borrowed (serialized as they are).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Kept<'a> {
    content: Vec<KeptBlock<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a Value>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    added_tool_names: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    terminate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum KeptBlock<'a> {
    Blob {
        #[serde(rename = "type")]
        kind: &'static str,
        blob: String,
    },
    As(&'a crate::message::ContentBlock),
}

impl<'a> Kept<'a> {
    fn of(result: &'a ToolResult, blobs: &dyn Blobs) -> Kept<'a> {
        let ToolResult {
            content,
            details,
            usage,
            added_tool_names,
            terminate,
            structured_content,
        } = result;
        let block = |block: &'a crate::message::ContentBlock| match block {
            crate::message::ContentBlock::Text { text } if text.len() >= KEPT_TEXT => {
                KeptBlock::Blob {
                    kind: "text",
                    blob: blobs.keep(text.as_bytes()),
                }
            }
            block => KeptBlock::As(block),
        };
        Kept {
            content: content.iter().map(block).collect(),
            details: details.as_ref(),
            usage: usage.as_ref(),
            added_tool_names,
            terminate: *terminate,
            structured_content: structured_content.as_ref(),
        }
    }
}

/// A recorded result, its kept texts put back (`None`: one is missing).
pub(crate) fn texts_back(mut value: Value, blobs: &dyn Blobs) -> Option<Value> {
    if let Some(blocks) = value.get_mut("content").and_then(Value::as_array_mut) {
        for block in blocks {
            let Some(digest) = block.get("blob").and_then(Value::as_str) else {
                continue;
            };
            let text = String::from_utf8(blobs.get(digest)?).ok()?;
            let block = block.as_object_mut()?;
            block.remove("blob");
            block.insert("text".into(), text.into());
        }
    }
    Some(value)
}

/// How a replayed result differs from the recorded one, in a sentence.
fn difference(was: &ToolResult, was_error: bool, now: &ToolResult, is_error: bool) -> String {
    if was_error != is_error {
        return format!(
            "the result {} an error and the recording's {}",
            if is_error { "is" } else { "is not" },
            if was_error { "was" } else { "was not" }
        );
    }
    let (was_text, now_text) = (was.text(), now.text());
    if was_text != now_text {
        let at = was_text
            .bytes()
            .zip(now_text.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(was_text.len().min(now_text.len()));
        return format!(
            "the result's text differs from the recording's at byte {at} (the recording's is {} bytes, this one {})",
            was_text.len(),
            now_text.len()
        );
    }
    "the result's details differ from the recording's".into()
}

/// A question on `tape` before the machine is asked: `Err` with the
/// recorded answer when replaying (a divergence is a trap that ends the
/// call); else where to record the machine's answer, if anywhere.
#[allow(clippy::type_complexity)]
fn replayed_or<T: Taped>(
    tape: Option<(&CallTape, Asked)>,
) -> Result<Option<(&CallTape, Asked)>, wasmtime::Result<T>> {
    match &tape {
        Some((on, asked)) => match on.replayed(asked) {
            Some(replayed) => Err(replayed.map_err(wasmtime::Error::msg)),
            None => Ok(tape),
        },
        None => Ok(None),
    }
}

/// Ask through `tape`: the recorded answer when replaying, else `live`'s,
/// recorded when recording.
pub(crate) async fn taped<T: Taped>(
    tape: Option<(&CallTape, Asked)>,
    live: impl std::future::Future<Output = T>,
) -> wasmtime::Result<T> {
    taped_withholding(tape, |_| None, live).await
}

/// [`taped`], its answer's bytes left out of the recording where
/// `withheld` says why (a protected path's).
pub(crate) async fn taped_withholding<T: Taped>(
    tape: Option<(&CallTape, Asked)>,
    withheld: impl FnOnce(&T) -> Option<&'static str>,
    live: impl std::future::Future<Output = T>,
) -> wasmtime::Result<T> {
    let recording = match replayed_or(tape) {
        Err(replayed) => return replayed,
        Ok(recording) => recording,
    };
    let answer = live.await;
    if let Some((tape, asked)) = recording {
        tape.record(asked, &answer, withheld(&answer));
    }
    Ok(answer)
}

/// [`taped`] for a question the host answers at once.
pub(crate) fn taped_now<T: Taped>(
    tape: Option<(&CallTape, Asked)>,
    live: impl FnOnce() -> T,
) -> wasmtime::Result<T> {
    let recording = match replayed_or(tape) {
        Err(replayed) => return replayed,
        Ok(recording) => recording,
    };
    let answer = live();
    if let Some((tape, asked)) = recording {
        tape.record(asked, &answer, None);
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::fs::FsError;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({"path": "src/a.rs"}),
        }
    }

    fn context() -> Value {
        json!({ "cwd": "/w", "roots": ["/w"] })
    }

    fn cwd(context: &Value) -> String {
        context["cwd"].as_str().unwrap_or_default().to_string()
    }

    fn serving(call: &ToolCall) -> Serving<'_> {
        Serving {
            call,
            digest: "blake3:00",
            source: "built-in".into(),
            parent: None,
        }
    }

    fn header() -> RecordingHeader {
        RecordingHeader {
            format: FORMAT,
            release: "toolhost test".into(),
            command: "call".into(),
            workspace: "/w".into(),
            pi: "0.85".into(),
            host_clock: Vec::new(),
        }
    }

    fn said(text: &str) -> ToolResult {
        ToolResult {
            content: vec![crate::message::ContentBlock::text(text)],
            ..Default::default()
        }
    }

    fn read(path: &str) -> Asked {
        Asked::Read {
            path: path.into(),
            offset: 0,
            max: 100,
        }
    }

    /// A recording of call c3 reading /w/src/a.rs, and a replay of it.
    fn recorded_read() -> (tempfile::TempDir, Deck) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.rec");
        let header = header();
        let recorder = Arc::new(Recorder::create(&path, &header, DEFAULT_LIMIT).unwrap());
        let deck = Deck::Record(recorder);
        let c3 = call("c3");
        let tape = deck.begin(serving(&c3));
        tape.context(context(), cwd);
        let answer: Result<Vec<u8>, FsError> = Ok(b"fn a() {}\n".to_vec());
        assert!(
            tape.replayed::<Result<Vec<u8>, FsError>>(&read("/w/src/a.rs"))
                .is_none()
        );
        tape.record(read("/w/src/a.rs"), &answer, None);
        tape.end(&said("fn a() {}\n"), false);
        drop((tape, deck));
        let recording = Arc::new(Recording::open(&path).unwrap());
        (
            dir,
            Deck::Replay(Arc::new(Replaying::new(recording, Vec::new()))),
        )
    }

    #[test]
    fn a_replay_answers_from_the_recording_and_names_the_first_question_that_differs() {
        let (_dir, deck) = recorded_read();
        let c3 = call("c3");
        let tape = deck.begin(serving(&c3));
        let elsewhere = json!({ "cwd": "/elsewhere", "roots": ["/elsewhere"] });
        assert_eq!(tape.context(elsewhere, cwd), context());
        let same = tape.replayed::<Result<Vec<u8>, FsError>>(&read("/w/src/a.rs"));
        assert_eq!(same, Some(Ok(Ok(b"fn a() {}\n".to_vec()))));
        tape.end(&said("fn a() {}\n"), false);
        assert_eq!(deck.report(), Vec::<String>::new());

        let (_dir, deck) = recorded_read();
        let tape = deck.begin(serving(&c3));
        tape.context(context(), cwd);
        let other = tape.replayed::<Result<Vec<u8>, FsError>>(&read("/w/src/b.rs"));
        let said = "call c3: the component asked to read src/b.rs; the recording has src/a.rs next";
        assert_eq!(other, Some(Err(said.to_string())));
        // Only the first divergence counts.
        let later = tape.replayed::<Result<Vec<u8>, FsError>>(&read("/w/src/a.rs"));
        assert_eq!(later, Some(Err(said.to_string())));
        assert_eq!(deck.report(), vec![said.to_string()]);
    }

    #[test]
    fn a_replay_that_asks_less_or_answers_otherwise_diverges() {
        let c3 = call("c3");
        let (_dir, deck) = recorded_read();
        let tape = deck.begin(serving(&c3));
        tape.context(context(), cwd);
        tape.end(&said("fn a() {}\n"), false);
        assert_eq!(
            deck.report(),
            vec!["call c3: the component finished; the recording has read src/a.rs next"]
        );

        let (_dir, deck) = recorded_read();
        let tape = deck.begin(serving(&c3));
        tape.context(context(), cwd);
        let _ = tape.replayed::<Result<Vec<u8>, FsError>>(&read("/w/src/a.rs"));
        tape.end(&said("fn b() {}\n"), false);
        assert_eq!(
            deck.report(),
            vec![
                "call c3: the result's text differs from the recording's at byte 3 (the \
                 recording's is 10 bytes, this one 10)"
            ]
        );

        let (_dir, deck) = recorded_read();
        let other = Serving {
            digest: "blake3:11",
            ..serving(&c3)
        };
        let tape = deck.begin(other);
        assert_eq!(
            tape.diverged().unwrap(),
            "call c3: its component is blake3:11 and the recording's was blake3:00 (built-in)"
        );
        let none = deck.begin(serving(&call("c9")));
        assert_eq!(
            none.diverged().unwrap(),
            "call c9: the recording holds no call of this id"
        );
    }

    #[test]
    fn clocks_and_random_bytes_come_back_in_order_and_run_out_as_a_divergence() {
        // Recorded: what the machine gave, kept.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.rec");
        let header = header();
        let recording = Deck::Record(Arc::new(
            Recorder::create(&path, &header, DEFAULT_LIMIT).unwrap(),
        ));
        let c1 = call("c1");
        let tape = recording.begin(serving(&c1));
        let first = tape.clock(wasi::Clock::Monotonic, || 5);
        let second = tape.clock(wasi::Clock::Monotonic, || 9);
        let mut drawn = [0u8; 4];
        tape.random(wasi::Random::Secure, &mut drawn, |b| {
            b.copy_from_slice(&[1, 2, 3, 4])
        });
        tape.end(&said("x"), false);
        drop((tape, recording));
        assert_eq!((first, second, drawn), (5, 9, [1, 2, 3, 4]));

        let recording = Arc::new(Recording::open(&path).unwrap());
        let replay = Deck::Replay(Arc::new(Replaying::new(recording, Vec::new())));
        let tape = replay.begin(serving(&c1));
        let machine = || panic!("a replay never reads the machine's clock");
        assert_eq!(tape.clock(wasi::Clock::Monotonic, machine), 5);
        assert_eq!(tape.clock(wasi::Clock::Monotonic, machine), 9);
        let mut got = [0u8; 4];
        tape.random(wasi::Random::Secure, &mut got, |_| {
            panic!("nor its generator")
        });
        assert_eq!(got, [1, 2, 3, 4]);
        assert_eq!(tape.clock(wasi::Clock::Monotonic, machine), 9);
        assert_eq!(
            tape.diverged().unwrap(),
            "call c1: the component read the monotonic clock more often than the recording \
             holds (2 readings)"
        );
    }

    #[test]
    fn an_answer_written_late_keeps_the_place_its_question_took() {
        // A request asked first and answered last (its response still being
        // read while the call read a file): read back in the order asked.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.rec");
        let recorder = Arc::new(Recorder::create(&path, &header(), DEFAULT_LIMIT).unwrap());
        let deck = Deck::Record(recorder);
        let c1 = call("c1");
        let tape = deck.begin(serving(&c1));
        tape.context(context(), cwd);
        let sent = Sent {
            method: "GET".into(),
            url: "http://example.test/".into(),
            headers: Vec::new(),
            body: b"q".to_vec(),
        };
        let OnTape::Recording(answer) = tape.clone().ask(&sent) else {
            panic!("a recording call asks the machine");
        };
        let file: Result<Vec<u8>, FsError> = Ok(b"x".to_vec());
        tape.record(read("/w/a"), &file, None);
        let received: Answered = Ok(Received {
            status: 200,
            headers: vec![Field(
                "x-a".into(),
                crate::ops::http_client::FieldValue::Text("1".into()),
            )],
            body: b"hello".to_vec(),
            trailers: None,
            failed: Some(crate::ops::http_client::Failure::Code(
                crate::ops::http_client::Code::ConnectionReadTimeout,
            )),
        });
        answer(&received);
        tape.end(&said("x"), false);
        drop((tape, deck));

        let recording = Arc::new(Recording::open(&path).unwrap());
        let asked: Vec<&'static str> = recording.calls[0]
            .ops
            .iter()
            .map(|op| op.asked.said("/w").0)
            .collect();
        assert_eq!(asked, ["send", "read"]);
        let replay = Deck::Replay(Arc::new(Replaying::new(recording, Vec::new())));
        let tape = replay.begin(serving(&c1));
        tape.context(context(), cwd);
        let OnTape::Replayed(Ok(again)) = tape.clone().ask(&sent) else {
            panic!("a replayed call is answered from the recording");
        };
        assert_eq!(again, received);
    }

    #[test]
    fn a_kept_result_comes_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let recorder =
            Recorder::create(&dir.path().join("k.rec"), &header(), DEFAULT_LIMIT).unwrap();
        let long = "x".repeat(KEPT_TEXT);
        let result = ToolResult {
            content: vec![
                crate::message::ContentBlock::text(&long),
                crate::message::ContentBlock::text("short"),
            ],
            details: Some(json!({"a": 1})),
            usage: Some(json!({"b": 2})),
            added_tool_names: vec!["t".into()],
            terminate: true,
            structured_content: Some(json!({"c": 3})),
        };
        let kept = serde_json::to_value(Kept::of(&result, &recorder)).unwrap();
        assert!(kept["content"][0]["text"].is_null(), "{kept}");
        assert_eq!(kept["content"][1]["text"], "short");
        struct Held(HashMap<String, Vec<u8>>);
        impl Blobs for Held {
            fn keep(&self, bytes: &[u8]) -> String {
                crate::files::Digest::of(bytes).as_str().to_string()
            }
            fn get(&self, digest: &str) -> Option<Vec<u8>> {
                self.0.get(digest).cloned()
            }
        }
        let digest = recorder.keep(long.as_bytes());
        let held = Held([(digest, long.into_bytes())].into());
        let back = texts_back(kept, &held).unwrap();
        assert_eq!(serde_json::from_value::<ToolResult>(back).unwrap(), result);
    }

    #[test]
    fn a_blob_that_does_not_hash_to_its_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.rec");
        let header = header();
        let recorder = Recorder::create(&path, &header, DEFAULT_LIMIT).unwrap();
        // Written under another digest, its chain intact: the digest
        // itself gives it away.
        recorder.line(json!({ "blob": "blake3:0000", "base64": "aGk=" }));
        drop(recorder);
        let refused = Recording::open(&path).unwrap_err();
        assert!(
            refused.ends_with(
                "is refused: line 2 has bytes that do not hash to their name blake3:0000: the \
                 recording was changed"
            ),
            "{refused}"
        );
    }
}

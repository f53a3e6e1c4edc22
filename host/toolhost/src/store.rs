//! What a call's wasmtime [`Store`](wasmtime::Store) holds: its WASI
//! context, deadline, memory limit, the signals it shares with the
//! pipeline (cancellation, progress, the record of what it used), and the
//! capabilities it was granted. The component template (`component.rs`)
//! builds it for each call; the WIT layer (`crate::wit`) serves the call's
//! interfaces from it. It knows neither.

use crate::message::{ContentBlock, PartialResult};
use crate::ops::Capabilities;
use crate::ops::client::{CallClient, LogLevel, MAX_LOG_BYTES, MAX_LOG_MESSAGES};
use crate::ops::usage::Usage;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Most progress updates forwarded for one call; later ones are dropped.
pub const MAX_PROGRESS_UPDATES: u32 = 10_000;
/// Largest progress update forwarded (bytes of its text and image data and
/// its details).
pub const MAX_PROGRESS_BYTES: usize = 1 << 20;
/// Most content blocks in one result, progress update or hook patch. Real
/// tools return one or two; without a bound, a flood of empty blocks would
/// pass every byte limit and still cost the host, and every consumer of its
/// events, memory and work per block.
pub const MAX_CONTENT_BLOCKS: usize = 1000;
/// Markers raised from inside the store, recognised when the call fails.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Stop {
    #[error("deadline exceeded")]
    Deadline,
    #[error("memory limit exceeded")]
    Memory,
}

/// Where a call's progress updates go.
type ProgressFn = Box<dyn Fn(PartialResult) + Send + Sync>;
/// Where a call's log messages go.
type LogFn = Box<dyn Fn(LogLevel, Option<String>, String) + Send + Sync>;

/// The signals shared between the pipeline and one running call.
pub(crate) struct CallSignals {
    /// Cooperative cancellation: the tool sees it and should stop.
    pub cancel: CancellationToken,
    /// How long a cancelled call may run on before it is stopped.
    pub(crate) grace: Duration,
    progress: Mutex<Option<ProgressFn>>,
    updates: AtomicU32,
    logs: Mutex<Option<LogFn>>,
    logged: AtomicU32,
    settled: AtomicBool,
    /// What the call did with its capabilities (kept for the audit log).
    pub usage: Usage,
    /// The processes it started, until they are gone.
    pub(crate) spawned: crate::ops::process::Spawned,
    /// Its place in the order of file mutations, until its first lock.
    pub(crate) turn: crate::ops::fs::TurnSlot,
    /// How it asks the person for what it was not granted (set once its
    /// arguments are final, before it executes).
    pub(crate) asking: std::sync::OnceLock<Arc<crate::permissions::ask::CallAsking>>,
    /// The person's client, when the front end has one (set before the
    /// call executes).
    pub(crate) client: std::sync::OnceLock<Arc<CallClient>>,
    /// The processes of the call's session (set before the call executes).
    pub(crate) processes: std::sync::OnceLock<Arc<crate::ops::process::session::SessionProcesses>>,
    /// How it calls other tools, when it may (set before the call executes).
    pub(crate) nested: std::sync::OnceLock<Arc<dyn crate::ops::nested::NestedCalls>>,
    /// Its tape, when the session records or replays (set before the call
    /// is first instantiated).
    pub(crate) tape: std::sync::OnceLock<Arc<crate::tape::CallTape>>,
}

impl CallSignals {
    pub(crate) fn new(cancel: CancellationToken, grace: Duration) -> Arc<CallSignals> {
        Self::with_usage(cancel, grace, Usage::default(), None)
    }

    /// Signals whose call records what it uses in `usage`, and takes its
    /// first file lock in `turn`.
    pub(crate) fn with_usage(
        cancel: CancellationToken,
        grace: Duration,
        usage: Usage,
        turn: Option<crate::ops::fs::Turn>,
    ) -> Arc<CallSignals> {
        Arc::new(CallSignals {
            cancel,
            grace,
            progress: Mutex::new(None),
            updates: AtomicU32::new(0),
            logs: Mutex::new(None),
            logged: AtomicU32::new(0),
            settled: AtomicBool::new(false),
            usage,
            spawned: Default::default(),
            turn: crate::ops::fs::TurnSlot::new(turn),
            asking: std::sync::OnceLock::new(),
            client: std::sync::OnceLock::new(),
            processes: std::sync::OnceLock::new(),
            nested: std::sync::OnceLock::new(),
            tape: std::sync::OnceLock::new(),
        })
    }

    /// How long the call has waited for the person's answers: that time
    /// does not count against its time limit.
    pub(crate) fn waited(&self) -> Duration {
        let asking = self
            .asking
            .get()
            .map_or(Duration::ZERO, |asking| asking.waited());
        asking + self.client.get().map_or(Duration::ZERO, |c| c.waited())
    }

    /// Route progress updates of the call to `f` until [`Self::settle`].
    pub(crate) fn on_progress(&self, f: impl Fn(PartialResult) + Send + Sync + 'static) {
        *self.progress.lock().expect("progress lock") = Some(Box::new(f));
    }

    /// The call has settled: later updates are ignored, and later calls
    /// no longer wait for it to take a file lock.
    pub(crate) fn settle(&self) {
        self.turn.settle();
        self.settled.store(true, Ordering::SeqCst);
        self.progress.lock().expect("progress lock").take();
        self.logs.lock().expect("log lock").take();
    }

    /// Route log messages of the call to `f` until [`Self::settle`].
    pub(crate) fn on_log(
        &self,
        f: impl Fn(LogLevel, Option<String>, String) + Send + Sync + 'static,
    ) {
        *self.logs.lock().expect("log lock") = Some(Box::new(f));
    }

    /// A log message from the guest: cut to [`MAX_LOG_BYTES`] (and its
    /// logger's name to 128), dropped past [`MAX_LOG_MESSAGES`] or once the
    /// call has settled.
    pub(crate) fn log(&self, level: LogLevel, logger: Option<String>, message: String) {
        if self.settled.load(Ordering::SeqCst)
            || self.logged.fetch_add(1, Ordering::Relaxed) >= MAX_LOG_MESSAGES
        {
            return;
        }
        let cut = |mut text: String, bytes: usize| {
            text.truncate(text.floor_char_boundary(bytes));
            text
        };
        if let Some(f) = self.logs.lock().expect("log lock").as_ref() {
            f(
                level,
                logger.map(|l| cut(l, 128)),
                cut(message, MAX_LOG_BYTES),
            );
        }
    }

    /// A progress update from the guest: weighed before its details are
    /// parsed, so that an update too big to forward costs the host nothing
    /// beyond its copy (a guest can send thousands, each as large as its
    /// memory); one with details that are not JSON is not a valid update.
    pub(crate) fn update(&self, content: Vec<ContentBlock>, details: Option<String>) {
        if content.len() > MAX_CONTENT_BLOCKS
            || guest_bytes(&content, &[details.as_deref()], &[]) > MAX_PROGRESS_BYTES
        {
            return;
        }
        let Ok(details) = details.as_deref().map(serde_json::from_str).transpose() else {
            return;
        };
        self.forward(PartialResult { content, details });
    }

    /// Deliver a weighed update, unless the call has settled or sent its
    /// share.
    fn forward(&self, partial: PartialResult) {
        if self.settled.load(Ordering::SeqCst) {
            return;
        }
        if self.updates.fetch_add(1, Ordering::Relaxed) >= MAX_PROGRESS_UPDATES {
            return;
        }
        if let Some(f) = self.progress.lock().expect("progress lock").as_ref() {
            f(partial);
        }
    }
}

/// The per-call store state: WASI, limits, signals and granted backends.
/// The WIT layer serves the call's interfaces from it and lends the
/// Operations their view of it (`crate::wit::OpsCtx`).
pub(crate) struct CallState {
    pub(crate) wasi: WasiCtx,
    /// When the guest is stopped (checked at every epoch tick); see
    /// `CallInstance::restart_clock`.
    pub(crate) deadline: Instant,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) signals: Arc<CallSignals>,
    pub(crate) caps: Capabilities,
    /// The host's Pi profile, for `host-info`.
    pub(crate) pi: crate::profile::PiProfile,
    /// `wasi:http` (`ops/http_client/`): every request goes through its policy.
    pub(crate) http: crate::ops::http_client::HttpCall,
}

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        self.http.view(&mut self.table)
    }
}

/// What an HTTP request sees of its call.
impl crate::ops::http_client::CallWatch for CallSignals {
    fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    fn usage(&self) -> &Usage {
        &self.usage
    }

    fn asking(&self) -> Option<&dyn crate::ops::http_client::AskForHost> {
        self.asking
            .get()
            .map(|a| a.as_ref() as &dyn crate::ops::http_client::AskForHost)
    }

    fn tape(&self) -> Option<Arc<dyn crate::ops::http_client::HttpTape>> {
        let tape = self.tape.get()?.clone();
        Some(tape)
    }
}

impl crate::tape::files::StoreTape for CallState {
    fn tape(&self) -> Option<Arc<crate::tape::CallTape>> {
        self.signals.tape.get().cloned()
    }

    fn reader(&self) -> Option<Arc<dyn crate::ops::fs::FsRead>> {
        self.caps.fs_read.clone()
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

pub(crate) struct MemoryLimiter {
    pub(crate) max_bytes: usize,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            // Trap now rather than fail the allocation: the call's result
            // then names the limit instead of a guest-specific abort.
            return Err(Stop::Memory.into());
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// What a guest's result, update or patch weighs against the output limits:
/// the bytes of its texts, images (data and type), JSON texts (details,
/// structured content) and added tool names. The guest chooses every one of
/// them, so each counts, and they are counted before the host parses any.
pub(crate) fn guest_bytes(
    content: &[ContentBlock],
    json: &[Option<&str>],
    names: &[String],
) -> usize {
    let content: usize = content.iter().map(ContentBlock::weight).sum();
    let json: usize = json.iter().map(|text| text.map_or(0, str::len)).sum();
    content + json + names.iter().map(String::len).sum::<usize>()
}

//! Running a tool component in a sandbox: one fresh [`Store`] per call from a
//! cached `InstancePre`, with a memory limit, a deadline, cancellation
//! and only the capabilities the component was granted.
//!
//! # The sandbox, per call
//!
//! * WASI is linked deny-by-default: no preopened directories, no environment
//!   variables, no arguments, no network; stdout is discarded and stderr is
//!   captured (capped) to explain crashes.
//! * `toolhost:tool` Operations are linked only when granted: a component
//!   importing one that is not granted is refused when it is loaded, with a
//!   message naming the capability (`check_imports`).
//! * Linear memory is capped by a [`ResourceLimiter`]: growing past the limit
//!   traps at once and the call reports the limit.
//! * Time is capped by epoch interruption (the guest traps at the first tick
//!   past its deadline, and yields to the scheduler at every tick) and by a
//!   timer around the whole call (a guest blocked in an async host call).
//! * Cancellation is cooperative first (`is-cancelled`, host operations fail
//!   with `cancelled`), then forced: a call still running a grace period
//!   after cancellation is dropped, which unwinds the guest.

use crate::engine::{Compiled, Runtime};
use crate::error::Error;
use crate::extensions::policy::grant_line;
use crate::message::{PartialResult, ToolResult};
use crate::ops::usage::Usage;
pub use crate::ops::{Capabilities, WasiCapabilities};
use crate::wit::v0_1::hook_world::{HookComponent, HookComponentIndices, hook};
use crate::wit::v0_1::interfaces::{self, Import};
use crate::wit::v0_1::{
    HOOK_EXPORT, OpsCtx, OpsView, TOOL_EXPORT, ToolComponent, ToolComponentIndices, WIT_PACKAGE,
    cancellation, content_from_wit, progress, result_from_wit, types,
};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, HasSelf, InstancePre, Linker, ResourceTable, ResourceType};
use wasmtime::{ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};

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
/// Guest stderr kept to explain a crash.
const STDERR_CAPTURE: usize = 64 << 10;

/// Resource limits of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Linear memory of the call's instance, in bytes.
    pub memory_bytes: usize,
    /// Wall time from instantiation to result.
    pub time: Duration,
    /// Largest result, in bytes of its content (text and image data),
    /// details and added tool names; `None` is no limit beyond memory.
    pub output_bytes: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 256 << 20,
            time: Duration::from_secs(120),
            output_bytes: Some(16 << 20),
        }
    }
}

/// How a call ends when the sandbox, not the tool, ends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallFailure {
    Timeout(Duration),
    MemoryLimit(usize),
    /// Cancelled and not finished within the grace period.
    Killed,
    Trap {
        reason: String,
        stderr: String,
    },
    Start(String),
}

impl CallFailure {
    /// The error text the model sees; `subject` names what failed
    /// (`Tool read`, `Hook guard`).
    pub(crate) fn message(&self, subject: &str) -> String {
        match self {
            CallFailure::Timeout(limit) => format!(
                "{subject} timed out after {} seconds and was stopped",
                pi_compat::js::number(limit.as_secs_f64())
            ),
            CallFailure::MemoryLimit(bytes) => format!(
                "{subject} exceeded its memory limit of {} MiB and was stopped",
                bytes >> 20
            ),
            CallFailure::Killed => "Operation aborted".to_string(),
            CallFailure::Trap { reason, stderr } => {
                let stderr = stderr.trim();
                if stderr.is_empty() {
                    format!("{subject} crashed: {reason}")
                } else {
                    format!("{subject} crashed: {reason}\n{stderr}")
                }
            }
            CallFailure::Start(reason) => format!("{subject} could not start: {reason}"),
        }
    }
}

/// Markers raised from inside the store, recognised when the call fails.
#[derive(Debug, thiserror::Error)]
enum Stop {
    #[error("deadline exceeded")]
    Deadline,
    #[error("memory limit exceeded")]
    Memory,
}

/// Where a call's progress updates go.
type ProgressFn = Box<dyn Fn(PartialResult) + Send + Sync>;

/// The signals shared between the pipeline and one running call.
pub(crate) struct CallSignals {
    /// Cooperative cancellation: the tool sees it and should stop.
    pub cancel: CancellationToken,
    /// How long a cancelled call may run on before it is stopped.
    grace: Duration,
    progress: Mutex<Option<ProgressFn>>,
    updates: AtomicU32,
    settled: AtomicBool,
    /// What the call did with its capabilities (kept for the audit log).
    pub usage: Usage,
}

impl CallSignals {
    pub(crate) fn new(cancel: CancellationToken, grace: Duration) -> Arc<CallSignals> {
        Self::with_usage(cancel, grace, Usage::default())
    }

    /// Signals whose call records what it uses in `usage`.
    pub(crate) fn with_usage(
        cancel: CancellationToken,
        grace: Duration,
        usage: Usage,
    ) -> Arc<CallSignals> {
        Arc::new(CallSignals {
            cancel,
            grace,
            progress: Mutex::new(None),
            updates: AtomicU32::new(0),
            settled: AtomicBool::new(false),
            usage,
        })
    }

    /// Route progress updates of the call to `f` until [`Self::settle`].
    pub(crate) fn on_progress(&self, f: impl Fn(PartialResult) + Send + Sync + 'static) {
        *self.progress.lock().expect("progress lock") = Some(Box::new(f));
    }

    /// The call has settled: later updates are ignored.
    pub(crate) fn settle(&self) {
        self.settled.store(true, Ordering::SeqCst);
        self.progress.lock().expect("progress lock").take();
    }

    /// Deliver an update (already weighed, see `progress::Host::update`),
    /// unless the call has settled or sent its share.
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
/// Each Operations interface is implemented on it in its `ops` module.
pub(crate) struct CallState {
    wasi: WasiCtx,
    /// When the guest is stopped (checked at every epoch tick); see
    /// [`CallInstance::restart_clock`].
    deadline: Instant,
    pub(crate) table: ResourceTable,
    limiter: MemoryLimiter,
    pub(crate) signals: Arc<CallSignals>,
    pub(crate) caps: Capabilities,
    /// `wasi:http` (ops/http.rs): every request goes through its policy.
    pub(crate) http: crate::ops::http::HttpCall,
}

impl OpsView for CallState {
    fn ops(&mut self) -> OpsCtx<'_> {
        OpsCtx {
            caps: &self.caps,
            cancel: &self.signals.cancel,
            usage: &self.signals.usage,
            table: &mut self.table,
        }
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

struct MemoryLimiter {
    max_bytes: usize,
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

impl types::Host for CallState {}

impl progress::Host for CallState {
    fn update(&mut self, partial: types::PartialResult) -> wasmtime::Result<()> {
        // Weighed before its details are parsed: an update too big to
        // forward costs the host nothing beyond its copy (a guest can send
        // thousands, each as large as its memory).
        if partial.content.len() > MAX_CONTENT_BLOCKS
            || guest_bytes(&partial.content, partial.details.as_deref(), &[]) > MAX_PROGRESS_BYTES
        {
            return Ok(());
        }
        let Ok(details) = partial
            .details
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
        else {
            return Ok(()); // Unparseable details: not a valid update.
        };
        self.signals.forward(PartialResult {
            content: partial.content.into_iter().map(content_from_wit).collect(),
            details,
        });
        Ok(())
    }
}

impl cancellation::Host for CallState {
    fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.signals.cancel.is_cancelled())
    }
}

/// What a guest's result, update or patch weighs against the output limits:
/// the bytes of its texts, images (data and type), details and added tool
/// names. The guest chooses every one of them, so each counts, and they are
/// counted before the host parses or copies any of it.
pub(crate) fn guest_bytes(
    content: &[types::ContentBlock],
    details: Option<&str>,
    names: &[String],
) -> usize {
    let content: usize = content
        .iter()
        .map(|block| match block {
            types::ContentBlock::Text(text) => text.len(),
            types::ContentBlock::Image(image) => image.data.len() + image.mime_type.len(),
        })
        .sum();
    content + details.map_or(0, str::len) + names.iter().map(String::len).sum::<usize>()
}

/// Refuse a guest's result or patch that exceeds the block bound or `limit`
/// bytes, in the words of `subject` (`Tool read`, `Hook audit`).
fn check_output(
    subject: &str,
    content: &[types::ContentBlock],
    details: Option<&str>,
    names: &[String],
    limit: Option<usize>,
) -> Result<(), String> {
    if content.len() > MAX_CONTENT_BLOCKS {
        return Err(format!(
            "{subject} returned {} content blocks, more than the limit of {MAX_CONTENT_BLOCKS}",
            content.len()
        ));
    }
    let size = guest_bytes(content, details, names);
    match limit {
        Some(max) if size > max => Err(format!(
            "{subject} returned {size} bytes of content and details, more than its limit of {max}"
        )),
        _ => Ok(()),
    }
}

/// Refuse a component whose imports exceed its grants, naming the capability.
pub(crate) fn check_imports(
    component: &Component,
    caps: &Capabilities,
    origin: &str,
    grant_name: Option<&str>,
) -> Result<(), Error> {
    let refuse = |reason: String| Error::load(origin, reason);
    let ty = component.component_type();
    for (name, _) in ty.imports(component.engine()) {
        let interface = match interfaces::classify(name) {
            // `wasi:http` reaches the network: a capability like an Operation.
            Import::Foreign if crate::ops::http::is_http_import(name) => {
                if caps.http.is_some() {
                    continue;
                }
                let hint = grant_name
                    .map(|ext| {
                        let line = grant_line(ext, crate::ops::http::GRANT);
                        format!("; grant it in toolhost.toml: {line}")
                    })
                    .unwrap_or_default();
                return Err(refuse(format!(
                    "imports {name} ({}), which is not granted to it{hint}",
                    crate::ops::http::WHAT
                )));
            }
            // WASI is linked deny-by-default: nothing is reachable unless granted.
            Import::Foreign if name.starts_with("wasi:") => continue,
            Import::Foreign => {
                return Err(refuse(format!(
                    "imports {name}, which toolhost does not provide"
                )));
            }
            Import::OtherVersion { version } => {
                return Err(refuse(format!(
                    "imports {name}: built for toolhost:tool@{version}, but this host provides {WIT_PACKAGE}"
                )));
            }
            Import::Unknown => {
                return Err(refuse(format!(
                    "imports {name}, which this host does not provide"
                )));
            }
            Import::Known(interface) => interface,
        };
        if !interface.granted(caps) {
            let hint = grant_name
                .map(|ext| {
                    format!(
                        "; grant it in toolhost.toml: {}",
                        grant_line(ext, interface.name)
                    )
                })
                .unwrap_or_default();
            return Err(refuse(format!(
                "imports {name} ({}), which is not granted to it{hint}",
                interface.what
            )));
        }
    }
    Ok(())
}

/// Link each `toolhost:tool` Operation that `component` imports but `caps`
/// does not grant to functions that trap, so that only calls needing no
/// Operation (such as `definitions`) can run.
///
/// Not `Linker::define_unknown_imports_as_traps`: it walks the WASI imports
/// too, and where a component's WASI instance re-exports a resource it uses
/// (componentize-qjs and componentize-py components list `error` in
/// `wasi:io/streams`), it defines a fresh resource type there that clashes
/// with the real one, so such components could not be inspected.
fn stub_ungranted_operations(
    linker: &mut Linker<CallState>,
    component: &Component,
    caps: &Capabilities,
    engine: &wasmtime::Engine,
) -> wasmtime::Result<()> {
    /// The resource type of stubbed resources; no value of it is ever made.
    struct Ungranted;
    for (name, item) in component.component_type().imports(engine) {
        // Always linked, granted, or refused by the linker as unknown.
        let Import::Known(interface) = interfaces::classify(name) else {
            continue;
        };
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            continue;
        };
        if interface.granted(caps) {
            continue;
        }
        let mut stub = linker.instance(name)?;
        for (export, ty) in instance.exports(engine) {
            match ty.ty {
                ComponentItem::ComponentFunc(_) => {
                    let what = format!("{name}#{export}");
                    stub.func_new(export, move |_, _, _, _| {
                        wasmtime::bail!("{what} is not granted to this component")
                    })?;
                }
                ComponentItem::Resource(_) => {
                    stub.resource(export, ResourceType::host::<Ungranted>(), |_, _| Ok(()))?;
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// A loaded component, ready to instantiate for each call. It exports tools,
/// hooks, or both.
pub(crate) struct Sandbox {
    runtime: Arc<Runtime>,
    /// The linked component its calls instantiate; replaced once when
    /// Cranelift's code arrives for a component loaded with the quick
    /// compiler's.
    linked: std::sync::RwLock<Arc<Linked>>,
    /// Where that code appears, until it has been taken.
    upgrade: std::sync::Mutex<Option<Arc<std::sync::OnceLock<Component>>>>,
    caps: Capabilities,
    limits: Limits,
    origin: String,
}

/// A component linked to the host interfaces its capabilities allow.
struct Linked {
    pre: InstancePre<CallState>,
    tool: Option<ToolComponentIndices>,
    hook: Option<HookComponentIndices>,
}

impl Sandbox {
    /// Whether its calls may change the active tools (the `tools`
    /// Operation).
    pub(crate) fn may_change_tools(&self) -> bool {
        self.caps.tools.is_some()
    }

    pub(crate) fn new(
        runtime: Arc<Runtime>,
        compiled: &Compiled,
        caps: Capabilities,
        limits: Limits,
        origin: &str,
        grant_name: Option<&str>,
    ) -> Result<Sandbox, Error> {
        check_imports(&compiled.component, &caps, origin, grant_name)?;
        let linked = link(&compiled.component, &caps, origin, false)?;
        Ok(Sandbox {
            runtime,
            linked: std::sync::RwLock::new(Arc::new(linked)),
            upgrade: std::sync::Mutex::new(compiled.upgrade.clone()),
            caps,
            limits,
            origin: origin.to_string(),
        })
    }

    /// A sandbox for reading a component's definitions without granting it
    /// anything: every Operation it imports is linked to a function that
    /// traps, so only `definitions` can run.
    pub(crate) fn for_inspection(
        runtime: Arc<Runtime>,
        component: &Component,
        origin: &str,
    ) -> Result<Sandbox, Error> {
        let limits = Limits {
            time: Duration::from_secs(10),
            ..Limits::default()
        };
        let caps = Capabilities::default();
        let linked = link(component, &caps, origin, true)?;
        Ok(Sandbox {
            runtime,
            linked: std::sync::RwLock::new(Arc::new(linked)),
            upgrade: std::sync::Mutex::new(None),
            caps,
            limits,
            origin: origin.to_string(),
        })
    }

    /// The linked component for the next call: Cranelift's, once it has
    /// arrived (linked again the first time; a failure keeps the quick one).
    fn linked(&self) -> Arc<Linked> {
        let mut upgrade = self.upgrade.lock().expect("upgrade lock");
        if let Some(component) = upgrade.as_ref().and_then(|u| u.get()).cloned() {
            *upgrade = None;
            if let Ok(linked) = link(&component, &self.caps, &self.origin, false) {
                *self.linked.write().expect("linked lock") = Arc::new(linked);
            }
        }
        drop(upgrade);
        self.linked.read().expect("linked lock").clone()
    }

    /// See [`Runtime::may_hold_instance`].
    pub(crate) fn may_hold_instance(&self) -> bool {
        self.runtime.may_hold_instance()
    }

    pub(crate) fn provides_tools(&self) -> bool {
        self.linked.read().expect("linked lock").tool.is_some()
    }

    pub(crate) fn provides_hooks(&self) -> bool {
        self.linked.read().expect("linked lock").hook.is_some()
    }

    /// The filesystem roots this component was granted (read roots, or the
    /// search roots of a component that only searches, then write roots not
    /// already listed), for its call context.
    pub(crate) fn fs_roots(&self) -> Vec<String> {
        let mut roots = match (&self.caps.fs_read, &self.caps.search) {
            (Some(fs), _) => fs.roots(),
            (None, Some(search)) => search.roots(),
            (None, None) => Vec::new(),
        };
        for root in self.caps.fs_write.iter().flat_map(|fs| fs.roots()) {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        roots
    }

    /// A fresh instance in a fresh store, for one call.
    pub(crate) async fn instantiate(
        &self,
        signals: Arc<CallSignals>,
    ) -> Result<CallInstance, CallFailure> {
        let permit = self
            .runtime
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| CallFailure::Start("the runtime is shutting down".into()))?;
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE);
        let mut wasi = WasiCtx::builder();
        wasi.stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false);
        let grants = &self.caps.wasi;
        for (dir, writable) in &grants.preopens {
            let perms = if *writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            let guest_path = dir.to_string_lossy();
            wasi.preopened_dir(dir, &guest_path, perms).map_err(|e| {
                CallFailure::Start(format!("opening granted directory {guest_path}: {e}"))
            })?;
        }
        wasi.envs(&grants.env);
        if let Some(cwd) = &grants.cwd {
            wasi.initial_cwd(cwd);
        }
        let wasi = wasi.build();
        let deadline = Instant::now() + self.limits.time;
        let state = CallState {
            wasi,
            deadline,
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                max_bytes: self.limits.memory_bytes,
            },
            http: crate::ops::http::HttpCall::new(self.caps.http.clone(), signals.clone()),
            signals: signals.clone(),
            caps: self.caps.clone(),
        };
        let linked = self.linked();
        let mut store = Store::new(linked.pre.component().engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|store| {
            if Instant::now() >= store.data().deadline {
                return Err(Stop::Deadline.into());
            }
            Ok(UpdateDeadline::Yield(1))
        });
        let mut instance = CallInstance {
            store,
            tool: None,
            hook: None,
            deadline,
            signals,
            stderr,
            limits: self.limits,
            _permit: permit,
        };
        let pre = linked.pre.clone();
        let raw = instance
            .guard(|store| Box::pin(async move { pre.instantiate_async(store).await }))
            .await?;
        let start = |e: wasmtime::Error| CallFailure::Start(e.to_string());
        if let Some(indices) = &linked.tool {
            let tool = indices.load(&mut instance.store, &raw).map_err(start)?;
            instance.tool = Some(Arc::new(tool));
        }
        if let Some(indices) = &linked.hook {
            let hook = indices.load(&mut instance.store, &raw).map_err(start)?;
            instance.hook = Some(Arc::new(hook));
        }
        Ok(instance)
    }
}

/// Link `component` to the host interfaces `caps` allows (with
/// `trap_ungranted`, every other Operation it imports to a trap) and find its
/// exports.
fn link(
    component: &Component,
    caps: &Capabilities,
    origin: &str,
    trap_ungranted: bool,
) -> Result<Linked, Error> {
    let load_error = |reason: String| Error::load(origin, reason);
    let mut linker = Linker::<CallState>::new(component.engine());
    let linked = (|| -> wasmtime::Result<()> {
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        crate::ops::http::add_to_linker(&mut linker, caps.http.is_some(), trap_ungranted)?;
        types::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
        progress::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
        cancellation::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
        interfaces::link_operations(&mut linker, caps)?;
        if trap_ungranted {
            stub_ungranted_operations(&mut linker, component, caps, component.engine())?;
        }
        Ok(())
    })();
    linked.map_err(|e| Error::load_because(origin, "linking host interfaces", e))?;
    let pre = linker
        .instantiate_pre(component)
        .map_err(|e| Error::load_because(origin, "cannot be linked", e))?;
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(component.engine())
        .map(|(name, _)| name.to_string())
        .collect();
    let exported = |name: &str| exports.iter().any(|e| e == name);
    let wrong_shape = |export: &str| {
        let what = format!("exports {export} with the wrong shape");
        move |e| Error::load_because(origin, what, e)
    };
    let tool = exported(TOOL_EXPORT)
        .then(|| ToolComponentIndices::new(&pre))
        .transpose()
        .map_err(wrong_shape(TOOL_EXPORT))?;
    let hook = exported(HOOK_EXPORT)
        .then(|| HookComponentIndices::new(&pre))
        .transpose()
        .map_err(wrong_shape(HOOK_EXPORT))?;
    if tool.is_none() && hook.is_none() {
        let other = exports
            .iter()
            .find(|e| e.starts_with("toolhost:tool/"))
            .map(|e| format!(" (it exports {e}: built for another version of the package?)"))
            .unwrap_or_default();
        return Err(load_error(format!(
            "exports neither {TOOL_EXPORT} nor {HOOK_EXPORT}{other}"
        )));
    }
    Ok(Linked { pre, tool, hook })
}

type StoreFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = wasmtime::Result<T>> + Send + 'a>>;

/// One call's instance. Dropping it frees the store and its pool slot.
pub(crate) struct CallInstance {
    store: Store<CallState>,
    tool: Option<Arc<ToolComponent>>,
    hook: Option<Arc<HookComponent>>,
    deadline: Instant,
    signals: Arc<CallSignals>,
    stderr: MemoryOutputPipe,
    limits: Limits,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl CallInstance {
    /// Start the call's time limit again from now: an instance kept from
    /// `prepare-arguments` for `execute` gets its whole limit for `execute`.
    pub(crate) fn restart_clock(&mut self) {
        self.deadline = Instant::now() + self.limits.time;
        self.store.data_mut().deadline = self.deadline;
    }

    /// Run `f` on the store under the call's deadline, and stop it when it
    /// outlives cancellation by the grace period. Dropping the future unwinds
    /// the guest; the store is dropped with the instance.
    async fn guard<T>(
        &mut self,
        f: impl for<'a> FnOnce(&'a mut Store<CallState>) -> StoreFuture<'a, T>,
    ) -> Result<T, CallFailure> {
        let cancel = self.signals.cancel.clone();
        let grace = self.signals.grace;
        let killed = async move {
            cancel.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        let deadline = tokio::time::Instant::from_std(self.deadline);
        enum Outcome<T> {
            Done(wasmtime::Result<T>),
            Timeout,
            Killed,
        }
        let outcome = {
            let fut = f(&mut self.store);
            tokio::select! {
                biased;
                out = fut => Outcome::Done(out),
                _ = tokio::time::sleep_until(deadline) => Outcome::Timeout,
                _ = killed => Outcome::Killed,
            }
        };
        match outcome {
            Outcome::Done(Ok(value)) => Ok(value),
            Outcome::Done(Err(e)) => Err(self.classify(&e)),
            Outcome::Timeout => Err(CallFailure::Timeout(self.limits.time)),
            Outcome::Killed => Err(CallFailure::Killed),
        }
    }

    fn classify(&self, e: &wasmtime::Error) -> CallFailure {
        if let Some(stop) = e.downcast_ref::<Stop>() {
            return match stop {
                Stop::Deadline => CallFailure::Timeout(self.limits.time),
                Stop::Memory => CallFailure::MemoryLimit(self.limits.memory_bytes),
            };
        }
        let reason = match e.downcast_ref::<wasmtime::Trap>() {
            Some(trap) => trap.to_string(),
            None => e.to_string().lines().next().unwrap_or_default().to_string(),
        };
        let reason = reason.trim_start_matches("wasm trap: ").to_string();
        // The guest's stderr explains a panic; the hint about backtraces
        // (which a guest cannot produce) is noise for the model.
        let stderr: Vec<String> = String::from_utf8_lossy(&self.stderr.contents())
            .lines()
            .filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE=1`"))
            .map(str::to_string)
            .collect();
        CallFailure::Trap {
            reason,
            stderr: stderr.join("\n"),
        }
    }

    fn tool(&self) -> Result<Arc<ToolComponent>, CallFailure> {
        self.tool
            .clone()
            .ok_or_else(|| CallFailure::Start("the component exports no tools".into()))
    }

    fn hook(&self) -> Result<Arc<HookComponent>, CallFailure> {
        self.hook
            .clone()
            .ok_or_else(|| CallFailure::Start("the component exports no hooks".into()))
    }

    pub(crate) async fn on_tool_call(
        &mut self,
        event: hook::ToolCallEvent,
    ) -> Result<Result<Option<hook::ToolCallVerdict>, String>, CallFailure> {
        let hook = self.hook()?;
        self.guard(|store| {
            Box::pin(async move {
                hook.toolhost_tool_hook()
                    .call_on_tool_call(store, &event)
                    .await
            })
        })
        .await
    }

    /// The hook's patch, refused (as if the hook had failed, in the words of
    /// `subject`) when it is larger than a tool's result could be.
    pub(crate) async fn on_tool_result(
        &mut self,
        event: hook::ToolResultEvent,
        subject: &str,
    ) -> Result<Result<Option<hook::ToolResultPatch>, String>, CallFailure> {
        let hook = self.hook()?;
        let patch = self
            .guard(|store| {
                Box::pin(async move {
                    hook.toolhost_tool_hook()
                        .call_on_tool_result(store, &event)
                        .await
                })
            })
            .await?;
        if let Ok(Some(p)) = &patch {
            let content = p.content.as_deref().unwrap_or_default();
            let limit = self.limits.output_bytes;
            if let Err(refused) = check_output(subject, content, p.details.as_deref(), &[], limit) {
                return Ok(Err(refused));
            }
        }
        Ok(patch)
    }

    pub(crate) async fn definitions(&mut self) -> Result<Vec<types::ToolDefinition>, CallFailure> {
        let tool = self.tool()?;
        self.guard(|store| {
            Box::pin(async move { tool.toolhost_tool_tool().call_definitions(store).await })
        })
        .await
    }

    pub(crate) async fn prepare_arguments(
        &mut self,
        name: &str,
        arguments: &str,
    ) -> Result<Result<Option<String>, String>, CallFailure> {
        let tool = self.tool()?;
        let (name, arguments) = (name.to_string(), arguments.to_string());
        self.guard(|store| {
            Box::pin(async move {
                tool.toolhost_tool_tool()
                    .call_prepare_arguments(store, &name, &arguments)
                    .await
            })
        })
        .await
    }

    pub(crate) async fn execute(
        &mut self,
        name: &str,
        context: types::CallContext,
        arguments: &str,
    ) -> Result<Result<ToolResult, String>, CallFailure> {
        let tool = self.tool()?;
        let tool_name = name.to_string();
        let (name, arguments) = (name.to_string(), arguments.to_string());
        let out = self
            .guard(|store| {
                Box::pin(async move {
                    tool.toolhost_tool_tool()
                        .call_execute(store, &name, &context, &arguments)
                        .await
                })
            })
            .await?;
        let limit = self.limits.output_bytes;
        Ok(out.and_then(|r| {
            // Checked on the guest's own values, before the host parses the
            // details or converts the content.
            let subject = format!("Tool {tool_name}");
            let (content, details) = (&r.content, r.details.as_deref());
            check_output(&subject, content, details, &r.added_tool_names, limit)?;
            result_from_wit(r)
        }))
    }
}

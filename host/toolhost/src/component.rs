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
use crate::message::{ContentBlock, ToolResult};
pub use crate::ops::{Capabilities, WasiCapabilities};
use crate::profile::PiProfile;
pub(crate) use crate::store::{CallSignals, CallState};
pub use crate::store::{MAX_CONTENT_BLOCKS, MAX_PROGRESS_BYTES, MAX_PROGRESS_UPDATES};
use crate::store::{MemoryLimiter, Stop, guest_bytes};
use crate::wit::interfaces::grant_line;
use crate::wit::interfaces::{self, Import};
use crate::wit::{
    self, CallContext, Contract, GuestResult, HookGuest, StoreFuture, ToolDecl, ToolGuest,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, InstancePre, Linker, ResourceTable, ResourceType};
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx};

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

/// Refuse a guest's result or patch that exceeds the block bound or `limit`
/// bytes, in the words of `subject` (`Tool read`, `Hook audit`).
fn check_output(
    subject: &str,
    content: &[ContentBlock],
    json: &[Option<&str>],
    names: &[String],
    limit: Option<usize>,
) -> Result<(), String> {
    if content.len() > MAX_CONTENT_BLOCKS {
        return Err(format!(
            "{subject} returned {} content blocks, more than the limit of {MAX_CONTENT_BLOCKS}",
            content.len()
        ));
    }
    let size = guest_bytes(content, json, names);
    match limit {
        Some(max) if size > max => Err(format!(
            "{subject} returned {size} bytes of content and details, more than its limit of {max}"
        )),
        _ => Ok(()),
    }
}

/// The version of the package `component` is built for; refused when its
/// imports exceed its grants, naming the capability, or mix versions.
pub(crate) fn check_imports(
    component: &Component,
    caps: &Capabilities,
    origin: &str,
    grant_name: Option<&str>,
) -> Result<&'static Contract, Error> {
    let imports = wit::import_names(component);
    let exports = wit::export_names(component);
    check_import_names(&imports, &exports, caps, origin, grant_name)
}

/// [`check_imports`] of a component known by the names it imports and
/// exports.
pub(crate) fn check_import_names(
    imports: &[String],
    exports: &[String],
    caps: &Capabilities,
    origin: &str,
    grant_name: Option<&str>,
) -> Result<&'static Contract, Error> {
    let refuse = |reason: String| Error::load(origin, reason);
    let contract = wit::contract_of_exports(exports).map_err(refuse)?;
    for name in imports.iter().map(String::as_str) {
        let Some(interface) = imported(name, contract, origin)? else {
            continue;
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
    Ok(contract)
}

/// [`check_import_names`] but the grants: what no grant could make load
/// (an import the host does not provide, of another version).
pub(crate) fn check_import_kinds(
    imports: &[String],
    exports: &[String],
    origin: &str,
) -> Result<&'static Contract, Error> {
    let contract = wit::contract_of_exports(exports).map_err(|r| Error::load(origin, r))?;
    for name in imports {
        imported(name, contract, origin)?;
    }
    Ok(contract)
}

/// The interface the import `name` of a component of `contract` asks for,
/// `None` for WASI linked deny-by-default; refused when the host does not
/// provide it.
fn imported(
    name: &str,
    contract: &Contract,
    origin: &str,
) -> Result<Option<&'static interfaces::Interface>, Error> {
    let refuse = |reason: String| Error::load(origin, reason);
    let interface = match interfaces::classify(name) {
        // `wasi:http` reaches the network: a capability like an Operation.
        Import::Wasi(interface) => interface,
        // WASI is linked deny-by-default: nothing is reachable unless granted.
        Import::Foreign if name.starts_with("wasi:") => return Ok(None),
        Import::Foreign => {
            return Err(refuse(format!(
                "imports {name}, which toolhost does not provide: a tool imports \
                 toolhost:tool's interfaces and WASI's, nothing else; remove it from the \
                 world it is built for (wit/world.wit)"
            )));
        }
        Import::OtherVersion { version } => {
            return Err(refuse(format!(
                "imports {name}: built for toolhost:tool@{version}, but this host loads {}; \
                 build it against toolhost:tool@{} (the WIT `toolhost ext new` writes into \
                 wit/deps/toolhost/), or run a toolhost that loads {version}",
                wit::versions_text(),
                wit::newest().version
            )));
        }
        Import::Known { version, .. } if version != contract.version => {
            return Err(refuse(format!(
                "imports {name} but exports toolhost:tool@{}: a component is built for one \
                 version of the package; build its imports and its export from the same \
                 WIT (wit/deps/toolhost/tool.wit)",
                contract.version
            )));
        }
        Import::Unknown => {
            let (interface, version) = name
                .trim_start_matches("toolhost:tool/")
                .split_once('@')
                .unwrap_or((name, ""));
            let has: Vec<&str> = interfaces::interfaces()
                .filter(|i| interfaces::in_version(i.name, version))
                .map(|i| i.name)
                .collect();
            return Err(refuse(format!(
                "imports {name}, which this host does not provide: toolhost:tool@{version} \
                 has no interface {interface} (it has {}); remove it from the world it is \
                 built for (wit/world.wit)",
                has.join(", ")
            )));
        }
        Import::Known { interface, .. } => interface,
    };
    Ok(Some(interface))
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
        let Import::Known { interface, .. } = interfaces::classify(name) else {
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
    /// compiler's. `None` until the first call of a sandbox made from a
    /// summary ([`Sandbox::deferred`]).
    linked: std::sync::RwLock<Option<Arc<Linked>>>,
    /// What the first call of a sandbox made from a summary loads.
    deferred: std::sync::Mutex<Option<Deferred>>,
    /// Where Cranelift's code appears, until it has been taken.
    upgrade: std::sync::Mutex<Option<Arc<std::sync::OnceLock<Component>>>>,
    /// The version of the package it is built for.
    contract: &'static Contract,
    provides_tools: bool,
    provides_hooks: bool,
    caps: Capabilities,
    limits: Limits,
    origin: String,
    /// The Pi profile its calls are told (`host-info`).
    pi: PiProfile,
}

/// A component known by its summary (its imports, exports and definitions,
/// noted when it was last loaded), loaded and linked at its first call.
pub(crate) struct Deferred {
    /// Its content hash: its compile-cache entry, and what its file must
    /// still hash to if the entry is gone.
    pub hash: String,
    pub path: std::path::PathBuf,
    pub grant_name: Option<String>,
}

/// A component linked to the host interfaces its capabilities allow.
struct Linked {
    pre: InstancePre<CallState>,
    /// The version of the package it is built for.
    contract: &'static Contract,
    exports: Arc<dyn wit::Exports>,
}

impl Sandbox {
    /// Whether its calls may change the active tools (the `tools`
    /// Operation).
    pub(crate) fn may_change_tools(&self) -> bool {
        self.caps.tools.is_some()
    }

    /// The git guard its calls run under, if they can write where the
    /// Operations do not check each write.
    pub(crate) fn guard(&self) -> Option<Arc<crate::ops::protect::GitGuard>> {
        self.caps.guard.clone()
    }

    pub(crate) fn new(
        runtime: Arc<Runtime>,
        compiled: &Compiled,
        caps: Capabilities,
        limits: Limits,
        origin: &str,
        grant_name: Option<&str>,
    ) -> Result<Sandbox, Error> {
        let contract = check_imports(&compiled.component, &caps, origin, grant_name)?;
        let linked = link(
            &runtime,
            &compiled.component,
            contract,
            &caps,
            origin,
            false,
        )?;
        Ok(Sandbox::linked_as(
            runtime,
            linked,
            compiled.upgrade.clone(),
            caps,
            limits,
            origin,
        ))
    }

    fn linked_as(
        runtime: Arc<Runtime>,
        linked: Linked,
        upgrade: Option<Arc<std::sync::OnceLock<Component>>>,
        caps: Capabilities,
        limits: Limits,
        origin: &str,
    ) -> Sandbox {
        Sandbox {
            runtime,
            contract: linked.contract,
            provides_tools: linked.exports.provides_tools(),
            provides_hooks: linked.exports.provides_hooks(),
            linked: std::sync::RwLock::new(Some(Arc::new(linked))),
            deferred: std::sync::Mutex::new(None),
            upgrade: std::sync::Mutex::new(upgrade),
            caps,
            limits,
            origin: origin.to_string(),
            pi: PiProfile::default(),
        }
    }

    /// A sandbox for a component known by the names it imports and exports
    /// (its imports checked against `caps` now, as [`Sandbox::new`] checks
    /// them), loaded and linked at its first call.
    pub(crate) fn deferred(
        runtime: Arc<Runtime>,
        imports: &[String],
        exports: &[String],
        deferred: Deferred,
        caps: Capabilities,
        limits: Limits,
        origin: &str,
    ) -> Result<Sandbox, Error> {
        let grant_name = deferred.grant_name.as_deref();
        let contract = check_import_names(imports, exports, &caps, origin, grant_name)?;
        let exported = |name: &str| exports.iter().any(|e| e == name);
        Ok(Sandbox {
            runtime,
            contract,
            provides_tools: exported(&contract.tool_export()),
            provides_hooks: exported(&contract.hook_export()),
            linked: std::sync::RwLock::new(None),
            deferred: std::sync::Mutex::new(Some(deferred)),
            upgrade: std::sync::Mutex::new(None),
            caps,
            limits,
            origin: origin.to_string(),
            pi: PiProfile::default(),
        })
    }

    /// Load and link a deferred component: its code from the compile cache,
    /// else from its file, which must still be what its summary was of.
    fn load_deferred(&self, deferred: &Deferred) -> Result<Linked, String> {
        let origin = &self.origin;
        let compiled = self
            .runtime
            .load_unread(&deferred.hash, origin, || {
                use crate::files::{MAX_COMPONENT_BYTES, open_regular, read_open};
                let file =
                    open_regular(&deferred.path, MAX_COMPONENT_BYTES)?.ok_or("its file is gone")?;
                read_open(&file, MAX_COMPONENT_BYTES)
            })
            .map_err(|e| e.reason())?;
        let grant_name = deferred.grant_name.as_deref();
        let component = &compiled.component;
        let loaded =
            check_imports(component, &self.caps, origin, grant_name).and_then(|contract| {
                link(
                    &self.runtime,
                    component,
                    contract,
                    &self.caps,
                    origin,
                    false,
                )
            });
        *self.upgrade.lock().expect("upgrade lock") = compiled.upgrade.clone();
        loaded.map_err(|e| e.reason())
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
        let contract = wit::contract_of(component).map_err(|e| Error::load(origin, e))?;
        let linked = link(&runtime, component, contract, &caps, origin, true)?;
        Ok(Sandbox::linked_as(
            runtime, linked, None, caps, limits, origin,
        ))
    }

    /// The linked component for the next call: Cranelift's, once it has
    /// arrived (linked again the first time; a failure keeps the quick one);
    /// loaded now at the first call of a deferred sandbox (a failure is
    /// this call's, and the next call tries again).
    fn linked(&self) -> Result<Arc<Linked>, String> {
        {
            // Held while loading: a second first call waits for the first's.
            let mut deferred = self.deferred.lock().expect("deferred lock");
            if let Some(pending) = deferred.as_ref() {
                let linked = self.load_deferred(pending)?;
                *self.linked.write().expect("linked lock") = Some(Arc::new(linked));
                *deferred = None;
            }
        }
        let mut upgrade = self.upgrade.lock().expect("upgrade lock");
        if let Some(component) = upgrade.as_ref().and_then(|u| u.get()).cloned() {
            *upgrade = None;
            // The same component, compiled again: the same version.
            if let Ok(linked) = link(
                &self.runtime,
                &component,
                self.contract,
                &self.caps,
                &self.origin,
                false,
            ) {
                *self.linked.write().expect("linked lock") = Some(Arc::new(linked));
            }
        }
        drop(upgrade);
        let linked = self.linked.read().expect("linked lock").clone();
        Ok(linked.expect("linked once nothing is deferred"))
    }

    /// Whether its calls' `command` argument is a shell command line.
    /// The tools it may call through the host (`call-tools`), if any.
    pub(crate) fn callable_tools(&self) -> Option<Arc<[String]>> {
        self.caps.call_tools.clone()
    }

    pub(crate) fn runs_shell(&self) -> bool {
        self.caps.shell
    }

    /// Whether the programs it starts have the network.
    pub(crate) fn programs_have_network(&self) -> bool {
        self.caps.process.as_ref().is_some_and(|p| p.has_network())
    }

    /// Whether its calls can take a file's mutation lock (`fs-write`).
    pub(crate) fn may_lock_files(&self) -> bool {
        self.caps.fs_write.is_some()
    }

    /// The same sandbox, its calls told the Pi profile `pi`.
    pub(crate) fn speaking(mut self, pi: PiProfile) -> Sandbox {
        self.pi = pi;
        self
    }

    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// See [`Runtime::may_hold_instance`].
    pub(crate) fn may_hold_instance(&self) -> bool {
        self.runtime.may_hold_instance()
    }

    pub(crate) fn provides_tools(&self) -> bool {
        self.provides_tools
    }

    /// The version of the package it is built for (`0.2.0`).
    pub(crate) fn package_version(&self) -> &'static str {
        self.contract.version
    }

    /// The name of its hook export (`toolhost:tool/hook@0.2.0`).
    pub(crate) fn hook_export(&self) -> String {
        self.contract.hook_export()
    }

    pub(crate) fn provides_hooks(&self) -> bool {
        self.provides_hooks
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
            .acquire(|| signals.turn.first_in_line())
            .await
            .ok_or_else(|| CallFailure::Start("the runtime is shutting down".into()))?;
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE);
        let mut wasi = WasiCtx::builder();
        wasi.stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false);
        let grants = &self.caps.wasi;
        // Each granted directory is preopened where it is. Opened through
        // the held descriptor: a directory swapped for a symbolic link after
        // the grant was resolved is not followed.
        let mut preopens: Vec<(std::path::PathBuf, String, bool)> = grants
            .preopens
            .iter()
            .map(|(dir, writable)| {
                let seen = dir.path().to_string_lossy().into_owned();
                (dir.reopen_path(), seen, *writable)
            })
            .collect();
        if let Some(tape) = signals.tape.get() {
            // Recorded where they are; a replayed call is given the recorded
            // ones, made of what the recording holds (`tape::files`), never
            // the machine's files.
            use crate::tape::files::WasiDir;
            let live: Vec<WasiDir> = preopens
                .iter()
                .map(|(_, path, writable)| WasiDir {
                    path: path.clone(),
                    writable: *writable,
                })
                .collect();
            let replayed = tape.wasi_dirs(&live).map_err(|e| {
                CallFailure::Start(format!("laying out the recorded WASI directories: {e}"))
            })?;
            if let Some(dirs) = replayed {
                preopens = dirs
                    .into_iter()
                    .map(|(host, dir)| (host, dir.path, dir.writable))
                    .collect();
            }
        }
        for (open, guest_path, writable) in preopens {
            let perms = if writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            wasi.preopened_dir(open, &guest_path, perms).map_err(|e| {
                CallFailure::Start(format!("opening granted directory {guest_path}: {e}"))
            })?;
        }
        wasi.envs(&grants.env);
        if let Some(cwd) = &grants.cwd {
            wasi.initial_cwd(cwd);
        }
        if let Some(tape) = signals.tape.get() {
            // What the call reads of time and chance is on its tape too.
            use crate::tape::wasi::{Generator, MonotonicClock, Random, WallClock};
            wasi.wall_clock(WallClock(tape.clone()))
                .monotonic_clock(MonotonicClock(tape.clone()))
                .secure_random(Generator(tape.clone(), Random::Secure))
                .insecure_random(Generator(tape.clone(), Random::Insecure))
                .insecure_random_seed(tape.seed);
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
            http: crate::ops::http_client::HttpCall::new(self.caps.http.clone(), signals.clone()),
            signals: signals.clone(),
            caps: self.caps.clone(),
            pi: self.pi,
        };
        let linked = self
            .linked()
            .map_err(|reason| CallFailure::Start(format!("loading it failed: {reason}")))?;
        let mut store = Store::new(linked.pre.component().engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|store| {
            let data = store.data();
            if Instant::now() >= data.deadline + data.signals.waited() {
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
        let (tool, hook) = linked
            .exports
            .load(&mut instance.store, &raw)
            .map_err(start)?;
        (instance.tool, instance.hook) = (tool, hook);
        Ok(instance)
    }
}

/// Link `component`, built for `contract`'s version, to the host interfaces
/// `caps` allows (with `trap_ungranted`, every other Operation it imports to
/// a trap) and find its exports.
fn link(
    runtime: &Runtime,
    component: &Component,
    contract: &'static Contract,
    caps: &Capabilities,
    origin: &str,
    trap_ungranted: bool,
) -> Result<Linked, Error> {
    let engine = component.engine();
    // `wasi:http` is linked when granted, and for inspection (it traps).
    let http = caps.http.is_some() || trap_ungranted;
    let linker = || -> wasmtime::Result<Linker<CallState>> {
        let mut linker = Linker::<CallState>::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        crate::tape::files::add_to_linker(&mut linker)?;
        crate::ops::http_client::add_to_linker(&mut linker, http)?;
        (contract.link)(&mut linker, caps)?;
        Ok(linker)
    };
    let linker = if trap_ungranted {
        linker().and_then(|mut linker| {
            stub_ungranted_operations(&mut linker, component, caps, engine)?;
            Ok(Arc::new(linker))
        })
    } else {
        // What is linked depends only on the package version and which
        // interfaces are granted (each call's own state is in its store):
        // one linker per such shape and engine, shared by its components.
        runtime.per_engine(engine, link_shape(contract, caps, http), || {
            linker().map(Arc::new)
        })
    };
    let linker = linker.map_err(|e| Error::load_because(origin, "linking host interfaces", e))?;
    let pre = linker.instantiate_pre(component).map_err(|e| {
        let why = format!(
            "cannot be linked: its imports do not have the types this host gives them (a \
                 component built from a changed copy of toolhost:tool@{}'s WIT, or for a newer \
                 WASI, does this; `toolhost ext new` writes the WIT unchanged into \
                 wit/deps/toolhost/)",
            contract.version
        );
        Error::load_because(origin, why, e)
    })?;
    let ty = component.component_type();
    let exported = |name: &str| ty.exports(component.engine()).any(|(e, _)| e == name);
    let (tool, hook) = (
        exported(&contract.tool_export()),
        exported(&contract.hook_export()),
    );
    let exports = (contract.exports)(&pre, tool, hook).map_err(|(export, e)| {
        let why = format!(
            "exports {export}, but not with the functions and types toolhost:tool@{} gives it \
             (built from a changed copy of its WIT? `toolhost ext new` writes it unchanged into \
             wit/deps/toolhost/)",
            contract.version
        );
        Error::load_because(origin, why, e)
    })?;
    Ok(Linked {
        pre,
        contract,
        exports,
    })
}

/// What [`link`] links for a granted component, as a number: the package
/// version, `wasi:http`, and one bit per interface granted.
fn link_shape(contract: &'static Contract, caps: &Capabilities, http: bool) -> u32 {
    let version = wit::CONTRACTS
        .iter()
        .position(|c| c.version == contract.version)
        .expect("a contract the host serves");
    debug_assert!(
        interfaces::interfaces().count() < 23,
        "one bit per interface"
    );
    let granted = interfaces::interfaces()
        .enumerate()
        .filter(|(_, interface)| interface.granted(caps))
        .fold(0u32, |bits, (i, _)| bits | 1 << (i + 1));
    granted | u32::from(http) | (version as u32) << 24
}

/// One call's instance. Dropping it frees the store and its pool slot.
pub(crate) struct CallInstance {
    store: Store<CallState>,
    tool: Option<Arc<dyn ToolGuest>>,
    hook: Option<Arc<dyn HookGuest>>,
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
        // The time spent waiting for the person's answers is added back.
        let (start_deadline, signals) = (self.deadline, self.signals.clone());
        let timeout = async move {
            loop {
                let deadline = start_deadline + signals.waited();
                tokio::time::sleep_until(deadline.into()).await;
                if Instant::now() >= start_deadline + signals.waited() {
                    return;
                }
            }
        };
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
                _ = timeout => Outcome::Timeout,
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

    fn tool(&self) -> Result<Arc<dyn ToolGuest>, CallFailure> {
        self.tool
            .clone()
            .ok_or_else(|| CallFailure::Start("the component exports no tools".into()))
    }

    fn hook(&self) -> Result<Arc<dyn HookGuest>, CallFailure> {
        self.hook
            .clone()
            .ok_or_else(|| CallFailure::Start("the component exports no hooks".into()))
    }

    pub(crate) async fn on_tool_call(
        &mut self,
        event: wit::ToolCallEvent,
    ) -> Result<Result<Option<wit::ToolCallVerdict>, String>, CallFailure> {
        let hook = self.hook()?;
        self.guard(|store| hook.on_tool_call(store, event)).await
    }

    /// The hook's patch, refused (as if the hook had failed, in the words of
    /// `subject`) when it is larger than a tool's result could be.
    pub(crate) async fn on_tool_result(
        &mut self,
        event: wit::ToolResultEvent,
        subject: &str,
    ) -> Result<Result<Option<wit::ToolResultPatch>, String>, CallFailure> {
        let hook = self.hook()?;
        let patch = self
            .guard(|store| hook.on_tool_result(store, event))
            .await?;
        if let Ok(Some(p)) = &patch {
            let content = p.content.as_deref().unwrap_or_default();
            let limit = self.limits.output_bytes;
            if let Err(refused) =
                check_output(subject, content, &[p.details.as_deref()], &[], limit)
            {
                return Ok(Err(refused));
            }
        }
        Ok(patch)
    }

    pub(crate) async fn definitions(&mut self) -> Result<Vec<ToolDecl>, CallFailure> {
        let tool = self.tool()?;
        self.guard(|store| tool.definitions(store)).await
    }

    pub(crate) async fn prepare_arguments(
        &mut self,
        name: &str,
        arguments: &str,
    ) -> Result<Result<Option<String>, String>, CallFailure> {
        let tool = self.tool()?;
        let (name, arguments) = (name.to_string(), arguments.to_string());
        self.guard(|store| tool.prepare_arguments(store, name, arguments))
            .await
    }

    /// Run tool `name`: its result and whether it is a returned error
    /// (since `toolhost:tool@0.4.0`), or the text it threw.
    pub(crate) async fn execute(
        &mut self,
        name: &str,
        context: CallContext,
        arguments: &str,
    ) -> Result<Result<(ToolResult, bool), String>, CallFailure> {
        let tool = self.tool()?;
        let subject = format!("Tool {name}");
        let (name, arguments) = (name.to_string(), arguments.to_string());
        let out = self
            .guard(|store| tool.execute(store, (name, context, arguments)))
            .await?;
        let limit = self.limits.output_bytes;
        Ok(out.and_then(|r| {
            // Checked on the guest's own values, before the host parses the
            // details or the structured content.
            let json = [r.details.as_deref(), r.structured_content.as_deref()];
            check_output(&subject, &r.content, &json, &r.added_tool_names, limit)?;
            let is_error = r.is_error;
            Ok((result_from_guest(r)?, is_error))
        }))
    }
}

/// A guest's result in host form; details or structured content that are
/// not JSON fail the call, as does structured content that is not an object.
fn result_from_guest(r: GuestResult) -> Result<ToolResult, String> {
    let details = match r.details.as_deref() {
        None => None,
        Some(text) => Some(
            serde_json::from_str(text)
                .map_err(|e| format!("The tool returned details that are not valid JSON: {e}"))?,
        ),
    };
    let structured_content = match r.structured_content.as_deref() {
        None => None,
        Some(text) => match serde_json::from_str(text) {
            Ok(value @ serde_json::Value::Object(_)) => Some(value),
            Ok(_) => {
                return Err(
                    "The tool returned structured content that is not a JSON object".into(),
                );
            }
            Err(e) => {
                return Err(format!(
                    "The tool returned structured content that is not valid JSON: {e}"
                ));
            }
        },
    };
    Ok(ToolResult {
        content: r.content,
        details,
        usage: None,
        added_tool_names: r.added_tool_names,
        terminate: r.terminate,
        structured_content,
    })
}

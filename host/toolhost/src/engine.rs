//! The shared wasmtime [`Engine`]: pooling allocator, epoch interruption with
//! a ticker thread, and a compiled-code cache on disk.
//!
//! One engine serves every host in the process ([`Runtime::shared`]): the
//! pooling allocator reserves address space for all its slots up front, and
//! compiled code is shared by every store.

use crate::error::Error;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances. Deadlines and kills are checked at each tick,
/// and a running guest yields to the scheduler at each tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(2);

/// Most memory (and table) bytes of a pool slot that stay resident between
/// calls when the kernel can tell which pages a call wrote (see `Runtime::new`).
const KEEP_RESIDENT_SCANNED: usize = 1 << 20;

/// Most components a runtime keeps loaded for hosts built later (the
/// built-ins and a few dozen extensions; a long-running `mcp` that reloads
/// changed extensions does not grow without bound).
const LOADED_COMPONENTS: usize = 64;

/// Settings of a [`Runtime`].
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Calls that may hold an instance at once; more wait for a slot.
    pub max_concurrent_calls: u32,
    /// Hard upper bound of one call's linear memory (per-tool limits are lower).
    pub max_memory_bytes: usize,
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            max_concurrent_calls: 1000,
            max_memory_bytes: 1 << 30,
            cache_dir: default_cache_dir(),
        }
    }
}

/// `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLHOST_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/toolhost"))
}

/// The engine and what belongs to it.
pub struct Runtime {
    engine: Engine,
    options: RuntimeOptions,
    /// Bounds in-flight instances to the pool's size.
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    /// Compatibility part of cache keys (engine settings and wasmtime version).
    engine_key: String,
    /// Components loaded by this runtime, oldest first, keyed by content hash
    /// (blake3 of the bytes, always computed by the host from what it loads).
    loaded: Mutex<Vec<(String, Component)>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("options", &self.options)
            .finish()
    }
}

impl Runtime {
    /// The process-wide runtime with default options.
    pub fn shared() -> Result<Arc<Runtime>, Error> {
        static SHARED: OnceLock<Arc<Runtime>> = OnceLock::new();
        if let Some(rt) = SHARED.get() {
            return Ok(rt.clone());
        }
        let rt = Runtime::new(RuntimeOptions::default())?;
        Ok(SHARED.get_or_init(|| rt).clone())
    }

    pub fn new(options: RuntimeOptions) -> Result<Arc<Runtime>, Error> {
        let calls = options.max_concurrent_calls;
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(calls)
            // Core instances per call: 3 for a Rust tool (main module, shim,
            // fixup), 7 for a componentize-qjs one, 13 for componentize-py
            // (libc, libpython and its runtime are linked dynamically), so 16
            // lets every call the semaphore admits find its instances. This
            // pool limit only counts; unlike memories, nothing is reserved.
            .total_core_instances(calls.saturating_mul(16))
            .total_memories(calls.saturating_mul(2))
            .total_tables(calls.saturating_mul(4))
            .total_stacks(calls)
            .max_memories_per_module(2)
            .max_tables_per_module(4)
            .table_elements(100_000)
            .max_component_instance_size(4 << 20)
            .max_core_instance_size(4 << 20)
            .max_memory_size(options.max_memory_bytes)
            .max_unused_warm_slots(64);
        // How a slot is reset for its next instance decides what a call costs,
        // more than anything toolhost does itself: resetting with `madvise`
        // makes the next instance fault its pages in again (copy-on-write
        // faults on the memory image), and each fault or `madvise` in a
        // multi-threaded process is a TLB shootdown on every other core. With
        // the kernel's PAGEMAP_SCAN (Linux 6.7+) wasmtime finds the pages the
        // guest wrote and resets just those in place, so they stay resident
        // and the next call of the same tool takes no faults. Measured on 2
        // cores (benches/suite): one trivial call 69 → 25 µs, 64 parallel
        // `read` calls 11.7 → 6.0 ms. The bound keeps a slot's resident memory
        // at most what a call wrote, up to 1 MiB; beyond it, `madvise` as
        // before. Without the ioctl, keeping memory resident means a `memset`
        // of its lowest bytes whether written or not, so only a little is kept.
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            pool.pagemap_scan(Enabled::Yes)
                .linear_memory_keep_resident(KEEP_RESIDENT_SCANNED)
                .table_keep_resident(KEEP_RESIDENT_SCANNED);
        } else {
            pool.linear_memory_keep_resident(64 << 10);
        }

        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            // No component-model async guests yet: skip its per-store state.
            .concurrency_support(false)
            .max_wasm_stack(1 << 20)
            .async_stack_size(2 << 20)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config)
            .map_err(|e| Error::Runtime(format!("creating the wasm engine: {e}")))?;

        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = format!("wasmtime-48.0.8-{:016x}", hasher.finish());

        spawn_ticker(&engine);
        Ok(Arc::new(Runtime {
            engine,
            slots: Arc::new(tokio::sync::Semaphore::new(calls as usize)),
            options,
            engine_key,
            loaded: Mutex::new(Vec::new()),
        }))
    }

    /// Whether a call may hold on to its instance while the batch goes on
    /// with other work (from `prepare-arguments` to `execute`). Only while
    /// more than an eighth of the slots are free: what preparing the other
    /// calls still needs (their instances, hook components') always finds a
    /// slot, so a batch never waits on instances held by itself.
    pub(crate) fn may_hold_instance(&self) -> bool {
        let reserve = (self.options.max_concurrent_calls as usize / 8).max(1);
        self.slots.available_permits() > reserve
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn options(&self) -> &RuntimeOptions {
        &self.options
    }

    /// Compile `bytes` (content hash `hash`), or load the machine code cached
    /// by an earlier run, or take the component this runtime already loaded.
    ///
    /// Hosts built on one runtime (tests, `mcp` reloading its tools, an
    /// embedder with several workspaces) share one `Component` per content.
    /// Besides the deserialisation, that keeps the pool's slot affinity:
    /// instances of the same `Component` reuse each other's slots with their
    /// memory image already mapped, where a second copy of the same tool
    /// would remap it in every slot it takes (measured: 64 parallel `read`
    /// calls next to a second host took 4.7 ms instead of 3.7 ms).
    pub fn load_component(
        &self,
        bytes: &[u8],
        hash: &str,
        origin: &str,
    ) -> Result<Component, Error> {
        if let Some(component) = self.loaded(hash) {
            return Ok(component);
        }
        let component = self.load_uncached(bytes, hash, origin)?;
        let mut loaded = self.loaded.lock().expect("loaded components lock");
        if loaded.len() >= LOADED_COMPONENTS {
            loaded.remove(0);
        }
        loaded.push((hash.to_string(), component.clone()));
        Ok(component)
    }

    /// The component with content hash `hash`, if this runtime holds it.
    fn loaded(&self, hash: &str) -> Option<Component> {
        let loaded = self.loaded.lock().expect("loaded components lock");
        loaded
            .iter()
            .find(|(h, _)| h == hash)
            .map(|(_, c)| c.clone())
    }

    fn load_uncached(&self, bytes: &[u8], hash: &str, origin: &str) -> Result<Component, Error> {
        let cached = self.cache_path(hash);
        if let Some(path) = cached.as_ref().filter(|p| p.exists()) {
            match self.deserialize(path) {
                Ok(component) => return Ok(component),
                // Stale or damaged entry: compile again and replace it.
                Err(_) => {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
        let component = Component::from_binary(&self.engine, bytes).map_err(|e| {
            let cause = first_line(&e.to_string()).to_string();
            // A valid component whose initial memories or tables are larger
            // than the pool's slots: name the limit, not the format.
            let reason = if cause.contains("does not fit in pooling allocator") {
                format!(
                    "declares more initial memory or table space than this host reserves for \
                     one component ({cause})"
                )
            } else {
                format!("not a valid WebAssembly component: {cause}")
            };
            Error::Load {
                path: origin.to_string(),
                reason,
            }
        })?;
        if let Some(path) = cached {
            // The cache is an optimisation: failing to write it is not an error.
            let _ = self.store_in_cache(&component, &path);
        }
        Ok(component)
    }

    fn cache_path(&self, hash: &str) -> Option<PathBuf> {
        let dir = self.options.cache_dir.as_ref()?;
        Some(dir.join(&self.engine_key).join(format!("{hash}.cwasm")))
    }

    #[allow(unsafe_code)]
    fn deserialize(&self, path: &Path) -> wasmtime::Result<Component> {
        // SAFETY: `deserialize_file` trusts the file to be machine code that
        // this engine produced. Cache entries are written only by
        // `store_in_cache`, from a component this engine compiled, atomically
        // (temporary file + rename) into the user's own cache directory, under
        // a key naming the engine's settings; wasmtime also checks the
        // header's engine compatibility. Whoever can write that directory can
        // already run code as this user.
        unsafe { Component::deserialize_file(&self.engine, path) }
    }

    fn store_in_cache(&self, component: &Component, path: &Path) -> std::io::Result<()> {
        let bytes = component
            .serialize()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let dir = path.parent().expect("cache path has a parent");
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name().unwrap().to_string_lossy(),
            std::process::id()
        ));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)
    }
}

/// Advance the engine's epoch every [`EPOCH_TICK`] for as long as it lives.
fn spawn_ticker(engine: &Engine) {
    // A weak handle: the thread ends once the engine is dropped.
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("toolhost-epoch".into())
        .spawn(move || {
            while let Some(engine) = engine.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .expect("spawning the epoch ticker thread");
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

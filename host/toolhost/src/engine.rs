//! The shared wasmtime [`Engine`]: pooling allocator, epoch interruption with
//! a ticker thread, and a compiled-code cache on disk.
//!
//! One engine serves every host in the process ([`Runtime::shared`]): the
//! pooling allocator reserves address space for all its slots up front, and
//! compiled code is shared by every store.
//!
//! # The compile cache cannot be poisoned
//!
//! A cache entry is native code the host maps and runs, so an entry is used
//! only when it is byte for byte what a host of this user wrote for that very
//! component: each entry ends with a keyed BLAKE3 MAC of its name (engine and
//! component hash) and contents, under a random key kept in
//! the cache directory (`key`, readable by the user only; the cache directory
//! is a protected path no tool may write, and the jail hides the key from
//! children). An entry whose MAC does not verify is never deserialized: the
//! component is compiled again, the entry replaced, and the event reported
//! once ([`Runtime::take_reports`]).

use crate::error::Diagnostic;
use crate::error::Error;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::{Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

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
    /// The cache's MAC key, read or created on first use; `None` when it
    /// cannot be (the cache is then not used).
    cache_key: OnceLock<Option<[u8; 32]>>,
    /// Cache entries refused since the last [`Runtime::take_reports`].
    reports: Mutex<Vec<Diagnostic>>,
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

        let mut config = crate::engine_config::compile_config();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config)
            .map_err(|e| Error::runtime_because("creating the wasm engine", e))?;

        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        // `mac`: entries end with their MAC (see the module docs); entries of
        // earlier versions, without one, are never looked at.
        let engine_key = format!("wasmtime-48.0.8-mac-{:016x}", hasher.finish());

        spawn_ticker(&engine);
        Ok(Arc::new(Runtime {
            engine,
            slots: Arc::new(tokio::sync::Semaphore::new(calls as usize)),
            options,
            engine_key,
            loaded: Mutex::new(Vec::new()),
            cache_key: OnceLock::new(),
            reports: Mutex::new(Vec::new()),
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

    /// [`Self::load_component`] for a component compiled when toolhost was
    /// built (`precompiled`, embedded in the binary): its machine code is
    /// used as it is when this engine and CPU can run it, so a fresh
    /// machine's first start compiles nothing; otherwise (another CPU than
    /// the build machine's, say) the component is compiled as any other.
    pub(crate) fn load_precompiled(
        &self,
        bytes: &[u8],
        precompiled: &'static [u8],
        hash: &str,
        origin: &str,
    ) -> Result<Component, Error> {
        if let Some(component) = self.loaded(hash) {
            return Ok(component);
        }
        #[allow(unsafe_code)]
        // SAFETY: `deserialize` trusts the bytes to be machine code that a
        // compatible engine produced. These were produced by the build
        // script of this very binary, with `compile_config`, and are part of
        // the binary itself (nothing outside it can change them); wasmtime
        // checks the version, settings and CPU features they need against
        // this engine and refuses them otherwise.
        let component = match unsafe { Component::deserialize(&self.engine, precompiled) } {
            Ok(component) => component,
            Err(_) => return self.load_component(bytes, hash, origin),
        };
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

    /// What happened to the compile cache that a person should hear of
    /// (entries refused as not written by this host), each once.
    pub fn take_reports(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.reports.lock().expect("reports lock"))
    }

    fn load_uncached(&self, bytes: &[u8], hash: &str, origin: &str) -> Result<Component, Error> {
        let cached = self.cache_path(hash);
        if let Some(path) = cached.as_ref().filter(|p| p.exists()) {
            match self.deserialize(path, hash) {
                Ok(component) => return Ok(component),
                Err(CacheMiss::Forged) => {
                    self.reports.lock().expect("reports lock").push(Diagnostic {
                        path: path.display().to_string(),
                        message: format!(
                            "compile cache entry of {origin} was not written by this host; \
                             compiled again and replaced"
                        ),
                    });
                    let _ = std::fs::remove_file(path);
                }
                // Stale or damaged entry: compile again and replace it.
                Err(CacheMiss::Stale) => {
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
            Error::load(origin, reason)
        })?;
        if let Some(path) = cached {
            // The cache is an optimisation: failing to write it is not an error.
            let _ = self.store_in_cache(&component, &path, hash);
        }
        Ok(component)
    }

    fn cache_path(&self, hash: &str) -> Option<PathBuf> {
        let dir = self.options.cache_dir.as_ref()?;
        self.cache_key()?;
        Some(dir.join(&self.engine_key).join(format!("{hash}.cwasm")))
    }

    /// The MAC key, read from the cache directory or created there.
    fn cache_key(&self) -> Option<[u8; 32]> {
        *self.cache_key.get_or_init(|| {
            let dir = self.options.cache_dir.as_ref()?;
            read_or_create_key(&dir.join(CACHE_KEY_FILE)).ok()
        })
    }

    /// Deserialize the entry at `path` if its MAC verifies. The bytes are read
    /// once, verified, and deserialized from that same copy.
    #[allow(unsafe_code)]
    fn deserialize(&self, path: &Path, hash: &str) -> Result<Component, CacheMiss> {
        let key = self.cache_key().ok_or(CacheMiss::Stale)?;
        let mut bytes = std::fs::read(path).map_err(|_| CacheMiss::Stale)?;
        if bytes.len() < MAC_BYTES {
            return Err(CacheMiss::Forged);
        }
        let mac = bytes.split_off(bytes.len() - MAC_BYTES);
        let expected = self.mac(&key, hash, &bytes);
        // `blake3::Hash`'s equality is constant-time.
        if blake3::Hash::from_bytes(mac.try_into().expect("MAC_BYTES long")) != expected {
            return Err(CacheMiss::Forged);
        }
        // SAFETY: `deserialize` trusts the bytes to be machine code that this
        // engine produced. They carry a MAC under this user's cache key,
        // which only `store_in_cache` computes, over a component this engine
        // compiled; wasmtime also checks the header's engine compatibility.
        unsafe { Component::deserialize(&self.engine, &bytes) }.map_err(|_| CacheMiss::Stale)
    }

    /// The MAC of the entry for component `hash`: over the entry's name and
    /// contents, so an entry moved to another component's name fails too.
    fn mac(&self, key: &[u8; 32], hash: &str, bytes: &[u8]) -> blake3::Hash {
        blake3::Hasher::new_keyed(key)
            .update(self.engine_key.as_bytes())
            .update(b"/")
            .update(hash.as_bytes())
            .update(b"\0")
            .update(bytes)
            .finalize()
    }

    fn store_in_cache(
        &self,
        component: &Component,
        path: &Path,
        hash: &str,
    ) -> std::io::Result<()> {
        let key = self
            .cache_key()
            .ok_or_else(|| std::io::Error::other("no cache key"))?;
        let mut bytes = component
            .serialize()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mac = self.mac(&key, hash, &bytes);
        bytes.extend_from_slice(mac.as_bytes());
        crate::files::write_private(path, &bytes)
    }
}

/// The cache's MAC key file, in the cache directory.
pub const CACHE_KEY_FILE: &str = "key";
/// Length of the MAC that ends each cache entry.
const MAC_BYTES: usize = 32;

/// Why a cache entry was not used.
enum CacheMiss {
    /// Unreadable, or written by another engine version: replace quietly.
    Stale,
    /// Its MAC does not verify: not written by a host of this user.
    Forged,
}

/// The 32-byte key at `path`, or a new random one written there (readable
/// by the user only; created exclusively, so two hosts starting at once
/// agree on one key).
fn read_or_create_key(path: &Path) -> std::io::Result<[u8; 32]> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let read = |path: &Path| -> std::io::Result<[u8; 32]> {
        let bytes = crate::files::read_regular(path, 32)
            .map_err(std::io::Error::other)?
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
        bytes
            .try_into()
            .map_err(|_| std::io::Error::other("the cache key is not 32 bytes"))
    };
    match read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    let mut key = [0u8; 32];
    crate::files::getrandom(&mut key)?;
    let dir = path.parent().expect("key path has a parent");
    std::fs::create_dir_all(dir)?;
    // Written whole under a temporary name, then linked into place: the key
    // file never exists half-written, and of two hosts starting at once the
    // second finds the first one's key.
    let tmp = dir.join(format!(".key.{}.tmp", crate::files::unique_suffix()));
    let linked = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&key)?;
        file.sync_data()?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(path),
        Err(e) => Err(e),
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

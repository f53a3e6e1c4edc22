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
//! once ([`Runtime::take_reports`]). An entry that verified is not hashed
//! again while the very same file is unchanged (`verified`: a keyed note of
//! its inode and times).

mod verified;

use crate::error::Diagnostic;
use crate::error::Error;
use crate::files::Digest;
use std::hash::{Hash, Hasher};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
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

/// Components at least this large are compiled by the quick compiler first
/// when no compiled code is cached: Cranelift takes about 0.2 s per MB on
/// two cores (a 19 MB Python component: 4 s), Winch a tenth of it; smaller
/// ones compile with Cranelift at once, as fast as a person can tell, up to
/// [`FOREGROUND_BYTES`] in one spell of loading.
const QUICK_FROM_BYTES: usize = 1 << 20;

/// What Cranelift may compile at once in one spell of loading (a start, a
/// reload) before the quick compiler takes over: many small components
/// cost as much as one large one (twenty extensions of 180 KB, 2 s here).
/// Past it, each is compiled by the quick compiler first, as a large one.
const FOREGROUND_BYTES: usize = 256 << 10;

/// Loads this close after a spell's first compile belong to that spell.
const SPELL: Duration = Duration::from_secs(10);

/// A compiled component, and, while it runs the quick compiler's code, the
/// place where Cranelift's appears once compiled in the background.
#[derive(Clone)]
pub(crate) struct Compiled {
    pub component: Component,
    pub upgrade: Option<Arc<OnceLock<Component>>>,
}

impl Compiled {
    fn optimised(component: Component) -> Compiled {
        Compiled {
            component,
            upgrade: None,
        }
    }

    /// Itself, or what it was upgraded to.
    fn current(&self) -> Compiled {
        match self.upgrade.as_ref().and_then(|u| u.get()) {
            Some(component) => Compiled::optimised(component.clone()),
            None => self.clone(),
        }
    }
}

/// An engine and the compatibility part of its cache keys.
#[derive(Clone)]
struct Tier {
    engine: Engine,
    key: String,
    /// Values made once for this engine and cloned for each use
    /// ([`Runtime::per_engine`]).
    made: Arc<Mutex<Vec<Made>>>,
}

/// One value of [`Tier::made`]: its type, its key, the value.
type Made = (std::any::TypeId, u32, Box<dyn std::any::Any + Send>);

impl Tier {
    fn new(engine: Engine) -> Tier {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        // `mac`: entries end with their MAC (see the module docs); entries of
        // earlier versions, without one, are never looked at.
        let key = format!("wasmtime-48.0.8-mac-{:016x}", hasher.finish());
        Tier {
            engine,
            key,
            made: Arc::default(),
        }
    }
}

/// Settings of a [`Runtime`].
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Calls that may hold an instance at once (at least 2); more wait for
    /// a slot.
    pub max_concurrent_calls: u32,
    /// Hard upper bound of one call's linear memory (per-tool limits are lower).
    pub max_memory_bytes: usize,
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// A background compile that finds another process compiling the same
    /// component waits for it and then does its own (false: it leaves the
    /// work to the other). For a process that exists to finish the work.
    pub wait_for_other_compiles: bool,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            // Each slot costs every start a fiber stack's guard page (an
            // `mprotect` splitting the pool's mapping, about 4.5 µs here).
            // A message of more calls than slots keeps its order all the
            // same ([`Slots`]).
            max_concurrent_calls: 256,
            max_memory_bytes: 1 << 30,
            cache_dir: default_cache_dir(),
            wait_for_other_compiles: false,
        }
    }
}

pub use crate::files::default_cache_dir;

/// The pool's slots: one per instance that may exist at once.
///
/// A call waiting for a slot must not give up its place in the order of
/// file mutations (the calls after it would then lock its file first), yet
/// every slot may be held by calls that wait for that place to pass. So one
/// slot is kept for the call that waits on nobody: the one whose turn is
/// first in line ([`crate::ops::fs::TurnSlot::first_in_line`]). It always
/// gets an instance, reaches its lock, and lets the next call go; a call
/// that locks no file waits for one of the others.
pub(crate) struct Slots {
    /// Every slot but the kept one.
    anyone: Arc<tokio::sync::Semaphore>,
    /// The kept one.
    first_in_line: Arc<tokio::sync::Semaphore>,
    size: usize,
}

impl Slots {
    fn new(size: usize) -> Slots {
        Slots {
            anyone: Arc::new(tokio::sync::Semaphore::new(size - 1)),
            first_in_line: Arc::new(tokio::sync::Semaphore::new(1)),
            size,
        }
    }

    /// A slot for a call; `first_in_line` gives, while the call holds a
    /// turn, a future that resolves when that turn is first in line.
    /// `None` when the runtime shuts down.
    pub(crate) async fn acquire<F: Future<Output = ()>>(
        &self,
        first_in_line: impl FnOnce() -> Option<F>,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if let Ok(permit) = self.anyone.clone().try_acquire_owned() {
            return Some(permit);
        }
        let anyone = self.anyone.clone().acquire_owned();
        let Some(first) = first_in_line() else {
            return anyone.await.ok();
        };
        let kept = async {
            first.await;
            self.first_in_line.clone().acquire_owned().await
        };
        tokio::select! {
            permit = anyone => permit.ok(),
            permit = kept => permit.ok(),
        }
    }
}

/// The engine and what belongs to it.
pub struct Runtime {
    /// The engine every call runs on (Cranelift's code), with the
    /// compatibility part of its cache keys.
    main: Tier,
    /// The quick compiler's engine (Winch), for the first load of a large
    /// component, or of a small one past what a spell of loading may spend
    /// on Cranelift; `None` where it cannot run.
    quick: Option<Tier>,
    options: RuntimeOptions,
    /// Bounds in-flight instances to the pool's size.
    pub(crate) slots: Slots,
    /// Components loaded by this runtime, oldest first, keyed by content hash
    /// (blake3 of the bytes, always computed by the host from what it loads).
    loaded: Mutex<Vec<(String, Compiled)>>,
    /// The cache's MAC key, read or created on first use; `None` when it
    /// cannot be (the cache is then not used).
    cache_key: OnceLock<Option<[u8; 32]>>,
    /// Cache entries refused since the last [`Runtime::take_reports`].
    reports: Mutex<Vec<Diagnostic>>,
    /// Cranelift compiling components that run the quick compiler's code.
    background: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// When the current spell of loading began, and the bytes Cranelift
    /// compiled at once in it ([`FOREGROUND_BYTES`]).
    spell: Mutex<Option<(Instant, usize)>>,
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
    /// Callers at the same time wait for the one that creates it (a
    /// program may start creating it on a thread of its own, first thing).
    pub fn shared() -> Result<Arc<Runtime>, Error> {
        static SHARED: Mutex<Option<Arc<Runtime>>> = Mutex::new(None);
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rt) = &*shared {
            return Ok(rt.clone());
        }
        let rt = Runtime::new(RuntimeOptions::default())?;
        *shared = Some(rt.clone());
        Ok(rt)
    }

    pub fn new(options: RuntimeOptions) -> Result<Arc<Runtime>, Error> {
        // One slot is kept for the first call in line (see [`Slots`]).
        let calls = options.max_concurrent_calls.max(2);
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
        config
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .with_custom_code_memory(Some(Arc::new(StaticCode)));
        let engine = Engine::new(&config)
            .map_err(|e| Error::runtime_because("creating the wasm engine", e))?;
        spawn_ticker(&engine);

        // The quick tier: Winch, instances allocated on demand (its code
        // serves a component only until Cranelift's is ready).
        let mut quick = crate::engine_config::compile_config();
        quick.strategy(wasmtime::Strategy::Winch);
        let quick = Engine::new(&quick).ok().map(Tier::new);
        if let Some(tier) = &quick {
            spawn_ticker(&tier.engine);
        }
        Ok(Arc::new(Runtime {
            main: Tier::new(engine),
            quick,
            slots: Slots::new(calls as usize),
            options,
            loaded: Mutex::new(Vec::new()),
            cache_key: OnceLock::new(),
            reports: Mutex::new(Vec::new()),
            background: Mutex::new(Vec::new()),
            spell: Mutex::new(None),
        }))
    }

    /// Whether a call may hold on to its instance while the batch goes on
    /// with other work (from `prepare-arguments` to `execute`). Only while
    /// more than an eighth of the slots are free: what preparing the other
    /// calls still needs (their instances, hook components') always finds a
    /// slot, so a batch never waits on instances held by itself.
    pub(crate) fn may_hold_instance(&self) -> bool {
        let reserve = (self.slots.size / 8).max(1);
        self.slots.anyone.available_permits() > reserve
    }

    pub fn engine(&self) -> &Engine {
        &self.main.engine
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
    ///
    /// A large component with nothing cached is compiled by the quick
    /// compiler (its code is cached too, for the next start) and by Cranelift
    /// on a thread of its own; Cranelift's code replaces the quick one in the
    /// cache and in the sandboxes that linked the quick one, for the calls that follow.
    pub fn load_component(
        &self,
        bytes: &[u8],
        hash: &str,
        origin: &str,
    ) -> Result<Component, Error> {
        Ok(self.load_compiled(bytes, hash, origin)?.component)
    }

    /// [`Self::load_component`], with where Cranelift's code will appear
    /// when it is the quick compiler's.
    pub(crate) fn load_compiled(
        &self,
        bytes: &[u8],
        hash: &str,
        origin: &str,
    ) -> Result<Compiled, Error> {
        if let Some(compiled) = self.loaded(hash) {
            return Ok(compiled);
        }
        let compiled = self.load_uncached(bytes, hash, origin)?;
        self.remember(hash, &compiled);
        Ok(compiled)
    }

    /// How long after a compile-cache entry or a component file last changed
    /// a note may vouch for it, sparing a start the hashing of it: until
    /// then, each start hashes it (a write in the same tick of the coarse
    /// clock as the hashing would leave its times as they were).
    pub const NOTES_AFTER: Duration = verified::SETTLED;

    /// The digest of the component file `file`, opened at `path` (at most
    /// `max` bytes), and its bytes when they had to be read: a note in the
    /// cache directory (see [`verified`]) spares reading and hashing a file
    /// unchanged since an earlier start read it.
    pub(crate) fn component_digest(
        &self,
        path: &Path,
        file: &std::fs::File,
        max: u64,
    ) -> Result<(Digest, Option<Vec<u8>>), String> {
        let stamp = verified::Stamp::of(file);
        let noting = (self.options.cache_dir.as_deref().zip(self.cache_key())).zip(stamp);
        if let Some(((dir, key), stamp)) = noting
            && let Some(digest) = verified::noted_source(&key, dir, path, &stamp)
        {
            let hex = blake3::Hash::from_bytes(digest).to_hex();
            return Ok((Digest::from_hex(hex.as_str()), None));
        }
        let bytes = crate::files::read_open(file, max)?;
        let hash = blake3::hash(&bytes);
        // Unchanged while it was read: what was hashed is this file.
        if let Some(((dir, key), stamp)) = noting
            && verified::Stamp::of(file) == Some(stamp)
        {
            verified::note_source(&key, dir, path, &stamp, hash.as_bytes());
        }
        Ok((Digest::from_hex(hash.to_hex().as_str()), Some(bytes)))
    }

    /// The component with content hash `hash` whose file was left unread
    /// ([`Self::component_digest`]): this runtime's or the compile cache's
    /// code when there is some, else compiled from what `read` reads of the
    /// file, which must still hash to `hash`.
    pub(crate) fn load_unread(
        &self,
        hash: &str,
        origin: &str,
        read: impl FnOnce() -> Result<Vec<u8>, String>,
    ) -> Result<Compiled, Error> {
        if let Some(compiled) = self.loaded(hash) {
            return Ok(compiled);
        }
        if let Some(component) = self.cached(&self.main, hash, origin) {
            let compiled = Compiled::optimised(component);
            self.remember(hash, &compiled);
            return Ok(compiled);
        }
        let fail = |reason: String| Error::load(origin, reason);
        let bytes = read().map_err(fail)?;
        // What runs is what was trusted and granted, or nothing.
        if blake3::hash(&bytes).to_hex().as_str() != hash {
            return Err(fail("its file changed since it was loaded".into()));
        }
        self.load_compiled(&bytes, hash, origin)
    }

    /// The SHA-256 (`sha256:…`) of the component whose BLAKE3 is `hash`
    /// (what an OCI manifest names it by): the one noted (MAC'd with the
    /// cache key) when it was first computed, else `bytes` hashed, else what
    /// `read` reads, which must still hash to `hash`.
    pub(crate) fn component_sha256(
        &self,
        hash: &str,
        bytes: Option<&[u8]>,
        read: impl FnOnce() -> Result<Vec<u8>, String>,
    ) -> Result<String, String> {
        // `hash` is the BLAKE3 of these very bytes (or of the file, vouched
        // for by its note): a SHA-256 noted under it is theirs.
        let noting = self.options.cache_dir.as_deref().zip(self.cache_key());
        if let Some((dir, key)) = noting
            && let Some(sha256) = verified::noted_sha256(&key, dir, hash)
        {
            return Ok(sha256);
        }
        let read_now;
        let bytes = match bytes {
            Some(bytes) => bytes,
            None => {
                read_now = read()?;
                if blake3::hash(&read_now).to_hex().as_str() != hash {
                    return Err("its file changed while it was read".into());
                }
                &read_now
            }
        };
        let sha256 = crate::files::sha256(bytes);
        if let Some((dir, key)) = noting {
            verified::note_sha256(&key, dir, hash, &sha256);
        }
        Ok(sha256)
    }

    /// Whether a check whose inputs digest to `subject` (hex) passed before:
    /// a note MAC'd with the cache key vouches for it.
    pub(crate) fn check_passed(&self, subject: &str) -> bool {
        let noting = self.options.cache_dir.as_deref().zip(self.cache_key());
        noting.is_some_and(|(dir, key)| verified::noted_check(&key, dir, subject))
    }

    /// Note that the check whose inputs digest to `subject` passed.
    pub(crate) fn note_check_passed(&self, subject: &str) {
        if let Some((dir, key)) = self.options.cache_dir.as_deref().zip(self.cache_key()) {
            verified::note_check(&key, dir, subject);
        }
    }

    /// The summary noted for the component `hash` (see
    /// `loader::Summary`), if there is one and it verifies.
    pub(crate) fn summary(&self, hash: &str) -> Option<Vec<u8>> {
        let (key, entry) = (self.cache_key()?, self.cache_path(&self.main, hash)?);
        verified::read_summary(&key, &self.main.key, hash, &entry)
    }

    /// Note `body` as the summary of the component `hash`.
    pub(crate) fn note_summary(&self, hash: &str, body: &[u8]) {
        if let (Some(key), Some(entry)) = (self.cache_key(), self.cache_path(&self.main, hash)) {
            if let Some(dir) = entry.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            verified::write_summary(&key, &self.main.key, hash, &entry, body);
        }
    }

    fn remember(&self, hash: &str, compiled: &Compiled) {
        let mut loaded = self.loaded.lock().expect("loaded components lock");
        if loaded.len() >= LOADED_COMPONENTS {
            loaded.remove(0);
        }
        loaded.push((hash.to_string(), compiled.clone()));
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
    ) -> Result<Compiled, Error> {
        if let Some(compiled) = self.loaded(hash) {
            return Ok(compiled);
        }
        let component = match StaticCode::deserialize(&self.main.engine, precompiled) {
            Ok(component) => component,
            Err(_) => return self.load_compiled(bytes, hash, origin),
        };
        let compiled = Compiled::optimised(component);
        self.remember(hash, &compiled);
        Ok(compiled)
    }

    /// The component with content hash `hash`, if this runtime holds it
    /// (Cranelift's code once it is there).
    fn loaded(&self, hash: &str) -> Option<Compiled> {
        let mut loaded = self.loaded.lock().expect("loaded components lock");
        let entry = loaded.iter_mut().find(|(h, _)| h == hash)?;
        entry.1 = entry.1.current();
        Some(entry.1.clone())
    }

    /// A clone of the value `make` gives for `engine` (one of this runtime's)
    /// and `key`, made once: what every component links to (WASI's hundreds
    /// of functions) was a tenth of every start's time when made for each.
    pub(crate) fn per_engine<T: Clone + Send + 'static>(
        &self,
        engine: &Engine,
        key: u32,
        make: impl FnOnce() -> wasmtime::Result<T>,
    ) -> wasmtime::Result<T> {
        let tier = std::iter::once(&self.main)
            .chain(self.quick.as_ref())
            .find(|tier| Engine::same(&tier.engine, engine));
        let Some(tier) = tier else {
            return make();
        };
        let id = std::any::TypeId::of::<T>();
        let mut made = tier.made.lock().expect("per-engine values lock");
        if let Some(value) = made
            .iter()
            .find(|(t, k, _)| *t == id && *k == key)
            .and_then(|(_, _, value)| value.downcast_ref::<T>())
        {
            return Ok(value.clone());
        }
        let value = make()?;
        made.push((id, key, Box::new(value.clone())));
        Ok(value)
    }

    /// What happened to the compile cache that a person should hear of
    /// (entries refused as not written by this host), each once.
    pub fn take_reports(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.reports.lock().expect("reports lock"))
    }

    fn load_uncached(&self, bytes: &[u8], hash: &str, origin: &str) -> Result<Compiled, Error> {
        let main = &self.main;
        if let Some(component) = self.cached(main, hash, origin) {
            return Ok(Compiled::optimised(component));
        }
        if let Some(quick) = &self.quick
            && !self.at_once(bytes.len())
            && let Some(compiled) = self.load_quick(quick, bytes, hash)
        {
            return Ok(compiled);
        }
        let component = compile(&main.engine, bytes, origin)?;
        if let Some(path) = self.cache_path(main, hash) {
            // The cache is an optimisation: failing to write it is not an error.
            let _ = self.store_in_cache(main, &component, &path, hash);
        }
        Ok(Compiled::optimised(component))
    }

    /// Whether Cranelift compiles `len` bytes at once (and counts them in
    /// the spell's [`FOREGROUND_BYTES`]), or the quick compiler first: a
    /// large component, or one past what this spell of loading may spend.
    fn at_once(&self, len: usize) -> bool {
        if len >= QUICK_FROM_BYTES {
            return false;
        }
        let mut spell = self.spell.lock().expect("spell lock");
        let now = Instant::now();
        let (began, spent) = match *spell {
            Some((began, spent)) if now.duration_since(began) < SPELL => (began, spent),
            _ => (now, 0),
        };
        let at_once = spent + len <= FOREGROUND_BYTES;
        *spell = Some((began, spent + if at_once { len } else { 0 }));
        at_once
    }

    /// The quick compiler's code for `bytes` (cached, or compiled and
    /// cached now), with Cranelift compiling the component on a thread of
    /// its own. `None` when the quick compiler cannot compile it (a proposal
    /// it does not implement): then Cranelift alone, as for any component.
    fn load_quick(&self, quick: &Tier, bytes: &[u8], hash: &str) -> Option<Compiled> {
        let component = match self.cached(quick, hash, "") {
            Some(component) => component,
            None => {
                let component = Component::from_binary(&quick.engine, bytes).ok()?;
                if let Some(path) = self.cache_path(quick, hash) {
                    let _ = self.store_in_cache(quick, &component, &path, hash);
                }
                component
            }
        };
        let upgrade = Arc::new(OnceLock::new());
        let job = Upgrade {
            main: self.main.clone(),
            bytes: bytes.to_vec(),
            hash: hash.to_string(),
            cache: self.cache_path(&self.main, hash),
            quick_entry: self.cache_path(quick, hash),
            cache_key: self.cache_key(),
            wait: self.options.wait_for_other_compiles,
            done: upgrade.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name("toolhost-compile".into())
            .spawn(move || job.run());
        let upgrade = spawned.ok().map(|thread| {
            self.background
                .lock()
                .expect("background lock")
                .push(thread);
            upgrade
        });
        Some(Compiled { component, upgrade })
    }

    /// Whether Cranelift is still compiling a component in the background.
    /// A short-lived program (`toolhost call`) that ends now loses that
    /// work; the CLI hands it to a process of its own (`toolhost optimise`).
    pub fn optimising(&self) -> bool {
        let background = self.background.lock().expect("background lock");
        background.iter().any(|t| !t.is_finished())
    }

    /// Wait until the background compiles have ended (their code cached).
    pub fn wait_optimised(&self) {
        let threads = std::mem::take(&mut *self.background.lock().expect("background lock"));
        for thread in threads {
            let _ = thread.join();
        }
    }

    /// The component cached for `tier` under `hash`, if its entry verifies;
    /// a forged entry is reported and removed, a stale one removed.
    fn cached(&self, tier: &Tier, hash: &str, origin: &str) -> Option<Component> {
        let path = self.cache_path(tier, hash).filter(|p| p.exists())?;
        match self.deserialize(tier, &path, hash) {
            Ok(component) => return Some(component),
            Err(CacheMiss::Forged) => {
                let what = if origin.is_empty() { hash } else { origin };
                self.reports.lock().expect("reports lock").push(Diagnostic {
                    path: path.display().to_string(),
                    message: format!(
                        "compile cache entry of {what} was not written by this host; \
                         compiled again and replaced"
                    ),
                });
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_file(verified::note_path(&path));
            }
            // Stale or damaged entry: compile again and replace it.
            Err(CacheMiss::Stale) => {
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_file(verified::note_path(&path));
            }
        }
        None
    }

    fn cache_path(&self, tier: &Tier, hash: &str) -> Option<PathBuf> {
        let dir = self.options.cache_dir.as_ref()?;
        self.cache_key()?;
        Some(dir.join(&tier.key).join(format!("{hash}.cwasm")))
    }

    /// The MAC key, read from the cache directory or created there.
    fn cache_key(&self) -> Option<[u8; 32]> {
        *self.cache_key.get_or_init(|| {
            let dir = self.options.cache_dir.as_ref()?;
            read_or_create_key(&dir.join(CACHE_KEY_FILE)).ok()
        })
    }

    /// Deserialize the entry at `path` if its MAC verifies. The file is
    /// opened once, its mapped bytes verified, and that same file (by its
    /// descriptor, whatever is renamed over `path` meanwhile) is what the
    /// engine maps and runs: no copy, its pages shared with the page cache.
    #[allow(unsafe_code)]
    fn deserialize(&self, tier: &Tier, path: &Path, hash: &str) -> Result<Component, CacheMiss> {
        let key = self.cache_key().ok_or(CacheMiss::Stale)?;
        let file = std::fs::File::open(path).map_err(|_| CacheMiss::Stale)?;
        let stamp = verified::Stamp::of(&file).ok_or(CacheMiss::Stale)?;
        // Verified at an earlier start, this very file unchanged since.
        let noted = verified::noted(&key, &tier.key, hash, path, &stamp);
        let entry = MappedEntry::new(&file).ok_or(CacheMiss::Stale)?;
        let bytes = entry.bytes();
        if bytes.len() < MAC_BYTES {
            return Err(CacheMiss::Forged);
        }
        let (body, found) = bytes.split_at(bytes.len() - MAC_BYTES);
        if !noted {
            let expected = mac(&key, &tier.key, hash, body);
            // `blake3::Hash`'s equality is constant-time.
            if blake3::Hash::from_bytes(found.try_into().expect("MAC_BYTES long")) != expected {
                return Err(CacheMiss::Forged);
            }
            // Unchanged while it was hashed: what verified is this file.
            if verified::Stamp::of(&file) == Some(stamp) {
                verified::note(&key, &tier.key, hash, path, &stamp);
            }
        }
        // SAFETY: `deserialize_file` and `deserialize` trust the bytes to be
        // machine code that this engine produced. They carry a MAC under this
        // user's cache key, which only `store_in_cache` computes, over a
        // component this engine compiled; wasmtime also checks the header's
        // engine compatibility. `/proc/self/fd/N` opens the very file just
        // verified (its trailing MAC is past the end of the ELF image, which
        // wasmtime does not read). An in-place rewrite of a mapped entry
        // would take a process of this user outside every jail (the cache is
        // a protected path), which could as well replace toolhost itself.
        let by_descriptor = format!("/proc/self/fd/{}", file.as_raw_fd());
        unsafe { Component::deserialize_file(&tier.engine, &by_descriptor) }
            .or_else(|_| unsafe { Component::deserialize(&tier.engine, body) })
            .map_err(|_| CacheMiss::Stale)
    }

    fn store_in_cache(
        &self,
        tier: &Tier,
        component: &Component,
        path: &Path,
        hash: &str,
    ) -> std::io::Result<()> {
        let key = self
            .cache_key()
            .ok_or_else(|| std::io::Error::other("no cache key"))?;
        store_entry(&key, &tier.key, component, path, hash)
    }
}

/// How the main engine makes machine code executable, so that the built-ins'
/// code runs where it lies in the binary: copying it (8 MB, 2,000 fresh
/// pages) was a quarter of every start's time. Code the engine compiled or
/// read from the cache is in memory it mapped itself, as before.
struct StaticCode;

/// The built-ins' code handed to [`StaticCode::deserialize`], each claimed
/// by one engine for the life of the process: wasmtime registers code by its
/// address, so one place in memory can be one loaded component only. Its
/// text sections go back to read-only, never writable, when unloaded.
static STATIC_CODE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

impl StaticCode {
    /// The component whose machine code is `code`: run in place when `code`
    /// is page-aligned and no other engine runs it there, else copied.
    #[allow(unsafe_code)]
    fn deserialize(engine: &Engine, code: &'static [u8]) -> wasmtime::Result<Component> {
        let start = code.as_ptr().addr();
        let mut claimed = STATIC_CODE.lock().expect("static code lock");
        if !start.is_multiple_of(rustix::param::page_size())
            || claimed.iter().any(|&(s, _)| s == start)
        {
            // SAFETY: as below; this copies the bytes first.
            return unsafe { Component::deserialize(engine, code) };
        }
        // SAFETY: `deserialize_raw` trusts the bytes to be machine code that
        // a compatible engine produced, that nothing changes while the
        // component lives, and that no other component uses them (claimed). These were produced by the build script of this
        // very binary, with `compile_config`, and are an immutable static of
        // the binary itself; wasmtime checks the version, settings and CPU
        // features they need against this engine and refuses them otherwise.
        // Claimed before, so no other engine maps it meanwhile; not locked
        // during, as unloading a failed load checks the claims.
        claimed.push((start, code.len()));
        drop(claimed);
        unsafe { Component::deserialize_raw(engine, std::ptr::NonNull::from(code)) }
    }

    fn is_static(ptr: *const u8) -> bool {
        let at = ptr.addr();
        let code = STATIC_CODE.lock().expect("static code lock");
        code.iter()
            .any(|&(start, len)| (start..start + len).contains(&at))
    }

    #[allow(unsafe_code)]
    fn protect(
        ptr: *const u8,
        len: usize,
        flags: rustix::mm::MprotectFlags,
    ) -> wasmtime::Result<()> {
        // SAFETY: wasmtime hands over the page-aligned text section of a
        // code image it owns (or a built-in's, in the binary's read-only
        // data), which no Rust reference writes to.
        unsafe { rustix::mm::mprotect(ptr.cast_mut().cast(), len, flags) }.map_err(|e| {
            wasmtime::Error::msg(format!("changing the protection of machine code: {e}"))
        })
    }
}

impl wasmtime::CustomCodeMemory for StaticCode {
    fn required_alignment(&self) -> usize {
        rustix::param::page_size()
    }

    fn publish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
        use rustix::mm::MprotectFlags;
        Self::protect(ptr, len, MprotectFlags::READ | MprotectFlags::EXEC)
    }

    fn unpublish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
        use rustix::mm::MprotectFlags;
        let flags = if Self::is_static(ptr) {
            MprotectFlags::READ
        } else {
            MprotectFlags::READ | MprotectFlags::WRITE
        };
        Self::protect(ptr, len, flags)
    }
}

/// Compile `bytes` with `engine`; the error names the component and the cause.
fn compile(engine: &Engine, bytes: &[u8], origin: &str) -> Result<Component, Error> {
    Component::from_binary(engine, bytes).map_err(|e| {
        let cause = first_line(&e.to_string()).to_string();
        // A valid component whose initial memories or tables are larger
        // than the pool's slots: name the limit, not the format.
        let reason = if cause.contains("does not fit in pooling allocator") {
            format!(
                "declares more initial memory or table space than this host reserves for \
                 one component ({cause})"
            )
        } else {
            not_a_component(bytes)
                .unwrap_or_else(|| format!("not a valid WebAssembly component: {cause}"))
        };
        Error::load(origin, reason)
    })
}

/// What `bytes` are when they are no component at all: not WebAssembly, or
/// a core module (what a build for wasm32-wasip1 or wasm32-unknown-unknown
/// makes), each with what makes a component.
fn not_a_component(bytes: &[u8]) -> Option<String> {
    const MAGIC: &[u8] = b"\0asm";
    if !bytes.starts_with(MAGIC) {
        let shown: Vec<String> = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
        return Some(format!(
            "not WebAssembly: it begins with {} where a component begins with 00 61 73 6d \
             (\\0asm); an extension is a .wasm component (`toolhost ext build` makes one)",
            if shown.is_empty() {
                "nothing".to_string()
            } else {
                shown.join(" ")
            }
        ));
    }
    // A core module's version is 1, a component's layer 1 (bytes 6 and 7).
    (bytes.get(4..8) == Some(&[1, 0, 0, 0])).then(|| {
        "a core WebAssembly module, not a component: build it for wasm32-wasip2 (`cargo build \
         --target wasm32-wasip2`: a cdylib built for it is already a component), or make it \
         one with `wasm-tools component new`"
            .to_string()
    })
}

/// The MAC of the entry for component `hash` of the engine `engine_key`: over
/// the entry's name and contents, so an entry moved to another component's or
/// engine's name fails too.
fn mac(key: &[u8; 32], engine_key: &str, hash: &str, bytes: &[u8]) -> blake3::Hash {
    blake3::Hasher::new_keyed(key)
        .update(engine_key.as_bytes())
        .update(b"/")
        .update(hash.as_bytes())
        .update(b"\0")
        .update(bytes)
        .finalize()
}

/// Write `component`'s machine code, with its MAC, to `path`.
fn store_entry(
    key: &[u8; 32],
    engine_key: &str,
    component: &Component,
    path: &Path,
    hash: &str,
) -> std::io::Result<()> {
    let mut bytes = component
        .serialize()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mac = mac(key, engine_key, hash, &bytes);
    bytes.extend_from_slice(mac.as_bytes());
    // Not synced: the first load of a large component would wait for its
    // tens of megabytes to reach the disk, and an entry a crash tore fails
    // its MAC and is compiled again.
    crate::files::write_private_unsynced(path, &bytes)
}

/// An exclusive lock beside the cache entry `entry` (`….cwasm.lock`), held
/// while the returned file is open; unless `wait`, an error when another
/// process holds it.
fn lock_compile(entry: &Path, wait: bool) -> std::io::Result<std::fs::File> {
    let path = entry.with_extension("cwasm.lock");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    let how = if wait {
        rustix::fs::FlockOperation::LockExclusive
    } else {
        rustix::fs::FlockOperation::NonBlockingLockExclusive
    };
    rustix::fs::flock(&file, how)?;
    Ok(file)
}

/// Cranelift compiling a component in the background, while its calls run
/// the quick compiler's code.
struct Upgrade {
    main: Tier,
    bytes: Vec<u8>,
    hash: String,
    /// Where Cranelift's code is cached, and the quick code's entry it
    /// replaces.
    cache: Option<PathBuf>,
    quick_entry: Option<PathBuf>,
    cache_key: Option<[u8; 32]>,
    /// Wait for another process's compile instead of leaving it the work.
    wait: bool,
    done: Arc<OnceLock<Component>>,
}

impl Upgrade {
    fn run(self) {
        // One background compile at a time in this process: each uses every
        // core already (its own pool), and twenty components started on the
        // quick compiler's code together must not become twenty pools and
        // twenty compiles in memory at once.
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // One compile of a component at a time on this machine: a host that
        // finds another one's lock leaves the work to it (the next start
        // uses its code).
        let _lock = match self.cache.as_ref().map(|p| lock_compile(p, self.wait)) {
            Some(Ok(lock)) => Some(lock),
            Some(Err(_)) => return,
            None => None,
        };
        // Another process finished it while this one waited for the lock.
        if self.cache.as_ref().is_some_and(|p| p.exists()) {
            return;
        }
        // Out of the calls' way: on threads of the lowest priority (Linux
        // sets it per thread), as many as there are cores.
        let lowest = || {
            let _ = rustix::process::setpriority_process(None, 19);
        };
        let _ = rustix::process::setpriority_process(None, 19);
        let compiled = match rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("toolhost-compile-{i}"))
            .start_handler(move |_| lowest())
            .build()
        {
            Ok(pool) => pool.install(|| Component::from_binary(&self.main.engine, &self.bytes)),
            Err(_) => Component::from_binary(&self.main.engine, &self.bytes),
        };
        // A component the quick compiler took but Cranelift refuses stays on
        // the quick code; there is nothing to report to anyone.
        let Ok(component) = compiled else {
            return;
        };
        if let (Some(path), Some(key)) = (&self.cache, &self.cache_key)
            && store_entry(key, &self.main.key, &component, path, &self.hash).is_ok()
            && let Some(quick) = &self.quick_entry
        {
            let _ = std::fs::remove_file(quick);
        }
        let _ = self.done.set(component);
    }
}

/// The cache's MAC key file, in the cache directory.
pub const CACHE_KEY_FILE: &str = "key";
/// Length of the MAC that ends each cache entry.
const MAC_BYTES: usize = 32;

/// A cache entry mapped read-only while its MAC is checked.
struct MappedEntry {
    at: *mut std::ffi::c_void,
    len: usize,
}

impl MappedEntry {
    #[allow(unsafe_code)]
    fn new(file: &std::fs::File) -> Option<MappedEntry> {
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return Some(MappedEntry {
                at: std::ptr::null_mut(),
                len,
            });
        }
        // SAFETY: a fresh read-only private mapping, placed by the kernel;
        // only `bytes` reads it, and `drop` unmaps it.
        let at = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                file,
                0,
            )
        }
        .ok()?;
        Some(MappedEntry { at, len })
    }

    #[allow(unsafe_code)]
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` readable bytes are mapped at `at` until `drop`.
        unsafe { std::slice::from_raw_parts(self.at.cast::<u8>(), self.len) }
    }
}

impl Drop for MappedEntry {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping `new` made; no slice of it outlives `self`.
            let _ = unsafe { rustix::mm::munmap(self.at, self.len) };
        }
    }
}

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
    // Of two hosts starting at once, the second finds the first one's key.
    match crate::files::create_private(path, &key) {
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

#[cfg(test)]
mod tests {
    use super::Slots;
    use crate::ops::fs::{MutationOrder, TurnSlot};
    use futures::FutureExt;
    use std::sync::Arc;

    /// Every slot anyone may take is held by calls whose turns come later:
    /// a call without a turn, and a later turn, wait; the first in line gets
    /// the kept slot at once, and after it the next in line.
    #[tokio::test]
    async fn the_first_call_in_line_gets_a_slot_when_later_calls_hold_the_rest() {
        let slots = Slots::new(3);
        let order = Arc::new(MutationOrder::default());
        let mut turns = order.take(4).into_iter().map(|t| TurnSlot::new(Some(t)));
        let (first, second, third, fourth) = (
            turns.next().unwrap(),
            turns.next().unwrap(),
            turns.next().unwrap(),
            turns.next().unwrap(),
        );
        // A slot at once, or `None` when the call would wait.
        let now = |turn: &TurnSlot| {
            slots
                .acquire(|| turn.first_in_line())
                .now_or_never()
                .flatten()
        };
        let held = [now(&third).unwrap(), now(&fourth).unwrap()];
        assert!(now(&TurnSlot::default()).is_none());
        assert!(now(&second).is_none());
        let kept = now(&first);
        assert!(kept.is_some(), "the first in line waits on nobody");
        // It locked its file (its turn settled) and ended (its slot freed).
        first.settle();
        drop(kept);
        assert!(now(&second).is_some());
        drop(held);
    }
}

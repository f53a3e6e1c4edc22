//! Paths of the test guest components, built by this crate's build script.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

pub mod registry;

/// The fixtures directory (spec cases and test data).
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

/// Where `guest-tools/examples/build.sh` puts the example extensions.
pub const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/examples");

/// The cargo target directory the Rust projects of the author's-loop
/// tests share (tests/it/author.rs), so their dependencies build once.
pub const EXT_PROJECTS_TARGET: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../target/ext-projects");

/// A `sleep` duration no other process uses: the processes a command starts
/// with it can be found by their command line ([`live_with`]), in any PID
/// namespace.
pub fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{}.{}{n}", 400 + n, std::process::id())
}

/// How many live (not zombie) processes have `marker` as an argument.
pub fn live_with(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            cmdline
                .split(|&b| b == 0)
                .any(|arg| arg == marker.as_bytes())
                && !matches!(state, None | Some("Z") | Some("X"))
        })
        .count()
}

/// A deterministic pseudo-random sequence (xorshift), so that generated
/// trees are the same in every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

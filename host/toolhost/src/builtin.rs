//! The built-in tools, embedded in the binary by the build script.

/// One embedded built-in component.
pub(crate) struct BuiltinComponent {
    pub name: &'static str,
    pub bytes: &'static [u8],
    /// blake3 of `bytes`: the compile-cache key, computed at build time.
    pub hash: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// Pi's default active tools (spec §3.1).
pub const DEFAULT_ACTIVE_TOOLS: &[&str] = &["read", "bash", "edit", "write"];

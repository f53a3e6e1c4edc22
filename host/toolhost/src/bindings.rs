//! Host-side bindings of the `toolhost:tool` WIT package.
//!
//! Imports are synchronous: they are short, bounded operations (a stat, a
//! capped read) or channel sends. Exports are called asynchronously so that
//! epoch interruption can yield to the scheduler and a call can be dropped.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "tool-component",
    exports: { default: async },
});

pub(crate) use self::toolhost::tool::{cancellation, fs_read, fs_types, progress, types};

/// The WIT package version this host implements.
pub const WIT_PACKAGE: &str = "toolhost:tool@0.1.0";

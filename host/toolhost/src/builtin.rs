//! The built-in tools, embedded in the binary by the build script, and what
//! each is granted: exactly the Operations it needs, as Pi's per-tool
//! Operations (read-only tools read the workspace; write and edit also write
//! it; bash runs programs; grep and find search).

use crate::ops::fs::{FsRead, FsWrite};
use crate::ops::search::Search;
use crate::sandbox::Capabilities;
use std::sync::Arc;

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

/// The grants of the built-in component `name`.
pub(crate) fn capabilities(
    name: &str,
    fs_read: &Arc<dyn FsRead>,
    fs_write: &Arc<dyn FsWrite>,
    search: &Arc<dyn Search>,
) -> Capabilities {
    let read = Some(fs_read.clone());
    match name {
        "read" | "ls" => Capabilities {
            fs_read: read,
            ..Default::default()
        },
        "write" | "edit" => Capabilities {
            fs_read: read,
            fs_write: Some(fs_write.clone()),
            ..Default::default()
        },
        "grep" | "find" => Capabilities {
            search: Some(search.clone()),
            ..Default::default()
        },
        // bash: process (granted when its backend lands).
        _ => Capabilities::default(),
    }
}

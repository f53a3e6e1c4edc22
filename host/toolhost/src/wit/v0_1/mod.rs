//! `toolhost:tool@0.1.0`: the bindings generated from the package, the
//! conversions between its types and the Operations' own (one module per
//! interface), and the view of a call's state the Operations are served
//! through ([`OpsCtx`]).
//!
//! Imports are synchronous where they are short, bounded operations (a stat,
//! a capped read, a channel send) and asynchronous where they wait: for a
//! file's mutation lock, a child's output, or a search running on the
//! blocking pool. Exports are called asynchronously so that epoch
//! interruption can yield to the scheduler and a call can be dropped.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "tool-component",
    imports: {
        "toolhost:tool/fs-write.lock": async | trappable,
        "toolhost:tool/process.[method]child.next": async | trappable,
        "toolhost:tool/process.[method]child.next-within": async | trappable,
        "toolhost:tool/search.grep": async | trappable,
        "toolhost:tool/search.glob": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "toolhost:tool/fs-write.mutation-lock": crate::ops::fs::MutationLock,
        "toolhost:tool/process.child": crate::ops::process::Child,
    },
});

pub(crate) use self::toolhost::tool::{
    cancellation, fs_read, fs_types, fs_write, process, progress, search, tools, types,
};

/// The version of the package this module binds: the one place it is written.
macro_rules! version {
    () => {
        "0.1.0"
    };
}

/// The package's version, as it appears in an import's name.
pub const VERSION: &str = version!();

/// The WIT package version this host implements.
pub const WIT_PACKAGE: &str = concat!("toolhost:tool@", version!());

/// The interface a tool component exports.
pub(crate) const TOOL_EXPORT: &str = concat!("toolhost:tool/tool@", version!());

/// The interface a hook component exports.
pub(crate) const HOOK_EXPORT: &str = concat!("toolhost:tool/hook@", version!());

/// Bindings of the `hook-component` world. Its imports are the same
/// interfaces as a tool's, served by the same host code.
pub mod hook_world {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "hook-component",
        exports: { default: async },
        with: {
            "toolhost:tool/types": super::toolhost::tool::types,
            "toolhost:tool/fs-types": super::toolhost::tool::fs_types,
            "toolhost:tool/progress": super::toolhost::tool::progress,
            "toolhost:tool/cancellation": super::toolhost::tool::cancellation,
            "toolhost:tool/fs-read": super::toolhost::tool::fs_read,
            "toolhost:tool/fs-write": super::toolhost::tool::fs_write,
            "toolhost:tool/process": super::toolhost::tool::process,
            "toolhost:tool/search": super::toolhost::tool::search,
            "toolhost:tool/tools": super::toolhost::tool::tools,
        },
    });

    pub(crate) use exports::toolhost::tool::hook;
}

pub mod interfaces;

mod fs_ops;
mod process_ops;
mod search_ops;
mod tools_ops;

use crate::message::{ContentBlock, ToolResult};
use crate::ops::Capabilities;
use crate::ops::usage::Usage;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{HasData, ResourceTable};

/// What the Operations' glue sees of a call: the capabilities its
/// component was granted, its cancellation, the record of what it used, and
/// its resource table. The
/// call's state lends it out ([`OpsView`]); nothing else of it is reachable
/// from here.
pub struct OpsCtx<'a> {
    pub caps: &'a Capabilities,
    pub cancel: &'a CancellationToken,
    /// Where the call's use of its capabilities is recorded.
    pub usage: &'a Usage,
    pub table: &'a mut ResourceTable,
}

/// A call's state that can lend its [`OpsCtx`].
pub trait OpsView: Send {
    fn ops(&mut self) -> OpsCtx<'_>;
}

/// The `HasData` of the Operations' interfaces: they are served by an
/// [`OpsCtx`].
pub(crate) struct HasOps;

impl HasData for HasOps {
    type Data<'a> = OpsCtx<'a>;
}

// ---------------------------------------------------------------------------
// What a component returns, into the host's message types, and back
// ---------------------------------------------------------------------------

/// A content block from a guest.
pub(crate) fn content_from_wit(block: types::ContentBlock) -> ContentBlock {
    match block {
        types::ContentBlock::Text(text) => ContentBlock::Text { text },
        types::ContentBlock::Image(img) => ContentBlock::Image {
            data: img.data,
            mime_type: img.mime_type,
        },
    }
}

/// A content block for a guest (a hook sees the result).
pub(crate) fn content_to_wit(block: &ContentBlock) -> types::ContentBlock {
    match block {
        ContentBlock::Text { text } => types::ContentBlock::Text(text.clone()),
        ContentBlock::Image { data, mime_type } => types::ContentBlock::Image(types::Image {
            data: data.clone(),
            mime_type: mime_type.clone(),
        }),
    }
}

/// A guest's result in host form; details that are not JSON fail the call.
pub(crate) fn result_from_wit(r: types::ToolResult) -> Result<ToolResult, String> {
    let details = match r.details.as_deref() {
        None => None,
        Some(text) => Some(
            serde_json::from_str(text)
                .map_err(|e| format!("The tool returned details that are not valid JSON: {e}"))?,
        ),
    };
    Ok(ToolResult {
        content: r.content.into_iter().map(content_from_wit).collect(),
        details,
        usage: None,
        added_tool_names: r.added_tool_names,
        terminate: r.terminate,
    })
}

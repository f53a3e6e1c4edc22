//! `toolhost:tool@0.3.0`, frozen in `wit/v0.3/`: its bindings, and what it
//! adds to 0.2.0: audio and embedded resources in results, and interfaces
//! of its own: `logging` (always linked) and `client` (granted), served in
//! `since_0_3/client_ops.rs`, and `session-processes` (granted), in
//! `since_0_3/session_ops.rs`.

bindings!(
    "../../wit/v0.3",
    "0.3.0",
    waits: [
        "toolhost:tool/client.request",
        "toolhost:tool/session-processes.read",
        "toolhost:tool/session-processes.write",
        "toolhost:tool/session-processes.stop"
    ],
    own: [
        logging = "toolhost:tool/logging",
        client = "toolhost:tool/client",
        session_processes = "toolhost:tool/session-processes"
    ]
);

// The glue, and what 0.3.0 added, are compiled once per version, on
// purpose (see `glue/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "../since_0_3/client_ops.rs"]
mod client_ops;
#[allow(clippy::duplicate_mod)]
#[path = "../since_0_3/content.rs"]
mod content;
#[allow(clippy::duplicate_mod)]
#[path = "../glue/mod.rs"]
mod glue;
#[allow(clippy::duplicate_mod)]
#[path = "../since_0_3/session_ops.rs"]
mod session_ops;
use content::{content_from_wit, content_to_wit};

use crate::store::CallState;
use crate::wit::HasOps;
use wasmtime::component::{HasSelf, Linker};

fn output_schema(d: &mut types::ToolDefinition) -> Option<String> {
    d.output_schema.take()
}

fn structured_content(r: &mut types::ToolResult) -> Option<String> {
    r.structured_content.take()
}

/// 0.3.0 results cannot be returned errors: a failing tool throws.
fn is_error(_: &types::ToolResult) -> bool {
    false
}

/// Link one of this version's own interfaces.
fn link_own(name: &str, linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    match name {
        "logging" => logging::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s),
        "client" => client::add_to_linker::<_, HasOps>(linker, ops_of),
        "session-processes" => session_processes::add_to_linker::<_, HasOps>(linker, ops_of),
        other => unreachable!("interface {other} has no glue in toolhost:tool@{VERSION}"),
    }
}

fn ops_of(state: &mut CallState) -> crate::wit::OpsCtx<'_> {
    crate::wit::OpsView::ops(state)
}

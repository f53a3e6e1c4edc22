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
#[path = "../glue/mod.rs"]
mod glue;
#[allow(clippy::duplicate_mod)]
#[path = "../since_0_3/records.rs"]
mod records;
#[allow(clippy::duplicate_mod)]
#[path = "../since_0_3/session_ops.rs"]
mod session_ops;
use records::{content_from_wit, content_to_wit, output_schema, structured_content};

use crate::store::CallState;
use wasmtime::component::Linker;

/// 0.3.0 results cannot be returned errors: a failing tool throws.
fn is_error(_: &types::ToolResult) -> bool {
    false
}

/// Link one of this version's own interfaces.
fn link_own(name: &str, linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    records::link_since_0_3(name, linker)
        .unwrap_or_else(|| unreachable!("interface {name} has no glue in toolhost:tool@{VERSION}"))
}

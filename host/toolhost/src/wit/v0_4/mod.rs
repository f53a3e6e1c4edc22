//! `toolhost:tool@0.4.0` (`wit/tool.wit`, what the SDK builds): its
//! bindings, and what it adds to 0.3.0: a result may be a returned error
//! (`is-error`, keeping its details), `host-info` (always linked) tells
//! a component the host's Pi profile ([`crate::PiProfile`]), and
//! `call-tools` (granted) lets it call other tools, in `call_tools_ops.rs`.

bindings!(
    "../../wit",
    "0.4.0",
    waits: [
        "toolhost:tool/client.request",
        "toolhost:tool/session-processes.read",
        "toolhost:tool/session-processes.write",
        "toolhost:tool/session-processes.stop",
        "toolhost:tool/call-tools.execute"
    ],
    own: [
        logging = "toolhost:tool/logging",
        host_info = "toolhost:tool/host-info",
        client = "toolhost:tool/client",
        session_processes = "toolhost:tool/session-processes",
        call_tools = "toolhost:tool/call-tools"
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

mod call_tools_ops;
use records::{content_from_wit, content_to_wit, output_schema, structured_content};

use crate::store::CallState;
use crate::wit::HasOps;
use wasmtime::component::{HasSelf, Linker};

fn is_error(r: &types::ToolResult) -> bool {
    r.is_error
}

impl host_info::Host for CallState {
    fn pi_profile(&mut self) -> wasmtime::Result<String> {
        Ok(self.pi.as_str().to_string())
    }
}

/// Link one of this version's own interfaces.
fn link_own(name: &str, linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    match name {
        "host-info" => host_info::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s),
        "call-tools" => call_tools::add_to_linker::<_, HasOps>(linker, records::ops_of),
        other => records::link_since_0_3(other, linker).unwrap_or_else(|| {
            unreachable!("interface {other} has no glue in toolhost:tool@{VERSION}")
        }),
    }
}

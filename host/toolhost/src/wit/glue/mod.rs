//! The glue between the package's interfaces and the host, written once, on
//! the bindings of the newest version (`wit/tool.wit`).
//!
//! Every interface but `types` and `progress` has had one shape since the
//! version that added it (`interfaces::tests` checks the frozen WIT files),
//! so one implementation serves every version: an older version's bindings
//! take these modules through `bindgen!`'s `with:` (the keys name the
//! interfaces without a version, which matches each package's own), and
//! [`link`] registers an interface under the name a component of that
//! version imports (`toolhost:tool/fs-read@0.1.0`). wasmtime checks the
//! shapes structurally when it links, so a version whose interface differed
//! would fail there, not at a call.
//!
//! Each Operation's glue is a narrow view of the call's state ([`OpsCtx`])
//! that converts arguments, calls the Operation's backend trait and converts
//! the result back (`fs_ops`, `process_ops`, `search_ops`, `tools_ops`,
//! `session_ops`, `client_ops`, `call_tools_ops`). What differs per version
//! (the records a tool's definition, result and content blocks are made of,
//! and so `types` and `progress`) is [`crate::wit::Version`]'s.

mod call_tools_ops;
mod client_ops;
mod fs_ops;
mod process_ops;
mod records;
mod search_ops;
mod session_ops;
mod tools_ops;

use crate::store::CallState;
use crate::tape::{Asked, taped_now};
use crate::wit::{HasOps, OpsCtx, OpsView};
use wasmtime::component::{HasSelf, Linker};

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "tool-component",
    imports: {
        "toolhost:tool/fs-read.stat": async | trappable,
        "toolhost:tool/fs-read.read-file": async | trappable,
        "toolhost:tool/fs-read.list-dir": async | trappable,
        "toolhost:tool/fs-write.write-file": async | trappable,
        "toolhost:tool/fs-write.append-file": async | trappable,
        "toolhost:tool/fs-write.create-dir-all": async | trappable,
        "toolhost:tool/fs-write.access": async | trappable,
        "toolhost:tool/fs-write.lock": async | trappable,
        "toolhost:tool/process.spawn": async | trappable,
        "toolhost:tool/process.[method]child.next": async | trappable,
        "toolhost:tool/process.[method]child.next-within": async | trappable,
        "toolhost:tool/search.grep": async | trappable,
        "toolhost:tool/search.glob": async | trappable,
        "toolhost:tool/client.request": async | trappable,
        "toolhost:tool/session-processes.start": async | trappable,
        "toolhost:tool/session-processes.read": async | trappable,
        "toolhost:tool/session-processes.write": async | trappable,
        "toolhost:tool/session-processes.stop": async | trappable,
        "toolhost:tool/call-tools.execute": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "toolhost:tool/fs-write.mutation-lock": crate::ops::fs::MutationLock,
        "toolhost:tool/process.child": crate::ops::process::Child,
    },
});

/// Each version serves `progress` with its own blocks (`Version`); these
/// bindings are the benchmark suite's baseline.
#[cfg(feature = "bench-internals")]
pub use self::toolhost::tool::progress;
pub use self::toolhost::tool::{
    call_tools, cancellation, client, fs_read, fs_types, fs_write, host_info, logging, process,
    search, session_processes, tools, types,
};
pub(crate) use records::{Block, Definition, Result as ToolResult};

fn ops_of(state: &mut CallState) -> OpsCtx<'_> {
    state.ops()
}

fn call(state: &mut CallState) -> &mut CallState {
    state
}

/// Link interface `name` (not `types` or `progress`, which are each
/// version's) under the name a component of `version` imports.
pub(super) fn link(
    name: &str,
    version: &str,
    linker: &mut Linker<CallState>,
) -> wasmtime::Result<()> {
    let mut linker = linker.instance(&format!("toolhost:tool/{name}@{version}"))?;
    let inst = &mut linker;
    match name {
        "cancellation" => cancellation::add_to_linker_instance::<_, HasSelf<CallState>>(inst, call),
        "logging" => logging::add_to_linker_instance::<_, HasSelf<CallState>>(inst, call),
        "host-info" => host_info::add_to_linker_instance::<_, HasSelf<CallState>>(inst, call),
        "fs-types" => fs_types::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "fs-read" => fs_read::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "fs-write" => fs_write::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "process" => process::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "search" => search::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "tools" => tools::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "client" => client::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "session-processes" => session_processes::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        "call-tools" => call_tools::add_to_linker_instance::<_, HasOps>(inst, ops_of),
        other => unreachable!("interface {other} has no glue"),
    }
}

impl cancellation::Host for CallState {
    fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        let cancel = &self.signals.cancel;
        let tape = self
            .signals
            .tape
            .get()
            .map(|t| (t.as_ref(), Asked::Cancelled));
        taped_now(tape, || cancel.is_cancelled())
    }
}

impl host_info::Host for CallState {
    fn pi_profile(&mut self) -> wasmtime::Result<String> {
        Ok(self.pi.as_str().to_string())
    }
}

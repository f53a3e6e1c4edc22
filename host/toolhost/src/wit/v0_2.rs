//! `toolhost:tool@0.2.0`, frozen in `wit/v0.2/`: 0.1.0's content blocks,
//! an output schema on a tool's definition (the newest's record, unchanged
//! since) and structured content on its result. Its other interfaces are
//! the newest's, so it needs no bindings of its own.

use crate::message::ContentBlock;
use crate::wit::v0_1::PiBlock;
use crate::wit::{GuestResult, Version, WitBlock, WitResult, glue};
use wasmtime::component::{ComponentType, Lift};

pub(crate) struct V0_2;

impl Version for V0_2 {
    const VERSION: &'static str = "0.2.0";
    type Definition = glue::Definition;
    type Result = StructuredResult<PiBlock>;
    type Block = PiBlock;
}

/// `tool-result` of 0.2.0 and 0.3.0, with their blocks: 0.4.0's without
/// `is-error` (a failing tool of these versions throws).
#[derive(ComponentType, Lift)]
#[component(record)]
pub(crate) struct StructuredResult<B> {
    content: Vec<B>,
    details: Option<String>,
    terminate: bool,
    #[component(name = "added-tool-names")]
    added_tool_names: Vec<String>,
    #[component(name = "structured-content")]
    structured_content: Option<String>,
}

impl<B: WitBlock> WitResult for StructuredResult<B> {
    fn into_host(self) -> GuestResult {
        GuestResult {
            content: self
                .content
                .into_iter()
                .map(B::into_host)
                .collect::<Vec<ContentBlock>>(),
            details: self.details,
            terminate: self.terminate,
            added_tool_names: self.added_tool_names,
            structured_content: self.structured_content,
            is_error: false,
        }
    }
}

//! `call-tools` (since 0.4.0): a tool calls other tools through the host.
//! The glue converts at the edge; the call itself runs through the
//! pipeline the call was lent ([`crate::ops::nested`]).

use super::{Block, call_tools};
use crate::message::ToolResult;
use crate::tape::{Asked, taped, taped_now};
use crate::wit::OpsCtx;
use crate::wit::WitBlock;

impl call_tools::Host for OpsCtx<'_> {
    fn callable(&mut self) -> wasmtime::Result<Vec<String>> {
        let tape = self.on_tape(|_| Asked::CallableTools);
        let nested = self.nested;
        taped_now(tape, || nested.map(|n| n.callable()).unwrap_or_default())
    }

    async fn execute(
        &mut self,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<call_tools::NestedResult> {
        let Some(nested) = self.nested.cloned() else {
            // Pi's text where no session lends the calls (a component
            // inspected, a hook).
            let text = "Nested tool calls are not available in this context";
            return Ok(result(String::new(), ToolResult::error(text), true));
        };
        let tape = self.on_tape(|_| Asked::CallTool {
            name: name.clone(),
            arguments: arguments.clone(),
        });
        // The nested call on tape is its outcome: a replay does not run it.
        let out = taped(tape, nested.execute(name, arguments)).await?;
        Ok(result(out.tool_call_id, out.result, out.is_error))
    }
}

fn result(tool_call_id: String, r: ToolResult, is_error: bool) -> call_tools::NestedResult {
    call_tools::NestedResult {
        tool_call_id,
        content: r.content.into_iter().map(Block::from_host).collect(),
        details: r.details.map(|d| d.to_string()),
        structured_content: r.structured_content.map(|s| s.to_string()),
        is_error,
    }
}

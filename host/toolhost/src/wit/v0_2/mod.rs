//! `toolhost:tool@0.2.0` (`wit/tool.wit`): its bindings, and the fields it
//! adds to 0.1.0's records: a tool
//! definition may carry an output schema, a result structured content.

bindings!("../../wit", "0.2.0");

// The glue is compiled once per version, on purpose (see `glue/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "../glue/mod.rs"]
mod glue;

fn output_schema(d: &mut types::ToolDefinition) -> Option<String> {
    d.output_schema.take()
}

fn structured_content(r: &mut types::ToolResult) -> Option<String> {
    r.structured_content.take()
}

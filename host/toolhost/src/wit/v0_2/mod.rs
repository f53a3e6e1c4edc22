//! `toolhost:tool@0.2.0`, frozen in `wit/v0.2/`: its bindings, and the
//! fields it adds to 0.1.0's records: a tool definition may carry an output
//! schema, a result structured content.

bindings!("../../wit/v0.2", "0.2.0");

// The glue is compiled once per version, on purpose (see `glue/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "../glue/mod.rs"]
mod glue;

// Pi's content blocks, as every version before 0.3.0 has them.
#[allow(clippy::duplicate_mod)]
#[path = "../glue/pi_content.rs"]
mod pi_content;
use pi_content::{content_from_wit, content_to_wit, link_own};

fn output_schema(d: &mut types::ToolDefinition) -> Option<String> {
    d.output_schema.take()
}

fn structured_content(r: &mut types::ToolResult) -> Option<String> {
    r.structured_content.take()
}

/// 0.2.0 results cannot be returned errors: a failing tool throws.
fn is_error(_: &types::ToolResult) -> bool {
    false
}

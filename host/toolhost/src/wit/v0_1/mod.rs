//! `toolhost:tool@0.1.0`, frozen in `wit/v0.1/`: its bindings, and the
//! fields later versions add, which it does not have. Tools
//! of this version have no output schema and no structured content.

bindings!("../../wit/v0.1", "0.1.0");

// The glue is compiled once per version, on purpose (see `glue/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "../glue/mod.rs"]
mod glue;

// Pi's content blocks, as every version before 0.3.0 has them.
#[allow(clippy::duplicate_mod)]
#[path = "../glue/pi_content.rs"]
mod pi_content;
use pi_content::{content_from_wit, content_to_wit, link_own};

/// 0.1.0 definitions have no output schema.
fn output_schema(_: &mut types::ToolDefinition) -> Option<String> {
    None
}

/// 0.1.0 results have no structured content.
fn structured_content(_: &mut types::ToolResult) -> Option<String> {
    None
}

/// 0.1.0 results cannot be returned errors: a failing tool throws.
fn is_error(_: &types::ToolResult) -> bool {
    false
}

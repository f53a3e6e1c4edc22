//! Calling other tools through the host (`call-tools`, Pi 1.x's
//! `ctx.executeTool`; needs the `call-tools` grant naming each tool). A
//! nested call runs as the model's call of that tool would, under that
//! tool's grants; an unknown, ungranted, invalid or blocked call comes back
//! as an error result, never as a failure of this function.

use crate::bindings::toolhost::tool::call_tools;
use crate::bindings::toolhost::tool::types::ContentBlock;

pub use call_tools::{NestedResult, callable};

/// Run tool `name` with `arguments` and wait for its result.
pub fn call(name: &str, arguments: &serde_json::Value) -> NestedResult {
    call_tools::execute(name, &arguments.to_string())
}

/// The text blocks of a nested result, joined by newlines.
pub fn text(result: &NestedResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

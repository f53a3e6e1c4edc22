//! `toolhost:tool@0.1.0`, frozen in `wit/v0.1/`: its bindings, and the
//! conversions of the records it does not share with later versions. Tools
//! of this version have no output schema and no structured content.

bindings!("../../wit/v0.1");

/// The version of the package this module binds: the one place it is written.
macro_rules! version {
    () => {
        "0.1.0"
    };
}

/// The package's version, as it appears in an import's name.
pub const VERSION: &str = version!();

/// How the host serves this version.
pub(crate) const CONTRACT: super::Contract = super::Contract {
    version: VERSION,
    tool_export: concat!("toolhost:tool/tool@", version!()),
    hook_export: concat!("toolhost:tool/hook@", version!()),
    link: glue::link,
    exports: glue::exports,
};

// The glue is compiled once per version, on purpose (see `glue/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "../glue/mod.rs"]
mod glue;

use crate::wit::{GuestResult, ToolDecl};

fn definition_from_wit(d: types::ToolDefinition) -> ToolDecl {
    ToolDecl {
        name: d.name,
        label: d.label,
        description: d.description,
        parameters: d.parameters,
        prompt_snippet: d.prompt_snippet,
        prompt_guidelines: d.prompt_guidelines,
        sequential: glue::sequential(d.execution_mode),
        output_schema: None,
    }
}

fn result_from_wit(r: types::ToolResult) -> GuestResult {
    GuestResult {
        content: r.content.into_iter().map(glue::content_from_wit).collect(),
        details: r.details,
        terminate: r.terminate,
        added_tool_names: r.added_tool_names,
        structured_content: None,
    }
}

//! `toolhost:tool@0.1.0`, frozen in `wit/v0.1/`: Pi's records as they
//! were, with no output schema, no structured content and Pi's two content
//! blocks (text and images). Every interface it imports beyond `types` and
//! `progress` is the newest's (`glue`).

wasmtime::component::bindgen!({
    path: "../../wit/v0.1",
    world: "tool-component",
    // As the newest's, which the shared interfaces are.
    imports: { default: async | trappable },
    exports: { default: async },
    with: {
        "toolhost:tool/cancellation": crate::wit::glue::cancellation,
        "toolhost:tool/fs-types": crate::wit::glue::fs_types,
        "toolhost:tool/fs-read": crate::wit::glue::fs_read,
        "toolhost:tool/fs-write": crate::wit::glue::fs_write,
        "toolhost:tool/process": crate::wit::glue::process,
        "toolhost:tool/search": crate::wit::glue::search,
        "toolhost:tool/tools": crate::wit::glue::tools,
    },
});

use self::toolhost::tool::types;
use crate::message::ContentBlock;
use crate::wit::{GuestResult, ToolDecl, Version, WitBlock, WitDefinition, WitResult};

pub(crate) struct V0_1;

impl Version for V0_1 {
    const VERSION: &'static str = "0.1.0";
    type Definition = types::ToolDefinition;
    type Result = types::ToolResult;
    type Block = PiBlock;
}

/// Pi's two content blocks, as every version before 0.3.0 has them.
pub(crate) type PiBlock = types::ContentBlock;

impl WitBlock for PiBlock {
    fn into_host(self) -> ContentBlock {
        match self {
            PiBlock::Text(text) => ContentBlock::Text { text },
            PiBlock::Image(img) => ContentBlock::Image {
                data: img.data,
                mime_type: img.mime_type,
            },
        }
    }

    fn from_host(block: ContentBlock) -> PiBlock {
        match block {
            ContentBlock::Text { text } => PiBlock::Text(text),
            ContentBlock::Image { data, mime_type } => {
                PiBlock::Image(types::Image { data, mime_type })
            }
            other => PiBlock::Text(other.described().unwrap_or_default()),
        }
    }
}

impl WitDefinition for types::ToolDefinition {
    fn into_host(self) -> ToolDecl {
        ToolDecl {
            name: self.name,
            label: self.label,
            description: self.description,
            parameters: self.parameters,
            prompt_snippet: self.prompt_snippet,
            prompt_guidelines: self.prompt_guidelines,
            sequential: matches!(self.execution_mode, types::ExecutionMode::Sequential),
            output_schema: None,
        }
    }
}

/// A failing 0.1.0 tool throws: its results are never returned errors.
impl WitResult for types::ToolResult {
    fn into_host(self) -> GuestResult {
        GuestResult {
            content: self.content.into_iter().map(PiBlock::into_host).collect(),
            details: self.details,
            terminate: self.terminate,
            added_tool_names: self.added_tool_names,
            structured_content: None,
            is_error: false,
        }
    }
}

//! The newest version's records in the host's types: its content blocks
//! (text, images, audio and embedded resources, unchanged since 0.3.0), its
//! tool definition (unchanged since 0.2.0) and its result. Older versions
//! whose records have the same shape use these types (wasmtime checks a
//! record by its fields and a variant by its cases, not by where it was
//! generated).

use super::types;
use crate::message::{ContentBlock, EmbeddedResource};
use crate::wit::{GuestResult, ToolDecl, WitBlock, WitDefinition, WitResult};

/// A content block, as 0.3.0 and later have it.
pub(crate) type Block = types::ContentBlock;
/// A tool definition, as 0.2.0 and later have it.
pub(crate) type Definition = types::ToolDefinition;
/// A result, as 0.4.0 has it.
pub(crate) type Result = types::ToolResult;

impl WitBlock for Block {
    fn into_host(self) -> ContentBlock {
        match self {
            Block::Text(text) => ContentBlock::Text { text },
            Block::Image(img) => ContentBlock::Image {
                data: img.data,
                mime_type: img.mime_type,
            },
            Block::Audio(audio) => ContentBlock::Audio {
                data: audio.data,
                mime_type: audio.mime_type,
            },
            Block::Resource(r) => {
                let (text, blob) = match r.contents {
                    types::ResourceContents::Text(text) => (Some(text), None),
                    types::ResourceContents::Blob(blob) => (None, Some(blob)),
                };
                ContentBlock::Resource {
                    resource: EmbeddedResource {
                        uri: r.uri,
                        mime_type: r.mime_type,
                        text,
                        blob,
                    },
                }
            }
        }
    }

    fn from_host(block: ContentBlock) -> Block {
        match block {
            ContentBlock::Text { text } => Block::Text(text),
            ContentBlock::Image { data, mime_type } => {
                Block::Image(types::Image { data, mime_type })
            }
            ContentBlock::Audio { data, mime_type } => {
                Block::Audio(types::Audio { data, mime_type })
            }
            ContentBlock::Resource { resource } => {
                let contents = match (resource.text, resource.blob) {
                    (_, Some(blob)) => types::ResourceContents::Blob(blob),
                    (text, None) => types::ResourceContents::Text(text.unwrap_or_default()),
                };
                Block::Resource(types::EmbeddedResource {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    contents,
                })
            }
        }
    }
}

impl WitDefinition for Definition {
    fn into_host(self) -> ToolDecl {
        ToolDecl {
            name: self.name,
            label: self.label,
            description: self.description,
            parameters: self.parameters,
            prompt_snippet: self.prompt_snippet,
            prompt_guidelines: self.prompt_guidelines,
            sequential: matches!(self.execution_mode, types::ExecutionMode::Sequential),
            output_schema: self.output_schema,
        }
    }
}

impl WitResult for Result {
    fn into_host(self) -> GuestResult {
        GuestResult {
            content: self.content.into_iter().map(Block::into_host).collect(),
            details: self.details,
            terminate: self.terminate,
            added_tool_names: self.added_tool_names,
            structured_content: self.structured_content,
            is_error: self.is_error,
        }
    }
}

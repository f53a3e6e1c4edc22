//! What 0.3.0 and later versions share beyond the glue: their content
//! blocks (text, images, audio, embedded resources), the fields 0.2.0 added
//! to their records, and the linking of the interfaces 0.3.0 added
//! (`client_ops.rs`, `session_ops.rs`). Compiled in each of those version
//! modules (`#[path]`), like the glue.

use super::{client, logging, session_processes, types};
use crate::message::{ContentBlock, EmbeddedResource};
use crate::store::CallState;
use crate::wit::HasOps;
use wasmtime::component::{HasSelf, Linker};

pub(super) fn output_schema(d: &mut types::ToolDefinition) -> Option<String> {
    d.output_schema.take()
}

pub(super) fn structured_content(r: &mut types::ToolResult) -> Option<String> {
    r.structured_content.take()
}

/// Link one of the interfaces 0.3.0 added; `None` for another name.
pub(super) fn link_since_0_3(
    name: &str,
    linker: &mut Linker<CallState>,
) -> Option<wasmtime::Result<()>> {
    Some(match name {
        "logging" => logging::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s),
        "client" => client::add_to_linker::<_, HasOps>(linker, ops_of),
        "session-processes" => session_processes::add_to_linker::<_, HasOps>(linker, ops_of),
        _ => return None,
    })
}

pub(super) fn ops_of(state: &mut CallState) -> crate::wit::OpsCtx<'_> {
    crate::wit::OpsView::ops(state)
}

/// A content block from a guest.
pub(super) fn content_from_wit(block: types::ContentBlock) -> ContentBlock {
    match block {
        types::ContentBlock::Text(text) => ContentBlock::Text { text },
        types::ContentBlock::Image(img) => ContentBlock::Image {
            data: img.data,
            mime_type: img.mime_type,
        },
        types::ContentBlock::Audio(audio) => ContentBlock::Audio {
            data: audio.data,
            mime_type: audio.mime_type,
        },
        types::ContentBlock::Resource(r) => {
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

/// A content block for a guest.
pub(super) fn content_to_wit(block: ContentBlock) -> types::ContentBlock {
    match block {
        ContentBlock::Text { text } => types::ContentBlock::Text(text),
        ContentBlock::Image { data, mime_type } => {
            types::ContentBlock::Image(types::Image { data, mime_type })
        }
        ContentBlock::Audio { data, mime_type } => {
            types::ContentBlock::Audio(types::Audio { data, mime_type })
        }
        ContentBlock::Resource { resource } => {
            let contents = match (resource.text, resource.blob) {
                (_, Some(blob)) => types::ResourceContents::Blob(blob),
                (text, None) => types::ResourceContents::Text(text.unwrap_or_default()),
            };
            types::ContentBlock::Resource(types::EmbeddedResource {
                uri: resource.uri,
                mime_type: resource.mime_type,
                contents,
            })
        }
    }
}

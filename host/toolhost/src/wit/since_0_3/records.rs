//! The content blocks of 0.3.0 and later (text, images, audio, embedded
//! resources): compiled in each of those version modules (`#[path]`), like
//! the glue and the interfaces 0.3.0 added (`client_ops.rs`,
//! `session_ops.rs`).

use super::types;
use crate::message::{ContentBlock, EmbeddedResource};

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

//! The content blocks of the versions before 0.3.0, which have Pi's two
//! (text and images), and no interfaces of their own: compiled in each of
//! those version modules (`#[path]`), like the glue.

use super::types;
use crate::message::ContentBlock;

/// A content block from a guest.
pub(super) fn content_from_wit(block: types::ContentBlock) -> ContentBlock {
    match block {
        types::ContentBlock::Text(text) => ContentBlock::Text { text },
        types::ContentBlock::Image(img) => ContentBlock::Image {
            data: img.data,
            mime_type: img.mime_type,
        },
    }
}

/// A content block for a guest (a hook sees the result): a block this
/// version cannot carry (audio, a resource) is the line that describes it.
pub(super) fn content_to_wit(block: ContentBlock) -> types::ContentBlock {
    match block {
        ContentBlock::Text { text } => types::ContentBlock::Text(text),
        ContentBlock::Image { data, mime_type } => {
            types::ContentBlock::Image(types::Image { data, mime_type })
        }
        other => types::ContentBlock::Text(other.described().unwrap_or_default()),
    }
}

/// This version has no interfaces of its own.
pub(super) fn link_own(
    name: &str,
    _: &mut wasmtime::component::Linker<crate::store::CallState>,
) -> wasmtime::Result<()> {
    unreachable!(
        "interface {name} is not in toolhost:tool@{}",
        super::VERSION
    )
}

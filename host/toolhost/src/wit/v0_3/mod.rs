//! `toolhost:tool@0.3.0` (`wit/tool.wit`, what the SDK builds): its
//! bindings, and what it adds to 0.2.0: audio and embedded resources in
//! results, and interfaces of its own: `logging` (always linked) and
//! `client` (granted), served in `client_ops.rs`, and `session-processes`
//! (granted), in `session_ops.rs`.

bindings!(
    "../../wit",
    "0.3.0",
    waits: [
        "toolhost:tool/client.request",
        "toolhost:tool/session-processes.read",
        "toolhost:tool/session-processes.write",
        "toolhost:tool/session-processes.stop"
    ],
    own: [
        logging = "toolhost:tool/logging",
        client = "toolhost:tool/client",
        session_processes = "toolhost:tool/session-processes"
    ]
);

// The glue is compiled once per version, on purpose (see `glue/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "../glue/mod.rs"]
mod glue;

mod client_ops;
mod session_ops;

use crate::message::{ContentBlock, EmbeddedResource};
use crate::store::CallState;
use crate::wit::HasOps;
use wasmtime::component::{HasSelf, Linker};

fn output_schema(d: &mut types::ToolDefinition) -> Option<String> {
    d.output_schema.take()
}

fn structured_content(r: &mut types::ToolResult) -> Option<String> {
    r.structured_content.take()
}

/// Link one of this version's own interfaces.
fn link_own(name: &str, linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    match name {
        "logging" => logging::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s),
        "client" => client::add_to_linker::<_, HasOps>(linker, ops_of),
        "session-processes" => session_processes::add_to_linker::<_, HasOps>(linker, ops_of),
        other => unreachable!("interface {other} has no glue in toolhost:tool@{VERSION}"),
    }
}

fn ops_of(state: &mut CallState) -> crate::wit::OpsCtx<'_> {
    crate::wit::OpsView::ops(state)
}

/// A content block from a guest.
fn content_from_wit(block: types::ContentBlock) -> ContentBlock {
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
fn content_to_wit(block: ContentBlock) -> types::ContentBlock {
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

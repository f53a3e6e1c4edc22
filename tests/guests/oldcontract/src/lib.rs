//! A component of `toolhost:tool@0.3.0`, built from the frozen `wit/v0.3`
//! on wit-bindgen directly: a tool and a hook in one component, so that the
//! host's test sees every record of that version cross the boundary.
//!
//! Tool `blocks` reports progress with an audio block, logs a line, and
//! returns text, audio and an embedded resource with structured content.
//! The hook appends a text block naming how many blocks it saw to every
//! result of `blocks`, and blocks calls of `blocks` whose input has
//! `"refuse": true`.

wit_bindgen::generate!({
    inline: "
        package test:oldcontract;
        world oldcontract {
            include toolhost:tool/tool-component@0.3.0;
            export toolhost:tool/hook@0.3.0;
        }
    ",
    path: "../../../wit/v0.3",
    world: "test:oldcontract/oldcontract",
    generate_all,
});

use exports::toolhost::tool::hook::{self, ToolCallEvent, ToolCallVerdict, ToolResultEvent};
use exports::toolhost::tool::tool;
use toolhost::tool::types::{
    Audio, CallContext, ContentBlock, EmbeddedResource, ExecutionMode, PartialResult,
    ResourceContents, ToolDefinition, ToolResult,
};
use toolhost::tool::{logging, progress};

struct OldContract;

impl tool::Guest for OldContract {
    fn definitions() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "blocks".into(),
            label: "Blocks".into(),
            description: "Returns one block of each kind toolhost:tool@0.3.0 has.".into(),
            parameters: r#"{"type":"object","properties":{"refuse":{"type":"boolean"}}}"#.into(),
            prompt_snippet: None,
            prompt_guidelines: Vec::new(),
            execution_mode: ExecutionMode::Parallel,
            output_schema: Some(
                r#"{"type":"object","required":["blocks"],"properties":{"blocks":{"type":"integer"}}}"#
                    .into(),
            ),
        }]
    }

    fn prepare_arguments(_name: String, _arguments: String) -> Result<Option<String>, String> {
        Ok(None)
    }

    fn execute(
        _name: String,
        _context: CallContext,
        _arguments: String,
    ) -> Result<ToolResult, String> {
        progress::update(&PartialResult {
            content: vec![ContentBlock::Audio(Audio {
                data: "UklGRg==".into(),
                mime_type: "audio/wav".into(),
            })],
            details: Some(r#"{"stage":"recording"}"#.into()),
        });
        logging::log(logging::Level::Notice, Some("oldcontract"), "three blocks");
        Ok(ToolResult {
            content: vec![
                ContentBlock::Text("three blocks".into()),
                ContentBlock::Audio(Audio {
                    data: "UklGRg==".into(),
                    mime_type: "audio/wav".into(),
                }),
                ContentBlock::Resource(EmbeddedResource {
                    uri: "test://oldcontract/notes".into(),
                    mime_type: Some("text/plain".into()),
                    contents: ResourceContents::Text("notes".into()),
                }),
            ],
            details: Some(r#"{"version":"0.3.0"}"#.into()),
            terminate: false,
            added_tool_names: Vec::new(),
            structured_content: Some(r#"{"blocks":3}"#.into()),
        })
    }
}

impl hook::Guest for OldContract {
    fn on_tool_call(event: ToolCallEvent) -> Result<Option<ToolCallVerdict>, String> {
        let refuse = event.tool_name == "blocks" && event.input.contains(r#""refuse":true"#);
        Ok(refuse.then(|| ToolCallVerdict {
            block: true,
            reason: Some("oldcontract refuses".into()),
            terminate: false,
            input: None,
        }))
    }

    fn on_tool_result(event: ToolResultEvent) -> Result<Option<hook::ToolResultPatch>, String> {
        if event.tool_name != "blocks" {
            return Ok(None);
        }
        let mut content = event.content;
        let seen = format!("the 0.3.0 hook saw {} blocks", content.len());
        content.push(ContentBlock::Text(seen));
        Ok(Some(hook::ToolResultPatch {
            content: Some(content),
            details: None,
            is_error: None,
        }))
    }
}

export!(OldContract);

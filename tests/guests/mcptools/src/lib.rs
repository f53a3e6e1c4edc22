//! The tools the official MCP conformance suite's server scenarios call by
//! name, each doing what its scenario asks (the scenario's text is the
//! specification), for `tests/it/conformance.rs`. Only what the package's
//! contract can say is here: text, images, errors, progress and a JSON
//! Schema 2020-12 parameter schema. Tools that need audio or embedded
//! resources in a result, or that ask the client (sampling, elicitation,
//! roots, input-required rounds), wait for the contract to carry them; the
//! expected-failures file says so.

use std::time::Duration;
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Content, Context, Definition, Tool, ToolError, ToolOutput, tools};

/// No arguments.
const NONE: &str = r#"{"type":"object","properties":{}}"#;

/// `test_simple_text`: a fixed text.
struct SimpleText;
impl Tool for SimpleText {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_simple_text",
            "Simple text",
            "Returns a simple text (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(
            "This is a simple text response for testing.",
        ))
    }
}

/// A 1×1 red PNG, base64.
const RED_PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// `test_image_content`: one image block.
struct ImageContent;
impl Tool for ImageContent {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_image_content",
            "Image content",
            "Returns a 1x1 PNG image (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: vec![Content::Image {
                data: RED_PIXEL.into(),
                mime_type: "image/png".into(),
            }],
            ..Default::default()
        })
    }
}

/// `test_error_handling`: always an error result.
struct ErrorHandling;
impl Tool for ErrorHandling {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_error_handling",
            "Error handling",
            "Always fails (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(
            "This tool intentionally returns an error for testing",
        ))
    }
}

/// `test_tool_with_progress`: three updates about 50 ms apart, then a text.
struct WithProgress;
impl Tool for WithProgress {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_tool_with_progress",
            "With progress",
            "Reports progress three times (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        for step in [0, 50, 100] {
            ctx.check_cancelled()?;
            ctx.update(vec![Content::Text(format!("{step}/100"))], None);
            if step < 100 {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(ToolOutput::text("Progress reported"))
    }
}

/// `json_schema_2020_12_tool`: a parameter schema that uses the 2020-12
/// keywords (`$schema`, `$defs`, `$anchor`, `$ref`, `if`/`then`/`else`),
/// which must reach a client intact.
struct Schema202012;
const SCHEMA_2020_12: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}"##;
impl Tool for Schema202012 {
    fn definition(&self) -> Definition {
        Definition::new(
            "json_schema_2020_12_tool",
            "JSON Schema 2020-12",
            "Takes arguments described with JSON Schema 2020-12 (MCP conformance).",
            SCHEMA_2020_12,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

/// `test_trigger_tool_change`: changes the tool list, so that the server
/// announces it: `ls` joins the active tools, or leaves them if it is there
/// (no scenario calls `ls`).
struct TriggerToolChange;
impl Tool for TriggerToolChange {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_trigger_tool_change",
            "Trigger tool change",
            "Changes the list of tools (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        let mut active = tools::active();
        match active.iter().position(|name| name == "ls") {
            Some(i) => {
                active.remove(i);
            }
            None => active.push("ls".into()),
        }
        tools::set_active(&active);
        Ok(ToolOutput::text("The tool list changed."))
    }
}

/// `test_headers`: a parameter mirrored in an HTTP header (SEP-2243's
/// `x-mcp-header`), which the server checks against the argument.
struct Headers;
impl Tool for Headers {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_headers",
            "Headers",
            "Takes a region that clients mirror in the Mcp-Param-Region header (MCP conformance).",
            r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}"#,
        )
    }
    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "region: {}",
            args["region"].as_str().unwrap_or_default()
        )))
    }
}

toolhost_sdk::export_tools!(
    Headers,
    SimpleText,
    ImageContent,
    ErrorHandling,
    WithProgress,
    Schema202012,
    TriggerToolChange
);

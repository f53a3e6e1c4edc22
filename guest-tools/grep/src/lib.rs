//! The built-in `grep` tool (placeholder until its implementation lands).

use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};

struct Placeholder;

impl Tool for Placeholder {
    fn definition(&self) -> Definition {
        Definition::new("grep", "grep", "Not available yet.", r#"{"type":"object"}"#)
    }

    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new("The grep tool is not available yet."))
    }
}

toolhost_sdk::export_tools!(Placeholder);

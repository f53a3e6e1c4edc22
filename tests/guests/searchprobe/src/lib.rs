//! A guest that imports `search`: grep within its granted roots.

use toolhost_sdk::search::{GrepRequest, grep};
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};

struct Find;

impl Tool for Find {
    fn definition(&self) -> Definition {
        Definition::new(
            "seek",
            "Seek",
            "Lists files under a root that contain a pattern.",
            r#"{"type":"object","required":["pattern","root"],"properties":{"pattern":{"type":"string"},"root":{"type":"string"}}}"#,
        )
    }

    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let request = GrepRequest {
            pattern: args["pattern"].as_str().unwrap_or_default().to_string(),
            root: args["root"].as_str().unwrap_or_default().to_string(),
            glob: None,
            ignore_case: false,
            literal: true,
            context: 0,
            max_matches: 100,
            max_line_bytes: 1000,
        };
        let result = grep(&request).map_err(|e| ToolError::new(format!("{e:?}")))?;
        let files: Vec<String> = result.files.into_iter().map(|f| f.path).collect();
        Ok(ToolOutput::text(files.join("\n")))
    }
}

toolhost_sdk::export_tools!(Find);

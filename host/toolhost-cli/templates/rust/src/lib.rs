//! {{tool}}: count the lines and bytes of a text file in the workspace.
//!
//! A toolhost extension. `wit_bindgen::generate!` makes Rust bindings of
//! `wit/world.wit`: the host's Operations it imports (`fs-read`,
//! `cancellation`) as functions, the `tool` interface it exports as the
//! `Guest` trait below.

wit_bindgen::generate!({ path: "wit", world: "extension", generate_all });

use exports::toolhost::tool::tool::Guest;
use toolhost::tool::cancellation::is_cancelled;
use toolhost::tool::fs_read::read_file;
use toolhost::tool::fs_types::{ErrorCode, FsError};
use toolhost::tool::types::{CallContext, ContentBlock, ExecutionMode, ToolDefinition, ToolResult};

/// The JSON Schema of the arguments: the host validates (and coerces) every
/// call against it before `execute` sees the arguments.
const PARAMETERS: &str = r#"{
  "type": "object",
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the workspace or absolute"}
  }
}"#;

/// Bytes asked of the host per read (it returns at most 4 MiB).
const CHUNK: u64 = 1 << 20;

struct Extension;

impl Guest for Extension {
    fn definitions() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "{{tool}}".into(),
            label: "Line count".into(),
            description: "Count the lines and bytes of a text file in the workspace.".into(),
            parameters: PARAMETERS.into(),
            prompt_snippet: Some("Count the lines of a file".into()),
            prompt_guidelines: vec![],
            execution_mode: ExecutionMode::Parallel,
            output_schema: None,
        }]
    }

    fn prepare_arguments(_name: String, _arguments: String) -> Result<Option<String>, String> {
        Ok(None) // the arguments are used as the model wrote them
    }

    /// An `Err` is the tool failing: its text is the error result's.
    fn execute(_name: String, context: CallContext, arguments: String) -> Result<ToolResult, String> {
        let arguments: serde_json::Value =
            serde_json::from_str(&arguments).map_err(|e| e.to_string())?;
        let path = arguments["path"].as_str().ok_or("path must be a string")?;
        // The host's Operations take absolute paths, and refuse every one
        // outside the directories granted.
        let absolute = match path.starts_with('/') {
            true => path.to_string(),
            false => format!("{}/{path}", context.cwd),
        };
        let (mut bytes, mut lines, mut last) = (0u64, 0u64, b'\n');
        loop {
            if is_cancelled() {
                return Err("Operation aborted".into());
            }
            let chunk = read_file(&absolute, bytes, CHUNK).map_err(|e| failure(path, e))?;
            let Some(&end) = chunk.last() else { break };
            lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
            bytes += chunk.len() as u64;
            last = end;
        }
        if last != b'\n' {
            lines += 1; // the last line has no newline
        }
        Ok(text(format!("{path}: {lines} lines, {bytes} bytes")))
    }
}

/// What a failed read tells the model.
fn failure(path: &str, error: FsError) -> String {
    match error.code {
        ErrorCode::NotFound => format!("{path} does not exist"),
        _ => error.message,
    }
}

fn text(text: String) -> ToolResult {
    ToolResult {
        content: vec![ContentBlock::Text(text)],
        details: None,
        terminate: false,
        added_tool_names: vec![],
        structured_content: None,
        is_error: false,
    }
}

export!(Extension);

//! A guest that imports `process`: it runs a program (with the variables
//! `env` asks the host to set, in `cwd` or the workspace) and returns its
//! output. Without the grant it
//! is refused at load; with it, only granted programs run.

use toolhost_sdk::process::{ChildEvent, Command, ExitStatus, spawn};
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};

struct Run;

impl Tool for Run {
    fn definition(&self) -> Definition {
        Definition::new(
            "run",
            "Run",
            "Runs a program in the workspace and returns its output.",
            r#"{"type":"object","required":["program"],"properties":{"program":{"type":"string"},"args":{"type":"array","items":{"type":"string"}},"env":{"type":"object","additionalProperties":{"type":"string"}},"cwd":{"type":"string"}}}"#,
        )
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let command = Command {
            program: args["program"].as_str().unwrap_or_default().to_string(),
            args: args["args"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            cwd: args["cwd"].as_str().unwrap_or(&ctx.cwd).to_string(),
            env: args["env"]
                .as_object()
                .map(|vars| {
                    vars.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default(),
            timeout_ms: Some(10_000),
        };
        let child = spawn(&command).map_err(|e| ToolError::new(e.message))?;
        let mut output = Vec::new();
        loop {
            match child.next() {
                ChildEvent::Output(bytes) => output.extend(bytes),
                ChildEvent::Exit(ExitStatus::Code(code)) => {
                    let text = String::from_utf8_lossy(&output);
                    return Ok(ToolOutput::text(format!("exit {code}: {text}")));
                }
                ChildEvent::Exit(other) => {
                    return Err(ToolError::new(format!("stopped: {other:?}")));
                }
            }
        }
    }
}

toolhost_sdk::export_tools!(Run);

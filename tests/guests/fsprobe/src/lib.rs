//! A guest that imports `fs-read`: loaded without the grant, it must be refused.

use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput, fs};

struct Probe;

impl Tool for Probe {
    fn definition(&self) -> Definition {
        Definition::new(
            "probe",
            "probe",
            "Reads the first bytes of a path.",
            r#"{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}"#,
        )
    }

    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let path = args["path"].as_str().unwrap_or_default();
        let bytes = fs::read_chunk(path, 0, 64).map_err(|e| ToolError::new(e.message))?;
        Ok(ToolOutput::text(String::from_utf8_lossy(&bytes)))
    }
}

toolhost_sdk::export_tools!(Probe);

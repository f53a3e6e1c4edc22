//! A one-tool extension for the benchmarks (`host/toolhost/benches/suite`),
//! shaped like a small third-party tool: a schema with two properties, an
//! answer at once.
//!
//! The warm-start benchmark loads twenty copies of it as different
//! extensions. It makes each copy distinct by rewriting the tool's name in
//! the component's bytes: [`NAME`] is a marker of fixed length that appears
//! nowhere else, so `benchtool_00` can become `benchtool_07` without moving
//! a byte.

use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};

/// The tool's name; the benchmark patches the two digits.
const NAME: &str = "benchtool_00";

struct Bench;

impl Tool for Bench {
    fn definition(&self) -> Definition {
        Definition::new(
            NAME,
            "Bench",
            "Answers at once with the text it is given.",
            r#"{"type":"object","properties":{"text":{"type":"string"},"repeat":{"type":"integer"}}}"#,
        )
    }

    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let text = args["text"].as_str().unwrap_or("done");
        let repeat = args["repeat"].as_u64().unwrap_or(1).min(1000) as usize;
        Ok(ToolOutput::text(text.repeat(repeat)))
    }
}

toolhost_sdk::export_tools!(Bench);

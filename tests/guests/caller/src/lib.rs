//! A guest that calls other tools through the host (`call-tools`): each
//! call's nested results, in order, as its text and details.

use toolhost_sdk::serde_json::{Value, json};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput, calls};

struct Delegate;

impl Tool for Delegate {
    fn definition(&self) -> Definition {
        Definition::new(
            "delegate",
            "Delegate",
            "Calls each tool of `calls` ({name, arguments}) in turn through the host.",
            r#"{"type":"object","required":["calls"],"properties":{"calls":{"type":"array","items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"arguments":{}}}}}}"#,
        )
    }

    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let mut texts = Vec::new();
        let mut results = Vec::new();
        for call in args["calls"].as_array().into_iter().flatten() {
            let name = call["name"].as_str().unwrap_or_default();
            let arguments = call.get("arguments").cloned().unwrap_or(json!({}));
            let out = calls::call(name, &arguments);
            let text = calls::text(&out);
            results.push(json!({
                "id": out.tool_call_id,
                "isError": out.is_error,
                "text": text,
                "details": out.details.as_deref().map(|d| toolhost_sdk::serde_json::from_str::<Value>(d).unwrap_or(Value::Null)),
            }));
            texts.push(format!("{name}: {text}"));
        }
        Ok(ToolOutput::text(texts.join("\n"))
            .with_details(json!({"callable": calls::callable(), "results": results})))
    }
}

toolhost_sdk::export_tools!(Delegate);

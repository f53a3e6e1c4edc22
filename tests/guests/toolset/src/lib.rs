//! A guest that imports `tools`: it activates tools on demand (deferred
//! tool loading), so its results carry `addedToolNames`.

use toolhost_sdk::serde_json::Value;
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput, tools};

struct Activate;

impl Tool for Activate {
    fn definition(&self) -> Definition {
        Definition::new(
            "activate",
            "Activate",
            "Makes more tools available; with replace, sets exactly these.",
            r#"{"type":"object","required":["names"],"properties":{"names":{"type":"array","items":{"type":"string"}},"replace":{"type":"boolean"}}}"#,
        )
    }

    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let names: Vec<String> = args["names"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut next = if args["replace"].as_bool().unwrap_or(false) {
            Vec::new()
        } else {
            tools::active()
        };
        next.extend(names);
        tools::set_active(&next);
        Ok(ToolOutput::text(format!(
            "active: {}",
            tools::active().join(", ")
        )))
    }
}

toolhost_sdk::export_tools!(Activate);

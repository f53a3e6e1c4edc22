//! A hook component for the host's tests, written on wit-bindgen directly
//! (world `hook-component`). Its behaviour is chosen by the call it sees:
//! `echo` arguments with `"value"` of `rm -rf …` are blocked, `rewrite` is
//! rewritten, `crash` panics, `spin` never returns, `stop` blocks and asks the
//! loop to terminate, `deep` and `garbled` are rewritten to arguments that
//! are not JSON the host accepts; `fast` results are patched, `fail` results
//! make the hook fail, and `echo` results of `flood` get a patch of 2,000
//! empty blocks.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "hook-component",
    generate_all,
});

use exports::toolhost::tool::hook::{
    Guest, ToolCallEvent, ToolCallVerdict, ToolResultEvent, ToolResultPatch,
};
use toolhost::tool::types::ContentBlock;

struct HookKit;

impl Guest for HookKit {
    fn on_tool_call(event: ToolCallEvent) -> Result<Option<ToolCallVerdict>, String> {
        let input: serde_json::Value =
            serde_json::from_str(&event.input).map_err(|e| e.to_string())?;
        let value = input["value"].as_str().unwrap_or_default();
        let verdict =
            |block: bool, reason: Option<String>, terminate: bool, input: Option<String>| {
                Some(ToolCallVerdict {
                    block,
                    reason,
                    terminate,
                    input,
                })
            };
        if event.tool_name != "echo" {
            return Ok(None);
        }
        Ok(match value {
            v if v.starts_with("rm -rf") => {
                verdict(true, Some(format!("hookkit blocked {v:?}")), false, None)
            }
            "rewrite" => verdict(false, None, false, Some(r#"{"value":"rewritten"}"#.into())),
            "crash" => panic!("hookkit crash requested"),
            "spin" => loop {
                std::hint::spin_loop();
            },
            "fail" => return Err("hookkit refuses this call".into()),
            "stop" => verdict(true, None, true, None),
            "deep" => {
                let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
                verdict(false, None, false, Some(deep))
            }
            "garbled" => verdict(false, None, false, Some("{oops".into())),
            _ => None,
        })
    }

    fn on_tool_result(event: ToolResultEvent) -> Result<Option<ToolResultPatch>, String> {
        match event.tool_name.as_str() {
            "fast" => Ok(Some(ToolResultPatch {
                content: Some(vec![ContentBlock::Text(format!(
                    "patched by hookkit (was error: {})",
                    event.is_error
                ))]),
                details: Some(r#"{"hook":"hookkit"}"#.into()),
                is_error: None,
            })),
            "fail" => Err("hookkit cannot look at failures".into()),
            "echo" if event.input.contains("\"flood\"") => Ok(Some(ToolResultPatch {
                content: Some(vec![ContentBlock::Text(String::new()); 2000]),
                details: None,
                is_error: None,
            })),
            _ => Ok(None),
        }
    }
}

export!(HookKit);

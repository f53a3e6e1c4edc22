//! `toolhost list --format` against the providers' documented tool shapes
//! (JSON Schemas in fixtures/provider-tools/), and `toolhost prompt` against
//! Pi's own system-prompt builder (fixtures/pi-system-prompt.json).

use crate::support::*;
use serde_json::{Value, json};
use toolhost::{ExecutionMode, ToolDefinition, formats};

fn schema(name: &str) -> jsonschema::Validator {
    let path = format!(
        "{}/provider-tools/{name}.schema.json",
        toolhost_tests::FIXTURES
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every violation of `instance`, as `path: message` lines.
fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[track_caller]
fn list_as(ws: &Workspace, format: &str) -> Value {
    json_ok(&toolhost(
        ws,
        &[
            "--all-tools",
            "--extension",
            toolhost_tests::TESTKIT,
            "list",
            "--format",
            format,
        ],
        None,
    ))
}

#[test]
fn openai_and_anthropic_formats_match_the_documented_tool_shapes() {
    let ws = Workspace::new();
    for (format, name_at) in [("openai", "/function/name"), ("anthropic", "/name")] {
        let listed = list_as(&ws, format);
        let names = strings_at(&listed, name_at);
        let tools = listed.as_array().unwrap();
        let validator = schema(format);
        assert!(
            names.contains(&"read") && names.contains(&"slow"),
            "{format}: {names:?}"
        );
        for tool in tools {
            assert_eq!(violations(&validator, tool), Vec::<String>::new(), "{tool}");
        }
    }
    // The fixtures reject what the other provider expects, so passing them
    // means something.
    let openai = list_as(&ws, "openai")[0].clone();
    let anthropic = list_as(&ws, "anthropic")[0].clone();
    assert!(!violations(&schema("openai"), &anthropic).is_empty());
    assert!(!violations(&schema("anthropic"), &openai).is_empty());
    let mut bad_name = anthropic.clone();
    bad_name["name"] = json!("read file");
    assert!(!violations(&schema("anthropic"), &bad_name).is_empty());

    let read = &openai["function"];
    assert_eq!(read["name"], "read");
    assert!(
        read["description"]
            .as_str()
            .unwrap()
            .starts_with("Read the contents of a file.")
    );
    assert_eq!(read["parameters"]["required"], json!(["path"]));
    assert_eq!(anthropic["input_schema"], read["parameters"]);
}

#[test]
fn the_mcp_format_is_a_tools_list_result_with_hints_for_built_ins_only() {
    let ws = Workspace::new();
    let result = list_as(&ws, "mcp");
    assert_eq!(
        violations(&schema("mcp"), &result),
        Vec::<String>::new(),
        "{result}"
    );
    let tool = |name: &str| named(&result["tools"], name).clone();
    for name in ["read", "ls"] {
        assert_eq!(tool(name)["annotations"], json!({"readOnlyHint": true}));
    }
    assert_eq!(
        tool("write")["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true})
    );
    let slow = tool("slow");
    assert_eq!(slow["title"], "Slow");
    assert_eq!(slow.get("annotations"), None);
}

#[test]
fn the_json_format_lists_the_active_definitions_in_order() {
    let ws = Workspace::new();
    let out = toolhost(
        &ws,
        &[
            "--extension",
            toolhost_tests::TESTKIT,
            "--tools",
            "slow,read",
            "list",
            "--format",
            "json",
        ],
        None,
    );
    let tools = json_ok(&out);
    let names = strings_at(&tools, "/name");
    assert_eq!(names, ["slow", "read"]);
    assert_eq!(tools[1]["label"], "read");
    assert_eq!(tools[1]["promptSnippet"], "Read file contents");

    let out = toolhost(&ws, &["list", "--format", "gemini"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "unknown tool format \"gemini\": expected one of json, openai, anthropic, mcp"
        )
    );
}

/// Pi's inputs, as recorded in the fixture, as toolhost definitions.
fn definitions(tools: &Value) -> Vec<ToolDefinition> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| ToolDefinition {
            name: t["name"].as_str().unwrap().into(),
            label: t["name"].as_str().unwrap().into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            prompt_snippet: t["promptSnippet"].as_str().map(Into::into),
            prompt_guidelines: t["promptGuidelines"]
                .as_array()
                .map(|g| g.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                .unwrap_or_default(),
            execution_mode: ExecutionMode::Parallel,
            output_schema: None,
        })
        .collect()
}

#[test]
fn the_prompt_section_is_pis_byte_for_byte() {
    let path = format!("{}/pi-system-prompt.json", toolhost_tests::FIXTURES);
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 5);
    for case in cases {
        assert_eq!(
            formats::system_prompt_section(&definitions(&case["tools"])),
            case["section"].as_str().unwrap(),
            "case {}",
            case["name"]
        );
    }
}

#[test]
fn toolhost_prompt_prints_the_section_for_the_active_tools() {
    let ws = Workspace::new();
    let out = toolhost(&ws, &["--tools", "read,ls,write", "prompt"], None);
    assert_eq!(
        stdout_ok(out),
        "Available tools:\n\
         - read: Read file contents\n\
         - ls: List directory contents\n\
         - write: Create or overwrite files\n\
         \n\
         In addition to the tools above, you may have access to other custom tools depending on the project.\n\
         \n\
         Guidelines:\n\
         - Use read to examine files instead of cat or sed.\n\
         - Use write only for new files or complete rewrites.\n\
         - Be concise in your responses\n\
         - Show file paths clearly when working with files\n"
    );
    // bash without grep, find or ls: Pi's file-operations guideline comes first.
    let out = toolhost(&ws, &["--tools", "read,bash", "prompt"], None);
    let text = String::from_utf8(out.stdout).unwrap();
    let guidelines = text.split("Guidelines:\n").nth(1).unwrap();
    assert!(
        guidelines.starts_with(
            "- Use bash for file operations like ls, rg, find\n\
             - Use read to examine files instead of cat or sed.\n"
        ),
        "{text}"
    );
}

/// Under `--pi 1.6` the section is Pi 1.6.0's `<tools>` and `<rules>`, as
/// its `buildSystemPrompt` rendered them for the same tools
/// (`fixtures/pi-1.6/tools.json`, recorded by `scripts/pi-record`).
#[test]
fn the_prompt_section_is_pi_1_6s_under_its_profile() {
    let fixture = pi_1_6_tools();
    let ws = Workspace::new();
    for (prompt, tools) in [
        ("defaultTools", "read,bash,edit,write"),
        ("allSevenTools", "read,bash,edit,write,grep,find,ls"),
    ] {
        // docs/spec.md §3.4, as built: toolhost sets no PI_* variable, so
        // bash carries no guideline pointing at them (under every profile).
        let whole = fixture["systemPrompt"][prompt]
            .as_str()
            .unwrap()
            .replace(PI_VARIABLES, "");
        let start = whole.find("<tools>").unwrap();
        let end = whole.find("</rules>").unwrap() + "</rules>".len();
        let out = toolhost(&ws, &["--pi", "1.6", "--tools", tools, "prompt"], None);
        assert_eq!(
            stdout_ok(out),
            format!("{}\n", &whole[start..end]),
            "{prompt}"
        );
    }
}

/// Under `--pi 1.6` each built-in declares what Pi 1.6.0's declares: its
/// description, parameters (their descriptions too), snippet and guidelines
/// (`fixtures/pi-1.6/tools.json`).
#[test]
fn the_built_ins_are_declared_as_pi_1_6_declares_them_under_its_profile() {
    let fixture = pi_1_6_tools();
    let ws = Workspace::new();
    let out = toolhost(&ws, &["--pi", "1.6", "--all-tools", "list", "--json"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = fixture["tools"].as_object().unwrap();
    assert_eq!(tools.len(), 7);
    for (name, pi) in tools {
        let ours = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == *name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        for key in [
            "description",
            "parameters",
            "promptSnippet",
            "promptGuidelines",
        ] {
            let mut want = pi["definition"][key].clone();
            if key == "promptGuidelines" && name == "bash" {
                // No PI_* variables, so not Pi's guideline about them.
                assert_eq!(want, json!([PI_VARIABLES.trim_start_matches("\n- ")]));
                want = Value::Null;
            }
            assert_eq!(ours[key], want, "{name}: {key}");
        }
        // Only bash's output schema is an object (MCP's outputSchema); read's
        // is a string or an image, which toolhost does not declare.
        let output = pi["definition"]
            .get("outputSchema")
            .filter(|_| name == "bash");
        assert_eq!(ours.get("outputSchema"), output, "{name}: outputSchema");
    }
}

/// Pi's bash guideline about its `PI_*` variables, as a line of `<rules>`.
const PI_VARIABLES: &str =
    "\n- You can inspect PI_* environment variables for current model and session details.";

/// Pi 1.6.0's tools as `scripts/pi-record` recorded them.
fn pi_1_6_tools() -> Value {
    let path = format!("{}/pi-1.6/tools.json", toolhost_tests::FIXTURES);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

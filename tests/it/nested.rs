//! Nested tool calls (`call-tools`, Pi 1.x's `executeTool`, issue 41): a
//! tool calls other tools through the host. Each nested call runs the
//! pipeline as the model's call would (validation, hooks, rules, the called
//! tool's own grants), its audit line names the call that made it, and the
//! grant names every tool a component may call: nothing widens.

use crate::audit::{by_id, entries};
use crate::support::*;
use serde_json::{Value, json};

/// A workspace holding `a.txt` (`alpha`), the `caller` test guest to load,
/// and where the audit log goes.
fn with_caller() -> (Workspace, String, std::path::PathBuf) {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    let ext = ws.copy_in("caller.wasm", toolhost_tests::CALLER);
    let log = ws.config_home().join("audit.jsonl");
    (ws, ext, log)
}

/// `delegate` (the `caller` test guest, among the extensions `exts`)
/// making `calls` as call `c1`, audited to `log`: its result.
fn delegate(ws: &Workspace, exts: &[&str], log: &std::path::Path, calls: Value) -> Value {
    let batch = json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "delegate", "arguments": {"calls": calls}},
    ]});
    run(ws, exts, log, batch)["toolResults"][0].clone()
}

/// `toolhost run` of `batch` with the extensions `exts`, audited to `log`:
/// its last line (the turn's end, with the result messages).
fn run(ws: &Workspace, exts: &[&str], log: &std::path::Path, batch: Value) -> Value {
    let mut args: Vec<&str> = exts.iter().flat_map(|e| ["--extension", *e]).collect();
    args.extend(["--audit", log.to_str().unwrap(), "run", "--json", "-"]);
    let out = toolhost(ws, &args, Some(&batch.to_string()));
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    serde_json::from_str(&last).unwrap()
}

#[test]
fn a_nested_call_is_confined_as_the_models_and_audited_under_its_parent() {
    let (ws, ext, log) = with_caller();

    // Without the grant the component does not load.
    let out = toolhost(&ws, &["--extension", &ext, "list"], None);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("[extensions.caller] call-tools = [\"read\"]"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    user_policy(
        &ws,
        "[extensions.caller]\ncall-tools = [\"read\", \"ls\"]\n",
    );
    let result = delegate(
        &ws,
        &[&ext],
        &log,
        json!([
            {"name": "read", "arguments": {"path": "a.txt"}},
            // read's own confinement, as for the model.
            {"name": "read", "arguments": {"path": "/etc/passwd"}},
            // The pipeline: validation in Pi's words.
            {"name": "read", "arguments": {}},
            // Not named by the grant: refused, whatever bash may do.
            {"name": "bash", "arguments": {"command": "cat /etc/passwd"}},
            {"name": "write", "arguments": {"path": "b.txt", "content": "x"}},
            // Granted but not a tool the model may call now.
            {"name": "ls", "arguments": {}},
        ]),
    );
    assert_eq!(result["isError"], false, "{result}");
    let details = &result["details"];
    // ls is granted but not active: nothing it may call now but read.
    assert_eq!(details["callable"], json!(["read"]));
    let results = details["results"].as_array().unwrap();
    let ids: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["c1/1", "c1/2", "c1/3", "c1/4", "c1/5", "c1/6"]);
    let texts: Vec<&str> = results
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts[0], "alpha\n");
    assert_eq!(texts[1], "Path is outside the workspace: /etc/passwd");
    assert!(
        texts[2].starts_with("Validation failed for tool \"read\":\n  - path: must have required"),
        "{}",
        texts[2]
    );
    assert_eq!(
        texts[3],
        "Tool delegate may not call bash: its grant names read, ls (call-tools in toolhost.toml)"
    );
    assert!(
        texts[4].starts_with("Tool delegate may not call write:"),
        "{}",
        texts[4]
    );
    assert_eq!(texts[5], "Tool ls not found");
    let errors: Vec<bool> = results
        .iter()
        .map(|r| r["isError"].as_bool().unwrap())
        .collect();
    assert_eq!(errors, [false, true, true, true, true, true]);
    assert!(!ws.path.join("b.txt").exists(), "write never ran");

    // One line per call, each nested one naming its parent; the refused
    // ones blocked; the parent lists what it called.
    let entries = entries(&log);
    assert_eq!(entries.len(), 7, "{entries:#?}");
    let parent = by_id(&entries, "c1");
    assert!(parent.get("parentToolCallId").is_none());
    assert_eq!(
        parent["used"]["called"],
        json!([
            "read c1/1",
            "read c1/2",
            "read c1/3",
            "bash c1/4",
            "write c1/5",
            "ls c1/6"
        ])
    );
    for (id, tool, outcome) in [
        ("c1/1", "read", "ok"),
        ("c1/2", "read", "error"),
        ("c1/3", "read", "invalid"),
        ("c1/4", "bash", "blocked"),
        ("c1/5", "write", "blocked"),
        ("c1/6", "ls", "not-found"),
    ] {
        let line = by_id(&entries, id);
        assert_eq!(line["parentToolCallId"], "c1", "{id}");
        assert_eq!(line["tool"], tool, "{id}");
        assert_eq!(line["outcome"], outcome, "{id}: {line}");
    }
    assert!(
        by_id(&entries, "c1/2")["used"]["denied"][0]
            .as_str()
            .unwrap()
            .contains("/etc/passwd"),
        "read's refusal is on its own line"
    );
    // `toolhost audit` shows the nested lines beside their parent.
    let shown =
        String::from_utf8(toolhost(&ws, &["--audit", log.to_str().unwrap(), "audit"], None).stdout)
            .unwrap();
    assert!(shown.contains("c1/4") && shown.contains("bash"), "{shown}");
}

#[test]
fn the_hooks_and_the_permission_rules_see_nested_calls() {
    let (ws, ext, log) = with_caller();
    let testkit = ws.copy_in("testkit.wasm", toolhost_tests::TESTKIT);
    let hookkit = ws.copy_in("hookkit.wasm", toolhost_tests::HOOKKIT);
    user_policy(
        &ws,
        "[extensions.caller]\ncall-tools = [\"*\"]\n[extensions.hookkit]\nhooks = true\n\
         [permissions]\ndeny = [\"read\"]\n",
    );
    let result = delegate(
        &ws,
        &[&ext, &testkit, &hookkit],
        &log,
        json!([
            {"name": "read", "arguments": {"path": "a.txt"}},
            {"name": "delegate", "arguments": {"calls": []}},
            // hookkit blocks an `echo` of `rm -rf …`, and rewrites one of
            // `rewrite`, whoever calls it.
            {"name": "echo", "arguments": {"value": "rm -rf /"}},
            {"name": "echo", "arguments": {"value": "rewrite"}},
        ]),
    );
    let texts: Vec<&str> = strings_at(&result["details"]["results"], "/text");
    assert_eq!(texts[2], "hookkit blocked \"rm -rf /\"", "{result}");
    assert_eq!(texts[3], "echoed: {\"value\":\"rewritten\"}", "{result}");
    assert_eq!(by_id(&entries(&log), "c1/3")["outcome"], "blocked");
    let results = result["details"]["results"].as_array().unwrap();
    assert_eq!(results[0]["isError"], true, "{result}");
    assert!(
        results[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Permission denied: the rule deny = [\"read\"]"),
        "{result}"
    );
    // `*` reaches every active tool, itself too (one level down).
    assert_eq!(results[1]["isError"], false, "{result}");
    assert_eq!(results[1]["id"], "c1/2");

    // A tool calling itself for ever is stopped 8 calls down, each level
    // with its answer.
    let mut calls = json!([]);
    for _ in 0..10 {
        calls = json!([{"name": "delegate", "arguments": {"calls": calls}}]);
    }
    let result = delegate(&ws, &[&ext], &log, calls);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!(
            "{}Tool delegate may not call delegate: tool calls nest at most 8 deep",
            "delegate: ".repeat(9)
        ),
        "{result}"
    );
    let deepest = "c1/1/1/1/1/1/1/1/1/1";
    assert_eq!(by_id(&entries(&log), deepest)["outcome"], "blocked");
}

/// `[exposure]` decides what the model sees and what other tools reach: a
/// hidden tool is neither active nor callable, a callable one is called
/// without being declared, a model-only one is declared and never called.
#[test]
fn exposure_decides_what_the_model_sees_and_what_tools_may_call() {
    let (ws, ext, log) = with_caller();
    user_policy(
        &ws,
        "[extensions.caller]\ncall-tools = [\"*\"]\n\
         [exposure]\nls = \"callable\"\nbash = \"hidden\"\nread = \"model-only\"\n\"gr*\" = \"codemode\"\n",
    );
    let out = toolhost(&ws, &["--extension", &ext, "list", "--json"], None);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown = |name: &str| {
        let tool = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {listed}"));
        (tool["active"].clone(), tool.get("exposure").cloned())
    };
    assert_eq!(shown("read"), (json!(true), Some(json!("model-only"))));
    assert_eq!(shown("bash"), (json!(false), Some(json!("hidden"))));
    assert_eq!(shown("ls"), (json!(false), Some(json!("callable"))));
    assert_eq!(shown("grep"), (json!(false), Some(json!("callable"))));
    assert_eq!(shown("edit"), (json!(true), None));
    // Named explicitly, a callable tool is active; a hidden one never is.
    let out = toolhost(
        &ws,
        &["--extension", &ext, "--tools", "ls,bash", "list", "--json"],
        None,
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let active: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["active"] == true)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(active, ["ls"]);

    let result = delegate(
        &ws,
        &[&ext],
        &log,
        json!([
            {"name": "ls", "arguments": {}},
            {"name": "bash", "arguments": {"command": "true"}},
            {"name": "read", "arguments": {"path": "a.txt"}},
            {"name": "edit", "arguments": {"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "beta"}]}},
        ]),
    );
    let details = &result["details"];
    assert_eq!(
        details["callable"],
        json!(["edit", "write", "delegate", "ls", "grep"])
    );
    let texts: Vec<&str> = strings_at(&details["results"], "/text");
    assert!(texts[0].contains("a.txt"), "ls is callable: {texts:?}");
    assert_eq!(texts[1], "Tool bash not found", "hidden");
    assert_eq!(texts[2], "Tool read not found", "model-only");
    assert_eq!(texts[3], "Successfully replaced 1 block(s) in a.txt.");
    assert_eq!(
        std::fs::read_to_string(ws.path.join("a.txt")).unwrap(),
        "beta\n"
    );
}

/// A grant's `namespace` names an extension's tools `{namespace}__{name}`:
/// the model, the audit log and other tools know it by that name, the
/// component by its own.
#[test]
fn a_namespace_prefixes_an_extensions_tools() {
    let (ws, ext, log) = with_caller();
    user_policy(
        &ws,
        "[extensions.caller]\ncall-tools = [\"read\"]\nnamespace = \"agent\"\n",
    );
    let out = toolhost(&ws, &["--extension", &ext, "list", "--json"], None);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "agent__delegate" && t["active"] == true),
        "{listed}"
    );
    let batch = json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "agent__delegate",
         "arguments": {"calls": [{"name": "read", "arguments": {"path": "a.txt"}}]}},
        {"type": "toolCall", "id": "c2", "name": "delegate", "arguments": {"calls": []}},
    ]});
    let end = run(&ws, &[&ext], &log, batch);
    let results = &end["toolResults"];
    assert_eq!(results[0]["toolName"], "agent__delegate");
    assert_eq!(results[0]["content"][0]["text"], "read: alpha\n");
    assert_eq!(results[1]["content"][0]["text"], "Tool delegate not found");
    assert_eq!(by_id(&entries(&log), "c1")["tool"], "agent__delegate");

    // A namespace that makes no valid tool name is refused, naming why.
    user_policy(
        &ws,
        "[extensions.caller]\ncall-tools = [\"read\"]\nnamespace = \"a b\"\n",
    );
    let out = toolhost(&ws, &["--extension", &ext, "list"], None);
    assert_has(
        &out.stderr,
        "namespace \"a b\" makes tool delegate \"a b__delegate\"",
    );
}

/// The library's `HostBuilder::exposure` does what `[exposure]` does: the
/// active tools (what `serve` and MCP list) leave out a hidden tool and a
/// callable one until it is named, and each tool says how it is reached.
#[test]
fn the_library_sets_exposure_by_name_and_pattern() {
    use toolhost::{Exposure, Host};
    let ws = Workspace::new();
    let host = built(
        Host::builder()
            .workspace(&ws.path)
            .user_config_dir(None)
            .state_dir(Some(ws.state_dir()))
            .exposure("bash", Exposure::Hidden)
            .exposure("l*", Exposure::Callable)
            .exposure("ls", Exposure::ModelOnly),
    );
    assert_eq!(host.active_tools(), ["read", "edit", "write"]);
    let exposure = |name: &str| {
        host.tools()
            .into_iter()
            .find(|t| t.definition.name == name)
            .unwrap()
            .exposure
    };
    assert_eq!(exposure("bash"), Exposure::Hidden);
    assert_eq!(
        exposure("ls"),
        Exposure::ModelOnly,
        "a name wins over a pattern"
    );
    assert_eq!(exposure("read"), Exposure::Direct);
    host.set_active_tools(&["bash", "ls", "read"]);
    assert_eq!(host.active_tools(), ["ls", "read"]);
}

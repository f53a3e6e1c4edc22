//! `toolhost mcp` driven by the official MCP Python SDK (tests/mcp_client.py),
//! and the change signal behind `notifications/tools/list_changed`.

use crate::support::*;
use serde_json::{Value, json};
use std::process::Command;

/// A 1×1 PNG, so `read` returns an image block.
fn pixel_png() -> Vec<u8> {
    let mut bytes = Vec::new();
    image::RgbImage::from_pixel(1, 1, image::Rgb([255, 0, 0]))
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes
}

/// Python with the MCP SDK running `tests/{script}` on toolhost and `ws`
/// (with the workspace's configuration home); the caller adds the script's
/// own arguments.
fn mcp_script(ws: &Workspace, script: &str) -> Command {
    let mut cmd = Command::new(python_with_mcp());
    cmd.arg(repo_root().join("tests").join(script))
        .arg(toolhost_bin())
        .arg(&ws.path)
        .env("XDG_CONFIG_HOME", ws.config_home());
    cmd
}

/// Runs tests/mcp_client.py over `transport` in the SDK's connect `mode`, and
/// checks its summary: the revision it negotiated, and every step's outcome.
#[track_caller]
fn python_sdk_drives_toolhost_mcp(transport: &str, mode: &str) -> Value {
    let ws = Workspace::new();
    ws.write("a.txt", "Hello, MCP!\n");
    ws.write("pixel.png", pixel_png());
    // The testkit is given with --extension, from outside the workspace; the
    // server watches it, and the script removes and restores it to see
    // list_changed. The fs probe is what the script plants in the workspace.
    let kit = tempfile::tempdir().unwrap();
    let extension = kit.path().join("testkit.wasm");
    std::fs::copy(toolhost_tests::TESTKIT, &extension).unwrap();
    let summary = script_summary(
        mcp_script(&ws, "mcp_client.py")
            .arg(&extension)
            .arg(toolhost_tests::FSPROBE)
            .args([transport, mode]),
        &format!("mcp_client.py {transport} {mode}"),
    );
    let version = if mode == "legacy" {
        "2025-11-25"
    } else {
        "2026-07-28"
    };
    assert_eq!(summary["protocolVersion"], version);
    assert_eq!(summary["serverInfo"], "toolhost");
    assert_eq!(summary["listChanged"], 2);
    assert_eq!(summary["plantedRefused"], true);
    assert_eq!(summary["structured"], json!({"count": 3, "word": "three"}));
    assert_eq!(
        summary["schemaViolation"],
        "Tool typed returned structured content that does not match its output schema: \
         /count: \"three\" is not of type \"integer\""
    );
    assert_eq!(summary["progress"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        summary["bashProgress"].as_array().unwrap().last().unwrap(),
        "a\nb\n"
    );
    assert!(
        summary["cancelled"]
            .as_str()
            .unwrap()
            .ends_with("the tool answered: Operation aborted")
    );
    summary
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_on_stdio_with_the_handshake() {
    python_sdk_drives_toolhost_mcp("stdio", "legacy");
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_on_stdio_at_2026_07_28() {
    python_sdk_drives_toolhost_mcp("stdio", "auto");
}

/// Over HTTP the script also checks the listener's refusals and runs 32
/// clients at once.
#[track_caller]
fn python_sdk_drives_toolhost_mcp_over_http(mode: &str) {
    let summary = python_sdk_drives_toolhost_mcp("http", mode);
    let refusals = &summary["refusals"];
    assert_eq!(refusals["noToken"], 401);
    assert_eq!(refusals["wrongToken"], 401);
    assert_eq!(refusals["forbiddenOrigin"], 403);
    assert_eq!(refusals["foreignHost"], 403);
    assert_eq!(refusals["oversizedBody"], 413);
    assert_eq!(
        refusals["oversizedBodyError"],
        "Payload too large: request bodies are limited to 4194304 bytes; send a smaller request"
    );
    assert_eq!(refusals["servedAfterOversized"], true);
    assert_eq!(summary["concurrentClients"], 32);
    assert_eq!(summary["vanishedClientCancelled"], true);
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_over_http_with_the_handshake() {
    python_sdk_drives_toolhost_mcp_over_http("legacy");
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_over_http_at_2026_07_28() {
    python_sdk_drives_toolhost_mcp_over_http("auto");
}

#[test]
fn changing_the_active_set_marks_the_host_changed() {
    let ws = Workspace::new();
    let host = host(&ws);
    let mut changes = host.changes();
    assert!(!changes.has_changed().unwrap());
    host.set_active_tools(&host.active_tools());
    assert!(
        !changes.has_changed().unwrap(),
        "the same set is no change: no list_changed for it"
    );
    host.set_active_tools(&["read", "slow"]);
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();
    host.set_active_tools(&["slow", "read"]);
    assert!(
        changes.has_changed().unwrap(),
        "the order is part of the list"
    );
    changes.mark_unchanged();
    host.set_active_tools(&["slow", "read", "no-such-tool"]);
    assert!(!changes.has_changed().unwrap(), "unknown names are dropped");
}

/// A tool granted `tools` changes the active set in the middle of a
/// session: the client is told (`notifications/tools/list_changed`) and the
/// next `tools/list` shows the new set. The active set has one writer, the
/// same for the host and for tools.
#[test]
fn mcp_a_tool_changing_the_active_set_reaches_the_client_as_list_changed() {
    use std::io::{BufRead, BufReader, Write};
    let ws = Workspace::new();
    let ext = &ws.copy_in("toolset.wasm", toolhost_tests::TOOLSET);
    user_policy(&ws, "[extensions.toolset]\ntools = true\n");
    let mut child = ws
        .cli()
        .args(["--extension", ext, "mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    // A bound on a failure (a message that never comes), not a timing check.
    let next = || -> Value {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the server's next message");
        serde_json::from_str(&line).unwrap()
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "changes", "version": "1"}}}),
    );
    assert_eq!(next()["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = |reply: &Value| -> Vec<String> {
        reply["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let before = listed(&next());
    assert!(!before.contains(&"ls".to_string()), "{before:?}");

    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "activate", "arguments": {"names": ["ls"]}}}));
    // The notification and the call's answer, in either order.
    let (first, second) = (next(), next());
    let (notice, answer) = if first.get("id").is_some() {
        (second, first)
    } else {
        (first, second)
    };
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        notice,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    let after = listed(&next());
    assert_eq!(after, [before, vec!["ls".to_string()]].concat());
    drop(stdin);
    child.wait().unwrap();
}

/// `text` starts with `start` and contains each of `parts`.
#[track_caller]
fn assert_reads(text: &str, start: &str, parts: &[&str]) {
    assert!(text.starts_with(start), "{text}");
    for part in parts {
        assert!(text.contains(part), "{part:?} in {text}");
    }
}

/// Runs tests/mcp_ask.py in the SDK's connect `mode` against a user file
/// that asks about `echo`, and checks what every revision shares.
#[track_caller]
fn a_client_answers_questions(mode: &str) -> Value {
    let ws = Workspace::new();
    user_policy(&ws, "[permissions]\nask = [\"bash(echo *)\"]\n");
    let summary = script_summary(
        mcp_script(&ws, "mcp_ask.py").arg(mode),
        &format!("mcp_ask.py {mode}"),
    );
    assert_eq!(
        summary["texts"],
        json!([
            ["one\n", false],
            [
                "The person denied permission to run the command: echo two: not two",
                true
            ],
            [
                "The person denied permission to run the command: echo three.",
                true
            ],
        ])
    );
    let first = &summary["questions"][0];
    assert_reads(
        first["message"].as_str().unwrap(),
        "toolhost: permission needed\nTool bash (component built-in, blake3:",
        &["wants to run the command: echo one"],
    );
    assert_eq!(
        first["schema"]["properties"]["answer"]["enum"],
        json!(["once", "session", "deny"])
    );
    let (text, is_error) = (&summary["noPerson"][0], &summary["noPerson"][1]);
    assert_eq!(is_error, true);
    assert!(
        text.as_str()
            .unwrap()
            .contains("no person can be asked here"),
        "{text}"
    );
    summary
}

#[test]
fn a_2025_11_25_client_with_elicitation_answers_and_one_without_gets_the_refusal() {
    let summary = a_client_answers_questions("legacy");
    // The handshake tells the model what `toolhost prompt` would, and a
    // level can be set.
    assert_reads(
        summary["instructions"].as_str().unwrap_or_default(),
        "toolhost runs these tools in ",
        &["Available tools:\n- read: ", "Guidelines:\n"],
    );
    assert_eq!(summary["logLevelSet"], true);
    // A question open when its call was cancelled was withdrawn.
    assert_eq!(summary["withdrawn"], 1, "{summary}");
    // 13 silent seconds: a heartbeat (no message) before the output.
    assert_eq!(summary["silent"][0], "done");
    let beats = summary["silent"][1].as_array().unwrap();
    let heartbeat = beats.iter().position(Value::is_null);
    let output = beats.iter().position(|b| b == "done");
    assert!(
        heartbeat.is_some() && heartbeat < output,
        "a heartbeat came before the output: {beats:?}"
    );
}

#[test]
fn a_2026_07_28_client_answers_input_required_and_a_tampered_or_replayed_state_is_refused() {
    let summary = a_client_answers_questions("auto");
    let refusals = &summary["refusals"];
    let error = |i: usize| {
        refusals[i]["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        error(0).contains("requestState refused: it was not issued by this server, or was altered"),
        "{refusals}"
    );
    assert!(
        error(1).contains("requestState refused: it was issued for another call"),
        "{refusals}"
    );
    assert_eq!(
        refusals[2],
        json!({"result": "four\n"}),
        "the genuine retry runs"
    );
    assert!(
        error(3).contains("requestState refused: it was used already"),
        "{refusals}"
    );
}

/// Runs the Node client `script` of tests/ (given the path of `module`,
/// installed in target/conformance) against `toolhost mcp` over
/// `transport`, with the testkit, in a workspace whose a.txt says hello;
/// its summary, after the checks every client shares: the tools listed and
/// a.txt read.
fn node_client(script: &str, module: &str, transport: &str) -> Value {
    let (node, modules) = node_modules(module);
    let ws = Workspace::new();
    ws.write("a.txt", "Hello, Node!\n");
    let mut cmd = Command::new(node);
    cmd.arg(repo_root().join("tests").join(script))
        .arg(modules.join(module))
        .arg(transport)
        .env("XDG_CONFIG_HOME", ws.config_home());
    let server;
    if transport == "stdio" {
        cmd.arg(toolhost_bin())
            .arg(&ws.path)
            .arg(toolhost_tests::TESTKIT);
    } else {
        server = Listening::mcp(&ws, &[]);
        cmd.arg(&server.url).arg(server.token.as_deref().unwrap());
    }
    let summary = script_summary(&mut cmd, &format!("{script} {transport}"));
    let tools = summary["tools"].as_array().unwrap();
    for name in ["bash", "read", "fast"] {
        assert!(tools.contains(&json!(name)), "{name} in {tools:?}");
    }
    assert_eq!(summary["read"], json!(["Hello, Node!\n", false]));
    summary
}

/// Runs tests/pi_mcp_client.mjs (Pi 1.6's MCP client, on the Node 22 that
/// scripts/setup installs in target/conformance) over `transport`, and
/// checks what Pi's agent relies on.
fn pi_drives_toolhost_mcp(transport: &str) {
    let summary = node_client(
        "pi_mcp_client.mjs",
        "@earendil-works/pi-mcp/dist/index.js",
        transport,
    );
    assert_eq!(summary["serverName"], "toolhost");
    assert_eq!(summary["protocolVersion"], "2025-11-25");
    assert!(
        summary["resources"]
            .as_array()
            .unwrap()
            .contains(&json!("a.txt")),
        "{}",
        summary["resources"]
    );
    assert_eq!(summary["resourceText"], "Hello, Node!\n");
    assert_eq!(summary["prompt"], "Available tools:");
    let bash_error = &summary["bashError"];
    assert_eq!(bash_error[1], true, "{bash_error}");
    assert!(
        bash_error[0].as_str().unwrap().contains("broken"),
        "{bash_error}"
    );
    assert_eq!(summary["extension"][1], false, "{}", summary["extension"]);
    // 70 silent seconds under Pi's 60-second timeout: the heartbeats keep
    // it waiting, and the command's output arrives.
    assert_eq!(summary["silent"], json!(["done\n", false]));
    assert!(summary["silentSeconds"].as_u64().unwrap() >= 70);
    assert!(summary["silentProgress"].as_u64().unwrap() >= 5);
    assert!(
        summary["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("Available tools:")),
        "{}",
        summary["instructions"]
    );
}

#[test]
fn pis_own_mcp_client_drives_toolhost_mcp_on_stdio_through_a_70_second_silence() {
    pi_drives_toolhost_mcp("stdio");
}

#[test]
fn pis_own_mcp_client_drives_toolhost_mcp_over_http_through_a_70_second_silence() {
    pi_drives_toolhost_mcp("http");
}

/// Runs tests/ts_sdk_client.mjs (the TypeScript SDK v2 client) over
/// `transport`.
fn ts_sdk_drives_toolhost_mcp(transport: &str) -> Value {
    let summary = node_client(
        "ts_sdk_client.mjs",
        "@modelcontextprotocol/client/dist/index.mjs",
        transport,
    );
    assert_eq!(summary["bashError"][1], true, "{}", summary["bashError"]);
    assert_eq!(summary["extension"][1], false, "{}", summary["extension"]);
    assert!(
        summary["unknown"]
            .as_str()
            .unwrap()
            .contains("Unknown tool: no_such_tool"),
        "{}",
        summary["unknown"]
    );
    summary
}

#[test]
fn the_typescript_sdk_v2_client_drives_toolhost_mcp_on_stdio() {
    ts_sdk_drives_toolhost_mcp("stdio");
}

#[test]
fn the_typescript_sdk_v2_client_drives_toolhost_mcp_over_http() {
    ts_sdk_drives_toolhost_mcp("http");
}

/// `mcp-inspector --cli` (the MCP Inspector 2.12's command line) against
/// `target` (a command, or a URL with `header`), invoking `method` with
/// `more`: its JSON output, and whether it exited 0.
fn inspector(ws: &Workspace, target: &[&str], method: &str, more: &[&str]) -> (Value, bool) {
    let (node, modules) = node_modules(".bin/mcp-inspector");
    // Its own settings and caches go to a home of the test's, never the
    // developer's.
    let home = ws.config_home().join("inspector-home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(node)
        .arg(modules.join(".bin/mcp-inspector"))
        .arg("--cli")
        .args(target)
        .args(["--method", method])
        .args(more)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", ws.config_home())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The result, then on a failure a line of its own saying why; an error
    // the server answered goes to stderr, as JSON.
    let json = |text: &str| {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .next()
            .and_then(Result::ok)
    };
    let first: Value = json(&stdout)
        .or_else(|| json(stderr.trim()))
        .unwrap_or_else(|| panic!("no JSON from the inspector:\n{stdout}\n{stderr}"));
    (first, out.status.success())
}

/// [`inspector`]'s result of a call that must succeed.
#[track_caller]
fn inspector_ok(ws: &Workspace, target: &[&str], method: &str, more: &[&str]) -> Value {
    let (result, ok) = inspector(ws, target, method, more);
    assert!(ok, "{method}: {result}");
    result
}

/// Lists the tools and calls read, a failing bash and an extension tool
/// through the inspector's CLI.
fn inspector_drives_toolhost_mcp(ws: &Workspace, target: &[&str]) {
    let listed = inspector_ok(ws, target, "tools/list", &[]);
    let names: Vec<&str> = strings_at(&listed["tools"], "/name");
    for name in ["read", "bash", "fast"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let read = inspector_ok(
        ws,
        target,
        "tools/call",
        &["--tool-name", "read", "--tool-arg", "path=a.txt"],
    );
    assert_eq!(read["content"][0]["text"], "Hello, Inspector!\n");
    let (failed, ok) = inspector(
        ws,
        target,
        "tools/call",
        &["--tool-name", "bash", "--tool-arg", "command=exit 3"],
    );
    assert!(!ok, "an error result is a failure of the command: {failed}");
    assert_eq!(failed["isError"], true, "{failed}");
    let fast = inspector_ok(ws, target, "tools/call", &["--tool-name", "fast"]);
    assert_eq!(fast["isError"], false, "{fast}");
    // The workspace's files as resources, the tools' text as a prompt.
    let resources = inspector_ok(ws, target, "resources/list", &[]);
    let listed = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "a.txt")
        .unwrap_or_else(|| panic!("a.txt is not listed: {resources}"));
    let uri = listed["uri"].as_str().unwrap();
    let read = inspector_ok(ws, target, "resources/read", &["--uri", uri]);
    assert_eq!(read["contents"][0]["text"], "Hello, Inspector!\n");
    let (refused, ok) = inspector(
        ws,
        target,
        "resources/read",
        &["--uri", "file:///etc/passwd"],
    );
    assert!(!ok, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Resource refused: file:///etc/passwd is outside the workspace, the only place read may \
         open"
    );
    let prompt = inspector_ok(ws, target, "prompts/get", &["--prompt-name", "toolhost"]);
    let text = prompt["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(text.starts_with("Available tools:\n- read:"), "{text}");
}

#[test]
fn the_mcp_inspector_cli_drives_toolhost_mcp_on_stdio() {
    let ws = Workspace::new();
    ws.write("a.txt", "Hello, Inspector!\n");
    let bin = toolhost_bin();
    let bin = bin.to_str().unwrap();
    let target = [
        "-e",
        &format!("XDG_CONFIG_HOME={}", ws.config_home().display()),
        bin,
        "--workspace",
        ws.str(),
        "--extension",
        toolhost_tests::TESTKIT,
        "mcp",
    ];
    inspector_drives_toolhost_mcp(&ws, &target);
}

#[test]
fn the_mcp_inspector_cli_drives_toolhost_mcp_over_http() {
    let ws = Workspace::new();
    ws.write("a.txt", "Hello, Inspector!\n");
    let server = Listening::mcp(&ws, &[]);
    let header = format!("Authorization: Bearer {}", server.token.as_deref().unwrap());
    let target = [server.url.as_str(), "--header", &header];
    inspector_drives_toolhost_mcp(&ws, &target);
}

/// Runs tests/mcp_tool_asks.py in the SDK's connect `mode`: the conformance
/// tools, granted forms and roots but not sampling, ask a client that
/// answers through the SDK's callbacks.
#[track_caller]
fn a_tool_asks_the_client(mode: &str) -> Value {
    let ws = Workspace::new();
    user_policy(
        &ws,
        "[extensions.mcptools]\ntools = true\nclient = [\"elicitation\", \"roots\"]\n",
    );
    let summary = script_summary(
        mcp_script(&ws, "mcp_tool_asks.py")
            .arg(mode)
            .arg(toolhost_tests::MCPTOOLS),
        &format!("mcp_tool_asks.py {mode}"),
    );
    let calls = &summary["calls"];
    assert_eq!(
        calls["test_elicitation"],
        json!([
            r#"User response: action=accept, content={"name":"Ada","username":"ada","email":"ada@example.org"}"#,
            false
        ]),
        "{summary}"
    );
    assert_eq!(
        calls["test_input_required_result_list_roots"],
        json!(["Roots: file:///srv/project", false])
    );
    assert_eq!(
        calls["test_input_required_result_multi_round"],
        json!([
            r#"action=accept, content={"name":"Ada","username":"ada","email":"ada@example.org"}; action=accept, content={"color":"blue"}"#,
            false
        ])
    );
    // Not granted: refused in the host, and the client's model never asked.
    let (text, is_error) = (&calls["test_sampling"][0], &calls["test_sampling"][1]);
    assert_eq!(is_error, true);
    assert!(
        text.as_str().unwrap().contains(
            "asking the client for sampling is not granted; grant it in toolhost.toml: client = [\"sampling\"]"
        ),
        "{text}"
    );
    assert_eq!(summary["samplings"], json!([]));
    // A tool's form names the tool first, so that it cannot pass for
    // toolhost's own permission question.
    let forms = summary["forms"].as_array().unwrap();
    assert_eq!(
        forms[0]["message"], "Tool test_elicitation asks:\nWho are you?",
        "{forms:?}"
    );
    assert!(
        forms
            .iter()
            .all(|f| !f["message"].as_str().unwrap().starts_with("toolhost")),
        "{forms:?}"
    );
    assert_eq!(forms[0]["schema"]["required"], json!(["username", "email"]));
    assert_eq!(summary["rootsAsked"], 1);
    // The tool's log messages, under its name.
    let logs: Vec<(&str, &str)> = summary["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["logger"] == "test_tool_with_logging")
        .map(|l| (l["level"].as_str().unwrap(), l["data"].as_str().unwrap()))
        .collect();
    assert_eq!(
        logs,
        [
            ("info", "Tool execution started"),
            ("info", "Tool processing data"),
            ("info", "Tool execution completed")
        ],
        "{summary}"
    );
    summary
}

#[test]
fn a_tool_asks_a_2025_11_25_client_and_one_that_declared_nothing_gets_an_error_result() {
    let summary = a_tool_asks_the_client("legacy");
    // The request went to the client as it came: once per form.
    assert_eq!(summary["forms"].as_array().unwrap().len(), 3, "{summary}");
    let undeclared = &summary["undeclared"]["result"];
    assert_eq!(undeclared[1], true, "{summary}");
    assert!(
        undeclared[0]
            .as_str()
            .unwrap()
            .contains("the client cannot be asked for elicitation"),
        "{undeclared}"
    );
}

#[test]
fn a_tool_asks_a_2026_07_28_client_by_input_required_rounds_and_one_that_declared_nothing_gets_32021()
 {
    let summary = a_tool_asks_the_client("auto");
    // Each round asks what is not answered yet: the second round of
    // multi_round asks only its second form.
    let forms = summary["forms"].as_array().unwrap();
    assert_eq!(forms.len(), 3, "{forms:?}");
    let error = summary["undeclared"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("Missing required client capability"),
        "{summary}"
    );
}

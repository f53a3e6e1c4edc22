//! A tool asking the person's client (`toolhost:tool/client`, since 0.3.0)
//! through the library: an embedder's [`Client`] answers forms, its model
//! and its roots; what the grant does not name never reaches it; a call
//! without a client gets a clear error; the audit line says what was asked;
//! and a component that imports `client` without the grant is refused at
//! load. The MCP front end's clients are tested in `mcp.rs` and by the
//! conformance suite.

use crate::support::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use toolhost::client::{Answers, Client, ClientCaps, ClientRequest};
use toolhost::{Event, Host};

/// A client that declares everything, answers each kind of request with a
/// fixed answer, and records what it was asked.
#[derive(Default)]
struct Recording {
    asked: Mutex<Vec<(String, String, String, Value)>>,
}

impl Client for Recording {
    fn capabilities(&self) -> ClientCaps {
        ClientCaps {
            elicitation: true,
            sampling: true,
            roots: true,
        }
    }

    fn request<'a>(&'a self, tool: &'a str, requests: &'a [ClientRequest]) -> Answers<'a> {
        let mut asked = self.asked.lock().unwrap();
        let answers = requests
            .iter()
            .map(|r| {
                asked.push((
                    tool.to_string(),
                    r.key.clone(),
                    r.method.method().to_string(),
                    r.params.clone(),
                ));
                match r.method.name() {
                    "elicitation" => json!({"action": "accept", "content": {"name": "Ada"}}),
                    "sampling" => json!({
                        "role": "assistant",
                        "content": {"type": "text", "text": "Hello, Ada."},
                        "model": "test-model",
                    }),
                    _ => json!({"roots": [{"uri": "file:///srv/a", "name": "a"}]}),
                }
            })
            .collect();
        Box::pin(async move { Ok(answers) })
    }
}

fn mcptools(ws: &Workspace, client: &str) -> toolhost::HostBuilder {
    let policy = format!("[extensions.mcptools]\ntools = true\nclient = {client}\n");
    granted(ws, &policy).extensions(|e| e.load(toolhost_tests::MCPTOOLS))
}

/// A host of the MCP test tools, granted `client`, in a fresh workspace, and
/// a client that records what it is asked.
fn recorded_mcptools(client: &str) -> (Workspace, Host, Arc<Recording>) {
    let ws = Workspace::new();
    let host = built(mcptools(&ws, client));
    (ws, host, Arc::new(Recording::default()))
}

/// `name` called with `args` through `client`: its text and whether it is
/// an error.
fn ask(host: &Host, client: &Arc<Recording>, name: &str, args: Value) -> (String, bool) {
    let (text, is_error, _) = call_with(host, Some(client.clone()), name, args);
    (text, is_error)
}

fn call_with(
    host: &Host,
    client: Option<Arc<Recording>>,
    name: &str,
    args: Value,
) -> (String, bool, Vec<Event>) {
    let (sink, mut events) = tokio::sync::mpsc::unbounded_channel();
    let result = block(async {
        let call = host
            .call(tool_call("c1", name, args))
            .events(Arc::new(sink));
        match client {
            Some(client) => call.client(client).await,
            None => call.await,
        }
    });
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    (result.text(), result.is_error, seen)
}

#[test]
fn an_embedders_client_answers_a_tools_requests_within_its_grant() {
    let ws = Workspace::new();
    let log = ws.config_home().join("audit.jsonl");
    let host = built(mcptools(&ws, r#"["elicitation", "sampling", "roots"]"#).audit_log(&log));
    let client = Arc::new(Recording::default());

    // Three kinds at once, in one request: the client sees them in order,
    // under the tool's keys, named with the tool that asks.
    let (text, is_error) = ask(
        &host,
        &client,
        "test_input_required_result_multiple_inputs",
        json!({}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        r#"action=accept, content={"name":"Ada"}; Hello, Ada.; file:///srv/a"#
    );
    let asked = client.asked.lock().unwrap().clone();
    let keys: Vec<(&str, &str, &str)> = asked
        .iter()
        .map(|(tool, key, method, _)| (tool.as_str(), key.as_str(), method.as_str()))
        .collect();
    let tool = "test_input_required_result_multiple_inputs";
    assert_eq!(
        keys,
        [
            (tool, "user_name", "elicitation/create"),
            (tool, "greeting", "sampling/createMessage"),
            (tool, "client_roots", "roots/list"),
        ]
    );
    assert_eq!(asked[0].3["requestedSchema"]["required"], json!(["name"]));
    assert_eq!(
        asked[1].3,
        json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
            "maxTokens": 50,
        })
    );

    // Log messages are events of the call, in order, under the tool's name.
    let (_, _, events) = call_with(&host, None, "test_tool_with_logging", json!({}));
    let logs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionLog {
                tool_name,
                level,
                message,
                ..
            } => Some(format!("{tool_name} {level:?} {message}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [
            "test_tool_with_logging Info Tool execution started",
            "test_tool_with_logging Info Tool processing data",
            "test_tool_with_logging Info Tool execution completed"
        ]
    );

    // The audit line says what the call asked the client, and the answers
    // (written by the log's thread, which the host's end waits for).
    drop(host);
    let lines = std::fs::read_to_string(&log).unwrap();
    let asked: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|line| line["used"].get("client").cloned())
        .collect();
    assert_eq!(
        asked,
        [json!([
            "elicitation user_name: accept",
            "sampling greeting: answered",
            "roots client_roots: answered"
        ])],
        "{lines}"
    );
}

#[test]
fn what_the_grant_does_not_name_never_reaches_the_client_and_no_client_is_a_clear_error() {
    let (_ws, host, client) = recorded_mcptools(r#"["elicitation"]"#);
    // Sampling is not granted: refused in the host; the client is not asked.
    let (text, is_error) = ask(&host, &client, "test_sampling", json!({"prompt": "Say hi"}));
    assert!(is_error);
    assert!(
        text.contains("asking the client for sampling is not granted; grant it in toolhost.toml: client = [\"sampling\"]"),
        "{text}"
    );
    // Nor is a request that mixes a granted kind with one that is not.
    let (text, is_error) = ask(
        &host,
        &client,
        "test_input_required_result_multiple_inputs",
        json!({}),
    );
    assert!(
        is_error && text.contains("sampling is not granted"),
        "{text}"
    );
    assert!(client.asked.lock().unwrap().is_empty());

    // A call whose front end has no client: the tool is told so.
    let (text, is_error, _) = call_with(&host, None, "test_elicitation", json!({"message": "Hi"}));
    assert!(is_error);
    assert_has(
        &text,
        "the client cannot be asked for elicitation (it did not declare it, or this front end has no client)",
    );
}

#[test]
fn a_component_importing_client_without_the_grant_is_refused_at_load() {
    let ws = Workspace::new();
    user_policy(&ws, "[extensions.mcptools]\ntools = true\n");
    let out = toolhost(
        &ws,
        &["--extension", toolhost_tests::MCPTOOLS, "list", "--json"],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "imports toolhost:tool/client@0.4.0 (ask the person's client (forms, its model, its roots)), \
             which is not granted to it; grant it in toolhost.toml: [extensions.mcptools] client = \
             [\"elicitation\", \"sampling\", \"roots\"]"
        ),
        "{stderr}"
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(!listed.contains("test_elicitation"), "{listed}");
}

#[test]
fn a_tool_that_asks_in_a_loop_is_stopped_after_64_requests() {
    let (_ws, host, client) = recorded_mcptools(r#"["roots"]"#);
    let (text, is_error) = ask(&host, &client, "ask_in_a_loop", json!({"count": 1000}));
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "answered 64; then asking the client: this call asked the client 64 times, the most one call may"
    );
    assert_eq!(client.asked.lock().unwrap().len(), 64);
}

/// At a terminal, `toolhost call` fills in a tool's form with the person:
/// the tool's message, then a line per field (choices, defaults, what is
/// required), each answer checked against the field's type.
#[test]
fn a_person_at_the_terminal_fills_in_a_tools_form() {
    let ws = Workspace::new();
    user_policy(
        &ws,
        "[extensions.mcptools]\ntools = true\nclient = [\"elicitation\", \"roots\"]\n",
    );
    let args = [
        "--extension",
        toolhost_tests::MCPTOOLS,
        "call",
        "test_elicitation_sep1034_defaults",
        "{}",
        "--json",
    ];
    // Yes; the name as it is (its default); an age that is not a number,
    // then one; the rest as they are.
    let (code, out) = on_a_terminal_answering(
        &ws,
        &args,
        &[],
        " › ",
        &["y", "", "thirty", "31", "", "pending", "no"],
        50,
    );
    let out = String::from_utf8_lossy(&out);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("toolhost: Tool test_elicitation_sep1034_defaults asks:"),
        "{out}"
    );
    assert!(out.contains("age (integer; default 30) › "), "{out}");
    assert!(out.contains("toolhost: answer a whole number"), "{out}");
    assert!(
        out.contains("status (one of active, inactive, pending; default \"active\") › "),
        "{out}"
    );
    assert!(
        out.contains(
            r#"Elicitation completed: action=accept, content={\"name\":\"John Doe\",\"age\":31,\"score\":95.5,\"status\":\"pending\",\"verified\":false}"#
        ),
        "{out}"
    );
    // Roots: the terminal has none to give.
    let args = [
        "--extension",
        toolhost_tests::MCPTOOLS,
        "call",
        "test_input_required_result_list_roots",
        "{}",
    ];
    let (_, out) = on_a_terminal_answering(&ws, &args, &[], " › ", &[], 0);
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains("the client cannot be asked for roots"),
        "{out}"
    );
}

#[test]
fn a_recorded_call_that_asked_the_client_replays_without_one() {
    let ws = Workspace::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.rec");
    let all = r#"["elicitation", "sampling", "roots"]"#;
    let recording = toolhost::tape::RecordTo::new(&path, "test");
    let host = built(mcptools(&ws, all).record(recording));
    let client = Arc::new(Recording::default());
    let tool = "test_input_required_result_multiple_inputs";
    let asked = ask(&host, &client, tool, json!({}));
    assert_eq!(
        asked,
        (
            r#"action=accept, content={"name":"Ada"}; Hello, Ada.; file:///srv/a"#.to_string(),
            false
        )
    );
    assert!(host.tape_report().is_empty());
    drop(host);

    // Elsewhere, no client at all: the recorded answers, checked again.
    let tape = Arc::new(toolhost::tape::Recording::open(&path).unwrap());
    let elsewhere = Workspace::new();
    let replayer = built(mcptools(&elsewhere, all).replay(tape, Vec::new()));
    let (text, is_error, _) = call_with(&replayer, None, tool, json!({}));
    assert_eq!((text, is_error), asked);
    assert_eq!(replayer.tape_report(), Vec::<String>::new());
    assert_eq!(
        client.asked.lock().unwrap().len(),
        3,
        "asked once, when recorded"
    );
}

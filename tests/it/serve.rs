//! `toolhost serve`: JSON-RPC 2.0 over stdio, driven by the example Python
//! client and by a line-level client here.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long to wait for a line before calling the server stuck (a bound on a
/// failure, not a timing check).
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `toolhost serve` with the testkit loaded.
pub(crate) struct Server {
    pub(crate) child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl Server {
    /// `serve` on a new workspace whose user policy is `toml`.
    fn with_policy(toml: &str) -> (Workspace, Server) {
        let ws = Workspace::new();
        user_policy(&ws, toml);
        let server = Server::start(&ws, &[]);
        (ws, server)
    }

    pub(crate) fn start(ws: &Workspace, args: &[&str]) -> Server {
        let mut cli = ws.cli();
        cli.args(["--extension", toolhost_tests::TESTKIT])
            .args(args)
            .arg("serve");
        let mut child = spawn_piped(&mut cli, Stdio::inherit());
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.unwrap();
                let value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("serve wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// `tools/setActive` of `names`, as request `id`.
    pub(crate) fn set_active(&mut self, id: u64, names: &[&str]) {
        self.request(json!(id), "tools/setActive", json!({ "names": names }));
    }

    pub(crate) fn request(&mut self, id: Value, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&line.to_string());
    }

    #[track_caller]
    pub(crate) fn next(&self) -> Value {
        self.lines
            .recv_timeout(PATIENCE)
            .expect("toolhost serve wrote nothing more")
    }

    /// The next response (events of other requests are skipped).
    #[track_caller]
    pub(crate) fn response(&self) -> Value {
        loop {
            let line = self.next();
            if line.get("method").is_none() {
                return line;
            }
        }
    }

    /// Close stdin and wait: serve exits once the running batches answered.
    pub(crate) fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "toolhost serve exited with {status}");
        self.lines.try_iter().collect()
    }
}

pub(crate) fn batch(calls: Value) -> Value {
    json!({"role": "assistant", "stopReason": "toolUse", "content": calls})
}

#[test]
fn the_example_client_streams_a_parallel_batch_in_pi_order() {
    let ws = Workspace::new();
    // slow sleeps long enough that fast, started after it, ends first.
    let message = batch(json!([
        {"type": "toolCall", "id": "c1", "name": "slow", "arguments": {"ms": 2000}},
        {"type": "toolCall", "id": "c2", "name": "fast", "arguments": {}},
        {"type": "toolCall", "id": "c3", "name": "nope", "arguments": {}},
    ]));
    let file = ws.write("batch.json", message.to_string());
    let out = Command::new("python3")
        .arg(repo_root().join("examples/serve_client.py"))
        .arg("--toolhost")
        .arg(toolhost_bin())
        .arg(&file)
        .args([
            "--",
            "--workspace",
            ws.str(),
            "--extension",
            toolhost_tests::TESTKIT,
        ])
        .output()
        .expect("running python3 (the example client needs only the standard library)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "serve_client.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (result, events) = lines.split_last().unwrap();
    // Spec §2.3: starts in source order, ends in completion order (the unknown
    // tool at once), then the result messages in source order.
    assert_eq!(event_shape(events), REVERSE_FINISH_EVENTS);
    assert_eq!(events[3]["isError"], true);
    assert_eq!(
        events[3]["result"],
        json!({"content": [{"type": "text", "text": "Tool nope not found"}], "details": {}})
    );
    assert_eq!(events[0]["args"], json!({"ms": 2000}));
    assert_eq!(
        result_texts(&result["toolResults"]),
        [
            "slow done after 2000 ms",
            "fast done",
            "Tool nope not found"
        ]
    );
    assert_eq!(result["toolResults"][0]["role"], "toolResult");
    assert_eq!(result["terminate"], false);
    // The events' messages are the ones the response returns.
    assert_eq!(events[6]["message"], result["toolResults"][0]);
}

#[test]
fn malformed_input_gets_json_rpc_errors_naming_the_cause() {
    let ws = Workspace::new();
    let mut server = Server::start(&ws, &[]);
    let cases: &[(&str, Value, i64, &str)] = &[
        (
            "{\"jsonrpc\": \"2.0\", \"id\": 1,",
            Value::Null,
            -32700,
            "Parse error: EOF while parsing a value at line 1 column 27",
        ),
        (
            "[]",
            Value::Null,
            -32600,
            "Invalid request: JSON-RPC batches (arrays) are not supported; send one request object per line",
        ),
        (
            r#"{"id": 5, "method": "tools/list"}"#,
            json!(5),
            -32600,
            "Invalid request: \"jsonrpc\": \"2.0\" is missing",
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 6, "method": "tools/delete"}"#,
            json!(6),
            -32601,
            "Method not found: tools/delete (methods: tools/list, tools/prompt, tools/setActive, batch/run, batch/cancel)",
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 7, "method": "batch/run", "params": {}}"#,
            json!(7),
            -32602,
            "Invalid params for batch/run: \"message\" is missing: it must be the assistant message whose tool calls to run",
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 8, "method": "batch/run", "params": {"message": {"role": "user", "content": []}}}"#,
            json!(8),
            -32602,
            "Invalid params for batch/run: \"message\": expected role \"assistant\", got \"user\"",
        ),
        (
            r#"{"jsonrpc": "2.0", "id": "x", "method": "tools/list", "params": {"format": "gemini"}}"#,
            json!("x"),
            -32602,
            "Invalid params for tools/list: \"format\": unknown tool format \"gemini\": expected one of json, openai, anthropic, mcp",
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 9, "method": "tools/setActive", "params": {"names": "read"}}"#,
            json!(9),
            -32602,
            "Invalid params for tools/setActive: \"names\" must be an array of tool names",
        ),
    ];
    for (line, id, code, message) in cases {
        server.send(line);
        let reply = server.next();
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
            "for {line}"
        );
    }
    // A notification is never answered, not even with an error: the next line
    // is the answer to the request after it.
    server.send(r#"{"jsonrpc": "2.0", "method": "tools/delete"}"#);
    server.request(json!(10), "tools/list", json!({}));
    let reply = server.next();
    assert_eq!(reply["id"], 10);
    assert!(!reply["result"]["tools"].as_array().unwrap().is_empty());
    assert!(server.finish().is_empty());
}

#[test]
fn batches_run_concurrently_and_cancel_by_request_id() {
    let ws = Workspace::new();
    let mut server = Server::start(&ws, &[]);
    let long = batch(json!([
        {"type": "toolCall", "id": "long-1", "name": "slow", "arguments": {"ms": 600000}},
    ]));
    server.request(json!("long"), "batch/run", json!({"message": long}));
    let first = server.next();
    assert_eq!(first["method"], "batch/event");
    assert_eq!(first["params"]["id"], "long");
    assert_eq!(first["params"]["event"]["type"], "tool_execution_start");

    // While the ten-minute batch runs, another one completes.
    server.request(
        json!("long"),
        "batch/run",
        json!({"message": batch(json!([]))}),
    );
    assert_eq!(
        server.response()["error"]["message"],
        "Invalid request: id \"long\" is already used by a running batch"
    );
    let quick = batch(json!([
        {"type": "toolCall", "id": "q1", "name": "fast", "arguments": {}},
    ]));
    server.request(json!(2), "batch/run", json!({"message": quick}));
    let mut quick_events = Vec::new();
    let reply = loop {
        let line = server.next();
        if line["method"] == "batch/event" {
            assert_eq!(line["params"]["id"], 2, "the long batch is quiet");
            quick_events.push(line["params"]["event"].clone());
        } else {
            break line;
        }
    };
    assert_eq!(reply["id"], 2);
    assert_eq!(
        reply["result"]["toolResults"][0]["content"][0]["text"],
        "fast done"
    );
    assert_eq!(
        event_shape(&quick_events),
        [
            "tool_execution_start q1",
            "tool_execution_end q1",
            "message_start q1",
            "message_end q1"
        ]
    );

    server.request(json!(3), "batch/cancel", json!({"id": "missing"}));
    assert_eq!(server.response()["result"], json!({"cancelled": false}));
    server.request(json!(4), "batch/cancel", json!({"id": "long"}));
    let mut replies = [server.response(), server.response()];
    // The cancel is answered at once; the batch when its call has stopped.
    replies.sort_by_key(|r| r["id"].is_string());
    assert_eq!(replies[0]["id"], 4);
    assert_eq!(replies[0]["result"], json!({"cancelled": true}));
    assert_eq!(replies[1]["id"], "long");
    let aborted = &replies[1]["result"]["toolResults"][0];
    assert_eq!(aborted["content"][0]["text"], "Operation aborted");
    assert_eq!(aborted["isError"], true);
    assert_eq!(replies[1]["result"]["terminate"], false);
    assert!(server.finish().is_empty());
}

#[test]
fn tools_can_be_listed_in_each_format_and_the_active_set_replaced() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    let mut server = Server::start(&ws, &["--tools", "read,ls,slow"]);
    server.request(json!(1), "tools/list", json!({}));
    let tools = server.response()["result"]["tools"].clone();
    let names = strings_at(&tools, "/name");
    assert_eq!(names, ["read", "ls", "slow"]);
    assert_eq!(tools[0]["promptSnippet"], "Read file contents");
    assert_eq!(tools[2]["executionMode"], "parallel");

    for (format, name_of) in [
        ("openai", "/function/name"),
        ("anthropic", "/name"),
        ("mcp", "/name"),
    ] {
        server.request(json!(format), "tools/list", json!({"format": format}));
        let tools = server.response()["result"]["tools"].clone();
        let names = strings_at(&tools, name_of);
        assert_eq!(names, ["read", "ls", "slow"], "{format}");
    }

    server.set_active(2, &["ls", "nope", "read"]);
    assert_eq!(
        server.response()["result"],
        json!({"active": ["ls", "read"]})
    );
    server.request(json!(3), "tools/prompt", json!({}));
    let text = server.response()["result"]["text"].clone();
    assert_eq!(
        text,
        "Available tools:\n- ls: List directory contents\n- read: Read file contents\n\n\
         In addition to the tools above, you may have access to other custom tools depending on the project.\n\n\
         Guidelines:\n- Use read to examine files instead of cat or sed.\n\
         - Be concise in your responses\n- Show file paths clearly when working with files"
    );
    // slow is no longer callable; read still is.
    let message = batch(json!([
        {"type": "toolCall", "id": "a", "name": "slow", "arguments": {}},
        {"type": "toolCall", "id": "b", "name": "read", "arguments": {"path": "a.txt"}},
    ]));
    server.request(json!(4), "batch/run", json!({"message": message}));
    let results = server.response()["result"]["toolResults"].clone();
    assert_eq!(results[0]["content"][0]["text"], "Tool slow not found");
    assert_eq!(results[1]["content"][0]["text"], "alpha\n");
    server.finish();
}

#[test]
fn output_schemas_and_structured_content_reach_the_client() {
    // toolhost:tool@0.2.0 over JSON-RPC: the definition's outputSchema in
    // toolhost's and MCP's formats, the result message's structuredContent.
    let ws = Workspace::new();
    let mut server = Server::start(&ws, &["--tools", "typed"]);
    for format in ["json", "mcp"] {
        server.request(json!(format), "tools/list", json!({"format": format}));
        let tools = server.response()["result"]["tools"].clone();
        assert_eq!(
            tools[0]["outputSchema"]["required"],
            json!(["count"]),
            "{format}"
        );
    }
    let message = batch(json!([
        {"type": "toolCall", "id": "a", "name": "typed", "arguments": {"structured": {"count": 1}}},
        {"type": "toolCall", "id": "b", "name": "typed", "arguments": {"structured": {"word": "x"}}},
    ]));
    server.request(json!(1), "batch/run", json!({"message": message}));
    let results = server.response()["result"]["toolResults"].clone();
    assert_eq!(results[0]["structuredContent"], json!({"count": 1}));
    assert_eq!(results[0]["isError"], false);
    assert_eq!(results[1].get("structuredContent"), None);
    assert_eq!(results[1]["isError"], true);
    assert_eq!(
        results[1]["content"][0]["text"],
        "Tool typed returned structured content that does not match its output schema: /: \
         \"count\" is a required property"
    );
    server.finish();
}

#[test]
fn every_change_of_the_active_set_reaches_the_client_as_tools_changed() {
    let ws = Workspace::new();
    let toolset = ws.copy_in("toolset.wasm", toolhost_tests::TOOLSET);
    user_policy(&ws, "[extensions.toolset]\ntools = true\n");
    let mut server = Server::start(&ws, &["--extension", &toolset]);
    // The announcement and the response of request `id`, in either order.
    let changed = |server: &Server, id: u64| -> Value {
        let (mut active, mut answered) = (None, false);
        while active.is_none() || !answered {
            let line = server.next();
            if line["method"] == "tools/changed" {
                assert!(active.is_none(), "one change, one announcement: {line}");
                active = Some(line["params"]["active"].clone());
            } else if line["id"] == id {
                answered = true;
            }
        }
        active.unwrap()
    };
    // By a tool granted `tools`, in the middle of a batch.
    let message = batch(json!([
        {"type": "toolCall", "id": "a", "name": "activate",
         "arguments": {"names": ["ls", "activate"], "replace": true}},
    ]));
    server.request(json!(1), "batch/run", json!({"message": message}));
    assert_eq!(changed(&server, 1), json!(["ls", "activate"]));
    // By the client.
    server.set_active(2, &["read", "ls"]);
    assert_eq!(changed(&server, 2), json!(["read", "ls"]));
    // Setting the same set again changes nothing, and says nothing.
    server.set_active(3, &["read", "ls"]);
    server.request(json!(4), "tools/list", json!({}));
    let rest = server.finish();
    assert!(
        rest.iter().all(|line| line["method"] != "tools/changed"),
        "{rest:?}"
    );
}

/// The next line that is a request of the server to the client.
#[track_caller]
fn next_question(server: &Server) -> Value {
    loop {
        let line = server.next();
        if line["method"] == "permission/ask" {
            return line;
        }
        assert!(
            line.get("result").is_none(),
            "a response came before the question: {line}"
        );
    }
}

#[test]
fn a_client_with_a_person_answers_questions_and_one_without_gets_the_refusal() {
    let (_ws, mut server) = Server::with_policy("[permissions]\nask = [\"bash(echo *)\"]\n");
    let call = |id: &str, command: &str| json!({"type": "toolCall", "id": id, "name": "bash", "arguments": {"command": command}});
    let message = batch(json!([call("a", "echo one"), call("b", "echo two")]));
    server.request(
        json!(1),
        "batch/run",
        json!({"message": message, "ask": true}),
    );
    // One question at a time, in the message's order.
    let first = next_question(&server);
    assert_eq!(first["params"]["question"]["toolCallId"], "a");
    assert_eq!(first["params"]["question"]["need"]["line"], "echo one");
    assert_eq!(
        first["params"]["answers"],
        json!(["once", "session", "deny"])
    );
    assert!(
        first["params"]["text"]
            .as_str()
            .unwrap()
            .contains("because the rule ask = [\"bash(echo *)\"] asks about it"),
        "{first}"
    );
    // A response to no question (a forged id) changes nothing.
    server.send(r#"{"jsonrpc":"2.0","id":"ask-99","result":{"answer":"session"}}"#);
    server.send(
        &json!({"jsonrpc": "2.0", "id": first["id"], "result": {"answer": "once"}}).to_string(),
    );
    let second = next_question(&server);
    assert_eq!(second["params"]["question"]["toolCallId"], "b");
    server.send(
        &json!({"jsonrpc": "2.0", "id": second["id"],
                "result": {"answer": "deny", "reason": "not two"}})
        .to_string(),
    );
    let response = server.response();
    assert_eq!(
        result_texts(&response["result"]["toolResults"]),
        [
            "one\n",
            "The person denied permission to run the command: echo two: not two"
        ]
    );

    // Without `ask`, nobody is asked.
    let message = batch(json!([call("c", "echo one")]));
    server.request(json!(2), "batch/run", json!({"message": message}));
    let response = server.response();
    let texts = result_texts(&response["result"]["toolResults"]);
    assert!(
        texts[0].contains("no person can be asked here"),
        "{texts:?}"
    );

    // A question withdrawn by cancelling its batch is said to the client.
    let message = batch(json!([call("d", "echo three")]));
    server.request(
        json!(3),
        "batch/run",
        json!({"message": message, "ask": true}),
    );
    let question = next_question(&server);
    server.request(json!(4), "batch/cancel", json!({"id": 3}));
    let mut withdrawn = false;
    let mut results = None;
    while results.is_none() || !withdrawn {
        let line = server.next();
        if line["method"] == "permission/withdrawn" {
            assert_eq!(line["params"]["id"], question["id"]);
            withdrawn = true;
        } else if line["id"] == 3 {
            results = Some(line);
        }
    }
    assert_eq!(
        result_texts(&results.unwrap()["result"]["toolResults"]),
        [toolhost::OPERATION_ABORTED]
    );
    server.finish();
}

/// Request `id`: a batch of `call` alone, from a client that declared it
/// can answer elicitation (and nothing else).
fn run_eliciting(server: &mut Server, id: u32, call: Value) {
    server.request(
        json!(id),
        "batch/run",
        json!({"message": batch(json!([call])), "client": {"elicitation": true}}),
    );
}

/// A tool that asks the client (`toolhost:tool/client`) in a batch whose
/// client declared it can answer: the request comes as MCP's, the answer
/// goes back to the tool; a kind the client did not declare is not sent.
#[test]
fn a_client_answers_what_a_tool_asks_of_it() {
    let ws = Workspace::new();
    user_policy(
        &ws,
        "[extensions.mcptools]\ntools = true\nclient = [\"elicitation\", \"roots\"]\n",
    );
    let mut server = Server::start(&ws, &["--extension", toolhost_tests::MCPTOOLS]);
    let call = json!({"type": "toolCall", "id": "a", "name": "test_elicitation",
        "arguments": {"message": "Who are you?"}});
    run_eliciting(&mut server, 1, call);
    let asked = loop {
        let line = server.next();
        if line["method"] == "elicitation/create" {
            break line;
        }
        assert!(line.get("result").is_none(), "no request came: {line}");
    };
    assert_eq!(
        asked["params"]["message"],
        "Tool test_elicitation asks:\nWho are you?"
    );
    assert_eq!(
        asked["params"]["_meta"]["toolhost/tool"],
        "test_elicitation"
    );
    assert_eq!(
        asked["params"]["requestedSchema"]["required"],
        json!(["username", "email"])
    );
    server.send(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result":
            {"action": "accept", "content": {"username": "ada", "email": "a@x.org"}}})
        .to_string(),
    );
    let response = loop {
        let line = server.next();
        if line["id"] == 1 {
            break line;
        }
    };
    assert_eq!(
        result_texts(&response["result"]["toolResults"]),
        [r#"User response: action=accept, content={"username":"ada","email":"a@x.org"}"#]
    );
    // Roots were not declared for this batch: the tool is told, the client
    // is not asked.
    let call = json!({"type": "toolCall", "id": "b", "name": "test_input_required_result_list_roots", "arguments": {}});
    run_eliciting(&mut server, 2, call);
    let response = loop {
        let line = server.next();
        assert!(
            line.get("method").is_none_or(|m| m == "batch/event"),
            "{line}"
        );
        if line["id"] == 2 {
            break line;
        }
    };
    let texts = result_texts(&response["result"]["toolResults"]);
    assert!(
        texts[0].contains("the client cannot be asked for roots"),
        "{texts:?}"
    );
}

/// The profile is the host's: `pi = "1.6"` in the user's toolhost.toml
/// gives `serve`'s clients Pi 1.6's texts (the prompt section, validation
/// and a command's returned error with its details), and `--pi` overrides
/// the file.
#[test]
fn the_pi_profile_comes_from_the_file_or_the_flag_and_reaches_serves_clients() {
    let ws = Workspace::new();
    user_policy(&ws, "pi = \"1.6\"\n");
    let mut server = Server::start(&ws, &["--tools", "read,bash"]);
    server.request(json!(1), "tools/prompt", json!({}));
    let text = server.response()["result"]["text"].clone();
    assert!(
        text.as_str().unwrap().starts_with("<tools>\n- read:"),
        "{text}"
    );
    let message = batch(json!([
        {"type": "toolCall", "id": "a", "name": "read", "arguments": {}},
        {"type": "toolCall", "id": "b", "name": "bash", "arguments": {"command": "echo x; exit 2"}},
    ]));
    server.request(json!(2), "batch/run", json!({"message": message}));
    let results = server.response()["result"]["toolResults"].clone();
    assert_eq!(
        results[0]["content"][0]["text"],
        "Validation failed for tool \"read\":\n  - path: missing\n\nReceived arguments:\n{}"
    );
    // A returned error: the tool's own details (none here), not the `{}`
    // of a thrown one.
    assert_eq!(
        results[1]["content"][0]["text"],
        "x\n\n\nCommand exited with code 2"
    );
    assert_eq!(results[1]["isError"], true);
    assert!(results[1].get("details").is_none(), "{}", results[1]);

    // The flag wins over the file.
    let out = toolhost(&ws, &["--pi", "0.85", "call", "read", "{}"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  - path: must have required properties path"),
        "{text}"
    );
    // A profile toolhost does not know is refused, naming both it knows.
    user_policy(&ws, "pi = \"1.5\"\n");
    let out = toolhost(&ws, &["call", "read", "{}"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("unknown Pi profile \"1.5\": toolhost reproduces Pi 0.85 and 1.6"),
        "{err}"
    );
}

/// `[exposure]` reaches `serve`'s clients: a hidden tool is never listed
/// nor made active, a callable one only when a client names it.
#[test]
fn serves_tool_list_follows_the_exposure_rules() {
    let (_ws, mut server) =
        Server::with_policy("[exposure]\nbash = \"hidden\"\nls = \"callable\"\n");
    server.request(json!(1), "tools/list", json!({}));
    let tools = server.response()["result"]["tools"].clone();
    let names = strings_at(&tools, "/name");
    // Pi's defaults without bash, then the test kit's tools.
    assert_eq!(names[..4], ["read", "edit", "write", "echo"]);
    assert!(
        !names.contains(&"bash") && !names.contains(&"ls"),
        "{names:?}"
    );
    server.set_active(2, &["bash", "ls", "read"]);
    assert_eq!(
        server.response()["result"],
        json!({"active": ["ls", "read"]})
    );
}

/// serve reads bytes: a line that is not UTF-8 once ended it (exit 2), and
/// an id beyond 64 bits came back rounded (`1.8446744073709552e19`), which
/// the client could not match. Each gets its answer with the id as sent, a
/// line over 16 MiB too, and serve answers the next request.
#[test]
fn hostile_lines_serve_cannot_read_whole_get_their_answer_and_serve_goes_on() {
    use std::io::Write;
    let ws = Workspace::new();
    let mut input: Vec<u8> = Vec::new();
    input.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"a\":\"\xff\"}}\n",
    );
    input.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"tools/list\"}\n",
    );
    input.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"tools/list\",\"params\":{\"a\":\"",
    );
    input.extend(std::iter::repeat_n(b'x', (16 << 20) + 1));
    input.extend_from_slice(b"\"}}\n");
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}\n");
    let mut child = ws
        .cli()
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let answers: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"result\"") || l.contains("\"error\""))
        .collect();
    assert_eq!(answers.len(), 4, "{text}");
    assert!(
        answers[0].starts_with(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600"#),
        "{}",
        answers[0]
    );
    assert!(
        answers[1]
            .starts_with(r#"{"jsonrpc":"2.0","id":18446744073709551616,"error":{"code":-32600"#),
        "{}",
        answers[1]
    );
    assert!(
        answers[2].starts_with(r#"{"jsonrpc":"2.0","id":"big","error":{"code":-32600"#),
        "{}",
        answers[2]
    );
    let last: Value = serde_json::from_str(answers[3]).unwrap();
    assert_eq!(last["id"], 4);
    assert!(last["result"]["tools"].is_array(), "{last}");
}

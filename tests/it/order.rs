//! Pi's per-file mutation queue keeps the order of the calls (spec §1.4):
//! a `write` and then an `edit` of one file, sent together, always run in
//! that order, whatever the host's workers do. Each test sends the pair 200
//! times at one file, so that any call run out of its order breaks an edit
//! (it finds the text of another round, or no file): through `run` (one
//! message of 400 calls, parallel), `serve` (200 `batch/run` requests
//! written in one burst) and `mcp` (400 `tools/call` requests written in one
//! burst; rmcp runs each in a task of its own). The host's pool has 256
//! instance slots, fewer than those 400 calls; the library tests below use a
//! pool of 8 for 400 calls, with and without a before hook (which decides
//! how a parallel batch is scheduled).

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const ROUNDS: usize = 200;

/// Round `k`: write `round k` to `f.txt`, then edit it to `edited k`.
fn round(k: usize) -> [(String, &'static str, Value); 2] {
    [
        (
            format!("w{k}"),
            "write",
            json!({"path": "f.txt", "content": format!("round {k}\n")}),
        ),
        (
            format!("e{k}"),
            "edit",
            json!({"path": "f.txt", "edits": [
                {"oldText": format!("round {k}\n"), "newText": format!("edited {k}\n")}
            ]}),
        ),
    ]
}

/// An assistant message of `calls`.
fn message(calls: impl IntoIterator<Item = (String, &'static str, Value)>) -> Value {
    let content: Vec<Value> = calls
        .into_iter()
        .map(|(id, name, arguments)| {
            json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments})
        })
        .collect();
    json!({"role": "assistant", "stopReason": "toolUse", "content": content})
}

/// A result message's call id, error flag and first text.
fn outcome(result: &Value) -> (String, bool, String) {
    (
        result["toolCallId"].as_str().unwrap().to_string(),
        result["isError"] == true,
        result["content"][0]["text"].as_str().unwrap().to_string(),
    )
}

/// Every result says its call succeeded, the edits as Pi words it, and
/// `f.txt` holds what the last round left.
#[track_caller]
fn all_succeeded(ws: &Workspace, results: impl IntoIterator<Item = (String, bool, String)>) {
    let results: Vec<_> = results.into_iter().collect();
    assert_eq!(results.len(), 2 * ROUNDS);
    let failed: Vec<_> = results.iter().filter(|(_, error, _)| *error).collect();
    assert!(
        failed.is_empty(),
        "{} failed, first {:?}",
        failed.len(),
        failed[0]
    );
    for (id, _, text) in results.iter().filter(|(id, ..)| id.starts_with('e')) {
        assert_eq!(text, "Successfully replaced 1 block(s) in f.txt.", "{id}");
    }
    assert_eq!(ws.read("f.txt"), format!("edited {}\n", ROUNDS - 1));
}

/// Run `cli` with `input` written in one burst, and collect its stdout's
/// JSON lines until `done` says so; stdin stays open until then (an MCP
/// server ends its calls when its input ends).
fn exchange(mut cli: Command, input: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut child = spawn_piped(&mut cli, Stdio::inherit());
    let mut stdin = child.stdin.take().unwrap();
    let writer = {
        let input = input.to_string();
        std::thread::spawn(move || {
            stdin.write_all(input.as_bytes()).unwrap();
            stdin
        })
    };
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        lines.push(serde_json::from_str(&line.unwrap()).unwrap());
        if done(&lines) {
            break;
        }
    }
    drop(writer.join().unwrap());
    child.wait().unwrap();
    lines
}

#[test]
fn order_write_then_edit_of_one_file_200_times_in_one_run_message() {
    let ws = Workspace::new();
    let batch = message((0..ROUNDS).flat_map(round));
    let out = toolhost(&ws, &["run", "-"], Some(&batch.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap();
    all_succeeded(
        &ws,
        end["toolResults"].as_array().unwrap().iter().map(outcome),
    );
}

#[test]
fn order_write_then_edit_of_one_file_200_times_as_serve_batches_in_one_burst() {
    let ws = Workspace::new();
    let input: String = (0..ROUNDS)
        .map(|k| {
            let request = json!({"jsonrpc": "2.0", "id": k, "method": "batch/run",
                "params": {"message": message(round(k))}});
            format!("{request}\n")
        })
        .collect();
    let mut cli = ws.cli();
    cli.arg("serve");
    let lines = exchange(cli, &input, |lines| {
        lines.iter().filter(|l| l.get("result").is_some()).count() == ROUNDS
    });
    let results = lines
        .iter()
        .filter_map(|l| l["result"]["toolResults"].as_array())
        .flatten()
        .map(outcome);
    all_succeeded(&ws, results);
}

#[test]
fn order_write_then_edit_of_one_file_200_times_as_mcp_requests_in_one_burst() {
    let ws = Workspace::new();
    let mut input = [
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "order", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    .map(|m| format!("{m}\n"))
    .concat();
    for (id, name, arguments) in (0..ROUNDS).flat_map(round) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        input.push_str(&format!("{request}\n"));
    }
    let mut cli = ws.cli();
    cli.arg("mcp");
    let answered = |lines: &[Value]| {
        lines
            .iter()
            .filter(|l| l.get("result").is_some() || l.get("error").is_some())
            .count()
    };
    let lines = exchange(cli, &input, |lines| answered(lines) == 2 * ROUNDS + 1);
    let results = lines.iter().filter(|l| l["id"] != "init").map(|l| {
        let result = &l["result"];
        (
            l["id"].as_str().unwrap_or_default().to_string(),
            result["isError"] != false,
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    });
    all_succeeded(&ws, results);
}

/// A before hook that lets every call through: with one, a parallel batch
/// prepares every call before any runs.
struct Allow;

impl toolhost::ToolHooks for Allow {}

/// 400 write and edit calls in one message on a host with 8 instance slots.
fn in_a_small_pool(hooks: Option<std::sync::Arc<dyn toolhost::ToolHooks>>) {
    let ws = Workspace::new();
    let runtime = toolhost::Runtime::new(toolhost::RuntimeOptions {
        max_concurrent_calls: 8,
        ..Default::default()
    })
    .unwrap();
    let mut builder = builder(&ws).runtime(runtime);
    if let Some(hooks) = hooks {
        builder = builder.hooks(hooks);
    }
    let host = built(builder);
    let calls = (0..ROUNDS)
        .flat_map(round)
        .map(|(id, name, args)| tool_call(&id, name, args))
        .collect();
    let batch = toolhost::AssistantMessage::from_calls(calls);
    let (outcome, _) = run(&host, &batch, toolhost::CancellationToken::new());
    let results = outcome
        .results
        .iter()
        .map(|r| (r.tool_call_id.clone(), r.is_error, r.text()));
    all_succeeded(&ws, results);
}

#[test]
fn order_holds_in_a_message_of_more_mutations_than_instance_slots() {
    in_a_small_pool(None);
}

#[test]
fn order_holds_in_a_message_of_more_mutations_than_instance_slots_with_a_before_hook() {
    in_a_small_pool(Some(std::sync::Arc::new(Allow)));
}

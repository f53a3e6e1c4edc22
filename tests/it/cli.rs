//! The `toolhost` command: list, call and run, as a person or a script uses it.

use crate::support::*;
use serde_json::{Value, json};
use std::process::Output;

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// `toolhost ARGS run -` of `batch`, which must succeed: its JSON lines.
fn run_lines(ws: &Workspace, args: &[&str], batch: &Value) -> Vec<Value> {
    let args = [args, &["run", "-"]].concat();
    let out = toolhost(ws, &args, Some(&batch.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn list_shows_the_built_ins_with_their_exact_texts() {
    let ws = Workspace::new();
    let out = toolhost(&ws, &["list"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    // The table's rows, with column padding collapsed.
    let rows: Vec<String> = text
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows[0], "NAME ACTIVE MODE SOURCE PARAMETERS");
    let has = |row: &str| rows.iter().any(|r| r == row);
    assert!(
        has("read yes parallel built-in path*: string, offset: number, limit: number"),
        "{text}"
    );
    assert!(
        has("ls no parallel built-in path: string, limit: number"),
        "{text}"
    );
    assert!(text.contains(
        "  Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp)."
    ));

    let out = toolhost(&ws, &["list", "--json"], None);
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ls = named(&tools, "ls");
    assert_eq!(
        ls["description"],
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first)."
    );
    assert_eq!(
        serde_json::to_string(&ls["parameters"]).unwrap(),
        r#"{"type":"object","properties":{"path":{"type":"string","description":"Directory to list (default: current directory)"},"limit":{"type":"number","description":"Maximum number of entries to return (default: 500)"}}}"#
    );
    assert_eq!(ls["promptSnippet"], "List directory contents");
}

#[test]
fn call_prints_the_text_and_sets_the_exit_code() {
    let ws = Workspace::new();
    ws.write("a.txt", "Hello, world!\nLine 2\nLine 3");
    let out = toolhost(&ws, &["call", "read", r#"{"path":"a.txt"}"#], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "Hello, world!\nLine 2\nLine 3\n");

    let out = toolhost(&ws, &["call", "read", r#"{"path":"missing.txt"}"#], None);
    assert_eq!(out.status.code(), Some(1), "a tool error exits 1");
    assert_eq!(
        stdout(&out),
        format!(
            "ENOENT: no such file or directory, access '{}/missing.txt'\n",
            ws.str()
        )
    );

    let out = toolhost(&ws, &["call", "ls", r#"{"limit":0}"#, "--json"], None);
    assert_eq!(out.status.code(), Some(1));
    let msg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(msg["toolName"], "ls");
    assert_eq!(msg["isError"], true);
    assert_eq!(
        msg["content"][0]["text"],
        "Invalid limit: 0. Use a positive number of entries."
    );

    let out = toolhost(&ws, &["call", "read", "{not json"], None);
    assert_eq!(out.status.code(), Some(2), "bad input exits 2");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the arguments of read are not valid JSON")
    );
}

#[test]
fn run_streams_the_parallel_event_order_then_turn_end() {
    let ws = Workspace::new();
    let batch = json!({"role": "assistant", "stopReason": "toolUse", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "toolCall", "id": "c1", "name": "slow", "arguments": {"ms": 400}},
        {"type": "toolCall", "id": "c2", "name": "fast", "arguments": {}},
        {"type": "toolCall", "id": "c3", "name": "nope", "arguments": {}},
    ]});
    let lines = run_lines(&ws, &["--extension", toolhost_tests::TESTKIT], &batch);
    assert_eq!(
        event_shape(&lines),
        [&REVERSE_FINISH_EVENTS[..], &["turn_end"]].concat()
    );
    assert_eq!(lines[3]["isError"], true);
    assert_eq!(
        lines[3]["result"]["content"][0]["text"],
        "Tool nope not found"
    );
    let end = lines.last().unwrap();
    assert_eq!(end["toolResults"].as_array().unwrap().len(), 3);
    assert_eq!(
        end["toolResults"][0]["content"][0]["text"],
        "slow done after 400 ms"
    );
    assert_eq!(end["terminate"], false);
}

#[test]
fn run_repeats_each_result_message_in_its_end_and_turn_end_even_with_repeated_ids() {
    // `run` writes a result message's bytes once and repeats them for its
    // `message_end` and the `turn_end`: two calls with the same id (a model
    // may send that) must each get their own message everywhere.
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    ws.write("b.txt", "beta \"quoted\" \\ é\n");
    let batch = json!({"role": "assistant", "stopReason": "toolUse", "content": [
        {"type": "toolCall", "id": "same", "name": "read", "arguments": {"path": "a.txt"}},
        {"type": "toolCall", "id": "same", "name": "read", "arguments": {"path": "b.txt"}},
        {"type": "toolCall", "id": "other", "name": "read", "arguments": {"path": "none.txt"}},
    ]});
    let lines = run_lines(&ws, &[], &batch);
    let of_type = |kind: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| l["type"] == kind)
            .map(|l| &l["message"])
            .collect()
    };
    let (starts, ends) = (of_type("message_start"), of_type("message_end"));
    let texts: Vec<&str> = starts
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts[0], "alpha\n");
    assert_eq!(texts[1], "beta \"quoted\" \\ é\n");
    assert!(texts[2].contains("none.txt"), "{}", texts[2]);
    assert_eq!(starts, ends, "each message_end repeats its message_start");
    let turn_end = lines.last().unwrap();
    assert_eq!(turn_end["type"], "turn_end");
    let results: Vec<&Value> = turn_end["toolResults"].as_array().unwrap().iter().collect();
    assert_eq!(
        results, starts,
        "turn_end's results are the messages, in order"
    );
}

#[test]
fn run_is_sequential_when_a_sequential_tool_is_in_the_batch() {
    let ws = Workspace::new();
    let batch = json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "slow", "arguments": {"ms": 200}},
        {"type": "toolCall", "id": "c2", "name": "step", "arguments": {"ms": 10}},
    ]});
    let file = ws.write("batch.json", batch.to_string());
    let out = toolhost(
        &ws,
        &[
            "--extension",
            toolhost_tests::TESTKIT,
            "run",
            file.to_str().unwrap(),
        ],
        None,
    );
    let types: Vec<String> = stdout(&out)
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            e["type"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        types,
        [
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end"
        ]
    );
}

#[test]
fn run_rejects_a_malformed_message_with_exit_2() {
    let ws = Workspace::new();
    let out = toolhost(&ws, &["run", "-"], Some(r#"{"role":"user","content":[]}"#));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected role \"assistant\""));
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    // `toolhost list --json | head -c 10`: the pipe closes early; no panic.
    let ws = Workspace::new();
    let mut child = ws
        .cli()
        .args(["list", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn a_failure_names_its_object_and_keeps_its_cause_as_the_source() {
    let ws = Workspace::new();
    let missing = ws.path.join("missing");
    // The library: the error names the workspace; the I/O error is its
    // source, not a copy in its text.
    let Err(err) = block(toolhost::Host::builder().workspace(&missing).build()) else {
        panic!("a missing workspace is refused");
    };
    assert_eq!(
        err.to_string(),
        format!("workspace {}: cannot be resolved", missing.display())
    );
    let io = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    let chain = format!(
        "workspace {}: cannot be resolved: No such file or directory (os error 2)",
        missing.display()
    );
    assert_eq!(err.chain(), chain);

    // The CLI prints the whole chain, each cause once.
    let out = std::process::Command::new(toolhost_bin())
        .arg("--workspace")
        .arg(&missing)
        .arg("list")
        .env("XDG_CONFIG_HOME", ws.config_home())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("toolhost: loading the tools: {chain}\n")
    );
}

#[test]
fn a_fresh_machine_runs_the_built_ins_without_compiling_them() {
    // An empty compile cache, as on a fresh machine: the built-ins come
    // compiled in the binary, so starting and calling one writes nothing to
    // the cache (an extension would be compiled and cached).
    let ws = Workspace::new();
    ws.write("a.txt", "hello\n");
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let env = [("TOOLHOST_CACHE_DIR", cache_dir)];
    let out = toolhost_with_env(&ws, &["--all-tools", "list"], None, &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    for tool in ["read", "write", "edit", "bash", "grep", "find", "ls"] {
        assert!(listed.contains(tool), "{tool} is not listed:\n{listed}");
    }
    let out = toolhost_with_env(&ws, &["call", "read", r#"{"path":"a.txt"}"#], None, &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n\n");
    let compiled = |dir: &std::path::Path| -> Vec<String> {
        walk_files(dir)
            .into_iter()
            .filter(|p| p.ends_with(".cwasm"))
            .collect()
    };
    assert_eq!(compiled(cache.path()), Vec::<String>::new());
    // An extension is compiled once and cached.
    let out = toolhost_with_env(
        &ws,
        &["--extension", toolhost_tests::TESTKIT, "call", "fast"],
        None,
        &env,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "fast done");
    assert_eq!(compiled(cache.path()).len(), 1);
}

/// Every file below `dir`, as paths.
fn walk_files(dir: &std::path::Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path.display().to_string());
        }
    }
    files
}

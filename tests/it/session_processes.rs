//! Session processes (issue 26): the `process_*` tools through `toolhost
//! serve`, whose session is its stdin's life. Each process is a real command
//! in the real jail; what outlives what is checked by marker in `/proc`.

use crate::serve::{Server, batch};
use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const TOOLS: &str = "bash,process_start,process_output,process_write,process_list,process_stop";

/// A `serve` with the session-process tools active (and bash).
fn server(ws: &Workspace) -> Session {
    server_with(ws, &[])
}

/// [`server`] with `options` before the command.
pub(crate) fn server_with(ws: &Workspace, options: &[&str]) -> Session {
    let mut args = options.to_vec();
    args.extend(["--tools", TOOLS]);
    Session::of(Server::start(ws, &args))
}

pub(crate) struct Session {
    pub(crate) server: Server,
    n: u64,
    /// What each process printed that no `read_until` took yet, from
    /// every answer about it (a start's or a write's answer may already
    /// hold what a test then waits for).
    unread: std::collections::HashMap<u64, String>,
}

/// What a process tool's answer says the process printed: its text without
/// the state line at its end, and nothing for `(no new output)`.
fn printed(text: &str) -> &str {
    let output = text
        .rfind(
            "

[Process ",
        )
        .map_or(text, |at| &text[..at]);
    if output == "(no new output)" {
        ""
    } else {
        output
    }
}

/// A result's text, and whether it is an error.
pub(crate) struct Answer {
    pub(crate) text: String,
    is_error: bool,
    details: Value,
}

impl Session {
    pub(crate) fn of(server: Server) -> Session {
        Session {
            server,
            n: 0,
            unread: Default::default(),
        }
    }

    #[track_caller]
    fn call(&mut self, name: &str, args: Value) -> Answer {
        self.n += 1;
        let message = batch(
            json!([{"type": "toolCall", "id": format!("c{}", self.n), "name": name, "arguments": args}]),
        );
        self.server
            .request(json!(self.n), "batch/run", json!({"message": message}));
        let response = self.server.response();
        let result = &response["result"]["toolResults"][0];
        let answer = Answer {
            text: result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            is_error: result["isError"] == json!(true),
            details: result["details"].clone(),
        };
        if let Some(id) = answer.details["id"].as_u64() {
            self.unread
                .entry(id)
                .or_default()
                .push_str(printed(&answer.text));
        }
        answer
    }

    #[track_caller]
    pub(crate) fn ok(&mut self, name: &str, args: Value) -> Answer {
        let answer = self.call(name, args.clone());
        assert!(!answer.is_error, "{name} {args}: {}", answer.text);
        answer
    }

    /// Write `input` to process `id`, not waiting for its output; the write
    /// must succeed.
    #[track_caller]
    pub(crate) fn write(&mut self, id: u64, input: &str) -> Answer {
        self.ok(
            "process_write",
            json!({"id": id, "input": input, "wait": 0}),
        )
    }

    /// Read process `id` until what it printed since contains `needle`
    /// (giving up after a minute: a bound on a failure, not a timing).
    #[track_caller]
    pub(crate) fn read_until(&mut self, id: u64, needle: &str) -> String {
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            let unread = self.unread.entry(id).or_default();
            if let Some(at) = unread.find(needle) {
                return unread.drain(..at + needle.len()).collect();
            }
            assert!(Instant::now() < give_up, "{needle:?} never came:\n{unread}");
            self.ok("process_output", json!({"id": id, "wait": 0.2}));
        }
    }
}

/// A session of the server on `ws` with the session tools, writing its
/// audit log in the workspace; the log's path.
fn audited(ws: &Workspace) -> (Session, PathBuf) {
    let audit = ws.path.join("audit.jsonl");
    let server = Server::start(ws, &["--tools", TOOLS, "--audit", audit.to_str().unwrap()]);
    (Session::of(server), audit)
}

/// A TCP port free now on loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_dev_server_started_in_one_call_answers_curl_in_the_next_then_is_listed_stopped_and_its_port_free()
 {
    let ws = Workspace::new();
    ws.write("hello.txt", "hello from the workspace\n");
    let port = free_port();
    let mut s = server(&ws);
    let command = format!("python3 -u -m http.server {port} --bind 127.0.0.1");
    let started = s.ok("process_start", json!({"command": command, "wait": 0}));
    assert!(
        started.text.contains("[Process 1 is running"),
        "{}",
        started.text
    );
    assert_eq!(started.details["id"], json!(1));
    s.read_until(1, "Serving HTTP");

    let curl = s.ok(
        "bash",
        json!({"command": format!("curl -s http://127.0.0.1:{port}/hello.txt")}),
    );
    assert_eq!(curl.text, "hello from the workspace\n");
    // The server's log line for that request.
    s.read_until(1, "GET /hello.txt HTTP/1.1\" 200");

    let listed = s.ok("process_list", json!({}));
    assert!(
        listed.text.starts_with("1  running for ") && listed.text.ends_with(&command),
        "{}",
        listed.text
    );
    let stopped = s.ok("process_stop", json!({"id": 1}));
    assert!(
        stopped.text.ends_with("[Process 1 was stopped.]"),
        "{}",
        stopped.text
    );
    let listed = s.ok("process_list", json!({}));
    assert!(
        listed.text.starts_with("1  was stopped after "),
        "{}",
        listed.text
    );
    // Its port is free again.
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is still taken");
    s.server.finish();
}

#[test]
fn a_python_repl_in_a_terminal_is_driven_through_several_writes() {
    let ws = Workspace::new();
    let mut s = server(&ws);
    let started = s.ok(
        "process_start",
        json!({"command": "python3 -q -i", "tty": true, "wait": 0}),
    );
    assert!(
        started.text.contains("Process 1 is running"),
        "{}",
        started.text
    );
    s.read_until(1, ">>> ");
    s.write(1, "import sys; x = 6\r");
    s.write(1, "print(x * 7, sys.stdin.isatty())\r");
    let text = s.read_until(1, "42 True");
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    // Definitions survive between writes: one interpreter all along.
    s.write(1, "def f(): return x + 1\r\r");
    s.write(1, "f()\r");
    s.read_until(1, "\n7\n");
    // Ctrl-D ends it: the terminal is its controlling one.
    s.write(1, "\u{4}");
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = s.ok("process_output", json!({"id": 1, "wait": 1}));
        if answer.text.ends_with("[Process 1 exited with code 0.]") {
            break;
        }
        assert!(Instant::now() < give_up, "{}", answer.text);
    }
    s.server.finish();
}

#[test]
fn npm_style_output_with_carriage_returns_and_colours_reads_back_clean() {
    let ws = Workspace::new();
    let mut s = server(&ws);
    let script = r#"printf '\033[1m\033[32m> app@1.0.0 dev\033[39m\033[22m\n'; for p in 10 50 100; do printf '\rprogress [%3d%%]' $p; done; printf '\n\033[2K\033[1Gready on \033]8;;http://x\007http://localhost:5173\033]8;;\007\n'"#;
    for tty in [false, true] {
        let started = s.ok(
            "process_start",
            json!({"command": script, "tty": tty, "wait": 30}),
        );
        let id = started.details["id"].as_u64().unwrap();
        assert_eq!(
            started.text,
            format!(
                "> app@1.0.0 dev\nprogress [100%]\nready on http://localhost:5173\n\n\n[Process {id} exited with code 0.]"
            ),
            "tty {tty}"
        );
    }
    s.server.finish();
}

#[test]
fn a_process_printing_200_mb_is_held_in_the_host_at_most_at_its_buffer_sizes() {
    let ws = Workspace::new();
    let mut s = server(&ws);
    let peak = |pid: u32| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    };
    let pid = s.server.child.id();
    s.ok("process_list", json!({}));
    let before = peak(pid);
    // 200 MB of lines, then a last line; read once it ended.
    let command = "yes 0123456789012345678901234567890123456789012345678 2>/dev/null | head -c 200000000; echo; echo the-end";
    let started = s.ok("process_start", json!({"command": command, "wait": 600}));
    let after = peak(pid);
    assert!(
        started.text.ends_with("exited with code 0.]"),
        "{}",
        &started.text[started.text.len() - 200..]
    );
    assert!(started.text.contains("the-end"));
    // Kept: the first 64 KiB and the last 1 MiB; said how much was not.
    let dropped = started.details["droppedBytes"].as_u64().unwrap();
    assert_eq!(dropped, 200_000_000 + 9 - (64 << 10) - (1 << 20));
    assert!(
        started.text.starts_with("[189.7MB of output not kept"),
        "{}",
        &started.text[..200]
    );
    let grew = after.saturating_sub(before);
    assert!(
        grew < 64 << 20,
        "the host's peak memory grew by {} MiB",
        grew >> 20
    );
    s.server.finish();
}

#[test]
fn the_ninth_process_is_refused_with_a_clear_error() {
    let ws = Workspace::new();
    let mut s = server(&ws);
    for _ in 0..8 {
        s.ok("process_start", json!({"command": "sleep 600", "wait": 0}));
    }
    let refused = s.call("process_start", json!({"command": "echo nine", "wait": 0}));
    assert!(refused.is_error);
    assert_eq!(
        refused.text,
        "this session already runs 8 processes, the most it may run at once (1, 2, 3, 4, 5, 6, 7, 8); stop one first"
    );
    s.ok("process_stop", json!({"id": 3}));
    s.ok("process_start", json!({"command": "echo nine", "wait": 0}));
    s.server.finish();
}

#[test]
fn a_daemon_that_keeps_the_pipes_does_not_hang_the_call_that_started_it() {
    let ws = Workspace::new();
    let marker = marker();
    let mut s = server(&ws);
    let began = Instant::now();
    // The shell exits at once; its child keeps stdout and stderr open.
    let started = s.ok(
        "process_start",
        json!({"command": format!("nohup sleep {marker} & echo started"), "wait": 120}),
    );
    assert!(
        began.elapsed() < Duration::from_secs(100),
        "the call waited its whole wait for the daemon"
    );
    assert!(started.text.starts_with("started\n"), "{}", started.text);
    assert!(
        started.text.ends_with("[Process 1 exited with code 0.]"),
        "{}",
        started.text
    );
    assert!(all_gone(&marker), "the daemon outlived its shell's end");
    s.server.finish();
}

/// The session's end (serve's stdin closed), the host's SIGTERM and its
/// SIGKILL each leave no process behind, including one that left its
/// process group.
#[test]
fn nothing_a_session_started_survives_its_end_or_the_hosts_death() {
    for how in ["end", "SIGTERM", "SIGKILL"] {
        let ws = Workspace::new();
        let marker = marker();
        let mut s = server(&ws);
        let command = format!("setsid sleep {marker} & sleep {marker}");
        s.ok("process_start", json!({"command": command, "wait": 0}));
        s.ok(
            "process_start",
            json!({"command": format!("sleep {marker}"), "tty": true, "wait": 0}),
        );
        let give_up = Instant::now() + Duration::from_secs(30);
        while live_with(&marker) < 3 {
            assert!(
                Instant::now() < give_up,
                "{how}: the processes never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        match how {
            "end" => {
                s.server.finish();
            }
            signal => {
                let status = std::process::Command::new("kill")
                    .arg(format!("-{}", &signal[3..]))
                    .arg(s.server.child.id().to_string())
                    .status()
                    .unwrap();
                assert!(status.success());
                let _ = s.server.child.wait();
            }
        }
        assert!(
            all_gone(&marker),
            "{how}: {} processes survived",
            live_with(&marker)
        );
    }
}

/// The official MCP Python SDK uses the tools over stdio (both revisions);
/// over HTTP each handshake session has its own processes, which end when
/// it closes (tests/mcp_processes.py).
#[test]
fn mcp_clients_use_the_tools_and_each_http_session_has_its_own_processes() {
    let ws = Workspace::new();
    ws.write("hello.txt", "hello over MCP\n");
    let (a, b) = (marker(), marker());
    let port = free_port().to_string();
    let summary = script_summary(
        std::process::Command::new(python_with_mcp())
            .arg(repo_root().join("tests/mcp_processes.py"))
            .arg(toolhost_bin())
            .arg(&ws.path)
            .args([&port, &a, &b])
            .env("XDG_CONFIG_HOME", ws.config_home()),
        "mcp_processes.py",
    );
    let command = format!("python3 -u -m http.server {port} --bind 127.0.0.1");
    for mode in ["legacy", "auto"] {
        let stdio = &summary[format!("stdio-{mode}")];
        assert_eq!(stdio["curl"], "hello over MCP\n", "{mode}");
        assert_eq!(stdio["listed"], format!("1 {command}"), "{mode}");
        assert_eq!(stdio["stopped"], "[Process 1 was stopped.]", "{mode}");
    }
    let http = &summary["http"];
    let only = |list: &Value, marker: &str| {
        let text = list.as_str().unwrap();
        text.lines().count() == 1
            && text.starts_with("1  running")
            && text.ends_with(&format!("sleep {marker}"))
    };
    assert!(only(&http["listA"], &a), "{http}");
    assert!(only(&http["listB"], &b), "{http}");
    assert!(only(&http["listBAfterAClosed"], &b), "{http}");
    assert_eq!(http["bRunsAfterAClosed"], true);
    assert_eq!(http["bEndedWithItsSession"], true);
}

/// A process that ends while no call runs is told to the client
/// (`process/exited`), and its end is a line of the audit log beside the
/// lines of the calls that started it and wrote to it.
#[test]
fn a_process_ending_between_calls_is_told_to_the_client_and_written_to_the_audit_log() {
    let ws = Workspace::new();
    let (mut s, audit) = audited(&ws);
    let started = s.ok(
        "process_start",
        json!({"command": "read line; echo got $line; exit 3", "wait": 0}),
    );
    assert!(
        started.text.contains("Process 1 is running"),
        "{}",
        started.text
    );
    s.write(1, "go\n");
    let told = loop {
        let line = s.server.next();
        if line["method"] == "process/exited" {
            break line;
        }
    };
    assert_eq!(told["params"]["id"], 1);
    assert_eq!(told["params"]["exitCode"], 3);
    assert_eq!(
        told["params"]["command"],
        "read line; echo got $line; exit 3"
    );
    let text = told["params"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Process 1 (read line; echo got $line; exit 3) exited with code 3 after "),
        "{text}"
    );
    // What it wrote is still there to read.
    let read = s.ok("process_output", json!({"id": 1}));
    assert!(read.text.starts_with("got go\n"), "{}", read.text);
    s.server.finish();

    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools: Vec<&str> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "process_start",
            "process_write",
            "session-process",
            "process_output"
        ],
        "{lines:#?}"
    );
    assert_eq!(
        lines[0]["used"]["programs"],
        json!(["/bin/bash (session process: read line; echo got $line; exit 3)"])
    );
    assert_eq!(
        lines[1]["used"]["programs"],
        json!(["wrote 3 bytes to session process 1"])
    );
    let end = &lines[2];
    assert_eq!(end["toolCallId"], "process-1");
    assert_eq!(end["outcome"], "error");
    assert_eq!(end["error"], "exited with code 3");
    assert_eq!(
        end["arguments"]["command"],
        "read line; echo got $line; exit 3"
    );
}

/// The git guard settles what a session process changes while no call
/// runs, as it does after every call: a hook planted between calls, in a
/// repository the process made, is removed within the guard's interval,
/// and the audit log says so. (A call's own settle would have judged the
/// hook, older than the call, the user's.)
#[test]
fn hostile_a_hook_a_session_process_plants_between_calls_is_undone() {
    let ws = Workspace::new();
    let (mut s, audit) = audited(&ws);
    let plant = "read go; sleep 0.3; git init -q planted && \
                 printf '#!/bin/sh\\necho pwned\\n' > planted/.git/hooks/pre-commit && \
                 chmod +x planted/.git/hooks/pre-commit && echo planted; sleep 600";
    s.ok("process_start", json!({"command": plant, "wait": 0}));
    // Its write call returns at once; the hook comes after it.
    s.write(1, "go\n");
    let hook = ws.path.join("planted/.git/hooks/pre-commit");
    let give_up = Instant::now() + Duration::from_secs(60);
    while !hook.exists() {
        assert!(Instant::now() < give_up, "the hook was never planted");
        std::thread::sleep(Duration::from_millis(20));
    }
    // No call runs; the guard finds it anyway.
    while hook.exists() {
        assert!(
            Instant::now() < give_up,
            "a hook planted between calls stayed: git would run it for the user"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    s.ok("process_stop", json!({"id": 1}));
    s.server.finish();
    let log = std::fs::read_to_string(&audit).unwrap();
    let reverted = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["tool"] == "session-process" && l["used"]["reverted"].is_array())
        .unwrap_or_else(|| panic!("no line says what was undone:\n{log}"));
    let sentence = reverted["used"]["reverted"][0].as_str().unwrap();
    assert!(
        sentence.starts_with(&format!("toolhost reverted {}", hook.display())),
        "{sentence}"
    );
}

/// MCP tasks (SEP-2663) as a 2026-07-28 client uses them over HTTP
/// (tests/mcp_tasks.py): a quick call is answered at once; a long bash call
/// becomes a task that another connection polls to completion; a cancelled
/// one settles as cancelled and its command ends; a client that did not
/// declare tasks gets a plain answer.
#[test]
fn a_long_call_becomes_a_task_polled_to_completion_and_another_is_cancelled() {
    let ws = Workspace::new();
    let marker = marker();
    let summary = script_summary(
        std::process::Command::new(python_with_mcp())
            .arg(repo_root().join("tests/mcp_tasks.py"))
            .arg(toolhost_bin())
            .arg(&ws.path)
            .arg(&marker)
            .env("XDG_CONFIG_HOME", ws.config_home()),
        "mcp_tasks.py",
    );
    assert_eq!(
        summary["quick"],
        json!({"resultType": "complete", "text": "quick\n", "taskId": null})
    );
    assert_eq!(
        summary["created"],
        json!({"resultType": "task", "status": "working", "ttlMs": 3_600_000, "pollIntervalMs": 500})
    );
    assert_eq!(
        summary["completed"],
        json!({"status": "completed", "text": "done after a while\n", "isError": false})
    );
    assert_eq!(summary["cancelAck"], json!({"resultType": "complete"}));
    assert_eq!(summary["cancelled"], "cancelled");
    assert_eq!(summary["commandEnded"], true);
    assert_eq!(
        summary["undeclared"],
        json!({"resultType": "complete", "text": "no tasks here\n", "taskId": null})
    );
}

/// A `toolhost run` is one session: a process that ends during the batch,
/// and one still running when it is done (stopped then), are each told as
/// a `process_exit` line, and none outlives the run.
#[test]
fn a_run_tells_each_process_end_and_stops_what_still_runs() {
    let ws = Workspace::new();
    let marker = marker();
    let message = json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "process_start",
         "arguments": {"command": format!("sleep {marker}"), "wait": 0}},
        {"type": "toolCall", "id": "c2", "name": "process_start",
         "arguments": {"command": "exit 4", "wait": 5}},
    ]});
    let out = toolhost(
        &ws,
        &["--tools", TOOLS, "run", "--json", "-"],
        Some(&message.to_string()),
    );
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "process_exit")
        .collect();
    assert_eq!(ends.len(), 2, "{lines:#?}");
    let exited = ends
        .iter()
        .find(|e| e["exitCode"] == 4)
        .expect("the exit 4");
    assert_eq!(exited["command"], "exit 4");
    let stopped = ends
        .iter()
        .find(|e| e["command"] == format!("sleep {marker}"))
        .unwrap();
    assert_eq!(stopped["exitCode"], Value::Null);
    assert!(
        stopped["text"]
            .as_str()
            .unwrap()
            .contains(") was stopped after "),
        "{stopped}"
    );
    let turn_end = lines.iter().position(|l| l["type"] == "turn_end").unwrap();
    let last_end = lines
        .iter()
        .rposition(|l| l["type"] == "process_exit")
        .unwrap();
    assert!(
        last_end > turn_end,
        "the stop at the run's end comes after its turn"
    );
    assert!(all_gone(&marker));
}

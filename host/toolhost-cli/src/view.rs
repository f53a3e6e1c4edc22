//! `toolhost run` on a terminal: each call as a person reads it, as Pi's
//! interface shows it. A running call is a spinner line (tool, a one-line
//! summary of its arguments, elapsed time, the latest line of its output);
//! a finished one is ✓ or ✗ with the first lines of its result and the
//! truncation notice, printed in the message's order; a last line counts
//! them. Drawn by indicatif, styled by console; `NO_COLOR` turns colour off.
//! Anything that is not a terminal (or `--json`) gets the JSON lines.
//!
//! The model chose every tool name and argument, and a tool every line of
//! its result: all of it is shown escaped (`toolhost::display`), and only
//! the view's own colours and spinner reach the terminal as sequences.

use console::style;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolhost::display::escape;
use toolhost::{ContentBlock, Event, ToolResult};

/// Result lines shown under a finished call.
const PREVIEW_LINES: usize = 4;
/// Characters of an argument summary or a shown line.
const WIDTH: usize = 100;

pub struct View {
    bars: MultiProgress,
    state: Mutex<State>,
    started: Instant,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    /// The first call not printed yet: finished calls are printed in order.
    next: usize,
}

struct Call {
    id: String,
    /// The tool's name and the arguments' summary, escaped.
    tool: String,
    summary: String,
    bar: ProgressBar,
    started: Instant,
    /// Its finished block, once it has one.
    done: Option<(bool, String)>,
}

impl View {
    /// Stop drawing (`quiet`), clearing what is drawn, while the terminal
    /// asks the person a question: the spinners' redraws would overwrite
    /// it. Drawing starts again, below it, when it is answered.
    pub fn hush(&self, quiet: bool) {
        if quiet {
            let _ = self.bars.clear();
            self.bars.set_draw_target(ProgressDrawTarget::hidden());
        } else {
            self.bars.set_draw_target(ProgressDrawTarget::stdout());
        }
    }

    pub fn new() -> View {
        // NO_COLOR (https://no-color.org): any non-empty value.
        if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            console::set_colors_enabled(false);
        }
        View {
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::stdout()),
            state: Mutex::new(State::default()),
            started: Instant::now(),
        }
    }

    pub fn event(&self, event: &Event) {
        let mut state = self.state.lock().expect("view lock");
        match event {
            Event::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                let summary = summary(args);
                let tool = escape(tool_name).into_owned();
                let bar = self.bars.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner:.cyan} {prefix:.bold} {msg} {elapsed:.dim}",
                    )
                    .expect("a valid template"),
                );
                bar.set_prefix(tool.clone());
                bar.set_message(summary.clone());
                bar.enable_steady_tick(Duration::from_millis(100));
                state.calls.push(Call {
                    id: tool_call_id.clone(),
                    tool,
                    summary,
                    bar,
                    started: Instant::now(),
                    done: None,
                });
            }
            Event::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                if let Some(call) = state.running(tool_call_id) {
                    let last = partial_result
                        .text()
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| clip(l, WIDTH / 2))
                        .unwrap_or_default();
                    call.bar
                        .set_message(format!("{}  {}", call.summary, style(last).dim()));
                }
            }
            Event::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => {
                if let Some(call) = state.running(tool_call_id) {
                    let block = finished(call, result, *is_error);
                    call.bar.finish();
                    call.done = Some((*is_error, block));
                }
                self.print_ready(&mut state);
            }
            Event::ExtensionError {
                extension, error, ..
            } => {
                let line = format!(
                    "{} {}: {}",
                    style("!").yellow().bold(),
                    escape(extension),
                    escape(error)
                );
                let _ = self.bars.println(line);
            }
            Event::ToolExecutionLog {
                tool_name,
                level,
                message,
                ..
            } => {
                let line = format!(
                    "{} {}: {}",
                    style(format!("{level:?}").to_lowercase()).dim(),
                    escape(tool_name),
                    escape(message)
                );
                let _ = self.bars.println(line);
            }
            Event::MessageStart { .. } | Event::MessageEnd { .. } => {}
        }
    }

    /// Print finished calls, in order, up to the first that still runs.
    fn print_ready(&self, state: &mut State) {
        while let Some(call) = state.calls.get(state.next) {
            let Some((_, block)) = &call.done else { break };
            self.bars.remove(&call.bar);
            let _ = self.bars.println(block);
            state.next += 1;
        }
    }

    /// The last line: how many calls, how they ended, how long it took.
    pub fn finish(&self) {
        let mut state = self.state.lock().expect("view lock");
        // Calls that never ended (the batch was cut short) are shown too.
        for call in &mut state.calls {
            if call.done.is_none() {
                call.done = Some((
                    true,
                    format!("{} {} {}", style("✗").red(), call.tool, call.summary),
                ));
            }
        }
        self.print_ready(&mut state);
        let failed = state
            .calls
            .iter()
            .filter(|c| c.done.as_ref().is_some_and(|d| d.0))
            .count();
        let n = state.calls.len();
        let line = format!(
            "{n} call{}: {} {}, {} {} in {}",
            if n == 1 { "" } else { "s" },
            n - failed,
            style("✓").green(),
            failed,
            style("✗").red(),
            elapsed(self.started.elapsed())
        );
        let _ = self.bars.println(line);
        self.bars.clear().ok();
    }
}

impl State {
    /// The first call with this id that has not finished.
    fn running(&mut self, id: &str) -> Option<&mut Call> {
        self.calls
            .iter_mut()
            .find(|c| c.id == id && c.done.is_none())
    }
}

/// A finished call's block: its status line, then a preview of its result.
fn finished(call: &Call, result: &ToolResult, is_error: bool) -> String {
    let mark = if is_error {
        style("✗").red().bold()
    } else {
        style("✓").green().bold()
    };
    let mut out = format!("{mark} {}", style(&call.tool).bold());
    if !call.summary.is_empty() {
        out.push(' ');
        out.push_str(&call.summary);
    }
    let took = format!("({})", elapsed(call.started.elapsed()));
    out.push_str(&format!("  {}", style(took).dim()));
    let text = result.text();
    let lines: Vec<&str> = text.lines().collect();
    // Pi's truncation notice is the result's last line, in brackets.
    let notice = lines
        .last()
        .filter(|l| l.starts_with('[') && l.ends_with(']') && lines.len() > 1)
        .copied();
    let body = &lines[..lines.len() - usize::from(notice.is_some())];
    let body: Vec<&str> = match body.iter().rposition(|l| !l.trim().is_empty()) {
        Some(last) => body[..=last].to_vec(),
        None => Vec::new(),
    };
    for line in body.iter().take(PREVIEW_LINES) {
        let line = clip(line, WIDTH);
        let line = if is_error {
            style(line).red().to_string()
        } else {
            line
        };
        out.push_str(&format!("\n    {line}"));
    }
    if body.len() > PREVIEW_LINES {
        let more = body.len() - PREVIEW_LINES;
        let text = format!("… {more} more line{}", if more == 1 { "" } else { "s" });
        out.push_str(&format!("\n    {}", style(text).dim()));
    }
    for block in &result.content {
        if let ContentBlock::Image { data, mime_type } = block {
            let kib = data.len() * 3 / 4 / 1024;
            out.push_str(&format!(
                "\n    {}",
                style(format!("[image {}, {kib} KiB]", escape(mime_type))).dim()
            ));
        } else if let Some(line) = block.described() {
            out.push_str(&format!("\n    {}", style(escape(&line)).dim()));
        }
    }
    if let Some(notice) = notice {
        out.push_str(&format!("\n    {}", style(clip(notice, WIDTH)).yellow()));
    }
    out
}

/// The arguments on one line: the value of `command`, `path` or `pattern`
/// first and bare, then the others as `key=value`.
fn summary(args: &Value) -> String {
    let Some(map) = args.as_object() else {
        return clip(&args.to_string(), WIDTH);
    };
    const FIRST: [&str; 3] = ["command", "pattern", "path"];
    let mut parts = Vec::new();
    for key in FIRST {
        if let Some(Value::String(s)) = map.get(key) {
            parts.push(s.clone());
        }
    }
    for (key, value) in map {
        if FIRST.contains(&key.as_str()) && value.is_string() {
            continue;
        }
        let value = match value {
            Value::String(s) if !s.is_empty() && !s.contains(char::is_whitespace) => s.clone(),
            other => other.to_string(),
        };
        parts.push(format!("{key}={value}"));
    }
    clip(&parts.join(" "), WIDTH)
}

/// `text` on one line: its first `max` characters (then `…`), escaped.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", escape(&text[..end])),
        None => escape(text).into_owned(),
    }
}

fn elapsed(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_summed_up_on_one_line() {
        assert_eq!(
            summary(&json!({"path": "wit/tool.wit", "limit": 3})),
            "wit/tool.wit limit=3"
        );
        // A command's own line break and escape sequences are shown, not obeyed.
        assert_eq!(
            summary(&json!({"command": "ls -la\ncat x\u{1b}[2K"})),
            "ls -la\\x0acat x\\x1b[2K"
        );
        assert_eq!(
            summary(&json!({"pattern": "fn main", "path": "src", "ignoreCase": true})),
            "fn main src ignoreCase=true"
        );
        assert_eq!(
            summary(&json!({"content": "two words"})),
            "content=\"two words\""
        );
        assert_eq!(summary(&json!({})), "");
        assert_eq!(clip(&"x".repeat(120), 100).chars().count(), 101);
    }
}

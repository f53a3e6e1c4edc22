//! Asking the person at the terminal (`toolhost run` and `call`): the
//! question goes to the controlling terminal (`/dev/tty`), not to standard
//! output, so that it reaches a person even when the output is piped, and
//! the answer is read from it. A command a tool runs has no controlling
//! terminal (its own session), so it can neither read the answer nor type
//! one.
//!
//! ```text
//! toolhost: permission needed
//!   Tool http_get (component /home/u/.config/toolhost/extensions/httpget.wasm, blake3:…)
//!   wants to send HTTP requests to api.github.com:443
//!   because nothing grants it (permissions.default = "ask").
//!   Arguments: {"url":"https://api.github.com/zen"}
//! Allow? [o]nce, [s]ession, [a]lways, [d]eny (a reason may follow): d not today
//! ```

use futures::future::BoxFuture;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use toolhost::display::{Terminal as Writer, escape};
use toolhost::permissions::{Answer, Ask, Question};

/// Called with `true` before a question is shown and `false` after its
/// answer: what else draws on the terminal stops meanwhile.
type Hush = Arc<dyn Fn(bool) + Send + Sync>;

/// The person at the controlling terminal.
pub struct Terminal {
    tty: Mutex<File>,
    hush: Mutex<Option<Hush>>,
}

impl Terminal {
    /// The controlling terminal, when there is one to ask.
    pub fn open() -> Option<Arc<Terminal>> {
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        Some(Arc::new(Terminal {
            tty: Mutex::new(tty),
            hush: Mutex::new(None),
        }))
    }

    /// While a question is shown, call `hush` (see [`Hush`]): `run`'s view
    /// stops drawing its spinners.
    pub fn while_asking(&self, hush: impl Fn(bool) + Send + Sync + 'static) {
        *self.hush.lock().expect("terminal") = Some(Arc::new(hush));
    }
}

impl Ask for Terminal {
    fn front_end(&self) -> &str {
        "terminal"
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Option<Answer>> {
        let question = question.clone();
        self.on_tty(move |tty, withdrawn| prompt(tty, &question, withdrawn))
    }
}

impl Terminal {
    /// Run `work` with the terminal on a blocking thread, while what else
    /// draws on it is hushed. Withdrawn when the future is dropped (the
    /// batch was cancelled): the reading thread sees it within its poll
    /// interval.
    fn on_tty<T: Send + 'static>(
        &self,
        work: impl FnOnce(File, &AtomicBool) -> Option<T> + Send + 'static,
    ) -> BoxFuture<'static, Option<T>> {
        let Ok(tty) = self.tty.lock().expect("terminal").try_clone() else {
            return Box::pin(async { None });
        };
        let withdrawn = Arc::new(AtomicBool::new(false));
        let guard = Withdraw(withdrawn.clone());
        let hush = self.hush.lock().expect("terminal").clone();
        Box::pin(async move {
            let _guard = guard;
            tokio::task::spawn_blocking(move || {
                if let Some(hush) = &hush {
                    hush(true);
                }
                let done = work(tty, &withdrawn);
                if let Some(hush) = &hush {
                    hush(false);
                }
                done
            })
            .await
            .ok()
            .flatten()
        })
    }
}

struct Withdraw(Arc<AtomicBool>);

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Ask on `tty` until a valid answer (three tries, then no answer).
fn prompt(mut tty: File, question: &Question, withdrawn: &AtomicBool) -> Option<Answer> {
    // Every line shown goes through the terminal writer: the question's
    // parts are a tool's and the model's words.
    let mut out = Writer::new(tty.try_clone().ok()?, true);
    let text: String = question
        .text()
        .lines()
        .map(|line| format!("  {line}\n"))
        .collect();
    let choices = if question.always {
        "[o]nce, [s]ession, [a]lways, [d]eny"
    } else {
        "[o]nce, [s]ession, [d]eny"
    };
    writeln!(out, "toolhost: permission needed\n{}", text.trim_end()).ok()?;
    for _ in 0..3 {
        write!(out, "Allow? {choices} (a reason may follow): ").ok()?;
        out.flush().ok()?;
        let Some(line) = read_line(&mut tty, withdrawn) else {
            let _ = writeln!(out, "\ntoolhost: the question was withdrawn");
            return None;
        };
        let line = line.trim();
        let (word, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let name = match word.to_ascii_lowercase().as_str() {
            "o" | "once" => "once",
            "s" | "session" => "session",
            "a" | "always" if question.always => "always",
            "d" | "deny" | "n" | "no" => "deny",
            _ => {
                let _ = writeln!(out, "toolhost: answer one of {choices}");
                continue;
            }
        };
        let reason = Some(reason.trim().to_string());
        let answer = Answer::from_name(name, reason)?;
        let _ = writeln!(out, "toolhost: {}", said(&answer));
        return Some(answer);
    }
    None
}

fn said(answer: &Answer) -> String {
    match answer {
        Answer::Once => "allowed once".into(),
        Answer::Session => "allowed for this session".into(),
        Answer::Always => "allowed always (written to your toolhost.toml)".into(),
        Answer::Deny { reason: None } => "denied".into(),
        Answer::Deny {
            reason: Some(reason),
        } => format!("denied: {}", escape(reason)),
    }
}

/// One line from the terminal, polling so that a withdrawn question stops
/// waiting; `None` when withdrawn or the terminal closed.
fn read_line(tty: &mut File, withdrawn: &AtomicBool) -> Option<String> {
    let mut line = Vec::new();
    loop {
        if withdrawn.load(Ordering::SeqCst) {
            return None;
        }
        let fd = tty.as_fd();
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
        let mut byte = [0u8; 1];
        match tty.read(&mut byte) {
            Ok(0) | Err(_) => return None,
            Ok(_) if byte[0] == b'\n' => {
                return Some(String::from_utf8_lossy(&line).into_owned());
            }
            Ok(_) => line.push(byte[0]),
        }
        if line.len() > 4096 {
            return None;
        }
    }
}

/// A form a tool asks for (`toolhost:tool/client`), filled in at the
/// terminal: after the tool's message, one line per field, each ending in
/// [`FIELD_PROMPT`]:
///
/// ```text
/// toolhost: Tool deploy asks:
///   Deploy where?
/// Answer? [y]es, [n]o (decline) › y
///   env (one of staging, prod; required) › prod
/// ```
///
/// The terminal can fill in forms only: a tool asking for a completion of a
/// model or for roots is told this client cannot answer those.
impl toolhost::client::Client for Terminal {
    fn capabilities(&self) -> toolhost::client::ClientCaps {
        toolhost::client::ClientCaps {
            elicitation: true,
            ..Default::default()
        }
    }

    fn request<'a>(
        &'a self,
        tool: &'a str,
        requests: &'a [toolhost::client::ClientRequest],
    ) -> BoxFuture<'a, Result<Vec<serde_json::Value>, toolhost::client::ClientError>> {
        use toolhost::client::{ClientError, ClientMethod};
        if let Some(other) = requests
            .iter()
            .find(|r| r.method != ClientMethod::Elicitation)
        {
            let method = other.method;
            return Box::pin(async move { Err(ClientError::NotSupported(method)) });
        }
        let forms: Vec<serde_json::Value> =
            requests.iter().map(|r| r.attributed(tool).params).collect();
        let filled = self.on_tty(move |mut tty, withdrawn| {
            forms
                .iter()
                .map(|form| fill(&mut tty, form, withdrawn))
                .collect::<Option<Vec<_>>>()
        });
        Box::pin(async move { filled.await.ok_or(ClientError::Cancelled) })
    }
}

/// What ends every line of a form the terminal asks.
pub const FIELD_PROMPT: &str = " › ";

/// The elicitation result of the form `params` (MCP's `elicitation/create`
/// params), filled in on `tty`; `None` when withdrawn or the terminal
/// closed.
fn fill(
    tty: &mut File,
    params: &serde_json::Value,
    withdrawn: &AtomicBool,
) -> Option<serde_json::Value> {
    use serde_json::{Value, json};
    // Every line shown goes through the terminal writer: the form is the
    // client's, its texts and names anyone's.
    let mut out = Writer::new(tty.try_clone().ok()?, true);
    let message = params["message"].as_str().unwrap_or_default();
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default();
    writeln!(out, "toolhost: {}", escape(first)).ok()?;
    for line in lines {
        writeln!(out, "  {}", escape(line)).ok()?;
    }
    let ask = |out: &mut Writer<File>, tty: &mut File, label: &str| -> Option<String> {
        write!(out, "{label}{FIELD_PROMPT}").ok()?;
        out.flush().ok()?;
        read_line(tty, withdrawn).map(|l| l.trim().to_string())
    };
    let answer = ask(&mut out, tty, "Answer? [y]es, [n]o (decline)")?;
    if !matches!(answer.to_ascii_lowercase().as_str(), "y" | "yes") {
        let _ = writeln!(out, "toolhost: declined");
        return Some(json!({"action": "decline"}));
    }
    let schema = &params["requestedSchema"];
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = serde_json::Map::new();
    let empty = serde_json::Map::new();
    for (name, field) in schema["properties"].as_object().unwrap_or(&empty) {
        let needed = required.contains(&name.as_str());
        let mut tries = 0;
        loop {
            let label = format!("  {}{}", escape(name), describe(field, needed));
            let line = ask(&mut out, tty, &label)?;
            match value_of(field, &line) {
                Ok(Some(value)) => {
                    content.insert(name.clone(), value);
                    break;
                }
                Ok(None) if !needed => break,
                Ok(None) => {
                    let _ = writeln!(out, "toolhost: {} is required", escape(name));
                }
                Err(why) => {
                    let _ = writeln!(out, "toolhost: {}", escape(&why));
                }
            }
            tries += 1;
            if tries == 3 {
                let _ = writeln!(out, "toolhost: cancelled");
                return Some(json!({"action": "cancel"}));
            }
        }
    }
    Some(json!({"action": "accept", "content": content}))
}

/// The choices a field offers (an enum, `oneOf`/`anyOf` of consts), if any.
fn choices(field: &serde_json::Value) -> Vec<String> {
    let of = |list: &serde_json::Value| -> Vec<String> {
        list.as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.get("const").or(Some(i)).and_then(|c| c.as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    for key in ["enum", "oneOf", "anyOf"] {
        if field.get(key).is_some() {
            return of(&field[key]);
        }
    }
    let items = &field["items"];
    for key in ["enum", "anyOf", "oneOf"] {
        if items.get(key).is_some() {
            return of(&items[key]);
        }
    }
    Vec::new()
}

/// ` (one of a, b; default x; required)`: what the line asks for.
fn describe(field: &serde_json::Value, required: bool) -> String {
    let mut parts = Vec::new();
    let kind = field["type"].as_str().unwrap_or("string");
    let options = choices(field);
    if !options.is_empty() {
        let some = if kind == "array" { "some of" } else { "one of" };
        parts.push(format!("{some} {}", options.join(", ")));
    } else if kind != "string" {
        parts.push(kind.to_string());
    }
    if let Some(default) = field.get("default") {
        parts.push(format!("default {default}"));
    }
    if required {
        parts.push("required".into());
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", escape(&parts.join("; "))),
    }
}

/// The value `line` gives `field`: `None` for an empty line (its default,
/// if it has one, stands); an error says what would do.
fn value_of(field: &serde_json::Value, line: &str) -> Result<Option<serde_json::Value>, String> {
    use serde_json::{Value, json};
    if line.is_empty() {
        return Ok(field.get("default").cloned());
    }
    let options = choices(field);
    let check = |v: &str| -> Result<(), String> {
        if options.is_empty() || options.iter().any(|o| o == v) {
            Ok(())
        } else {
            Err(format!("answer one of {}", options.join(", ")))
        }
    };
    match field["type"].as_str().unwrap_or("string") {
        "integer" => line
            .parse::<i64>()
            .map(|n| Some(json!(n)))
            .map_err(|_| "answer a whole number".into()),
        "number" => line
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| "answer a number".into()),
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Some(json!(true))),
            "n" | "no" | "false" => Ok(Some(json!(false))),
            _ => Err("answer yes or no".into()),
        },
        "array" => {
            let items: Vec<&str> = line
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            for item in &items {
                check(item)?;
            }
            Ok(Some(json!(items)))
        }
        _ => {
            check(line)?;
            Ok(Some(json!(line)))
        }
    }
}

//! `toolhost run`: an assistant message's calls as a batch, shown on a terminal or as JSON
//! lines, with the session processes' ends.

use crate::*;

pub(crate) async fn run_batch(
    host: &Host,
    file: &str,
    json: bool,
    terminal: Option<&ask::Terminal>,
) -> Result<ExitCode> {
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the assistant message from stdin")?;
        s
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?
    };
    let raw: Value =
        serde_json::from_str(&text).with_context(|| format!("{file} is not valid JSON"))?;
    let message = match AssistantMessage::from_json(raw) {
        Ok(m) => m,
        Err(e) => bail!("{file}: {e}"),
    };
    run_message(host, &message, json, terminal).await
}

/// Run `message`'s calls as a batch, shown on a terminal (unless `json`)
/// or as JSON lines.
pub(crate) async fn run_message(
    host: &Host,
    message: &AssistantMessage,
    json: bool,
    terminal: Option<&ask::Terminal>,
) -> Result<ExitCode> {
    use std::io::IsTerminal;
    if !json && std::io::stdout().is_terminal() {
        let view = Arc::new(view::View::new());
        if let Some(terminal) = terminal {
            let quiet = view.clone();
            terminal.while_asking(move |on| quiet.hush(on));
        }
        let shown = view.clone();
        let sink = Arc::new(move |event: Event| shown.event(&event));
        let ends = ProcessEnds::tell(host, |info| println!("{}", info.ended()));
        host.batch(message)
            .cancel(cancel_on_ctrl_c())
            .events(sink)
            .await;
        view.finish();
        ends.finish(host).await;
        return Ok(ExitCode::SUCCESS);
    }
    let out = Lines::stdout();
    let lines = out.clone();
    let sink = Arc::new(move |event: Event| lines.send_event(&event));
    let told = out.clone();
    let ends = ProcessEnds::tell(host, move |info| {
        let mut line = info.to_json();
        line["type"] = "process_exit".into();
        told.send_with(|buf| serde_json::to_writer(buf, &line).is_ok());
    });
    let outcome = host
        .batch(message)
        .cancel(cancel_on_ctrl_c())
        .events(sink)
        .await;
    out.send_turn_end(&message.raw, &outcome.results, outcome.terminate);
    ends.finish(host).await;
    out.finish();
    Ok(ExitCode::SUCCESS)
}

/// The ends of a run's session processes, told as they come: a run is one
/// session, so those still running when its batch is done are stopped, and
/// their ends told too, before it exits.
pub(crate) struct ProcessEnds {
    teller: tokio::task::JoinHandle<()>,
    /// The processes whose end was told.
    told: Arc<std::sync::Mutex<std::collections::HashSet<u32>>>,
}

impl ProcessEnds {
    fn tell(host: &Host, tell: impl Fn(&toolhost::ProcessInfo) + Send + 'static) -> ProcessEnds {
        let mut exits = host.session_processes().exits();
        let told = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
        let counted = told.clone();
        let teller = tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match exits.recv().await {
                    Ok(info) => {
                        tell(&info);
                        counted.lock().expect("told lock").insert(info.id);
                    }
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                }
            }
        });
        ProcessEnds { teller, told }
    }

    /// Stop what still runs and tell its end (waiting at most a few
    /// seconds for it).
    async fn finish(self, host: &Host) {
        let processes = host.session_processes();
        // Every one the run started, the ended ones' news perhaps still on
        // its way.
        let all: Vec<u32> = processes.list().iter().map(|p| p.id).collect();
        processes.end(std::time::Duration::from_secs(10)).await;
        for _ in 0..500 {
            if all
                .iter()
                .all(|id| self.told.lock().expect("told lock").contains(id))
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.teller.abort();
    }
}

/// JSON lines to stdout from any thread, each written whole and in the
/// order sent. A sender serialises on its own thread and appends to one
/// shared buffer; one writer thread takes the buffer and writes it. The
/// writer is woken only when the buffer was empty, and then lets
/// [`COALESCE`] pass before it takes what has come, so a batch's events
/// cost a wake-up and a write per burst, not per event (2,001 `read` calls:
/// 8,000 events): the calls' threads never wait for stdout, and a reader
/// still sees each line within a fraction of a millisecond.
#[derive(Clone)]
pub(crate) struct Lines {
    shared: Arc<LinesShared>,
    writer: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
    /// Each result message as serialised for its `message_start`, by call
    /// id in the order sent: its `message_end` and the `turn_end` repeat
    /// those bytes instead of serialising the content three more times.
    messages: Arc<std::sync::Mutex<SentMessages>>,
}

/// Result messages' bytes by call id, in the order sent (ids may repeat).
pub(crate) type SentMessages = std::collections::HashMap<String, Vec<Arc<[u8]>>>;

pub(crate) struct LinesShared {
    pending: std::sync::Mutex<Pending>,
    ready: std::sync::Condvar,
}

#[derive(Default)]
pub(crate) struct Pending {
    bytes: Vec<u8>,
    ended: bool,
}

/// How long the writer lets lines gather after the first of a burst.
pub(crate) const COALESCE: Duration = Duration::from_micros(200);

impl Lines {
    fn stdout() -> Lines {
        let shared = Arc::new(LinesShared {
            pending: std::sync::Mutex::new(Pending::default()),
            ready: std::sync::Condvar::new(),
        });
        let theirs = shared.clone();
        let writer = std::thread::spawn(move || {
            // JSON lines: on a terminal, the same JSON with nothing in it a
            // terminal obeys (`toolhost::display::escape_json`).
            let terminal = Terminal::stdout().is_terminal();
            let mut out = Terminal::new(std::io::stdout().lock(), terminal);
            let mut spare = Vec::new();
            loop {
                let mut pending = theirs.pending.lock().expect("lines lock");
                while pending.bytes.is_empty() && !pending.ended {
                    pending = theirs.ready.wait(pending).expect("lines lock");
                }
                if !pending.ended {
                    drop(pending);
                    std::thread::sleep(COALESCE);
                    pending = theirs.pending.lock().expect("lines lock");
                }
                std::mem::swap(&mut pending.bytes, &mut spare);
                let ended = pending.ended;
                drop(pending);
                if let Err(e) = out
                    .write_bytes(Form::Json, &spare)
                    .and_then(|()| out.flush())
                {
                    stdout_failed(e);
                }
                spare.clear();
                // `finish` comes after the last line, and the swap took
                // everything sent before it.
                if ended {
                    return;
                }
            }
        });
        Lines {
            shared,
            writer: Arc::new(std::sync::Mutex::new(Some(writer))),
            messages: Arc::default(),
        }
    }

    fn send(&self, value: &impl serde::Serialize) {
        self.send_with(|line| serde_json::to_writer(line, value).is_ok());
    }

    /// One event, as `send` would write it; a result message's bytes are
    /// made once (Pi sends each message's `message_end` right after its
    /// `message_start`, so an id's last bytes are that message's).
    fn send_event(&self, event: &Event) {
        let (kind, message) = match event {
            Event::MessageStart { message } => ("message_start", message),
            Event::MessageEnd { message } => ("message_end", message),
            other => return self.send(other),
        };
        let mut messages = self.messages.lock().expect("messages lock");
        let sent = messages.entry(message.tool_call_id.clone()).or_default();
        let bytes = match (kind, sent.last()) {
            ("message_end", Some(bytes)) => bytes.clone(),
            _ => match serde_json::to_vec(message) {
                Ok(bytes) => {
                    sent.push(bytes.into());
                    sent[sent.len() - 1].clone()
                }
                Err(_) => return,
            },
        };
        drop(messages);
        self.send_with(|line| {
            line.extend_from_slice(b"{\"type\":\"");
            line.extend_from_slice(kind.as_bytes());
            line.extend_from_slice(b"\",\"message\":");
            line.extend_from_slice(&bytes);
            line.push(b'}');
            true
        });
    }

    /// `{"type":"turn_end","message":…,"toolResults":[…],"terminate":…}`,
    /// the results' bytes those of their `message_start`.
    fn send_turn_end(&self, message: &Value, results: &[ToolResultMessage], terminate: bool) {
        let sent = std::mem::take(&mut *self.messages.lock().expect("messages lock"));
        let mut taken: std::collections::HashMap<&str, usize> = Default::default();
        self.send_with(|line| {
            line.extend_from_slice(b"{\"type\":\"turn_end\",\"message\":");
            if serde_json::to_writer(&mut *line, message).is_err() {
                return false;
            }
            line.extend_from_slice(b",\"toolResults\":[");
            for (i, result) in results.iter().enumerate() {
                if i > 0 {
                    line.push(b',');
                }
                let nth = taken.entry(result.tool_call_id.as_str()).or_default();
                match sent.get(&result.tool_call_id).and_then(|b| b.get(*nth)) {
                    Some(bytes) => line.extend_from_slice(bytes),
                    None => {
                        if serde_json::to_writer(&mut *line, result).is_err() {
                            return false;
                        }
                    }
                }
                *nth += 1;
            }
            line.extend_from_slice(b"],\"terminate\":");
            line.extend_from_slice(if terminate { b"true" } else { b"false" });
            line.push(b'}');
            true
        });
    }

    /// Append the line `write` makes (unless it fails) and wake the writer.
    fn send_with(&self, write: impl FnOnce(&mut Vec<u8>) -> bool) {
        thread_local! {
            static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        LINE.with_borrow_mut(|line| {
            line.clear();
            if !write(&mut *line) {
                return;
            }
            line.push(b'\n');
            let mut pending = self.shared.pending.lock().expect("lines lock");
            let was_empty = pending.bytes.is_empty();
            pending.bytes.extend_from_slice(line);
            drop(pending);
            if was_empty {
                self.shared.ready.notify_one();
            }
        });
    }

    /// Write every line sent so far, then stop the writer.
    fn finish(self) {
        self.shared.pending.lock().expect("lines lock").ended = true;
        self.shared.ready.notify_one();
        if let Some(writer) = self.writer.lock().expect("writer lock").take() {
            let _ = writer.join();
        }
    }
}

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
use toolhost::display::escape;
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
        let tty = match self.tty.lock().expect("terminal").try_clone() {
            Ok(tty) => tty,
            Err(_) => return Box::pin(async { None }),
        };
        let question = question.clone();
        // Withdrawn when the future is dropped (the batch was cancelled):
        // the reading thread sees it within its poll interval.
        let withdrawn = Arc::new(AtomicBool::new(false));
        let guard = Withdraw(withdrawn.clone());
        let hush = self.hush.lock().expect("terminal").clone();
        Box::pin(async move {
            let _guard = guard;
            tokio::task::spawn_blocking(move || {
                if let Some(hush) = &hush {
                    hush(true);
                }
                let answer = prompt(tty, &question, &withdrawn);
                if let Some(hush) = &hush {
                    hush(false);
                }
                answer
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
    writeln!(tty, "toolhost: permission needed\n{}", text.trim_end()).ok()?;
    for _ in 0..3 {
        write!(tty, "Allow? {choices} (a reason may follow): ").ok()?;
        tty.flush().ok()?;
        let Some(line) = read_line(&mut tty, withdrawn) else {
            let _ = writeln!(tty, "\ntoolhost: the question was withdrawn");
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
                let _ = writeln!(tty, "toolhost: answer one of {choices}");
                continue;
            }
        };
        let reason = Some(reason.trim().to_string());
        let answer = Answer::from_name(name, reason)?;
        let _ = writeln!(tty, "toolhost: {}", said(&answer));
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

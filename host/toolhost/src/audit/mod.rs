//! The audit log: one JSON line per call, saying what ran and what it did.
//!
//! A line holds when the call started, the session, the call's id, the tool
//! and the digest of the component that served it, the arguments with their
//! secrets redacted ([`redact`]), what the call used of its capabilities
//! (paths read and written through the Operations, programs started, hosts
//! contacted, what it was refused: [`crate::ops::usage`]), how it ended and
//! how long it took. The file is opened for appending, created `0600`, and
//! is a protected path: no tool writes it.
//!
//! Writing never slows or fails a call. Lines go through a bounded queue to
//! one writer thread; a full queue or a file that cannot be written loses
//! lines, counts them, and reports the first failure once (through the
//! reporter the log was opened with). When writing works again, the log
//! first records how many lines were lost and why.
//!
//! [`read`] parses a log back and filters it (`toolhost audit`).

mod processes;
pub mod redact;

pub(crate) use processes::ProcessAudit;

use crate::ops::usage::Used;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Lines waiting for the writer before new ones are lost.
const QUEUE: usize = 4096;

/// How a call ended, as the audit log says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The tool ran and returned a result that is not an error.
    Ok,
    /// The tool ran and reported an error (or an after hook made it one).
    Error,
    /// The tool is not in the (active) set.
    NotFound,
    /// Its arguments failed validation, or its prepare step threw.
    Invalid,
    /// A before hook blocked it.
    Blocked,
    /// Cancelled before or while it ran.
    Cancelled,
    /// Stopped at its time limit.
    Timeout,
    /// It trapped, ran out of memory, or could not start.
    Crashed,
    /// Never run: the model's message was cut off.
    NotRun,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::NotFound => "not-found",
            Outcome::Invalid => "invalid",
            Outcome::Blocked => "blocked",
            Outcome::Cancelled => "cancelled",
            Outcome::Timeout => "timeout",
            Outcome::Crashed => "crashed",
            Outcome::NotRun => "not-run",
        }
    }

    /// Every outcome, for parsing a filter.
    pub const ALL: [Outcome; 9] = [
        Outcome::Ok,
        Outcome::Error,
        Outcome::NotFound,
        Outcome::Invalid,
        Outcome::Blocked,
        Outcome::Cancelled,
        Outcome::Timeout,
        Outcome::Crashed,
        Outcome::NotRun,
    ];
}

impl std::str::FromStr for Outcome {
    type Err = String;

    fn from_str(s: &str) -> Result<Outcome, String> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
                format!("unknown outcome {s:?}: one of {}", names.join(", "))
            })
    }
}

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// When the call started (RFC 3339, UTC, milliseconds).
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub tool_call_id: String,
    /// The call whose tool made this one through the host (`call-tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    pub tool: String,
    /// The digest of the component that served the call (`blake3:…`);
    /// absent when no tool of that name was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The arguments the model sent, secrets redacted.
    pub arguments: Value,
    /// What the call used of its capabilities.
    #[serde(default)]
    pub used: Used,
    pub outcome: Outcome,
    /// The first line of an error result (at most 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: f64,
}

impl Entry {
    /// What the call used, as a person reads it: each non-empty list with
    /// the word its capability shows it with (`ran`, `read`, `wrote`,
    /// `contacted`), then what the host refused and what it put back.
    pub fn used_lines(&self) -> Vec<(&'static str, &[String])> {
        crate::capability::audit_lists(&self.used)
            .into_iter()
            .filter(|(_, list)| !list.is_empty())
            .collect()
    }
}

/// A line that records lost lines (written before the next one that could
/// be written).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Lost<'a> {
    time: String,
    lost: u64,
    reason: &'a str,
}

/// Where an audit log's one failure report goes.
pub type Reporter = Arc<dyn Fn(&str) + Send + Sync>;

/// A reporter that says it on standard error (the host's default), through
/// the terminal writer (`crate::display`): it names the log's path.
pub fn stderr_reporter() -> Reporter {
    Arc::new(|text: &str| {
        let line = format!("toolhost: warning: {}", crate::display::escape(text));
        let _ = crate::display::Terminal::stderr().line(crate::display::Form::Text, &line);
    })
}

/// An open audit log. Dropping it writes what is queued, then closes it.
pub struct AuditLog {
    path: PathBuf,
    tx: Option<mpsc::SyncSender<Vec<u8>>>,
    shared: Arc<Shared>,
    writer: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    /// Lines lost since the last that was written.
    lost: AtomicU64,
    /// Why the first of them was lost.
    reason: Mutex<Option<String>>,
    /// The failure has been reported (once per log).
    reported: AtomicBool,
    report: Reporter,
    path: PathBuf,
}

impl Shared {
    fn lose(&self, lines: u64, reason: impl FnOnce() -> String) {
        self.lost.fetch_add(lines, Ordering::Relaxed);
        let mut why = self.reason.lock().expect("audit reason lock");
        if why.is_none() {
            *why = Some(reason());
        }
        if !self.reported.swap(true, Ordering::Relaxed) {
            let why = why.clone().unwrap_or_default();
            (self.report)(&format!(
                "audit log {}: {why}; calls go on, unrecorded while it lasts (said once)",
                self.path.display()
            ));
        }
    }
}

impl AuditLog {
    /// A log appending to `path`, which is created (`0600`) if missing; the
    /// first failure to write it is reported to `report`. It is opened now,
    /// before any tool runs (so that no tool can plant something there
    /// first), and opened again after a failure; a path that cannot be
    /// opened is a failure like a write that fails.
    pub fn open(path: impl Into<PathBuf>, report: Reporter) -> AuditLog {
        let path = path.into();
        let shared = Arc::new(Shared {
            lost: AtomicU64::new(0),
            reason: Mutex::new(None),
            reported: AtomicBool::new(false),
            report,
            path: path.clone(),
        });
        let file = open_append(&path)
            .map_err(|e| shared.lose(0, || e.to_string()))
            .ok();
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let writer_shared = shared.clone();
        let writer = std::thread::Builder::new()
            .name("toolhost-audit".into())
            .spawn(move || write_lines(&writer_shared, file, &rx))
            .map_err(|e| shared.lose(0, || format!("cannot start its writer: {e}")))
            .ok();
        AuditLog {
            path,
            tx: writer.is_some().then_some(tx),
            shared,
            writer,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queue one entry; never waits.
    pub fn record(&self, entry: &Entry) {
        let Some(tx) = &self.tx else { return };
        let mut line = serde_json::to_vec(entry).expect("an audit entry serializes");
        line.push(b'\n');
        match tx.try_send(line) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => self.shared.lose(1, || {
                format!("the writer fell {QUEUE} lines behind (a slow disk)")
            }),
            Err(mpsc::TrySendError::Disconnected(_)) => {
                self.shared.lose(1, || "its writer stopped".into())
            }
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The writer thread: lines as they come, in bursts of what is waiting.
fn write_lines(shared: &Shared, mut file: Option<File>, rx: &mpsc::Receiver<Vec<u8>>) {
    while let Ok(first) = rx.recv() {
        let mut burst = first;
        let mut lines = 1u64;
        while let Ok(more) = rx.try_recv() {
            burst.extend_from_slice(&more);
            lines += 1;
        }
        let written = (|| -> std::io::Result<()> {
            let f = match &mut file {
                Some(f) => f,
                None => file.insert(open_append(&shared.path)?),
            };
            let lost = shared.lost.load(Ordering::Relaxed);
            if lost > 0 {
                let reason = shared.reason.lock().expect("audit reason lock").clone();
                let mut note = serde_json::to_vec(&Lost {
                    time: timestamp(SystemTime::now()),
                    lost,
                    reason: reason.as_deref().unwrap_or(""),
                })
                .expect("a note serializes");
                note.push(b'\n');
                f.write_all(&note)?;
                shared.lost.fetch_sub(lost, Ordering::Relaxed);
                *shared.reason.lock().expect("audit reason lock") = None;
            }
            f.write_all(&burst)
        })();
        if let Err(e) = written {
            // Opened again for the next burst: the file may have been
            // replaced, or the disk freed.
            file = None;
            shared.lose(lines, || e.to_string());
        }
    }
}

/// Open for appending, never through a symlink at `path` itself.
/// Open the log for appending, its directory made (private) when missing:
/// `~/.local/state/toolhost/` need not exist before the first call.
fn open_append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// RFC 3339 in UTC with milliseconds, as the log writes times.
pub fn timestamp(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The first line of an error text, at most 200 characters.
pub(crate) fn error_summary(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(200) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

/// Which entries [`read`] keeps.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub tool: Option<String>,
    pub outcome: Option<Outcome>,
    /// Entries that started at or after this time.
    pub since: Option<SystemTime>,
    /// Entries that started before this time.
    pub until: Option<SystemTime>,
    /// Only calls that asked the person (`toolhost audit --asked`).
    pub asked: bool,
}

impl Filter {
    pub fn keeps(&self, entry: &Entry) -> bool {
        if self.asked && entry.used.asked.is_empty() {
            return false;
        }
        if self.tool.as_ref().is_some_and(|t| *t != entry.tool) {
            return false;
        }
        if self.outcome.is_some_and(|o| o != entry.outcome) {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            let Some(time) = parse_time(&entry.time) else {
                return false;
            };
            if self.since.is_some_and(|since| time < since)
                || self.until.is_some_and(|until| time >= until)
            {
                return false;
            }
        }
        true
    }
}

/// A time as the log writes it (or any RFC 3339 time).
pub fn parse_time(text: &str) -> Option<SystemTime> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(SystemTime::from)
}

/// A time given on a command line: RFC 3339 (`2026-12-02T10:00:00Z`), or
/// how long before `now` (`90s`, `15m`, `2h`, `7d`).
pub fn parse_when(text: &str, now: SystemTime) -> Result<SystemTime, String> {
    if let Some(time) = parse_time(text) {
        return Ok(time);
    }
    let bad = || {
        format!(
            "{text:?} is neither an RFC 3339 time (2026-12-02T10:00:00Z) nor a time ago \
             (90s, 15m, 2h, 7d)"
        )
    };
    let split = text.len().checked_sub(1).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(bad()),
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    n.checked_mul(seconds)
        .and_then(|s| now.checked_sub(std::time::Duration::from_secs(s)))
        .ok_or_else(bad)
}

/// What reading a log found: the entries kept, and what was not an entry.
#[derive(Debug, Default)]
pub struct Read {
    pub entries: Vec<Entry>,
    /// Notes of lost lines: (time, count, reason).
    pub lost: Vec<(String, u64, String)>,
    /// Lines that are neither, with their numbers (a torn last line, say).
    pub malformed: Vec<(usize, String)>,
}

/// Read the log at `path`, keeping the entries `filter` keeps.
pub fn read(path: &Path, filter: &Filter) -> std::io::Result<Read> {
    let file = File::open(path)?;
    let mut out = Read::default();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Entry>(&line) {
            Ok(entry) => {
                if filter.keeps(&entry) {
                    out.entries.push(entry);
                }
            }
            Err(e) => {
                let note = serde_json::from_str::<Value>(&line).ok().and_then(|v| {
                    Some((
                        v.get("time")?.as_str()?.to_string(),
                        v.get("lost")?.as_u64()?,
                        v.get("reason")?.as_str()?.to_string(),
                    ))
                });
                match note {
                    Some(note) => out.lost.push(note),
                    None => out.malformed.push((i + 1, e.to_string())),
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tool: &str, outcome: Outcome, time: &str) -> Entry {
        Entry {
            time: time.into(),
            session: None,
            tool_call_id: "c1".into(),
            parent_tool_call_id: None,
            tool: tool.into(),
            component: Some("blake3:00".into()),
            arguments: serde_json::json!({}),
            used: Used::default(),
            outcome,
            error: None,
            duration_ms: 1.5,
        }
    }

    #[test]
    fn entries_are_written_and_read_back_filtered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, Arc::new(|_: &str| panic!("no failure")));
        log.record(&entry("read", Outcome::Ok, "2026-12-02T01:00:00.000Z"));
        log.record(&entry("bash", Outcome::Error, "2026-12-02T02:00:00.000Z"));
        drop(log);
        let all = read(&path, &Filter::default()).unwrap();
        assert_eq!(all.entries.len(), 2);
        let bash = Filter {
            tool: Some("bash".into()),
            ..Filter::default()
        };
        assert_eq!(read(&path, &bash).unwrap().entries[0].tool, "bash");
        let late = Filter {
            since: parse_time("2026-12-02T01:30:00Z"),
            ..Filter::default()
        };
        assert_eq!(read(&path, &late).unwrap().entries.len(), 1);
        let ok = Filter {
            outcome: Some("ok".parse().unwrap()),
            ..Filter::default()
        };
        assert_eq!(read(&path, &ok).unwrap().entries[0].tool, "read");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_full_disk_is_reported_once_and_calls_go_on() {
        let reports = Arc::new(Mutex::new(Vec::new()));
        let seen = reports.clone();
        let log = AuditLog::open(
            "/dev/full",
            Arc::new(move |text: &str| seen.lock().unwrap().push(text.to_string())),
        );
        for _ in 0..5 {
            log.record(&entry("read", Outcome::Ok, "2026-12-02T01:00:00.000Z"));
        }
        drop(log);
        let reports = reports.lock().unwrap();
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].contains("/dev/full"), "{}", reports[0]);
        assert!(reports[0].contains("No space left"), "{}", reports[0]);
    }

    #[test]
    fn lost_lines_are_noted_when_writing_works_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, Arc::new(|_: &str| {}));
        log.shared.lose(3, || "the disk was full".into());
        log.record(&entry("read", Outcome::Ok, "2026-12-02T01:00:00.000Z"));
        drop(log);
        let back = read(&path, &Filter::default()).unwrap();
        assert_eq!(back.lost.len(), 1);
        assert_eq!(back.lost[0].1, 3);
        assert_eq!(back.lost[0].2, "the disk was full");
        assert_eq!(back.entries.len(), 1);
    }

    #[test]
    fn times_are_given_as_rfc_3339_or_as_time_ago() {
        let now = parse_time("2026-12-02T10:00:00Z").unwrap();
        assert_eq!(
            parse_when("2h", now),
            parse_time("2026-12-02T08:00:00Z").ok_or(String::new())
        );
        assert_eq!(
            parse_when("2026-12-01T00:00:00Z", now),
            Ok(parse_time("2026-12-01T00:00:00Z").unwrap())
        );
        let err = parse_when("yesterday", now).unwrap_err();
        assert!(err.contains("\"yesterday\" is neither"), "{err}");
        assert!(parse_when("", now).is_err());
        assert!(parse_when("5w", now).is_err());
    }

    #[test]
    fn error_summaries_are_one_short_line() {
        assert_eq!(error_summary("first\nsecond"), "first");
        let long = "x".repeat(300);
        assert_eq!(error_summary(&long).chars().count(), 201);
    }
}

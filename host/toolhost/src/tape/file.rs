//! The recording's file (`docs/recording.md`): JSON lines, written as the
//! calls run, each line ending with a chained hash (`"chain"`: the BLAKE3
//! of the previous line's chain and this line without its own), and bytes
//! kept once each as blob lines named by their BLAKE3 digest. A reader
//! refuses a line whose chain or a blob whose digest does not match: a
//! recording changed after it was written is not replayed.

use super::wasi::Seen;
use super::{Asked, Serving};
use crate::files::Digest;
use crate::message::ToolResult;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The version of the format this release writes and reads.
pub const FORMAT: u32 = 1;

/// Where bytes are kept by their digest.
pub(crate) trait Blobs {
    /// `bytes`' digest, with the bytes kept under it (recording) or only
    /// named (replaying: to compare what a component writes).
    fn keep(&self, bytes: &[u8]) -> String;
    fn get(&self, digest: &str) -> Option<Vec<u8>>;
}

/// What a recording says of itself, on its first line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordingHeader {
    /// [`FORMAT`].
    pub format: u32,
    /// The toolhost release that wrote it (`toolhost 0.1.0`).
    pub release: String,
    /// What ran (`call`, `run --json`, `mcp`, a library's name).
    pub command: String,
    /// The workspace the calls ran in, on the machine that recorded them.
    pub workspace: String,
    /// The Pi profile of the texts (`0.85`, `1.6`).
    pub pi: String,
}

/// The end of a line: its chain.
const CHAIN_KEY: &str = ",\"chain\":\"";

/// The chain of the line `body` (without its chain) after `previous`.
fn chain(previous: &str, body: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(previous.as_bytes());
    hasher.update(b"\n");
    hasher.update(body.as_bytes());
    format!("blake3:{}", hasher.finalize().to_hex())
}

/// Writes a recording as the calls run. Bounded: past `limit` bytes it
/// writes one last line saying so and stops; the calls go on unrecorded.
#[derive(Debug)]
pub(crate) struct Recorder {
    path: PathBuf,
    limit: u64,
    writer: Mutex<Writer>,
}

#[derive(Debug)]
struct Writer {
    /// `None` once the bound was reached or a write failed.
    file: Option<BufWriter<std::fs::File>>,
    chain: String,
    written: u64,
    kept: HashSet<String>,
    calls: u64,
    messages: u64,
    stopped: Option<String>,
}

/// The bound of a recording unless told otherwise.
pub const DEFAULT_LIMIT: u64 = 1 << 30;

impl Recorder {
    /// A new recording at `path` (replacing what is there, readable by its
    /// owner only: it holds what the tools read).
    pub(crate) fn create(
        path: &Path,
        header: &RecordingHeader,
        limit: u64,
    ) -> std::io::Result<Recorder> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        let recorder = Recorder {
            path: path.to_path_buf(),
            limit,
            writer: Mutex::new(Writer {
                file: Some(BufWriter::new(file)),
                chain: String::new(),
                written: 0,
                kept: HashSet::new(),
                calls: 0,
                messages: 0,
                stopped: None,
            }),
        };
        let mut first = json!({ "recording": "toolhost" });
        if let (Value::Object(line), Ok(Value::Object(h))) =
            (&mut first, serde_json::to_value(header))
        {
            line.extend(h);
        }
        recorder.line(first);
        recorder.flush();
        Ok(recorder)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Why it stopped recording before the end, if it did.
    pub(crate) fn stopped(&self) -> Option<String> {
        self.writer.lock().expect("recorder lock").stopped.clone()
    }

    /// Append `line` (a JSON object) with its chain.
    pub(crate) fn line(&self, line: Value) {
        let mut w = self.writer.lock().expect("recorder lock");
        w.write(&line, self.limit, &self.path);
    }

    pub(crate) fn flush(&self) {
        let mut w = self.writer.lock().expect("recorder lock");
        if let Some(file) = &mut w.file
            && let Err(e) = file.flush()
        {
            w.stop(format!("writing it failed: {e}"));
        }
    }

    /// Record a message whose calls a front end sends.
    pub(crate) fn message(&self, message: &Value, any_tool: bool) {
        let mut w = self.writer.lock().expect("recorder lock");
        let n = w.messages;
        w.messages += 1;
        let line = json!({ "message": n, "assistant": message, "any_tool": any_tool });
        w.write(&line, self.limit, &self.path);
    }

    /// Record the extensions a host loaded: each one's name, digest, file
    /// and grant (written again when a host is built again).
    pub(crate) fn components(&self, components: &[RecordedComponent]) {
        let mut w = self.writer.lock().expect("recorder lock");
        for component in components {
            let line = json!({ "component": component });
            w.write(&line, self.limit, &self.path);
        }
    }

    /// Number the call `serving` begins, and record its start.
    pub(crate) fn begin_call(&self, serving: &Serving<'_>, seed: u128) -> u64 {
        let mut w = self.writer.lock().expect("recorder lock");
        let n = w.calls;
        w.calls += 1;
        let start = json!({
            "call": n,
            "start": {
                "id": serving.call.id,
                "tool": serving.call.name,
                "arguments": serving.call.arguments,
                "component": serving.digest,
                "source": serving.source,
                "parent": serving.parent,
                "seed": format!("{seed:032x}"),
            }
        });
        w.write(&start, self.limit, &self.path);
        n
    }
}

impl Writer {
    fn write(&mut self, line: &Value, limit: u64, path: &Path) {
        let Some(file) = &mut self.file else {
            return;
        };
        let body = line.to_string();
        if self.written + body.len() as u64 + 90 > limit {
            let said = format!(
                "the recording reached its bound of {limit} bytes; what came after is not recorded"
            );
            let stop = json!({ "stopped": said }).to_string();
            let _ = Self::put(file, &mut self.chain, &stop);
            let _ = file.flush();
            self.stop(format!("{}: {said}", path.display()));
            return;
        }
        match Self::put(file, &mut self.chain, &body) {
            Ok(n) => self.written += n,
            Err(e) => self.stop(format!("writing {} failed: {e}", path.display())),
        }
    }

    fn put(
        file: &mut BufWriter<std::fs::File>,
        previous: &mut String,
        body: &str,
    ) -> std::io::Result<u64> {
        let chained = chain(previous, body);
        let open = body.strip_suffix('}').unwrap_or(body);
        let line = format!("{open}{CHAIN_KEY}{chained}\"}}\n");
        file.write_all(line.as_bytes())?;
        *previous = chained;
        Ok(line.len() as u64)
    }

    fn stop(&mut self, why: String) {
        self.file = None;
        self.stopped.get_or_insert(why);
    }
}

impl Blobs for Recorder {
    fn keep(&self, bytes: &[u8]) -> String {
        let digest = Digest::of(bytes).as_str().to_string();
        let mut w = self.writer.lock().expect("recorder lock");
        if w.kept.insert(digest.clone()) {
            let line = json!({ "blob": digest, "base64": BASE64.encode(bytes) });
            w.write(&line, self.limit, &self.path);
        }
        digest
    }

    fn get(&self, _: &str) -> Option<Vec<u8>> {
        None
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A recording read back, every line's chain and every blob's digest
/// checked.
#[derive(Debug)]
pub struct Recording {
    pub header: RecordingHeader,
    /// The messages front ends sent, in order.
    pub messages: Vec<RecordedMessage>,
    /// The extensions its hosts loaded (the last word on each name).
    pub components: Vec<RecordedComponent>,
    /// Its calls in the order they began.
    pub calls: Vec<RecordedCall>,
    blobs: HashMap<String, Vec<u8>>,
    /// Why the recording stopped before its calls ended, if it did.
    pub stopped: Option<String>,
}

/// An extension a recording's host loaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedComponent {
    /// Its name (its grants' key).
    pub name: String,
    pub digest: String,
    /// Its file, on the machine that recorded.
    pub path: String,
    /// What it was granted.
    pub granted: crate::capability::GrantSpec,
}

impl RecordedComponent {
    /// Its recorded file, when it is there still with the recorded digest.
    pub fn unchanged_file(&self) -> Option<PathBuf> {
        let path = PathBuf::from(&self.path);
        let bytes = std::fs::read(&path).ok()?;
        (Digest::of(&bytes).as_str() == self.digest).then_some(path)
    }
}

/// A message whose calls a front end sent.
#[derive(Clone, Debug)]
pub struct RecordedMessage {
    /// The assistant message, as sent.
    pub assistant: Value,
    /// Its calls could name any loaded tool (`toolhost call`), not only
    /// those the model could call.
    pub any_tool: bool,
}

/// One recorded call.
#[derive(Clone, Debug)]
pub struct RecordedCall {
    pub id: String,
    pub tool: String,
    pub arguments: Value,
    /// Its component's digest, and where it came from.
    pub digest: String,
    pub source: String,
    /// The call that made it, for a call made through the host.
    pub parent: Option<String>,
    pub(crate) seed: u128,
    /// What its component could use that recordings do not hold.
    pub beyond: Vec<String>,
    /// The context its `execute` was given.
    pub context: Option<Value>,
    pub ops: Vec<RecordedOp>,
    pub seen: Seen,
    pub end: Option<RecordedEnd>,
    /// Its place among the recorded calls' ends (the order their end
    /// events went out).
    pub end_rank: Option<usize>,
}

/// One question a recorded call asked, with its answer.
#[derive(Clone, Debug)]
pub struct RecordedOp {
    pub asked: Asked,
    pub answer: Value,
    /// Why its answer's bytes are not in the recording.
    pub withheld: Option<String>,
    /// When it was answered, in milliseconds since the call began.
    pub ms: f64,
}

/// How a recorded call ended.
#[derive(Clone, Debug)]
pub struct RecordedEnd {
    pub result: ToolResult,
    pub is_error: bool,
}

/// The most a recording may hold to be read back.
const MAX_READ: u64 = 4 << 30;

impl Recording {
    /// Read and check the recording at `path`.
    pub fn open(path: &Path) -> Result<Recording, String> {
        let shown = path.display();
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot read the recording {shown}: {e}"))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if size > MAX_READ {
            return Err(format!(
                "the recording {shown} is {size} bytes, more than the {MAX_READ} a replay reads"
            ));
        }
        let mut reader = Reader::default();
        let mut lines = std::io::BufReader::new(file);
        let mut line = String::new();
        for number in 1.. {
            line.clear();
            let n = lines
                .read_line(&mut line)
                .map_err(|e| format!("cannot read the recording {shown}: {e}"))?;
            if n == 0 {
                break;
            }
            let Some(body) = line.strip_suffix('\n') else {
                // Its writer stopped in the middle of this line.
                reader
                    .stopped
                    .get_or_insert_with(|| format!("it ends in the middle of line {number}"));
                break;
            };
            reader
                .line(body)
                .map_err(|why| format!("the recording {shown} is refused: line {number} {why}"))?;
        }
        reader
            .finish()
            .map_err(|why| format!("the recording {shown} is refused: {why}"))
    }

    /// The top-level calls (those a front end made, not a tool), in order.
    pub fn top_calls(&self) -> impl Iterator<Item = &RecordedCall> {
        self.calls.iter().filter(|c| c.parent.is_none())
    }
}

impl Blobs for Recording {
    fn keep(&self, bytes: &[u8]) -> String {
        Digest::of(bytes).as_str().to_string()
    }

    fn get(&self, digest: &str) -> Option<Vec<u8>> {
        self.blobs.get(digest).cloned()
    }
}

/// A recording as its lines are read.
#[derive(Default)]
struct Reader {
    chain: String,
    header: Option<RecordingHeader>,
    messages: Vec<RecordedMessage>,
    components: Vec<RecordedComponent>,
    calls: Vec<RecordedCall>,
    blobs: HashMap<String, Vec<u8>>,
    stopped: Option<String>,
    ends: usize,
}

impl Blobs for Reader {
    fn keep(&self, bytes: &[u8]) -> String {
        Digest::of(bytes).as_str().to_string()
    }

    fn get(&self, digest: &str) -> Option<Vec<u8>> {
        self.blobs.get(digest).cloned()
    }
}

impl Reader {
    fn line(&mut self, line: &str) -> Result<(), String> {
        let cut = line
            .rfind(CHAIN_KEY)
            .filter(|at| line.ends_with("\"}") && line.len() - at > CHAIN_KEY.len() + 2)
            .ok_or("has no chain")?;
        let said = &line[cut + CHAIN_KEY.len()..line.len() - 2];
        let body = format!("{}}}", &line[..cut]);
        let expected = chain(&self.chain, &body);
        if said != expected {
            return Err(
                "does not match its chained hash: the recording was changed after it was written"
                    .into(),
            );
        }
        self.chain = expected;
        let value: Value = serde_json::from_str(&body).map_err(|e| format!("is not JSON: {e}"))?;
        if self.header.is_none() {
            if value.get("recording").and_then(Value::as_str) != Some("toolhost") {
                return Err("is not the header of a toolhost recording".into());
            }
            let header: RecordingHeader = serde_json::from_value(value)
                .map_err(|e| format!("is not a recording's header: {e}"))?;
            if header.format != FORMAT {
                return Err(format!(
                    "says format {} ({}); this toolhost reads format {FORMAT}",
                    header.format, header.release
                ));
            }
            self.header = Some(header);
            return Ok(());
        }
        if let Some(digest) = value.get("blob").and_then(Value::as_str) {
            let bytes = value
                .get("base64")
                .and_then(Value::as_str)
                .and_then(|b| BASE64.decode(b).ok())
                .ok_or("has a blob without its bytes")?;
            if Digest::of(&bytes).as_str() != digest {
                return Err(format!(
                    "has bytes that do not hash to their name {digest}: the recording was changed"
                ));
            }
            self.blobs.insert(digest.to_string(), bytes);
            return Ok(());
        }
        if let Some(n) = value.get("message").and_then(Value::as_u64) {
            if n as usize != self.messages.len() {
                return Err(format!("sends message {n} out of order"));
            }
            self.messages.push(RecordedMessage {
                assistant: value
                    .get("assistant")
                    .cloned()
                    .ok_or("is a message without it")?,
                any_tool: value
                    .get("any_tool")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            });
            return Ok(());
        }
        if let Some(component) = value.get("component") {
            let component: RecordedComponent = serde_json::from_value(component.clone())
                .map_err(|e| format!("names a component in a shape that is not one: {e}"))?;
            self.components.retain(|c| c.name != component.name);
            self.components.push(component);
            return Ok(());
        }
        if let Some(said) = value.get("stopped").and_then(Value::as_str) {
            self.stopped = Some(said.to_string());
            return Ok(());
        }
        let n = value
            .get("call")
            .and_then(Value::as_u64)
            .ok_or("is neither a blob nor a call's")? as usize;
        if let Some(start) = value.get("start") {
            if n != self.calls.len() {
                return Err(format!("starts call {n} out of order"));
            }
            let call = start_of(start).ok_or("is a call's start without its parts")?;
            self.calls.push(call);
            return Ok(());
        }
        let blobs: &dyn Blobs = &*self;
        let mut end = None;
        let mut seen = None;
        let mut op = None;
        let mut context = None;
        let mut beyond = None;
        if let Some(e) = value.get("end") {
            end = Some(RecordedEnd {
                result: serde_json::from_value(e.get("result").cloned().unwrap_or_default())
                    .map_err(|e| format!("has a result that is not one: {e}"))?,
                is_error: e.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            });
            seen = Some(
                Seen::take(value.get("seen").unwrap_or(&Value::Null), blobs)
                    .ok_or("has what the call saw in a shape that is not")?,
            );
        } else if let Some(asked) = value.get("asked") {
            op = Some(RecordedOp {
                asked: serde_json::from_value(asked.clone())
                    .map_err(|e| format!("asks what this toolhost does not know: {e}"))?,
                answer: value.get("answer").cloned().unwrap_or_default(),
                withheld: value
                    .get("withheld")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                ms: value.get("ms").and_then(Value::as_f64).unwrap_or(0.0),
            });
        } else if let Some(c) = value.get("context") {
            context = Some(c.clone());
        } else if let Some(what) = value.get("beyond").and_then(Value::as_str) {
            beyond = Some(what.to_string());
        } else {
            return Err("says nothing this toolhost reads".into());
        }
        let call = self
            .calls
            .get_mut(n)
            .ok_or_else(|| format!("speaks of call {n} before its start"))?;
        if let Some(op) = op {
            call.ops.push(op);
        }
        if context.is_some() {
            call.context = context;
        }
        if let Some(what) = beyond {
            call.beyond.push(what);
        }
        if end.is_some() {
            (call.end, call.seen) = (end, seen.unwrap_or_default());
            call.end_rank = Some(self.ends);
            self.ends += 1;
        }
        Ok(())
    }

    fn finish(self) -> Result<Recording, String> {
        let header = self.header.ok_or("it is empty")?;
        Ok(Recording {
            header,
            messages: self.messages,
            components: self.components,
            calls: self.calls,
            blobs: self.blobs,
            stopped: self.stopped,
        })
    }
}

/// A recorded call from its start line.
fn start_of(start: &Value) -> Option<RecordedCall> {
    let text = |key: &str| start.get(key).and_then(Value::as_str).map(str::to_string);
    Some(RecordedCall {
        id: text("id")?,
        tool: text("tool")?,
        arguments: start.get("arguments").cloned().unwrap_or_default(),
        digest: text("component")?,
        source: text("source").unwrap_or_default(),
        parent: text("parent"),
        seed: u128::from_str_radix(&text("seed")?, 16).ok()?,
        beyond: Vec::new(),
        context: None,
        ops: Vec::new(),
        seen: Seen::default(),
        end: None,
        end_rank: None,
    })
}

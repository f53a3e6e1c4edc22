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
use std::sync::{Arc, Condvar, Mutex};

/// The version of the format this release writes. It reads it and every
/// earlier one: format 2 added the `answered` lines of a front end on stdio,
/// which a recording of format 1 lacks (its answers are replayed in the
/// order they end).
pub const FORMAT: u32 = 2;

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
    /// The fields of what the command printed that are the host's clock,
    /// not a component's (a replay prints its own): `timestamp`.
    #[serde(default)]
    pub host_clock: Vec<String>,
}

/// The end of a line: its chain.
const CHAIN_KEY: &str = ",\"chain\":\"";

/// The chain of the line `body` (without its chain) after `previous`.
fn chain_of(previous: &str, body: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(previous.as_bytes());
    hasher.update(b"\n");
    hasher.update(body.as_bytes());
    format!("blake3:{}", hasher.finalize().to_hex())
}

/// Writes a recording as the calls run: a call only makes its line and
/// queues it; one thread of the recording's own chains the lines in order,
/// writes them, and flushes whenever the queue runs dry, so no call waits
/// on the disk or on another call's line. Bounded: past `limit` bytes one
/// last line says so and nothing more is queued; the calls go on.
#[derive(Debug)]
pub(crate) struct Recorder {
    path: PathBuf,
    limit: u64,
    shared: Arc<Shared>,
    writer: Option<std::thread::JoinHandle<()>>,
    ends: std::sync::atomic::AtomicU64,
    recent: Mutex<Recent>,
    /// What the calls' seeds are drawn from ([`Recorder::seed`]).
    key: [u8; 32],
    seeds: std::sync::atomic::AtomicU64,
}

/// What the calls and the writer thread share.
#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Something was queued, the queue was emptied, or it is closing.
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Queue {
    lines: Vec<String>,
    /// Bytes queued so far (the chains come on top).
    queued: u64,
    kept: HashSet<String>,
    calls: u64,
    messages: u64,
    /// Lines handed to the writer and not yet written and flushed.
    pending: usize,
    closing: bool,
    stopped: Option<String>,
}

/// How long the writer lets lines gather after the first wakes it: one
/// wake-up, one write, for the lines of many calls (a shorter wait woke it
/// a dozen times for a 64-read batch, on the cores the calls run on).
const COALESCE: std::time::Duration = std::time::Duration::from_millis(2);

/// What each line's chain adds to it, at most.
const CHAIN_BYTES: u64 = 90;

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
        // Never through a link: one placed where the recording goes could
        // lead it into the workspace the caller checked it is outside of.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        let shared = Arc::new(Shared::default());
        let writing = shared.clone();
        let shown = path.display().to_string();
        let writer = std::thread::Builder::new()
            .name("toolhost-recorder".into())
            .spawn(move || write_lines(&writing, BufWriter::new(file), &shown))?;
        let recorder = Recorder {
            path: path.to_path_buf(),
            limit,
            shared,
            writer: Some(writer),
            ends: Default::default(),
            recent: Default::default(),
            key: {
                let mut key = [0u8; 32];
                crate::files::getrandom(&mut key)?;
                key
            },
            seeds: Default::default(),
        };
        let mut first = json!({ "recording": "toolhost" });
        if let (Value::Object(line), Ok(Value::Object(h))) =
            (&mut first, serde_json::to_value(header))
        {
            line.extend(h);
        }
        recorder.line(first);
        Ok(recorder)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A new call's `wasi:random/insecure-seed`: the recording's own seed
    /// (one draw from the machine) hashed with a count, not a system call
    /// per call.
    pub(crate) fn seed(&self) -> u128 {
        let n = self
            .seeds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        hasher.update(&n.to_le_bytes());
        let bytes = hasher.finalize();
        let mut seed = [0u8; 16];
        seed.copy_from_slice(&bytes.as_bytes()[..16]);
        u128::from_le_bytes(seed)
    }

    /// The place of an end event about to go out among the recording's.
    pub(crate) fn next_end(&self) -> u64 {
        self.ends.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Why it stopped recording before the end, if it did.
    pub(crate) fn stopped(&self) -> Option<String> {
        self.queue().stopped.clone()
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.shared.queue.lock().expect("recorder lock")
    }

    /// Append `line` (a JSON object) with its chain.
    pub(crate) fn line(&self, line: Value) {
        self.put(line.to_string());
    }

    /// Queue `body` (a JSON object's text), unless the bound is reached.
    pub(crate) fn put(&self, body: String) {
        let mut queue = self.queue();
        self.queued(&mut queue, body);
    }

    fn queued(&self, queue: &mut Queue, body: String) {
        if queue.stopped.is_some() {
            return;
        }
        let size = body.len() as u64 + CHAIN_BYTES;
        if queue.queued + size > self.limit {
            let said = format!(
                "the recording reached its bound of {} bytes; what came after is not recorded",
                self.limit
            );
            queue.lines.push(json!({ "stopped": said }).to_string());
            queue.stopped = Some(format!("{}: {said}", self.path.display()));
        } else {
            queue.queued += size;
            queue.lines.push(body);
        }
        queue.pending += 1;
        // The writer sleeps only on an empty queue: wake it for the first.
        if queue.lines.len() == 1 {
            self.shared.changed.notify_all();
        }
    }

    /// Wait until every line queued so far is written and flushed.
    pub(crate) fn flush(&self) {
        let mut queue = self.queue();
        while queue.pending > 0 && !queue.closing {
            queue = self.shared.changed.wait(queue).expect("recorder lock");
        }
    }

    /// Record a message whose calls a front end sent.
    pub(crate) fn message(&self, message: &Value, any_tool: bool) {
        let assistant = message.to_string();
        let mut queue = self.queue();
        let n = queue.messages;
        queue.messages += 1;
        let line = format!(r#"{{"message":{n},"assistant":{assistant},"any_tool":{any_tool}}}"#);
        self.queued(&mut queue, line);
    }

    /// Record the extensions a host loaded: each one's name, digest, file
    /// and grant (written again when a host is built again).
    pub(crate) fn components(&self, components: &[RecordedComponent]) {
        for component in components {
            self.line(json!({ "component": component }));
        }
    }

    /// Number the call `serving` begins, and record its start.
    pub(crate) fn begin_call(&self, serving: &Serving<'_>, seed: u128) -> u64 {
        #[derive(Serialize)]
        struct Start<'a> {
            id: &'a str,
            tool: &'a str,
            arguments: &'a Value,
            component: &'a str,
            source: &'a str,
            parent: Option<&'a str>,
            seed: String,
        }
        // Written as it is, before the lock: only the call's number is
        // given under it (the start lines go out in the numbers' order).
        let start = serde_json::to_string(&Start {
            id: &serving.call.id,
            tool: &serving.call.name,
            arguments: &serving.call.arguments,
            component: serving.digest,
            source: &serving.source,
            parent: serving.parent,
            seed: format!("{seed:032x}"),
        })
        .unwrap_or_default();
        let mut queue = self.queue();
        let n = queue.calls;
        queue.calls += 1;
        self.queued(&mut queue, format!(r#"{{"call":{n},"start":{start}}}"#));
        n
    }
}

/// The writer thread: chain each queued line after the one before, write
/// it, and flush when nothing more is queued; a failed write stops the
/// recording (said once), never a call.
fn write_lines(shared: &Shared, mut file: BufWriter<std::fs::File>, shown: &str) {
    let mut chain = String::new();
    let mut failed = false;
    loop {
        {
            let mut queue = shared.queue.lock().expect("recorder lock");
            while queue.lines.is_empty() && !queue.closing {
                queue = shared.changed.wait(queue).expect("recorder lock");
            }
        }
        // Let what comes with it come too: one wake-up, one write, for the
        // lines of a burst of calls rather than one each.
        std::thread::sleep(COALESCE);
        let (lines, closing) = {
            let mut queue = shared.queue.lock().expect("recorder lock");
            (std::mem::take(&mut queue.lines), queue.closing)
        };
        let n = lines.len();
        let mut result = Ok(());
        for body in lines {
            if failed {
                break;
            }
            let chained = chain_of(&chain, &body);
            let open = body.strip_suffix('}').unwrap_or(&body);
            result = file
                .write_all(open.as_bytes())
                .and_then(|()| file.write_all(CHAIN_KEY.as_bytes()))
                .and_then(|()| file.write_all(chained.as_bytes()))
                .and_then(|()| file.write_all(b"\"}\n"));
            chain = chained;
            failed = result.is_err();
        }
        let mut queue = shared.queue.lock().expect("recorder lock");
        if queue.lines.is_empty() && !failed {
            result = result.and_then(|()| file.flush());
        }
        if let Err(e) = result {
            failed = true;
            queue
                .stopped
                .get_or_insert(format!("writing {shown} failed: {e}"));
        }
        queue.pending -= n;
        shared.changed.notify_all();
        if closing && queue.lines.is_empty() {
            return;
        }
    }
}

/// The most bytes of recent blobs a recorder remembers, to name bytes it
/// has just kept again without hashing them (a file read twice; a `read`
/// whose result is the file's text).
const RECENT_BYTES: usize = 8 << 20;

/// Blobs kept lately, newest last, each with its [`glance`], and their
/// bytes in all.
#[derive(Debug, Default)]
struct Recent {
    blobs: std::collections::VecDeque<(u64, String, Arc<[u8]>)>,
    bytes: usize,
}

/// What tells most different blobs apart at a glance: their length, and
/// their first and last bytes (files of one shape, such as logs or
/// generated sources, often share a head; rarely a head and a tail).
fn glance(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let ends = 32.min(bytes.len());
    (bytes.len(), &bytes[..ends], &bytes[bytes.len() - ends..]).hash(&mut hasher);
    hasher.finish()
}

impl Recent {
    /// The digest of `bytes`, when they were kept lately (compared, not
    /// hashed: a comparison costs a fraction of a hash; only the blobs
    /// that look alike at a glance are compared).
    fn digest_of(&self, bytes: &[u8]) -> Option<String> {
        let seen = glance(bytes);
        self.blobs
            .iter()
            .rev()
            .find(|(glanced, _, kept)| *glanced == seen && **kept == *bytes)
            .map(|(_, digest, _)| digest.clone())
    }

    fn remember(&mut self, digest: String, bytes: &[u8]) {
        if bytes.len() > RECENT_BYTES / 4 {
            return;
        }
        self.bytes += bytes.len();
        self.blobs
            .push_back((glance(bytes), digest, Arc::from(bytes)));
        while self.bytes > RECENT_BYTES {
            let Some((_, _, old)) = self.blobs.pop_front() else {
                break;
            };
            self.bytes -= old.len();
        }
    }
}

impl Blobs for Recorder {
    fn keep(&self, bytes: &[u8]) -> String {
        if let Some(digest) = self.recent.lock().expect("recorder lock").digest_of(bytes) {
            return digest;
        }
        let digest = Digest::of(bytes).as_str().to_string();
        self.recent
            .lock()
            .expect("recorder lock")
            .remember(digest.clone(), bytes);
        let mut queue = self.queue();
        if queue.kept.insert(digest.clone()) {
            let line = json!({ "blob": digest, "base64": BASE64.encode(bytes) });
            self.queued(&mut queue, line.to_string());
        }
        digest
    }

    fn get(&self, _: &str) -> Option<Vec<u8>> {
        None
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.queue().closing = true;
        self.shared.changed.notify_all();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
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
    /// A front end on stdio: the tools it offered, each line it read, and
    /// how many lines it had written when its input ended (`stdio`).
    pub offered: Option<Vec<String>>,
    pub inputs: Vec<super::stdio::RecordedInput>,
    pub input_end: Option<u64>,
    /// The id of each answer it wrote, in order (`answered`).
    pub answered: Vec<Value>,
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
    /// Its preopened directories, where its component saw them.
    pub wasi_dirs: Vec<super::files::WasiDir>,
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
    /// Its place among the call's questions (a request's answer may be
    /// written after questions asked later, once its response is read).
    pub index: usize,
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
    offered: Option<Vec<String>>,
    inputs: Vec<super::stdio::RecordedInput>,
    input_end: Option<u64>,
    answered: Vec<Value>,
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
        let expected = chain_of(&self.chain, &body);
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
            if !(1..=FORMAT).contains(&header.format) {
                return Err(format!(
                    "says format {} ({}); this toolhost reads formats 1 to {FORMAT}",
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
        if let Some(line) = value.get("input").and_then(Value::as_str) {
            let after = value.get("after").and_then(Value::as_u64).unwrap_or(0);
            self.inputs.push(super::stdio::RecordedInput {
                line: line.to_string(),
                after,
            });
            return Ok(());
        }
        if let Some(end) = value.get("input_end").and_then(Value::as_u64) {
            self.input_end = Some(end);
            return Ok(());
        }
        if let Some(id) = value.get("answered") {
            self.answered.push(id.clone());
            return Ok(());
        }
        if let Some(offered) = value.get("offered") {
            self.offered = Some(
                serde_json::from_value(offered.clone())
                    .map_err(|e| format!("offers tools in a shape that is not a list: {e}"))?,
            );
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
        let mut order = None;
        let mut seen = None;
        let mut op = None;
        let mut context = None;
        let mut beyond = None;
        let mut wasi_dirs = None;
        if let Some(e) = value.get("end") {
            order = e.get("order").and_then(Value::as_u64).map(|o| o as usize);
            let result = e.get("result").cloned().unwrap_or_default();
            let result =
                super::texts_back(result, blobs).ok_or("has a result whose text is not in it")?;
            end = Some(RecordedEnd {
                result: serde_json::from_value(result)
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
                index: value
                    .get("op")
                    .and_then(Value::as_u64)
                    .and_then(|i| usize::try_from(i).ok())
                    .ok_or("has a question without its place")?,
            });
        } else if let Some(c) = value.get("context") {
            context = Some(c.clone());
        } else if let Some(dirs) = value.get("wasi_dirs") {
            wasi_dirs = Some(
                serde_json::from_value(dirs.clone())
                    .map_err(|e| format!("has WASI directories that are not: {e}"))?,
            );
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
            // In place: after every question asked before it.
            let at = call.ops.iter().rposition(|o| o.index < op.index);
            call.ops.insert(at.map_or(0, |i| i + 1), op);
        }
        if context.is_some() {
            call.context = context;
        }
        if let Some(dirs) = wasi_dirs {
            call.wasi_dirs = dirs;
        }
        if let Some(what) = beyond {
            call.beyond.push(what);
        }
        if end.is_some() {
            (call.end, call.seen) = (end, seen.unwrap_or_default());
            call.end_rank = Some(order.unwrap_or(self.ends));
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
            offered: self.offered,
            inputs: self.inputs,
            input_end: self.input_end,
            answered: self.answered,
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
        wasi_dirs: Vec::new(),
        ops: Vec::new(),
        seen: Seen::default(),
        end: None,
        end_rank: None,
    })
}

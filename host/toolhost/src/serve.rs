//! `toolhost serve`: the host as a JSON-RPC 2.0 server over a byte stream
//! (stdio in the CLI), one JSON object per line in both directions, for agent
//! loops written in any language. `docs/protocol.md` is the user's reference.
//!
//! Methods:
//!
//! * `tools/list` `{format?}` → `{tools}`: the active tools in a
//!   [`ToolFormat`] (`json` by default; `mcp` gives the `tools/list` array).
//! * `tools/prompt` → `{text}`: the system-prompt section (spec §3.1).
//! * `tools/setActive` `{names}` → `{active}`: replace the active set.
//! * `batch/run` `{message}` → `{toolResults, terminate}`: execute an
//!   assistant message's tool calls as one batch. While it runs, every event
//!   goes out as a `batch/event` notification `{id, event}` (`id` is the
//!   request's), in Pi's order; all of a batch's events precede its response.
//! * `batch/cancel` `{id}` → `{cancelled}`: abort the running batch of request
//!   `id`; its response still comes, with every call's result.
//!
//! A `batch/run` with `"ask": true` says a person answers for the client:
//! a call that needs what it was not granted, or that an `ask` rule names,
//! then sends the client a request `permission/ask` `{batchId, question,
//! text, answers}` (ids `ask-N`), which it answers with `{answer, reason?}`;
//! a question withdrawn (the batch was cancelled, or the wait ran out) is
//! said by a `permission/withdrawn` `{id}` notification. Over stdio only.
//!
//! A `batch/run` with `"client": {"elicitation": true, "sampling": true,
//! "roots": true}` (any of them) says the client can answer what a tool asks
//! of it (`toolhost:tool/client`): each request is sent to the client as the
//! MCP request it is (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`, with MCP's params and `_meta: {"toolhost/tool": NAME}`; ids
//! `client-N`), and its `result` is the tool's answer; one withdrawn (the
//! call ended first) is said by a `notifications/cancelled` `{requestId}`.
//! Over stdio only.
//!
//! Batches run concurrently; everything else is answered in order of arrival.
//! Malformed input gets the JSON-RPC error codes with a message naming the
//! cause. A JSON array (a JSON-RPC batch) is refused: with streamed events, one
//! request per line is the unit.

use crate::events::Event;
use crate::formats::{self, ToolFormat};
use crate::host::Host;
use crate::message::AssistantMessage;
use crate::permissions::{Answer, Ask, Asker, Question};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// JSON-RPC 2.0 error codes.
pub use crate::jsonrpc::code as codes;

/// The notification that the active tool set changed: `{active: [...]}`.
const TOOLS_CHANGED_METHOD: &str = "tools/changed";

/// The notification that a session process ended: `{id, command, exitCode?,
/// signal?, text}`.
const PROCESS_EXITED_METHOD: &str = "process/exited";

/// The notification method that carries a batch's events.
pub const EVENT_METHOD: &str = "batch/event";

struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn invalid_request(cause: impl std::fmt::Display) -> RpcError {
        RpcError {
            code: codes::INVALID_REQUEST,
            message: format!("Invalid request: {cause}"),
        }
    }

    fn invalid_params(method: &str, cause: impl std::fmt::Display) -> RpcError {
        RpcError {
            code: codes::INVALID_PARAMS,
            message: format!("Invalid params for {method}: {cause}"),
        }
    }
}

/// Running batches by request id (the id's JSON text, so `1` and `"1"` differ).
type Running = Arc<Mutex<HashMap<String, CancellationToken>>>;

/// The server's state: the host, and the running batches by request id
/// (shared by every connection of the HTTP listener), and over stdio the
/// client's person, when a batch says there is one.
#[derive(Clone)]
struct RpcServer {
    host: Host,
    running: Running,
    person: Option<(Arc<ClientPerson>, Arc<Asker>)>,
}

/// The method of the server's request that asks the client's person.
pub const ASK_METHOD: &str = "permission/ask";
/// The notification that a question was withdrawn.
pub const WITHDRAWN_METHOD: &str = "permission/withdrawn";

/// The person behind a stdio client: asked by a `permission/ask` request,
/// whose response the read loop hands back.
struct ClientPerson {
    out: Outbox,
    /// Questions sent and not yet answered, by request id.
    pending: Mutex<HashMap<String, tokio::sync::oneshot::Sender<Value>>>,
    next: std::sync::atomic::AtomicU64,
}

impl ClientPerson {
    /// Hand a response of the client to the question it answers; `false`
    /// when no question waits under its id.
    fn answered(&self, id: &str, response: Value) -> bool {
        let waiting = self.pending.lock().expect("pending questions").remove(id);
        waiting.is_some_and(|tx| tx.send(response).is_ok())
    }
}

/// The client of a `batch/run` that declared what it can answer: a tool's
/// requests go to it as MCP's requests, over the same stdio.
struct ServeClient {
    person: Arc<ClientPerson>,
    declared: crate::ops::client::ClientCaps,
}

impl crate::ops::client::Client for ServeClient {
    fn capabilities(&self) -> crate::ops::client::ClientCaps {
        self.declared
    }

    fn request<'a>(
        &'a self,
        tool: &'a str,
        requests: &'a [crate::ops::client::ClientRequest],
    ) -> BoxFuture<'a, Result<Vec<Value>, crate::ops::client::ClientError>> {
        use crate::ops::client::ClientError;
        Box::pin(async move {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                if !self.declared.has(request.method) {
                    return Err(ClientError::NotSupported(request.method));
                }
                let person = &self.person;
                let n = person
                    .next
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    + 1;
                let id = format!("client-{n}");
                let (tx, rx) = tokio::sync::oneshot::channel();
                person
                    .pending
                    .lock()
                    .expect("pending questions")
                    .insert(id.clone(), tx);
                let mut params = request.attributed(tool).params;
                params["_meta"] = json!({"toolhost/tool": tool, "toolhost/key": request.key});
                person.out.send(json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": request.method.method(),
                    "params": params,
                }));
                // Withdrawn if dropped unanswered (the call ended first).
                let mut unasked = Withdraw {
                    person,
                    id: Some(id),
                    notice: |id| {
                        json!({
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "the call ended first"},
                        })
                    },
                };
                let response = rx
                    .await
                    .map_err(|_| ClientError::Failed("the client went away".into()))?;
                unasked.id = None;
                match (response.get("result"), response.get("error")) {
                    (Some(result), _) => answers.push(result.clone()),
                    (None, error) => {
                        let message = error
                            .and_then(|e| e.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or("no result");
                        return Err(ClientError::Failed(format!("the client: {message}")));
                    }
                }
            }
            Ok(answers)
        })
    }
}

impl Ask for ClientPerson {
    fn front_end(&self) -> &str {
        "serve"
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Option<Answer>> {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("ask-{n}");
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pending
            .lock()
            .expect("pending questions")
            .insert(id.clone(), tx);
        self.out.send(json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": ASK_METHOD,
            "params": {
                "question": question,
                "text": question.text(),
                "answers": question.answers(),
            },
        }));
        // Withdrawn when dropped unanswered (the batch was cancelled, or
        // the wait ran out): the client is told.
        let withdraw = Withdraw {
            person: self,
            id: Some(id),
            notice: |id| {
                json!({
                    "jsonrpc": "2.0",
                    "method": WITHDRAWN_METHOD,
                    "params": {"id": id},
                })
            },
        };
        Box::pin(async move {
            let mut withdraw = withdraw;
            let response = rx.await.ok()?;
            withdraw.id = None;
            let result = response.get("result")?;
            let name = result.get("answer")?.as_str()?;
            let reason = result
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_string);
            match Answer::from_name(name, reason)? {
                // "Always" where it was not offered counts for the session.
                Answer::Always if !question.always => Some(Answer::Session),
                answer => Some(answer),
            }
        })
    }
}

/// A request to the client that is withdrawn, by the notice `notice`
/// makes of its id, when dropped unanswered.
struct Withdraw<'a> {
    person: &'a ClientPerson,
    id: Option<String>,
    notice: fn(String) -> Value,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.person
                .pending
                .lock()
                .expect("pending questions")
                .remove(&id);
            self.person.out.send((self.notice)(id));
        }
    }
}

/// A `batch/run` being served: its task, and the token that cancels it.
struct Batch {
    task: BatchTask,
    cancel: CancellationToken,
}

/// Serve `host` on `input`/`output` until `input` ends, then wait for the
/// running batches to answer. Returns an error only when `input` cannot be
/// read or `output` cannot be written.
pub async fn serve<R, W>(host: Host, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // One writer owns the output, so concurrent batches never interleave
    // inside a line, and a batch's events, queued before its response, are
    // written before it.
    let out = Outbox::default();
    let lines = out.clone();
    let writer = tokio::spawn(async move {
        // What is waiting is written together and flushed once nothing more
        // is: a burst of events costs a few writes, and a line is never held
        // back while the client waits for it.
        let mut output = tokio::io::BufWriter::with_capacity(64 << 10, output);
        while let Some(line) = lines.recv().await {
            output.write_all(line.as_bytes()).await?;
            while let Some(more) = lines.try_recv() {
                output.write_all(more.as_bytes()).await?;
            }
            output.flush().await?;
        }
        Ok::<(), std::io::Error>(())
    });

    // Every change of the active set, by `tools/setActive`, by a tool
    // granted `tools`, or by the embedder, is announced (the set is read
    // when the announcement is made: several changes in a row may give one).
    let mut changes = host.changes();
    let announcer = {
        let (host, out) = (host.clone(), out.clone());
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                out.send(json!({
                    "jsonrpc": "2.0",
                    "method": TOOLS_CHANGED_METHOD,
                    "params": {"active": host.active_tools()},
                }));
            }
        })
    };
    // A session process's end, whenever it comes.
    let mut exits = host.session_processes().exits();
    let exit_teller = {
        let out = out.clone();
        tokio::spawn(async move {
            loop {
                let info = match exits.recv().await {
                    Ok(info) => info,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                out.send(json!({
                    "jsonrpc": "2.0",
                    "method": PROCESS_EXITED_METHOD,
                    "params": info.to_json(),
                }));
            }
        })
    };
    let person = Arc::new(ClientPerson {
        out: out.clone(),
        pending: Mutex::default(),
        next: Default::default(),
    });
    let server = RpcServer {
        host,
        running: Arc::default(),
        person: Some((person.clone(), Asker::new(person))),
    };
    let mut batches = JoinSet::new();
    // Lines of at most 16 MiB, read as bytes: no line, however long or
    // whatever bytes it holds, ends the server (`crate::jsonrpc`).
    let mut lines = crate::jsonrpc::LineReader::new(input);
    while let Some(line) = lines.next().await {
        let batch = match line {
            Ok(line) => server.handle(&line, &out),
            Err(rejection) => {
                out.send_line(rejection.to_line());
                None
            }
        };
        if let Some(batch) = batch {
            batches.spawn(batch.task);
        }
    }
    while batches.join_next().await.is_some() {}
    announcer.abort();
    exit_teller.abort();
    out.close();
    writer.await.map_err(std::io::Error::other)?
}

/// Updates of one call that may wait for a slow client at once, and their
/// bytes; past either, the newest waiting update is replaced by the next.
const QUEUED_UPDATES: usize = 16;
const QUEUED_UPDATE_BYTES: usize = 8 << 20;

/// The lines waiting for the writer, oldest first. Responses and events
/// other than updates always wait their turn; a call's updates (each the
/// whole partial result so far) are bounded per call: a client that reads
/// slowly gets the first and the latest of them, not a backlog that grows
/// with every update a tool sends (10,000 of up to 1 MiB each).
#[derive(Clone, Default)]
struct Outbox(Arc<OutboxInner>);

#[derive(Default)]
struct OutboxInner {
    state: Mutex<OutboxState>,
    ready: tokio::sync::Notify,
}

#[derive(Default)]
struct OutboxState {
    /// Each line with the call it updates, if it is an update.
    lines: std::collections::VecDeque<(Option<String>, String)>,
    /// Per call: updates waiting, and their bytes.
    waiting: HashMap<String, (usize, usize)>,
    closed: bool,
}

impl Outbox {
    fn send(&self, value: Value) {
        self.push(None, value);
    }

    /// Queue a line made elsewhere (an answer whose id is the client's own
    /// text: `crate::jsonrpc::Rejection::to_line`).
    fn send_line(&self, line: Vec<u8>) {
        let line = String::from_utf8(line).expect("answers are UTF-8");
        let mut state = self.0.state.lock().expect("outbox lock");
        state.lines.push_back((None, line));
        drop(state);
        self.0.ready.notify_one();
    }

    /// Queue `value`, an update of the call `key` when given.
    fn push(&self, key: Option<String>, value: Value) {
        let mut line = value.to_string();
        line.push('\n');
        let mut state = self.0.state.lock().expect("outbox lock");
        if let Some(key) = &key {
            let (count, bytes) = state.waiting.get(key).copied().unwrap_or((0, 0));
            if count >= QUEUED_UPDATES || bytes + line.len() > QUEUED_UPDATE_BYTES {
                let newest = state
                    .lines
                    .iter()
                    .rposition(|(k, _)| k.as_ref() == Some(key));
                if let Some(i) = newest {
                    let old = std::mem::replace(&mut state.lines[i].1, line);
                    let new_len = state.lines[i].1.len();
                    let entry = state.waiting.entry(key.clone()).or_default();
                    entry.1 = entry.1 - old.len() + new_len;
                    return;
                }
            }
            let entry = state.waiting.entry(key.clone()).or_default();
            entry.0 += 1;
            entry.1 += line.len();
        }
        state.lines.push_back((key, line));
        drop(state);
        self.0.ready.notify_one();
    }

    /// The next line; `None` once closed and empty.
    async fn recv(&self) -> Option<String> {
        loop {
            let notified = self.0.ready.notified();
            if let Some(line) = self.try_recv() {
                return Some(line);
            }
            if self.0.state.lock().expect("outbox lock").closed {
                // Closed after its last line was queued: that line, if it
                // arrived since the look above, or the end.
                return self.try_recv();
            }
            notified.await;
        }
    }

    /// The next line if one is waiting.
    fn try_recv(&self) -> Option<String> {
        let mut state = self.0.state.lock().expect("outbox lock");
        let (key, line) = state.lines.pop_front()?;
        if let Some(key) = key
            && let Some(entry) = state.waiting.get_mut(&key)
        {
            entry.0 -= 1;
            entry.1 -= line.len();
            if entry.0 == 0 {
                state.waiting.remove(&key);
            }
        }
        Some(line)
    }

    fn close(&self) {
        self.0.state.lock().expect("outbox lock").closed = true;
        self.0.ready.notify_one();
    }
}

/// Whether the id of `line`, if any, is one `serde_json` holds exactly: a
/// string, or a number that is an integer of at most 64 bits or a finite
/// fraction (a larger integer would come back rounded, and the client could
/// not match the answer).
fn exact_id(line: &[u8]) -> bool {
    use crate::jsonrpc::{Envelope, Kind};
    match Envelope::read(line).and_then(|e| e.id) {
        Some((raw, Kind::Number)) if !raw.contains(['.', 'e', 'E']) => {
            raw.parse::<i64>().is_ok() || raw.parse::<u64>().is_ok()
        }
        Some((raw, Kind::Number)) => raw.parse::<f64>().is_ok_and(f64::is_finite),
        _ => true,
    }
}

fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error_response(id: &Value, error: RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": error.code, "message": error.message}})
}

/// A line that is a response of the client (an id, a result or an error,
/// no method): its id's text and the response.
fn client_response(line: &str) -> Option<(String, Value)> {
    let value: Value = serde_json::from_str(line).ok()?;
    let object = value.as_object()?;
    if object.contains_key("method")
        || !(object.contains_key("result") || object.contains_key("error"))
    {
        return None;
    }
    let id = object.get("id")?.as_str()?.to_string();
    Some((id, value))
}

/// A parsed request: `id` is `None` for a notification.
struct Request {
    id: Option<Value>,
    method: String,
    params: Map<String, Value>,
}

fn parse_request(line: &str) -> Result<Request, (Value, RpcError)> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        let error = RpcError {
            code: codes::PARSE_ERROR,
            message: format!("Parse error: {e}"),
        };
        (Value::Null, error)
    })?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            let cause =
                "JSON-RPC batches (arrays) are not supported; send one request object per line";
            return Err((Value::Null, RpcError::invalid_request(cause)));
        }
        other => {
            let cause = format!("a request must be a JSON object, got {}", kind(&other));
            return Err((Value::Null, RpcError::invalid_request(cause)));
        }
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ (Value::Null | Value::Number(_) | Value::String(_))) => Some(id),
        Some(other) => {
            let cause = format!(
                "\"id\" must be a string, a number or null, got {}",
                kind(&other)
            );
            return Err((Value::Null, RpcError::invalid_request(cause)));
        }
    };
    let reply_to = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        let cause = match object.get("jsonrpc") {
            None => "\"jsonrpc\": \"2.0\" is missing".to_string(),
            Some(v) => format!("\"jsonrpc\" must be \"2.0\", got {v}"),
        };
        return Err((reply_to, RpcError::invalid_request(cause)));
    }
    let method = match object.remove("method") {
        Some(Value::String(m)) => m,
        None => return Err((reply_to, RpcError::invalid_request("\"method\" is missing"))),
        Some(other) => {
            let cause = format!("\"method\" must be a string, got {}", kind(&other));
            return Err((reply_to, RpcError::invalid_request(cause)));
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(other) => {
            let cause = format!(
                "{method}: \"params\" must be an object of named parameters, got {}",
                kind(&other)
            );
            return Err((reply_to, RpcError::invalid_request(cause)));
        }
    };
    Ok(Request { id, method, params })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl RpcServer {
    /// Answer one request into `out`; a `batch/run` is returned to be run.
    fn handle(&self, line: &[u8], out: &Outbox) -> Option<Batch> {
        // What `serde_json` cannot read, or would not give back exactly (an
        // id beyond 64 bits), is judged from the raw text, so that the
        // answer carries the id as the client sent it.
        let line = match std::str::from_utf8(line) {
            Ok(text) if exact_id(line) => text,
            _ => {
                let why = "the message is not UTF-8 text, or its id cannot be held exactly";
                if let crate::jsonrpc::Verdict::Answer(rejection) =
                    crate::jsonrpc::judge(line, &why, &|_, _| None)
                {
                    out.send_line(rejection.to_line());
                }
                return None;
            }
        };
        if let Some((person, _)) = &self.person
            && let Some((id, response)) = client_response(line)
        {
            // The answer to a question; one that answers nothing waiting
            // (withdrawn, or never asked) is dropped, as JSON-RPC has no
            // way to reply to a response.
            person.answered(&id, response);
            return None;
        }
        let request = match parse_request(line) {
            Ok(request) => request,
            Err((id, error)) => {
                out.send(error_response(&id, error));
                return None;
            }
        };
        if request.method == "batch/run" {
            let asker = match request.params.get("ask") {
                Some(Value::Bool(true)) => self.person.as_ref().map(|(_, asker)| asker.clone()),
                _ => None,
            };
            // What the client declared it can answer for a tool.
            let declared = request.params.get("client").map(|c| {
                let has = |k: &str| c.get(k).and_then(Value::as_bool).unwrap_or(false);
                crate::ops::client::ClientCaps {
                    elicitation: has("elicitation"),
                    sampling: has("sampling"),
                    roots: has("roots"),
                }
            });
            let client = match (declared, &self.person) {
                (Some(declared), Some((person, _))) => Some(Arc::new(ServeClient {
                    person: person.clone(),
                    declared,
                })
                    as Arc<dyn crate::ops::client::Client>),
                _ => None,
            };
            return match start_batch(&self.host, request, out, &self.running, (asker, client)) {
                Ok(batch) => batch,
                Err((id, error)) => {
                    out.send(error_response(&id, error));
                    None
                }
            };
        }
        let outcome = dispatch(&self.host, &request, &self.running);
        // A notification gets no response, not even an error (JSON-RPC 2.0 §4.1).
        if let Some(id) = &request.id {
            out.send(match outcome {
                Ok(result) => response(id, result),
                Err(error) => error_response(id, error),
            });
        }
        None
    }
}

/// Every method except `batch/run`, answered at once.
fn dispatch(host: &Host, request: &Request, running: &Running) -> Result<Value, RpcError> {
    let method = request.method.as_str();
    let params = &request.params;
    match method {
        "tools/list" => {
            let format = match params.get("format") {
                None | Some(Value::Null) => ToolFormat::Json,
                Some(Value::String(s)) => s
                    .parse()
                    .map_err(|e| RpcError::invalid_params(method, format!("\"format\": {e}")))?,
                Some(other) => {
                    let cause = format!("\"format\" must be a string, got {}", kind(other));
                    return Err(RpcError::invalid_params(method, cause));
                }
            };
            let tools = formats::tools_as(&host.active_tool_infos(), format);
            // MCP's shape is a tools/list result; here every format is the array.
            let tools = match tools {
                Value::Object(mut o) if format == ToolFormat::Mcp => {
                    o.remove("tools").unwrap_or_default()
                }
                other => other,
            };
            Ok(json!({ "tools": tools }))
        }
        "tools/prompt" => Ok(json!({
            "text": formats::system_prompt_section_as(&host.definitions(), host.pi_profile())
        })),
        "tools/setActive" => {
            let names = params
                .get("names")
                .and_then(Value::as_array)
                .and_then(|names| names.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
                .ok_or_else(|| {
                    RpcError::invalid_params(method, "\"names\" must be an array of tool names")
                })?;
            Ok(json!({ "active": host.set_active_tools(&names) }))
        }
        "batch/cancel" => {
            let id = match params.get("id") {
                Some(id @ (Value::Null | Value::Number(_) | Value::String(_))) => id,
                _ => {
                    let cause =
                        "\"id\" must be the id of a batch/run request (a string or a number)";
                    return Err(RpcError::invalid_params(method, cause));
                }
            };
            let token = running
                .lock()
                .expect("running batches lock")
                .get(&id.to_string())
                .cloned();
            if let Some(token) = &token {
                token.cancel();
            }
            Ok(json!({ "cancelled": token.is_some() }))
        }
        _ => Err(RpcError {
            code: codes::METHOD_NOT_FOUND,
            message: format!(
                "Method not found: {method} (methods: tools/list, tools/prompt, tools/setActive, batch/run, batch/cancel)"
            ),
        }),
    }
}

type BatchTask = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Check a `batch/run` request and return the task that runs it.
fn start_batch(
    host: &Host,
    request: Request,
    out: &Outbox,
    running: &Running,
    front: (
        Option<Arc<Asker>>,
        Option<Arc<dyn crate::ops::client::Client>>,
    ),
) -> Result<Option<Batch>, (Value, RpcError)> {
    let method = "batch/run";
    let Some(id) = request.id else {
        // Without an id there is nowhere to send the results.
        return Ok(None);
    };
    let message = match request.params.get("message") {
        None => {
            let cause =
                "\"message\" is missing: it must be the assistant message whose tool calls to run";
            return Err((id, RpcError::invalid_params(method, cause)));
        }
        Some(raw) => AssistantMessage::from_json(raw.clone()).map_err(|e| {
            (
                id.clone(),
                RpcError::invalid_params(method, format!("\"message\": {e}")),
            )
        })?,
    };
    let key = id.to_string();
    let cancel = CancellationToken::new();
    {
        let mut running = running.lock().expect("running batches lock");
        if running.contains_key(&key) {
            let cause = format!("id {key} is already used by a running batch");
            return Err((id, RpcError::invalid_request(cause)));
        }
        running.insert(key.clone(), cancel.clone());
    }
    // Its calls' file mutations queue in the order batches were read.
    let turns = host.turns(message.tool_calls.len());
    let (host, out, running) = (host.clone(), out.clone(), running.clone());
    let token = cancel.clone();
    let task: BatchTask = Box::pin(async move {
        let events = out.clone();
        let event_id = id.clone();
        let sink = Arc::new(move |event: Event| {
            let update_of = match &event {
                Event::ToolExecutionUpdate { tool_call_id, .. } => {
                    Some(format!("{event_id}/{tool_call_id}"))
                }
                _ => None,
            };
            let event = serde_json::to_value(&event).unwrap_or_default();
            events.push(
                update_of,
                json!({
                    "jsonrpc": "2.0",
                    "method": EVENT_METHOD,
                    "params": {"id": event_id, "event": event},
                }),
            );
        });
        let (asker, client) = front;
        let mut batch = host
            .batch(&message)
            .cancel(cancel)
            .events(sink)
            .turns(turns);
        if let Some(asker) = asker {
            batch = batch.asking(asker);
        }
        if let Some(client) = client {
            batch = batch.client(client);
        }
        let outcome = batch.await;
        running.lock().expect("running batches lock").remove(&key);
        out.send(response(
            &id,
            json!({"toolResults": outcome.results, "terminate": outcome.terminate}),
        ));
    });
    Ok(Some(Batch {
        task,
        cancel: token,
    }))
}

/// JSON-RPC over HTTP at `/rpc`, for [`crate::http_server::HttpListener`]: one
/// request object per POST (at most `max_body_bytes`). A `batch/run` is
/// answered with a stream of JSON lines (`application/x-ndjson`): its
/// `batch/event` notifications, then its response, exactly the lines stdio
/// carries; a client that closes the stream cancels the batch. Any other
/// request is answered with its response object (`application/json`), a
/// notification with 202 and no body. Batches of every connection share one
/// table of running ids, so `batch/cancel` works from another connection.
#[cfg(feature = "http")]
pub fn http_route(host: Host, max_body_bytes: usize) -> crate::http_server::Route {
    // Over HTTP a request's stream cannot carry the client's answer back:
    // nobody is asked.
    let server = RpcServer {
        host,
        running: Arc::default(),
        person: None,
    };
    crate::http_server::Route {
        path: "/rpc",
        handler: Arc::new(move |request| {
            let server = server.clone();
            Box::pin(async move { server.http(request, max_body_bytes).await })
        }),
    }
}

#[cfg(feature = "http")]
impl RpcServer {
    async fn http(
        &self,
        request: http::Request<hyper::body::Incoming>,
        max_body_bytes: usize,
    ) -> http::Response<crate::http_server::HttpBody> {
        use crate::http_server::plain;
        use bytes::Bytes;
        use http::{StatusCode, header};
        use http_body_util::{BodyExt, Full, StreamBody};

        if request.method() != http::Method::POST {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method not allowed: POST one JSON-RPC request to /rpc",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, http::HeaderValue::from_static("POST"));
            return response;
        }
        let slot = request
            .extensions()
            .get::<crate::http_server::PermitSlot>()
            .cloned();
        let body = match crate::http_server::read_body(request.into_body(), max_body_bytes).await {
            Ok(body) => body,
            Err(refusal) => return refusal,
        };
        let out = Outbox::default();
        let with_type = |body: crate::http_server::HttpBody, kind: &'static str| {
            let mut response = http::Response::new(body);
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, http::HeaderValue::from_static(kind));
            response
        };
        let Some(batch) = self.handle(&body, &out) else {
            out.close();
            return match out.recv().await {
                Some(line) => with_type(Full::new(Bytes::from(line)).boxed(), "application/json"),
                None => {
                    let mut response = http::Response::new(Full::new(Bytes::new()).boxed());
                    *response.status_mut() = StatusCode::ACCEPTED;
                    response
                }
            };
        };
        let lines = out.clone();
        // The batch holds its `--max-requests` permit until it has ended:
        // a client that goes away cancels it, and the place is free once
        // the cancellation has been seen through, not before.
        let permit = slot.as_ref().and_then(crate::http_server::PermitSlot::take);
        tokio::spawn(async move {
            batch.task.await;
            lines.close();
            drop(permit);
        });
        // Dropping the stream (the client went away) cancels the batch.
        let stop = batch.cancel.drop_guard();
        let stream = futures::stream::unfold((out, stop), |(out, stop)| async move {
            let line = out.recv().await?;
            Some((
                Ok::<_, std::convert::Infallible>(http_body::Frame::data(Bytes::from(line))),
                (out, stop),
            ))
        });
        with_type(StreamBody::new(stream).boxed(), "application/x-ndjson")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_slow_reader_gets_the_first_and_latest_updates_of_a_call_and_all_else() {
        let out = Outbox::default();
        out.send(json!({"event": "start"}));
        for i in 0..10_000 {
            out.push(Some("b1/c1".into()), json!({"update": i}));
            if i == 5_000 {
                out.push(Some("b1/c2".into()), json!({"other": i}));
            }
        }
        out.send(json!({"event": "end"}));
        out.close();
        let mut lines = Vec::new();
        while let Some(line) = out.recv().await {
            lines.push(line);
        }
        assert_eq!(lines.len(), 2 + QUEUED_UPDATES + 1, "{lines:?}");
        assert_eq!(lines[0], "{\"event\":\"start\"}\n");
        assert_eq!(lines[1], "{\"update\":0}\n");
        assert!(lines.contains(&"{\"other\":5000}\n".to_string()));
        let last_update = lines.iter().rev().find(|l| l.contains("update")).unwrap();
        assert_eq!(last_update, "{\"update\":9999}\n");
        assert_eq!(lines[lines.len() - 1], "{\"event\":\"end\"}\n");
    }

    fn error_of(line: &str) -> (Value, i64, String) {
        let (id, e) = parse_request(line).err().expect("an error");
        (id, e.code, e.message)
    }

    #[test]
    fn malformed_requests_get_their_code_and_cause() {
        let (id, code, message) = error_of("{\"jsonrpc\":\"2.0\",");
        assert_eq!((id, code), (Value::Null, codes::PARSE_ERROR));
        assert!(
            message.starts_with("Parse error: EOF while parsing"),
            "{message}"
        );

        let (_, code, message) = error_of("[1]");
        assert_eq!(code, codes::INVALID_REQUEST);
        assert!(
            message.contains("batches (arrays) are not supported"),
            "{message}"
        );

        let (id, code, message) = error_of(r#"{"jsonrpc":"1.0","id":7,"method":"tools/list"}"#);
        assert_eq!((id, code), (json!(7), codes::INVALID_REQUEST));
        assert_eq!(
            message,
            "Invalid request: \"jsonrpc\" must be \"2.0\", got \"1.0\""
        );

        let (_, _, message) = error_of(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#);
        assert_eq!(
            message,
            "Invalid request: \"id\" must be a string, a number or null, got an object"
        );

        let (id, _, message) = error_of(r#"{"jsonrpc":"2.0","id":"a","method":3}"#);
        assert_eq!(id, json!("a"));
        assert_eq!(
            message,
            "Invalid request: \"method\" must be a string, got a number"
        );

        let (_, _, message) =
            error_of(r#"{"jsonrpc":"2.0","id":1,"method":"batch/run","params":[1]}"#);
        assert_eq!(
            message,
            "Invalid request: batch/run: \"params\" must be an object of named parameters, got an array"
        );

        let ok = parse_request(r#"{"jsonrpc":"2.0","method":"batch/cancel","params":{"id":2}}"#)
            .ok()
            .unwrap();
        assert_eq!((ok.id, ok.method.as_str()), (None, "batch/cancel"));
    }
}

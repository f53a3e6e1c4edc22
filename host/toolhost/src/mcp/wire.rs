//! The MCP front's messages as they arrive, judged before rmcp takes them:
//! every message that is or claims to be a request gets an answer, with its
//! id, and no message ends the server.
//!
//! rmcp's own stdio transport drops a line it cannot parse (the client then
//! waits for ever), answers a message it cannot type without the id, treats
//! a served method with wrong parameters as an unknown method (`-32601`),
//! and its handshake ends the session on the first message that is not a
//! request. Here each message goes through [`classify`] first, on every
//! transport: on stdio ([`Wire`], which also reads lines of at most
//! [`jsonrpc::MAX_MESSAGE_BYTES`] and writes every answer from one task), and over
//! HTTP (the route asks [`classify`] before rmcp sees the body). What rmcp
//! would misread is answered here ([`crate::jsonrpc`] says with what);
//! what it reads right is handed on unchanged.
//!
//! A session that never starts (a notification, a response or a refused
//! `initialize` before the handshake) ends rmcp's serving, not the
//! server's: [`McpServer::serve`] serves the same wire again.
//!
//! Once a session's handshake is done, its `tools/call`s are answered
//! beside rmcp's loop ([`Direct`]): the reader runs rmcp's own dispatch of
//! the request (the same checks, the same handler, the same answer) and
//! queues the answer, where rmcp's loop would take it through four tasks.
//! Everything else still goes through rmcp.

use super::McpServer;
use crate::jsonrpc::{self, LineReader, Rejection, Verdict};
use futures::FutureExt;
use rmcp::Service;
use rmcp::model::{
    ClientNotification, ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, JsonRpcRequest,
    RequestId,
};
use rmcp::service::{Peer, RequestContext, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A message from the client, as rmcp types it.
pub(crate) type Incoming = RxJsonRpcMessage<RoleServer>;

/// What the front does with one message.
pub(crate) enum Read {
    /// Hand it to rmcp.
    Message(Box<Incoming>),
    /// Answer it here.
    Answer(Rejection),
    /// Let it go: a notification or response that cannot be read.
    Drop,
}

/// The verdict on one message's bytes (a line, an HTTP body).
pub(crate) fn classify(text: &[u8]) -> Read {
    let text = text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text);
    let why = match serde_json::from_slice::<Incoming>(text) {
        Ok(message) if !misread(&message, text) => return Read::Message(Box::new(message)),
        Ok(_) => "its parameters do not fit the method".to_string(),
        Err(e) => e.to_string(),
    };
    match jsonrpc::judge(text, &why, &invalid_params) {
        Verdict::Answer(rejection) => Read::Answer(rejection),
        Verdict::Drop(_) => Read::Drop,
    }
}

/// Whether `message` is a `tools/call` request.
pub(crate) fn is_tool_call(message: &Incoming) -> bool {
    matches!(message, JsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::CallToolRequest(_)))
}

/// Whether rmcp took `message` for what it is not: a request of a method it
/// serves whose parameters did not fit, which its untagged parse turns into
/// a custom request (answered `-32601 Method not found`).
fn misread(message: &Incoming, text: &[u8]) -> bool {
    match message {
        JsonRpcMessage::Request(request) => match &request.request {
            ClientRequest::CustomRequest(custom) => {
                let method = custom.method.as_str();
                SERVED.iter().any(|(served, _)| *served == method) && !removed_for(text, method)
            }
            _ => false,
        },
        _ => false,
    }
}

/// The methods revision 2026-07-28 removed (SEP-2575): a request of that
/// revision (its `_meta` says so) naming one is not served, and rmcp
/// answers it as such (`-32601`, over HTTP `404`).
const REMOVED_IN_2026_07_28: &[&str] = &[
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Whether `method` is one the revision `text` declares removed.
fn removed_for(text: &[u8], method: &str) -> bool {
    REMOVED_IN_2026_07_28.contains(&method)
        && serde_json::from_slice::<Value>(text).is_ok_and(|message| {
            message
                .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                .and_then(Value::as_str)
                .is_some_and(|version| version >= "2026-07-28")
        })
}

/// Why `request` (`{"method", "params"}`) does not fit its method's type,
/// for the methods the server serves; `None` for any other method.
fn invalid_params(method: &str, request: &Value) -> Option<String> {
    let (_, check) = SERVED.iter().find(|(m, _)| *m == method)?;
    Some(check(request).unwrap_or_else(|| "they do not fit the method".into()))
}

/// The serde error of `request` read as `T`.
fn refusal<T: serde::de::DeserializeOwned>(request: &Value) -> Option<String> {
    serde_json::from_value::<T>(request.clone())
        .err()
        .map(|e| e.to_string())
}

type Check = fn(&Value) -> Option<String>;

/// Every request method rmcp types for a server, with its request type.
#[allow(deprecated)]
const SERVED: &[(&str, Check)] = {
    use rmcp::model::*;
    &[
        ("ping", refusal::<PingRequest>),
        ("initialize", refusal::<InitializeRequest>),
        ("server/discover", refusal::<DiscoverRequest>),
        ("completion/complete", refusal::<CompleteRequest>),
        ("logging/setLevel", refusal::<SetLevelRequest>),
        ("prompts/get", refusal::<GetPromptRequest>),
        ("prompts/list", refusal::<ListPromptsRequest>),
        ("resources/list", refusal::<ListResourcesRequest>),
        (
            "resources/templates/list",
            refusal::<ListResourceTemplatesRequest>,
        ),
        ("resources/read", refusal::<ReadResourceRequest>),
        (
            "subscriptions/listen",
            refusal::<SubscriptionsListenRequest>,
        ),
        ("resources/subscribe", refusal::<SubscribeRequest>),
        ("resources/unsubscribe", refusal::<UnsubscribeRequest>),
        ("tools/call", refusal::<CallToolRequest>),
        ("tools/list", refusal::<ListToolsRequest>),
        ("tasks/get", refusal::<GetTaskRequest>),
        ("tasks/update", refusal::<UpdateTaskRequest>),
        ("tasks/cancel", refusal::<CancelTaskRequest>),
    ]
};

/// One client's stdio: lines read (at most 16 MiB each) and
/// judged, answers written in order by one task. Shared by every
/// [`WireTransport`] made from it, so that a session that never started
/// leaves the next one the same input.
pub(crate) struct Wire {
    lines: Arc<Mutex<LineReader<Input>>>,
    out: mpsc::UnboundedSender<Outgoing>,
    ended: Arc<AtomicBool>,
    server: McpServer,
    /// The session whose handshake is done, once it is.
    direct: Arc<OnceLock<Direct>>,
}

impl Clone for Wire {
    fn clone(&self) -> Self {
        Wire {
            lines: self.lines.clone(),
            out: self.out.clone(),
            ended: self.ended.clone(),
            server: self.server.clone(),
            direct: self.direct.clone(),
        }
    }
}

/// The client's side of the pipe, buffered.
type Input = BufReader<Box<dyn AsyncRead + Send + Unpin>>;

enum Outgoing {
    Line(Vec<u8>),
    Message(
        Box<TxJsonRpcMessage<RoleServer>>,
        oneshot::Sender<std::io::Result<()>>,
    ),
    /// Tells when everything queued before it is written.
    Written(oneshot::Sender<()>),
}

impl Wire {
    /// Read messages from `input` and write answers to `output` (a task
    /// writes, in the order the answers were made).
    pub(crate) fn new<R, W>(input: R, output: W, server: McpServer) -> Wire
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (out, mut queue) = mpsc::unbounded_channel::<Outgoing>();
        tokio::spawn(async move {
            let mut output = output;
            while let Some(next) = queue.recv().await {
                let (bytes, done) = match next {
                    Outgoing::Line(bytes) => (bytes, None),
                    Outgoing::Written(told) => {
                        let _ = told.send(());
                        continue;
                    }
                    Outgoing::Message(message, done) => (line_of(&message), Some(done)),
                };
                let written = async {
                    output.write_all(&bytes).await?;
                    output.flush().await
                }
                .await;
                let failed = written.is_err();
                if let Some(done) = done {
                    let _ = done.send(written);
                }
                if failed {
                    break;
                }
            }
        });
        Wire {
            lines: Arc::new(Mutex::new(LineReader::new(BufReader::with_capacity(
                64 << 10,
                Box::new(input),
            )))),
            out,
            ended: Arc::new(AtomicBool::new(false)),
            server,
            direct: Arc::default(),
        }
    }

    /// From now on, answer the `tools/call`s of the session rmcp opened
    /// with `peer` here, beside its loop ([`Direct`]).
    pub(crate) fn answer_calls(&self, peer: Peer<RoleServer>) {
        let _ = self.direct.set(Direct {
            peer,
            running: Running::default(),
            tasks: TaskTracker::new(),
            session: CancellationToken::new(),
        });
    }

    /// The session's end, as rmcp ends its own requests' (its input closed):
    /// the calls still running have [`DRAIN`] to end and be answered, then
    /// the rest are cancelled; returns once every answer is written.
    pub(crate) async fn end_calls(&self) {
        let Some(direct) = self.direct.get() else {
            return;
        };
        direct.tasks.close();
        let _ = tokio::time::timeout(DRAIN, direct.tasks.wait()).await;
        direct.session.cancel();
        direct.tasks.wait().await;
        let (told, written) = oneshot::channel();
        if self.out.send(Outgoing::Written(told)).is_ok() {
            let _ = written.await;
        }
    }

    /// A transport for one serving of rmcp's.
    pub(crate) fn transport(&self) -> WireTransport {
        WireTransport { wire: self.clone() }
    }

    /// Whether the input has ended.
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// The next message for rmcp; `None` at the end of the input.
    async fn receive(&self) -> Option<Incoming> {
        let mut lines = self.lines.lock().await;
        loop {
            let read = match lines.next().await {
                Some(Ok(line)) => classify(&line),
                Some(Err(rejection)) => Read::Answer(rejection),
                None => {
                    self.ended.store(true, Ordering::SeqCst);
                    return None;
                }
            };
            match read {
                Read::Message(mut message) => {
                    // Each `tools/call` takes its turn in the order of file
                    // mutations as it is read (see `Arrival`).
                    if let JsonRpcMessage::Request(request) = message.as_mut()
                        && let ClientRequest::CallToolRequest(call) = &mut request.request
                    {
                        call.extensions.insert(self.server.arrival());
                    }
                    // A client that sent more already is answered
                    // concurrently (see `Direct::start`).
                    let more = !lines.input().buffer().is_empty();
                    match self.direct.get() {
                        Some(direct) => {
                            match direct.take(*message, more, &self.server, &self.out) {
                                Some(message) => return Some(message),
                                None => continue,
                            }
                        }
                        None => return Some(*message),
                    }
                }
                Read::Answer(rejection) => {
                    let _ = self.out.send(Outgoing::Line(rejection.to_line()));
                }
                Read::Drop => {}
            }
        }
    }
}

/// How long the calls running when the input ends have to be answered
/// (rmcp gives its own requests as long).
const DRAIN: Duration = Duration::from_secs(5);

/// A handshake session's `tools/call`s, answered beside rmcp's loop.
///
/// rmcp's loop reads a request, spawns its handler, takes the handler's
/// answer back through a channel, spawns a task to send it, and the wire's
/// writer writes it: each hand-over a wake-up, on the other core as often
/// as not. Here the reader runs the same dispatch rmcp would
/// ([`Service::handle_request`]: its checks of the request's `_meta`, the
/// handler, the result's shape) until the call ends or first waits, then
/// hands what is left to a task of its own; the answer's line is queued
/// for the writer. What rmcp does around a request is kept: the request's
/// token is cancelled by a `notifications/cancelled` naming it (and then
/// no answer is sent) and when the handler ends; the session's end drains
/// the running calls as rmcp does. rmcp would also scope the handler with
/// the version a request names in its `_meta`, which only its check of
/// requests sent to the client reads: a call of 2026-07-28 asks through
/// input-required rounds and sends none (see `McpServer::run_call_ended`).
struct Direct {
    peer: Peer<RoleServer>,
    running: Running,
    tasks: TaskTracker,
    /// Cancelled when the session's calls have drained.
    session: CancellationToken,
}

impl Direct {
    /// Takes `message` when it is a call to answer here, or a cancellation
    /// of one; hands anything else back for rmcp.
    fn take(
        &self,
        message: Incoming,
        more: bool,
        server: &McpServer,
        out: &mpsc::UnboundedSender<Outgoing>,
    ) -> Option<Incoming> {
        match message {
            JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_)) =>
            {
                self.start(request, more, server.clone(), out.clone());
                None
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                    && let Some(token) = self.running.calls().remove(id)
                {
                    token.cancel();
                    return None;
                }
                Some(JsonRpcMessage::Notification(notification))
            }
            other => Some(other),
        }
    }

    /// Run `request` and queue its answer: here while it runs without
    /// waiting, unless `more` input waits to be read.
    fn start(
        &self,
        request: JsonRpcRequest<ClientRequest>,
        more: bool,
        server: McpServer,
        out: mpsc::UnboundedSender<Outgoing>,
    ) {
        let JsonRpcRequest {
            id, mut request, ..
        } = request;
        let token = self.session.child_token();
        self.running.calls().insert(id.clone(), token.clone());
        let meta = std::mem::take(request.get_meta_mut());
        let extensions = std::mem::take(request.extensions_mut());
        let mut context = RequestContext::new(id.clone(), self.peer.clone());
        context.ct = token.child_token();
        context.meta = meta;
        context.extensions = extensions;
        let running = self.running.clone();
        let handled = async move {
            let answer = std::panic::AssertUnwindSafe(server.handle_request(request, context))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(super::internal("running the call", "it panicked")));
            let answer: TxJsonRpcMessage<RoleServer> = match answer {
                Ok(result) => JsonRpcMessage::response(result, id.clone()),
                Err(error) => JsonRpcMessage::error(error, Some(id.clone())),
            };
            // A call the client cancelled is not answered.
            let wanted = running.calls().remove(&id).is_some();
            token.cancel();
            if wanted {
                let _ = out.send(Outgoing::Line(line_of(&answer)));
            }
        };
        // Most calls end without waiting on anything (a read, a listing):
        // they run here to their end, sparing the hand-over to a task. One
        // that waits (on a process, the person, or a guest yielding at the
        // epoch's tick) goes on in a task of its own, so the reader reads
        // on; so does each call of a client that sent more already, whose
        // calls then run side by side on every core.
        let mut handled = Box::pin(handled);
        let waker = std::task::Waker::noop();
        if more
            || handled
                .as_mut()
                .poll(&mut std::task::Context::from_waker(waker))
                .is_pending()
        {
            self.tasks.spawn(handled);
        }
    }
}

/// The token of each call running, by request id.
#[derive(Clone, Default)]
struct Running(Arc<std::sync::Mutex<HashMap<RequestId, CancellationToken>>>);

impl Running {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `message` as the line the writer writes.
fn line_of(message: &TxJsonRpcMessage<RoleServer>) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}

/// One serving's handle on a [`Wire`].
pub(crate) struct WireTransport {
    wire: Wire,
}

impl rmcp::transport::Transport<RoleServer> for WireTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (done, written) = oneshot::channel();
        let queued = self
            .wire
            .out
            .send(Outgoing::Message(Box::new(item), done))
            .is_ok();
        async move {
            if !queued {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            written
                .await
                .unwrap_or_else(|_| Err(std::io::ErrorKind::BrokenPipe.into()))
        }
    }

    async fn receive(&mut self) -> Option<Incoming> {
        self.wire.receive().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

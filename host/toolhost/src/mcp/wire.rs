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

use super::McpServer;
use crate::jsonrpc::{self, LineReader, Rejection, Verdict};
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc, oneshot};

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
}

impl Clone for Wire {
    fn clone(&self) -> Self {
        Wire {
            lines: self.lines.clone(),
            out: self.out.clone(),
            ended: self.ended.clone(),
            server: self.server.clone(),
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
                    Outgoing::Message(message, done) => {
                        let mut bytes = serde_json::to_vec(&message).unwrap_or_default();
                        bytes.push(b'\n');
                        (bytes, Some(done))
                    }
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
                    return Some(*message);
                }
                Read::Answer(rejection) => {
                    let _ = self.out.send(Outgoing::Line(rejection.to_line()));
                }
                Read::Drop => {}
            }
        }
    }
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

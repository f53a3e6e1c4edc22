//! `toolhost mcp`: the active tools as a Model Context Protocol server, on the
//! official Rust SDK (`rmcp`).
//!
//! * `tools/list`: the active tools in MCP's shape ([`formats::mcp_tool`]:
//!   input schema, the label as title, behaviour hints for the built-ins).
//! * `tools/call`: a one-call batch through [`Host::run_batch`], so the whole
//!   pipeline applies (validation, hooks, sandbox); the result's text and image
//!   blocks become MCP content and `isError` is kept. The tool sees the call id
//!   `mcp-{request id}`.
//! * Progress: when the request carries a progress token, each
//!   `tool_execution_update` becomes a `notifications/progress` (progress = the
//!   update's number, message = its text), all sent before the response.
//! * Cancellation: `notifications/cancelled` cancels the request's token in
//!   rmcp, which is the batch's token: the tool sees the abort (Pi's
//!   `Operation aborted`) and, as MCP requires, no response is sent.
//! * `notifications/tools/list_changed` whenever the active tools change
//!   ([`Host::changes`]) and, with [`Reload`], when the extension files change
//!   and reloading them changes the tool list.
//!
//! rmcp runs each request in its own task, so parallel requests from one
//! client run concurrently.
//!
//! # Protocol versions
//!
//! The server speaks the revisions that have the `initialize` handshake, up to
//! 2025-11-25. rmcp 3.11 also knows 2026-07-28, which drops the handshake for
//! per-request metadata and moves list-change notifications to
//! `subscriptions/listen` streams; clients that support both (the official
//! Python and TypeScript SDKs since 2.0) probe with `server/discover` at
//! 2026-07-28 first. Advertising only handshake revisions makes that probe
//! fail with -32022 naming them, and the clients fall back to `initialize`,
//! where the notifications above work as specified.

use crate::error::Error;
use crate::events::Event;
use crate::formats::{self, ToolFormat};
use crate::host::Host;
use crate::message::{ToolCall, text_of};
use crate::watch::Watcher;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// The newest MCP revision served (see the module docs).
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Builds a fresh host (the same configuration as the first).
pub type HostFactory =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Host, Error>> + Send>> + Send + Sync>;

/// Reload the tools when extension files change.
#[derive(Clone)]
pub struct Reload {
    pub factory: HostFactory,
    /// Directories and files to watch (e.g. `<workspace>/.toolhost/extensions`
    /// and each extension given by path).
    pub watch: Vec<PathBuf>,
    pub interval: Duration,
}

/// Where the server reports what happens outside the protocol (reloads,
/// cancelled calls, load problems): stderr in the CLI.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// The MCP server. Serve it with [`McpServer::serve`].
#[derive(Clone)]
pub struct McpServer {
    host: Arc<RwLock<Host>>,
    log: Log,
    reload: Option<Reload>,
}

impl McpServer {
    pub fn new(host: Host) -> McpServer {
        McpServer {
            host: Arc::new(RwLock::new(host)),
            log: Arc::new(|_| {}),
            reload: None,
        }
    }

    pub fn log(mut self, log: Log) -> McpServer {
        self.log = log;
        self
    }

    pub fn reload(mut self, reload: Reload) -> McpServer {
        self.reload = Some(reload);
        self
    }

    fn host(&self) -> Host {
        self.host.read().expect("host lock").clone()
    }

    /// Serve the client on this process's stdin and stdout (as an MCP client
    /// launches a stdio server) until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        let (input, output) = rmcp::transport::stdio_pipes();
        self.serve(input, output).await
    }

    /// Serve one client on `input`/`output` until it disconnects.
    pub async fn serve<R, W>(self, input: R, output: W) -> Result<(), Error>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = ServiceExt::serve(self.clone(), (input, output))
            .await
            .map_err(|e| Error::runtime_because("MCP initialization failed", e))?;
        let notifier = tokio::spawn(self.notify_changes(running.peer().clone()));
        let quit = running.waiting().await;
        notifier.abort();
        quit.map(|_| ())
            .map_err(|e| Error::runtime_because("the MCP service failed", e))
    }

    /// Send `notifications/tools/list_changed` when the tools change.
    async fn notify_changes(self, peer: Peer<RoleServer>) {
        let mut changes = self.host().changes();
        let mut watcher = self
            .reload
            .as_ref()
            .map(|r| Watcher::new(r.watch.clone(), r.interval));
        loop {
            let reloaded = tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The host went away without a replacement: nothing more to watch.
                        return;
                    }
                    false
                }
                () = async {
                    match watcher.as_mut() {
                        Some(w) => w.changed().await,
                        None => std::future::pending().await,
                    }
                } => true,
            };
            if reloaded {
                let Some(reload) = &self.reload else { continue };
                let before = self.listing();
                match (reload.factory)().await {
                    Ok(host) => {
                        for d in host.diagnostics() {
                            (self.log)(&format!("warning: {d}"));
                        }
                        changes = host.changes();
                        *self.host.write().expect("host lock") = host;
                    }
                    Err(e) => {
                        (self.log)(&format!(
                            "reloading the tools failed, keeping the old ones: {}",
                            e.chain()
                        ));
                        continue;
                    }
                }
                // Same definitions: the new components serve the next calls,
                // and clients need not list again.
                if self.listing() == before {
                    continue;
                }
                (self.log)("the tools changed; notifying the client");
            }
            if peer.notify_tool_list_changed().await.is_err() {
                return;
            }
        }
    }

    /// The active tools as `tools/list` returns them.
    fn listing(&self) -> Value {
        formats::tools_as(&self.host().active_tool_infos(), ToolFormat::Mcp)
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(format!("{what}: {e}"), None)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_protocol_version(PROTOCOL_VERSION)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL_VERSION))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        serde_json::from_value(self.listing()).map_err(|e| internal("listing the tools", e))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let host = self.host();
        let name = request.name.to_string();
        let call = ToolCall {
            id: format!("mcp-{}", context.id),
            name: name.clone(),
            arguments: Value::Object(request.arguments.unwrap_or_default()),
        };
        // Updates arrive on the tool's thread; one task sends them in order.
        // Without a progress token they are not wanted and not kept.
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| Progress::start(token, context.peer.clone()));
        let updates = progress.as_ref().map(|p| p.queue.clone());
        let sink = Arc::new(move |event: Event| {
            if let (Some(updates), Event::ToolExecutionUpdate { partial_result, .. }) =
                (&updates, event)
            {
                updates.push(text_of(&partial_result.content));
            }
        });
        let cancel = context.ct.clone();
        // A client calls what it was offered: the active tools.
        let result = host
            .call(call)
            .active_only()
            .cancel(cancel.clone())
            .events(sink)
            .await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        if cancel.is_cancelled() {
            (self.log)(&format!(
                "tools/call {name} (request {}) was cancelled; the tool answered: {}",
                context.id,
                result.text()
            ));
        }
        let result: CallToolResult =
            serde_json::from_value(json!({"content": result.content, "isError": result.is_error}))
                .map_err(|e| internal("converting the result", e))?;
        Ok(result.into())
    }
}

/// Updates of one call that may wait for a slow client at once, and their
/// bytes; past either, the newest waiting one is replaced by the next.
const QUEUED_UPDATES: usize = 16;
const QUEUED_UPDATE_BYTES: usize = 8 << 20;

/// A call's updates waiting to be sent: bounded, so a client that reads
/// slowly gets the first and the latest of them, and the host's memory does
/// not grow with every update a tool sends.
#[derive(Default)]
struct UpdateQueue {
    texts: std::sync::Mutex<std::collections::VecDeque<String>>,
    ready: tokio::sync::Notify,
}

impl UpdateQueue {
    fn push(&self, text: String) {
        let mut texts = self.texts.lock().expect("update queue lock");
        let bytes: usize = texts.iter().map(String::len).sum();
        let full = texts.len() >= QUEUED_UPDATES || bytes + text.len() > QUEUED_UPDATE_BYTES;
        match texts.back_mut() {
            Some(last) if full => *last = text,
            _ => texts.push_back(text),
        }
        drop(texts);
        self.ready.notify_one();
    }

    fn pop(&self) -> Option<String> {
        self.texts.lock().expect("update queue lock").pop_front()
    }
}

/// Forwards a call's updates as `notifications/progress`.
struct Progress {
    queue: Arc<UpdateQueue>,
    done: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Progress {
    fn start(token: ProgressToken, peer: Peer<RoleServer>) -> Progress {
        let queue = Arc::new(UpdateQueue::default());
        let pending = queue.clone();
        let done = CancellationToken::new();
        let finished = done.clone();
        let task = tokio::spawn(async move {
            let mut n = 0.0;
            loop {
                let text = match pending.pop() {
                    Some(text) => text,
                    None => {
                        tokio::select! {
                            biased;
                            () = pending.ready.notified() => continue,
                            () = finished.cancelled() => match pending.pop() {
                                Some(text) => text,
                                None => return,
                            },
                        }
                    }
                };
                // MCP wants progress to grow with every notification.
                n += 1.0;
                let param = ProgressNotificationParam::new(token.clone(), n).with_message(text);
                if peer.notify_progress(param).await.is_err() {
                    return;
                }
            }
        });
        Progress { queue, done, task }
    }

    /// Send what is queued, then stop: called once the batch has returned,
    /// when no update can follow (the pipeline ignores updates after a call
    /// settles), so the notifications all precede the response. Ending on a
    /// signal rather than on the channel closing keeps a sender clone held
    /// anywhere from delaying the response.
    async fn finish(self) {
        self.done.cancel();
        let _ = self.task.await;
    }
}

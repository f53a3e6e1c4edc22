//! `toolhost mcp`: the active tools as a Model Context Protocol server, on the
//! official Rust SDK (`rmcp`).
//!
//! * `tools/list`: the active tools in MCP's shape ([`formats::mcp_tool`]:
//!   input schema, the label as title, behaviour hints for the built-ins).
//! * `tools/call`: a one-call batch through [`Host::run_batch`], so the whole
//!   pipeline applies (validation, hooks, sandbox); the result's text and image
//!   blocks become MCP content and `isError` is kept. A tool not in the active
//!   set is MCP's protocol error, `-32602 Unknown tool: NAME`. The tool sees the call id
//!   `mcp-{request id}`.
//! * Progress: when the request carries a progress token, each
//!   `tool_execution_update` becomes a `notifications/progress` (progress = the
//!   update's number, message = its text), all sent before the response;
//!   after [`HEARTBEAT`] without an update, one without a message, so that a
//!   silent command does not time out a client that waits on progress.
//! * Cancellation: `notifications/cancelled` cancels the request's token in
//!   rmcp, which is the batch's token: the tool sees the abort (Pi's
//!   `Operation aborted`) and, as MCP requires, no response is sent.
//! * Permission questions ([`crate::permissions`]): `elicitation/create` to
//!   a client that declared elicitation (`ask`).
//! * `notifications/tools/list_changed` whenever the active tools change
//!   ([`Host::changes`]) and, with [`Reload`], when the extension files change
//!   and reloading them changes the tool list.
//!
//! * Every message is judged before rmcp parses it ([`wire`]): each that is
//!   or claims to be a request gets its answer with the id it was sent
//!   with (`-32700`, `-32600`, `-32602`, as [`crate::jsonrpc`] says), on
//!   stdio and over HTTP, and no message ends the server.
//!
//! rmcp runs each request in its own task, so parallel requests from one
//! client run concurrently. Their file mutations keep the order in which
//! the requests were read (a `write` then an `edit` of one file, sent
//! together, never run the other way round): each `tools/call` takes its
//! turn as it is read ([`Arrival`]), on stdio by the transport, over HTTP by
//! the route.
//!
//! # Protocol versions and transports
//!
//! Every revision rmcp knows, up to 2026-07-28:
//!
//! * 2026-07-28 has no handshake: a client may ask `server/discover`, and
//!   every request carries its protocol version and client capabilities in
//!   `_meta`; the server keeps no state between requests, so any instance
//!   can answer any request. Tool-list changes reach a client that holds a
//!   `subscriptions/listen` stream open ([`ServerHandler::listen`]); lists
//!   carry the revision's cache hints (rmcp adds `ttlMs: 0`, `cacheScope:
//!   private`: the active tools can change at any time).
//! * 2025-11-25, 2025-06-18, 2025-03-26 (and 2024-11-05) open with the
//!   `initialize` handshake, and `notifications/tools/list_changed` goes to
//!   every initialized session.
//!
//! [`McpServer::serve_stdio`] serves one client on stdio;
//! [`McpServer::http_route`] serves MCP's Streamable HTTP at `/mcp` on the
//! [`crate::http_server`] listener, many clients at once (handshake clients in
//! sessions, bounded in count and idle time by [`sessions`]; 2026-07-28
//! clients statelessly).

use crate::audit::Outcome;
use crate::error::Error;
use crate::events::Event;
use crate::formats::{self, ToolFormat};
use crate::host::Host;
use crate::message::{ToolCall, text_of};
use crate::watch::Watcher;
// Logging: deprecated from 2026-07-28 on (SEP-2577), a part of 2025-11-25.
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ServerCapabilities, ServerConfig, SubscriptionFilter,
};
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "http")]
mod ask;
mod features;
#[cfg(feature = "http")]
mod resume;
pub mod sessions;
mod wire;
#[cfg(feature = "http")]
pub use sessions::SessionBounds;

/// The newest MCP revision served (see the module docs).
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The newest revision with the `initialize` handshake, which `initialize`
/// answers with when a client asks for one the server does not know.
pub const HANDSHAKE_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

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

/// The MCP server: one per host, serving any number of clients (each
/// clone is the same server). Serve it with [`McpServer::serve_stdio`],
/// [`McpServer::serve`] or [`McpServer::http_route`].
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

struct Shared {
    host: RwLock<Host>,
    log: Log,
    reload: Option<Reload>,
    /// Counts the changes of the tool list; every session and listen stream
    /// watches it. Fed by one task ([`McpServer::watch_changes`]), started
    /// by the first client.
    generation: watch::Sender<u64>,
    watching: OnceLock<tokio::task::JoinHandle<()>>,
    /// The person behind each recent client session that can be asked.
    askers: ask::Askers,
    /// The `requestState`s of 2026-07-28 questions.
    states: ask::States,
    /// Each recent session's `logging/setLevel`.
    log_levels: ask::LogLevels,
    /// The processes of each open HTTP session.
    processes: ask::Processes,
    /// The calls running as tasks, and the finished ones for their TTL.
    tasks: rmcp::task_manager::TaskManager,
    /// The resources each handshake session watches.
    subscriptions: features::Subscriptions,
    /// How the resources of acknowledged listen streams were then.
    baselines: features::Baselines,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(task) = self.watching.get() {
            task.abort();
        }
    }
}

impl McpServer {
    pub fn new(host: Host) -> McpServer {
        McpServer::with(host, Arc::new(|_| {}), None)
    }

    fn with(host: Host, log: Log, reload: Option<Reload>) -> McpServer {
        McpServer {
            shared: Arc::new(Shared {
                host: RwLock::new(host),
                log,
                reload,
                generation: watch::channel(0).0,
                watching: OnceLock::new(),
                askers: Default::default(),
                states: Default::default(),
                log_levels: Default::default(),
                processes: Default::default(),
                tasks: Default::default(),
                subscriptions: Default::default(),
                baselines: Default::default(),
            }),
        }
    }

    pub fn log(self, log: Log) -> McpServer {
        let (host, reload) = (self.host(), self.shared.reload.clone());
        McpServer::with(host, log, reload)
    }

    pub fn reload(self, reload: Reload) -> McpServer {
        let (host, log) = (self.host(), self.shared.log.clone());
        McpServer::with(host, log, Some(reload))
    }

    fn host(&self) -> Host {
        self.shared.host.read().expect("host lock").clone()
    }

    /// A turn in the host's order of file mutations for a call read now.
    fn arrival(&self) -> Arrival {
        let turn = self.host().turns(1).pop();
        Arrival(Arc::new(crate::ops::fs::TurnSlot::new(turn)))
    }

    fn log_line(&self, line: &str) {
        (self.shared.log)(line)
    }

    /// What a client's model is told of the server in the handshake: what
    /// toolhost is, and the active tools' snippets and guidelines, as
    /// `toolhost prompt` gives them.
    fn instructions(&self) -> String {
        let host = self.host();
        format!(
            "toolhost runs these tools in {}, each in a sandbox that reaches only what it was \
             granted.\n\n{}",
            host.workspace().display(),
            formats::system_prompt_section_as(&host.definitions(), host.pi_profile())
        )
    }

    /// Serve the client on this process's stdin and stdout (as an MCP client
    /// launches a stdio server) until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        let (input, output) = rmcp::transport::stdio_pipes();
        self.serve(input, output).await
    }

    /// Serve one client on `input`/`output` until it disconnects. Every
    /// message is judged before rmcp reads it ([`wire`]), and a session that
    /// never started (its first message a notification, a response or an
    /// `initialize` rmcp refused, each answered where it claims to be a
    /// request) is followed by the next on the same input: no message ends
    /// the server, only the end of its input does.
    pub async fn serve<R, W>(self, input: R, output: W) -> Result<(), Error>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        use rmcp::service::ServerInitializeError;
        self.start_watching();
        let wire = wire::Wire::new(input, output, self.clone());
        loop {
            match ServiceExt::serve(self.clone(), wire.transport()).await {
                Ok(running) => {
                    return running
                        .waiting()
                        .await
                        .map(|_| ())
                        .map_err(|e| Error::runtime_because("the MCP service failed", e));
                }
                Err(_) if wire.ended() => return Ok(()),
                Err(
                    ServerInitializeError::ExpectedInitializeRequest(_)
                    | ServerInitializeError::InitializeFailed(_)
                    | ServerInitializeError::UnexpectedInitializeResponse(_),
                ) => continue,
                Err(e) => return Err(Error::runtime_because("MCP initialization failed", e)),
            }
        }
    }

    /// Streamable HTTP at `/mcp`, for [`crate::http_server::HttpListener`]: request
    /// bodies up to `max_body_bytes`; handshake sessions within `bounds`
    /// ([`sessions`]); the listener checks `Host`, `Origin` and the token
    /// first. Cancelling `shutdown` ends every session.
    #[cfg(feature = "http")]
    pub fn http_route(
        &self,
        max_body_bytes: usize,
        bounds: SessionBounds,
        shutdown: CancellationToken,
    ) -> crate::http_server::Route {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };
        self.start_watching();
        let shared = Arc::downgrade(&self.shared);
        let bounded = Arc::new(sessions::BoundedSessions::local(bounds).on_close(Arc::new(
            move |id: &str| {
                if let Some(shared) = shared.upgrade() {
                    shared.processes.close(id);
                    McpServer { shared }.forget_session(&format!("http:{id}"));
                }
            },
        )));
        sessions::BoundedSessions::reap_idle(&bounded, shutdown.clone());
        let config = StreamableHttpServerConfig::default()
            // The listener has checked Host and Origin by its own rules.
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(max_body_bytes)
            .with_cancellation_token(shutdown);
        let server = self.clone();
        let service = StreamableHttpService::new(move || Ok(server.clone()), bounded, config);
        let server = self.clone();
        crate::http_server::Route {
            path: "/mcp",
            handler: Arc::new(move |request| {
                let (service, server) = (service.clone(), server.clone());
                Box::pin(async move {
                    // A call takes its turn once its request has arrived
                    // whole, before rmcp gives it a task.
                    let (parts, body) = request.into_parts();
                    let body = match crate::http_server::read_body(body, max_body_bytes).await {
                        Ok(body) => body,
                        Err(refused) => return refused,
                    };
                    // A JSON body rmcp would refuse with a bare 415, answer
                    // without its id, or misread is answered here, 400 with
                    // the JSON-RPC error that fits ([`wire::classify`]). Any
                    // other media type is rmcp's to refuse (415).
                    let json = parts.method == http::Method::POST
                        && parts
                            .headers
                            .get(http::header::CONTENT_TYPE)
                            .and_then(|v| v.to_str().ok())
                            .is_some_and(|v| v.trim_start().starts_with("application/json"));
                    if json {
                        match wire::classify(&body) {
                            wire::Read::Message(_) => {}
                            wire::Read::Answer(rejection) => {
                                return crate::http_server::rejected(
                                    http::StatusCode::BAD_REQUEST,
                                    &rejection,
                                );
                            }
                            wire::Read::Drop => {
                                let rejection = crate::jsonrpc::Rejection::new(
                                    None,
                                    crate::jsonrpc::code::INVALID_REQUEST,
                                    "Invalid request: the message cannot be read",
                                );
                                return crate::http_server::rejected(
                                    http::StatusCode::BAD_REQUEST,
                                    &rejection,
                                );
                            }
                        }
                    }
                    let call = is_tool_call(&body);
                    let mut request =
                        http::Request::from_parts(parts, http_body_util::Full::new(body));
                    if call {
                        request.extensions_mut().insert(server.arrival());
                    }
                    // In a handshake session, rmcp answers a POST on a stream
                    // of its own but does not cancel the call when that
                    // stream's client goes away; this token does.
                    let gone = resume::ClientGone::default();
                    request.extensions_mut().insert(gone.clone());
                    let (response, refused) = sessions::REFUSED
                        .scope(std::cell::Cell::new(false), async move {
                            let response = service.handle(request).await;
                            (response, sessions::REFUSED.with(|r| r.get()))
                        })
                        .await;
                    if refused {
                        return too_many_sessions(bounds);
                    }
                    response.map(|body| crate::http_server::hold(body, gone.guard()))
                })
            }),
        }
    }

    /// Start the one task that follows the host's changes and the extension
    /// files (once per server, on the runtime of its first client).
    fn start_watching(&self) {
        self.shared.watching.get_or_init(|| {
            // Subscribed now, not when the task first runs: a change made
            // before that (a loaded machine may run it late) is not missed.
            let changes = self.host().changes();
            tokio::spawn(self.clone().downgrade().watch_changes(changes))
        });
    }

    fn downgrade(self) -> WeakServer {
        WeakServer(Arc::downgrade(&self.shared))
    }

    /// A receiver marked changed whenever the tool list changed.
    fn generations(&self) -> watch::Receiver<u64> {
        self.shared.generation.subscribe()
    }

    /// The active tools as `tools/list` returns them, each with the task
    /// support its extension declares (`execution.taskSupport`).
    fn listing(&self) -> Value {
        let host = self.host();
        tools_as_mcp(&host, &host.active_tool_infos())
    }
}

/// `tools` in MCP's shape (a `tools/list` result), each with the task
/// support its extension declares (`execution.taskSupport`).
fn tools_as_mcp(host: &Host, tools: &[crate::registry::ToolInfo]) -> Value {
    let mut listing = formats::tools_as(tools, ToolFormat::Mcp);
    if let Some(tools) = listing["tools"].as_array_mut() {
        for tool in tools {
            let name = tool["name"].as_str().unwrap_or_default();
            if let Some(support) = host.offers().task_support.get(name) {
                tool["execution"] = json!({ "taskSupport": support.name() });
            }
        }
    }
    listing
}

/// The turn a `tools/call` took in the host's order of file mutations when
/// it was read (see `crate::ops::fs::lock`); the call takes it out.
#[derive(Clone)]
struct Arrival(Arc<crate::ops::fs::TurnSlot>);

impl Arrival {
    /// The turn of the call in `context`, if it brought one.
    fn of(context: &RequestContext<RoleServer>) -> Option<crate::ops::fs::Turn> {
        let arrival = context.extensions.get::<Arrival>();
        #[cfg(feature = "http")]
        let arrival = arrival.or_else(|| {
            context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Arrival>())
        });
        arrival.and_then(|a| a.0.take())
    }
}

/// Whether an HTTP request's body is a `tools/call` (the only request that
/// takes a turn: one that is never answered would hold up nothing, but a
/// stream kept open would hold its turn as long).
#[cfg(feature = "http")]
fn is_tool_call(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .is_ok_and(|m| m.method.as_deref() == Some("tools/call"))
}

/// The token of a call: the request's own (the client cancelled it, or
/// the session ended) or, over HTTP, its client going away.
fn call_token(context: &RequestContext<RoleServer>) -> CancellationToken {
    #[cfg(feature = "http")]
    if let Some(resume::ClientGone { token: gone, .. }) = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<resume::ClientGone>())
    {
        let token = context.ct.child_token();
        let (gone, either) = (gone.clone(), token.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = gone.cancelled() => either.cancel(),
                () = either.cancelled() => {}
            }
        });
        return token;
    }
    context.ct.clone()
}

/// 503 for an `initialize` past the session bound: what the bound is, what
/// frees a place, and how to raise it. Nothing was created.
#[cfg(feature = "http")]
fn too_many_sessions(bounds: SessionBounds) -> http::Response<crate::http_server::HttpBody> {
    crate::http_server::plain(
        http::StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "Service unavailable: this server already keeps {} MCP sessions, its limit \
             (--max-sessions); a session ends when its client closes it (DELETE /mcp) or after \
             {} s without a request (--session-idle). Start the server with a higher \
             --max-sessions to allow more.",
            bounds.max,
            bounds.idle.as_secs()
        ),
    )
}

/// The watcher's handle on the server: it must not keep it alive.
struct WeakServer(std::sync::Weak<Shared>);

impl WeakServer {
    fn get(&self) -> Option<McpServer> {
        self.0.upgrade().map(|shared| McpServer { shared })
    }

    /// Bump the generation whenever the active tools change and, with
    /// [`Reload`], when the extension files change and reloading them
    /// changes the tool list.
    async fn watch_changes(self, mut changes: watch::Receiver<u64>) {
        let Some(server) = self.get() else { return };
        let mut watcher = server
            .shared
            .reload
            .as_ref()
            .map(|r| Watcher::new(r.watch.clone(), r.interval));
        drop(server);
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
            let Some(server) = self.get() else { return };
            if reloaded {
                let Some(reload) = server.shared.reload.clone() else {
                    continue;
                };
                let before = server.listing();
                match (reload.factory)().await {
                    Ok(host) => {
                        for d in host.diagnostics() {
                            server.log_line(&format!("warning: {d}"));
                        }
                        changes = host.changes();
                        *server.shared.host.write().expect("host lock") = host;
                    }
                    Err(e) => {
                        server.log_line(&format!(
                            "reloading the tools failed, keeping the old ones: {}",
                            e.chain()
                        ));
                        continue;
                    }
                }
                // Same definitions: the new components serve the next calls,
                // and clients need not list again.
                if server.listing() == before {
                    continue;
                }
                server.log_line("the tools changed; notifying the clients");
            }
            server.shared.generation.send_modify(|g| *g += 1);
        }
    }
}

/// Send `notifications/tools/list_changed` to one handshake session for
/// every change, until it goes away.
/// Tell the session `key`'s client each end of its processes, as a log
/// message (`notice`, logger `toolhost`) if it asked for such messages;
/// until its processes are gone or the server is.
#[allow(deprecated)]
async fn tell_exits(
    shared: std::sync::Weak<Shared>,
    key: String,
    peer: Peer<RoleServer>,
    mut exits: tokio::sync::broadcast::Receiver<crate::ops::process::session::ProcessInfo>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let level = rmcp::model::LoggingLevel::Notice;
    loop {
        let info = match exits.recv().await {
            Ok(info) => info,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if !shared.log_levels.wants(&key, level) {
            continue;
        }
        let params = rmcp::model::LoggingMessageNotificationParam::new(level, json!(info.ended()))
            .with_logger("toolhost");
        if peer.notify_logging_message(params).await.is_err() {
            return;
        }
    }
}

async fn notify_session(mut generations: watch::Receiver<u64>, peer: Peer<RoleServer>) {
    while generations.changed().await.is_ok() {
        if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
            return;
        }
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(format!("{what}: {e}"), None)
}

/// `value` as the rmcp type of a result; `what` names the result in the
/// internal error it can only be when toolhost built it wrong.
fn from_json<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|e| internal(what, e))
}

/// `-32021`: the request needs `capabilities` (in the shape of a client's
/// declaration, `{"elicitation": {}}`) which the client did not declare.
fn missing_capability(capabilities: Value) -> McpError {
    match from_json("naming the missing capability", capabilities) {
        Ok(required) => McpError::missing_required_client_capability(required),
        Err(e) => e,
    }
}

/// A spawned call's end, a panic in it an internal error.
fn joined<T>(joined: Result<Result<T, McpError>, tokio::task::JoinError>) -> Result<T, McpError> {
    joined.unwrap_or_else(|e| Err(internal("running the call", e)))
}

impl ServerHandler for McpServer {
    // `enable_logging`: 2025-11-25 clients may set a level.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_tasks()
            .enable_prompts()
            .enable_completions()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        // `[mcp] resources = false`: no resources at all.
        if self.host().files().is_none() && self.host().offers().resources.is_empty() {
            capabilities.resources = None;
        }
        ServerConfig::new(capabilities)
            .with_protocol_version(HANDSHAKE_VERSION)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions())
    }

    /// `logging/setLevel`: the least severe level of the log messages the
    /// session is sent (toolhost's notes on its calls: a call cancelled).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared.log_levels.set(&context, request.level);
        Ok(())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL_VERSION))
    }

    /// A handshake session is open: tell it of every change from now on.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        tokio::spawn(notify_session(self.generations(), context.peer));
    }

    /// What a `subscriptions/listen` stream gets of what it asked: what
    /// the server offers, and of the resources only those it may watch.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        accepted.resource_subscriptions = accepted
            .resource_subscriptions
            .map(|uris| self.watchable_of(&uris))
            .filter(|uris| !uris.is_empty());
        if let Some(uris) = &accepted.resource_subscriptions {
            self.note_baseline(uris);
        }
        Some(accepted)
    }

    /// A 2026-07-28 client's `subscriptions/listen` stream: one
    /// `notifications/tools/list_changed` per change, and one
    /// `notifications/resources/updated` per change of a resource it
    /// watches, until it closes.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut generations = self.generations();
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let mut watcher = features::Watcher::from_baseline(self.clone(), uris).await;
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = generations.changed() => {
                    if changed.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
                changed = watcher.tick() => {
                    for uri in changed {
                        if context.sink().notify_resource_updated(uri).await.is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        let server = self.clone();
        let page =
            tokio::task::spawn_blocking(move || server.list_resources_page(cursor.as_deref()))
                .await
                .map_err(|e| internal("listing the resources", e))??;
        from_json("listing the resources", page)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        from_json("listing the resource templates", self.list_templates())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        let contents = self.read_contents(&request.uri).await?;
        let result: rmcp::model::ReadResourceResult = from_json(
            "reading the resource",
            json!({ "contents": [contents], "resultType": "complete" }),
        )?;
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let session = ask::session_key(&context);
        self.watch_resource(session, request.uri, context.peer.clone())
            .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unwatch_resource(&ask::session_key(&context), &request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        from_json("listing the prompts", self.list_prompts_all())
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        let responses = serde_json::to_value(&request.input_responses)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let asking = if ask::stateless(&context) {
            features::PromptAsking::Stateless {
                responses: &responses,
            }
        } else {
            features::PromptAsking::Live {
                peer: ask::can_elicit(&context).then_some(&context.peer),
            }
        };
        let result = self
            .get_prompt_messages(&request.name, &arguments, asking)
            .await?;
        if result["resultType"] == "input_required" {
            let required: rmcp::model::InputRequiredResult =
                from_json("asking for the prompt's form", result)?;
            return Ok(required.into());
        }
        let result: rmcp::model::GetPromptResult = from_json("getting the prompt", result)?;
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        let reference = serde_json::to_value(&request.r#ref)
            .map_err(|e| internal("reading the completion's ref", e))?;
        let result = self
            .complete_argument(&reference, &request.argument.name, &request.argument.value)
            .await?;
        from_json("completing", result)
    }

    /// A tool of the active set in MCP's shape, by name: what rmcp checks a
    /// `tools/call`'s `Mcp-Param-*` headers against over HTTP (SEP-2243:
    /// a parameter its schema marks `x-mcp-header` must be mirrored, and
    /// match).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let host = self.host();
        let mut listing = tools_as_mcp(&host, &[host.active_tool_info(name)?]);
        serde_json::from_value(listing["tools"][0].take()).ok()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut listing = self.listing();
        // A complete result (2026-07-28 requires the field; rmcp removes it
        // for older revisions).
        listing["resultType"] = json!("complete");
        from_json("listing the tools", listing)
    }

    /// A call from a client that declared the tasks extension (in its
    /// session or in the request) may run as a task, as its tool's task
    /// support says ([`crate::extensions::offers::TaskSupport`]):
    ///
    /// * optional (the default): answered at once when it ends within
    ///   [`TASK_AFTER`], else a task the client polls (`tasks/get`) and may
    ///   cancel (`tasks/cancel`);
    /// * required: always a task, after the input-required rounds of its
    ///   questions before it is made; a client that did not declare tasks
    ///   gets `-32021`, naming the extension;
    /// * forbidden: always a request.
    ///
    /// The task belongs to the server, not the request: a client that
    /// reconnects finds it by its id, and the call is not cancelled when
    /// the request's stream ends. A tool that crashes in a task fails the
    /// task (a protocol error), where a tool's own error completes it.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        use crate::extensions::offers::TaskSupport;
        let host = self.host();
        let tasks_declared = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let active = host.is_active(&request.name);
        let support = host.offers().task_support(&request.name);
        if active && support == TaskSupport::Required && !tasks_declared {
            let tasks = json!({ "extensions": { rmcp::model::TASKS_EXTENSION_ID: {} } });
            return Err(missing_capability(tasks));
        }
        if !tasks_declared || !active || support == TaskSupport::Forbidden {
            return self.run_call(request, context, Mode::Request).await;
        }
        let stop = CancellationToken::new();
        let request_gone = call_token(&context);
        if support == TaskSupport::Required {
            // Its questions are input-required rounds until it runs on; the
            // round that runs it answers with a task.
            let mut running = {
                let (this, stop) = (self.clone(), stop.clone());
                let mode = Mode::ThenTask { cancel: stop };
                tokio::spawn(async move { this.run_call_ended(request, context, mode).await })
            };
            tokio::select! {
                biased;
                ended = &mut running => {
                    let ended = joined(ended);
                    if let Ok((CallToolResponse::InputRequired(question), _)) = ended {
                        return Ok(CallToolResponse::InputRequired(question));
                    }
                    let finished = tokio::spawn(async move { ended });
                    return Ok(self.as_task(finished, stop, None));
                }
                () = request_gone.cancelled() => {
                    stop.cancel();
                    return joined(running.await).map(|(response, _)| response);
                }
                () = tokio::time::sleep(TASK_AFTER) => {}
            }
            return Ok(self.as_task(running, stop, None));
        }
        // A retry that answers an input-required round stays a request.
        if request.input_responses.is_some() {
            return self.run_call(request, context, Mode::Request).await;
        }
        // The call starts as a request: most calls end at once, and a task
        // is state the server keeps for its TTL. It becomes a task once it
        // runs past TASK_AFTER, or when it asks the client (a question of a
        // task is answered through tasks/update).
        let client = Arc::new(ask::TaskClient::new(ask::declared(&context)));
        let mut running = {
            let (this, client, stop) = (self.clone(), client.clone(), stop.clone());
            let mode = Mode::Task {
                cancel: stop,
                client,
            };
            tokio::spawn(async move { this.run_call_ended(request, context, mode).await })
        };
        tokio::select! {
            biased;
            ended = &mut running => return joined(ended).map(|(response, _)| response),
            () = request_gone.cancelled() => {
                stop.cancel();
                return joined(running.await).map(|(response, _)| response);
            }
            () = client.wants_task() => {}
            () = tokio::time::sleep(TASK_AFTER) => {}
        }
        Ok(self.as_task(running, stop, Some(client)))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        let task = self.shared.tasks.get_task(&request.task_id)?;
        Ok(rmcp::model::GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let responses = serde_json::to_value(&request.input_responses)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        self.shared.tasks.update_task(&request.task_id, responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared.tasks.cancel_task(&request.task_id)
    }
}

impl McpServer {
    /// One `tools/call` to its result, in `mode`.
    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        mode: Mode,
    ) -> Result<CallToolResponse, McpError> {
        self.run_call_ended(request, context, mode)
            .await
            .map(|(response, _)| response)
    }

    /// A running call as a task: what it answers becomes the task's result;
    /// a crash fails it; `client` (the questions it asks) learns its task.
    fn as_task(
        &self,
        running: tokio::task::JoinHandle<Result<(CallToolResponse, Outcome), McpError>>,
        stop: CancellationToken,
        client: Option<Arc<ask::TaskClient>>,
    ) -> CallToolResponse {
        let options = rmcp::task_manager::TaskOptions::new()
            .with_ttl_ms(TASK_TTL.as_millis() as u64)
            .with_poll_interval_ms(TASK_POLL.as_millis() as u64);
        let task = self.shared.tasks.spawn(options, move |task| {
            let task = Arc::new(task);
            if let Some(client) = client {
                client.attach(task.clone());
            }
            Box::pin(async move {
                use rmcp::task_manager::TaskExit;
                let cancelled = stop.clone();
                let watch = tokio::spawn(async move {
                    task.cancelled().await;
                    cancelled.cancel();
                });
                let ended = joined(running.await);
                watch.abort();
                match ended {
                    Ok((CallToolResponse::Complete(_), _)) if stop.is_cancelled() => {
                        Err(TaskExit::Cancelled)
                    }
                    // The tool did not answer: a protocol error, not its result.
                    Ok((CallToolResponse::Complete(result), Outcome::Crashed)) => {
                        let text = serde_json::to_value(&result)
                            .ok()
                            .and_then(|r| r["content"][0]["text"].as_str().map(str::to_string))
                            .unwrap_or_else(|| "the tool crashed".into());
                        Err(TaskExit::Error(McpError::internal_error(text, None)))
                    }
                    Ok((CallToolResponse::Complete(result), _)) => Ok(result),
                    Ok(_) => Err(TaskExit::Error(McpError::internal_error(
                        "a task's call answered with an input-required result",
                        None,
                    ))),
                    Err(e) => Err(TaskExit::Error(e)),
                }
            })
        });
        CallToolResponse::Task(rmcp::model::CreateTaskResult::new(task))
    }

    /// One `tools/call` to its result and how it ended, in `mode`.
    async fn run_call_ended(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        mode: Mode,
    ) -> Result<(CallToolResponse, Outcome), McpError> {
        // Over HTTP, the call holds its request's `--max-requests` permit
        // for as long as it runs, in whatever task it runs: a client that
        // drops its connection (its stream recorded for a resume) or a call
        // that became a task still counts.
        #[cfg(feature = "http")]
        let _permit = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::http_server::PermitSlot>())
            .and_then(crate::http_server::PermitSlot::take);
        let (task_cancel, task_client) = match mode {
            Mode::Request => (None, None),
            Mode::Task { cancel, client } => (Some(cancel), Some(client)),
            Mode::ThenTask { cancel } => (Some(cancel), None),
        };
        let host = self.host();
        let name = request.name.to_string();
        // MCP makes an unknown tool a protocol error (-32602, every
        // revision), not a tool's error result.
        if !host.is_active(&name) {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall {
            id: format!("mcp-{}", context.id),
            name: name.clone(),
            arguments: arguments.clone(),
        };
        // Updates arrive on the tool's thread; one task sends them in order.
        // Without a progress token they are not wanted and not kept.
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| Progress::start(token, context.peer.clone()));
        let updates = progress.as_ref().map(|p| p.queue.clone());
        // A tool's log messages go to a client that asked for them.
        let logs = self
            .shared
            .log_levels
            .wanted(&context)
            .map(|wanted| ask::ToolLogs::start(context.peer.clone(), wanted));
        let log_sender = logs.as_ref().map(ask::ToolLogs::sender);
        let sink = Arc::new(move |event: Event| match event {
            Event::ToolExecutionUpdate { partial_result, .. } => {
                if let Some(updates) = &updates {
                    updates.push(text_of(&partial_result.content));
                }
            }
            Event::ToolExecutionLog {
                tool_name,
                level,
                logger,
                message,
                ..
            } => {
                if let (Some(sender), Ok(level)) =
                    (&log_sender, serde_json::from_value(json!(level)))
                {
                    let logger = logger.unwrap_or(tool_name);
                    let _ = sender.send((level, logger, message));
                }
            }
            _ => {}
        });
        let cancel = task_cancel.clone().unwrap_or_else(|| call_token(&context));
        // A question of a 2026-07-28 round stops the call (its own token),
        // not the request.
        let run = cancel.child_token();
        let round = if ask::stateless(&context) && task_client.is_none() {
            let state = request.request_state.as_deref();
            let responses = request.input_responses.as_ref();
            let declared = ask::declared(&context);
            let round = self
                .shared
                .states
                .round(&name, &arguments, state, responses, declared, run.clone())
                .map_err(|refused| McpError::invalid_params(refused, None))?;
            Some(round)
        } else {
            None
        };
        let asker = match &round {
            Some(round) if ask::can_elicit(&context) => {
                Some(crate::permissions::Asker::new(round.clone()))
            }
            Some(_) => None,
            None => self.shared.askers.of(&context),
        };
        // A tool's own requests to the client: answered by the retry of a
        // 2026-07-28 round, sent as they come to an older session.
        let client: Arc<dyn crate::ops::client::Client> = match (&round, task_client) {
            (Some(round), _) => round.clone(),
            (None, Some(task)) => task,
            (None, None) => Arc::new(ask::LiveClient::of(&context)),
        };
        // A client calls what it was offered: the active tools.
        let mut call = host
            .call(call)
            .turn(Arrival::of(&context))
            .active_only()
            .cancel(run)
            .events(sink)
            .client(client);
        if let Some(asker) = asker {
            call = call.asking(asker);
        }
        let (processes, new) = self.shared.processes.of(&context, host.session_processes());
        if let Some(key) = new {
            let exits = processes.exits();
            let shared = Arc::downgrade(&self.shared);
            tokio::spawn(tell_exits(shared, key, context.peer.clone(), exits));
        }
        call = call.processes(processes);
        let (result, outcome) = call.with_outcome().await;
        if let Some(logs) = logs {
            logs.finish().await;
        }
        if let Some((round, needed)) = round.and_then(|r| r.needed().map(|n| (r, n))) {
            if let Some(progress) = progress {
                progress.finish().await;
            }
            if let ask::Needed::Missing(method) = needed {
                return Err(missing_capability(json!({ method.name(): {} })));
            }
            let required = self.shared.states.input_required(
                &round,
                &needed,
                &name,
                &arguments,
                crate::permissions::DEFAULT_WAIT,
            );
            let required: rmcp::model::InputRequiredResult = serde_json::from_value(required)
                .map_err(|e| internal("asking for the person's answer", e))?;
            return Ok((required.into(), outcome));
        }
        if let Some(progress) = progress {
            progress.finish().await;
        }
        if cancel.is_cancelled() {
            let line = format!(
                "tools/call {name} (request {}) was cancelled; the tool answered: {}",
                context.id,
                result.text()
            );
            self.log_line(&line);
            #[allow(deprecated)]
            let notice = LoggingLevel::Notice;
            self.shared.log_levels.send(&context, notice, &line).await;
        }
        let mut reply = json!({
            "content": result.content,
            "isError": result.is_error,
            "resultType": "complete",
        });
        // Checked against the tool's output schema by the call.
        if let Some(structured) = result.structured_content {
            reply["structuredContent"] = structured;
        }
        let result: CallToolResult =
            serde_json::from_value(reply).map_err(|e| internal("converting the result", e))?;
        Ok((result.into(), outcome))
    }
}

/// How a `tools/call` runs.
enum Mode {
    /// As a request: cancelled with it.
    Request,
    /// Towards a task, its questions through the task (`tasks/update`).
    Task {
        cancel: CancellationToken,
        client: Arc<ask::TaskClient>,
    },
    /// Towards a task, its questions input-required rounds first (a tool
    /// that requires tasks).
    ThenTask { cancel: CancellationToken },
}

/// A call of a client that declared tasks and is still running after this
/// becomes a task (the conformance suite's fixtures: a job of about a
/// second is a task, a greeting is not).
pub const TASK_AFTER: Duration = Duration::from_millis(500);
/// How long a task's state is kept (`ttlMs`), and the polling interval
/// suggested to the client (`pollIntervalMs`).
pub const TASK_TTL: Duration = Duration::from_secs(3600);
pub const TASK_POLL: Duration = Duration::from_millis(500);

/// The longest a call with a progress token goes without a progress
/// notification: one without a message is sent after this much silence.
pub const HEARTBEAT: Duration = Duration::from_secs(12);

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
                    Some(text) => Some(text),
                    None => {
                        tokio::select! {
                            biased;
                            () = pending.ready.notified() => continue,
                            () = finished.cancelled() => match pending.pop() {
                                Some(text) => Some(text),
                                None => return,
                            },
                            // A call that says nothing for a while still
                            // runs: clients that time a call out unless
                            // progress comes (Pi's resets on progress) keep
                            // waiting.
                            () = tokio::time::sleep(HEARTBEAT) => None,
                        }
                    }
                };
                // MCP wants progress to grow with every notification.
                n += 1.0;
                let param = ProgressNotificationParam::new(token.clone(), n);
                let param = match text {
                    Some(text) => param.with_message(text),
                    None => param,
                };
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

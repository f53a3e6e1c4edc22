//! `toolhost mcp`: the active tools as a Model Context Protocol server, on the
//! official Rust SDK (`rmcp`).
//!
//! * `tools/list`: the active tools in MCP's shape ([`formats::mcp_tool`]:
//!   input schema, the label as title, behaviour hints for the built-ins).
//! * `tools/call`: a one-call batch through [`Host::call`], so the whole
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
//! client run concurrently. On stdio, once the handshake is done, a
//! `tools/call` is answered beside rmcp's loop by the same dispatch
//! ([`wire`]'s `Direct`): run by the reader until it ends or first waits,
//! concurrently when the client has sent more. Their file mutations keep
//! the order in which the requests were read (a `write` then an `edit` of one file, sent
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
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse as GetPrompt, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse as ReadResource,
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
mod call;
mod changes;
mod features;
mod offers;
#[cfg(feature = "http")]
mod over_http;
mod progress;
#[cfg(feature = "http")]
mod resources;
mod resume;
pub mod sessions;
mod tasks;
mod watching;
mod wire;

use call::Arrival;
use changes::{notify_session, tell_exits};
pub use progress::HEARTBEAT;
use progress::Progress;
#[cfg(feature = "http")]
pub use sessions::SessionBounds;
pub use tasks::{TASK_AFTER, TASK_POLL, TASK_TTL};

/// The newest MCP revision served (see the module docs).
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The newest revision with the `initialize` handshake, which `initialize`
/// answers with when a client asks for one the server does not know.
pub const HANDSHAKE_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// A request's context, as the handler's methods get it.
type Ctx = RequestContext<RoleServer>;
/// A listing's page, as a list request asks for it.
type Page = Option<PaginatedRequestParams>;
/// What a handler's method answers.
type Answer<T> = Result<T, McpError>;

/// Builds a fresh host (the same configuration as the first).
pub type HostFactory =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Host, Error>> + Send>> + Send + Sync>;

/// A host as the server serves it, with what only MCP shows of it: the
/// workspace's files as resources (through the built-in `read`'s backends
/// and protected set) and what the extensions' manifests offer beside their
/// tools. Made once per host; a host's problems with its offers are logged
/// then.
pub(crate) struct Served {
    host: Host,
    /// `None` when `[mcp] resources = false`.
    files: Option<resources::WorkspaceFiles>,
    offers: offers::Offers,
}

impl Served {
    fn of(host: Host, log: &Log) -> Arc<Served> {
        let resources = host.mcp_settings().resources != Some(false);
        let files = resources.then(|| {
            let (reads, protected) = host.workspace_reads();
            resources::WorkspaceFiles::new(reads.fs, reads.search, protected)
        });
        let (mut offers, problems) = offers::Offers::of(&host);
        for problem in problems {
            log(&format!("warning: {problem}"));
        }
        if !resources {
            offers.resources.clear();
        }
        Arc::new(Served {
            host,
            files,
            offers,
        })
    }

    fn files(&self) -> Option<&resources::WorkspaceFiles> {
        self.files.as_ref()
    }

    fn offers(&self) -> &offers::Offers {
        &self.offers
    }
}

impl std::ops::Deref for Served {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}

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
    /// The host served, with what only MCP shows of it; replaced whole
    /// when the tools are reloaded.
    host: RwLock<Arc<Served>>,
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
    subscriptions: watching::Subscriptions,
    /// How the resources of acknowledged listen streams were then.
    baselines: watching::Baselines,
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
        let served = Served::of(host, &log);
        McpServer {
            shared: Arc::new(Shared {
                host: RwLock::new(served),
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
        self.served().host.clone()
    }

    /// The host served, with its resources and offers.
    fn served(&self) -> Arc<Served> {
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
            host.workspace_shown().display(),
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
                    wire.answer_calls(running.peer().clone());
                    let served = running.waiting().await;
                    wire.end_calls().await;
                    return served
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

    /// The active tools as `tools/list` returns them, each with the task
    /// support its extension declares (`execution.taskSupport`).
    fn listing(&self) -> Value {
        let host = self.served();
        tools_as_mcp(&host, &host.active_tool_infos())
    }
}

/// `tools` in MCP's shape (a `tools/list` result), each with the task
/// support its extension declares (`execution.taskSupport`).
fn tools_as_mcp(host: &Served, tools: &[crate::registry::ToolInfo]) -> Value {
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

/// A refusal as MCP's error: invalid params, naming the URI (SEP-2164).
fn refused(refusal: &resources::Refused) -> McpError {
    McpError::invalid_params(refusal.message(), Some(json!({ "uri": refusal.uri })))
}

/// What a resource request gets under `[mcp] resources = false`.
fn resources_off(uri: &str) -> McpError {
    not_found(
        uri,
        "toolhost serves no resources here: [mcp] resources = false",
    )
}

fn not_found(uri: &str, why: &str) -> McpError {
    McpError::invalid_params(
        format!("Resource not found: {uri} ({why})"),
        Some(json!({ "uri": uri })),
    )
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
        let served = self.served();
        if served.files().is_none() && served.offers().resources.is_empty() {
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
        self.listen_for_changes(context).await
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
        _: Page,
        _: Ctx,
    ) -> Answer<ListResourceTemplatesResult> {
        from_json("listing the resource templates", self.list_templates())
    }

    async fn read_resource(&self, r: ReadResourceRequestParams, _: Ctx) -> Answer<ReadResource> {
        let contents = self.read_contents(&r.uri).await?;
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

    async fn list_prompts(&self, _: Page, _: Ctx) -> Answer<ListPromptsResult> {
        from_json("listing the prompts", self.list_prompts_all())
    }

    async fn get_prompt(&self, request: GetPromptRequestParams, context: Ctx) -> Answer<GetPrompt> {
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
        let host = self.served();
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
    /// support says ([`offers::TaskSupport`]):
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
        self.call_as_request_or_task(request, context).await
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

//! The host: [`Host`] serves one workspace's tools; [`HostBuilder`]
//! (in `builder`) reads the configuration, trust and discovery and builds the
//! session a host's batches and calls read.

mod builder;

pub use builder::{BuiltinSettings, ExtensionSettings, HostBuilder};

use crate::batch::{self, BatchOutcome, Front, Reach};
use crate::events::EventSink;
use crate::extensions::ExtensionReport;
use crate::message::{AssistantMessage, ToolCall, ToolResultMessage};
use crate::ops::process::{Confinement, ProcessPolicy};
use crate::permissions::Asker;
use crate::registry::{Diagnostic, ToolDefinition, ToolInfo};
use crate::session::Session;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a host holds: the session its batches read, and what it reports.
pub(crate) struct HostInner {
    pub session: Arc<Session>,
    pub diagnostics: Vec<Diagnostic>,
    pub extensions: Vec<ExtensionReport>,
    pub temp_dir: PathBuf,
    /// The shell tools' process policy, and how it confines on this machine
    /// (probed on first use).
    pub process: Arc<ProcessPolicy>,
    pub confinement: std::sync::OnceLock<Confinement>,
    /// What the built-in `read` reads the workspace through.
    pub reads: WorkspaceReads,
    /// `[mcp]` of the `toolhost.toml` files.
    pub mcp: crate::extensions::policy::McpSettings,
}

/// The backends the built-in `read` reads the workspace through: a front
/// end that shows the workspace's files (MCP's resources) reads them the
/// same way, under the same protected set.
#[derive(Clone)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) struct WorkspaceReads {
    pub fs: Arc<dyn crate::ops::fs::FsRead>,
    pub search: Arc<dyn crate::ops::search::Search>,
}

/// A workspace as its service serves it to a toolhost elsewhere
/// ([`HostBuilder::served_workspace`]).
pub struct ServedWorkspace {
    /// Its real path.
    pub root: PathBuf,
    /// Where its processes get their temp directories.
    pub temp_dir: PathBuf,
    pub(crate) fs_read: Arc<dyn crate::ops::fs::FsRead>,
    pub(crate) fs_write: Arc<dyn crate::ops::fs::FsWrite>,
    pub(crate) search: Arc<dyn crate::ops::search::Search>,
    /// The shell's policy here: its roots, jail and network rules.
    process: Arc<ProcessPolicy>,
    /// What keeps the repositories beneath the roots from being made to
    /// run code: read-only to each process, and settled when it ends.
    pub(crate) guard: Arc<crate::ops::protect::GitGuard>,
    /// How processes are confined here, as `toolhost doctor` says.
    pub confinement: Vec<crate::doctor::Layer>,
    /// `$HOME` here.
    pub home: Option<String>,
}

impl ServedWorkspace {
    /// The policy a process of `grant` runs under: this machine's, given
    /// only the programs, network, variables and timeout the grant names
    /// (the network only if this machine's shell has it too).
    pub(crate) fn process_for(&self, grant: &crate::ops::process::ProcessGrant) -> ProcessPolicy {
        let mut policy = (*self.process)
            .clone()
            .only_programs(grant.programs.clone());
        if !grant.network {
            policy = policy.network(false);
        }
        for name in &grant.command_env {
            policy = policy.command_env(name.clone());
        }
        let timeout = grant
            .default_timeout_ms
            .map(std::time::Duration::from_millis);
        policy.default_timeout(timeout)
    }
}

/// The tools of one workspace. Cheap to clone; safe to share across tasks.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("workspace", &self.inner.session.settings.workspace)
            .field("active", &self.active_tools())
            .finish()
    }
}

impl Host {
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The workspace's real path: the cwd tools see.
    pub fn workspace(&self) -> &Path {
        &self.inner.session.settings.workspace
    }

    /// The workspace as a client is told of it: [`Self::workspace`], or,
    /// replaying, the recorded one (a replay's own is an empty directory
    /// standing in for it).
    pub fn workspace_shown(&self) -> PathBuf {
        match self.inner.session.deck.as_deref() {
            Some(crate::tape::Deck::Replay(replaying)) => replaying.workspace().into(),
            _ => self.workspace().to_path_buf(),
        }
    }

    /// What the built-in `read` reads the workspace through, and what it
    /// may never read.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn workspace_reads(&self) -> (WorkspaceReads, Arc<crate::ops::fs::ProtectedPaths>) {
        let protected = self.inner.session.protected.clone();
        (self.inner.reads.clone(), protected)
    }

    /// `[mcp]` of the `toolhost.toml` files.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn mcp_settings(&self) -> &crate::extensions::policy::McpSettings {
        &self.inner.mcp
    }

    /// The host's temp directory (full-output files of the shell tools).
    pub fn temp_dir(&self) -> &Path {
        &self.inner.temp_dir
    }

    /// How the shell tools' commands are confined on this machine (Landlock,
    /// or why not).
    pub fn command_confinement(&self) -> &Confinement {
        self.inner
            .confinement
            .get_or_init(|| self.inner.process.confinement())
    }

    /// The release of Pi whose texts and result shapes the tools follow.
    pub fn pi_profile(&self) -> crate::PiProfile {
        self.inner.session.settings.pi
    }

    /// Every loaded tool, in registry order, with its source and state.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.inner.session.registry().infos()
    }

    /// The definitions of the active tools, in active-set order (what a
    /// provider request should carry).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let registry = self.inner.session.registry();
        registry
            .active()
            .iter()
            .filter_map(|name| registry.get(name).map(|t| t.definition.clone()))
            .collect()
    }

    /// The active tools with their source, in active-set order.
    pub fn active_tool_infos(&self) -> Vec<ToolInfo> {
        let registry = self.inner.session.registry();
        let infos = registry.infos();
        registry
            .active()
            .iter()
            .filter_map(|name| infos.iter().find(|t| &t.definition.name == name).cloned())
            .collect()
    }

    /// The active tool `name` with its source; `None` when no active tool
    /// has that name.
    #[cfg(feature = "mcp")]
    pub(crate) fn active_tool_info(&self, name: &str) -> Option<ToolInfo> {
        let registry = self.inner.session.registry();
        let tool = registry.get_active(name)?;
        Some(ToolInfo {
            definition: tool.definition.clone(),
            source: tool.source.clone(),
            active: true,
            exposure: registry.exposure(name),
        })
    }

    /// Whether `name` is an active tool.
    #[cfg(feature = "mcp")]
    pub(crate) fn is_active(&self, name: &str) -> bool {
        self.inner
            .session
            .registry()
            .active()
            .iter()
            .any(|a| a == name)
    }

    pub fn active_tools(&self) -> Vec<String> {
        self.inner.session.tools.current().to_vec()
    }

    /// Replace the active set; unknown names are dropped (spec §3.1). Returns
    /// the new active set. Takes effect for the next batch.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) -> Vec<String> {
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
        self.inner.session.tools.set(&names)
    }

    /// A receiver that is marked changed whenever the active tools change
    /// (their set, order or definitions). Servers use it to tell their
    /// clients to list the tools again (MCP's `notifications/tools/list_changed`).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.session.tools.changes()
    }

    /// Problems found while loading: broken extensions, name collisions.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.inner.diagnostics
    }

    /// Every discovered extension: where it came from, what it asked for,
    /// what it was granted, and what it provides or why it was refused.
    pub fn extensions(&self) -> &[ExtensionReport] {
        &self.inner.extensions
    }

    /// The processes of the host's own session ([`crate::SessionProcesses`]):
    /// those of every call whose front end lends none of its own.
    pub fn session_processes(&self) -> &Arc<crate::SessionProcesses> {
        &self.inner.session.processes
    }

    /// What recording or replaying has to say (`HostBuilder::record`,
    /// `HostBuilder::replay`): why the recording stopped before the calls
    /// did (once what was recorded so far is written); or, replaying, each
    /// call's divergence from the recording since this was last asked
    /// ("call c3: the component asked to read src/b.rs; the recording has
    /// src/a.rs next"). Empty when all is well.
    pub fn tape_report(&self) -> Vec<String> {
        self.inner
            .session
            .deck
            .as_ref()
            .map(|deck| deck.report())
            .unwrap_or_default()
    }

    /// The calls of one assistant message, as a batch (Pi's preflight,
    /// parallel or sequential execution, one result message per call), on
    /// the model's behalf: only active tools. Set what the front end lends
    /// them on the [`Request`], then await it for the [`BatchOutcome`].
    pub fn batch(&self, message: &AssistantMessage) -> Request<'_, Batch> {
        Request::new(self, Arc::new(message.clone()), Reach::Active)
    }

    /// Places in the order of file mutations (spec §1.4) for `calls` calls
    /// arriving now, for a front end that reads requests in order but runs
    /// them concurrently: the calls they are given to queue for their files
    /// in this order. A turn dropped unused holds up nothing.
    #[cfg(any(feature = "mcp", feature = "serve"))]
    pub(crate) fn turns(&self, calls: usize) -> Vec<crate::ops::fs::Turn> {
        self.inner.session.mutations.take(calls)
    }

    /// One call through the whole pipeline, as the only call of a message:
    /// `host.call(tool_call).await`, or with what the front end lends it set
    /// on the [`Request`] first. It may name any loaded tool (the embedder
    /// chose it), unless [`active_only`](Request::active_only) makes it one
    /// the model could call.
    pub fn call(&self, call: ToolCall) -> Request<'_, OneCall> {
        let message = AssistantMessage::from_calls(vec![call]);
        Request::new(self, Arc::new(message), Reach::AnyLoaded)
    }
}

/// A [`Request`] of one call ([`Host::call`]): awaited, its result message.
pub struct OneCall;

/// A [`Request`] of an assistant message's calls ([`Host::batch`]):
/// awaited, the batch's outcome.
pub struct Batch;

/// [`Request`] of one call.
pub type CallRequest<'a> = Request<'a, OneCall>;

/// What a front end asks of the host: one call or a batch, with what the
/// front end lends them (its cancellation, where events go, the person to
/// ask, the person's client, its session's processes). Every front (the
/// command line, JSON-RPC, MCP, an embedder) enters the pipeline here;
/// awaiting the request runs it.
#[must_use = "a request does nothing until it is awaited"]
pub struct Request<'a, W> {
    host: &'a Host,
    message: Arc<AssistantMessage>,
    work: std::marker::PhantomData<W>,
    front: Front,
    reach: Reach,
    turns: Option<Vec<crate::ops::fs::Turn>>,
}

impl<'a, W> Request<'a, W> {
    fn new(host: &'a Host, message: Arc<AssistantMessage>, reach: Reach) -> Self {
        Request {
            host,
            message,
            work: std::marker::PhantomData,
            front: Front {
                cancel: CancellationToken::new(),
                sink: Arc::new(crate::events::NoEvents),
                asker: None,
                client: None,
                processes: None,
            },
            reach,
            turns: None,
        }
    }

    /// Cancelling `token` aborts the calls (each still gets its result).
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.front.cancel = token;
        self
    }

    /// Stream the events (starts, updates, ends, messages) to `sink`.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.front.sink = sink;
        self
    }

    /// Only a tool in the active set may be called (`Tool X not found`
    /// otherwise), as for a model (a batch's calls always are).
    pub fn active_only(mut self) -> Self {
        self.reach = Reach::Active;
        self
    }

    /// Ask `asker`'s person (a front end's session) instead of the host's
    /// ([`HostBuilder::ask`]) when a call needs what it was not granted.
    pub fn asking(mut self, asker: Arc<Asker>) -> Self {
        self.front.asker = Some(asker);
        self
    }

    /// Let the tools ask `client`, the person's client (a form, a completion
    /// of its model, its roots: `toolhost:tool/client`), within what their
    /// grants name.
    pub fn client(mut self, client: Arc<dyn crate::ops::client::Client>) -> Self {
        self.front.client = Some(client);
        self
    }

    /// The session processes are `processes` (a front end's session's),
    /// not the host's own.
    pub fn processes(mut self, processes: Arc<crate::SessionProcesses>) -> Self {
        self.front.processes = Some(processes);
        self
    }

    /// The calls arrived when `turns` were taken ([`Host::turns`], one per
    /// call): their file mutations queue behind those of calls that arrived
    /// earlier, whenever these run.
    #[cfg(any(feature = "mcp", feature = "serve"))]
    pub(crate) fn turns(mut self, turns: Vec<crate::ops::fs::Turn>) -> Self {
        self.turns = Some(turns);
        self
    }

    /// Run the message's calls with what was set.
    async fn run(self) -> BatchOutcome {
        let session = self.host.inner.session.clone();
        if let Some(deck) = &session.deck {
            let any_tool = matches!(self.reach, Reach::AnyLoaded);
            deck.message(&self.message.raw, any_tool);
        }
        batch::run(session, self.message, self.front, self.turns, self.reach).await
    }
}

impl Request<'_, OneCall> {
    /// Run the call: its result message, and how it ended (the audit log's
    /// outcome, which tells a tool that crashed from one that reported an
    /// error).
    pub async fn with_outcome(self) -> (ToolResultMessage, crate::audit::Outcome) {
        let id = self.message.tool_calls[0].id.clone();
        let outcome = self.run().await;
        let ended = outcome
            .outcomes
            .first()
            .copied()
            .unwrap_or(crate::audit::Outcome::Error);
        let message = outcome
            .results
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("a one-call batch answers its call {id}"));
        (message, ended)
    }
}

impl<'a> std::future::IntoFuture for Request<'a, OneCall> {
    type Output = ToolResultMessage;
    type IntoFuture = futures::future::BoxFuture<'a, ToolResultMessage>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.with_outcome().await.0 })
    }
}

impl<'a> std::future::IntoFuture for Request<'a, Batch> {
    type Output = BatchOutcome;
    type IntoFuture = futures::future::BoxFuture<'a, BatchOutcome>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

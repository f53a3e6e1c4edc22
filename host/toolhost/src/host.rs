//! [`Host`]: the tools of one workspace, and the entry point for batches.

use crate::batch::{self, BatchOutcome};
use crate::builtin::{self, DEFAULT_ACTIVE_TOOLS};
use crate::call::BatchContext;
use crate::component::Limits;
use crate::engine::Runtime;
use crate::error::Error;
use crate::events::EventSink;
use crate::extensions::discovery;
use crate::extensions::policy::GrantSpec;
use crate::extensions::policy::{Policy, ShellPath};
use crate::extensions::trust::TrustStore;
use crate::extensions::{self, ExtensionReport, LoadContext};
use crate::hooks::{ComponentHook, ToolHooks};
use crate::loader::Loaded;
use crate::loader::{self, ComponentSpec};
use crate::message::{AssistantMessage, ToolCall, ToolResultMessage};
use crate::ops::fs::ProtectedPaths;
use crate::ops::fs::{FsRead, FsWrite, LocalFs};
use crate::ops::process::Confinement;
use crate::ops::process::{JailMode, ProcessLimits};
use crate::ops::search::{FsSearch, LocalSearch, Search};
use crate::ops::tools::ToolSet;
use crate::registry::{Diagnostic, Registry, ToolDefinition, ToolInfo, ToolSource};
use crate::session::{CallSettings, Session};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Configures and loads a [`Host`].
///
/// Defaults: the workspace is the current directory; built-in tools may read
/// the workspace and nothing else; extensions get no capabilities; the active
/// tools are Pi's defaults (`read`, `bash`, `edit`, `write`, those that exist)
/// plus every extension tool; a cancelled call gets one second to stop by
/// itself before it is stopped. The shell tools (`bash`, `powershell`) run
/// commands in the workspace with a 300 s default timeout; their commands may
/// write in the workspace and the host's temp directory
/// (`<system temp>/toolhost-<uid>`, which also holds full-output files), and
/// run unconfined where Landlock is unavailable.
#[must_use]
pub struct HostBuilder {
    workspace: Option<PathBuf>,
    extensions: Vec<PathBuf>,
    active: Option<Vec<String>>,
    all_active: bool,
    hooks: Vec<Arc<dyn ToolHooks>>,
    runtime: Option<Arc<Runtime>>,
    builtin_limits: Limits,
    extension_limits: Limits,
    session_id: Option<String>,
    cancel_grace: Duration,
    sequential: bool,
    fs: Option<(Arc<dyn FsRead>, Arc<dyn FsWrite>)>,
    user_config: Option<Option<PathBuf>>,
    temp_dir: Option<PathBuf>,
    command_timeout: Option<Duration>,
    write_roots: Vec<PathBuf>,
    require_landlock: bool,
    jail: JailMode,
    command_network: bool,
    command_limits: Option<ProcessLimits>,
    grants: Vec<(String, GrantSpec)>,
}

impl Default for HostBuilder {
    fn default() -> Self {
        HostBuilder {
            workspace: None,
            extensions: Vec::new(),
            active: None,
            all_active: false,
            hooks: Vec::new(),
            runtime: None,
            // Built-ins decode large images and hold large files: they get
            // the pool's whole memory size.
            builtin_limits: Limits {
                memory_bytes: 1 << 30,
                ..Limits::default()
            },
            extension_limits: Limits::default(),
            session_id: None,
            cancel_grace: Duration::from_secs(1),
            sequential: false,
            fs: None,
            user_config: None,
            temp_dir: None,
            command_timeout: Some(builtin::DEFAULT_COMMAND_TIMEOUT),
            write_roots: Vec::new(),
            require_landlock: false,
            jail: JailMode::Auto,
            command_network: true,
            command_limits: None,
            grants: Vec::new(),
        }
    }
}

impl HostBuilder {
    /// The directory the tools work in (and, by default, may read).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Load extensions from this `.wasm` file or directory too, after the
    /// discovered ones; their grants come from the policy files.
    pub fn extension(mut self, path: impl Into<PathBuf>) -> Self {
        self.extensions.push(path.into());
        self
    }

    /// The tools the model may call; unknown names are ignored.
    pub fn active_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.active = Some(names.into_iter().map(Into::into).collect());
        self.all_active = false;
        self
    }

    /// Make every loaded tool active.
    pub fn all_tools_active(mut self) -> Self {
        self.all_active = true;
        self.active = None;
        self
    }

    /// Grant the extension `name` capabilities with the user's authority, as
    /// the user's `toolhost.toml` does (added to what it grants): it applies
    /// to the user's extensions directory and to [`Self::extension`] files,
    /// never to a workspace's components. A hook component needs
    /// `hooks: true` to run.
    pub fn grant(mut self, name: impl Into<String>, grant: GrantSpec) -> Self {
        self.grants.push((name.into(), grant));
        self
    }

    /// Add before/after hooks; they run in the order added.
    pub fn hooks(mut self, hooks: Arc<dyn ToolHooks>) -> Self {
        self.hooks.push(hooks);
        self
    }

    /// Use this runtime instead of the process-wide one.
    pub fn runtime(mut self, runtime: Arc<Runtime>) -> Self {
        self.runtime = Some(runtime);
        self
    }

    pub fn builtin_limits(mut self, limits: Limits) -> Self {
        self.builtin_limits = limits;
        self
    }

    pub fn extension_limits(mut self, limits: Limits) -> Self {
        self.extension_limits = limits;
        self
    }

    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// How long a cancelled call may run on before it is stopped.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Run every batch sequentially (Pi's `toolExecution: "sequential"`).
    pub fn sequential(mut self, sequential: bool) -> Self {
        self.sequential = sequential;
        self
    }

    /// The user's configuration directory (its `toolhost.toml`, `trust.toml`
    /// and `extensions/`); `None` reads no user configuration. Default:
    /// `$XDG_CONFIG_HOME/toolhost`, else `~/.config/toolhost`.
    pub fn user_config_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.user_config = Some(dir);
        self
    }

    /// Serve the built-ins' file access from this backend instead of the disk
    /// (for example [`crate::ops::fs::MemoryFs`]).
    pub fn fs_backend<B: FsRead + FsWrite + 'static>(mut self, backend: Arc<B>) -> Self {
        self.fs = Some((backend.clone(), backend));
        self
    }

    /// The host's temp directory: full-output files of the shell tools, and
    /// the `TMPDIR` their commands may write in. Created if missing.
    pub fn temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// The timeout of shell commands that give none (`None`: no default
    /// timeout, as in Pi).
    pub fn command_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Another directory shell commands may write in.
    pub fn command_write_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.write_roots.push(dir.into());
        self
    }

    /// Refuse to run shell commands where Landlock cannot confine them.
    pub fn require_landlock(mut self, required: bool) -> Self {
        self.require_landlock = required;
        self
    }

    /// Refuse to run any program (shell commands, extensions' programs)
    /// where the namespace jail cannot run, instead of running it under
    /// Landlock and seccomp alone.
    pub fn require_jail(mut self, required: bool) -> Self {
        self.jail = if required {
            JailMode::Required
        } else {
            JailMode::Auto
        };
        self
    }

    /// What one shell command's processes may take together (default:
    /// `[shell]` of `toolhost.toml`, else 1,024 processes and 4 GiB).
    pub fn command_limits(mut self, limits: ProcessLimits) -> Self {
        self.command_limits = Some(limits);
        self
    }

    /// Whether programs run in the namespace jail (default
    /// [`JailMode::Auto`]: where the machine can run it).
    pub fn jail(mut self, mode: JailMode) -> Self {
        self.jail = mode;
        self
    }

    /// Whether shell commands may use the network (default: yes, as in Pi).
    /// `false` refuses them IPv4 and IPv6 sockets of every kind (TCP, UDP,
    /// raw; see [`ProcessPolicy::network`](crate::ops::process::ProcessPolicy::network)).
    pub fn command_network(mut self, allowed: bool) -> Self {
        self.command_network = allowed;
        self
    }

    /// The shell tools' jail: the protected paths read-only, the secret
    /// stores of the host's `$HOME`, the compile cache's key and `[shell]
    /// hide` hidden.
    fn shell_jail(
        &self,
        policy: &Policy,
        protected: &ProtectedPaths,
        user_config: Option<&Path>,
        runtime: &Runtime,
    ) -> builtin::ShellJail {
        // The user configuration must exist to be mounted read-only: were it
        // missing inside a write root (a workspace at $HOME), a command could
        // create it, grants and all.
        if let Some(dir) = user_config {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let mut hidden: Vec<PathBuf> = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| crate::ops::process::jail::secret_stores(Path::new(&home)))
            .unwrap_or_default();
        if let Some(cache) = &runtime.options().cache_dir {
            hidden.push(cache.join(crate::engine::CACHE_KEY_FILE));
        }
        hidden.extend(
            policy
                .shell
                .iter()
                .filter(|(kind, _)| *kind == ShellPath::Hide)
                .map(|(_, p)| p.clone()),
        );
        builtin::ShellJail {
            protected: protected.clone(),
            hidden,
            mode: self.jail,
            require_landlock: self.require_landlock,
            network: self.command_network,
            limits: self.command_limits.unwrap_or_else(|| {
                let default = ProcessLimits::default();
                ProcessLimits {
                    max_processes: policy.shell_max_processes.unwrap_or(default.max_processes),
                    memory_bytes: policy
                        .shell_memory_mb
                        .map_or(default.memory_bytes, |mb| mb << 20),
                }
            }),
        }
    }

    /// Load the built-in tools and the extensions.
    ///
    /// A broken extension does not fail the build: it is reported in
    /// [`Host::diagnostics`] and the others still load.
    pub async fn build(self) -> Result<Host, Error> {
        let workspace_arg = self.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        let workspace_error = |reason: String| Error::Workspace {
            path: workspace_arg.display().to_string(),
            reason,
        };
        let workspace = workspace_arg
            .canonicalize()
            .map_err(|e| workspace_error(e.to_string()))?;
        if !workspace.is_dir() {
            return Err(workspace_error("not a directory".into()));
        }
        let runtime = match self.runtime.clone() {
            Some(rt) => rt,
            None => Runtime::shared()?,
        };
        let user_config = self
            .user_config
            .clone()
            .unwrap_or_else(crate::extensions::policy::default_user_config_dir);
        let protected = extensions::protected_paths(
            &workspace,
            user_config.as_deref(),
            runtime.options().cache_dir.as_deref(),
        );
        // Search runs natively on the local disk; over another backend it
        // walks through that backend's `FsRead`.
        let (fs_read, fs_write, search): (Arc<dyn FsRead>, Arc<dyn FsWrite>, Arc<dyn Search>) =
            match self.fs.clone() {
                Some((read, write)) => {
                    let search = Arc::new(FsSearch::new(read.clone()));
                    (read, write, search)
                }
                None => {
                    let local = Arc::new(
                        LocalFs::new(std::slice::from_ref(&workspace))
                            .map_err(|e| workspace_error(format!("cannot open it: {e}")))?
                            .protect(protected.clone()),
                    );
                    let search = Arc::new(LocalSearch::new(local.clone()));
                    (local.clone(), local, search)
                }
            };

        let temp_dir = match &self.temp_dir {
            Some(dir) => std::fs::create_dir_all(dir).and_then(|()| dir.canonicalize()),
            None => private_temp_dir(),
        }
        .map_err(|e| Error::Runtime(format!("cannot use the temp directory: {e}")))?;
        remove_stale_outputs(&temp_dir);
        let output_dir: Arc<dyn FsWrite> =
            Arc::new(LocalFs::new(std::slice::from_ref(&temp_dir)).map_err(|e| {
                Error::Runtime(format!(
                    "cannot open the temp directory {}: {e}",
                    temp_dir.display()
                ))
            })?);
        let trust = match &user_config {
            Some(dir) => TrustStore::load(dir)?,
            None => TrustStore::empty(),
        };
        let mut policy = Policy::load(&workspace, user_config.as_deref(), &trust)?;
        for (name, grant) in &self.grants {
            policy.grant(name, grant);
        }
        let mut diagnostics = policy.diagnostics.clone();
        let jail = self.shell_jail(&policy, &protected, user_config.as_deref(), &runtime);
        let mut write_roots = self.write_roots.clone();
        write_roots.extend(
            policy
                .shell
                .iter()
                .filter(|(kind, _)| *kind == ShellPath::ReadWrite)
                .map(|(_, p)| p.clone()),
        );
        let shell = builtin::ShellGrants {
            process: Arc::new(builtin::shell_policy(
                &workspace,
                &temp_dir,
                &write_roots,
                self.session_id.clone(),
                self.command_timeout,
                jail,
            )),
            output_dir,
        };
        let confinement = shell.process.confinement();

        let registry = Arc::new(RwLock::new(Registry::default()));
        let tool_set = ToolSet::new(registry.clone());
        for component in builtin::BUILTIN_COMPONENTS {
            let tools = loader::load(
                &runtime,
                ComponentSpec {
                    bytes: component.bytes,
                    hash: component.hash.to_string(),
                    origin: format!("built-in {}", component.name),
                    source: ToolSource::Builtin,
                    caps: builtin::capabilities(
                        component.name,
                        &fs_read,
                        &fs_write,
                        &shell,
                        &search,
                    ),
                    limits: builtin::limits(
                        component.name,
                        self.builtin_limits,
                        self.command_timeout,
                    ),
                    grant_name: None,
                    hooks: false,
                    replace_builtin: false,
                },
            )
            .await?;
            add_all(
                &mut registry.write().expect("registry lock"),
                tools,
                None,
                &mut diagnostics,
            );
        }

        let mut dirs = vec![(
            workspace.join(".toolhost/extensions"),
            discovery::Origin::Workspace,
        )];
        if let Some(dir) = &user_config {
            dirs.push((dir.join("extensions"), discovery::Origin::User));
        }
        let mut paths: Vec<(PathBuf, discovery::Origin)> = self
            .extensions
            .iter()
            .map(|p| (p.clone(), discovery::Origin::Configured))
            .collect();
        paths.extend(policy.extension_paths.iter().cloned());
        let (found, found_diagnostics) = discovery::discover(&dirs, &paths);
        diagnostics.extend(found_diagnostics);
        let mut reports = Vec::new();
        let mut hook_components = Vec::new();
        let load_cx = LoadContext {
            runtime: &runtime,
            policy: &policy,
            trust: &trust,
            workspace: &workspace,
            tool_set: &tool_set,
            defaults: self.extension_limits,
            protected: &protected,
            jail: self.jail,
        };
        for extension in &found {
            let (report, loaded, warnings) = extensions::load(&load_cx, extension).await;
            let path = extension.component.display().to_string();
            diagnostics.extend(warnings.into_iter().map(|message| Diagnostic {
                path: path.clone(),
                message,
            }));
            if let Some(reason) = &report.refused {
                diagnostics.push(Diagnostic {
                    path: path.clone(),
                    message: reason.clone(),
                });
            }
            if let Some(loaded) = loaded {
                if let Some(sandbox) = &loaded.hooks {
                    hook_components.push(ComponentHook::new(&extension.name, sandbox.clone()));
                }
                add_all(
                    &mut registry.write().expect("registry lock"),
                    loaded,
                    Some(&extension.name),
                    &mut diagnostics,
                );
            }
            reports.push(report);
        }

        diagnostics.extend(runtime.take_reports());

        let mut reg = registry.write().expect("registry lock");
        let active: Vec<String> = if self.all_active {
            reg.names()
        } else if let Some(names) = self.active.or_else(|| policy.active_tools.clone()) {
            names
        } else {
            DEFAULT_ACTIVE_TOOLS
                .iter()
                .map(|s| s.to_string())
                .chain(reg.extension_names())
                .collect()
        };
        reg.set_active(&active);
        drop(reg);

        let session = Session {
            registry,
            hooks: self.hooks,
            hook_components,
            settings: CallSettings {
                workspace,
                home: std::env::var("HOME").ok().filter(|h| !h.is_empty()),
                session_id: self.session_id,
                cancel_grace: self.cancel_grace,
                sequential: self.sequential,
            },
        };
        Ok(Host {
            inner: Arc::new(HostInner {
                session: Arc::new(session),
                diagnostics,
                extensions: reports,
                temp_dir,
                confinement,
                changes: tokio::sync::watch::Sender::new(0),
            }),
        })
    }
}

/// Register a component's tools. An extension's (`extension` names it) may
/// take a built-in's name only when its grant lets it replace built-ins.
fn add_all(
    registry: &mut Registry,
    loaded: Loaded,
    extension: Option<&str>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for tool in loaded.tools {
        let name = &tool.definition.name;
        if let Some(ext) = extension
            && !loaded.replace_builtin
            && registry.is_builtin(name)
        {
            diagnostics.push(Diagnostic {
                path: tool.source.to_string(),
                message: format!(
                    "tool {name} is refused: it has the name of a built-in tool; let it replace \
                     the built-in in toolhost.toml: [extensions.{ext}] replace-builtin = true"
                ),
            });
            continue;
        }
        diagnostics.extend(registry.add(tool));
    }
}

/// How long a full-output file is kept: one day after it was last written.
const OUTPUT_FILE_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// Remove the shell tools' full-output files (`toolhost-*.log`) last written
/// more than a day ago from the host's temp directory: nothing else ever
/// removes them, and a long build log is megabytes.
fn remove_stale_outputs(temp_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(temp_dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("toolhost-") && name.ends_with(".log")) {
            continue;
        }
        let stale = entry
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > OUTPUT_FILE_LIFETIME);
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `<system temp>/toolhost-<uid>`, created private (0700). An existing one
/// must be a directory owned by this user and closed to others, so another
/// user cannot plant links or read full outputs there.
fn private_temp_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = rustix::process::getuid().as_raw();
    let dir = std::env::temp_dir().join(format!("toolhost-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} must be a directory owned by uid {uid} with mode 0700",
            dir.display()
        )));
    }
    dir.canonicalize()
}

/// What a host holds: the session its batches read, and what it reports.
pub(crate) struct HostInner {
    pub session: Arc<Session>,
    pub diagnostics: Vec<Diagnostic>,
    pub extensions: Vec<ExtensionReport>,
    pub temp_dir: PathBuf,
    pub confinement: Confinement,
    /// Bumped whenever the tools a model may call change (see [`Host::changes`]).
    pub changes: tokio::sync::watch::Sender<u64>,
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

    /// The host's temp directory (full-output files of the shell tools).
    pub fn temp_dir(&self) -> &Path {
        &self.inner.temp_dir
    }

    /// How the shell tools' commands are confined on this machine (Landlock,
    /// or why not).
    pub fn command_confinement(&self) -> &Confinement {
        &self.inner.confinement
    }

    /// Every loaded tool, in registry order, with its source and state.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.inner
            .session
            .registry
            .read()
            .expect("registry lock")
            .infos()
    }

    /// The definitions of the active tools, in active-set order (what a
    /// provider request should carry).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let registry = self.inner.session.registry.read().expect("registry lock");
        registry
            .active()
            .iter()
            .filter_map(|name| registry.get(name).map(|t| t.definition.clone()))
            .collect()
    }

    /// The active tools with their source, in active-set order.
    pub fn active_tool_infos(&self) -> Vec<ToolInfo> {
        let registry = self.inner.session.registry.read().expect("registry lock");
        let infos = registry.infos();
        registry
            .active()
            .iter()
            .filter_map(|name| infos.iter().find(|t| &t.definition.name == name).cloned())
            .collect()
    }

    pub fn active_tools(&self) -> Vec<String> {
        self.inner
            .session
            .registry
            .read()
            .expect("registry lock")
            .active()
            .to_vec()
    }

    /// Replace the active set; unknown names are dropped (spec §3.1). Returns
    /// the new active set. Takes effect for the next batch.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) -> Vec<String> {
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
        let mut registry = self.inner.session.registry.write().expect("registry lock");
        let before = registry.active().to_vec();
        registry.set_active(&names);
        let after = registry.active().to_vec();
        if after != before {
            self.inner
                .changes
                .send_modify(|generation| *generation += 1);
        }
        after
    }

    /// A receiver that is marked changed whenever the active tools change
    /// (their set, order or definitions). Servers use it to tell their
    /// clients to list the tools again (MCP's `notifications/tools/list_changed`).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
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

    /// Execute the tool calls of one assistant message as a batch, streaming
    /// its events to `sink`. Cancelling `cancel` aborts the batch: every call
    /// still gets a result message.
    pub async fn run_batch(
        &self,
        message: &AssistantMessage,
        cancel: CancellationToken,
        sink: Arc<dyn EventSink>,
    ) -> BatchOutcome {
        let ctx = Arc::new(BatchContext {
            session: self.inner.session.clone(),
            message: Arc::new(message.clone()),
            cancel,
            sink,
            any_tool: false,
        });
        batch::run(ctx).await
    }

    /// One call through the whole pipeline, as the only call of a message:
    /// `host.call(tool_call).await`, or with
    /// [`cancel`](CallRequest::cancel), [`events`](CallRequest::events) and
    /// [`active_only`](CallRequest::active_only) set first. It may name any
    /// loaded tool (the embedder chose it), unless `active_only` makes it
    /// one the model could call.
    pub fn call(&self, call: ToolCall) -> CallRequest<'_> {
        CallRequest {
            host: self,
            call,
            cancel: CancellationToken::new(),
            sink: Arc::new(crate::events::NoEvents),
            active_only: false,
        }
    }
}

/// One call to make ([`Host::call`]); awaiting it runs the call and gives its
/// result message.
#[must_use = "a call does nothing until it is awaited"]
pub struct CallRequest<'a> {
    host: &'a Host,
    call: ToolCall,
    cancel: CancellationToken,
    sink: Arc<dyn EventSink>,
    active_only: bool,
}

impl CallRequest<'_> {
    /// Cancelling `token` aborts the call (it still gets its result).
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Stream the call's events (start, updates, end, message) to `sink`.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Only a tool in the active set may be called (`Tool X not found`
    /// otherwise), as for a model.
    pub fn active_only(mut self) -> Self {
        self.active_only = true;
        self
    }
}

impl<'a> std::future::IntoFuture for CallRequest<'a> {
    type Output = ToolResultMessage;
    type IntoFuture = futures::future::BoxFuture<'a, ToolResultMessage>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let id = self.call.id.clone();
            let ctx = Arc::new(BatchContext {
                session: self.host.inner.session.clone(),
                message: Arc::new(AssistantMessage::from_calls(vec![self.call])),
                cancel: self.cancel,
                sink: self.sink,
                any_tool: !self.active_only,
            });
            batch::run(ctx)
                .await
                .results
                .into_iter()
                .next()
                .unwrap_or_else(|| panic!("a one-call batch answers its call {id}"))
        })
    }
}

//! [`HostBuilder`] and its parts: the shell tools' commands, the built-in
//! components and the extensions, each configured by a settings builder.

use super::{Host, HostInner};
use crate::audit::{self, AuditLog};
use crate::builtin::{self, DEFAULT_ACTIVE_TOOLS};
use crate::capability::process::ShellNet;
use crate::capability::{self, BuiltinBackends, GrantSpec};
use crate::component::Limits;
use crate::engine::Runtime;
use crate::error::Error;
use crate::extensions::ExtensionReport;
use crate::extensions::discovery;
use crate::extensions::grants::{self, Unresolved, WritePlaces};
use crate::extensions::policy::{HomeView, Policy, ShellNetwork, ShellPath};
use crate::extensions::trust::TrustStore;
use crate::extensions::{self, LoadContext};
use crate::hooks::{ComponentHook, Hook, ToolHooks};
use crate::loader::Loaded;
use crate::loader::{self, Code, ComponentSpec};
use crate::ops::fs::ProtectedPaths;
use crate::ops::fs::{FsRead, FsWrite, LocalFs};
use crate::ops::process::{JailMode, ProcessLimits, ProcessPolicy};
use crate::ops::protect::GitGuard;
use crate::ops::remote::{Connection, RemoteFs, RemoteProcesses, RemoteSearch};
use crate::ops::search::{FsSearch, LocalSearch, Search};
use crate::ops::tools::ToolSet;
use crate::permissions::{Ask, Asker};
use crate::profile::PiProfile;
use crate::registry::{Diagnostic, Exposure, Exposures, Registry, ToolSource};
use crate::session::{ActiveTools, CallSettings, Session};
use crate::tape::Deck;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Configures and loads a [`Host`].
///
/// Defaults: the workspace is the current directory; built-in tools may read
/// the workspace and nothing else; extensions get no capabilities; the active
/// tools are Pi's defaults (`read`, `bash`, `edit`, `write`, those that exist)
/// plus every extension tool; a cancelled call gets one second to stop by
/// itself before it is stopped; programs run in the namespace jail where the
/// machine can run it. The shell tools' commands are configured on their
/// [`ProcessPolicy`], the built-in components by [`BuiltinSettings`], the
/// extensions by [`ExtensionSettings`]:
///
/// ```no_run
/// # async fn f() -> Result<(), toolhost::Error> {
/// use std::time::Duration;
/// let host = toolhost::Host::builder()
///     .workspace("/path/to/project")
///     .commands(|p| p.default_timeout(Some(Duration::from_secs(60))).network(false))
///     .extensions(|e| e.load("/opt/tools/wordcount.wasm"))
///     .build()
///     .await?;
/// # Ok(()) }
/// ```
#[must_use]
pub struct HostBuilder {
    workspace: Option<PathBuf>,
    active: Option<Vec<String>>,
    all_active: bool,
    hooks: Vec<Arc<dyn ToolHooks>>,
    runtime: Option<Arc<Runtime>>,
    session_id: Option<String>,
    cancel_grace: Option<Duration>,
    sequential: bool,
    user_config: Option<Option<PathBuf>>,
    state_dir: Option<Option<PathBuf>>,
    temp_dir: Option<PathBuf>,
    jail: JailMode,
    commands: ProcessPolicy,
    builtins: BuiltinSettings,
    extensions: ExtensionSettings,
    audit: Option<PathBuf>,
    audit_reporter: Option<audit::Reporter>,
    asker: Option<Arc<Asker>>,
    client: Option<Arc<dyn crate::ops::client::Client>>,
    process_idle: Option<Duration>,
    pi: Option<PiProfile>,
    /// Exposure rules, after the files' (later rules win on the same name).
    exposures: Vec<(String, Exposure)>,
    /// The service of a remote workspace, when the workspace is remote.
    remote: Option<Arc<Connection>>,
    /// Record the calls, or replay them.
    tape: Option<TapeChoice>,
}

/// What the host does with its calls' tapes ([`HostBuilder::record`],
/// [`HostBuilder::replay`]).
#[derive(Clone)]
enum TapeChoice {
    Record(crate::tape::RecordTo),
    Replay(Arc<crate::tape::Recording>, Vec<String>),
}

impl Default for HostBuilder {
    fn default() -> Self {
        HostBuilder {
            workspace: None,
            active: None,
            all_active: false,
            hooks: Vec::new(),
            runtime: None,
            session_id: None,
            cancel_grace: None,
            sequential: false,
            user_config: None,
            state_dir: None,
            temp_dir: None,
            jail: JailMode::Auto,
            pi: None,
            exposures: Vec::new(),
            // Pi's bash has the network (package managers and git need it)
            // and, here, a default timeout.
            commands: ProcessPolicy::new()
                .network(true)
                .default_timeout(Some(builtin::DEFAULT_COMMAND_TIMEOUT)),
            builtins: BuiltinSettings::default(),
            extensions: ExtensionSettings::default(),
            audit: None,
            audit_reporter: None,
            asker: None,
            client: None,
            process_idle: None,
            remote: None,
            tape: None,
        }
    }
}

/// The built-in components: their call limits and where their files come
/// from.
#[must_use]
#[derive(Clone)]
pub struct BuiltinSettings {
    limits: Limits,
    fs: Option<(Arc<dyn FsRead>, Arc<dyn FsWrite>)>,
}

impl Default for BuiltinSettings {
    fn default() -> Self {
        BuiltinSettings {
            // Built-ins decode large images and hold large files: they get
            // the pool's whole memory size.
            limits: Limits {
                memory_bytes: 1 << 30,
                ..Limits::default()
            },
            fs: None,
        }
    }
}

impl BuiltinSettings {
    /// Each built-in call's memory, time and output limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Serve the built-ins' file access from this backend instead of the
    /// disk (for example [`crate::ops::fs::MemoryFs`]).
    pub fn fs_backend<B: FsRead + FsWrite + 'static>(mut self, backend: Arc<B>) -> Self {
        self.fs = Some((backend.clone(), backend));
        self
    }
}

/// The extensions: components loaded besides the discovered ones, grants
/// given with the user's authority, and their default call limits.
#[must_use]
#[derive(Clone, Debug, Default)]
pub struct ExtensionSettings {
    paths: Vec<PathBuf>,
    grants: Vec<(String, GrantSpec)>,
    limits: Limits,
}

impl ExtensionSettings {
    /// Load extensions from this `.wasm` file or directory too, after the
    /// discovered ones; their grants come from the policy files.
    pub fn load(mut self, path: impl Into<PathBuf>) -> Self {
        self.paths.push(path.into());
        self
    }

    /// Grant the extension `name` capabilities with the user's authority, as
    /// the user's `toolhost.toml` does (added to what it grants): it applies
    /// to the user's extensions directory and to [`Self::load`]ed files,
    /// never to a workspace's components. A hook component needs
    /// `hooks: true` to run.
    pub fn grant(mut self, name: impl Into<String>, grant: GrantSpec) -> Self {
        self.grants.push((name.into(), grant));
        self
    }

    /// An extension call's limits where its grant sets none.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl HostBuilder {
    /// The directory the tools work in (and, by default, may read).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Work in a remote workspace: the one served at the other end of
    /// `connection` (`toolhost workspace serve`, reached by
    /// [`Connection::open`]). Its files, searches and the shell's commands
    /// are the service's, confined there; nothing of the workspace is read,
    /// written or run on this machine, and an Operation never falls back to
    /// it. The workspace's own `toolhost.toml` and `.toolhost/extensions`
    /// stay unread (the user's apply), and extensions get no file or
    /// process grant there.
    pub fn remote_workspace(mut self, connection: Arc<Connection>) -> Self {
        self.remote = Some(connection);
        self
    }

    /// The tools the model may call; unknown names are ignored.
    pub fn active_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.active = Some(names.into_iter().map(Into::into).collect());
        self.all_active = false;
        self
    }

    /// The release of Pi whose model-facing texts and result shapes the
    /// tools follow ([`PiProfile`]; by default `pi = "…"` in a
    /// `toolhost.toml`, else Pi 0.85). The same pipeline runs under every
    /// profile: it only selects texts and shapes.
    pub fn pi_profile(mut self, pi: PiProfile) -> Self {
        self.pi = Some(pi);
        self
    }

    /// How the model and other tools reach the tool `name`, or every tool
    /// matching it (`*` is any characters): see [`Exposure`]. Over the
    /// `[exposure]` rules of the `toolhost.toml` files.
    pub fn exposure(mut self, name: impl Into<String>, exposure: Exposure) -> Self {
        self.exposures.push((name.into(), exposure));
        self
    }

    /// Make every loaded tool active (but those whose exposure keeps them
    /// inactive until named: callable, hidden).
    pub fn all_tools_active(mut self) -> Self {
        self.all_active = true;
        self.active = None;
        self
    }

    /// Add before/after hooks; they run in the order added.
    pub fn hooks(mut self, hooks: Arc<dyn ToolHooks>) -> Self {
        self.hooks.push(hooks);
        self
    }

    /// Ask `person` when a call needs what it was not granted, or an `ask`
    /// rule names it (`[permissions]` in the user's `toolhost.toml`; see
    /// [`crate::permissions`]): every batch whose front end brings no person
    /// of its own asks here, and "for this session" lasts as long as the
    /// host. Without one, such a call is refused with a sentence saying what
    /// the person can grant.
    pub fn ask(mut self, person: Arc<dyn Ask>) -> Self {
        self.asker = Some(Asker::new(person));
        self
    }

    /// Let tools ask `client` (forms, completions, roots:
    /// `toolhost:tool/client`, within their grants) in every call whose
    /// front end lends no client of its own ([`crate::Request::client`]).
    pub fn client(mut self, client: Arc<dyn crate::ops::client::Client>) -> Self {
        self.client = Some(client);
        self
    }

    /// Stop the host's session processes after `idle` without any use of
    /// them (default 30 minutes; `toolhost.toml`'s `[session] idle-minutes`).
    pub fn process_idle(mut self, idle: Duration) -> Self {
        self.process_idle = Some(idle);
        self
    }

    /// Use this runtime instead of the process-wide one.
    pub fn runtime(mut self, runtime: Arc<Runtime>) -> Self {
        self.runtime = Some(runtime);
        self
    }

    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// How long a cancelled call may run on before it is stopped.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = Some(grace);
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

    /// toolhost's state directory, where what a call changed that would make
    /// git run code is kept after it was undone; `None` keeps nothing.
    /// Default: `$XDG_STATE_HOME/toolhost`, else `~/.local/state/toolhost`.
    /// A protected path.
    pub fn state_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.state_dir = Some(dir);
        self
    }

    /// The host's temp directory: full-output files of the shell tools, and
    /// the `TMPDIR` their commands may write in. Created if missing.
    pub fn temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Whether programs (shell commands, extensions' programs) run in the
    /// namespace jail (default [`JailMode::Auto`]: where the machine can run
    /// it; [`JailMode::Required`] refuses to run them elsewhere).
    pub fn jail(mut self, mode: JailMode) -> Self {
        self.jail = mode;
        self
    }

    /// Configure the shell tools' (`bash`, `powershell`) commands on their
    /// process policy. It starts with the network (as in Pi) and a 300 s
    /// default timeout; the host then adds the shells, the workspace (working
    /// directories and writes), its temp directory (`<system temp>/toolhost-<uid>`,
    /// also the commands' `TMPDIR`), the allowlisted environment, the
    /// session id, the jail ([`Self::jail`]) and the protected and hidden
    /// paths. Limits not set here come from `[shell]` of `toolhost.toml`.
    pub fn commands(mut self, f: impl FnOnce(ProcessPolicy) -> ProcessPolicy) -> Self {
        self.commands = f(self.commands);
        self
    }

    /// Keep an audit log: a JSON line per call appended to `path` (see
    /// [`crate::audit`]). Wins over `audit` in the user's `toolhost.toml`.
    /// Without either, no log is kept.
    pub fn audit_log(mut self, path: impl Into<PathBuf>) -> Self {
        self.audit = Some(path.into());
        self
    }

    /// Record every call (`docs/recording.md`): what each component asked
    /// of the host and was answered, the clocks and random bytes it saw,
    /// its arguments and result, so that `toolhost replay` (or
    /// [`Self::replay`]) can run it again without the machine. The file
    /// must lie outside the workspace, and no tool can read or write it.
    pub fn record(mut self, to: crate::tape::RecordTo) -> Self {
        self.tape = Some(TapeChoice::Record(to));
        self
    }

    /// Replay `recording`: each call whose id it holds is answered from it
    /// (its Operations, clocks and random bytes), never from the machine; a
    /// call that asks anything else, or ends otherwise, has diverged
    /// ([`crate::Host::tape_report`]).
    /// `replaced` names extensions given other components than the
    /// recorded ones (`toolhost replay --component NAME=FILE`): their calls
    /// are replayed to show what the new version does differently.
    pub fn replay(mut self, recording: Arc<crate::tape::Recording>, replaced: Vec<String>) -> Self {
        self.tape = Some(TapeChoice::Replay(recording, replaced));
        self
    }

    /// Where the audit log's one failure report goes (default: standard
    /// error).
    pub fn audit_reporter(mut self, report: audit::Reporter) -> Self {
        self.audit_reporter = Some(report);
        self
    }

    /// Configure the built-in components.
    pub fn builtins(mut self, f: impl FnOnce(BuiltinSettings) -> BuiltinSettings) -> Self {
        self.builtins = f(self.builtins);
        self
    }

    /// Configure the extensions.
    pub fn extensions(mut self, f: impl FnOnce(ExtensionSettings) -> ExtensionSettings) -> Self {
        self.extensions = f(self.extensions);
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
    ) -> capability::process::ShellJail {
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
        // The secrets of the protected set (the credential stores, the
        // cache key, every secret's source file), and what `[shell] hide`
        // names.
        let mut hidden: Vec<PathBuf> = protected.secrets().to_vec();
        hidden.extend(
            policy
                .shell
                .iter()
                .filter(|(kind, _)| *kind == ShellPath::Hide)
                .map(|(_, p)| p.clone()),
        );
        let home_hidden = (policy.shell_home == Some(HomeView::Hidden))
            .then(|| std::env::var_os("HOME").filter(|h| !h.is_empty()))
            .flatten()
            .map(PathBuf::from);
        // The hosts commands may reach take the built-in calls' time limit
        // as the longest a connection stays open.
        // (A list that does not parse was made `false` when it was read;
        // were it not, it would still give no network.)
        let network = policy.shell_network.as_ref().and_then(|n| match n {
            ShellNetwork::All(true) => None,
            ShellNetwork::All(false) => Some(ShellNet::Off),
            ShellNetwork::Hosts(hosts) => Some(
                crate::ops::http_client::proxy::NetPolicy::new(hosts, self.builtins.limits.time)
                    .map_or(ShellNet::Off, ShellNet::Hosts),
            ),
        });
        capability::process::ShellJail {
            network,
            protected: protected.clone(),
            hidden,
            home_hidden,
            shown: policy
                .shell
                .iter()
                .filter(|(kind, _)| *kind == ShellPath::ReadOnly)
                .map(|(_, p)| p.clone())
                .collect(),
            mode: self.jail,
            // Limits set on the policy win over `[shell]`.
            limits: (!self.commands.has_limits()).then(|| {
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
    /// [`Host::diagnostics`] and the others still load. The steps, each a
    /// function below: the workspace ([`Self::workspace_dir`]), the engine,
    /// what the files decide ([`Self::configuration`]), how the built-ins
    /// are confined ([`Self::confinement`]), compiling and linking the
    /// built-ins ([`Self::start_builtins`]) and the extensions
    /// ([`Self::start_extensions`], on every core) while their definitions
    /// are read, adding their tools to the registry in that order
    /// ([`add_builtins`], [`add_extensions`]), the first active set
    /// ([`Self::first_active`]), and the session with its audit log
    /// ([`Self::assemble`]).
    pub async fn build(self) -> Result<Host, Error> {
        let workspace = match &self.remote {
            Some(connection) => PathBuf::from(connection.root()),
            None => self.workspace_dir()?,
        };
        let runtime = match self.runtime.clone() {
            Some(rt) => rt,
            None => Runtime::shared()?,
        };
        let config = self.configuration(&workspace, runtime.options().cache_dir.as_deref())?;
        let mut diagnostics = config.policy.diagnostics.clone();
        let confined = self.confinement(&workspace, &config, &mut diagnostics)?;
        let registry = Arc::new(RwLock::new(Registry::default()));
        let active_tools = Arc::new(ActiveTools::new(registry.clone()));
        // The built-ins' definitions are read while the extensions are
        // compiled and linked; every component's definitions at once.
        let builtins = self.start_builtins(&runtime, &confined, config.pi)?;
        let extensions = self.start_extensions(
            &runtime,
            &workspace,
            &config,
            &confined,
            &active_tools,
            &mut diagnostics,
        );
        add_builtins(builtins, &registry, &mut diagnostics).await?;
        let (reports, hook_components) =
            add_extensions(extensions, &active_tools, &mut diagnostics).await;
        diagnostics.extend(runtime.take_reports());
        let exposures = self.exposures.iter().cloned();
        let exposures = config.policy.exposure.iter().cloned().chain(exposures);
        let (exposures, refused) = Exposures::new(exposures.collect());
        for (rule, reason) in refused {
            diagnostics.push(Diagnostic {
                path: "[exposure]".into(),
                message: format!("the rule {rule:?} is not applied: {reason}"),
            });
        }
        registry
            .write()
            .expect("registry lock")
            .set_exposures(exposures);
        let first = self.first_active(&registry.read().expect("registry lock"), &config);
        active_tools.set(&first);
        Ok(self.assemble(Assembly {
            workspace,
            config,
            confined,
            active_tools,
            hook_components,
            reports,
            diagnostics,
        }))
    }

    /// What a workspace service (`toolhost workspace serve`) serves: the
    /// workspace's backends as a local host gives its built-ins (the same
    /// roots, protected paths, process jail and network rules), without
    /// loading a tool. An error when the jail is required
    /// ([`JailMode::Required`]) and this machine cannot run it.
    pub fn served_workspace(self) -> Result<super::ServedWorkspace, Error> {
        if let (JailMode::Required, crate::doctor::Support::Unavailable { reason }) =
            (self.jail, crate::doctor::jail_support())
        {
            return Err(Error::runtime(format!(
                "this workspace service requires the process jail, and {reason}; serve \
                 with --allow-unconfined to run commands without it"
            )));
        }
        let workspace = self.workspace_dir()?;
        let cache_dir = match &self.runtime {
            Some(runtime) => runtime.options().cache_dir.clone(),
            None => crate::default_cache_dir(),
        };
        let config = self.configuration(&workspace, cache_dir.as_deref())?;
        let mut diagnostics = Vec::new();
        let confined = self.confinement(&workspace, &config, &mut diagnostics)?;
        let (fs_read, fs_write, search) = confined.builtins.workspace;
        let confinement = crate::doctor::layers();
        Ok(super::ServedWorkspace {
            root: workspace,
            temp_dir: confined.temp_dir,
            fs_read,
            fs_write,
            search,
            process: confined.builtins.shells.0,
            guard: confined.builtins.shells.1,
            confinement,
            home: std::env::var("HOME").ok().filter(|h| !h.is_empty()),
        })
    }

    /// The workspace's real path; it must be a directory.
    fn workspace_dir(&self) -> Result<PathBuf, Error> {
        let workspace_arg = self.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        let shown = workspace_arg.display().to_string();
        let workspace = workspace_arg
            .canonicalize()
            .map_err(|e| Error::workspace_because(&shown, "cannot be resolved", e))?;
        if !workspace.is_dir() {
            return Err(Error::Workspace {
                path: shown,
                reason: "not a directory".into(),
                source: None,
            });
        }
        Ok(workspace)
    }

    /// What the files decide: the trust store, the policy of both
    /// `toolhost.toml` files (with the embedder's grants), the audit log
    /// (opened before any tool runs), the state directory's quarantine, and
    /// the protected paths.
    fn configuration(
        &self,
        workspace: &Path,
        cache_dir: Option<&Path>,
    ) -> Result<Configuration, Error> {
        let user_config = self
            .user_config
            .clone()
            .unwrap_or_else(crate::extensions::policy::default_user_config_dir);
        let trust = match &user_config {
            Some(dir) => TrustStore::load(dir)?,
            None => TrustStore::empty(),
        };
        let remote = self.remote.is_some();
        let mut policy = Policy::load_from(workspace, remote, user_config.as_deref(), &trust)?;
        for (name, grant) in &self.extensions.grants {
            policy.grant(name, grant);
        }
        let audit_path = self.audit.clone().or_else(|| policy.audit.clone());
        let audit_log = audit_path.as_ref().map(|path| {
            let report = self
                .audit_reporter
                .clone()
                .unwrap_or_else(audit::stderr_reporter);
            Arc::new(AuditLog::open(path, report))
        });
        let state_dir = self
            .state_dir
            .clone()
            .unwrap_or_else(crate::extensions::policy::default_state_dir);
        let mut protected = extensions::protected_paths(
            workspace,
            user_config.as_deref(),
            cache_dir,
            audit_path.as_deref(),
            state_dir.as_deref(),
            &policy,
        );
        let pi = self.pi.or(policy.pi).unwrap_or_default();
        let deck = match &self.tape {
            None => None,
            Some(TapeChoice::Replay(recording, replaced)) => {
                Some(Arc::new(Deck::Replay(Arc::new(
                    crate::tape::Replaying::new(recording.clone(), replaced.clone()),
                ))))
            }
            Some(TapeChoice::Record(to)) => {
                let recorder = match to.opened.get() {
                    Some(recorder) => recorder.clone(),
                    None => {
                        let recorder = Arc::new(self.recorder(workspace, to, pi)?);
                        to.opened.get_or_init(|| recorder).clone()
                    }
                };
                // What the tools read is in it: none of them may read it.
                protected = protected.hide_secrets([recorder.path().to_path_buf()]);
                Some(Arc::new(Deck::Record(recorder)))
            }
        };
        Ok(Configuration {
            pi,
            deck,
            quarantine: state_dir.map(|d| d.join("quarantine")),
            user_config,
            trust,
            policy,
            audit_log,
            protected,
        })
    }

    /// A new recording at `path`, refused inside `workspace` (where a tool
    /// could read what the others read, and the recording itself).
    fn recorder(
        &self,
        workspace: &Path,
        to: &crate::tape::RecordTo,
        pi: PiProfile,
    ) -> Result<crate::tape::Recorder, Error> {
        let path = to.path.as_path();
        let shown = path.display();
        let refused = |reason: String| Error::InvalidInput(format!("--record {shown}: {reason}"));
        let name = path
            .file_name()
            .ok_or_else(|| refused("names no file".into()))?;
        let parent = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => parent.to_path_buf(),
            None => std::env::current_dir().map_err(|e| refused(e.to_string()))?,
        };
        let real_parent = parent
            .canonicalize()
            .map_err(|e| refused(format!("its directory {}: {e}", parent.display())))?;
        let real = real_parent.join(name);
        if self.remote.is_none()
            && let Ok(workspace) = workspace.canonicalize()
            && real.starts_with(&workspace)
        {
            return Err(refused(format!(
                "it is inside the workspace {}; a recording holds what the tools read, so it \
                 is written outside the workspace (for example --record /tmp/{})",
                workspace.display(),
                name.to_string_lossy()
            )));
        }
        let header = crate::tape::RecordingHeader {
            format: crate::tape::FORMAT,
            release: crate::ops::remote::wire::release(),
            command: to.command.clone(),
            workspace: workspace.to_string_lossy().into_owned(),
            pi: pi.as_str().to_string(),
            host_clock: vec!["timestamp".into()],
        };
        crate::tape::Recorder::create(&real, &header, to.limit)
            .map_err(|e| refused(format!("cannot be written: {e}")))
    }

    /// What the built-ins may touch and how their commands are confined:
    /// the workspace's file backends, the temp directory (repaired if need
    /// be) with the shell's full-output files, the places tools can write,
    /// the `[shell] read-write` roots as approved, the git guard over all of
    /// them, and the shell tools' process policy.
    fn confinement(
        &self,
        workspace: &Path,
        config: &Configuration,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Result<Confined, Error> {
        let protected = &config.protected;
        // Search runs natively on the local disk; over another backend it
        // walks through that backend's `FsRead`.
        let (fs_read, fs_write, search): (Arc<dyn FsRead>, Arc<dyn FsWrite>, Arc<dyn Search>) =
            match (&self.remote, self.builtins.fs.clone()) {
                (Some(connection), _) => {
                    let files = Arc::new(RemoteFs::new(connection.clone()));
                    let search = Arc::new(RemoteSearch::new(connection.clone()));
                    (files.clone(), files, search)
                }
                (None, Some((read, write))) => {
                    let search = Arc::new(FsSearch::new(read.clone()));
                    (read, write, search)
                }
                (None, None) => {
                    let local = Arc::new(
                        LocalFs::new(&[workspace.to_path_buf()])
                            .map_err(|e| {
                                let shown = workspace.display().to_string();
                                Error::workspace_because(&shown, "cannot open it", e)
                            })?
                            .protect(protected.clone()),
                    );
                    let search = Arc::new(LocalSearch::new(local.clone()));
                    (local.clone(), local, search)
                }
            };
        let (temp_dir, temp_repaired) = match &self.temp_dir {
            Some(dir) => std::fs::create_dir_all(dir)
                .and_then(|()| dir.canonicalize())
                .map(|dir| (dir, None)),
            None => crate::ops::process::scratch::temp_root(),
        }
        .map_err(|e| Error::runtime_because("cannot use the temp directory", e))?;
        remove_stale_outputs(&temp_dir);
        let temp_fs = Arc::new(LocalFs::new(std::slice::from_ref(&temp_dir)).map_err(|e| {
            Error::runtime_because(
                format!("cannot open the temp directory {}", temp_dir.display()),
                e,
            )
        })?);
        let output_files = Arc::new(crate::ops::fs::OutputFiles::default());
        let output_dir: Arc<dyn FsWrite> = Arc::new(crate::ops::fs::Recorded {
            inner: temp_fs.clone(),
            files: output_files.clone(),
        });
        if let Some(repaired) = temp_repaired {
            diagnostics.push(Diagnostic {
                path: temp_dir.display().to_string(),
                message: format!("the temp directory was repaired: {repaired}"),
            });
        }
        let policy = &config.policy;
        let jail = self.shell_jail(policy, protected, config.user_config.as_deref());
        // Where tools can write: no granted path may lead through a link
        // there (see `crate::extensions::grants`).
        let places = WritePlaces::new(workspace, &temp_dir, policy);
        let mut write_roots: Vec<crate::ops::fs::GrantedDir> = Vec::new();
        for (kind, path) in &policy.shell {
            if *kind != ShellPath::ReadWrite {
                continue;
            }
            if self.remote.is_some() {
                diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: "[shell] read-write grant is not applied: the workspace is remote, \
                              and its commands run on its machine"
                        .into(),
                });
                continue;
            }
            match grants::directory(path, &places) {
                Ok(dir) => write_roots.push(dir),
                Err(reason) => diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: format!("[shell] read-write grant is refused: {reason}"),
                }),
            }
        }
        // Everything the shell tools' commands may write, watched for what
        // would make git run code.
        // A remote workspace's is its service's to guard, on its machine.
        let local_workspace = self.remote.is_none().then(|| workspace.to_path_buf());
        let guard = Arc::new(GitGuard::of_user(
            local_workspace
                .into_iter()
                .chain([temp_dir.clone()])
                .chain(write_roots.iter().map(|d| d.path().to_path_buf()))
                .collect(),
            config.quarantine.as_deref(),
        ));
        let process = capability::process::shell_policy(
            self.commands.clone(),
            workspace,
            &temp_dir,
            &write_roots,
            self.session_id.clone(),
            jail,
        )
        .git_guard(guard.clone());
        let process = match &self.remote {
            Some(connection) => process.remote(Arc::new(RemoteProcesses::new(connection.clone()))),
            None => process,
        };
        Ok(Confined {
            temp_dir,
            places,
            builtins: BuiltinBackends {
                workspace: (fs_read, fs_write, search),
                outputs: (output_dir, output_files, temp_fs),
                shells: (Arc::new(process), guard),
            },
        })
    }

    /// Every built-in component, with the capabilities `confined` gives it,
    /// compiled and linked; its definitions being read on the runtime.
    fn start_builtins(
        &self,
        runtime: &Arc<Runtime>,
        confined: &Confined,
        pi: PiProfile,
    ) -> Result<Vec<Finishing>, Error> {
        let mut specs = Vec::new();
        for component in builtin::BUILTIN_COMPONENTS {
            let origin = format!("built-in {}", component.name);
            let grant = component.grant().map_err(|e| Error::load(&origin, e))?;
            let caps = capability::for_builtin(&grant, &confined.builtins)
                .map_err(|e| Error::load(&origin, format!("its manifest asks for {e}")))?;
            specs.push(ComponentSpec {
                code: Code::Bytes(component.bytes),
                precompiled: Some(&component.precompiled.0),
                hash: component.hash.to_string(),
                origin,
                source: ToolSource::Builtin,
                caps,
                limits: builtin::limits(
                    &grant,
                    self.builtins.limits,
                    self.commands.command_timeout(),
                ),
                pi,
                grant_name: None,
                hooks: false,
                replace_builtin: false,
                namespace: None,
            });
        }
        // On this thread: preparing the built-ins on several (their code
        // made executable, their memory images made) measured slower.
        let mut started = Vec::new();
        for spec in specs {
            let origin = spec.origin.clone();
            let prepared = loader::prepare(runtime, spec)?;
            started.push((origin, tokio::spawn(loader::finish(prepared))));
        }
        Ok(started)
    }

    /// Every extension found (the workspace's and the user's directories,
    /// the paths given here and named by the policy files), each compiled and
    /// linked with what the policy grants it (on several threads at once);
    /// their definitions being read on the runtime.
    fn start_extensions(
        &self,
        runtime: &Arc<Runtime>,
        workspace: &Path,
        config: &Configuration,
        confined: &Confined,
        active_tools: &Arc<ActiveTools>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<(discovery::Found, ExtensionFinishing)> {
        // A remote workspace's extensions are on its machine: not loaded.
        let mut dirs = Vec::new();
        if self.remote.is_none() {
            dirs.push((
                workspace.join(".toolhost/extensions"),
                discovery::Origin::Workspace,
            ));
        }
        if let Some(dir) = &config.user_config {
            dirs.push((dir.join("extensions"), discovery::Origin::User));
        }
        let mut paths: Vec<(PathBuf, discovery::Origin)> = self
            .extensions
            .paths
            .iter()
            .map(|p| (p.clone(), discovery::Origin::Configured))
            .collect();
        // What a policy file names is loaded from where it leads now, unless
        // a link a tool could have planted leads there.
        for (path, origin) in &config.policy.extension_paths {
            match grants::resolve(path, &confined.places, "name its target instead") {
                Ok(resolved) => paths.push((resolved.path, *origin)),
                // Reported by discovery or the loader, naming it.
                Err(Unresolved::Missing) => paths.push((path.clone(), *origin)),
                Err(Unresolved::Refused(reason)) => diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: format!("extension-paths entry is refused: {reason}"),
                }),
            }
        }
        let (found, found_diagnostics) = discovery::discover(&dirs, &paths);
        diagnostics.extend(found_diagnostics);
        let tool_set = ToolSet::new(active_tools.clone());
        let load_cx = LoadContext {
            runtime,
            policy: &config.policy,
            trust: &config.trust,
            workspace,
            tool_set: &tool_set,
            defaults: self.extensions.limits,
            protected: &config.protected,
            jail: self.jail,
            quarantine: config.quarantine.as_deref(),
            places: &confined.places,
            pi: config.pi,
            remote: self.remote.as_ref().map(|c| c.shown()),
        };
        let pending = on_threads(found.iter().collect(), |extension| {
            extensions::prepare(&load_cx, extension)
        });
        found
            .into_iter()
            .zip(pending)
            .map(|(extension, pending)| (extension, tokio::spawn(extensions::finish(pending))))
            .collect()
    }

    /// The active set a session starts with: every tool, the embedder's or
    /// the policy's list, or Pi's defaults and every extension tool.
    fn first_active(&self, registry: &Registry, config: &Configuration) -> Vec<String> {
        if self.all_active {
            registry.starting_names(&[], true)
        } else if let Some(names) = self
            .active
            .clone()
            .or_else(|| config.policy.active_tools.clone())
        {
            names
        } else {
            registry.starting_names(DEFAULT_ACTIVE_TOOLS, false)
        }
    }

    /// The session (tools, hooks, call settings, audit log) and the host
    /// around it.
    fn assemble(self, parts: Assembly) -> Host {
        // Probed when first asked for (the probe starts two tiny jails):
        // `toolhost list` never needs it.
        let process = parts.confined.builtins.shells.0.clone();
        let session = Session {
            tools: parts.active_tools,
            hooks: self
                .hooks
                .into_iter()
                .map(Hook::Embedder)
                .chain(parts.hook_components.into_iter().map(Hook::Component))
                .collect(),
            settings: CallSettings {
                workspace: parts.workspace,
                home: match &self.remote {
                    Some(connection) => connection.hello().home.clone(),
                    None => std::env::var("HOME").ok().filter(|h| !h.is_empty()),
                },
                session_id: self.session_id.clone(),
                cancel_grace: self.cancel_grace.unwrap_or(Duration::from_secs(1)),
                sequential: self.sequential,
                pi: parts.config.pi,
            },
            audit_log: parts.config.audit_log.clone(),
            mutations: Default::default(),
            permissions: Arc::new(parts.config.policy.permissions.clone()),
            protected: Arc::new(parts.config.protected.clone()),
            always_file: parts.config.policy.user_file.clone(),
            asker: self.asker,
            client: self.client,
            processes: Arc::new(
                crate::ops::process::session::SessionProcesses::new(
                    self.process_idle
                        .unwrap_or(crate::ops::process::session::DEFAULT_IDLE),
                )
                .audited(parts.config.audit_log.clone().map(|log| {
                    Arc::new(audit::ProcessAudit {
                        log,
                        session: self.session_id.clone(),
                    }) as Arc<dyn crate::ops::process::session::ProcessRecord>
                })),
            ),
            deck: parts.config.deck.clone(),
        };
        let mut reports = parts.reports;
        if let Some(deck) = &parts.config.deck {
            let loaded = reports.iter().filter(|r| r.refused.is_none());
            deck.components(
                &loaded
                    .map(|r| crate::tape::RecordedComponent {
                        name: r.name.clone(),
                        digest: r
                            .digest
                            .as_ref()
                            .map(|d| d.as_str().to_string())
                            .unwrap_or_default(),
                        path: r.component.display().to_string(),
                        granted: r.granted.clone(),
                    })
                    .collect::<Vec<_>>(),
            );
        }
        for report in &mut reports {
            if let Some(digest) = &report.digest {
                report.always = session.permissions.pinned_to(&digest.to_string());
            }
        }
        let (fs, _, search) = &parts.confined.builtins.workspace;
        Host {
            inner: Arc::new(HostInner {
                reads: super::WorkspaceReads {
                    fs: fs.clone(),
                    search: search.clone(),
                },
                mcp: parts.config.policy.mcp.clone(),
                session: Arc::new(session),
                diagnostics: parts.diagnostics,
                extensions: reports,
                temp_dir: parts.confined.temp_dir,
                process,
                confinement: std::sync::OnceLock::new(),
            }),
        }
    }
}

/// What the files decide ([`HostBuilder::configuration`]).
struct Configuration {
    /// The Pi profile: the builder's, else the files', else the default.
    pi: PiProfile,
    /// Where the calls are recorded, or replayed from.
    deck: Option<Arc<Deck>>,
    user_config: Option<PathBuf>,
    trust: TrustStore,
    policy: Policy,
    audit_log: Option<Arc<AuditLog>>,
    /// Where the git guards keep what they neutralize.
    quarantine: Option<PathBuf>,
    protected: ProtectedPaths,
}

/// What the built-ins may touch ([`HostBuilder::confinement`]).
struct Confined {
    temp_dir: PathBuf,
    places: WritePlaces,
    /// What the built-ins' manifests may name.
    builtins: BuiltinBackends,
}

/// Everything [`HostBuilder::assemble`] puts together.
struct Assembly {
    workspace: PathBuf,
    config: Configuration,
    confined: Confined,
    active_tools: Arc<ActiveTools>,
    hook_components: Vec<ComponentHook>,
    reports: Vec<ExtensionReport>,
    diagnostics: Vec<Diagnostic>,
}

/// A component whose definitions are being read, and its name.
type Finishing = (String, tokio::task::JoinHandle<Result<Loaded, Error>>);

/// An extension whose definitions are being read.
type ExtensionFinishing = tokio::task::JoinHandle<(ExtensionReport, Option<Loaded>, Vec<String>)>;

/// The built-ins' tools into the registry, in their order.
async fn add_builtins(
    started: Vec<Finishing>,
    registry: &RwLock<Registry>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(), Error> {
    for (origin, finishing) in started {
        let tools = finishing
            .await
            .map_err(|e| Error::load(&origin, format!("loading it failed: {e}")))??;
        add_all(
            &mut registry.write().expect("registry lock"),
            tools,
            None,
            diagnostics,
        );
    }
    Ok(())
}

/// The extensions' tools into the registry, in the order they were found;
/// their reports, and their hook components.
async fn add_extensions(
    started: Vec<(discovery::Found, ExtensionFinishing)>,
    active_tools: &ActiveTools,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<ExtensionReport>, Vec<ComponentHook>) {
    let registry = active_tools.registry();
    let mut reports = Vec::new();
    let mut hook_components = Vec::new();
    for (extension, finishing) in started {
        let path = extension.component.display().to_string();
        let (report, loaded, warnings) = match finishing.await {
            Ok(finished) => finished,
            Err(e) => (
                ExtensionReport::refused(&extension, format!("loading it failed: {e}")),
                None,
                Vec::new(),
            ),
        };
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
                diagnostics,
            );
        }
        reports.push(report);
    }
    (reports, hook_components)
}

/// `f` of each item, in order, computed on as many threads as there are
/// cores (reading, hashing, mapping and linking components: most of a
/// start's time).
fn on_threads<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let count = items.len();
    let mut stripes: Vec<Vec<(usize, T)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        stripes[i % threads].push((i, item));
    }
    let f = &f;
    let mut results: Vec<Option<R>> = (0..count).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = stripes
            .into_iter()
            .map(|stripe| {
                scope.spawn(move || {
                    stripe
                        .into_iter()
                        .map(|(i, item)| (i, f(item)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for worker in workers {
            for (i, result) in worker.join().expect("a loading thread panicked") {
                results[i] = Some(result);
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every item computed"))
        .collect()
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

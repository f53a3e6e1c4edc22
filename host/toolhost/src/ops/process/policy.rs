//! What a child may be given, and the spawn that gives it exactly that: the
//! [`ProcessPolicy`], its [`Confinement`] on this machine, and program lookup.

use super::*;
use crate::ops::http_client::proxy::NetPolicy;
use crate::ops::usage::Usage;

/// The port of the egress proxy on the loopback of a jail's own network
/// namespace (the only port a child may connect to there).
pub const PROXY_PORT: u16 = 3128;

/// The variables that point HTTP clients at the proxy.
const PROXY_VARS: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// An admitted command: the program's path, its working directory and
/// its environment.
type Admitted = (PathBuf, PathBuf, Vec<(String, String)>);

/// Whether children run in the namespace jail ([`jail`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JailMode {
    /// In the jail where this machine can run it; Landlock and seccomp
    /// alone elsewhere.
    #[default]
    Auto,
    /// In the jail, or not at all: spawning fails where it cannot run.
    Required,
    /// Never in the jail (for hosts that already run in one).
    Off,
}

/// What a component may run, where, and with which environment.
///
/// The default grants nothing: no program, no working directory, an empty
/// environment a command may not add to, no default timeout, no network;
/// children run in the namespace jail where the machine can run it, seeing
/// the whole system read-only, and Landlock is used where available.
#[derive(Clone, Debug, Default)]
pub struct ProcessPolicy {
    pub(super) programs: Vec<String>,
    pub(super) cwd_roots: Vec<PathBuf>,
    pub(super) write_roots: Vec<PathBuf>,
    /// Readable in the jail's [`View::SystemOnly`].
    pub(super) read_roots: Vec<PathBuf>,
    pub(super) env: Vec<(String, String)>,
    /// Variables a command may set itself.
    pub(super) command_env: Vec<String>,
    pub(super) session_id: Option<String>,
    pub(super) default_timeout: Option<Duration>,
    pub(super) require_landlock: bool,
    pub(super) network: bool,
    /// Network by name: the hosts its children reach through the host's
    /// egress proxy, and nothing else (`crate::ops::http_client::proxy`).
    pub(super) proxy: Option<Arc<NetPolicy>>,
    pub(super) jail: JailMode,
    pub(super) view: Option<View>,
    pub(super) protected: ProtectedPaths,
    pub(super) hidden: Vec<PathBuf>,
    /// `$HOME`, when jailed children see none of it but what is shown.
    pub(super) home_hidden: Option<PathBuf>,
    /// Shown read-only within the emptied directories or a hidden home.
    pub(super) shown: Vec<PathBuf>,
    /// `None`: [`ProcessLimits::default`].
    pub(super) limits: Option<ProcessLimits>,
    /// The session's cgroup each spawn's own lies in (session processes).
    pub(super) session_cgroup: Option<Arc<super::limits::SessionCgroup>>,
    /// Knows the repositories beneath the write roots, whose configuration
    /// and hooks the jail keeps read-only.
    pub(super) git: Option<Arc<GitGuard>>,
    /// Where each child gets a temp directory of its own.
    pub(super) scratch_parent: Option<PathBuf>,
    /// Roots given as the directories approved ([`Self::read_root_pinned`]).
    pub(super) pinned: Vec<GrantedDir>,
    /// Places tools can write, where no program is taken from.
    pub(super) no_programs_from: Vec<PathBuf>,
    /// Where every spawn goes instead, for a remote workspace.
    pub(super) remote: Option<Arc<dyn super::RemoteSpawn>>,
}

impl ProcessPolicy {
    /// A policy that grants nothing.
    pub fn new() -> ProcessPolicy {
        ProcessPolicy::default()
    }

    /// Allow running `program`: a bare name (resolved on the policy's `PATH`
    /// at spawn) or an absolute path. A command must name it exactly so.
    pub fn program(mut self, program: impl Into<String>) -> Self {
        self.programs.push(program.into());
        self
    }

    /// Allow working directories inside `dir` (its real path).
    pub fn cwd_root(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd_roots.push(real_path(dir.as_ref()));
        self
    }

    /// Let children write inside `dir` (the jail mounts it writable;
    /// Landlock allows writes beneath it).
    pub fn write_root(mut self, dir: impl AsRef<Path>) -> Self {
        self.write_roots.push(real_path(dir.as_ref()));
        self
    }

    /// Let children read `dir` where the jail shows only the system
    /// ([`View::SystemOnly`]).
    pub fn read_root(mut self, dir: impl AsRef<Path>) -> Self {
        self.read_roots.push(real_path(dir.as_ref()));
        self
    }

    /// [`Self::read_root`] of the directory approved itself: the jail binds
    /// that directory (by its descriptor), not whatever lies at its path
    /// later, and no program starts while its path names anything else.
    pub fn read_root_pinned(mut self, dir: &GrantedDir) -> Self {
        self.read_roots.push(dir.path().to_path_buf());
        self.pin(dir)
    }

    /// [`Self::write_root`] of the directory approved itself (as
    /// [`Self::read_root_pinned`]; Landlock's rule names the directory too).
    pub fn write_root_pinned(mut self, dir: &GrantedDir) -> Self {
        self.write_roots.push(dir.path().to_path_buf());
        self.pin(dir)
    }

    fn pin(mut self, dir: &GrantedDir) -> Self {
        if !self.pinned.iter().any(|p| p.path() == dir.path()) {
            self.pinned.push(dir.clone());
        }
        self
    }

    /// Never run a program from inside `dir`, a place tools can write: a bare
    /// name is looked up on `PATH` past every such place, and an absolute
    /// path there is refused (what a tool planted there would otherwise run
    /// with this policy's grants).
    pub fn no_programs_from(mut self, dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        for place in [dir.to_path_buf(), real_path(dir)] {
            if !self.no_programs_from.contains(&place) {
                self.no_programs_from.push(place);
            }
        }
        self
    }

    /// What of the filesystem a jailed child sees beside its roots (default:
    /// everything, read-only).
    pub fn view(mut self, view: View) -> Self {
        self.view = Some(view);
        self
    }

    /// Keep these paths read-only to children even inside a write root.
    pub fn protect(mut self, protected: ProtectedPaths) -> Self {
        self.protected = protected;
        self
    }

    /// Keep the configuration and hooks of the repositories `guard` knows
    /// beneath the write roots read-only to jailed children.
    pub fn git_guard(mut self, guard: Arc<GitGuard>) -> Self {
        self.git = Some(guard);
        self
    }

    /// Show jailed children none of `home` (an empty directory of their
    /// own) but the write roots and the directories [`Self::show`]n.
    pub fn hide_home(mut self, home: impl AsRef<Path>) -> Self {
        self.home_hidden = Some(real_path(home.as_ref()));
        self
    }

    /// Show `dir` read-only to jailed children even where it lies in what
    /// the jail empties (`/tmp`) or hides (a hidden home).
    pub fn show(mut self, dir: impl AsRef<Path>) -> Self {
        self.shown.push(real_path(dir.as_ref()));
        self
    }

    /// Give each child a temp directory of its own in `dir`: its `TMPDIR`,
    /// writable, removed with everything in it once the child and every
    /// process it started are gone ([`super::scratch`]).
    pub fn scratch_in(mut self, dir: impl AsRef<Path>) -> Self {
        self.scratch_parent = Some(real_path(dir.as_ref()));
        self
    }

    /// Hide `path` from jailed children (an empty directory, or `/dev/null`).
    pub fn hide(mut self, path: impl Into<PathBuf>) -> Self {
        self.hidden.push(path.into());
        self
    }

    /// What one call's processes may take together (default: 1,024
    /// processes, 4 GiB of memory).
    pub fn limits(mut self, limits: ProcessLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Put each spawn's cgroup inside `session`'s, whose limits then hold
    /// for all of them together (a session's processes).
    pub(crate) fn in_session_cgroup(mut self, session: Arc<super::limits::SessionCgroup>) -> Self {
        self.session_cgroup = Some(session);
        self
    }

    /// Whether children run in the namespace jail (default: where it can).
    pub fn jail(mut self, mode: JailMode) -> Self {
        self.jail = mode;
        self
    }

    /// Let a command set the variable `name` itself (never a loader variable,
    /// `LD_*`).
    pub fn command_env(mut self, name: impl Into<String>) -> Self {
        self.command_env.push(name.into());
        self
    }

    /// Copy the allowlisted variables of this process's environment.
    pub fn host_env(mut self) -> Self {
        for (key, value) in std::env::vars_os() {
            let (Some(key), Some(value)) = (key.to_str(), value.to_str()) else {
                continue;
            };
            let allowed = ENV_ALLOWLIST.contains(&key)
                || ENV_ALLOWLIST_PREFIXES.iter().any(|p| key.starts_with(p));
            if allowed {
                self = self.env(key, value);
            }
        }
        self
    }

    /// Set a variable for every child (replacing an earlier value).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let key = key.into();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
        self
    }

    /// Expose the session id as `TOOLHOST_SESSION_ID`.
    pub fn session_id(mut self, id: Option<String>) -> Self {
        self.session_id = id;
        self
    }

    /// The timeout for commands that give none (`None`: they may run forever).
    pub fn default_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Refuse to spawn when Landlock is unavailable instead of running the
    /// child unconfined.
    pub fn require_landlock(mut self, required: bool) -> Self {
        self.require_landlock = required;
        self
    }

    /// Whether its children have the network.
    pub fn has_network(&self) -> bool {
        self.network
    }

    /// Let children use the network. Off by default: a program that can
    /// read files (Landlock leaves reading open) could otherwise send them
    /// anywhere. Enforced by a seccomp filter (no IPv4 or IPv6 socket can be
    /// created: `EACCES`) and, where Landlock has network rules (ABI ≥ 4,
    /// Linux 6.7), by refusing TCP `connect` and `bind` too.
    pub fn network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self.proxy = None;
        self
    }

    /// Let children reach only the hosts of `hosts`, through the host's
    /// egress proxy: in the jail, a network namespace of their own whose
    /// only way out is the proxy's port on its loopback
    /// ([`PROXY_PORT`], named in `HTTP_PROXY`, `HTTPS_PROXY` and
    /// `ALL_PROXY`); direct connections find no route. Needs the jail.
    pub fn network_hosts(mut self, hosts: NetPolicy) -> Self {
        self.network = false;
        self.proxy = Some(Arc::new(hosts));
        self
    }

    /// What one call's processes may take together.
    pub fn process_limits(&self) -> ProcessLimits {
        self.limits.unwrap_or_default()
    }

    /// Whether [`limits`](Self::limits) were set.
    pub(crate) fn has_limits(&self) -> bool {
        self.limits.is_some()
    }

    /// The `PATH` bare program names are looked up on.
    pub(crate) fn search_path(&self) -> &str {
        env_path(&self.env)
    }

    /// The places no program is taken from ([`Self::no_programs_from`]).
    pub(crate) fn program_exclusions(&self) -> &[PathBuf] {
        &self.no_programs_from
    }

    /// The timeout of commands that give none.
    pub fn command_timeout(&self) -> Option<Duration> {
        self.default_timeout
    }

    /// How children of this policy are confined on this machine.
    pub fn confinement(&self) -> Confinement {
        let abi = landlock().as_ref().ok().map(|abi| *abi as u32);
        let no_jail = match (self.jail, jail::support()) {
            (JailMode::Off, _) => "the jail is turned off".to_string(),
            (_, jail::Support::Available { .. }) => {
                return Confinement::Jail { landlock_abi: abi };
            }
            (_, jail::Support::Unavailable { reason }) => reason.clone(),
        };
        match (abi, landlock()) {
            (Some(abi), _) => Confinement::Landlock { abi, no_jail },
            (None, Err(reason)) => Confinement::Unconfined {
                reason: format!("{no_jail}; {reason}"),
            },
            (None, Ok(_)) => unreachable!("an ABI is known exactly when Landlock is"),
        }
    }

    /// Hand every spawn to `spawner`: the processes of a remote workspace,
    /// started by its service under its own confinement and this policy's
    /// [grant](Self::grant). Nothing of this policy's runs on this machine.
    pub fn remote(mut self, spawner: Arc<dyn super::RemoteSpawn>) -> Self {
        self.remote = Some(spawner);
        self
    }

    /// Only `programs` may run (a remote service's policy, given a grant).
    pub fn only_programs(mut self, programs: Vec<String>) -> Self {
        self.programs = programs;
        self
    }

    /// What this policy grants a process, as a remote service applies it.
    pub fn grant(&self) -> super::ProcessGrant {
        super::ProcessGrant {
            programs: self.programs.clone(),
            network: self.has_network(),
            command_env: self.command_env.clone(),
            default_timeout_ms: self.default_timeout.map(|t| t.as_millis() as u64),
        }
    }

    /// [`Self::spawn_with_input`] here, or, for a remote workspace's
    /// policy, by its service.
    pub async fn spawn_with_input_anywhere(
        &self,
        command: Command,
        input: Input,
        cancel: CancellationToken,
        spawned: &Spawned,
        usage: &Usage,
    ) -> Result<(Child, Option<InputEnd>), ProcessError> {
        let Some(spawner) = &self.remote else {
            return self.spawn_with_input(command, input, cancel, spawned, usage);
        };
        if let Some(refusal) = self.refusal_of(&command.program) {
            return Err(refusal);
        }
        let request = RemoteRequest {
            command,
            input,
            grant: self.grant(),
            cancel,
            hold: spawned.held(),
        };
        spawner.spawn(request).await
    }

    /// Why `program` may not be run under this policy, if it may not (it
    /// is not among the granted programs).
    pub fn refusal_of(&self, program: &str) -> Option<ProcessError> {
        (!self.programs.iter().any(|p| p == program)).then(|| {
            error(
                ProcessErrorCode::NotAllowed,
                format!(
                    "{program} is not a program this tool may run (allowed: {})",
                    self.programs.join(", ")
                ),
            )
        })
    }

    /// Start `command` (see the module docs for what the child gets). The
    /// child is stopped when `cancel` fires, when its timeout runs out, or
    /// when the returned [`Child`] is dropped. Needs a tokio runtime.
    pub fn spawn(
        &self,
        command: Command,
        cancel: CancellationToken,
    ) -> Result<Child, ProcessError> {
        self.spawn_for(command, cancel, &Spawned::default())
    }

    /// [`Self::spawn`], counting the child in `spawned` until it is gone.
    pub fn spawn_for(
        &self,
        command: Command,
        cancel: CancellationToken,
        spawned: &Spawned,
    ) -> Result<Child, ProcessError> {
        self.spawn_recording(command, cancel, spawned, &Usage::default())
    }

    /// [`Self::spawn_for`], recording the hosts its proxy connects it to
    /// (and refuses) in `usage`.
    pub fn spawn_recording(
        &self,
        command: Command,
        cancel: CancellationToken,
        spawned: &Spawned,
        usage: &Usage,
    ) -> Result<Child, ProcessError> {
        self.spawn_with_input(command, Input::Null, cancel, spawned, usage)
            .map(|(child, _)| child)
    }

    /// [`Self::spawn_recording`] with `input` as the child's stdin: the
    /// host's end of it (a pipe's, a terminal's) comes back beside the child.
    pub fn spawn_with_input(
        &self,
        command: Command,
        input: Input,
        cancel: CancellationToken,
        spawned: &Spawned,
        usage: &Usage,
    ) -> Result<(Child, Option<InputEnd>), ProcessError> {
        if self.remote.is_some() {
            // Never here instead: `spawn_with_input_anywhere` goes there.
            return Err(error(
                ProcessErrorCode::Other,
                format!(
                    "{} is not started: the workspace is remote, and its programs run there",
                    command.program
                ),
            ));
        }
        let Some(parent) = &self.scratch_parent else {
            return self.spawn_with(command, input, cancel, spawned, None, usage);
        };
        let scratch = super::scratch::Scratch::create(parent).map_err(|e| {
            error(
                ProcessErrorCode::Other,
                format!("cannot make a temp directory in {}: {e}", parent.display()),
            )
        })?;
        let own = scratch.path().to_path_buf();
        let policy = ProcessPolicy {
            scratch_parent: None,
            ..self.clone()
        }
        .write_root(&own)
        .cwd_root(&own)
        .env("TMPDIR", own.to_string_lossy());
        policy.spawn_with(command, input, cancel, spawned, Some(scratch), usage)
    }

    /// What `command` runs, where and with which environment, once it is
    /// admitted: a granted program, well-formed arguments and variables,
    /// pinned directories still the ones approved, a working directory
    /// inside the roots.
    fn admit(&self, command: &Command) -> Result<Admitted, ProcessError> {
        if let Some(refusal) = self.refusal_of(&command.program) {
            return Err(refusal);
        }
        let has_nul = |s: &str| s.contains('\0');
        if command.args.iter().any(|a| has_nul(a.as_str()))
            || command
                .env
                .iter()
                .any(|(k, v)| has_nul(k) || has_nul(v) || k.is_empty() || k.contains('='))
        {
            return Err(error(
                ProcessErrorCode::InvalidInput,
                "an argument or environment variable is malformed (empty name, '=' in a name, or a NUL byte)",
            ));
        }
        // A program would find at the path whatever was put there since.
        for dir in &self.pinned {
            if let Some(now) = dir.replaced() {
                return Err(error(
                    ProcessErrorCode::NotAllowed,
                    format!(
                        "{} is not started: the granted directory {} is no longer the one \
                         approved when toolhost started ({now}); restore it, or restart \
                         toolhost to resolve the grant again",
                        command.program,
                        dir.path().display()
                    ),
                ));
            }
        }
        let cwd = self.check_cwd(&command.cwd)?;
        let env = self.child_env(&command.env)?;
        // Found on the policy's PATH, never on one the command brings, and
        // never inside a place tools can write.
        let program = resolve_program(
            &command.program,
            env_path(&self.env),
            &self.no_programs_from,
        )?;
        Ok((program, cwd, env))
    }

    /// [`Self::spawn_for`] with the child's own temp directory, if it has one
    /// (removed when the child is gone).
    fn spawn_with(
        &self,
        command: Command,
        input: Input,
        cancel: CancellationToken,
        spawned: &Spawned,
        scratch: Option<super::scratch::Scratch>,
        usage: &Usage,
    ) -> Result<(Child, Option<InputEnd>), ProcessError> {
        // Held by the supervisor until the child is gone (released at once
        // if it never starts).
        let token = spawned.token();
        if cancel.is_cancelled() {
            return Err(error(ProcessErrorCode::Cancelled, "the call was cancelled"));
        }
        let (program, cwd, env) = self.admit(&command)?;
        // Each layer's prepare step, in the host (`confine`).
        let mut plan = Plan::prepare(self, &command.program)?;
        let timeout = command
            .timeout_ms
            .map(Duration::from_millis)
            .or(self.default_timeout);

        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            error(
                ProcessErrorCode::Other,
                "cannot supervise a process outside an async runtime",
            )
        })?;
        let cannot = |what: &str, e: &dyn std::fmt::Display| {
            error(
                ProcessErrorCode::Other,
                format!("cannot {what} for {}: {e}", command.program),
            )
        };
        // The pipes join the epoll set before the child exists: a child that
        // writes at once must still be seen in the order it wrote.
        let (pipes, epoll) = output_pipes().map_err(|e| cannot("create pipes", &e))?;
        let [(mut stdout, mut stdout_w), (stderr, mut stderr_w)] = pipes;
        let terminal = matches!(input, Input::Terminal { .. });
        let (stdin, input_end) = match input.prepare().map_err(|e| cannot("make its input", &e))? {
            None => (None, None),
            Some(prepared) => {
                if let Some(output) = prepared.output {
                    // A terminal carries both streams: its controller side is
                    // read in the stdout pipe's place, and the stderr pipe,
                    // whose write end nobody keeps, ends at once.
                    let dup = |fd: &OwnedFd| rustix::io::fcntl_dupfd_cloexec(fd, 0);
                    let swap = || -> io::Result<(OwnedFd, OwnedFd)> {
                        epoll::delete(epoll.get_ref(), &stdout)?;
                        rustix::io::ioctl_fionbio(&output, true)?;
                        epoll::add(
                            epoll.get_ref(),
                            &output,
                            epoll::EventData::new_u64(0),
                            epoll::EventFlags::IN,
                        )?;
                        Ok((dup(&prepared.child)?, dup(&prepared.child)?))
                    };
                    (stdout_w, stderr_w) = swap().map_err(|e| cannot("attach its terminal", &e))?;
                    stdout = output;
                }
                (Some(prepared.child), Some(prepared.end))
            }
        };
        let (cmd, jail_ends, jail_fds, proxy_end) = match plan.jail.take() {
            None => {
                let mut cmd = std::process::Command::new(&program);
                cmd.arg0(&command.program)
                    .args(&command.args)
                    .current_dir(&cwd)
                    .stdout(std::process::Stdio::from(stdout_w))
                    .stderr(std::process::Stdio::from(stderr_w));
                (cmd, None, None, None)
            }
            Some(bwrap) => {
                let io = (stdout_w, stderr_w);
                let (cmd, ends, fds, proxy) = confine::jail::command(
                    self, &bwrap, &mut plan, &program, &command, &cwd, io, terminal, &epoll,
                )
                .map_err(|e| cannot("set up the jail", &e))?;
                (cmd, Some(ends), Some(fds), proxy)
            }
        };
        let jailed = jail_ends.is_some();
        // Built here: the child may not allocate between fork and exec.
        let spawned = spawn_confined(cmd, env, (stdin, terminal), plan.in_child(), jailed);
        // The host's copies of the child's ends must close, or the pipes
        // never end.
        drop(jail_fds);
        let leader = spawned.map_err(|e| {
            let code = if e.kind() == io::ErrorKind::NotFound {
                ProcessErrorCode::NotFound
            } else {
                ProcessErrorCode::Other
            };
            error(code, format!("cannot run {}: {e}", command.program))
        })?;
        let pgid = Pid::from_child(&leader);
        // The jail's init hands over the proxy's listener, made in the
        // jail's network namespace; the host serves it until the call is
        // cancelled or the child is gone (the supervisor holds the guard).
        let proxy_stop = cancel.child_token();
        if let Some(end) = proxy_end {
            confine::network::serve_proxy(self, end, usage, &runtime, proxy_stop.clone());
        }
        let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
        let control = Arc::new(Control::default());
        let supervisor = Supervisor {
            leader: Some(leader),
            pgid,
            pipes: [Some(stdout), Some(stderr)],
            pidfd: rustix::process::pidfd_open(pgid, rustix::process::PidfdFlags::empty()).ok(),
            jail: jail_ends,
            cgroup: plan.cgroup.take(),
            limits: self.process_limits(),
            tx,
            pending: VecDeque::new(),
            control: control.clone(),
            cancel,
            deadline: timeout.map(|t| Instant::now() + t),
            timeout,
            exit: None,
            quiet_until: None,
            last_busy: None,
            spawned: Some(token),
            scratch,
            _proxy: Some(proxy_stop.drop_guard()),
        };
        if let Some(pidfd) = &supervisor.pidfd
            && let Err(e) = epoll::add(
                epoll.get_ref(),
                pidfd,
                epoll::EventData::new_u64(TOKEN_PIDFD),
                epoll::EventFlags::IN,
            )
        {
            drop(supervisor); // Its destructor kills the group.
            return Err(cannot("watch the process", &e));
        }
        runtime.spawn(supervisor.run(epoll));
        let child = Child {
            events: rx,
            control,
            last: None,
            held: None,
        };
        Ok((child, input_end))
    }

    /// The real working directory, checked against the roots.
    pub(super) fn check_cwd(&self, cwd: &str) -> Result<PathBuf, ProcessError> {
        if !Path::new(cwd).is_absolute() {
            return Err(error(
                ProcessErrorCode::InvalidInput,
                format!("working directory {cwd} is not an absolute path"),
            ));
        }
        let real = match Path::new(cwd).canonicalize() {
            Ok(real) => real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(error(
                    ProcessErrorCode::CwdNotFound,
                    format!("working directory {cwd} does not exist"),
                ));
            }
            Err(e) => {
                return Err(error(
                    ProcessErrorCode::InvalidInput,
                    format!("working directory {cwd}: {e}"),
                ));
            }
        };
        if !real.is_dir() {
            return Err(error(
                ProcessErrorCode::InvalidInput,
                format!("working directory {cwd} is not a directory"),
            ));
        }
        // The boundary that matters is Landlock's on writes; this keeps a
        // tool from starting elsewhere by accident or by a symlink.
        if !self.cwd_roots.iter().any(|root| real.starts_with(root)) {
            return Err(error(
                ProcessErrorCode::InvalidInput,
                format!("working directory {cwd} is outside the granted roots"),
            ));
        }
        Ok(real)
    }

    /// Allowlisted host variables, then the command's, then the session id.
    /// A command may set only the variables the policy lets it, and never a
    /// loader variable (`LD_PRELOAD` would run its own code in a granted
    /// program).
    pub(super) fn child_env(
        &self,
        extra: &[(String, String)],
    ) -> Result<Vec<(String, String)>, ProcessError> {
        for (name, _) in extra {
            if name.starts_with("LD_") {
                return Err(error(
                    ProcessErrorCode::NotAllowed,
                    format!("{name}: a command may not set loader variables (LD_*)"),
                ));
            }
            if !self.command_env.contains(name) {
                return Err(error(
                    ProcessErrorCode::NotAllowed,
                    format!(
                        "{name}: this tool may not set that environment variable (grant it \
                         with env = [\"{name}\"])"
                    ),
                ));
            }
        }
        let mut env: Vec<(String, String)> = Vec::new();
        let mut set = |k: &str, v: &str| {
            env.retain(|(key, _)| key != k);
            env.push((k.to_string(), v.to_string()));
        };
        // A secret's source variable never reaches a child, whatever
        // allowlist or grant would pass it (`LC_TOKEN` as a source).
        let host_env = self
            .env
            .iter()
            .filter(|(k, _)| !self.protected.hides_env(k));
        for (k, v) in host_env.chain(extra) {
            set(k, v);
        }
        // Every HTTP client's way out, and nothing exempt from it.
        if self.proxy.is_some() {
            let url = format!("http://127.0.0.1:{PROXY_PORT}");
            for name in PROXY_VARS {
                set(name, &url);
            }
            set("NO_PROXY", "");
            set("no_proxy", "");
        }
        match &self.session_id {
            Some(id) => set(SESSION_ID_VAR, id),
            None => env.retain(|(k, _)| k != SESSION_ID_VAR),
        }
        if !env.iter().any(|(k, _)| k == "PATH") {
            env.push(("PATH".into(), DEFAULT_PATH.into()));
        }
        Ok(env)
    }
}

/// How a policy's children are confined on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confinement {
    /// The namespace jail, with Landlock inside where the kernel has it.
    Jail { landlock_abi: Option<u32> },
    /// No jail (`no_jail` says why): Landlock limits writes, and nothing more.
    Landlock { abi: u32, no_jail: String },
    /// Neither the jail nor Landlock: children can write wherever the user can.
    Unconfined { reason: String },
}

impl Confinement {
    /// Whether children run in the namespace jail.
    pub fn is_jail(&self) -> bool {
        matches!(self, Confinement::Jail { .. })
    }
}

impl std::fmt::Display for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Confinement::Jail { landlock_abi } => {
                write!(
                    f,
                    "namespace jail (bubblewrap): programs see the system read-only, write only \
                     their write roots, never the secret stores or other processes, and end \
                     with their call"
                )?;
                match landlock_abi {
                    Some(abi) => write!(f, "; Landlock ABI {abi} inside"),
                    None => Ok(()),
                }
            }
            Confinement::Landlock { abi, no_jail } => write!(
                f,
                "no namespace jail ({no_jail}). Landlock ABI {abi} keeps writes inside the write \
                 roots, but programs can read the user's files and secret stores, see other \
                 processes, and may outlive their call"
            ),
            Confinement::Unconfined { reason } => write!(
                f,
                "{reason}: programs run unconfined and can write wherever this user can"
            ),
        }
    }
}

pub(super) fn real_path(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

pub(super) fn env_path(env: &[(String, String)]) -> &str {
    env.iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or(DEFAULT_PATH)
}

/// The place of `places` that `file` lies in, by its path or, if that is
/// in none, by its real path (a link elsewhere into such a place is in it
/// too); with the path that lies there.
pub(crate) fn place_of<'p>(file: &Path, places: &'p [PathBuf]) -> Option<(PathBuf, &'p Path)> {
    let within = |path: &Path| places.iter().find(|place| path.starts_with(place));
    if let Some(place) = within(file) {
        return Some((file.to_path_buf(), place));
    }
    let real = file.canonicalize().ok()?;
    let place = within(&real)?;
    Some((real, place))
}

/// The executable `program` names: itself when it is a path, else the first
/// executable file of that name on `path`. Nothing inside `excluded` (places
/// tools can write) is ever the answer: a bare name is looked up past them,
/// an absolute path there is refused.
pub(crate) fn resolve_program(
    program: &str,
    path: &str,
    excluded: &[PathBuf],
) -> Result<PathBuf, ProcessError> {
    let executable = |p: &Path| {
        rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok()
            && p.metadata().map(|m| m.is_file()).unwrap_or(false)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        if !p.is_absolute() {
            return Err(error(
                ProcessErrorCode::InvalidInput,
                format!("{program} is neither a name nor an absolute path"),
            ));
        }
        if let Some((_, place)) = place_of(&p, excluded) {
            return Err(error(
                ProcessErrorCode::NotAllowed,
                format!(
                    "{program} is not run: it lies inside {}, where tools can write",
                    place.display()
                ),
            ));
        }
        if executable(&p) {
            return Ok(p);
        }
        return Err(error(
            ProcessErrorCode::NotFound,
            format!("{program} does not exist or is not executable"),
        ));
    }
    let mut skipped = Vec::new();
    for dir in path
        .split(':')
        .filter(|dir| !dir.is_empty() && Path::new(dir).is_absolute())
    {
        let candidate = Path::new(dir).join(program);
        if !executable(&candidate) {
            continue;
        }
        match place_of(&candidate, excluded) {
            Some(_) => skipped.push(candidate.display().to_string()),
            None => return Ok(candidate),
        }
    }
    let message = if skipped.is_empty() {
        format!("{program} was not found on PATH")
    } else {
        format!(
            "{program} was not found on PATH outside the places tools can write (never run: {})",
            skipped.join(", ")
        )
    };
    Err(error(ProcessErrorCode::NotFound, message))
}

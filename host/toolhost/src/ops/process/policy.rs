//! What a child may be given, and the spawn that gives it exactly that: the
//! [`ProcessPolicy`], its [`Confinement`] on this machine, and program lookup.

use super::*;
use crate::ops::http_client::SystemResolver;
use crate::ops::http_client::proxy::{NetPolicy, Proxy};
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

/// The proxy's listener, which the jail's init made in the jail's network
/// namespace and sends on `end`; none if the jail ended first.
async fn receive_listener(end: OwnedFd) -> Option<tokio::net::TcpListener> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    rustix::io::ioctl_fionbio(&end, true).ok()?;
    #[allow(unsafe_code)]
    // SAFETY: the AsyncFd owns this OwnedFd: open, and the same socket, for
    // as long as it lives.
    let end =
        unsafe { AsyncFd::register_with_interest(end, tokio::io::Interest::READABLE) }.ok()?;
    loop {
        let mut ready = end.readable().await.ok()?;
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut byte = [0u8; 1];
        let read = rustix::net::recvmsg(
            end.get_ref(),
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        match read {
            Err(Errno::AGAIN) => {
                ready.clear_ready();
                continue;
            }
            Err(_) => return None,
            Ok(_) => {}
        }
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(mut fds) = message
                && let Some(fd) = fds.next()
            {
                let listener = std::net::TcpListener::from(fd);
                listener.set_nonblocking(true).ok()?;
                return tokio::net::TcpListener::from_std(listener).ok();
            }
        }
        return None;
    }
}

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
    programs: Vec<String>,
    cwd_roots: Vec<PathBuf>,
    write_roots: Vec<PathBuf>,
    /// Readable in the jail's [`View::SystemOnly`].
    read_roots: Vec<PathBuf>,
    env: Vec<(String, String)>,
    /// Variables a command may set itself.
    command_env: Vec<String>,
    session_id: Option<String>,
    default_timeout: Option<Duration>,
    require_landlock: bool,
    network: bool,
    /// Network by name: the hosts its children reach through the host's
    /// egress proxy, and nothing else (`crate::ops::http_client::proxy`).
    proxy: Option<Arc<NetPolicy>>,
    jail: JailMode,
    view: Option<View>,
    protected: ProtectedPaths,
    hidden: Vec<PathBuf>,
    /// `$HOME`, when jailed children see none of it but what is shown.
    home_hidden: Option<PathBuf>,
    /// Shown read-only within the emptied directories or a hidden home.
    shown: Vec<PathBuf>,
    /// `None`: [`ProcessLimits::default`].
    limits: Option<ProcessLimits>,
    /// The session's cgroup each spawn's own lies in (session processes).
    session_cgroup: Option<Arc<super::limits::SessionCgroup>>,
    /// Knows the repositories beneath the write roots, whose configuration
    /// and hooks the jail keeps read-only.
    git: Option<Arc<GitGuard>>,
    /// Where each child gets a temp directory of its own.
    scratch_parent: Option<PathBuf>,
    /// Roots given as the directories approved ([`Self::read_root_pinned`]).
    pinned: Vec<GrantedDir>,
    /// Places tools can write, where no program is taken from.
    no_programs_from: Vec<PathBuf>,
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

    /// bubblewrap and what it supports (`--disable-userns`, the init's own
    /// mounts), when children run in the jail; an error when the jail is
    /// required and cannot run.
    pub(super) fn jail_to_use(&self) -> Result<Option<(&'static Path, bool, bool)>, ProcessError> {
        match (self.jail, jail::support()) {
            (JailMode::Off, _) => Ok(None),
            (
                _,
                jail::Support::Available {
                    bwrap,
                    disable_userns,
                    init_mounts,
                },
            ) => Ok(Some((bwrap.as_path(), *disable_userns, *init_mounts))),
            (JailMode::Required, jail::Support::Unavailable { reason }) => Err(error(
                ProcessErrorCode::Other,
                format!("this host requires the process jail to run programs, but {reason}"),
            )),
            (JailMode::Auto, jail::Support::Unavailable { .. }) => Ok(None),
        }
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
        let jail = self.jail_to_use()?;
        if self.proxy.is_some() && jail.is_none() {
            let why = match jail::support() {
                jail::Support::Unavailable { reason } => reason.clone(),
                jail::Support::Available { .. } => "the jail is turned off".to_string(),
            };
            return Err(error(
                ProcessErrorCode::Other,
                format!(
                    "{} is not started: network by name needs the process jail (its own \
                     network namespace), and {why}",
                    command.program
                ),
            ));
        }
        let ruleset = self.ruleset(jail.is_some())?;
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
        // Built here: the child may not allocate between fork and exec.
        // Through the proxy, a child makes IPv4 sockets in a namespace whose
        // only listener is the proxy's.
        let socket_filter = (!self.network && self.proxy.is_none())
            .then(inet_socket_filter)
            .flatten();
        // The call's cgroup (where this machine lets the host make one);
        // elsewhere the jail's init sets resource limits.
        let cgroup = CallCgroup::create_in(self.session_cgroup.as_ref(), self.process_limits())
            .ok()
            .flatten();
        // Outside the jail, the Landlock ruleset is applied before exec;
        // inside, by the jail's init (a Landlock domain may not mount).
        let mut proxy_end = None;
        let (cmd, jail_ends, jail_fds, ruleset) = match jail {
            None => {
                let mut cmd = std::process::Command::new(&program);
                cmd.arg0(&command.program)
                    .args(&command.args)
                    .current_dir(&cwd)
                    .stdout(std::process::Stdio::from(stdout_w))
                    .stderr(std::process::Stdio::from(stderr_w));
                (cmd, None, None, ruleset)
            }
            Some((bwrap, disable_userns, init_mounts)) => {
                let (cmd, ends, fds, proxy) = self
                    .jailed(
                        bwrap,
                        (disable_userns, init_mounts),
                        &program,
                        &command,
                        &cwd,
                        (stdout_w, stderr_w),
                        terminal,
                        ruleset.and_then(Option::<OwnedFd>::from),
                        (cgroup.is_none()).then_some(self.process_limits()),
                        &epoll,
                    )
                    .map_err(|e| cannot("set up the jail", &e))?;
                proxy_end = proxy;
                (cmd, Some(ends), Some(fds), None)
            }
        };
        let jailed = jail_ends.is_some();
        let procs = cgroup
            .as_ref()
            .map(CallCgroup::procs_fds)
            .unwrap_or_default();
        let spawned = spawn_confined(
            cmd,
            env,
            (stdin, terminal),
            ruleset,
            socket_filter,
            procs,
            jailed,
        );
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
        if let (Some(end), Some(hosts)) = (proxy_end, &self.proxy) {
            let proxy = Arc::new(Proxy {
                policy: hosts.clone(),
                resolver: Arc::new(SystemResolver),
                events: Arc::new(usage.clone()),
            });
            let stop = proxy_stop.clone();
            runtime.spawn(async move {
                if let Some(listener) = receive_listener(end).await {
                    proxy.serve(listener, stop).await;
                }
            });
        }
        let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
        let control = Arc::new(Control::default());
        let supervisor = Supervisor {
            leader: Some(leader),
            pgid,
            pipes: [Some(stdout), Some(stderr)],
            pidfd: rustix::process::pidfd_open(pgid, rustix::process::PidfdFlags::empty()).ok(),
            jail: jail_ends,
            cgroup,
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

    /// bubblewrap's command for a jailed spawn of `program`, and the host's
    /// ends of the jail's pipes (already in `epoll`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn jailed(
        &self,
        bwrap: &Path,
        (disable_userns, init_mounts): (bool, bool),
        program: &Path,
        command: &Command,
        cwd: &Path,
        (out, err): (OwnedFd, OwnedFd),
        terminal: bool,
        landlock: Option<OwnedFd>,
        rlimits: Option<ProcessLimits>,
        epoll: &AsyncFd<OwnedFd>,
    ) -> io::Result<(
        std::process::Command,
        JailEnds,
        jail::JailFds,
        Option<OwnedFd>,
    )> {
        let (status_r, status_w) = jail::pipe()?;
        let (control_r, control_w) = jail::pipe()?;
        let (setup_r, setup_w) = jail::pipe()?;
        let (info_r, info_w) = jail::pipe()?;
        for (fd, token) in [
            (&status_r, TOKEN_STATUS),
            (&setup_r, TOKEN_SETUP),
            (&info_r, TOKEN_INFO),
        ] {
            rustix::io::ioctl_fionbio(fd, true)?;
            epoll::add(
                epoll.get_ref(),
                fd,
                epoll::EventData::new_u64(token),
                epoll::EventFlags::IN,
            )?;
        }
        let mut fds = jail::JailFds::new(status_w, control_r, out, err, info_w, landlock)?;
        if terminal {
            fds.terminal();
        }
        // The init sends the proxy's listener back on a socket pair.
        let proxy = match self.proxy {
            Some(_) => {
                let (host, jail) = rustix::net::socketpair(
                    rustix::net::AddressFamily::UNIX,
                    rustix::net::SocketType::STREAM,
                    rustix::net::SocketFlags::CLOEXEC,
                    None,
                )?;
                fds.proxy(jail)?;
                Some(host)
            }
            None => None,
        };
        let sources = fds.hold(&self.pinned)?;
        let spec = jail::JailSpec {
            view: self.view.unwrap_or(View::Everything),
            read_roots: &self.read_roots,
            write_roots: &self.write_roots,
            protected: &self.protected,
            hidden: &self.hidden,
            network: self.network,
            cwd,
            git: self.git.as_deref(),
            home_hidden: self.home_hidden.as_deref(),
            shown: &self.shown,
            sources: &sources,
        };
        let (args, mounts) = jail::bwrap_args(&spec, disable_userns, init_mounts);
        let mut cmd = jail::jail_command(
            bwrap,
            args,
            &fds,
            rlimits,
            &mounts,
            program,
            &command.program,
            &command.args,
        );
        // bubblewrap's own errors (a mount it cannot make) and the init's.
        cmd.current_dir(cwd)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::from(setup_w));
        fds.pass_to(&mut cmd);
        Ok((
            cmd,
            JailEnds {
                status: Some(status_r),
                status_line: Vec::new(),
                setup: Some(setup_r),
                info: Some(info_r),
                info_text: Vec::new(),
                control: Some(control_w),
                ns_init: None,
                ns_gone: false,
                leader_status: None,
            },
            fds,
            proxy,
        ))
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

    /// The Landlock ruleset for a child, built in the parent (where
    /// allocating and opening the roots is fine). `None` when unavailable.
    /// In the jail, whose mounts decide what may be read (and whose own
    /// `/proc` and emptied directories no rule made outside could name),
    /// it handles changes only: a second layer on writes, scopes and the
    /// network.
    pub(super) fn ruleset(
        &self,
        jailed: bool,
    ) -> Result<Option<landlock::RulesetCreated>, ProcessError> {
        use landlock::{
            Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr,
            RulesetCreatedAttr, Scope,
        };
        let abi = match landlock() {
            Ok(abi) => *abi,
            Err(reason) if self.require_landlock => {
                return Err(error(
                    ProcessErrorCode::Other,
                    format!("this host requires Landlock to run programs, but {reason}"),
                ));
            }
            Err(_) => return Ok(None),
        };
        let fail = |e: &dyn std::fmt::Display| {
            error(
                ProcessErrorCode::Other,
                format!("cannot build the Landlock ruleset: {e}"),
            )
        };
        // Everything that changes the filesystem is handled; ioctls on
        // devices are left alone (terminal queries on inherited descriptors).
        let read = AccessFs::from_read(abi);
        let mut handled = AccessFs::from_all(abi) & !AccessFs::IoctlDev;
        if jailed {
            handled &= !read;
        }
        let device = AccessFs::from_file(abi) & handled;
        let mut ruleset = Ruleset::default()
            .handle_access(handled)
            .map_err(|e| fail(&e))?;
        if abi >= landlock::ABI::V6 {
            // No signals to processes outside the child's domain (the host),
            // and no abstract Unix socket created outside it (a session
            // bus or container daemon listening there runs commands
            // unconfined).
            ruleset = ruleset
                .scope(Scope::Signal | Scope::AbstractUnixSocket)
                .map_err(|e| fail(&e))?;
        }
        if !self.network && abi >= landlock::ABI::V4 {
            // Handled with no rule allowing a port: every TCP connect and
            // bind is refused, so a child cannot send what it reads away
            // (through the proxy: but a connect to its port).
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(|e| fail(&e))?;
        }
        let mut created = ruleset.create().map_err(|e| fail(&e))?;
        if self.proxy.is_some() && abi >= landlock::ABI::V4 {
            created = created
                .add_rule(landlock::NetPort::new(PROXY_PORT, AccessNet::ConnectTcp))
                .map_err(|e| fail(&e))?;
        }
        if !jailed {
            created = created
                .add_rule(PathBeneath::new(
                    PathFd::new("/").map_err(|e| fail(&e))?,
                    read,
                ))
                .map_err(|e| fail(&e))?;
        }
        for root in &self.write_roots {
            // The directory approved, where it is pinned; else what the path
            // names now.
            if let Some(pinned) = self.pinned.iter().find(|p| p.path() == root) {
                created = created
                    .add_rule(PathBeneath::new(pinned.fd(), handled))
                    .map_err(|e| fail(&e))?;
                continue;
            }
            let Ok(fd) = PathFd::new(root) else {
                continue; // A missing root grants nothing.
            };
            created = created
                .add_rule(PathBeneath::new(fd, handled))
                .map_err(|e| fail(&e))?;
        }
        // Devices every shell script writes to (`2>/dev/null`).
        for dev in ["/dev/null", "/dev/zero", "/dev/full"] {
            if let Ok(fd) = PathFd::new(dev) {
                created = created
                    .add_rule(PathBeneath::new(fd, device))
                    .map_err(|e| fail(&e))?;
            }
        }
        Ok(Some(created))
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

/// The Landlock ABI this host uses (the newest it knows, up to V7), probed
/// once; or why Landlock cannot be used.
pub fn landlock() -> &'static Result<landlock::ABI, String> {
    static PROBE: OnceLock<Result<landlock::ABI, String>> = OnceLock::new();
    PROBE.get_or_init(|| {
        use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
        // The public API has no version query: the newest ABI whose access
        // rights the kernel accepts as a hard requirement is the one.
        for abi in [
            ABI::V7,
            ABI::V6,
            ABI::V5,
            ABI::V4,
            ABI::V3,
            ABI::V2,
            ABI::V1,
        ] {
            let created = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))
                .and_then(|r| r.create());
            if created.is_ok() {
                return Ok(abi);
            }
        }
        Err("Landlock is not available on this kernel".to_string())
    })
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

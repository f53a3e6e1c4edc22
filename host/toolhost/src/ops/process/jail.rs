//! The namespace jail around every child process, built on bubblewrap
//! (`bwrap`, the unprivileged sandbox of Flatpak).
//!
//! # What a jailed child sees
//!
//! * Its own user, PID, IPC, UTS and (where it can) cgroup namespaces, with
//!   every capability dropped and no further user namespaces; a fresh
//!   `/proc` that shows only the jail's processes, so neither the host's
//!   environment nor any other process of the user can be read.
//! * A mount namespace: the system read-only ([`View::Everything`] for the
//!   shell tools: all of `/`; [`View::SystemOnly`] for programs granted to
//!   extensions: `/usr`, `/etc`, the library and binary directories, then
//!   only their `fs-read` grants); the write roots writable; the protected
//!   paths within them read-only again; the secret stores hidden (empty
//!   read-only directories, `/dev/null` for files); `/tmp`, `/var/tmp`,
//!   `/run` and `/dev/shm` empty, so no Unix socket of the user's session
//!   (bus, container daemon, terminal multiplexer) is reachable there.
//! * Without the network, its own network namespace (loopback only);
//!   Landlock's scope keeps abstract Unix sockets outside unreachable either
//!   way, and its rules and the socket filter stay on as a second layer.
//!
//! # Lifetime and exact status
//!
//! bubblewrap runs `toolhost-jail-init` (`host/jail-init`, embedded, passed
//! as a sealed memfd) as the jail's first process; it starts the command,
//! reports its exact end on a pipe, relays SIGTERM, and keeps the jail open
//! until the host says the call is over. When that process ends, or the host
//! thread that started bubblewrap is gone (the host exited, however), the
//! PID namespace ends and the kernel kills every process in it: nothing
//! started in a call outlives it, whatever it did with `setsid`, double forks
//! or `nohup`.

use crate::ops::protect::guard::CodeKind;
use crate::ops::protect::{GitGuard, ProtectedPaths};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Descriptors handed to a jail are copied to numbers at least this high,
/// clear of the standard ones.
const FD_MIN: i32 = 10;

/// The jail's init program, built for this target by the build script.
const INIT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jail-init"));

/// What of the filesystem a jailed child sees beside its roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Everything, read-only (the shell tools: Pi's bash reads everywhere).
    Everything,
    /// Only the system's own directories (programs granted to extensions).
    SystemOnly,
}

/// The system directories [`View::SystemOnly`] shows, where they exist.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Directories emptied in every jail: where sockets of the user's session
/// and other programs' temporary files live.
const EMPTIED_DIRS: &[&str] = &["/tmp", "/var/tmp", "/run", "/dev/shm"];

/// One jailed spawn's view of the filesystem and the network.
#[derive(Clone, Debug)]
pub struct JailSpec<'a> {
    pub view: View,
    /// Readable (within [`View::SystemOnly`]; everything is readable in
    /// [`View::Everything`]).
    pub read_roots: &'a [PathBuf],
    pub write_roots: &'a [PathBuf],
    /// Made read-only again where they lie within a write root.
    pub protected: &'a ProtectedPaths,
    /// Hidden: replaced by an empty directory or `/dev/null`.
    pub hidden: &'a [PathBuf],
    pub network: bool,
    pub cwd: &'a Path,
    /// Knows the repositories beneath the write roots: their configuration,
    /// redirections and hooks stay read-only, their git directories pinned.
    pub git: Option<&'a GitGuard>,
    /// `$HOME`, replaced by an empty directory of the jail's own.
    pub home_hidden: Option<&'a Path>,
    /// Shown read-only, within the emptied directories or the hidden home.
    pub shown: &'a [PathBuf],
    /// Roots bound from a descriptor the jail holds rather than from their
    /// path: `(root, /proc/self/fd/N)` ([`JailFds::hold`]).
    pub sources: &'a [(PathBuf, PathBuf)],
}

impl JailSpec<'_> {
    /// Where the root `root` is bound from.
    fn source<'p>(&'p self, root: &'p Path) -> &'p std::ffi::OsStr {
        self.sources
            .iter()
            .find(|(r, _)| r == root)
            .map_or(root.as_os_str(), |(_, source)| source.as_os_str())
    }
}

/// Whether this machine can run the jail; probed once per process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    Available {
        /// The bubblewrap executable.
        bwrap: PathBuf,
        /// It knows `--disable-userns` (0.8 and later) and the init does not
        /// mount (which that option prevents).
        disable_userns: bool,
        /// The init may make the protective mounts itself (bubblewrap lets
        /// it keep `CAP_SYS_ADMIN` in the jail, the kernel has the new mount
        /// API): much cheaper than bubblewrap's own.
        init_mounts: bool,
    },
    Unavailable {
        /// Why not, and how to change it.
        reason: String,
    },
}

/// The jail support of this machine: bubblewrap found and a probe jail run
/// to its end (user namespaces may be disabled, or bubblewrap refused by a
/// security module).
pub fn support() -> &'static Support {
    static PROBE: OnceLock<Support> = OnceLock::new();
    PROBE.get_or_init(|| {
        let Some(bwrap) = find_bwrap() else {
            return Support::Unavailable {
                reason: "bubblewrap (bwrap) is not installed: install it (Debian and Ubuntu: \
                         apt install bubblewrap; Fedora: dnf install bubblewrap)"
                    .into(),
            };
        };
        // A working jail found before on this very machine is not probed
        // again (see `probe_cache`).
        let cache = crate::files::default_cache_dir();
        let machine = super::probe_cache::machine(&bwrap);
        if let Some(known) = cache
            .as_deref()
            .and_then(|dir| super::probe_cache::recall(dir, &machine))
        {
            return Support::Available {
                bwrap,
                disable_userns: known.disable_userns,
                init_mounts: known.init_mounts,
            };
        }
        let found = probe(bwrap);
        if let (
            Some(dir),
            Support::Available {
                disable_userns,
                init_mounts,
                ..
            },
        ) = (&cache, &found)
        {
            let working = super::probe_cache::Working {
                disable_userns: *disable_userns,
                init_mounts: *init_mounts,
            };
            super::probe_cache::remember(dir, &machine, &working);
        }
        found
    })
}

fn probe(bwrap: PathBuf) -> Support {
    // The likeliest first: one probe on a current system. The init's own
    // mounts exclude `--disable-userns` (bubblewrap then runs the init in a
    // nested user namespace that does not own the mount namespace); the
    // init's seccomp filter refuses new user namespaces instead.
    let mut attempt = Err(String::new());
    for (userns, mounts) in [(false, true), (true, false), (false, false)] {
        attempt = probe_jail(&bwrap, userns, mounts).map(|()| (userns, mounts));
        if attempt.is_ok() {
            break;
        }
    }
    match attempt {
        Ok((disable_userns, init_mounts)) => Support::Available {
            bwrap,
            disable_userns,
            init_mounts,
        },
        Err(reason) => Support::Unavailable {
            reason: format!(
                "bubblewrap cannot start a jail here ({reason}); user namespaces may be \
                 disabled (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile \
                 for bwrap)"
            ),
        },
    }
}

/// `bwrap` on the usual paths of the system (never the user's own `PATH`,
/// which a tool could have changed).
fn find_bwrap() -> Option<PathBuf> {
    ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .iter()
        .map(PathBuf::from)
        .find(|p| rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok())
}

/// Start `/bin/true` in a minimal jail through the init and check it says
/// `exit 0`; `disable_userns` adds that option (bubblewrap 0.8 and later),
/// `init_mounts` lets the init make a read-only bind and a hiding mount.
fn probe_jail(bwrap: &Path, disable_userns: bool, init_mounts: bool) -> Result<(), String> {
    let truth = ["/bin/true", "/usr/bin/true"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("no /bin/true to probe with")?;
    let e = |e: io::Error| e.to_string();
    let (status_r, status_w) = pipe().map_err(e)?;
    let (control_r, control_w) = pipe().map_err(e)?;
    let (_out_r, out_w) = pipe().map_err(e)?;
    let (_err_r, err_w) = pipe().map_err(e)?;
    let (_info_r, info_w) = pipe().map_err(e)?;
    let fds = JailFds::new(status_w, control_r, out_w, err_w, info_w, None).map_err(e)?;
    let mut args = namespace_args(false, disable_userns, init_mounts);
    args.extend(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    let mounts = if init_mounts {
        vec![
            (MountOp::ReadOnly, PathBuf::from("/etc")),
            (MountOp::Hide, PathBuf::from("/tmp")),
        ]
    } else {
        Vec::new()
    };
    let mut cmd = jail_command(
        bwrap,
        args.into_iter().map(OsString::from).collect(),
        &fds,
        None,
        &mounts,
        Path::new(truth),
        "true",
        &[],
    );
    cmd.env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    fds.pass_to(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
    drop(cmd);
    drop(fds);
    // The status pipe ends once the init reported (or the jail failed);
    // then closing the control pipe ends the jail.
    let mut status = String::new();
    let _ = std::fs::File::from(status_r).read_to_string(&mut status);
    drop(control_w);
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let _ = wait_bounded(&mut child, Duration::from_secs(10));
    if status.trim() == "exit 0" {
        Ok(())
    } else {
        Err(first_line(&stderr)
            .unwrap_or("the probe jail reported nothing")
            .to_string())
    }
}

fn first_line(s: &str) -> Option<&str> {
    s.lines().map(str::trim).find(|l| !l.is_empty())
}

fn wait_bounded(child: &mut std::process::Child, limit: Duration) -> io::Result<()> {
    let start = std::time::Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            return child.wait().map(|_| ());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A pipe whose both ends are close-on-exec.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// The descriptors a jail starts with, as the jail sees them: each a
/// close-on-exec copy numbered at least [`FD_MIN`], kept open across exec
/// by [`JailFds::pass_to`], and named to the init on its command line.
pub(crate) struct JailFds {
    /// The status pipe's write end.
    status: OwnedFd,
    /// The control pipe's read end.
    control: OwnedFd,
    /// The command's stdout and stderr.
    out: OwnedFd,
    err: OwnedFd,
    /// bubblewrap's `--info-fd`.
    info: OwnedFd,
    /// The init program.
    init: OwnedFd,
    /// A Landlock ruleset the init restricts itself (and so the command) with.
    landlock: Option<OwnedFd>,
    /// Where the init sends the egress proxy's listener.
    proxy: Option<OwnedFd>,
    /// The command's stdin is a terminal: its session's controlling one.
    terminal: bool,
    /// Granted directories bubblewrap binds by descriptor.
    held: Vec<OwnedFd>,
}

impl JailFds {
    pub(crate) fn new(
        status: OwnedFd,
        control: OwnedFd,
        out: OwnedFd,
        err: OwnedFd,
        info: OwnedFd,
        landlock: Option<OwnedFd>,
    ) -> io::Result<JailFds> {
        let high = |fd: &OwnedFd| -> io::Result<OwnedFd> {
            Ok(rustix::io::fcntl_dupfd_cloexec(fd, FD_MIN)?)
        };
        Ok(JailFds {
            status: high(&status)?,
            control: high(&control)?,
            out: high(&out)?,
            err: high(&err)?,
            info: high(&info)?,
            init: rustix::io::fcntl_dupfd_cloexec(init_fd()?, FD_MIN)?,
            landlock: landlock.as_ref().map(high).transpose()?,
            proxy: None,
            terminal: false,
            held: Vec::new(),
        })
    }

    /// Have the init make the egress proxy's listener in the jail's
    /// network namespace and send it on `socket`.
    pub(crate) fn proxy(&mut self, socket: OwnedFd) -> io::Result<()> {
        self.proxy = Some(rustix::io::fcntl_dupfd_cloexec(&socket, FD_MIN)?);
        Ok(())
    }

    /// Have the init give the command its stdin, a terminal, as the
    /// controlling terminal of a session of its own.
    pub(crate) fn terminal(&mut self) {
        self.terminal = true;
    }

    /// Pass these granted directories to the jail too; for each, its path
    /// and the source bubblewrap binds it from: `/proc/self/fd/N` of the
    /// descriptor, which names the directory itself whatever lies at its
    /// path now (what bubblewrap's own `--bind-fd` does, as a plain bind
    /// that older bubblewraps take too).
    pub(crate) fn hold(
        &mut self,
        dirs: &[crate::ops::fs::GrantedDir],
    ) -> io::Result<Vec<(PathBuf, PathBuf)>> {
        use std::os::fd::AsRawFd;
        let mut sources = Vec::new();
        for dir in dirs {
            let fd = rustix::io::fcntl_dupfd_cloexec(dir.fd(), FD_MIN)?;
            let source = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
            sources.push((dir.path().to_path_buf(), source));
            self.held.push(fd);
        }
        Ok(sources)
    }

    fn raw(&self) -> Vec<i32> {
        use std::os::fd::AsRawFd;
        [
            &self.status,
            &self.control,
            &self.out,
            &self.err,
            &self.info,
            &self.init,
        ]
        .into_iter()
        .chain(self.landlock.as_ref())
        .chain(self.proxy.as_ref())
        .chain(&self.held)
        .map(|fd| fd.as_raw_fd())
        .collect()
    }

    /// The init and its options, as bubblewrap's command.
    fn init_args(&self) -> Vec<OsString> {
        use std::os::fd::AsRawFd;
        let mut args = vec![OsString::from(format!(
            "/proc/self/fd/{}",
            self.init.as_raw_fd()
        ))];
        let mut option = |name: &str, fd: &OwnedFd| {
            args.push(name.into());
            args.push(fd.as_raw_fd().to_string().into());
        };
        option("--status", &self.status);
        option("--control", &self.control);
        option("--out", &self.out);
        option("--err", &self.err);
        option("--self", &self.init);
        if let Some(fd) = &self.landlock {
            option("--landlock", fd);
        }
        if let Some(fd) = &self.proxy {
            option("--proxy", fd);
        }
        if self.terminal {
            args.extend(["--terminal".into(), "0".into()]);
        }
        args
    }

    /// Let exactly these descriptors (and stdio) reach the jail: in the
    /// child, every other descriptor becomes close-on-exec (whatever an
    /// embedder left open), and these lose that flag.
    pub(crate) fn pass_to(&self, cmd: &mut std::process::Command) {
        super::sys::pass_only(cmd, self.raw());
    }

    /// bubblewrap's `--info-fd` argument.
    fn info_arg(&self) -> [OsString; 2] {
        use std::os::fd::AsRawFd;
        ["--info-fd".into(), self.info.as_raw_fd().to_string().into()]
    }
}

/// bubblewrap running the init, which runs `program` (named `arg0`) with
/// `args`; `jail_args` are bubblewrap's own (namespaces, mounts).
#[allow(clippy::too_many_arguments)]
pub(crate) fn jail_command(
    bwrap: &Path,
    jail_args: Vec<OsString>,
    fds: &JailFds,
    rlimits: Option<super::ProcessLimits>,
    mounts: &[(MountOp, PathBuf)],
    program: &Path,
    arg0: &str,
    args: &[String],
) -> std::process::Command {
    let mut cmd = std::process::Command::new(bwrap);
    cmd.args(jail_args)
        .args(fds.info_arg())
        .args(fds.init_args());
    for (op, path) in mounts {
        cmd.arg(match op {
            MountOp::Pin => "--pin",
            MountOp::ReadOnly => "--ro",
            MountOp::Hide => "--hide",
        })
        .arg(path);
    }
    if let Some(limits) = rlimits {
        // Without a cgroup: resource limits, set by the init for the command.
        cmd.arg("--nproc")
            .arg(limits.max_processes.to_string())
            .arg("--as-bytes")
            .arg(limits.memory_bytes.to_string());
    }
    cmd.arg("--").arg(program).arg(arg0).args(args);
    cmd
}

/// The init program, as a sealed memfd made once per process.
pub(crate) fn init_fd() -> io::Result<BorrowedFd<'static>> {
    static INIT_FD: OnceLock<Result<OwnedFd, String>> = OnceLock::new();
    let fd = INIT_FD.get_or_init(|| make_init_fd().map_err(|e| e.to_string()));
    match fd {
        Ok(fd) => Ok(fd.as_fd()),
        Err(e) => Err(io::Error::other(e.clone())),
    }
}

fn make_init_fd() -> io::Result<OwnedFd> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let fd = rustix::fs::memfd_create(
        "toolhost-jail-init",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut written = 0;
    while written < INIT.len() {
        written += rustix::io::write(&fd, &INIT[written..])?;
    }
    // Sealed: nobody, not even this process, can change the program now.
    rustix::fs::fcntl_add_seals(
        &fd,
        SealFlags::WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
    )?;
    Ok(fd)
}

/// The namespace options every jail gets; with `init_mounts`, the init keeps
/// what it needs to make the protective mounts (and drops it before the
/// command starts).
fn namespace_args(network: bool, disable_userns: bool, init_mounts: bool) -> Vec<&'static str> {
    let mut args = vec![
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ];
    if init_mounts {
        // To mount, to drop the rest for good, and (kept by the init alone)
        // for the socket broker to take a socket from an undumpable program.
        args.extend([
            "--cap-add",
            "CAP_SYS_ADMIN",
            "--cap-add",
            "CAP_SETPCAP",
            "--cap-add",
            "CAP_SYS_PTRACE",
        ]);
    }
    if disable_userns {
        // No user namespace inside the jail's own (bubblewrap 0.8+).
        args.push("--disable-userns");
    }
    if !network {
        args.push("--unshare-net");
    }
    args
}

/// A protective mount (see `host/jail-init/src/mounts.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum MountOp {
    /// Bound onto itself: a mount point, which no rename can move.
    Pin,
    ReadOnly,
    /// An empty read-only directory or `/dev/null` on top.
    Hide,
}

/// bubblewrap's arguments for `spec`, up to (not including) the init and
/// its options, and the protective mounts for the init to make
/// ([`protective_mounts`]; with `init_mounts` false, bubblewrap makes them,
/// slowly, and the list is empty). Mounts are made in order, later ones over
/// earlier ones: the view, the emptied directories, the read and write
/// roots, then the protective ones, so that no root uncovers them.
pub(crate) fn bwrap_args(
    spec: &JailSpec<'_>,
    disable_userns: bool,
    init_mounts: bool,
) -> (Vec<OsString>, Vec<(MountOp, PathBuf)>) {
    let mut args: Vec<OsString> = namespace_args(spec.network, disable_userns, init_mounts)
        .into_iter()
        .map(OsString::from)
        .collect();
    let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(|s| s.to_os_string()));
    let os = |s: &str| std::ffi::OsString::from(s);
    match spec.view {
        View::Everything => push(&[&os("--ro-bind"), &os("/"), &os("/")]),
        View::SystemOnly => {
            push(&[&os("--tmpfs"), &os("/")]);
            for dir in SYSTEM_DIRS {
                if Path::new(dir).exists() {
                    push(&[&os("--ro-bind"), &os(dir), &os(dir)]);
                }
            }
        }
    }
    push(&[&os("--dev"), &os("/dev"), &os("--proc"), &os("/proc")]);
    for dir in EMPTIED_DIRS {
        if Path::new(dir).is_dir() {
            push(&[&os("--tmpfs"), &os(dir)]);
        }
    }
    if let Some(home) = spec.home_hidden {
        // Empty, and (by Landlock, which knows only the write roots) not
        // writable: the roots and the temp directory are where commands write.
        push(&[&os("--tmpfs"), home.as_os_str()]);
    }
    // Shown within what was emptied or hidden (the host's temp directory,
    // where full-output files are; what a hidden home shows).
    for dir in spec.shown.iter().filter(|d| d.is_dir()) {
        push(&[&os("--ro-bind"), dir.as_os_str(), dir.as_os_str()]);
    }
    if spec.view == View::SystemOnly {
        for root in spec.read_roots {
            push(&[&os("--ro-bind"), spec.source(root), root.as_os_str()]);
        }
    }
    for root in spec.write_roots {
        push(&[&os("--bind"), spec.source(root), root.as_os_str()]);
    }
    let mounts = protective_mounts(spec);
    let mounts = if init_mounts {
        mounts
    } else {
        for (op, path) in &mounts {
            let p = path.as_os_str();
            match op {
                MountOp::Pin => push(&[&os("--bind"), p, p]),
                MountOp::ReadOnly => push(&[&os("--ro-bind"), p, p]),
                MountOp::Hide if path.is_dir() => {
                    push(&[&os("--tmpfs"), p, &os("--remount-ro"), p])
                }
                MountOp::Hide => push(&[&os("--ro-bind"), &os("/dev/null"), p]),
            }
        }
        Vec::new()
    };
    push(&[&os("--chdir"), spec.cwd.as_os_str()]);
    (args, mounts)
}

/// The protective mounts of `spec`, in the order they must be made:
///
/// * every directory on the way from a write root to one of toolhost's own
///   protected paths or to a hidden secret, and every git directory beneath
///   a write root, pinned (outermost first), so that no rename of an
///   ancestor frees the name;
/// * those protected paths, and the configuration files, redirections and
///   hooks directories of the repositories the git guard knows, read-only;
/// * the hidden paths (secret stores) last: where they would be seen (in
///   the system-only view, only within a root).
pub(crate) fn protective_mounts(spec: &JailSpec<'_>) -> Vec<(MountOp, PathBuf)> {
    let within = |path: &Path| {
        spec.write_roots
            .iter()
            .find(|root| path.starts_with(root) && path != root.as_path())
    };
    let real_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    let exists = |path: &Path| std::fs::symlink_metadata(path).is_ok();
    let mut pins: BTreeSet<PathBuf> = BTreeSet::new();
    let mut read_only: BTreeSet<PathBuf> = BTreeSet::new();
    // Every directory on the way from its write root to `path`, pinned: a
    // rename of one would move `path` out from under its name.
    let mut pin_the_way = |path: &Path| {
        let Some(root) = within(path) else { return };
        for ancestor in path.ancestors().skip(1) {
            if ancestor == root.as_path() {
                break;
            }
            if real_dir(ancestor) {
                pins.insert(ancestor.to_path_buf());
            }
        }
    };
    for path in spec.protected.paths() {
        pin_the_way(path);
        if within(path).is_some() && exists(path) {
            read_only.insert(path.clone());
        }
    }
    // A hidden secret is judged by its name outside the jail too (`read`,
    // searches, resources): renaming `~/.config` to `~/.x` would let `read`
    // open `~/.x/gh-token`. Its way is pinned as toolhost's own files' is.
    for path in spec.hidden.iter().filter(|p| exists(p)) {
        pin_the_way(path);
    }
    match spec.git {
        Some(guard) => {
            let (repositories, code) = guard.known();
            for repo in &repositories {
                for dir in [&repo.git_dir, &repo.common_dir] {
                    if within(dir).is_some() && real_dir(dir) {
                        pins.insert(dir.clone());
                    }
                }
                if within(&repo.hooks).is_some() && real_dir(&repo.hooks) {
                    read_only.insert(repo.hooks.clone());
                }
            }
            for file in code.iter().filter(|f| f.kind != CodeKind::Hook) {
                if within(&file.path).is_some() && exists(&file.path) {
                    read_only.insert(file.path.clone());
                }
            }
        }
        None => {
            // Without a guard: each root's own repository.
            for root in spec.write_roots {
                let git = root.join(".git");
                if real_dir(&git) {
                    pins.insert(git.clone());
                    for name in ["config", "hooks"] {
                        if exists(&git.join(name)) {
                            read_only.insert(git.join(name));
                        }
                    }
                }
            }
        }
    }
    // Hidden where they would be seen: everywhere in the whole view; in the
    // system-only one, within a root (elsewhere a mount point would only
    // make their parent directories appear).
    let seen = |path: &Path| match spec.view {
        View::Everything => true,
        View::SystemOnly => spec
            .read_roots
            .iter()
            .chain(spec.write_roots)
            .any(|root| path.starts_with(root)),
    };
    let hidden = spec
        .hidden
        .iter()
        .filter(|p| seen(p) && exists(p))
        .map(|p| (MountOp::Hide, p.clone()));
    pins.into_iter()
        .map(|p| (MountOp::Pin, p))
        .chain(read_only.into_iter().map(|p| (MountOp::ReadOnly, p)))
        .chain(hidden)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// A workspace at a fake home with a repository, toolhost's own files
    /// and secret stores, and its jail spec.
    fn home_workspace(tmp: &Path) -> (PathBuf, ProtectedPaths, Vec<PathBuf>) {
        let ws = tmp.canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::write(ws.join("toolhost.toml"), "").unwrap();
        std::fs::create_dir_all(ws.join(".config/toolhost")).unwrap();
        std::fs::create_dir_all(ws.join(".ssh")).unwrap();
        std::fs::write(ws.join(".netrc"), "").unwrap();
        let protected = ProtectedPaths::new([
            ws.join("toolhost.toml"),
            ws.join(".toolhost"),
            ws.join(".config/toolhost"),
        ]);
        let hidden = vec![ws.join(".ssh"), ws.join(".netrc"), ws.join("missing")];
        (ws, protected, hidden)
    }

    #[test]
    fn mounts_come_in_an_order_no_root_can_undo() {
        let tmp = tempfile::tempdir().unwrap();
        let (ws, protected, hidden) = home_workspace(tmp.path());
        let roots = [ws.clone()];
        let spec = JailSpec {
            view: View::Everything,
            read_roots: &[],
            write_roots: &roots,
            protected: &protected,
            hidden: &hidden,
            network: false,
            cwd: &ws,
            git: None,
            home_hidden: None,
            shown: &[],
            sources: &[],
        };
        // Made by bubblewrap (where the init cannot make them).
        let (args, mounts) = bwrap_args(&spec, true, false);
        assert!(mounts.is_empty());
        let args = strings(&args);
        let w = ws.display().to_string();
        let at = |needle: &[&str]| {
            args.windows(needle.len())
                .position(|win| win == needle)
                .unwrap_or_else(|| panic!("{needle:?} missing in {args:?}"))
        };
        assert!(at(&["--unshare-net"]) < at(&["--ro-bind", "/", "/"]));
        let bind = at(&["--bind", &w, &w]);
        assert!(
            at(&["--tmpfs", "/tmp"]) < bind,
            "roots come after the emptied dirs"
        );
        let p = |rel: &str| format!("{w}/{rel}");
        let (toml, config, hooks) = (p("toolhost.toml"), p(".git/config"), p(".git/hooks"));
        let (dot_config, user, dot_git) = (p(".config"), p(".config/toolhost"), p(".git"));
        let pin = at(&["--bind", &dot_config, &dot_config]);
        assert!(bind < pin, "the way to the user configuration is pinned");
        assert!(pin < at(&["--ro-bind", &user, &user]));
        assert!(bind < at(&["--bind", &dot_git, &dot_git]));
        assert!(at(&["--bind", &dot_git, &dot_git]) < at(&["--ro-bind", &config, &config]));
        assert!(bind < at(&["--ro-bind", &toml, &toml]));
        assert!(bind < at(&["--ro-bind", &hooks, &hooks]));
        let (ssh, netrc) = (p(".ssh"), p(".netrc"));
        assert!(at(&["--ro-bind", &toml, &toml]) < at(&["--tmpfs", &ssh, "--remount-ro", &ssh]));
        assert!(bind < at(&["--ro-bind", "/dev/null", &netrc]));
        assert!(
            !args
                .iter()
                .any(|a| a.ends_with("missing") || a.ends_with(".toolhost")),
            "only what exists"
        );
        assert_eq!(args[args.len() - 2..], ["--chdir".to_string(), w.clone()]);

        // Made by the init: the same mounts, in the same order.
        let (args, mounts) = bwrap_args(&spec, true, true);
        let args = strings(&args);
        assert!(args.windows(2).any(|w| w == ["--cap-add", "CAP_SYS_ADMIN"]));
        assert!(!args.contains(&toml), "{args:?}");
        let order: Vec<(MountOp, String)> = mounts
            .iter()
            .map(|(op, path)| (*op, path.display().to_string()))
            .collect();
        assert_eq!(
            order,
            [
                (MountOp::Pin, dot_config),
                (MountOp::Pin, dot_git),
                (MountOp::ReadOnly, user),
                (MountOp::ReadOnly, config),
                (MountOp::ReadOnly, hooks),
                (MountOp::ReadOnly, toml),
                (MountOp::Hide, ssh),
                (MountOp::Hide, netrc),
            ]
        );
    }

    #[test]
    fn a_system_only_view_shows_the_system_and_the_grants() {
        let (_tmp, docs) = crate::testing::real_temp_dir();
        let reads = [docs.clone()];
        let spec = JailSpec {
            view: View::SystemOnly,
            read_roots: &reads,
            write_roots: &[],
            protected: &ProtectedPaths::default(),
            hidden: &[],
            network: true,
            cwd: &docs,
            git: None,
            home_hidden: None,
            shown: &[],
            sources: &[],
        };
        let args = strings(&bwrap_args(&spec, true, true).0);
        let d = docs.display().to_string();
        assert!(args.windows(2).any(|w| w == ["--tmpfs", "/"]));
        assert!(args.windows(3).any(|w| w == ["--ro-bind", "/usr", "/usr"]));
        assert!(
            args.windows(3)
                .any(|w| w == ["--ro-bind", d.as_str(), d.as_str()])
        );
        assert!(!args.iter().any(|a| a == "--unshare-net"));
        assert!(!args.windows(3).any(|w| w == ["--ro-bind", "/", "/"]));
    }
}

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

use crate::ops::protect::ProtectedPaths;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
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

/// The user's secret stores under `home`, hidden from every jailed child:
/// keys, cloud and cluster credentials, registry and forge tokens.
pub fn secret_stores(home: &Path) -> Vec<PathBuf> {
    [
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".config/gcloud",
        ".kube",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
        ".config/gh",
        ".npmrc",
        ".pypirc",
        ".cargo/credentials",
        ".cargo/credentials.toml",
    ]
    .iter()
    .map(|p| home.join(p))
    .collect()
}

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
}

/// Whether this machine can run the jail; probed once per process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    Available {
        /// The bubblewrap executable.
        bwrap: PathBuf,
        /// It knows `--disable-userns` (0.8 and later).
        disable_userns: bool,
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
    PROBE.get_or_init(probe)
}

fn probe() -> Support {
    let Some(bwrap) = find_bwrap() else {
        return Support::Unavailable {
            reason: "bubblewrap (bwrap) is not installed: install it (Debian and Ubuntu: \
                     apt install bubblewrap; Fedora: dnf install bubblewrap)"
                .into(),
        };
    };
    let attempt = probe_jail(&bwrap, true)
        .map(|()| true)
        .or_else(|_| probe_jail(&bwrap, false).map(|()| false));
    match attempt {
        Ok(disable_userns) => Support::Available {
            bwrap,
            disable_userns,
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
/// `exit 0`; `disable_userns` adds that option (bubblewrap 0.8 and later).
fn probe_jail(bwrap: &Path, disable_userns: bool) -> Result<(), String> {
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
    let mut args = namespace_args(false, disable_userns);
    args.extend(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    let mut cmd = jail_command(
        bwrap,
        args.into_iter().map(OsString::from).collect(),
        &fds,
        None,
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
        })
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
pub(crate) fn jail_command(
    bwrap: &Path,
    jail_args: Vec<OsString>,
    fds: &JailFds,
    rlimits: Option<super::ProcessLimits>,
    program: &Path,
    arg0: &str,
    args: &[String],
) -> std::process::Command {
    let mut cmd = std::process::Command::new(bwrap);
    cmd.args(jail_args)
        .args(fds.info_arg())
        .args(fds.init_args());
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

/// The namespace options every jail gets.
fn namespace_args(network: bool, disable_userns: bool) -> Vec<&'static str> {
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
    if disable_userns {
        // No user namespace inside the jail's own (bubblewrap 0.8+).
        args.push("--disable-userns");
    }
    if !network {
        args.push("--unshare-net");
    }
    args
}

/// bubblewrap's arguments for `spec`, up to (not including) the init and
/// its options. Mounts are made in order, later ones over earlier ones:
/// the view, the emptied directories, the read and write roots, then the
/// protected paths read-only and the hidden ones last, so that no root
/// uncovers either.
pub(crate) fn bwrap_args(spec: &JailSpec<'_>, disable_userns: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = namespace_args(spec.network, disable_userns)
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
    if spec.view == View::SystemOnly {
        for root in spec.read_roots {
            push(&[&os("--ro-bind"), root.as_os_str(), root.as_os_str()]);
        }
    }
    for root in spec.write_roots {
        push(&[&os("--bind"), root.as_os_str(), root.as_os_str()]);
    }
    for path in protected_within(spec.protected, spec.write_roots) {
        push(&[&os("--ro-bind"), path.as_os_str(), path.as_os_str()]);
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
    for path in spec.hidden.iter().filter(|p| seen(p)) {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => {
                push(&[
                    &os("--tmpfs"),
                    path.as_os_str(),
                    &os("--remount-ro"),
                    path.as_os_str(),
                ]);
            }
            Ok(_) => push(&[&os("--ro-bind"), &os("/dev/null"), path.as_os_str()]),
            Err(_) => {}
        }
    }
    push(&[&os("--chdir"), spec.cwd.as_os_str()]);
    args
}

/// The protected paths that exist within `roots` (and so must be mounted
/// read-only again): the listed ones, and each root's own `.git/hooks` and
/// `.git/config`.
fn protected_within(protected: &ProtectedPaths, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let candidates = protected.paths().iter().cloned().chain(
        roots
            .iter()
            .flat_map(|r| [r.join(".git/hooks"), r.join(".git/config")]),
    );
    for path in candidates {
        let inside = roots.iter().any(|r| path.starts_with(r));
        if inside && path.exists() && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn mounts_come_in_an_order_no_root_can_undo() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join("toolhost.toml"), "").unwrap();
        std::fs::create_dir_all(ws.join("home/.ssh")).unwrap();
        std::fs::write(ws.join("home/.netrc"), "").unwrap();
        let protected = ProtectedPaths::new([ws.join("toolhost.toml"), ws.join(".toolhost")]);
        let hidden = [
            ws.join("home/.ssh"),
            ws.join("home/.netrc"),
            ws.join("missing"),
        ];
        let roots = [ws.clone()];
        let spec = JailSpec {
            view: View::Everything,
            read_roots: &[],
            write_roots: &roots,
            protected: &protected,
            hidden: &hidden,
            network: false,
            cwd: &ws,
        };
        let args = strings(&bwrap_args(&spec, true));
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
        let toml = format!("{w}/toolhost.toml");
        let hooks = format!("{w}/.git/hooks");
        assert!(bind < at(&["--ro-bind", &toml, &toml]));
        assert!(bind < at(&["--ro-bind", &hooks, &hooks]));
        let ssh = format!("{w}/home/.ssh");
        let netrc = format!("{w}/home/.netrc");
        assert!(bind < at(&["--tmpfs", &ssh, "--remount-ro", &ssh]));
        assert!(bind < at(&["--ro-bind", "/dev/null", &netrc]));
        assert!(
            !args.iter().any(|a| a.ends_with("missing")),
            "only what exists"
        );
        assert!(
            !args.iter().any(|a| a.ends_with(".toolhost")),
            "only what exists"
        );
        assert_eq!(args[args.len() - 2..], ["--chdir".to_string(), w.clone()]);
    }

    #[test]
    fn a_system_only_view_shows_the_system_and_the_grants() {
        let tmp = tempfile::tempdir().unwrap();
        let docs = tmp.path().canonicalize().unwrap();
        let reads = [docs.clone()];
        let spec = JailSpec {
            view: View::SystemOnly,
            read_roots: &reads,
            write_roots: &[],
            protected: &ProtectedPaths::default(),
            hidden: &[],
            network: true,
            cwd: &docs,
        };
        let args = strings(&bwrap_args(&spec, true));
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

//! toolhost's jail init: the first program bubblewrap starts in a call's jail
//! (pid 2 of the jail's PID namespace, below bubblewrap's reaping pid 1).
//!
//! The host cannot learn a jailed command's exact end from bubblewrap, which
//! reports "killed by SIGKILL" and "exited with 137" alike, and bubblewrap
//! ends the whole jail the moment its first process exits, which would cut
//! off Pi's quiet period for the output of background children. So this
//! program stands between them:
//!
//! * it restricts itself with the host's Landlock ruleset (a descriptor) and
//!   the resource limits it is given, which the command then inherits;
//! * it starts the command in a process group of its own, on the output pipes;
//! * it writes the command's exact end to the status pipe, one line:
//!   `exit N`, `signal N` or `exec-failed ERRNO`;
//! * `T` on the control pipe sends SIGTERM to the command's group, `K`
//!   SIGKILL;
//! * `E` on the control pipe, or the pipe closing (the host is gone), ends
//!   this program, and with it the jail: bubblewrap kills every process
//!   left in it.
//!
//! Before anything else it makes the jail's protective mounts (`--pin`,
//! `--ro`, `--hide`; see [`mounts`]) while it holds `CAP_SYS_ADMIN` in the
//! jail's user namespace, then drops every capability for good (but
//! `CAP_SYS_PTRACE` over the jail's own processes, which the socket broker
//! needs to take a socket from a program that made itself undumpable, such
//! as `ssh`). The command itself starts with none, under the socket
//! broker's seccomp filter ([`broker`]): every `connect` it makes is made by
//! this program, and a Unix socket outside the jail's own roots is refused.
//!
//! Descriptors, set up by the host and named on the command line: 0 and 1
//! `/dev/null`, 2 the jail's error pipe, `--status` the status pipe,
//! `--control` the control pipe, `--out` and `--err` the command's stdout
//! and stderr, `--self` this program itself (a memfd), `--landlock` a
//! Landlock ruleset, and `--proxy` a socket on which it sends the host the
//! egress proxy's listener, made on the jail's own loopback.
//!
//! Usage: `toolhost-jail-init --status FD --control FD --out FD --err FD
//! [--self FD] [--landlock FD] [--proxy FD] [--nproc N] [--as-bytes N] [--pin PATH]… [--ro PATH]…
//! [--hide PATH]… -- PROGRAM ARG0 [ARG...]`

mod broker;
mod mounts;

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStringExt;

/// The descriptors this program works with.
struct Fds {
    status: i32,
    control: i32,
    out: i32,
    err: i32,
}

/// The capability the socket broker keeps (see the module docs).
const CAP_SYS_PTRACE: u32 = 19;

/// `landlock_restrict_self` (the same number on every architecture).
const SYS_LANDLOCK_RESTRICT_SELF: libc::c_long = 446;

/// Report a setup failure on the jail's error pipe and give up.
fn fail(message: &str) -> ! {
    let text = format!("toolhost jail: {message}\n");
    write_all(2, text.as_bytes());
    std::process::exit(125);
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live buffer of the given length.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

fn number(args: &[OsString], i: usize) -> u64 {
    args.get(i)
        .and_then(|a| a.to_str())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| fail("a number is missing after an option"))
}

fn cstring(arg: &OsString) -> CString {
    CString::new(arg.clone().into_vec()).unwrap_or_else(|_| fail("an argument holds a NUL byte"))
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64, what: &str) {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `limit` lives across the call.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        fail(&format!("cannot limit {what}: errno {}", errno()));
    }
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let (mut landlock, mut nproc, mut as_bytes, mut self_fd) = (None, None, None, None);
    let mut proxy = None;
    let mut terminal = false;
    let mut protect: Vec<(mounts::Op, CString)> = Vec::new();
    let mut fds = Fds {
        status: -1,
        control: -1,
        out: -1,
        err: -1,
    };
    let mut i = 0;
    loop {
        let fd = || number(&args, i + 1) as i32;
        match args.get(i).and_then(|a| a.to_str()) {
            Some("--status") => fds.status = fd(),
            Some("--control") => fds.control = fd(),
            Some("--out") => fds.out = fd(),
            Some("--err") => fds.err = fd(),
            Some("--self") => self_fd = Some(fd()),
            Some("--landlock") => landlock = Some(fd()),
            Some("--proxy") => proxy = Some(fd()),
            // The command's stdin is a terminal: its controlling one.
            Some("--terminal") => terminal = true,
            Some("--nproc") => nproc = Some(number(&args, i + 1)),
            Some("--as-bytes") => as_bytes = Some(number(&args, i + 1)),
            Some(option @ ("--pin" | "--ro" | "--hide")) => {
                let op = match option {
                    "--pin" => mounts::Op::Pin,
                    "--ro" => mounts::Op::ReadOnly,
                    _ => mounts::Op::Hide,
                };
                let path = args
                    .get(i + 1)
                    .unwrap_or_else(|| fail("a path is missing after an option"));
                protect.push((op, cstring(path)));
            }
            Some("--") => break,
            _ => fail("usage: toolhost-jail-init [options] -- PROGRAM ARG0 [ARG...]"),
        }
        i += 2;
    }
    if [fds.status, fds.control, fds.out, fds.err].contains(&-1) {
        fail("--status, --control, --out and --err are required");
    }
    let command = &args[i + 1..];
    if command.len() < 2 {
        fail("no command to run");
    }
    if let Err(e) = mounts::apply(&protect) {
        fail(&e);
    }
    // Before Landlock, which lets the command connect to this port only,
    // and lets nothing here bind one.
    if let Some(channel) = proxy {
        proxy_listener(channel);
    }
    // Whatever bubblewrap gave this program to mount with, nothing of it
    // reaches the command; this program keeps only what the broker needs,
    // where it was given.
    if mounts::drop_capabilities(Some(CAP_SYS_PTRACE)).is_err()
        && let Err(e) = mounts::drop_capabilities(None)
    {
        fail(&e);
    }
    let program = cstring(&command[0]);
    let argv: Vec<CString> = command[1..].iter().map(cstring).collect();
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());

    // SAFETY: plain system calls on descriptors and integers.
    unsafe {
        if let Some(fd) = self_fd {
            libc::close(fd);
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            fail(&format!("cannot set no_new_privs: errno {}", errno()));
        }
        if let Some(fd) = landlock {
            if libc::syscall(SYS_LANDLOCK_RESTRICT_SELF, fd, 0) != 0 {
                fail(&format!(
                    "cannot apply the Landlock ruleset: errno {}",
                    errno()
                ));
            }
            libc::close(fd);
        }
    }
    if let Some(n) = nproc {
        set_limit(libc::RLIMIT_NPROC, n, "the number of processes");
    }
    if let Some(bytes) = as_bytes {
        set_limit(libc::RLIMIT_AS, bytes, "memory");
    }

    // A close-on-exec pipe tells whether the command's exec succeeded: it
    // closes on success and carries the errno on failure.
    let mut exec_pipe = [0i32; 2];
    // SAFETY: `exec_pipe` has room for two descriptors.
    if unsafe { libc::pipe2(exec_pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        fail(&format!("cannot create a pipe: errno {}", errno()));
    }
    // The command sends its seccomp notification descriptor back on this.
    let mut channel = [0i32; 2];
    // SAFETY: `channel` has room for two descriptors.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            channel.as_mut_ptr(),
        )
    } != 0
    {
        fail(&format!("cannot create a socket pair: errno {}", errno()));
    }
    // Built before the fork: the child may not allocate.
    let filter = broker::filter();
    // SAFETY: this program is single-threaded, so the child may run
    // anything; it only makes system calls before exec or _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        fail(&format!("cannot fork: errno {}", errno()));
    }
    if pid == 0 {
        // SAFETY: descriptor juggling and exec in the child.
        unsafe {
            // A session of its own with the terminal, or a process group.
            if terminal {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
            } else {
                libc::setpgid(0, 0);
            }
            libc::dup2(fds.out, 1);
            libc::dup2(fds.err, 2);
            let child_failed = |e: i32| -> ! {
                let e = e.to_ne_bytes();
                libc::write(exec_pipe[1], e.as_ptr().cast(), e.len());
                libc::_exit(127);
            };
            // No capability reaches the command (the broker's stays here).
            if mounts::drop_capabilities(None).is_err() {
                child_failed(libc::EPERM);
            }
            match broker::install(&filter) {
                Ok(Some(listener)) => {
                    if !broker::send_fd(channel[1], listener) {
                        child_failed(errno());
                    }
                    libc::close(listener);
                }
                // No seccomp notifications on this kernel: no broker.
                Ok(None) => {}
                Err(e) => child_failed(e),
            }
            // Nothing but stdio reaches the command (the exec pipe is
            // close-on-exec and stays until exec).
            for fd in [
                fds.status,
                fds.control,
                fds.out,
                fds.err,
                exec_pipe[0],
                channel[0],
                channel[1],
            ] {
                libc::close(fd);
            }
            let first = exec_pipe[1].max(2) + 1;
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                (exec_pipe[1] - 1).max(2) as u32,
                0,
            );
            libc::syscall(libc::SYS_close_range, first as u32, u32::MAX, 0);
            libc::execv(program.as_ptr(), argv_ptrs.as_ptr());
            let e = errno().to_ne_bytes();
            libc::write(exec_pipe[1], e.as_ptr().cast(), e.len());
            libc::_exit(127);
        }
    }
    // Only the command holds its output pipes now: they end when it and its
    // children are done with them.
    // SAFETY: closing descriptors this process owns.
    unsafe {
        libc::close(fds.out);
        libc::close(fds.err);
        libc::close(exec_pipe[1]);
        libc::close(channel[1]);
    }
    // Sent before the command's exec, or never (its exec failed, or the
    // kernel has no seccomp notifications).
    let listener = broker::receive_fd(channel[0]);
    // SAFETY: closing a descriptor this process owns.
    unsafe { libc::close(channel[0]) };
    let mut exec_errno = [0u8; 4];
    // SAFETY: reading into a live buffer.
    let n = unsafe { libc::read(exec_pipe[0], exec_errno.as_mut_ptr().cast(), 4) };
    if n == 4 {
        let status = format!("exec-failed {}\n", i32::from_ne_bytes(exec_errno));
        write_all(fds.status, status.as_bytes());
    }
    if n == 4 {
        // The child is gone already; its `exit 127` is not the command's.
        let mut status = 0;
        // SAFETY: waiting for our own child; closing our own descriptor.
        unsafe {
            libc::waitpid(pid, &mut status, 0);
            libc::close(fds.status);
        }
    }
    supervise(&fds, pid, n != 4, listener);
}

/// The egress proxy's port on the loopback of the jail's own network
/// namespace: the host's `PROXY_PORT`.
const PROXY_PORT: u16 = 3128;

/// Listen on 127.0.0.1:[`PROXY_PORT`] in the jail's network namespace, and
/// send the listener to the host on `channel`, which serves it from outside
/// (an accepted connection keeps the jail's namespace; the host connects
/// onward from its own).
fn proxy_listener(channel: i32) {
    // SAFETY: plain socket calls on a descriptor this process owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            fail(&format!(
                "cannot make the proxy's socket: errno {}",
                errno()
            ));
        }
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: PROXY_PORT.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), len) != 0 {
            fail(&format!("cannot bind the proxy's port: errno {}", errno()));
        }
        if libc::listen(fd, 128) != 0 {
            fail(&format!(
                "cannot listen on the proxy's port: errno {}",
                errno()
            ));
        }
        if !broker::send_fd(channel, fd) {
            fail(&format!(
                "cannot hand the proxy's listener over: errno {}",
                errno()
            ));
        }
        libc::close(fd);
        libc::close(channel);
    }
}

/// Report the command's end, obey the control pipe until told to end, and
/// answer the broker's notifications while any process is under its filter.
fn supervise(
    fds: &Fds,
    pid: libc::pid_t,
    mut running: bool,
    listener: Option<std::os::fd::OwnedFd>,
) -> ! {
    use std::os::fd::AsRawFd;
    let mut listener = listener;
    // SAFETY: pidfd_open takes a pid and flags.
    let pidfd = if running {
        unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32 }
    } else {
        -1
    };
    loop {
        let mut polled = [
            libc::pollfd {
                fd: fds.control,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if running { pidfd } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: listener.as_ref().map_or(-1, |l| l.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without pidfds, look for the command's end every 20 ms.
        let timeout = if running && pidfd < 0 { 20 } else { -1 };
        // SAFETY: `fds` is a live array of three pollfds.
        let ready = unsafe { libc::poll(polled.as_mut_ptr(), 3, timeout) };
        if polled[2].revents & libc::POLLIN != 0
            && let Some(l) = &listener
            && !broker::serve_one(l.as_raw_fd())
        {
            listener = None;
        } else if polled[2].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            // No process is under the filter any more.
            listener = None;
        }
        if ready < 0 && errno() != libc::EINTR {
            std::process::exit(0);
        }
        if running && (polled[1].revents != 0 || pidfd < 0) && reap(fds.status, pid, pidfd < 0) {
            running = false;
        }
        if polled[0].revents != 0 {
            let mut byte = [0u8; 1];
            // SAFETY: reading one byte into a live buffer.
            let n = unsafe { libc::read(fds.control, byte.as_mut_ptr().cast(), 1) };
            match (n, byte[0]) {
                (1, b'T') => signal_group(pid, libc::SIGTERM),
                (1, b'K') => signal_group(pid, libc::SIGKILL),
                (n, _) if n < 0 && errno() == libc::EINTR => {}
                // `E`, end of file or an error: the host is done (or gone).
                _ => std::process::exit(0),
            }
        }
    }
}

fn signal_group(pid: libc::pid_t, signal: i32) {
    // SAFETY: kill takes integers.
    unsafe { libc::kill(-pid, signal) };
}

/// Wait for the command (without blocking when `poll_only`) and report how
/// it ended; whether it has.
fn reap(status_fd: i32, pid: libc::pid_t, poll_only: bool) -> bool {
    let mut status = 0;
    let flags = if poll_only { libc::WNOHANG } else { 0 };
    // SAFETY: `status` lives across the call.
    let waited = unsafe { libc::waitpid(pid, &mut status, flags) };
    if waited != pid {
        return false;
    }
    let line = if libc::WIFSIGNALED(status) {
        format!("signal {}\n", libc::WTERMSIG(status))
    } else {
        format!("exit {}\n", libc::WEXITSTATUS(status))
    };
    write_all(status_fd, line.as_bytes());
    // SAFETY: closing a descriptor this process owns; the host sees the end.
    unsafe { libc::close(status_fd) };
    true
}

//! The process Operation's raw system calls, and all of its `unsafe`: what
//! runs in the child between fork and exec (cgroup joining, `setsid`,
//! Landlock, the seccomp filter, descriptor hygiene for the jail), and the
//! epoll set the supervisor reads through.

use super::*;

/// Spawn `cmd` with the environment `env` (nothing else of the host's), stdin
/// `/dev/null`, in a session and process group of its own, under `ruleset`
/// and `socket_filter` (built by the caller: nothing may allocate between
/// fork and exec). A jailed spawn (bubblewrap) happens on one long-lived
/// thread: the jail dies with the thread that started it (its parent-death
/// signal), which must therefore live as long as the host.
pub(super) fn spawn_confined(
    mut cmd: std::process::Command,
    env: Vec<(String, String)>,
    (stdin, terminal): (Option<OwnedFd>, bool),
    mut confined: confine::InChild,
    jailed: bool,
) -> io::Result<std::process::Child> {
    cmd.env_clear().envs(env).stdin(match stdin {
        Some(fd) => std::process::Stdio::from(fd),
        None => std::process::Stdio::null(),
    });
    // Outside the jail, the terminal becomes the session's here; inside it,
    // the jail's init makes it the command's.
    let controlling_terminal = terminal && !jailed;
    #[allow(unsafe_code)]
    // SAFETY: the hook runs in the forked child before exec, where only
    // async-signal-safe work is sound. It makes system calls through rustix
    // (`setsid`), then the layers' apply steps, each async-signal-safe:
    // `join_cgroups`, `restrict_self` (the landlock crate's
    // `prctl(NO_NEW_PRIVS)` and `landlock_restrict_self` on a ruleset built
    // in the parent, moved out of an `Option`) and `install_filter` (libc's
    // `prctl` on a filter built in the parent); errors are built from raw
    // errnos (no allocation). A failing restriction fails the spawn: the
    // child never runs unconfined by accident.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid().map_err(errno_io)?;
            if controlling_terminal {
                rustix::process::ioctl_tiocsctty(rustix::stdio::stdin()).map_err(errno_io)?;
            }
            // Each layer's apply step (`confine`), in order; the ones that
            // make system calls make them through the functions below.
            confined.apply()
        });
    }
    if !jailed {
        return cmd.spawn();
    }
    type Request = (
        std::process::Command,
        std::sync::mpsc::SyncSender<io::Result<std::process::Child>>,
    );
    static SPAWNER: OnceLock<Mutex<std::sync::mpsc::Sender<Request>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("toolhost-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("starting the spawner thread");
        Mutex::new(tx)
    });
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    spawner
        .lock()
        .expect("spawner lock")
        .send((cmd, reply))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
}

/// The capacity asked for each output pipe.
const PIPE_BYTES: usize = 1 << 20;

/// Two pipes (read end non-blocking, write end for the child) in a new
/// level-triggered epoll set, whose ready list then keeps readiness order.
#[allow(clippy::type_complexity)]
pub(super) fn output_pipes() -> io::Result<([(OwnedFd, OwnedFd); 2], AsyncFd<OwnedFd>)> {
    let fd = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    let make = |token: u64| -> io::Result<(OwnedFd, OwnedFd)> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        rustix::io::ioctl_fionbio(&read, true)?;
        // A command printing fast fills a 64 KiB pipe and waits for the
        // host at every 64 KiB; a larger one halves the context switches of
        // a build log. Past the system's limit (`fs.pipe-max-size`) the
        // default stays.
        let _ = rustix::pipe::fcntl_setpipe_size(&read, PIPE_BYTES);
        epoll::add(
            &fd,
            &read,
            epoll::EventData::new_u64(token),
            epoll::EventFlags::IN,
        )?;
        Ok((read, write))
    };
    let pipes = [make(0)?, make(1)?];
    let epoll = watched(fd, tokio::io::Interest::READABLE)?;
    Ok((pipes, epoll))
}

/// `fd`, watched by the async runtime for `interest`.
pub(super) fn watched(fd: OwnedFd, interest: tokio::io::Interest) -> io::Result<AsyncFd<OwnedFd>> {
    #[allow(unsafe_code)]
    // SAFETY: an `OwnedFd` stays open, and its `as_raw_fd` returns the same
    // descriptor, for as long as the `AsyncFd` owns it.
    unsafe { AsyncFd::register_with_interest(fd, interest) }.map_err(|e| e.into_parts().1)
}

/// In the forked child, before exec: restrict this process with `ruleset`.
/// Async-signal-safe: two system calls; an error is not dropped (that
/// could free memory) but leaked.
pub(super) fn restrict_self(ruleset: landlock::RulesetCreated) -> io::Result<()> {
    match ruleset.restrict_self() {
        Ok(_) => Ok(()),
        Err(e) => {
            std::mem::forget(e);
            Err(errno_io(Errno::PERM))
        }
    }
}

/// Install `filter` in this (child) process: no new privileges, then the
/// filter. Async-signal-safe: two `prctl` calls, no allocation.
pub(super) fn install_filter(filter: &[libc::sock_filter]) -> io::Result<()> {
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    #[allow(unsafe_code)]
    // SAFETY: `prctl` with these options reads only `program`, which lives
    // across the call and points at `filter`'s instructions.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In the forked child, before exec: move this process into the call's
/// cgroups. Async-signal-safe: one `write` per descriptor.
pub(super) fn join_cgroups(procs: &[i32]) -> io::Result<()> {
    for &fd in procs {
        #[allow(unsafe_code)]
        // SAFETY: writing one byte from a static buffer to a descriptor.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Let exactly the descriptors `keep` (and stdio) reach the program `cmd`
/// runs: in the child, every other descriptor becomes close-on-exec
/// (whatever an embedder left open), and these lose that flag.
pub(super) fn pass_only(cmd: &mut std::process::Command, keep: Vec<i32>) {
    #[allow(unsafe_code)]
    // SAFETY: the hook runs between fork and exec and makes only
    // async-signal-safe system calls (close_range, fcntl) on integers.
    unsafe {
        cmd.pre_exec(move || keep_only(&keep));
    }
}

/// In the forked child: every descriptor from 3 on close-on-exec, then
/// `keep` not. Without `close_range` (Linux < 5.11) the descriptors a Rust
/// process opens are close-on-exec already.
fn keep_only(keep: &[i32]) -> io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    #[allow(unsafe_code)]
    // SAFETY: system calls on integers.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC);
        for &fd in keep {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

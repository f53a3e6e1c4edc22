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
    mut ruleset: Option<landlock::RulesetCreated>,
    socket_filter: Option<Vec<libc::sock_filter>>,
    cgroup_procs: Vec<i32>,
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
    // (`setsid`), the landlock crate (`prctl(NO_NEW_PRIVS)` and
    // `landlock_restrict_self` on a ruleset built in the parent) and libc
    // (`prctl` for the seccomp filter built in the parent), moves the ruleset
    // out of an `Option` (no allocation), and builds errors from raw errnos
    // (no allocation). A failing restriction fails the spawn: the child
    // never runs unconfined by accident.
    unsafe {
        cmd.pre_exec(move || {
            join_cgroups(&cgroup_procs)?;
            rustix::process::setsid().map_err(errno_io)?;
            if controlling_terminal {
                rustix::process::ioctl_tiocsctty(rustix::stdio::stdin()).map_err(errno_io)?;
            }
            if let Some(ruleset) = ruleset.take() {
                match ruleset.restrict_self() {
                    Ok(_) => {}
                    Err(e) => {
                        // Dropping the error could free memory; leave it.
                        std::mem::forget(e);
                        return Err(errno_io(Errno::PERM));
                    }
                }
            }
            if let Some(filter) = &socket_filter {
                install_filter(filter)?;
            }
            Ok(())
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

/// A seccomp program for a child without the network: `socket` of any
/// family but Unix and netlink (IPv4, IPv6, `AF_VSOCK` to a hypervisor or
/// its other guests, packet, Bluetooth, …), and `io_uring_setup` (whose
/// rings open sockets without the system call), fail with `EACCES`. UDP and
/// raw sockets, which Landlock's network rules (TCP only) leave open, are
/// among them, so a child without the network cannot send what it reads
/// through DNS or any datagram. `None` on architectures it does not know
/// (x86_64 and aarch64 are covered).
pub(super) fn inet_socket_filter() -> Option<Vec<libc::sock_filter>> {
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    return None;
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        const RET_ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW
        const RET_DENY: u32 = 0x0005_0000 | libc::EACCES as u32; // SECCOMP_RET_ERRNO
        const RET_KILL: u32 = 0x8000_0000; // SECCOMP_RET_KILL_PROCESS
        // Offsets in `struct seccomp_data`: nr, arch, args[0] (low half).
        const NR: u32 = 0;
        const ARCH_AT: u32 = 4;
        const ARG0: u32 = 16;
        let op = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
            code: code as u16,
            jt,
            jf,
            k,
        };
        let (ld, jeq, jge, ret) = (
            libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            libc::BPF_RET | libc::BPF_K,
        );
        Some(vec![
            // Another ABI (i386 on x86_64, arm32 on aarch64) has other
            // numbers: no process of ours uses one, so it is killed.
            op(ld, ARCH_AT, 0, 0),
            op(jeq, ARCH, 1, 0),
            op(ret, RET_KILL, 0, 0),
            op(ld, NR, 0, 0),
            // The x32 ABI: the same numbers with bit 30 set.
            op(jge, 0x4000_0000, 5, 0),
            // io_uring creates sockets without the socket system call.
            op(jeq, libc::SYS_io_uring_setup as u32, 4, 0),
            op(jeq, libc::SYS_socket as u32, 0, 4),
            op(ld, ARG0, 0, 0),
            op(jeq, libc::AF_UNIX as u32, 2, 0),
            op(jeq, libc::AF_NETLINK as u32, 1, 0),
            op(ret, RET_DENY, 0, 0),
            op(ret, RET_ALLOW, 0, 0),
        ])
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
fn join_cgroups(procs: &[i32]) -> io::Result<()> {
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

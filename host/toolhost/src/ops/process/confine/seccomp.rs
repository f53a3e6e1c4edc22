//! seccomp: a child without the network cannot create an IPv4 or IPv6
//! socket (UDP and raw ones included, which Landlock's TCP rules leave
//! open) or an io_uring. Prepare builds the program in the host; apply
//! installs it in the child (inside the jail too: bubblewrap, its init and
//! the command inherit it).

use super::{InChild, Layer, Plan, Report};
use crate::ops::process::{ProcessError, ProcessPolicy, sys};
use std::io;

pub(super) struct Seccomp;

impl Layer for Seccomp {
    fn probe(&self) -> Report {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let on = status.lines().any(|l| l.starts_with("Seccomp_filters:"))
            || status.lines().any(|l| l.starts_with("Seccomp:"));
        Report {
            name: "seccomp".into(),
            on,
            state: if on { "filters" } else { "off" }.into(),
            means: "a program without the network cannot create an IPv4 or IPv6 socket (UDP \
                    and raw ones included) or an io_uring"
                .into(),
            fix: (!on).then(|| "a kernel with CONFIG_SECCOMP_FILTER=y".into()),
        }
    }

    /// Through the proxy, a child makes IPv4 sockets in a namespace whose
    /// only listener is the proxy's: no filter there.
    fn prepare(&self, policy: &ProcessPolicy, plan: &mut Plan) -> Result<(), ProcessError> {
        plan.socket_filter = (!policy.network && policy.proxy.is_none())
            .then(inet_socket_filter)
            .flatten();
        Ok(())
    }

    fn apply(&self, child: &mut InChild) -> io::Result<()> {
        match &child.socket_filter {
            Some(filter) => sys::install_filter(filter),
            None => Ok(()),
        }
    }
}

/// A seccomp program for a child without the network: `socket` of any
/// family but Unix and netlink (IPv4, IPv6, `AF_VSOCK` to a hypervisor or
/// its other guests, packet, Bluetooth, …), and `io_uring_setup` (whose
/// rings open sockets without the system call), fail with `EACCES`. UDP and
/// raw sockets, which Landlock's network rules (TCP only) leave open, are
/// among them, so a child without the network cannot send what it reads
/// through DNS or any datagram. `None` on architectures it does not know
/// (x86_64 and aarch64 are covered).
pub(in crate::ops::process) fn inet_socket_filter() -> Option<Vec<libc::sock_filter>> {
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

//! The network: a child has it (bash, as in Pi, unless `--no-network`; an
//! extension's programs only with `network = true`), has none (in the jail
//! an empty network namespace, and the seccomp and Landlock rules), or
//! reaches some hosts by name through the host's egress proxy, which only
//! the jail's own namespace can give. Prepare refuses the proxy without the
//! jail; once the child runs, [`serve_proxy`] serves it.

use super::{InChild, Layer, Plan, Report};
use crate::ops::http_client::SystemResolver;
use crate::ops::http_client::proxy::Proxy;
use crate::ops::process::{ProcessError, ProcessErrorCode, ProcessPolicy, error, jail};
use crate::ops::usage::Usage;
use rustix::io::Errno;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use tokio::io::unix::AsyncFd;
use tokio_util::sync::CancellationToken;

pub(super) struct Network;

impl Layer for Network {
    fn probe(&self) -> Report {
        let jailed = matches!(jail::support(), jail::Support::Available { .. });
        Report {
            name: "network".into(),
            on: true,
            state: if jailed {
                "network namespace when off".into()
            } else {
                "socket filter when off".into()
            },
            means: "bash has the network as in Pi unless --no-network; an extension's programs \
                    only with network = true; without it, an empty network namespace (loopback \
                    only) and the socket filter"
                .into(),
            fix: None,
        }
    }

    fn prepare(&self, policy: &ProcessPolicy, plan: &mut Plan) -> Result<(), ProcessError> {
        if policy.proxy.is_none() || plan.jailed() {
            return Ok(());
        }
        let why = match jail::support() {
            jail::Support::Unavailable { reason } => reason.clone(),
            jail::Support::Available { .. } => "the jail is turned off".to_string(),
        };
        Err(error(
            ProcessErrorCode::Other,
            format!(
                "{} is not started: network by name needs the process jail (its own \
                 network namespace), and {why}",
                plan.program
            ),
        ))
    }

    fn apply(&self, _: &mut InChild) -> io::Result<()> {
        Ok(())
    }
}

/// Serve the egress proxy of `policy` on the listener the jail's init
/// sends on `end`, until `stop` fires (the call is cancelled or the child
/// is gone).
pub(in crate::ops::process) fn serve_proxy(
    policy: &ProcessPolicy,
    end: OwnedFd,
    usage: &Usage,
    runtime: &tokio::runtime::Handle,
    stop: CancellationToken,
) {
    let Some(hosts) = &policy.proxy else {
        return;
    };
    let proxy = Arc::new(Proxy {
        policy: hosts.clone(),
        resolver: Arc::new(SystemResolver),
        events: Arc::new(usage.clone()),
    });
    runtime.spawn(async move {
        if let Some(listener) = receive_listener(end).await {
            proxy.serve(listener, stop).await;
        }
    });
}

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

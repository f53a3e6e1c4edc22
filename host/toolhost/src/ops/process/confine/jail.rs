//! The jail: bubblewrap's namespaces (user, PID, mount, IPC, UTS, and the
//! network's when the child has none), with the system read-only, the
//! roots bound in, the secret stores hidden, and an init of our own as PID
//! 1 that applies Landlock and the limits it is handed. Prepare picks
//! bubblewrap, or refuses where the jail is required and cannot run;
//! [`command`] wraps the spawn in it. The child applies nothing itself.

use super::{InChild, Layer, Plan, Report};
use crate::ops::process::supervisor::{JailEnds, TOKEN_INFO, TOKEN_SETUP, TOKEN_STATUS};
use crate::ops::process::{
    Command, JailMode, ProcessError, ProcessErrorCode, ProcessPolicy, View, error, jail,
};
use rustix::event::epoll;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use tokio::io::unix::AsyncFd;

pub(super) struct Jail;

/// bubblewrap, and what it supports here.
pub(in crate::ops::process) struct Bwrap {
    pub path: &'static Path,
    /// `--disable-userns`.
    pub disable_userns: bool,
    /// The init makes the protective mounts (bubblewrap's `--cap-add` works).
    pub init_mounts: bool,
}

impl Layer for Jail {
    fn probe(&self) -> Report {
        let means = "own user, PID, mount, IPC and UTS namespaces: programs see the system \
                     read-only and only their roots writable, never the secret stores, a Unix \
                     socket outside their roots or another process, cannot rename what protects \
                     git and toolhost, and end with their call"
            .to_string();
        match jail::support() {
            jail::Support::Available {
                bwrap, init_mounts, ..
            } => {
                let mounts = if *init_mounts {
                    "protective mounts by the init"
                } else {
                    "protective mounts by bubblewrap (slower: its --cap-add is refused here)"
                };
                let version = std::process::Command::new(bwrap)
                    .arg("--version")
                    .env_clear()
                    .output()
                    .ok()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                    .unwrap_or_default();
                Report {
                    name: "jail".into(),
                    on: true,
                    state: format!("{} ({version}), user namespaces, {mounts}", bwrap.display()),
                    means,
                    fix: None,
                }
            }
            jail::Support::Unavailable { reason } => Report {
                name: "jail".into(),
                on: false,
                state: "off".into(),
                means: format!(
                    "without it, {means} does not hold: programs read what the user can and may \
                     outlive their call"
                ),
                fix: Some(reason.clone()),
            },
        }
    }

    /// bubblewrap and what it supports, when children run in the jail; an
    /// error when the jail is required and cannot run.
    fn prepare(&self, policy: &ProcessPolicy, plan: &mut Plan) -> Result<(), ProcessError> {
        plan.jail = bwrap(policy)?;
        Ok(())
    }

    fn apply(&self, _: &mut InChild) -> io::Result<()> {
        Ok(())
    }
}

fn bwrap(policy: &ProcessPolicy) -> Result<Option<Bwrap>, ProcessError> {
    match (policy.jail, jail::support()) {
        (JailMode::Off, _) => Ok(None),
        (
            _,
            jail::Support::Available {
                bwrap,
                disable_userns,
                init_mounts,
            },
        ) => Ok(Some(Bwrap {
            path: bwrap.as_path(),
            disable_userns: *disable_userns,
            init_mounts: *init_mounts,
        })),
        (JailMode::Required, jail::Support::Unavailable { reason }) => Err(error(
            ProcessErrorCode::Other,
            format!("this host requires the process jail to run programs, but {reason}"),
        )),
        (JailMode::Auto, jail::Support::Unavailable { .. }) => Ok(None),
    }
}

/// bubblewrap's command for a jailed spawn of `program` under `policy`,
/// with what `plan` hands the jail's init, and the host's ends of the
/// jail's pipes (already in `epoll`).
#[allow(clippy::too_many_arguments)]
pub(in crate::ops::process) fn command(
    policy: &ProcessPolicy,
    bwrap: &Bwrap,
    plan: &mut Plan,
    program: &Path,
    command: &Command,
    cwd: &Path,
    (out, err): (OwnedFd, OwnedFd),
    terminal: bool,
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
    let landlock = plan.landlock_for_init();
    let mut fds = jail::JailFds::new(status_w, control_r, out, err, info_w, landlock)?;
    if terminal {
        fds.terminal();
    }
    // The init sends the proxy's listener back on a socket pair.
    let proxy = match policy.proxy {
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
    let sources = fds.hold(&policy.pinned)?;
    let spec = jail::JailSpec {
        view: policy.view.unwrap_or(View::Everything),
        read_roots: &policy.read_roots,
        write_roots: &policy.write_roots,
        protected: &policy.protected,
        hidden: &policy.hidden,
        network: policy.network,
        cwd,
        git: policy.git.as_deref(),
        home_hidden: policy.home_hidden.as_deref(),
        shown: &policy.shown,
        sources: &sources,
    };
    let (args, mounts) = jail::bwrap_args(&spec, bwrap.disable_userns, bwrap.init_mounts);
    let mut cmd = jail::jail_command(
        bwrap.path,
        args,
        &fds,
        plan.rlimits,
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

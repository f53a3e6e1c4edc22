//! The layers that confine a child, one file each, in one list
//! ([`LAYERS`]): the jail, Landlock, seccomp, the resource limits and the
//! network. Each has a *prepare* step, run in the host before the child
//! exists (it may allocate, open descriptors and refuse the spawn with an
//! error naming what is missing), and an *apply* step, run in the forked
//! child before exec (async-signal-safe: no allocation, no lock), on what
//! its prepare step left in the [`Plan`]. `toolhost doctor` probes the
//! same list, so a layer added here is reported there.
//!
//! Two layers also act in the host: the jail wraps the command in
//! bubblewrap ([`jail::command`]; inside the jail its init applies
//! Landlock and the limits, from what the plan hands it), and the network
//! serves the egress proxy once the child runs ([`network::serve_proxy`]).
//! The raw system calls of every apply step are in `sys`, with the rest of
//! this Operation's `unsafe`.

pub(super) mod jail;
pub(super) mod landlock;
pub(super) mod limits;
pub(super) mod network;
pub(super) mod seccomp;

use super::limits::CallCgroup;
use super::{ProcessError, ProcessLimits, ProcessPolicy};
use std::io;
use std::os::fd::OwnedFd;

/// One confinement layer as this machine has it (`toolhost doctor`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    pub name: std::borrow::Cow<'static, str>,
    pub on: bool,
    /// What it is here (version, ABI, mechanism).
    pub state: String,
    /// What it does for a program a tool starts.
    pub means: String,
    /// How to turn it on, when it is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// One layer of a child's confinement.
pub(crate) trait Layer: Sync {
    /// What this machine offers of it, for `toolhost doctor`.
    fn probe(&self) -> Report;
    /// In the host, before the child exists: what the spawn needs of this
    /// layer under `policy`, added to `plan` (layers earlier in
    /// [`LAYERS`] have added theirs). A policy that requires what this
    /// machine cannot give is refused here.
    fn prepare(&self, policy: &ProcessPolicy, plan: &mut Plan) -> Result<(), ProcessError>;
    /// In the forked child, before exec: apply what `prepare` left in
    /// `child`. Async-signal-safe only. A failure fails the spawn: a child
    /// never runs less confined than prepared.
    fn apply(&self, child: &mut InChild) -> io::Result<()>;
}

/// Every layer, in the order they are prepared, applied and reported.
pub(crate) static LAYERS: [&dyn Layer; 5] = [
    &jail::Jail,
    &landlock::Landlock,
    &seccomp::Seccomp,
    &limits::Limits,
    &network::Network,
];

/// What the layers prepared for one spawn of `program`.
pub(super) struct Plan {
    /// The command's program as it asked for it, for errors.
    pub program: String,
    /// bubblewrap and what it supports, when the child runs in the jail.
    pub jail: Option<jail::Bwrap>,
    /// The Landlock ruleset: applied before exec outside the jail, by the
    /// jail's init inside it.
    pub landlock: Option<::landlock::RulesetCreated>,
    /// The seccomp program, when the child has no network.
    pub socket_filter: Option<Vec<libc::sock_filter>>,
    /// The call's cgroup, where this machine lets the host make one.
    pub cgroup: Option<CallCgroup>,
    /// The limits the jail's init sets when no cgroup holds them.
    pub rlimits: Option<ProcessLimits>,
}

impl Plan {
    /// Every layer's prepare step for a spawn of `program` under `policy`.
    pub fn prepare(policy: &ProcessPolicy, program: &str) -> Result<Plan, ProcessError> {
        let mut plan = Plan {
            program: program.to_string(),
            jail: None,
            landlock: None,
            socket_filter: None,
            cgroup: None,
            rlimits: None,
        };
        for layer in LAYERS {
            layer.prepare(policy, &mut plan)?;
        }
        Ok(plan)
    }

    /// Whether the child runs in the jail.
    pub fn jailed(&self) -> bool {
        self.jail.is_some()
    }

    /// The ruleset as the descriptor the jail's init applies, taken out of
    /// the plan.
    pub fn landlock_for_init(&mut self) -> Option<OwnedFd> {
        self.landlock.take().and_then(Option::<OwnedFd>::from)
    }

    /// What the forked child applies, taken out of the plan (the cgroup
    /// stays: the supervisor holds it until the child is gone).
    pub fn in_child(&mut self) -> InChild {
        InChild {
            landlock: self.landlock.take(),
            socket_filter: self.socket_filter.take(),
            cgroup_procs: self
                .cgroup
                .as_ref()
                .map(CallCgroup::procs_fds)
                .unwrap_or_default(),
        }
    }
}

/// What the forked child applies before exec, built in the host and moved
/// into the child's pre-exec hook.
pub(super) struct InChild {
    pub landlock: Option<::landlock::RulesetCreated>,
    pub socket_filter: Option<Vec<libc::sock_filter>>,
    /// Descriptors of the call's cgroups' `cgroup.procs`.
    pub cgroup_procs: Vec<i32>,
}

impl InChild {
    /// Every layer's apply step, in order (in the forked child).
    pub fn apply(&mut self) -> io::Result<()> {
        for layer in LAYERS {
            layer.apply(self)?;
        }
        Ok(())
    }
}

/// Every layer, probed on this machine.
pub fn probe() -> Vec<Report> {
    LAYERS.iter().map(|layer| layer.probe()).collect()
}

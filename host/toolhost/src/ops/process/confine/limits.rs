//! The resource limits of a call's programs together: processes and
//! memory, in a cgroup of the call's own where this machine lets the host
//! make one (`crate::ops::process::limits`), else as resource limits the
//! jail's init sets. Prepare makes the cgroup; apply moves the child into
//! it.

use super::{InChild, Layer, Plan, Report};
use crate::ops::process::limits::{self, CallCgroup};
use crate::ops::process::{ProcessError, ProcessLimits, ProcessPolicy, sys};
use std::io;

pub(super) struct Limits;

impl Layer for Limits {
    fn probe(&self) -> Report {
        let defaults = ProcessLimits::default();
        let enforcement = limits::enforcement();
        let on = !matches!(enforcement, limits::Enforcement::Rlimits { .. });
        Report {
            name: "limits".into(),
            on,
            state: enforcement.to_string(),
            means: format!(
                "a call's programs may have {} processes and {} MiB of memory together by \
                 default ([shell] max-processes and memory-mb in toolhost.toml); a command that \
                 hits one ends with an error naming it",
                defaults.max_processes,
                defaults.memory_bytes >> 20
            ),
            fix: (!on).then(|| {
                "let the host create cgroups: run it as a systemd service or under \
                 `systemd-run --user --scope -p Delegate=yes`"
                    .into()
            }),
        }
    }

    fn prepare(&self, policy: &ProcessPolicy, plan: &mut Plan) -> Result<(), ProcessError> {
        let limits = policy.process_limits();
        plan.cgroup = CallCgroup::create_in(policy.session_cgroup.as_ref(), limits)
            .ok()
            .flatten();
        plan.rlimits = (plan.jailed() && plan.cgroup.is_none()).then_some(limits);
        Ok(())
    }

    fn apply(&self, child: &mut InChild) -> io::Result<()> {
        sys::join_cgroups(&child.cgroup_procs)
    }
}

//! Landlock: writes only beneath the write roots, no signals to the host
//! and no abstract Unix socket outside (ABI 6+), no TCP without the
//! network (ABI 4+). Prepare builds the ruleset in the host (where opening
//! the roots is fine), or refuses where Landlock is required and missing;
//! apply restricts the child outside the jail (inside, the jail's init
//! applies the same ruleset, handed to it as a descriptor).

use super::{InChild, Layer, Plan, Report};
use crate::ops::process::policy::PROXY_PORT;
use crate::ops::process::{ProcessError, ProcessErrorCode, ProcessPolicy, error, sys};
use std::io;
use std::sync::OnceLock;

pub(super) struct Landlock;

impl Layer for Landlock {
    fn probe(&self) -> Report {
        match probe() {
            Ok(abi) => Report {
                name: "Landlock".into(),
                on: true,
                state: format!("ABI {}", *abi as u32),
                means: "writes only beneath the write roots, no signals to the host and no \
                        abstract Unix socket outside (ABI 6+), no TCP without the network (ABI \
                        4+); inside the jail, a second layer"
                    .into(),
                fix: None,
            },
            Err(reason) => Report {
                name: "Landlock".into(),
                on: false,
                state: "off".into(),
                means: reason.clone(),
                fix: Some(
                    "Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK=y and landlock in the \
                     lsm= boot parameter"
                        .into(),
                ),
            },
        }
    }

    fn prepare(&self, policy: &ProcessPolicy, plan: &mut Plan) -> Result<(), ProcessError> {
        plan.landlock = ruleset(policy, plan.jailed())?;
        Ok(())
    }

    fn apply(&self, child: &mut InChild) -> io::Result<()> {
        match child.landlock.take() {
            Some(ruleset) => sys::restrict_self(ruleset),
            None => Ok(()),
        }
    }
}

/// The Landlock ruleset for a child, built in the parent (where
/// allocating and opening the roots is fine). `None` when unavailable.
/// In the jail, whose mounts decide what may be read (and whose own
/// `/proc` and emptied directories no rule made outside could name),
/// it handles changes only: a second layer on writes, scopes and the
/// network.
fn ruleset(
    policy: &ProcessPolicy,
    jailed: bool,
) -> Result<Option<::landlock::RulesetCreated>, ProcessError> {
    use ::landlock::{
        Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope,
    };
    let abi = match probe() {
        Ok(abi) => *abi,
        Err(reason) if policy.require_landlock => {
            return Err(error(
                ProcessErrorCode::Other,
                format!("this host requires Landlock to run programs, but {reason}"),
            ));
        }
        Err(_) => return Ok(None),
    };
    let fail = |e: &dyn std::fmt::Display| {
        error(
            ProcessErrorCode::Other,
            format!("cannot build the Landlock ruleset: {e}"),
        )
    };
    // Everything that changes the filesystem is handled; ioctls on
    // devices are left alone (terminal queries on inherited descriptors).
    let read = AccessFs::from_read(abi);
    let mut handled = AccessFs::from_all(abi) & !AccessFs::IoctlDev;
    if jailed {
        handled &= !read;
    }
    let device = AccessFs::from_file(abi) & handled;
    let mut ruleset = Ruleset::default()
        .handle_access(handled)
        .map_err(|e| fail(&e))?;
    if abi >= ::landlock::ABI::V6 {
        // No signals to processes outside the child's domain (the host),
        // and no abstract Unix socket created outside it (a session
        // bus or container daemon listening there runs commands
        // unconfined).
        ruleset = ruleset
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(|e| fail(&e))?;
    }
    if !policy.network && abi >= ::landlock::ABI::V4 {
        // Handled with no rule allowing a port: every TCP connect and
        // bind is refused, so a child cannot send what it reads away
        // (through the proxy: but a connect to its port).
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| fail(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    if policy.proxy.is_some() && abi >= ::landlock::ABI::V4 {
        created = created
            .add_rule(::landlock::NetPort::new(PROXY_PORT, AccessNet::ConnectTcp))
            .map_err(|e| fail(&e))?;
    }
    if !jailed {
        created = created
            .add_rule(PathBeneath::new(
                PathFd::new("/").map_err(|e| fail(&e))?,
                read,
            ))
            .map_err(|e| fail(&e))?;
    }
    for root in &policy.write_roots {
        // The directory approved, where it is pinned; else what the path
        // names now.
        if let Some(pinned) = policy.pinned.iter().find(|p| p.path() == root) {
            created = created
                .add_rule(PathBeneath::new(pinned.fd(), handled))
                .map_err(|e| fail(&e))?;
            continue;
        }
        let Ok(fd) = PathFd::new(root) else {
            continue; // A missing root grants nothing.
        };
        created = created
            .add_rule(PathBeneath::new(fd, handled))
            .map_err(|e| fail(&e))?;
    }
    // Devices every shell script writes to (`2>/dev/null`).
    for dev in ["/dev/null", "/dev/zero", "/dev/full"] {
        if let Ok(fd) = PathFd::new(dev) {
            created = created
                .add_rule(PathBeneath::new(fd, device))
                .map_err(|e| fail(&e))?;
        }
    }
    Ok(Some(created))
}

/// The Landlock ABI this host uses (the newest it knows, up to V7), probed
/// once; or why Landlock cannot be used.
pub fn probe() -> &'static Result<::landlock::ABI, String> {
    static PROBE: OnceLock<Result<::landlock::ABI, String>> = OnceLock::new();
    PROBE.get_or_init(|| {
        use ::landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
        // The public API has no version query: the newest ABI whose access
        // rights the kernel accepts as a hard requirement is the one.
        for abi in [
            ABI::V7,
            ABI::V6,
            ABI::V5,
            ABI::V4,
            ABI::V3,
            ABI::V2,
            ABI::V1,
        ] {
            let created = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))
                .and_then(|r| r.create());
            if created.is_ok() {
                return Ok(abi);
            }
        }
        Err("Landlock is not available on this kernel".to_string())
    })
}

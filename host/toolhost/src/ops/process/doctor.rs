//! What `toolhost doctor` reports: each layer that confines the programs
//! tools start, whether it is on here, what it means, and how to turn on
//! one that is off.

use super::{jail, landlock, limits};

/// One confinement layer as this machine has it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Layer {
    pub name: &'static str,
    pub on: bool,
    /// What it is here (version, ABI, mechanism).
    pub state: String,
    /// What it does for a program a tool starts.
    pub means: String,
    /// How to turn it on, when it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Every layer, probed on this machine.
pub fn layers() -> Vec<Layer> {
    vec![
        jail_layer(),
        landlock_layer(),
        seccomp_layer(),
        limits_layer(),
        network_layer(),
    ]
}

fn jail_layer() -> Layer {
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
            Layer {
                name: "jail",
                on: true,
                state: format!("{} ({version}), user namespaces, {mounts}", bwrap.display()),
                means,
                fix: None,
            }
        }
        jail::Support::Unavailable { reason } => Layer {
            name: "jail",
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

fn landlock_layer() -> Layer {
    match landlock() {
        Ok(abi) => Layer {
            name: "Landlock",
            on: true,
            state: format!("ABI {}", *abi as u32),
            means: "writes only beneath the write roots, no signals to the host and no \
                    abstract Unix socket outside (ABI 6+), no TCP without the network (ABI \
                    4+); inside the jail, a second layer"
                .into(),
            fix: None,
        },
        Err(reason) => Layer {
            name: "Landlock",
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

fn seccomp_layer() -> Layer {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let on = status.lines().any(|l| l.starts_with("Seccomp_filters:"))
        || status.lines().any(|l| l.starts_with("Seccomp:"));
    Layer {
        name: "seccomp",
        on,
        state: if on { "filters" } else { "off" }.into(),
        means: "a program without the network cannot create an IPv4 or IPv6 socket (UDP \
                and raw ones included) or an io_uring"
            .into(),
        fix: (!on).then(|| "a kernel with CONFIG_SECCOMP_FILTER=y".into()),
    }
}

fn limits_layer() -> Layer {
    let defaults = limits::ProcessLimits::default();
    let enforcement = limits::enforcement();
    let on = !matches!(enforcement, limits::Enforcement::Rlimits { .. });
    Layer {
        name: "limits",
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

fn network_layer() -> Layer {
    let jailed = matches!(jail::support(), jail::Support::Available { .. });
    Layer {
        name: "network",
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

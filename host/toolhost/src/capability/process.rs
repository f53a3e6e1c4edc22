//! `process`: run the granted programs, in the process jail. The two
//! process policies the host composes are both here: the shell tools'
//! ([`shell_policy`]) and an extension's (`extension`).

use super::{BuiltinBackends, Capability, ForExtension, GrantSpec, Imported, place};
use crate::ops::Capabilities;
use crate::ops::fs::GrantedDir;
use crate::ops::http_client::proxy::{NetPolicy, Network};
use crate::ops::process::{JailMode, ProcessLimits, ProcessPolicy, View};
use crate::ops::protect::ProtectedPaths;
use crate::ops::usage::Use;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("process", "run programs", "[\"<program>\"]", |c| {
        c.process.is_some()
    }),
    imported: Imported::Package,
    asked: |g| !g.process.is_empty(),
    merge: |mine, other| {
        super::merge_list(&mut mine.process, &other.process);
        mine.network = mine.network.union(&other.network);
    },
    builtin,
    extension,
    audit: super::audited(Use::Program, "ran"),
    doctor: crate::ops::process::doctor::layers,
};

/// The shells, under the shell tools' policy, with the guard over what
/// their commands write.
fn builtin(grant: &GrantSpec, b: &BuiltinBackends, caps: &mut Capabilities) -> Result<(), String> {
    super::unknown_places(&grant.process, &[place::SHELLS])?;
    caps.process = Some(b.shells.0.clone());
    caps.guard = Some(b.shells.1.clone());
    caps.shell = true;
    Ok(())
}

/// The shells the `bash` component may start: Pi's order for bash
/// (`/bin/bash`, `bash` on PATH, `sh`) and `pwsh` for powershell (§7.25).
pub const SHELLS: &[&str] = &["/bin/bash", "bash", "sh", "pwsh"];

/// How the shell tools' commands are confined beyond their roots.
pub(crate) struct ShellJail {
    pub protected: ProtectedPaths,
    /// Hidden: the secret stores, the compile cache's key, `[shell] hide`.
    pub hidden: Vec<PathBuf>,
    pub mode: JailMode,
    /// From `[shell]`, when the embedder set none.
    pub limits: Option<ProcessLimits>,
    /// `$HOME`, when `[shell] home = "hidden"`, and what is shown of it.
    pub home_hidden: Option<PathBuf>,
    pub shown: Vec<PathBuf>,
    /// `[shell] network`, where a file sets it to narrow the network; it
    /// narrows the template's, never widens it.
    pub network: Option<ShellNet>,
}

/// What `[shell] network` narrows commands' network to.
pub(crate) enum ShellNet {
    /// None of it.
    Off,
    /// These hosts, through the egress proxy.
    Hosts(NetPolicy),
}

/// The process policy of the shell tools: `template` (the embedder's: the
/// network, the default timeout, limits, further roots) with the shells,
/// working directories in the workspace, writes in the workspace, the host's
/// temp directory (also the children's `TMPDIR`) and `extra_write_roots`
/// (`[shell] read-write`: the directories approved, pinned), the
/// allowlisted host environment, the session id, and the jail (the whole
/// system read-only, the protected paths read-only, the hidden ones hidden).
pub(crate) fn shell_policy(
    template: ProcessPolicy,
    workspace: &Path,
    temp_dir: &Path,
    extra_write_roots: &[GrantedDir],
    session_id: Option<String>,
    jail: ShellJail,
) -> ProcessPolicy {
    let mut policy = SHELLS
        .iter()
        .fold(template, |p, shell| p.program(*shell))
        .cwd_root(workspace)
        .write_root(workspace)
        .scratch_in(temp_dir)
        // Full-output files, read back by commands (read-only).
        .show(temp_dir)
        .host_env()
        .session_id(session_id)
        .jail(jail.mode)
        .view(View::Everything)
        .protect(jail.protected);
    if let Some(limits) = jail.limits {
        policy = policy.limits(limits);
    }
    match jail.network {
        Some(ShellNet::Off) => policy = policy.network(false),
        Some(ShellNet::Hosts(hosts)) if policy.has_network() => {
            policy = policy.network_hosts(hosts);
        }
        _ => {}
    }
    for root in extra_write_roots {
        policy = policy.write_root_pinned(root);
    }
    for path in jail.hidden {
        policy = policy.hide(path);
    }
    if let Some(home) = jail.home_hidden {
        policy = policy.hide_home(home);
    }
    for dir in jail.shown {
        policy = policy.show(dir);
    }
    policy
}

/// An extension's process policy: the host's safe environment plus the
/// granted variables (the only ones a command may set), in the jail: the
/// system read-only, the granted directories (writable only those granted
/// for writing), nothing else of the user's, the secret stores hidden; the
/// network only when that is granted too. A program that lies where tools
/// can write is refused, and said so.
fn extension(x: &ForExtension<'_>, caps: &mut Capabilities, warnings: &mut Vec<String>) {
    let (name, grant) = (x.name, x.grant);
    let programs: Vec<&str> = grant
        .process
        .iter()
        .map(String::as_str)
        .filter(|program| match (x.program_refusal)(program) {
            Some(reason) => {
                warnings.push(format!(
                    "process grant {program} of extension {name} is refused: {reason}"
                ));
                false
            }
            None => true,
        })
        .collect();
    let limits = ProcessLimits {
        max_processes: grant
            .max_processes
            .unwrap_or(ProcessLimits::default().max_processes),
        memory_bytes: grant
            .process_memory_mb
            .map_or(ProcessLimits::default().memory_bytes, |mb| mb << 20),
    };
    let mut policy = ProcessPolicy::new()
        .host_env()
        .default_timeout(Some(x.call_time))
        .network(grant.network == Network::All(true))
        .jail(x.jail)
        .limits(limits)
        .view(View::SystemOnly)
        .protect(x.protected.clone());
    if let Network::Hosts(hosts) = &grant.network {
        match NetPolicy::new(hosts, x.call_time) {
            Ok(hosts) => policy = policy.network_hosts(hosts),
            Err(reason) => warnings.push(format!(
                "network grant of extension {name}: {reason}; its programs get no network"
            )),
        }
    }
    if let Some(guard) = x.guard {
        policy = policy.git_guard(guard.clone());
    }
    // What a tool planted in a place it can write never runs as a granted
    // program.
    for place in &x.no_programs_from {
        policy = policy.no_programs_from(place);
    }
    for program in &programs {
        policy = policy.program(*program);
    }
    for dir in x.read_roots.iter().chain(x.write_roots) {
        policy = policy.cwd_root(dir.path());
    }
    for dir in x.read_roots {
        policy = policy.read_root_pinned(dir);
    }
    for dir in x.write_roots {
        policy = policy.write_root_pinned(dir);
    }
    // The secrets of the protected set: the credential stores, the cache
    // key and every secret's source file.
    for secret in x.protected.secrets() {
        policy = policy.hide(secret.clone());
    }
    for name in x.env {
        policy = policy.command_env(name.as_str());
        if let Ok(value) = std::env::var(name) {
            policy = policy.env(name.as_str(), value);
        }
    }
    for program in &programs {
        if let Some(warning) = (x.passed_over)(program, &policy) {
            warnings.push(format!(
                "process grant {program} of extension {name}: {warning}"
            ));
        }
    }
    caps.process = Some(Arc::new(policy));
}

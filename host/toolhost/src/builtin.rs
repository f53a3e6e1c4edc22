//! The built-in tools, embedded in the binary by the build script, and what
//! each is granted: exactly the Operations it needs, as Pi's per-tool
//! Operations (read-only tools read the workspace; write and edit also write
//! it; bash runs programs; grep and find search). Each declares them in an
//! extension's manifest (`guest-tools/<tool>/extension.toml`), naming the
//! host's places instead of directories; `crate::capability` gives them.

use crate::capability::GrantSpec;
use crate::component::Limits;
use crate::extensions::discovery::Manifest;
use crate::ops::fs::GrantedDir;
use crate::ops::process::{JailMode, ProcessLimits, ProcessPolicy, STOP_GRACE, View};
use crate::ops::protect::ProtectedPaths;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One embedded built-in component.
pub(crate) struct BuiltinComponent {
    pub name: &'static str,
    pub bytes: &'static [u8],
    /// Its machine code, compiled by the build script with the engine's
    /// settings (`engine_config`) for the build machine's CPU.
    pub precompiled: &'static [u8],
    /// blake3 of `bytes`: the compile-cache key, computed at build time.
    pub hash: &'static str,
    /// Its `extension.toml`: what it is granted.
    pub manifest: &'static str,
}

impl BuiltinComponent {
    /// What its manifest grants it.
    pub fn grant(&self) -> Result<GrantSpec, String> {
        toml::from_str::<Manifest>(self.manifest)
            .map(|m| m.capabilities)
            .map_err(|e| format!("its extension.toml: {e}"))
    }
}

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// Pi's default active tools (spec §3.1). `powershell` is not among them.
pub const DEFAULT_ACTIVE_TOOLS: &[&str] = &["read", "bash", "edit", "write"];

/// The timeout of a bash command that gives none (spec §7.14).
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

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

/// The limits of a built-in granted `grant`. A call that runs programs lasts
/// as long as its command may: the default command timeout plus the stop
/// grace and a margin, if that exceeds `base` (a longer `timeout` argument is
/// still cut by this limit).
pub(crate) fn limits(grant: &GrantSpec, base: Limits, default_timeout: Option<Duration>) -> Limits {
    match (grant.grants("process"), default_timeout) {
        (true, Some(timeout)) => Limits {
            time: base.time.max(timeout + STOP_GRACE + Duration::from_secs(8)),
            ..base
        },
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in's manifest parses, asks only for what the host gives
    /// built-ins, and `bash` alone runs programs (and gets the long limit).
    #[test]
    fn every_builtin_manifest_parses_and_only_bash_runs_programs() {
        for component in BUILTIN_COMPONENTS {
            let grant = component.grant().unwrap();
            assert_eq!(
                grant.grants("process"),
                component.name == "bash",
                "{}",
                component.name
            );
            assert!(!grant.grants("tools") && !grant.grants("http") && !grant.hooks);
        }
    }
}

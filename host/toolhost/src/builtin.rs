//! The built-in tools, embedded in the binary by the build script, and what
//! each is granted: exactly the Operations it needs, as Pi's per-tool
//! Operations (read-only tools read the workspace; write and edit also write
//! it; bash runs programs; grep and find search). Each declares them in an
//! extension's manifest (`guest-tools/<tool>/extension.toml`), naming the
//! host's places instead of directories; `crate::capability` gives them.

use crate::capability::GrantSpec;
use crate::component::Limits;
use crate::extensions::discovery::Manifest;
use crate::ops::process::STOP_GRACE;
use std::time::Duration;

/// One embedded built-in component.
pub(crate) struct BuiltinComponent {
    pub name: &'static str,
    pub bytes: &'static [u8],
    /// Its machine code, compiled by the build script with the engine's
    /// settings (`engine_config`) for the build machine's CPU; page-aligned,
    /// so the engine runs it where it lies instead of copying it.
    pub precompiled: &'static PageAligned<[u8]>,
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

/// Bytes aligned to 64 KiB, a multiple of every page size Linux uses: the
/// built-ins' machine code, whose text sections (page-aligned within it) the
/// engine makes executable where they lie in the binary.
#[repr(C, align(65536))]
pub(crate) struct PageAligned<T: ?Sized>(pub T);

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// Pi's default active tools (spec §3.1). `powershell` is not among them.
pub const DEFAULT_ACTIVE_TOOLS: &[&str] = &["read", "bash", "edit", "write"];

/// The timeout of a bash command that gives none (spec §7.14).
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

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
    /// built-ins, and `bash` and the session-process tools alone run
    /// programs (and get the long limit); only the latter keep them.
    #[test]
    fn every_builtin_manifest_parses_and_only_the_shell_tools_run_programs() {
        for component in BUILTIN_COMPONENTS {
            let grant = component.grant().unwrap();
            let name = component.name;
            assert_eq!(
                grant.grants("process"),
                ["bash", "processes"].contains(&name),
                "{name}"
            );
            assert_eq!(
                grant.grants("session-processes"),
                name == "processes",
                "{name}"
            );
            assert!(!grant.grants("tools") && !grant.grants("http") && !grant.hooks);
        }
    }
}

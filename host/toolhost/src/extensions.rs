//! Loading third-party extensions under their grants: from a discovered
//! extension and the policy to what its calls may touch, its limits, and a
//! report of what happened (what `toolhost ext list` shows).

use crate::discovery::{Found, Origin};
use crate::engine::Runtime;
use crate::error::Error;
use crate::loader::{self, ComponentSpec, Loaded};
use crate::ops::fs::LocalFs;
use crate::ops::process::ProcessPolicy;
use crate::ops::search::LocalSearch;
use crate::ops::tools::ToolSet;
use crate::policy::{GrantSpec, Policy, resolve_path};
use crate::registry::ToolSource;
use crate::sandbox::{Capabilities, Limits, WasiGrants};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What happened to one discovered extension.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionReport {
    pub name: String,
    pub component: PathBuf,
    pub origin: Origin,
    /// What its manifest asks for.
    pub requested: Option<GrantSpec>,
    /// What the policy grants it.
    pub granted: GrantSpec,
    /// The tools it provides, when it loaded.
    pub tools: Vec<String>,
    /// Whether it provides hooks, when it loaded.
    pub hooks: bool,
    /// Why it did not load, when it did not.
    pub refused: Option<String>,
}

/// Grants that could not be honoured (a missing directory), as messages.
type Warnings = Vec<String>;

/// Load `found` with what `policy` grants it.
pub(crate) async fn load(
    runtime: &Arc<Runtime>,
    found: &Found,
    policy: &Policy,
    workspace: &Path,
    tool_set: &ToolSet,
    defaults: Limits,
) -> (ExtensionReport, Option<Loaded>, Warnings) {
    let granted = policy.grants_for(&found.name);
    let mut report = ExtensionReport {
        name: found.name.clone(),
        component: found.component.clone(),
        origin: found.origin,
        requested: found.manifest.as_ref().map(|m| m.capabilities.clone()),
        granted: granted.clone(),
        tools: Vec::new(),
        hooks: false,
        refused: None,
    };
    let limits = limits(
        &granted,
        found.manifest.as_ref().map(|m| &m.capabilities),
        defaults,
    );
    let (caps, warnings) = capabilities(&granted, workspace, tool_set, limits);
    match load_component(runtime, found, caps, limits).await {
        Ok(loaded) => {
            report.tools = loaded
                .tools
                .iter()
                .map(|t| t.definition.name.clone())
                .collect();
            report.hooks = loaded.hooks.is_some();
            (report, Some(loaded), warnings)
        }
        Err(e) => {
            report.refused = Some(match e {
                Error::Load { reason, .. } => reason,
                other => other.to_string(),
            });
            (report, None, warnings)
        }
    }
}

async fn load_component(
    runtime: &Arc<Runtime>,
    found: &Found,
    caps: Capabilities,
    limits: Limits,
) -> Result<Loaded, Error> {
    let origin = found.component.display().to_string();
    let bytes = std::fs::read(&found.component).map_err(|e| Error::Load {
        path: origin.clone(),
        reason: format!("cannot be read: {e}"),
    })?;
    let hash = blake3::hash(&bytes).to_hex().to_string();
    loader::load(
        runtime,
        ComponentSpec {
            bytes: &bytes,
            hash,
            origin,
            source: ToolSource::Extension {
                path: found.component.clone(),
            },
            caps,
            limits,
            grant_name: Some(found.name.clone()),
        },
    )
    .await
}

/// Directories of a grant, resolved and checked; missing ones are reported.
fn directories(
    list: &[String],
    workspace: &Path,
    what: &str,
    warnings: &mut Warnings,
) -> Vec<PathBuf> {
    list.iter()
        .filter_map(|p| match resolve_path(p, workspace).canonicalize() {
            Ok(dir) if dir.is_dir() => Some(dir),
            _ => {
                warnings.push(format!(
                    "{what} grant {p:?} is not an existing directory; ignored"
                ));
                None
            }
        })
        .collect()
}

/// What a grant gives a component: Operations backends over the granted
/// directories, the same directories preopened through WASI, and the granted
/// environment variables (only those, and only their current values).
fn capabilities(
    grant: &GrantSpec,
    workspace: &Path,
    tool_set: &ToolSet,
    call_limits: Limits,
) -> (Capabilities, Warnings) {
    let mut warnings = Vec::new();
    let read_roots = directories(&grant.fs_read, workspace, "fs-read", &mut warnings);
    let write_roots = directories(&grant.fs_write, workspace, "fs-write", &mut warnings);
    let mut caps = Capabilities::default();
    if !read_roots.is_empty() {
        match LocalFs::new(&read_roots) {
            Ok(fs) => caps.fs_read = Some(Arc::new(fs)),
            Err(e) => warnings.push(format!("opening the fs-read directories: {e}")),
        }
    }
    if !write_roots.is_empty() {
        match LocalFs::new(&write_roots) {
            Ok(fs) => caps.fs_write = Some(Arc::new(fs)),
            Err(e) => warnings.push(format!("opening the fs-write directories: {e}")),
        }
    }
    if grant.search {
        // Search covers the directories it may read.
        match LocalFs::new(&read_roots) {
            Ok(fs) if !read_roots.is_empty() => {
                caps.search = Some(Arc::new(LocalSearch::new(Arc::new(fs))));
            }
            Ok(_) => warnings.push("search is granted but no fs-read directory to search".into()),
            Err(e) => warnings.push(format!("opening the search directories: {e}")),
        }
    }
    if !grant.process.is_empty() {
        // Programs run with the host's safe environment plus the granted
        // variables, in (and writing only to) the granted directories, and
        // reach the network only when that is granted too.
        let mut policy = ProcessPolicy::new()
            .host_env()
            .default_timeout(Some(call_limits.time))
            .network(grant.network);
        for program in &grant.process {
            policy = policy.program(program);
        }
        for dir in read_roots.iter().chain(&write_roots) {
            policy = policy.cwd_root(dir);
        }
        for dir in &write_roots {
            policy = policy.write_root(dir);
        }
        for name in &grant.env {
            if let Ok(value) = std::env::var(name) {
                policy = policy.env(name.clone(), value);
            }
        }
        caps.process = Some(Arc::new(policy));
    }
    if grant.tools {
        caps.tools = Some(tool_set.clone());
    }
    let mut preopens: Vec<(PathBuf, bool)> =
        read_roots.iter().map(|d| (d.clone(), false)).collect();
    for dir in &write_roots {
        match preopens.iter_mut().find(|(d, _)| d == dir) {
            Some(entry) => entry.1 = true,
            None => preopens.push((dir.clone(), true)),
        }
    }
    let cwd = preopens
        .iter()
        .find(|(d, _)| workspace.starts_with(d))
        .map(|_| workspace.to_string_lossy().into_owned())
        .or_else(|| {
            preopens
                .first()
                .map(|(d, _)| d.to_string_lossy().into_owned())
        });
    caps.wasi = WasiGrants {
        preopens,
        env: grant
            .env
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
            .collect(),
        cwd,
    };
    (caps, warnings)
}

/// Limits: the policy's where it sets them; otherwise the defaults, lowered
/// (never raised) by what the manifest asks for.
fn limits(granted: &GrantSpec, requested: Option<&GrantSpec>, defaults: Limits) -> Limits {
    let mut limits = defaults;
    let requested = requested.cloned().unwrap_or_default();
    let mb = |m: u64| usize::try_from(m.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    if let Some(m) = requested.memory_mb {
        limits.memory_bytes = limits.memory_bytes.min(mb(m));
    }
    if let Some(s) = requested.time_limit_s.filter(|s| s.is_finite() && *s > 0.0) {
        limits.time = limits.time.min(Duration::from_secs_f64(s));
    }
    if let Some(kb) = requested.output_kb {
        limits.output_bytes = Some(
            limits
                .output_bytes
                .unwrap_or(usize::MAX)
                .min(kb as usize * 1024),
        );
    }
    if let Some(m) = granted.memory_mb {
        limits.memory_bytes = mb(m);
    }
    if let Some(s) = granted.time_limit_s.filter(|s| s.is_finite() && *s > 0.0) {
        limits.time = Duration::from_secs_f64(s);
    }
    if let Some(kb) = granted.output_kb {
        limits.output_bytes = Some(kb as usize * 1024);
    }
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_come_from_policy_and_manifests_only_lower_them() {
        let defaults = Limits::default();
        let ask = GrantSpec {
            memory_mb: Some(4096),
            time_limit_s: Some(5.0),
            ..Default::default()
        };
        let l = limits(&GrantSpec::default(), Some(&ask), defaults);
        assert_eq!(
            l.memory_bytes, defaults.memory_bytes,
            "a manifest cannot raise memory"
        );
        assert_eq!(l.time, Duration::from_secs(5));
        let grant = GrantSpec {
            memory_mb: Some(512),
            output_kb: Some(1),
            ..Default::default()
        };
        let l = limits(&grant, Some(&ask), defaults);
        assert_eq!(l.memory_bytes, 512 << 20);
        assert_eq!(l.output_bytes, Some(1024));
    }
}

//! Loading third-party extensions under their grants: from a discovered
//! extension and the policy to what its calls may touch, its limits, and a
//! report of what happened (what `toolhost ext list` shows).
//!
//! * [`discovery`] finds extension files and manifests;
//! * [`policy`] reads the grants of `toolhost.toml`;
//! * `grants` resolves the paths they name, refusing those a tool could
//!   have chosen, and pins the directories approved;
//! * [`trust`] decides which workspace files may decide anything, and lists
//!   the protected paths;
//! * `crate::files` reads all of these without letting a planted file
//!   stall or exhaust the host;
//! * [`review`] is what `toolhost trust` shows and records, [`install`] what
//!   `toolhost ext add` and `remove` do.
//!
//! A component from the workspace is compiled only when the trust store
//! approves its exact bytes (and its manifest's); a grant applies only to
//! components of its own file's origin, and only to the digest it pins.

pub mod discovery;
mod fetch;
pub(crate) mod grants;
pub mod install;
pub mod keyless;
pub mod oci;
pub mod policy;
pub mod review;
pub mod signature;
pub mod trust;

use crate::capability::{self, ForExtension, GrantSpec};
use crate::component::{Capabilities, Limits, WasiCapabilities};
use crate::engine::Runtime;
use crate::error::Error;
use crate::extensions::discovery::{Found, Origin};
use crate::extensions::grants::WritePlaces;
use crate::extensions::policy::{Policy, resolve_path};
use crate::extensions::trust::{Digest, TrustStore, Verdict};
use crate::files::MAX_COMPONENT_BYTES;
use crate::loader::{self, Code, ComponentSpec, Loaded};
use crate::ops::fs::{GrantedDir, ProtectedPaths};
use crate::ops::process::{JailMode, ProcessPolicy};
use crate::ops::protect::GitGuard;
use crate::ops::tools::ToolSet;
use crate::registry::ToolSource;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The one list of protected paths (see [`ProtectedPaths`]): the workspace's
/// `toolhost.toml` and `.toolhost/`, the user configuration directory (its
/// `toolhost.toml`, trust store and extensions), the compile cache, the
/// audit log and toolhost's state directory (what the git guard keeps),
/// wherever the workspace is. `.git/hooks/` and `.git/config` are protected
/// by a rule of their own at any depth.
///
/// Hidden in the same set: the user's credential stores, the compile
/// cache's key, and every secret's source `policy` names (its files and
/// environment variables), so that no jail, read, search, resource or
/// completion reaches a secret that an extension's grant keeps from it.
pub fn protected_paths(
    workspace: &Path,
    user_config: Option<&Path>,
    cache_dir: Option<&Path>,
    audit_log: Option<&Path>,
    state_dir: Option<&Path>,
    policy: &policy::Policy,
) -> ProtectedPaths {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let (secret_files, secret_env) = policy.secret_sources();
    let stores = home
        .as_deref()
        .map(crate::ops::process::secrets::secret_stores)
        .unwrap_or_default();
    let cache_key = cache_dir.map(|d| d.join(crate::engine::CACHE_KEY_FILE));
    ProtectedPaths::new(
        [
            Some(workspace.join(policy::POLICY_FILE)),
            Some(workspace.join(".toolhost")),
            user_config.map(Path::to_path_buf),
            cache_dir.map(Path::to_path_buf),
            audit_log.map(Path::to_path_buf),
            state_dir.map(Path::to_path_buf),
        ]
        .into_iter()
        .flatten(),
    )
    .for_home(home)
    .hide_secrets(stores.into_iter().chain(cache_key).chain(secret_files))
    .hide_env(secret_env)
}

/// What happened to one discovered extension.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionReport {
    pub name: String,
    pub component: PathBuf,
    pub origin: Origin,
    /// The component's digest, when it could be read.
    pub digest: Option<Digest>,
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
    /// The user's allow rules pinned to its digest: what the person
    /// answered "always" for (`crate::permissions`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub always: Vec<String>,
    /// What its manifest offers a front end beside its tools, as written.
    #[serde(skip)]
    pub offers: discovery::Offers,
}

impl ExtensionReport {
    /// The report of `found` before anything is known of its component.
    fn new(found: &Found) -> ExtensionReport {
        ExtensionReport {
            name: found.name.clone(),
            component: found.component.clone(),
            origin: found.origin,
            digest: None,
            requested: found.manifest.as_ref().map(|m| m.capabilities.clone()),
            granted: GrantSpec::default(),
            tools: Vec::new(),
            hooks: false,
            refused: None,
            always: Vec::new(),
            offers: found
                .manifest
                .as_ref()
                .map(discovery::Manifest::offers)
                .unwrap_or_default(),
        }
    }

    /// The report of `found`, refused for `reason`.
    pub(crate) fn refused(found: &Found, reason: String) -> ExtensionReport {
        ExtensionReport {
            refused: Some(reason),
            ..ExtensionReport::new(found)
        }
    }
}

/// `grant` without what would reach a remote workspace (`remote`) through
/// this machine: its places, programs and search. Each one it had is said.
fn without_workspace_grants(grant: &GrantSpec, remote: &str, warnings: &mut Warnings) -> GrantSpec {
    let mut kept = grant.clone();
    let mut dropped = Vec::new();
    if !std::mem::take(&mut kept.fs_read).is_empty() {
        dropped.push("fs-read");
    }
    if !std::mem::take(&mut kept.fs_write).is_empty() {
        dropped.push("fs-write");
    }
    if !std::mem::take(&mut kept.process).is_empty() {
        dropped.push("process");
    }
    if std::mem::take(&mut kept.session_processes) {
        dropped.push("session-processes");
    }
    if std::mem::take(&mut kept.search) {
        dropped.push("search");
    }
    if !dropped.is_empty() {
        warnings.push(format!(
            "{} not granted: the workspace is remote ({remote}), and an extension's files \
             and commands are not served there",
            dropped.join(", ")
        ));
    }
    kept
}

/// Grants that could not be honoured (a missing directory), as messages.
type Warnings = Vec<String>;

/// What loading extensions needs from the host being built.
pub(crate) struct LoadContext<'a> {
    pub runtime: &'a Arc<Runtime>,
    pub policy: &'a Policy,
    pub trust: &'a TrustStore,
    pub workspace: &'a Path,
    pub tool_set: &'a ToolSet,
    pub defaults: Limits,
    pub protected: &'a ProtectedPaths,
    /// Whether granted programs run in the namespace jail.
    pub jail: JailMode,
    /// Where the git guards keep what they neutralize.
    pub quarantine: Option<&'a Path>,
    /// The places tools can write: no granted path leads through a link
    /// there, no granted program comes from there.
    pub places: &'a WritePlaces,
    /// The Pi profile the components are told.
    pub pi: crate::profile::PiProfile,
    /// The remote workspace, as named, when the workspace is remote: its
    /// files and commands are not on this machine to grant.
    pub remote: Option<&'a str>,
}

/// An extension on its way to loading: its report so far, its warnings,
/// and its component compiled and linked unless refused ([`finish`] reads
/// its definitions).
pub(crate) struct Pending {
    report: ExtensionReport,
    warnings: Warnings,
    prepared: Option<Result<loader::Prepared, Error>>,
}

/// Read `found`'s bytes once (bounded), check them against the trust store
/// when the workspace contributed them, check a pinned digest, then compile
/// and link exactly those bytes. A file unchanged since an earlier start
/// read it is not read again: its digest is the one noted then, and its
/// code the compile cache's for that digest (see
/// [`Runtime::component_digest`](crate::engine::Runtime)). Awaits nothing:
/// extensions are prepared on several threads at once.
pub(crate) fn prepare(cx: &LoadContext<'_>, found: &Found) -> Pending {
    let mut report = ExtensionReport::new(found);
    let mut warnings = Vec::new();
    let read = crate::files::open_regular(&found.component, MAX_COMPONENT_BYTES).and_then(|file| {
        let file = file.ok_or("cannot be read: No such file or directory (os error 2)")?;
        let (digest, bytes) =
            cx.runtime
                .component_digest(&found.component, &file, MAX_COMPONENT_BYTES)?;
        Ok((file, digest, bytes))
    });
    let (file, digest, bytes) = match read {
        Ok(read) => read,
        Err(reason) => {
            report.refused = Some(reason);
            return Pending::refused(report, warnings);
        }
    };
    report.digest = Some(digest.clone());
    if found.origin == Origin::Workspace {
        let mut verdict = cx.trust.verdict(cx.workspace, &found.component, &digest);
        if let Some((manifest, manifest_digest)) = &found.manifest_file {
            verdict = verdict.and(cx.trust.verdict(cx.workspace, manifest, manifest_digest));
        }
        if verdict != Verdict::Trusted {
            report.refused = verdict.refusal().map(str::to_string);
            return Pending::refused(report, warnings);
        }
    }
    let mut granted = cx.policy.grants_for(&found.name, found.origin);
    if let Err(reason) = check_signatures(cx, found, &granted, (&file, &digest, bytes.as_deref())) {
        report.refused = Some(reason);
        return Pending::refused(report, warnings);
    }
    if let Some(pinned) = &granted.digest
        && pinned != digest.as_str()
    {
        let said = format!(
            "its grant [extensions.{}] pins {pinned}, but this component is {digest}",
            found.name
        );
        // An extension installed from a registry or bound to a signer is
        // the component the grant names, or nothing: another one signed by
        // the same key (the version updated away from, another
        // repository's) must not load in its place.
        let signed = cx
            .policy
            .signature_policies(&found.name)
            .map_or(true, |p| !p.is_empty());
        if granted.source.is_some() || signed {
            report.refused = Some(format!(
                "{said}; install it again with `toolhost ext add`, or `toolhost ext update {}`",
                found.name
            ));
            return Pending::refused(report, warnings);
        }
        warnings.push(format!("{said}: granted nothing"));
        granted = GrantSpec::default();
    }
    report.granted = granted.clone();
    let limits = limits(
        &granted,
        found.manifest.as_ref().map(|m| &m.capabilities),
        cx.defaults,
    );
    let (caps, cap_warnings) = capabilities(&found.name, &granted, cx, limits);
    warnings.extend(cap_warnings);
    let origin = found.component.display().to_string();
    let prepared = loader::prepare(
        cx.runtime,
        ComponentSpec {
            code: match &bytes {
                Some(bytes) => Code::Bytes(bytes),
                None => Code::Unread(&file),
            },
            precompiled: None,
            hash: digest.hex().to_string(),
            origin,
            source: ToolSource::Extension {
                path: found.component.clone(),
            },
            caps,
            limits,
            pi: cx.pi,
            grant_name: Some(found.name.clone()),
            hooks: granted.hooks,
            replace_builtin: granted.replace_builtin,
            namespace: granted.namespace.clone(),
        },
    );
    Pending {
        report,
        warnings,
        prepared: Some(prepared),
    }
}

/// When the user's file says who must have signed `found`, check it with
/// no network, from the record kept beside the component at install
/// (`signature.rs`), against the SHA-256 of the very bytes that load
/// (`bytes`, else `file`, whose BLAKE3 is `digest`; noted in the cache once
/// computed, so an unchanged 18 MB component is not hashed again).
fn check_signatures(
    cx: &LoadContext<'_>,
    found: &Found,
    grant: &GrantSpec,
    (file, digest, bytes): (&std::fs::File, &Digest, Option<&[u8]>),
) -> Result<(), String> {
    let policies = cx.policy.signature_policies(&found.name)?;
    if policies.is_empty() {
        return Ok(());
    }
    let refused = |why: String| format!("its signature check failed: {why}");
    if policies.contains(&signature::SignaturePolicy::Unnamed) {
        return Err(refused(signature::UNNAMED.into()));
    }
    let (provenance, record) = signature::Provenance::read_with_bytes(&found.component)
        .map_err(refused)?
        .ok_or_else(|| {
            refused(format!(
                "it has no record of where it came from and who signed it ({}); install it \
                 with `toolhost ext add oci://…`",
                signature::Provenance::path_of(&found.component).display()
            ))
        })?;
    bound_to_grant(&provenance, grant).map_err(refused)?;
    let sha256 = cx
        .runtime
        .component_sha256(digest.hex(), bytes, || {
            crate::files::read_whole_at(file, MAX_COMPONENT_BYTES)
        })
        .map_err(refused)?;
    // The same record, key or root and component as a check that passed:
    // it passes again, without its cryptography.
    let inputs = signature::check_inputs(&record, &policies, &sha256);
    if inputs
        .as_deref()
        .is_some_and(|i| cx.runtime.check_passed(i))
    {
        return Ok(());
    }
    for policy in &policies {
        signature::verify(&sha256, &provenance, policy).map_err(refused)?;
    }
    if let Some(inputs) = inputs {
        cx.runtime.note_check_passed(&inputs);
    }
    Ok(())
}

/// Whether the record beside a component is the one its grant approved:
/// from the source the grant names (and at its digest, when it names one),
/// and not a version the user updated away from. Checked at every start,
/// before the signature (which only says that the record is genuine, not
/// that it is this grant's).
fn bound_to_grant(provenance: &signature::Provenance, grant: &GrantSpec) -> Result<(), String> {
    if let Some(source) = &grant.source
        && *source != provenance.source
    {
        return Err(format!(
            "its record says it came from {}, but its grant's source is {source}",
            provenance.source
        ));
    }
    let named = grant
        .source
        .as_deref()
        .and_then(|s| oci::OciRef::parse(s).ok());
    if let Some(pinned) = named.as_ref().and_then(oci::OciRef::digest)
        && pinned != provenance.digest
    {
        return Err(format!(
            "its record is of {}, but its grant's source names {pinned}",
            provenance.digest
        ));
    }
    if grant.superseded.contains(&provenance.digest) {
        return Err(format!(
            "it is {}, a version its grant was updated away from (superseded); run \
             `toolhost ext update` to install the current one",
            provenance.digest
        ));
    }
    Ok(())
}

impl Pending {
    fn refused(report: ExtensionReport, warnings: Warnings) -> Pending {
        Pending {
            report,
            warnings,
            prepared: None,
        }
    }
}

/// Read a prepared extension's definitions: its report, what it provides
/// (unless refused), and its warnings.
pub(crate) async fn finish(pending: Pending) -> (ExtensionReport, Option<Loaded>, Warnings) {
    let Pending {
        mut report,
        warnings,
        prepared,
    } = pending;
    let loaded = match prepared {
        None => return (report, None, warnings),
        Some(prepared) => match prepared {
            Ok(prepared) => loader::finish(prepared).await,
            Err(e) => Err(e),
        },
    };
    match loaded {
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
            report.refused = Some(e.reason());
            (report, None, warnings)
        }
    }
}

/// The directories of the `what` grant (`fs-read`, `fs-write`) of the
/// extension `ext`, resolved and pinned (see [`grants`]); each refused one
/// is reported, naming it and why.
fn directories(
    list: &[String],
    cx: &LoadContext<'_>,
    what: &str,
    ext: &str,
    warnings: &mut Warnings,
) -> Vec<GrantedDir> {
    let mut dirs: Vec<GrantedDir> = Vec::new();
    for p in list {
        match grants::directory(&resolve_path(p, cx.workspace), cx.places) {
            Ok(dir) => {
                if !dirs.iter().any(|d| d.path() == dir.path()) {
                    dirs.push(dir);
                }
            }
            Err(reason) => {
                warnings.push(format!(
                    "{what} grant {p} of extension {ext} is refused: {reason}"
                ));
            }
        }
    }
    dirs
}

/// What a grant gives a component: Operations backends over the granted
/// directories, the same directories preopened through WASI, and the granted
/// environment variables (only those, and only their current values).
fn capabilities(
    name: &str,
    grant: &GrantSpec,
    cx: &LoadContext<'_>,
    call_limits: Limits,
) -> (Capabilities, Warnings) {
    let (workspace, tool_set, protected) = (cx.workspace, cx.tool_set, cx.protected);
    let mut warnings = Vec::new();
    let here_only;
    let grant = match cx.remote {
        Some(remote) => {
            here_only = without_workspace_grants(grant, remote, &mut warnings);
            &here_only
        }
        None => grant,
    };
    // A loader variable would run the extension's own code inside the
    // programs it was granted.
    let env_names: Vec<&String> = grant
        .env
        .iter()
        .filter(|name| {
            let loader = name.starts_with("LD_");
            if loader {
                warnings.push(format!(
                    "env grant {name:?}: loader variables (LD_*) are never granted; ignored"
                ));
            }
            // A secret's source, this grant's or any other's: the extension
            // uses its own and never sees it, and never sees another's.
            let own = grant
                .secrets
                .iter()
                .find(|(_, s)| s.env_source() == Some(name.as_str()));
            let secret = own.is_some() || protected.hides_env(name);
            if let Some((secret, _)) = own {
                warnings.push(format!(
                    "env grant {name:?}: it is the source of the secret {secret}, which the \
                     extension's requests carry and it never sees; withheld"
                ));
            } else if secret {
                warnings.push(format!(
                    "env grant {name:?}: it is the source of a secret another grant names; \
                     withheld"
                ));
            }
            !loader && !secret
        })
        .collect();
    let read_roots = directories(&grant.fs_read, cx, "fs-read", name, &mut warnings);
    let write_roots = directories(&grant.fs_write, cx, "fs-write", name, &mut warnings);
    let write_paths: Vec<PathBuf> = write_roots.iter().map(|d| d.path().to_path_buf()).collect();
    // Watches what its programs and WASI files change beneath the
    // directories it may write (see `crate::ops::protect::guard`).
    let guard = (!write_roots.is_empty())
        .then(|| Arc::new(GitGuard::of_user(write_paths.clone(), cx.quarantine)));
    let program_refusal = |program: &str| grants::program_refusal(program, cx.places);
    let passed_over =
        |program: &str, policy: &ProcessPolicy| passed_over(program, policy, cx.places);
    let resolved = ForExtension {
        name,
        grant,
        read_roots: &read_roots,
        write_roots: &write_roots,
        env: &env_names,
        guard: guard.as_ref(),
        protected,
        jail: cx.jail,
        call_time: call_limits.time,
        tool_set,
        no_programs_from: cx.places.paths(),
        program_refusal: &program_refusal,
        passed_over: &passed_over,
    };
    let mut caps = capability::for_extension(&resolved, &mut warnings);
    // WASI files cannot be checked path by path: a directory holding a
    // secret is not preopened (the fs-read and fs-write Operations, which
    // check every path, still reach the rest of it).
    let mut secret_holding: Vec<&Path> = Vec::new();
    for dir in read_roots.iter().chain(&write_roots) {
        if protected.hides_within(dir.path()) && !secret_holding.contains(&dir.path()) {
            secret_holding.push(dir.path());
            warnings.push(format!(
                "{}: it holds a secret (a credential store or a secret's source), so it is \
                 not opened through WASI files (the fs-read and fs-write Operations reach \
                 the rest of it)",
                dir.path().display()
            ));
        }
    }
    let unhidden = |dir: &&GrantedDir| !secret_holding.contains(&dir.path());
    let mut preopens: Vec<(GrantedDir, bool)> = read_roots
        .iter()
        .filter(unhidden)
        .map(|d| (d.clone(), false))
        .collect();
    for dir in write_roots.iter().filter(unhidden) {
        // WASI writes cannot be checked path by path: a directory holding a
        // protected path is preopened read-only (the fs-write Operation,
        // which checks every path, still writes in it).
        let writable = !protected.within(dir.path());
        if !writable {
            warnings.push(format!(
                "fs-write grant {}: it holds protected paths, so it is read-only through \
                 WASI files (writes through the fs-write Operation work outside them)",
                dir.path().display()
            ));
        }
        match preopens.iter_mut().find(|(d, _)| d.path() == dir.path()) {
            Some(entry) => entry.1 = writable,
            None => preopens.push((dir.clone(), writable)),
        }
    }
    let cwd = preopens
        .iter()
        .find(|(d, _)| workspace.starts_with(d.path()))
        .map(|_| workspace.to_string_lossy().into_owned())
        .or_else(|| {
            preopens
                .first()
                .map(|(d, _)| d.path().to_string_lossy().into_owned())
        });
    let writable_wasi = preopens.iter().any(|(_, writable)| *writable);
    caps.guard = guard.filter(|_| caps.process.is_some() || writable_wasi);
    caps.wasi = WasiCapabilities {
        preopens,
        env: env_names
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
            .collect(),
        cwd,
    };
    (caps, warnings)
}

/// What a report should say about the granted bare program name `program`
/// under `policy`: that the first of that name on its `PATH` lies in a place
/// tools can write and never runs, and what runs instead.
fn passed_over(program: &str, policy: &ProcessPolicy, places: &WritePlaces) -> Option<String> {
    use crate::ops::process::resolve_program;
    if program.contains('/') {
        return None;
    }
    let first = resolve_program(program, policy.search_path(), &[]).ok()?;
    let (_, place) = places.place_of(&first)?;
    let instead = match resolve_program(program, policy.search_path(), policy.program_exclusions())
    {
        Ok(other) => format!("{} runs instead", other.display()),
        Err(_) => format!("no other {program} is on PATH, so it cannot run"),
    };
    Some(format!(
        "{} (first on PATH) lies inside {place}, which tools can change: it never runs; \
         {instead}",
        first.display()
    ))
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

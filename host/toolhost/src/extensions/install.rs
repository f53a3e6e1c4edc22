//! Installing an extension for every workspace (`toolhost ext add`) and
//! removing it (`toolhost ext remove`).
//!
//! `add` copies a component into the user's extensions directory and writes
//! its grant into the user's `toolhost.toml` with the component's digest
//! pinned, so that a different file put there later under the same name gets
//! nothing. The user's file is edited in place, keeping its comments and
//! layout.

use crate::engine::Runtime;
use crate::error::Error;
use crate::extensions::keyless;
use crate::extensions::oci::{self, OciRef};
use crate::extensions::policy::grant_line;
use crate::extensions::policy::{GrantSpec, POLICY_FILE, signature_policies_in};
use crate::extensions::signature::{self, Provenance};
use crate::extensions::trust::Digest;
use crate::files::write_private;
use crate::files::{self, MAX_COMPONENT_BYTES, MAX_POLICY_BYTES};
use crate::loader::{Inspection, inspect_bytes};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What `add` did.
#[derive(Clone, Debug)]
pub struct Installed {
    pub name: String,
    /// Where the component now lives.
    pub path: PathBuf,
    pub digest: Digest,
    /// Its tools, hooks and requests.
    pub inspection: Inspection,
    /// The grant written (digest pinned).
    pub grant: GrantSpec,
    /// Requested capabilities the grant does not give, each with the line
    /// that would grant it.
    pub ungranted: Vec<String>,
    /// The user's policy file written.
    pub policy: PathBuf,
}

/// Whether `name` can name an extension: a file stem and a TOML key alike.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

fn policy_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::Policy {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

use crate::files::{read_policy, write_policy};

/// Install the component `file` as the extension `name` (default: the file's
/// stem) in `user_config`'s extensions directory, granting it `grant` with its
/// digest pinned. Refuses a component that cannot be inspected, and a name
/// already installed.
pub async fn add(
    runtime: &Arc<Runtime>,
    user_config: &Path,
    file: &Path,
    name: Option<&str>,
    grant: GrantSpec,
) -> Result<Installed, Error> {
    let origin = file.display().to_string();
    let name = match name {
        Some(n) => n.to_string(),
        None => file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    free_name(user_config, &name, &origin)?;
    let bytes = files::read_regular(file, MAX_COMPONENT_BYTES)
        .and_then(|b| b.ok_or_else(|| "does not exist".to_string()))
        .map_err(|reason| Error::load(&origin, reason))?;
    install(runtime, user_config, &bytes, &origin, name, grant, None).await
}

/// Install the component `reference` (`oci://REGISTRY/REPOSITORY[:TAG]
/// [@sha256:…]`) names as the extension `name` (default: the repository's
/// last part): pulled and checked (`oci.rs`), its signatures checked
/// against what the user's file and `grant` say (`key`, `signed-by`,
/// `[trust] require-signatures`) before anything is written, then
/// installed as [`add`] does, with the record of where it came from beside
/// it and `source` in its grant.
pub async fn add_from_registry(
    runtime: &Arc<Runtime>,
    user_config: &Path,
    reference: &str,
    name: Option<&str>,
    mut grant: GrantSpec,
) -> Result<Installed, Error> {
    let load_error = |reason: String| Error::load(reference, reason);
    let r = OciRef::parse(reference).map_err(load_error)?;
    let name = match name {
        Some(n) => n.to_string(),
        None => r
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    free_name(user_config, &name, reference)?;
    grant.source = Some(r.to_string());
    let (provenance, component) = pull_checked(user_config, &r, &name, &grant).await?;
    install(
        runtime,
        user_config,
        &component,
        reference,
        name,
        grant,
        Some(&provenance),
    )
    .await
}

/// Pull `r` and check its signatures against the policies of `name` once
/// `grant` is written: the record to keep beside it, and the component.
async fn pull_checked(
    user_config: &Path,
    r: &OciRef,
    name: &str,
    grant: &GrantSpec,
) -> Result<(Provenance, Vec<u8>), Error> {
    let shown = r.to_string();
    let load_error = |reason: String| Error::load(&shown, reason);
    let policy = user_config.join(POLICY_FILE);
    let text = files::read_text(&policy, MAX_POLICY_BYTES)
        .map_err(|reason| policy_error(&policy, reason))?
        .unwrap_or_default();
    let policies = signature_policies_in(&text, &policy, name, grant)?;
    let pulled = oci::pull(r).await.map_err(load_error)?;
    let signatures = signature::fetch(r, &pulled.digest)
        .await
        .map_err(load_error)?;
    let bundles = keyless::fetch(r, &pulled.digest)
        .await
        .map_err(load_error)?;
    let provenance = Provenance {
        source: shown.clone(),
        digest: pulled.digest,
        manifest: String::from_utf8(pulled.manifest)
            .map_err(|_| load_error("its manifest is not UTF-8 text".into()))?,
        signatures,
        bundles,
    };
    for p in &policies {
        signature::verify(&oci::sha256(&pulled.component), &provenance, p)
            .map_err(|why| load_error(format!("its signature check failed: {why}")))?;
    }
    Ok((provenance, pulled.component))
}

/// Refuse a name that cannot name an extension or that is taken.
fn free_name(user_config: &Path, name: &str, origin: &str) -> Result<(), Error> {
    if !valid_name(name) {
        return Err(Error::load(
            origin,
            format!(
                "{name:?} cannot name an extension: use 1 to 64 letters, digits, '_', '-' or \
                 '.', not starting with '.'"
            ),
        ));
    }
    let dir = user_config.join("extensions");
    let dest = dir.join(format!("{name}.wasm"));
    if dest.exists() || dir.join(name).exists() {
        return Err(Error::load(
            origin,
            format!(
                "an extension named {name} is installed already ({}); remove it first with \
                 `toolhost ext remove {name}`",
                dest.display()
            ),
        ));
    }
    Ok(())
}

/// Inspect `bytes` (which fills the compile cache), then write them as
/// `name`'s component, its record beside it when it has one, and its grant
/// with their digest pinned.
async fn install(
    runtime: &Arc<Runtime>,
    user_config: &Path,
    bytes: &[u8],
    origin: &str,
    name: String,
    mut grant: GrantSpec,
    provenance: Option<&Provenance>,
) -> Result<Installed, Error> {
    let load_error = |reason: String| Error::load(origin, reason);
    let inspection = inspect_bytes(runtime, bytes, origin).await?;
    let dest = user_config.join("extensions").join(format!("{name}.wasm"));
    let digest = Digest::of(bytes);
    grant.digest = Some(digest.to_string());
    let policy = user_config.join(POLICY_FILE);
    let mut doc = read_policy(&policy)?;
    set_grant(&mut doc, &name, &grant).map_err(|reason| policy_error(&policy, reason))?;
    write_private(&dest, bytes).map_err(|e| load_error(format!("cannot be installed: {e}")))?;
    let kept = provenance.map_or(Ok(()), |p| p.write(&dest));
    if let Err(e) = kept
        .map_err(load_error)
        .and_then(|()| write_policy(&policy, &doc))
    {
        let _ = std::fs::remove_file(&dest);
        let _ = std::fs::remove_file(Provenance::path_of(&dest));
        return Err(e);
    }
    let ungranted = ungranted(&name, &inspection, &grant);
    Ok(Installed {
        name,
        path: dest,
        digest,
        inspection,
        grant,
        ungranted,
        policy,
    })
}

/// What `inspection` requests that `grant` does not give, each as the line
/// that would grant it.
fn ungranted(name: &str, inspection: &Inspection, grant: &GrantSpec) -> Vec<String> {
    ungranted_capabilities(inspection, grant)
        .iter()
        .map(|c| grant_line(name, c))
        .collect()
}

/// The capabilities (and `hooks`) `inspection` requests that `grant` does
/// not give: a component that imports one is refused at load.
pub fn ungranted_capabilities(inspection: &Inspection, grant: &GrantSpec) -> Vec<String> {
    requested(inspection)
        .into_iter()
        .filter(|c| !grant.grants(c))
        .collect()
}

/// What `update` found for one extension.
#[derive(Clone, Debug)]
pub enum Update {
    /// Its source names a digest: it cannot move.
    Pinned { source: String },
    /// The registry serves what is installed.
    Current { source: String, digest: String },
    /// A newer component, checked and signed as its policy says; installed
    /// when `update` was told to apply it.
    Newer {
        source: String,
        from: String,
        to: String,
        /// The capabilities (and `hooks`) the old and the new component
        /// request.
        requested: (Vec<String>, Vec<String>),
        /// What the new one requests that its grant does not give.
        ungranted: Vec<String>,
        applied: bool,
    },
}

/// Look for a newer component of the extension `name` where it was
/// installed from; when there is one, check it as `add` does (signatures
/// included) and inspect it; install it, pinning its digest in the same
/// grant, only when `apply`. Nothing changes otherwise.
pub async fn update(
    runtime: &Arc<Runtime>,
    user_config: &Path,
    name: &str,
    apply: bool,
) -> Result<Update, Error> {
    let policy = user_config.join(POLICY_FILE);
    let mut doc = read_policy(&policy)?;
    let grant: GrantSpec = doc
        .get("extensions")
        .and_then(|e| e.get(name))
        .map(|g| toml::from_str(&g.to_string()))
        .transpose()
        .map_err(|e| policy_error(&policy, format!("[extensions.{name}]: {e}")))?
        .ok_or_else(|| Error::runtime(format!("no extension named {name} is installed")))?;
    let Some(source) = grant.source.clone() else {
        return Err(Error::runtime(format!(
            "{name} was not installed from a registry (its grant names no source)"
        )));
    };
    let r = OciRef::parse(&source).map_err(|e| Error::load(&source, e))?;
    if r.digest().is_some() {
        return Ok(Update::Pinned { source });
    }
    let dest = user_config.join("extensions").join(format!("{name}.wasm"));
    let old = Provenance::read(&dest).map_err(|e| Error::load(&source, e))?;
    let (provenance, component) =
        pull_checked(user_config, &r, name, &GrantSpec::default()).await?;
    // A tag moved back to a version this extension was updated away from
    // is a rollback (an old flaw brought back under a valid signature).
    if grant.superseded.contains(&provenance.digest) {
        return Err(Error::load(
            &source,
            format!(
                "the registry now serves {}, a version {name} was updated away from; it is not \
                 installed again (to take it all the same, remove it from `superseded` in \
                 [extensions.{name}])",
                provenance.digest
            ),
        ));
    }
    if old.as_ref().is_some_and(|o| o.digest == provenance.digest) {
        return Ok(Update::Current {
            source,
            digest: provenance.digest,
        });
    }
    let inspection = inspect_bytes(runtime, &component, &source).await?;
    let before = match files::read_regular(&dest, MAX_COMPONENT_BYTES) {
        Ok(Some(bytes)) => requested(&inspect_bytes(runtime, &bytes, &source).await?),
        _ => Vec::new(),
    };
    let from = old.map_or_else(|| "(no record)".to_string(), |o| o.digest);
    let update = |applied| Update::Newer {
        source: source.clone(),
        from: from.clone(),
        to: provenance.digest.clone(),
        requested: (before.clone(), requested(&inspection)),
        ungranted: ungranted(name, &inspection, &grant),
        applied,
    };
    if !apply {
        return Ok(update(false));
    }
    let mut pinned = grant.clone();
    pinned.digest = Some(Digest::of(&component).to_string());
    if from.starts_with("sha256:") && !pinned.superseded.contains(&from) {
        pinned.superseded.push(from.clone());
    }
    set_grant(&mut doc, name, &pinned).map_err(|reason| policy_error(&policy, reason))?;
    write_private(&dest, &component)
        .map_err(|e| Error::load(&source, format!("cannot be installed: {e}")))?;
    provenance
        .write(&dest)
        .map_err(|e| Error::load(&source, e))?;
    write_policy(&policy, &doc)?;
    Ok(update(true))
}

/// The extensions the user's file says came from a registry (`source`).
pub fn from_registries(user_config: &Path) -> Result<Vec<String>, Error> {
    let policy = user_config.join(POLICY_FILE);
    let doc = read_policy(&policy)?;
    let Some(extensions) = doc.get("extensions").and_then(|e| e.as_table_like()) else {
        return Ok(Vec::new());
    };
    Ok(extensions
        .iter()
        .filter(|(_, grant)| grant.get("source").is_some())
        .map(|(name, _)| name.to_string())
        .collect())
}

/// The capabilities `inspection` requests, with `hooks` when it has them.
fn requested(inspection: &Inspection) -> Vec<String> {
    let mut requested = inspection.capabilities.clone();
    if inspection.hooks {
        requested.push("hooks".into());
    }
    requested
}

/// What `publish` did.
#[derive(Clone, Debug)]
pub struct Published {
    pub reference: String,
    /// The manifest's digest: `oci://…@<digest>` names exactly this.
    pub digest: String,
    /// Whether a signature by the key was pushed beside it.
    pub signed: bool,
}

/// Push the built component `file` to `reference` (a tag), checked to be a
/// tool component first; with `key` (a cosign private key, encrypted with
/// `password` or not), sign its manifest's digest and push the signature
/// as cosign does. Builds nothing.
pub async fn publish(
    runtime: &Arc<Runtime>,
    file: &Path,
    reference: &str,
    key: Option<&Path>,
    password: Option<&str>,
) -> Result<Published, Error> {
    let r = OciRef::parse(reference).map_err(|e| Error::load(reference, e))?;
    let origin = file.display().to_string();
    let bytes = files::read_regular(file, MAX_COMPONENT_BYTES)
        .and_then(|b| b.ok_or_else(|| "does not exist".to_string()))
        .map_err(|reason| Error::load(&origin, reason))?;
    inspect_bytes(runtime, &bytes, &origin).await?;
    // The key first: a wrong password pushes nothing.
    let signer = key
        .map(|k| signature::signer(k, password))
        .transpose()
        .map_err(|e| Error::load(reference, e))?;
    let digest = oci::push(&r, &bytes)
        .await
        .map_err(|e| Error::load(reference, e))?;
    if let Some(signer) = &signer {
        signature::sign_and_push(&r, &digest, signer)
            .await
            .map_err(|e| Error::load(reference, e))?;
    }
    Ok(Published {
        reference: r.to_string(),
        digest,
        signed: signer.is_some(),
    })
}

/// Write `grant` as the `[extensions.NAME]` table of `doc`: the keys it sets
/// replace those of an existing table, whose other keys (and comments) stay.
/// An `extensions` or grant written inline is left alone, with an error.
fn set_grant(
    doc: &mut toml_edit::DocumentMut,
    name: &str,
    grant: &GrantSpec,
) -> Result<(), String> {
    let as_doc = |g: &GrantSpec| -> toml_edit::DocumentMut {
        toml::to_string(g)
            .expect("a grant serializes")
            .parse()
            .expect("toml parses its own output")
    };
    let value = as_doc(grant);
    let extensions = doc
        .entry("extensions")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or("`extensions` is not a table; write the grant by hand")?;
    let table = extensions
        .entry(name)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("[extensions.{name}] is written inline; write the grant by hand"))?;
    let defaults = GrantSpec::default();
    let default_doc = as_doc(&defaults);
    for (key, item) in value.iter() {
        // Only what this grant sets: defaults (empty lists, false) stay out.
        if default_doc.get(key).map(|d| d.to_string()) == Some(item.to_string()) {
            continue;
        }
        table.insert(key, item.clone());
    }
    Ok(())
}

/// What `remove` did.
#[derive(Clone, Debug, Default)]
pub struct Removed {
    /// Component files or directories removed.
    pub files: Vec<PathBuf>,
    /// Whether a grant was removed from the user's policy file.
    pub grant: bool,
}

/// Remove the extension `name` from `user_config`: its component (file or
/// manifest directory) and its grant. An error when there was neither.
pub fn remove(user_config: &Path, name: &str) -> Result<Removed, Error> {
    if !valid_name(name) {
        return Err(Error::runtime(format!("{name:?} is not an extension name")));
    }
    let mut removed = Removed::default();
    let dir = user_config.join("extensions");
    let component = dir.join(format!("{name}.wasm"));
    for path in [Provenance::path_of(&component), component, dir.join(name)] {
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(_) => continue,
        };
        let gone = if meta.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        gone.map_err(|e| Error::runtime_because(format!("removing {}", path.display()), e))?;
        removed.files.push(path);
    }
    let policy = user_config.join(POLICY_FILE);
    if policy.exists() {
        let mut doc = read_policy(&policy)?;
        if let Some(extensions) = doc.get_mut("extensions").and_then(|e| e.as_table_mut()) {
            removed.grant = extensions.remove(name).is_some();
        }
        if removed.grant {
            write_policy(&policy, &doc)?;
        }
    }
    if removed.files.is_empty() && !removed.grant {
        return Err(Error::runtime(format!(
            "no extension named {name} is installed in {}",
            dir.display()
        )));
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_written_beside_the_users_comments_and_other_grants() {
        let mut doc: toml_edit::DocumentMut =
            "# my tools\nactive-tools = [\"read\"]\n\n[extensions.other]\nsearch = true # why\n"
                .parse()
                .unwrap();
        let grant = GrantSpec {
            digest: Some("blake3:ab".into()),
            fs_read: vec!["docs".into()],
            ..Default::default()
        };
        set_grant(&mut doc, "wc", &grant).unwrap();
        let text = doc.to_string();
        assert!(text.starts_with("# my tools\n"), "{text}");
        assert!(text.contains("search = true # why"), "{text}");
        let parsed: toml::Value = toml::from_str(&text).unwrap();
        let wc = &parsed["extensions"]["wc"];
        assert_eq!(wc["digest"].as_str(), Some("blake3:ab"));
        assert_eq!(wc["fs-read"][0].as_str(), Some("docs"));
        assert!(wc.get("search").is_none(), "defaults are not written");
    }

    #[test]
    fn names_are_file_stems_and_toml_keys() {
        let valid = ["wordcount", "my-tool_2.v1"];
        let invalid = ["", ".hidden", "a/b", "a b"];
        assert!(valid.iter().all(|n| valid_name(n)));
        assert!(!invalid.iter().any(|n| valid_name(n)));
    }
}

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
use crate::extensions::policy::grant_line;
use crate::extensions::policy::{GrantSpec, POLICY_FILE};
use crate::extensions::trust::Digest;
use crate::files::write_private;
use crate::files::{self, MAX_COMPONENT_BYTES};
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
    mut grant: GrantSpec,
) -> Result<Installed, Error> {
    let origin = file.display().to_string();
    let load_error = |reason: String| Error::load(&origin, reason);
    let name = match name {
        Some(n) => n.to_string(),
        None => file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    if !valid_name(&name) {
        return Err(load_error(format!(
            "{name:?} cannot name an extension: use 1 to 64 letters, digits, '_', '-' or '.', \
             not starting with '.'"
        )));
    }
    let bytes = files::read_regular(file, MAX_COMPONENT_BYTES)
        .and_then(|b| b.ok_or_else(|| "does not exist".to_string()))
        .map_err(load_error)?;
    let inspection = inspect_bytes(runtime, &bytes, &origin).await?;
    let dir = user_config.join("extensions");
    let dest = dir.join(format!("{name}.wasm"));
    if dest.exists() || dir.join(&name).exists() {
        return Err(load_error(format!(
            "an extension named {name} is installed already ({}); remove it first with \
             `toolhost ext remove {name}`",
            dest.display()
        )));
    }
    let digest = Digest::of(&bytes);
    grant.digest = Some(digest.to_string());
    let policy = user_config.join(POLICY_FILE);
    let mut doc = read_policy(&policy)?;
    set_grant(&mut doc, &name, &grant).map_err(|reason| policy_error(&policy, reason))?;
    write_private(&dest, &bytes).map_err(|e| load_error(format!("cannot be installed: {e}")))?;
    if let Err(e) = write_policy(&policy, &doc) {
        let _ = std::fs::remove_file(&dest);
        return Err(e);
    }
    let mut requested = inspection.capabilities.clone();
    if inspection.hooks {
        requested.push("hooks".into());
    }
    let ungranted = requested
        .iter()
        .filter(|c| !grant.grants(c))
        .map(|c| grant_line(&name, c))
        .collect();
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
    for path in [dir.join(format!("{name}.wasm")), dir.join(name)] {
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

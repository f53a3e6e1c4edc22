//! Policy: what each extension is granted, from `toolhost.toml`.
//!
//! Two files are read: the user's (`$XDG_CONFIG_HOME/toolhost/toolhost.toml`,
//! default `~/.config/toolhost/toolhost.toml`) and the workspace's
//! (`<workspace>/toolhost.toml`). Third-party extensions get nothing until a
//! file grants it; built-ins have fixed defaults ([`crate::builtin`]).
//!
//! # The agent cannot grant itself anything
//!
//! The workspace's file lies where the agent's own tools can write. It is
//! therefore applied only when the user has trusted it (`toolhost trust`),
//! which records the workspace's path and the file's content hash in the
//! user's `trust.toml`: any later change, by the agent or anyone, makes the
//! file untrusted again until the user looks at it and trusts it anew.
//!
//! ```toml
//! extension-paths = ["~/tools/jq.wasm"]          # more extensions (files or directories)
//! active-tools = ["read", "bash", "edit", "write", "grep"]
//!
//! [extensions.wordcount]                         # by extension name
//! fs-read = ["docs"]                             # directories, relative to the workspace
//! fs-write = ["out"]
//! process = ["git"]                              # programs it may run
//! network = true                                 # its programs may use the network
//! env = ["LANG"]                                 # environment variables it may see
//! search = true                                  # search within its fs-read roots
//! tools = true                                   # read and set the active tools
//! memory-mb = 128
//! time-limit-s = 30
//! output-kb = 512
//! ```

use crate::error::Error;
use crate::registry::Diagnostic;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The policy file's name, in the workspace and in the user config directory.
pub const POLICY_FILE: &str = "toolhost.toml";
/// Where the user's trust decisions are kept, in the user config directory.
pub const TRUST_FILE: &str = "trust.toml";

/// `$XDG_CONFIG_HOME/toolhost`, else `~/.config/toolhost`.
pub fn default_user_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config/toolhost"))
}

/// One extension's grants, as written in a policy file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct GrantSpec {
    pub fs_read: Vec<String>,
    pub fs_write: Vec<String>,
    pub process: Vec<String>,
    /// Its programs may use the network (IPv4 and IPv6 sockets; refused
    /// otherwise, see `ProcessPolicy::network`).
    pub network: bool,
    pub env: Vec<String>,
    pub search: bool,
    pub tools: bool,
    pub memory_mb: Option<u64>,
    pub time_limit_s: Option<f64>,
    pub output_kb: Option<u64>,
}

impl GrantSpec {
    /// Add `other`'s grants to these; its limits win where it sets them.
    fn merge(&mut self, other: &GrantSpec) {
        for (mine, theirs) in [
            (&mut self.fs_read, &other.fs_read),
            (&mut self.fs_write, &other.fs_write),
            (&mut self.process, &other.process),
            (&mut self.env, &other.env),
        ] {
            for item in theirs {
                if !mine.contains(item) {
                    mine.push(item.clone());
                }
            }
        }
        self.network |= other.network;
        self.search |= other.search;
        self.tools |= other.tools;
        self.memory_mb = other.memory_mb.or(self.memory_mb);
        self.time_limit_s = other.time_limit_s.or(self.time_limit_s);
        self.output_kb = other.output_kb.or(self.output_kb);
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
struct PolicyFile {
    extension_paths: Vec<String>,
    active_tools: Option<Vec<String>>,
    extensions: BTreeMap<String, GrantSpec>,
}

/// The policy in force: both files merged (the workspace's only if trusted).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    grants: BTreeMap<String, GrantSpec>,
    /// Extension files or directories named by the policy, resolved.
    pub extension_paths: Vec<PathBuf>,
    /// The default active tools, when a file sets them.
    pub active_tools: Option<Vec<String>>,
    /// The files applied, in order.
    pub applied: Vec<PathBuf>,
    /// Problems worth telling the user (an untrusted workspace file).
    pub diagnostics: Vec<Diagnostic>,
}

impl Policy {
    /// Read the user's and the workspace's files. A file that cannot be
    /// parsed is an error naming it: a typo must not silently drop a grant.
    pub fn load(workspace: &Path, user_config: Option<&Path>) -> Result<Policy, Error> {
        let mut policy = Policy::default();
        if let Some(dir) = user_config {
            let path = dir.join(POLICY_FILE);
            if let Some(file) = read_file(&path)? {
                policy.apply(file, workspace, &path);
            }
        }
        let path = workspace.join(POLICY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(policy_error(&path, e.to_string())),
        };
        if let Some(text) = text {
            if is_trusted(workspace, &text, user_config) {
                let file = parse(&text, &path)?;
                policy.apply(file, workspace, &path);
            } else {
                policy.diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: "not applied: this workspace's policy is not trusted (or changed \
                              since it was); review it, then run `toolhost trust`"
                        .into(),
                });
            }
        }
        Ok(policy)
    }

    fn apply(&mut self, file: PolicyFile, workspace: &Path, path: &Path) {
        for (name, grant) in &file.extensions {
            self.grants.entry(name.clone()).or_default().merge(grant);
        }
        self.extension_paths.extend(
            file.extension_paths
                .iter()
                .map(|p| resolve_path(p, workspace)),
        );
        if file.active_tools.is_some() {
            self.active_tools = file.active_tools;
        }
        self.applied.push(path.to_path_buf());
    }

    /// The grants of extension `name` (nothing when none are written).
    pub fn grants_for(&self, name: &str) -> GrantSpec {
        self.grants.get(name).cloned().unwrap_or_default()
    }
}

fn policy_error(path: &Path, reason: String) -> Error {
    Error::Policy {
        path: path.display().to_string(),
        reason,
    }
}

fn read_file(path: &Path) -> Result<Option<PolicyFile>, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(policy_error(path, e.to_string())),
    }
}

fn parse(text: &str, path: &Path) -> Result<PolicyFile, Error> {
    toml::from_str(text).map_err(|e| policy_error(path, e.to_string().trim().to_string()))
}

/// A path from a policy file: `~/…` is the user's home, a relative path is
/// relative to the workspace.
pub fn resolve_path(p: &str, workspace: &Path) -> PathBuf {
    if let (Some(rest), Some(home)) = (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    workspace.join(p)
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
struct TrustFile {
    workspace: Vec<TrustedWorkspace>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
struct TrustedWorkspace {
    path: PathBuf,
    policy_hash: String,
}

fn policy_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

fn read_trust(user_config: &Path) -> TrustFile {
    std::fs::read_to_string(user_config.join(TRUST_FILE))
        .ok()
        .and_then(|t| toml::from_str(&t).ok())
        .unwrap_or_default()
}

fn is_trusted(workspace: &Path, text: &str, user_config: Option<&Path>) -> bool {
    let Some(dir) = user_config else {
        return false;
    };
    let hash = policy_hash(text);
    read_trust(dir)
        .workspace
        .iter()
        .any(|w| w.path == workspace && w.policy_hash == hash)
}

/// Trust the workspace's current `toolhost.toml` (what `toolhost trust`
/// does): record its path and content hash in the user's `trust.toml`.
/// Returns the trusted file's path.
pub fn trust_workspace(workspace: &Path, user_config: &Path) -> Result<PathBuf, Error> {
    let path = workspace.join(POLICY_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| policy_error(&path, e.to_string()))?;
    parse(&text, &path)?;
    let mut trust = read_trust(user_config);
    trust.workspace.retain(|w| w.path != workspace);
    trust.workspace.push(TrustedWorkspace {
        path: workspace.to_path_buf(),
        policy_hash: policy_hash(&text),
    });
    let trust_path = user_config.join(TRUST_FILE);
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(user_config)?;
        let text = toml::to_string(&trust).map_err(std::io::Error::other)?;
        std::fs::write(&trust_path, text)
    };
    write().map_err(|e| policy_error(&trust_path, e.to_string()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let user = tmp.path().join("config");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        (tmp, ws, user)
    }

    #[test]
    fn merges_user_and_trusted_workspace_grants() {
        let (_tmp, ws, user) = dirs();
        std::fs::write(
            user.join(POLICY_FILE),
            "[extensions.wc]\nfs-read = [\"docs\"]\nmemory-mb = 64\n",
        )
        .unwrap();
        std::fs::write(
            ws.join(POLICY_FILE),
            "active-tools = [\"read\"]\n[extensions.wc]\nfs-read = [\"src\"]\nenv = [\"LANG\"]\n",
        )
        .unwrap();
        // Untrusted: only the user's file applies, and that is reported.
        let p = Policy::load(&ws, Some(&user)).unwrap();
        assert_eq!(p.grants_for("wc").fs_read, ["docs"]);
        assert_eq!(p.active_tools, None);
        assert_eq!(p.diagnostics.len(), 1);
        trust_workspace(&ws, &user).unwrap();
        let p = Policy::load(&ws, Some(&user)).unwrap();
        let wc = p.grants_for("wc");
        assert_eq!(wc.fs_read, ["docs", "src"]);
        assert_eq!(wc.env, ["LANG"]);
        assert_eq!(wc.memory_mb, Some(64));
        assert_eq!(p.active_tools, Some(vec!["read".to_string()]));
        assert!(p.diagnostics.is_empty());
        assert_eq!(p.grants_for("other"), GrantSpec::default());
    }

    #[test]
    fn a_changed_workspace_policy_is_no_longer_trusted() {
        let (_tmp, ws, user) = dirs();
        std::fs::write(ws.join(POLICY_FILE), "[extensions.wc]\nsearch = true\n").unwrap();
        trust_workspace(&ws, &user).unwrap();
        assert!(
            Policy::load(&ws, Some(&user))
                .unwrap()
                .grants_for("wc")
                .search
        );
        // The agent edits the file to grant itself more.
        std::fs::write(
            ws.join(POLICY_FILE),
            "[extensions.wc]\nsearch = true\nfs-write = [\"/\"]\n",
        )
        .unwrap();
        let p = Policy::load(&ws, Some(&user)).unwrap();
        assert_eq!(p.grants_for("wc"), GrantSpec::default());
        assert!(p.diagnostics[0].message.contains("not trusted"));
    }

    #[test]
    fn a_malformed_file_is_an_error_naming_it() {
        let (_tmp, ws, user) = dirs();
        std::fs::write(
            user.join(POLICY_FILE),
            "[extensions.wc]\nfs-reed = [\"x\"]\n",
        )
        .unwrap();
        let err = Policy::load(&ws, Some(&user)).unwrap_err().to_string();
        assert!(err.contains("toolhost.toml"), "{err}");
        assert!(err.contains("fs-reed"), "{err}");
    }
}

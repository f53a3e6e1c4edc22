//! Trust: nothing a tool can write decides what runs or what it is granted,
//! unless a person approved that exact content.
//!
//! What the user placed is trusted: the user configuration directory
//! (`toolhost.toml`, `extensions/`) and the files given on the command line.
//! What a workspace contributes lies where the agent's own tools can write:
//! its `toolhost.toml`, every manifest and component under `.toolhost/`, and
//! the components its `toolhost.toml` names. Each of those counts only as the
//! content a person reviewed with `toolhost trust`, which records the file's
//! BLAKE3 digest in the user's trust store (`trust.toml` in the user
//! configuration directory). Anything else, new or changed since, is
//! reported and never instantiated.
//!
//! Around that, the protected paths ([`super::protected_paths`]) keep tools
//! from changing what decides: no `fs-write` may touch them, and children see
//! them read-only.

use crate::error::Error;
pub use crate::files::Digest;
use crate::files::{self, MAX_TRUST_BYTES, write_private};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The trust store's file name, in the user configuration directory.
pub const TRUST_FILE: &str = "trust.toml";

/// The refusal of a workspace file nobody trusted.
pub const UNTRUSTED: &str = "untrusted: run toolhost trust to review";
/// The refusal of a workspace file that changed since it was trusted.
pub const CHANGED: &str = "untrusted (changed since trusted): run toolhost trust to review";

/// Whether a workspace file may decide anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, with other content.
    Changed,
}

impl Verdict {
    /// Why the file is refused; `None` when it is trusted.
    pub fn refusal(self) -> Option<&'static str> {
        match self {
            Verdict::Trusted => None,
            Verdict::Untrusted => Some(UNTRUSTED),
            Verdict::Changed => Some(CHANGED),
        }
    }

    /// The stricter of two verdicts (a component and its manifest).
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Trusted, v) | (v, Verdict::Trusted) => v,
            (Verdict::Changed, _) | (_, Verdict::Changed) => Verdict::Changed,
            _ => Verdict::Untrusted,
        }
    }
}

#[derive(Debug, Default, Deserialize, Serialize)]
struct TrustFile {
    #[serde(default)]
    workspace: Vec<TrustedWorkspace>,
}

/// One workspace's approved files: paths inside the workspace are relative
/// to it, others absolute. (Entries written by earlier versions, which held
/// only a `policy-hash`, approve nothing.)
#[derive(Debug, Deserialize, Serialize)]
struct TrustedWorkspace {
    path: PathBuf,
    #[serde(default)]
    files: BTreeMap<String, Digest>,
}

/// The user's trust decisions.
#[derive(Debug)]
pub struct TrustStore {
    /// Where it is kept; `None` keeps nothing (no user configuration).
    path: Option<PathBuf>,
    file: TrustFile,
}

impl TrustStore {
    /// A store that trusts nothing and cannot be saved.
    pub fn empty() -> TrustStore {
        TrustStore {
            path: None,
            file: TrustFile::default(),
        }
    }

    /// The store of the user configuration directory `user_config`. A store
    /// that cannot be read or parsed is an error naming it: guessing would
    /// either drop the user's decisions or invent some.
    pub fn load(user_config: &Path) -> Result<TrustStore, Error> {
        let path = user_config.join(TRUST_FILE);
        let fail = |reason: String| Error::Policy {
            path: path.display().to_string(),
            reason,
        };
        let file = match files::read_text(&path, MAX_TRUST_BYTES).map_err(fail)? {
            None => TrustFile::default(),
            Some(text) => toml::from_str(&text).map_err(|e| fail(e.to_string().trim().into()))?,
        };
        Ok(TrustStore {
            path: Some(path),
            file,
        })
    }

    /// Whether the workspace file `file` with content `digest` was approved.
    pub fn verdict(&self, workspace: &Path, file: &Path, digest: &Digest) -> Verdict {
        let key = key(workspace, file);
        match self.entry(workspace).and_then(|w| w.files.get(&key)) {
            Some(d) if d == digest => Verdict::Trusted,
            Some(_) => Verdict::Changed,
            None => Verdict::Untrusted,
        }
    }

    /// Whether anything of `workspace` is trusted.
    pub fn knows(&self, workspace: &Path) -> bool {
        self.entry(workspace).is_some_and(|w| !w.files.is_empty())
    }

    fn entry(&self, workspace: &Path) -> Option<&TrustedWorkspace> {
        self.file.workspace.iter().find(|w| w.path == workspace)
    }

    /// Approve exactly `files` (path, digest) of `workspace`, replacing what
    /// was approved of it before.
    pub fn trust(&mut self, workspace: &Path, files: &[(PathBuf, Digest)]) {
        self.revoke(workspace);
        self.file.workspace.push(TrustedWorkspace {
            path: workspace.to_path_buf(),
            files: files
                .iter()
                .map(|(path, digest)| (key(workspace, path), digest.clone()))
                .collect(),
        });
    }

    /// Forget `workspace`; whether it was known.
    pub fn revoke(&mut self, workspace: &Path) -> bool {
        let before = self.file.workspace.len();
        self.file.workspace.retain(|w| w.path != workspace);
        self.file.workspace.len() != before
    }

    /// Write the store (atomically, readable by the user only).
    pub fn save(&self) -> Result<PathBuf, Error> {
        let path = self.path.clone().ok_or_else(|| {
            Error::runtime("no user configuration directory to keep trust decisions in")
        })?;
        let fail = |reason: String| Error::Policy {
            path: path.display().to_string(),
            reason,
        };
        let text = toml::to_string(&self.file).map_err(|e| fail(e.to_string()))?;
        write_private(&path, text.as_bytes()).map_err(|e| fail(e.to_string()))?;
        Ok(path)
    }
}

/// How a file of `workspace` is recorded.
fn key(workspace: &Path, file: &Path) -> String {
    file.strip_prefix(workspace)
        .unwrap_or(file)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_recorded_digests() {
        let tmp = tempfile::tempdir().unwrap();
        let [config, ws, other] = ["config", "ws", "other"].map(|n| tmp.path().join(n));
        let a = Digest::of(b"a");
        let b = Digest::of(b"b");
        let mut store = TrustStore::load(&config).unwrap();
        assert_eq!(
            store.verdict(&ws, &ws.join("toolhost.toml"), &a),
            Verdict::Untrusted
        );
        store.trust(
            &ws,
            &[
                (ws.join("toolhost.toml"), a.clone()),
                (PathBuf::from("/opt/x.wasm"), b.clone()),
            ],
        );
        store.save().unwrap();
        let store = TrustStore::load(&config).unwrap();
        assert_eq!(
            store.verdict(&ws, &ws.join("toolhost.toml"), &a),
            Verdict::Trusted
        );
        assert_eq!(
            store.verdict(&ws, &ws.join("toolhost.toml"), &b),
            Verdict::Changed
        );
        assert_eq!(
            store.verdict(&ws, Path::new("/opt/x.wasm"), &b),
            Verdict::Trusted
        );
        assert_eq!(
            store.verdict(&other, &other.join("toolhost.toml"), &a),
            Verdict::Untrusted,
            "trust is per workspace"
        );
        let text = std::fs::read_to_string(config.join(TRUST_FILE)).unwrap();
        assert!(text.contains("\"toolhost.toml\" = \"blake3:"), "{text}");
        let mut store = TrustStore::load(&config).unwrap();
        assert!(store.revoke(&ws));
        assert!(!store.knows(&ws));
    }

    #[test]
    fn an_entry_of_an_earlier_version_approves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(TRUST_FILE),
            "[[workspace]]\npath = \"/ws\"\npolicy-hash = \"abc\"\n",
        )
        .unwrap();
        let store = TrustStore::load(tmp.path()).unwrap();
        assert_eq!(
            store.verdict(
                Path::new("/ws"),
                Path::new("/ws/toolhost.toml"),
                &Digest::of(b"")
            ),
            Verdict::Untrusted
        );
    }

    #[test]
    fn verdicts_combine_to_the_stricter() {
        use Verdict::*;
        assert_eq!(Trusted.and(Trusted), Trusted);
        assert_eq!(Trusted.and(Changed), Changed);
        assert_eq!(Untrusted.and(Trusted), Untrusted);
        assert_eq!(Untrusted.and(Changed), Changed);
    }
}

//! What `toolhost trust` shows a person before they approve a workspace, and
//! recording the approval.
//!
//! A review reads every file the workspace contributes once: its
//! `toolhost.toml`, each extension under `.toolhost/extensions/` (manifest
//! and component) and each component the `toolhost.toml` names. Components
//! are inspected from the bytes read, granted nothing, to show their tools,
//! hooks and requests; the digests recorded on approval are those of the
//! very bytes shown, so a file swapped after the review stays untrusted.

use crate::engine::Runtime;
use crate::error::Diagnostic;
use crate::error::Error;
use crate::extensions::discovery::{self, Origin};
use crate::extensions::policy::{self, GrantSpec, POLICY_FILE};
use crate::extensions::trust::{Digest, TrustStore, Verdict};
use crate::files::{self, MAX_COMPONENT_BYTES, MAX_POLICY_BYTES};
use crate::loader::{Inspection, inspect_bytes};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file under review, with its digest and whether it is trusted now.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewedFile {
    pub path: PathBuf,
    pub digest: Digest,
    #[serde(serialize_with = "verdict_name")]
    pub verdict: Verdict,
}

fn verdict_name<S: serde::Serializer>(v: &Verdict, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match v {
        Verdict::Trusted => "trusted",
        Verdict::Untrusted => "new",
        Verdict::Changed => "changed",
    })
}

/// An extension under review.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewedExtension {
    pub name: String,
    pub component: ReviewedFile,
    pub manifest: Option<ReviewedFile>,
    /// Its tools, hooks and requests; or why it cannot be inspected.
    pub inspection: Result<Inspection, String>,
    /// What the workspace's `toolhost.toml` grants it.
    pub grant: Option<GrantSpec>,
}

/// Everything a workspace contributes, as read now.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub workspace: PathBuf,
    pub policy: Option<ReviewedFile>,
    pub extensions: Vec<ReviewedExtension>,
    /// Files that cannot be trusted (unreadable, FIFOs, too large, broken
    /// manifests): they stay refused.
    pub problems: Vec<Diagnostic>,
}

impl Review {
    /// The files an approval records, with the digests shown.
    pub fn files(&self) -> Vec<(PathBuf, Digest)> {
        let mut files = Vec::new();
        let mut add = |f: &ReviewedFile| files.push((f.path.clone(), f.digest.clone()));
        if let Some(policy) = &self.policy {
            add(policy);
        }
        for ext in &self.extensions {
            add(&ext.component);
            if let Some(manifest) = &ext.manifest {
                add(manifest);
            }
        }
        files
    }

    /// Whether approving would change nothing (every file trusted as it is).
    pub fn all_trusted(&self) -> bool {
        self.policy
            .iter()
            .chain(self.extensions.iter().map(|e| &e.component))
            .chain(self.extensions.iter().filter_map(|e| e.manifest.as_ref()))
            .all(|f| f.verdict == Verdict::Trusted)
    }
}

/// Read what `workspace` contributes and how the user's trust store sees it.
/// A `toolhost.toml` that does not parse is an error: it cannot be trusted.
pub async fn review(
    runtime: &Arc<Runtime>,
    workspace: &Path,
    user_config: &Path,
) -> Result<Review, Error> {
    let store = TrustStore::load(user_config)?;
    let reviewed = |path: &Path, bytes: &[u8]| {
        let digest = Digest::of(bytes);
        ReviewedFile {
            path: path.to_path_buf(),
            verdict: store.verdict(workspace, path, &digest),
            digest,
        }
    };
    let mut problems = Vec::new();
    let policy_path = workspace.join(POLICY_FILE);
    let mut grants = BTreeMap::new();
    let mut named = Vec::new();
    let policy = match files::read_regular(&policy_path, MAX_POLICY_BYTES) {
        Ok(None) => None,
        Err(reason) => {
            problems.push(Diagnostic {
                path: policy_path.display().to_string(),
                message: reason,
            });
            None
        }
        Ok(Some(bytes)) => {
            let text = String::from_utf8(bytes.clone()).map_err(|_| Error::Policy {
                path: policy_path.display().to_string(),
                reason: "is not UTF-8 text".into(),
            })?;
            let parsed = policy::parse_text(&text, &policy_path, workspace)?;
            grants = parsed.grants;
            named = parsed.extension_paths;
            Some(reviewed(&policy_path, &bytes))
        }
    };
    let paths: Vec<(PathBuf, Origin)> = named.into_iter().map(|p| (p, Origin::Workspace)).collect();
    let (found, found_problems) = discovery::discover(
        &[(workspace.join(".toolhost/extensions"), Origin::Workspace)],
        &paths,
    );
    problems.extend(found_problems);
    let mut extensions = Vec::new();
    for ext in found {
        let bytes = match files::read_regular(&ext.component, MAX_COMPONENT_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                problems.push(Diagnostic {
                    path: ext.component.display().to_string(),
                    message: "does not exist".into(),
                });
                continue;
            }
            Err(reason) => {
                problems.push(Diagnostic {
                    path: ext.component.display().to_string(),
                    message: reason,
                });
                continue;
            }
        };
        let inspection = inspect_bytes(runtime, &bytes, &ext.component.display().to_string())
            .await
            .map_err(|e| e.reason());
        let manifest = ext
            .manifest_file
            .as_ref()
            .map(|(path, digest)| ReviewedFile {
                path: path.clone(),
                verdict: store.verdict(workspace, path, digest),
                digest: digest.clone(),
            });
        extensions.push(ReviewedExtension {
            grant: grants.get(&ext.name).cloned(),
            name: ext.name,
            component: reviewed(&ext.component, &bytes),
            manifest,
            inspection,
        });
    }
    Ok(Review {
        workspace: workspace.to_path_buf(),
        policy,
        extensions,
        problems,
    })
}

/// Approve exactly the files of `review` (replacing the workspace's earlier
/// approval); returns the trust store's path.
pub fn approve(review: &Review, user_config: &Path) -> Result<PathBuf, Error> {
    let mut store = TrustStore::load(user_config)?;
    store.trust(&review.workspace, &review.files());
    store.save()
}

/// Forget every approval of `workspace`; whether there was one.
pub fn revoke(workspace: &Path, user_config: &Path) -> Result<bool, Error> {
    let mut store = TrustStore::load(user_config)?;
    let known = store.revoke(workspace);
    if known {
        store.save()?;
    }
    Ok(known)
}

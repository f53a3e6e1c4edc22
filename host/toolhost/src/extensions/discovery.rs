//! Finding extensions: `<workspace>/.toolhost/extensions/`, then the user's
//! `<config>/toolhost/extensions/`, then paths given by the embedder (the
//! command line) or by policy files, in that order — the order decides name
//! collisions (the first extension to define a tool wins).
//!
//! In an extensions directory, each direct `*.wasm` file is an extension, and
//! so is each direct subdirectory holding an `extension.toml` manifest. Entries
//! whose names start with `.` are skipped; there is no deeper recursion; the
//! same component reached twice (by symlinks or repeated paths) loads once.
//!
//! Discovery reads manifests (bounded, never blocking: see
//! `crate::files`) and nothing else; whether a component may run
//! is decided when it is loaded, on the bytes that are then compiled.

use crate::error::Diagnostic;
use crate::extensions::trust::Digest;
use crate::files::{self, MAX_MANIFEST_BYTES};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A manifest file's name inside an extension's directory.
pub const MANIFEST_FILE: &str = "extension.toml";

/// An extension's `extension.toml`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Manifest {
    /// The name grants are written under (default: the directory's name).
    pub name: Option<String>,
    /// The component file, relative to the manifest's directory.
    pub component: String,
    pub description: Option<String>,
    /// The language of the project it is built from (`rust`, `js`,
    /// `python`, `c`): how `toolhost ext build` builds it. Loading ignores it.
    pub language: Option<String>,
    /// What the extension asks for; only policy files grant it.
    #[serde(default)]
    pub capabilities: crate::extensions::policy::GrantSpec,
    // What it offers beside its tools, for the front end that serves it
    // (MCP's prompts, resources and its tools' task support): read here as
    // written, read and checked by the MCP server (`crate::mcp::offers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<toml::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<toml::Value>,
    /// Settings of its tools, by name.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub tools: toml::Table,
}

impl Manifest {
    /// What it offers a front end, as written.
    pub fn offers(&self) -> Offers {
        Offers {
            prompts: self.prompts.clone(),
            resources: self.resources.clone(),
            tools: self.tools.clone(),
        }
    }
}

/// The sections of a manifest a front end serves: `[[prompts]]`,
/// `[[resources]]` and `[tools.NAME]`, as written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offers {
    pub prompts: Vec<toml::Value>,
    pub resources: Vec<toml::Value>,
    pub tools: toml::Table,
}

pub use crate::extensions::policy::Origin;

/// An extension to load.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    /// The name its grants are written under.
    pub name: String,
    /// The component file.
    pub component: PathBuf,
    pub manifest: Option<Manifest>,
    /// The manifest file and the digest of the content it was parsed from.
    pub manifest_file: Option<(PathBuf, Digest)>,
    pub origin: Origin,
}

/// Search `dirs` (in order), then `paths` (files or directories), each with
/// the origin its extensions get.
pub fn discover(
    dirs: &[(PathBuf, Origin)],
    paths: &[(PathBuf, Origin)],
) -> (Vec<Found>, Vec<Diagnostic>) {
    let mut found = Vec::new();
    let mut diagnostics = Vec::new();
    for (dir, origin) in dirs {
        if dir.is_dir() {
            scan_dir(dir, *origin, &mut found, &mut diagnostics);
        }
    }
    for (path, origin) in paths {
        if path.is_dir() {
            if has_manifest(path) {
                from_manifest_dir(path, *origin, &mut found, &mut diagnostics);
            } else {
                scan_dir(path, *origin, &mut found, &mut diagnostics);
            }
        } else {
            // A missing file is reported by the loader, naming it.
            found.push(Found {
                name: stem(path),
                component: path.clone(),
                manifest: None,
                manifest_file: None,
                origin: *origin,
            });
        }
    }
    // The same component twice (a symlink, a repeated path) loads once.
    let mut seen: Vec<PathBuf> = Vec::new();
    found.retain(|f| {
        let real = f
            .component
            .canonicalize()
            .unwrap_or_else(|_| f.component.clone());
        if seen.contains(&real) {
            false
        } else {
            seen.push(real);
            true
        }
    });
    (found, diagnostics)
}

/// Whether `dir` holds something named like a manifest (which reading it
/// then accepts or reports).
fn has_manifest(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(MANIFEST_FILE)).is_ok()
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn scan_dir(dir: &Path, origin: Origin, found: &mut Vec<Found>, diagnostics: &mut Vec<Diagnostic>) {
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(e) => {
            diagnostics.push(Diagnostic {
                path: dir.display().to_string(),
                message: format!("cannot read the extensions directory: {e}"),
            });
            return;
        }
    };
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            if has_manifest(&path) {
                from_manifest_dir(&path, origin, found, diagnostics);
            } else if name.ends_with(".wasm") {
                diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: format!(
                        "is a directory, not a component (an extension directory holds an \
                         {MANIFEST_FILE})"
                    ),
                });
            }
        } else if name.ends_with(".wasm") {
            found.push(Found {
                name: stem(&path),
                component: path,
                manifest: None,
                manifest_file: None,
                origin,
            });
        }
    }
}

fn from_manifest_dir(
    dir: &Path,
    origin: Origin,
    found: &mut Vec<Found>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let path = dir.join(MANIFEST_FILE);
    let report = |diagnostics: &mut Vec<Diagnostic>, message: String| {
        diagnostics.push(Diagnostic {
            path: path.display().to_string(),
            message,
        })
    };
    let bytes = match files::read_regular(&path, MAX_MANIFEST_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return report(diagnostics, "the manifest vanished".into()),
        Err(reason) => return report(diagnostics, format!("refused: {reason}")),
    };
    let digest = Digest::of(&bytes);
    let manifest: Manifest = match std::str::from_utf8(&bytes)
        .map_err(|_| "not UTF-8 text".to_string())
        .and_then(|t| toml::from_str(t).map_err(|e| e.to_string().trim().to_string()))
    {
        Ok(m) => m,
        Err(reason) => return report(diagnostics, format!("invalid manifest: {reason}")),
    };
    let component = dir.join(&manifest.component);
    // The component must live in the extension's own directory.
    let inside = component
        .canonicalize()
        .ok()
        .zip(dir.canonicalize().ok())
        .is_some_and(|(c, d)| c.starts_with(d));
    if !inside {
        diagnostics.push(Diagnostic {
            path: path.display().to_string(),
            message: format!(
                "component {:?} does not exist inside {}",
                manifest.component,
                dir.display()
            ),
        });
        return;
    }
    found.push(Found {
        name: manifest.name.clone().unwrap_or_else(|| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        component,
        manifest: Some(manifest),
        manifest_file: Some((path, digest)),
        origin,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovers_files_and_manifest_dirs_in_order() {
        let made = [
            "ws/wc",
            "ws/.hidden",
            "ws/no-manifest",
            "ws/deep/er",
            "user",
        ];
        let (_tmp, base) = crate::testing::real_temp_dir_with(&made);
        let [ws_ext, user_ext] = ["ws", "user"].map(|n| base.join(n));
        std::fs::write(ws_ext.join("b.wasm"), "").unwrap();
        std::fs::write(ws_ext.join(".skip.wasm"), "").unwrap();
        std::fs::write(ws_ext.join("notes.txt"), "").unwrap();
        std::fs::write(ws_ext.join("deep/er/x.wasm"), "").unwrap();
        std::fs::write(ws_ext.join("wc/wc.wasm"), "").unwrap();
        std::fs::write(
            ws_ext.join("wc/extension.toml"),
            "name = \"wordcount\"\ncomponent = \"wc.wasm\"\n[capabilities]\nfs-read = [\".\"]\n",
        )
        .unwrap();
        std::fs::write(user_ext.join("a.wasm"), "").unwrap();
        // The same file again through a symlink: loaded once.
        std::os::unix::fs::symlink(ws_ext.join("b.wasm"), user_ext.join("b-again.wasm")).unwrap();
        let (found, diagnostics) = discover(
            &[
                (ws_ext.clone(), Origin::Workspace),
                (user_ext.clone(), Origin::User),
            ],
            &[(base.join("extra.wasm"), Origin::Configured)],
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let names: Vec<(&str, Origin)> =
            found.iter().map(|f| (f.name.as_str(), f.origin)).collect();
        assert_eq!(
            names,
            [
                ("b", Origin::Workspace),
                ("wordcount", Origin::Workspace),
                ("a", Origin::User),
                ("extra", Origin::Configured),
            ]
        );
        assert_eq!(
            found[1].manifest.as_ref().unwrap().capabilities.fs_read,
            ["."]
        );
    }

    #[test]
    fn a_bad_manifest_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ext");
        std::fs::create_dir_all(dir.join("bad")).unwrap();
        std::fs::create_dir_all(dir.join("escape")).unwrap();
        std::fs::write(dir.join("bad/extension.toml"), "component = 3\n").unwrap();
        std::fs::write(
            dir.join("escape/extension.toml"),
            "component = \"../../x.wasm\"\n",
        )
        .unwrap();
        std::fs::write(tmp.path().join("x.wasm"), "").unwrap();
        let (found, diagnostics) = discover(&[(dir, Origin::Workspace)], &[]);
        assert!(found.is_empty());
        assert_eq!(diagnostics.len(), 2);
        assert!(diagnostics[0].message.starts_with("invalid manifest:"));
        assert!(diagnostics[1].message.contains("does not exist inside"));
    }
}

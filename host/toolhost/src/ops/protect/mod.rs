//! Protected paths: what decides which code runs and what it is granted, so
//! that no tool may change it.
//!
//! The list itself is built in one place (`protected_paths` of the
//! extensions' trust module): the workspace's
//! `toolhost.toml` and `.toolhost/`, toolhost's user configuration (grants,
//! trust store, user extensions) and its compile cache. Beside the list, one
//! rule holds at any depth: a repository's `.git/hooks/` and `.git/config`,
//! which make git run commands.
//!
//! The `fs-write` backends refuse to change these paths (`Path is protected`),
//! and the process jail mounts them read-only for children.

pub mod git;
pub mod guard;

pub use guard::{GitGuard, Reverted};

use std::path::{Component, Path, PathBuf};

/// Paths no tool may change, as real (symlink-free) absolute paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    paths: Vec<PathBuf>,
}

/// What a repository holds that makes git run commands.
const GIT_PROTECTED: &[&str] = &["hooks", "config"];

impl ProtectedPaths {
    /// Protect `paths` (each with everything beneath it). A path that does
    /// not exist yet is protected where it would be created: its longest
    /// existing ancestor is resolved, the rest kept as given.
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> ProtectedPaths {
        let mut resolved: Vec<PathBuf> = Vec::new();
        for path in paths {
            let real = real_or_planned(&path);
            if !resolved.contains(&real) {
                resolved.push(real);
            }
        }
        ProtectedPaths { paths: resolved }
    }

    /// The listed paths (the `.git` rule comes on top of them).
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Whether changing the real absolute path `path` would change a
    /// protected path: it is one, lies beneath one, or lies in a `.git/hooks`
    /// or is a `.git/config`.
    pub fn covers(&self, path: &Path) -> bool {
        if self.paths.iter().any(|p| path.starts_with(p)) {
            return true;
        }
        let names: Vec<&std::ffi::OsStr> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        names
            .windows(2)
            .any(|w| w[0] == ".git" && GIT_PROTECTED.iter().any(|p| w[1] == *p))
    }

    /// Whether the directory `dir` holds, or lies inside, a protected path:
    /// a writable view of it (a WASI preopen) could change one. Beyond the
    /// list, a repository at the top of `dir` counts (its `.git/hooks`);
    /// repositories nested deeper are found only by [`Self::covers`].
    pub fn within(&self, dir: &Path) -> bool {
        self.paths
            .iter()
            .any(|p| p.starts_with(dir) || dir.starts_with(p))
            || self.covers(dir)
            || dir.join(".git").exists()
    }
}

/// The real path of `path`, or where it would be: its longest existing
/// ancestor resolved, the missing rest appended.
fn real_or_planned(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = current.canonicalize() {
            return missing.iter().rev().fold(real, |p, name| p.join(name));
        }
        match (current.file_name(), current.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_os_string());
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_the_list_beneath_and_git_hooks_and_config_at_any_depth() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".toolhost")).unwrap();
        let p = ProtectedPaths::new([
            ws.join("toolhost.toml"),
            ws.join(".toolhost"),
            ws.join("not/yet/there"),
        ]);
        assert!(p.covers(&ws.join("toolhost.toml")));
        assert!(p.covers(&ws.join(".toolhost/extensions/x.wasm")));
        assert!(p.covers(&ws.join("not/yet/there/file")));
        assert!(p.covers(&ws.join(".git/config")));
        assert!(p.covers(&ws.join(".git/hooks/pre-commit")));
        assert!(p.covers(&ws.join("vendor/lib/.git/hooks")));
        assert!(!p.covers(&ws.join(".git/objects/ab")));
        assert!(!p.covers(&ws.join("toolhost.toml.bak")));
        assert!(!p.covers(&ws.join("src/main.rs")));
        assert!(!p.covers(&ws.join("config")));
        assert!(p.within(&ws), "the workspace holds protected paths");
        assert!(p.within(&ws.join(".toolhost/extensions")));
        assert!(!p.within(&ws.join("src")));
    }

    #[test]
    fn a_symlinked_ancestor_is_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().canonicalize().unwrap().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
        let p = ProtectedPaths::new([tmp.path().join("link/config/toolhost")]);
        assert_eq!(p.paths(), [real.join("config/toolhost")]);
    }
}

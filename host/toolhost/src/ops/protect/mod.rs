//! What decides which code runs and what it is granted, protected by what
//! it is rather than by the name it had when a call began.
//!
//! * [`ProtectedPaths`]: toolhost's own files (the workspace's
//!   `toolhost.toml` and `.toolhost/`, the user configuration with its grants,
//!   trust store and extensions, the compile cache, the audit log and the
//!   state directory), and, at any depth, whatever git would read to decide
//!   what to run ([`git`]): anything in a git directory (a `.git`, a bare
//!   repository, a submodule's or worktree's git directory, found by its
//!   shape), a `.git` file, and the files a repository's or the user's
//!   configuration names as includes or as its hooks directory. The
//!   `fs-write` backends refuse to change any of it (`Path is protected`), and
//!   the process jail keeps what exists of it read-only, with every directory
//!   on the way to toolhost's own files pinned so that no rename moves them.
//! * Secrets, in the same set: the user's credential stores, the compile
//!   cache's key, and every file and environment variable a grant names as a
//!   secret's source (`[extensions.X.secrets.T] from = "file:…"`). They join
//!   the set where it is built, so every consumer hides them without being
//!   told: the jails (hidden by empty mounts), `read` and extensions' fs-read
//!   (refused on the real path of the opened file), searches (never walked),
//!   MCP resources and completions (never named), the permission asker
//!   (never asked about), WASI preopens (a directory holding one is not
//!   preopened) and processes' environments (never passed).
//! * [`GitGuard`]: what a call's programs (and a component's own WASI files)
//!   can still do beneath their write roots (create a repository where none
//!   was, rename a directory holding one) is surveyed after the call, and
//!   what would make git run code is undone.

pub mod git;
pub mod guard;

pub use guard::GitGuard;

use crate::files::real_or_planned;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Paths no tool may change, as real (symlink-free) absolute paths, and the
/// rule for git's files at any depth.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    paths: Vec<PathBuf>,
    /// Locates the user's global git configuration.
    home: Option<PathBuf>,
    /// Secrets no tool may read, list or be shown, as real absolute paths
    /// (each with everything beneath it).
    secrets: Vec<PathBuf>,
    /// Environment variables that are secrets' sources.
    secret_env: Vec<String>,
}

impl ProtectedPaths {
    /// Protect `paths` (each with everything beneath it). A path that does
    /// not exist yet is protected where it would be created: its longest
    /// existing ancestor is resolved, the rest kept as given.
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> ProtectedPaths {
        let mut resolved: Vec<PathBuf> = Vec::new();
        add_real(&mut resolved, paths);
        ProtectedPaths {
            paths: resolved,
            home: None,
            secrets: Vec::new(),
            secret_env: Vec::new(),
        }
    }

    /// Also hide `paths` (each with everything beneath it) from every tool:
    /// never read, listed, searched, offered or mounted into a jail. Resolved
    /// as [`Self::new`] resolves, so a secret not made yet is hidden where
    /// it would be made.
    pub fn hide_secrets(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        add_real(&mut self.secrets, paths);
        self
    }

    /// Also withhold the environment variables `names` (secrets' sources)
    /// from every component and process.
    pub fn hide_env(mut self, names: impl IntoIterator<Item = String>) -> Self {
        for name in names {
            if !self.secret_env.contains(&name) {
                self.secret_env.push(name);
            }
        }
        self
    }

    /// The hidden secrets, as real absolute paths.
    pub fn secrets(&self) -> &[PathBuf] {
        &self.secrets
    }

    /// Whether the real absolute path `path` is a secret or lies beneath
    /// one: no tool may read it, list it or learn its name.
    pub fn hides(&self, path: &Path) -> bool {
        self.secrets.iter().any(|s| path.starts_with(s))
    }

    /// The secrets that can hide something beneath the real directory
    /// `dir`: those inside it, and one it lies inside. A walk or a listing of
    /// `dir` checks its entries against these alone (an entry beneath `dir`
    /// lies beneath a secret only if that secret is one of them).
    pub fn secrets_along(&self, dir: &Path) -> Vec<PathBuf> {
        self.secrets
            .iter()
            .filter(|s| s.starts_with(dir) || dir.starts_with(s))
            .cloned()
            .collect()
    }

    /// Whether a secret that exists lies beneath the directory `dir` (or
    /// `dir` beneath one): a view of `dir` that cannot be checked path by
    /// path (a WASI preopen, made once at start) would show it. A store not
    /// made yet holds nothing to show.
    pub fn hides_within(&self, dir: &Path) -> bool {
        self.secrets_along(dir)
            .iter()
            .any(|s| dir.starts_with(s) || s.symlink_metadata().is_ok())
    }

    /// Whether no tool may reach the real absolute path `path` at all:
    /// it is protected ([`Self::covers`]) or a secret ([`Self::hides`]).
    pub fn out_of_reach(&self, path: &Path) -> bool {
        self.covers(path) || self.hides(path)
    }

    /// Whether the environment variable `name` is a secret's source.
    pub fn hides_env(&self, name: &str) -> bool {
        self.secret_env.iter().any(|n| n == name)
    }

    /// Judge git files as this user's git reads them (`home` locates the
    /// global configuration, its includes and hooks path).
    pub fn for_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// The listed paths (the git rule comes on top of them).
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Whether changing (or creating) the real absolute path `path` would
    /// change a protected path: it is one or lies beneath one, or git reads
    /// it to decide what to run ([`git_reads`]).
    pub fn covers(&self, path: &Path) -> bool {
        self.paths.iter().any(|p| beneath(path, p)) || git_reads(path, self.home.as_deref())
    }

    /// Whether the real absolute path `path` is a protected path or a
    /// secret, lies beneath one, or is in or named `.git`: judged on the
    /// path alone, reading no file (what a recording never keeps the bytes
    /// of; [`Self::covers`] also follows git's configuration).
    pub fn holds(&self, path: &Path) -> bool {
        self.paths
            .iter()
            .chain(&self.secrets)
            .any(|p| beneath(path, p))
            || path
                .as_os_str()
                .as_bytes()
                .split(|&b| b == b'/')
                .any(|c| c == b".git")
    }

    /// Whether the directory `dir` holds, or lies inside, a protected path:
    /// a writable view of it (a WASI preopen) could change one. Beyond the
    /// list, a repository at the top of `dir` counts; repositories deeper
    /// are the git guard's ([`GitGuard`]).
    pub fn within(&self, dir: &Path) -> bool {
        self.paths
            .iter()
            .any(|p| p.starts_with(dir) || dir.starts_with(p))
            || self.covers(dir)
            || dir.join(".git").exists()
    }
}

/// Whether the absolute path `path` is `dir` or lies beneath it: what
/// `Path::starts_with` says of two real paths (no `.`, `..` or doubled
/// separator in either), compared as bytes, which a check made on every
/// read can afford.
fn beneath(path: &Path, dir: &Path) -> bool {
    fn trimmed(p: &Path) -> &[u8] {
        let bytes = p.as_os_str().as_bytes();
        let end = bytes
            .iter()
            .rposition(|&b| b != b'/')
            .map_or(1.min(bytes.len()), |i| i + 1);
        &bytes[..end]
    }
    let (path, dir) = (trimmed(path), trimmed(dir));
    path.starts_with(dir) && (path.len() == dir.len() || dir == b"/" || path[dir.len()] == b'/')
}

/// Add the real form of each of `paths` to `list` (a path not made yet
/// where it would be made), once.
fn add_real(list: &mut Vec<PathBuf>, paths: impl IntoIterator<Item = PathBuf>) {
    for path in paths {
        let real = real_or_planned(&path);
        if !list.contains(&real) {
            list.push(real);
        }
    }
}

/// Whether git reads (or would read, were it created) the absolute path
/// `path` to decide what to run, judged by what is on the way to it:
///
/// * a component named `.git` (a git directory, or a `gitdir:` file);
/// * an ancestor shaped like a git directory ([`git::looks_like_git_dir`]),
///   counting what this change would create on the way: writing
///   `x/HEAD` beside `x/objects` and `x/refs` makes `x` one;
/// * the hooks directory, or a file included by the configuration, of a
///   repository that encloses it, or of the user's global configuration.
pub fn git_reads(path: &Path, home: Option<&Path>) -> bool {
    if path.components().any(|c| c.as_os_str() == ".git") {
        return true;
    }
    let mut child: Option<&OsStr> = path.file_name();
    for dir in path.ancestors().skip(1) {
        let has = |name: &str| child == Some(OsStr::new(name)) || dir.join(name).exists();
        if git::looks_like_git_dir(has) {
            return true;
        }
        if dir.join(".git").exists() && named_by_repository(dir, path, home) {
            return true;
        }
        child = dir.file_name();
    }
    named_by_global(path, home)
}

/// Whether the repository found from `top` names `path` as its hooks
/// directory (or lies in it) or as an included configuration file.
fn named_by_repository(top: &Path, path: &Path, home: Option<&Path>) -> bool {
    let dot_git = top.join(".git");
    let git_dir = match std::fs::read_to_string(&dot_git) {
        Ok(text) => match git::gitdir_target(top, &text) {
            Some(dir) => dir,
            None => return false,
        },
        Err(_) => dot_git,
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git::lexical_join(&git_dir, Path::new(text.trim())),
        Err(_) => git_dir.clone(),
    };
    [common.join("config"), git_dir.join("config.worktree")]
        .iter()
        .any(|config| names(config, top, path, home, 0))
}

/// Whether the user's global configuration names `path`.
fn named_by_global(path: &Path, home: Option<&Path>) -> bool {
    let Some(home) = home else { return false };
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".config"));
    [xdg.join("git/config"), home.join(".gitconfig")]
        .iter()
        .any(|config| path == config || names(config, home, path, Some(home), 0))
}

/// Whether the configuration `config` (or what it includes) names `path`
/// as an include or as the hooks directory (relative to `base`).
fn names(config: &Path, base: &Path, path: &Path, home: Option<&Path>, depth: usize) -> bool {
    const MAX_DEPTH: usize = 10;
    let Ok(Some(text)) = crate::files::read_text(config, git::MAX_CODE_FILE) else {
        return false;
    };
    if let Some(hooks) =
        git::hooks_path(&text).and_then(|value| git::config_path(&value, base, home))
        && path.starts_with(&hooks)
    {
        return true;
    }
    let dir = config.parent().unwrap_or(Path::new("/"));
    depth < MAX_DEPTH
        && git::includes(&text).iter().any(|include| {
            git::config_path(include, dir, home).is_some_and(|included| {
                included == path || names(&included, base, path, home, depth + 1)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beneath_says_what_starts_with_says_of_real_paths() {
        let paths = [
            "/", "/a", "/a/", "/ab", "/a/b", "/a/b/", "/a/bc", "/a/b/c", "/b", "/a/.git",
        ];
        for path in paths {
            for dir in paths {
                let (path, dir) = (Path::new(path), Path::new(dir));
                assert_eq!(
                    beneath(path, dir),
                    path.starts_with(dir),
                    "{path:?} in {dir:?}"
                );
            }
        }
    }

    #[test]
    fn covers_the_list_beneath_and_git_hooks_and_config_at_any_depth() {
        let (_tmp, ws) = crate::testing::real_temp_dir_with(&[".toolhost"]);
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
        assert!(p.covers(&ws.join(".git/modules/sub/config")));
        assert!(p.covers(&ws.join("sub/.git")));
        assert!(!p.covers(&ws.join("toolhost.toml.bak")));
        assert!(!p.covers(&ws.join("src/main.rs")));
        assert!(!p.covers(&ws.join("config")));
        assert!(p.within(&ws), "the workspace holds protected paths");
        assert!(p.within(&ws.join(".toolhost/extensions")));
        assert!(!p.within(&ws.join("src")));
    }

    #[test]
    fn git_directories_are_known_by_their_shape_and_what_configuration_names() {
        let (_tmp, ws) = crate::testing::real_temp_dir();
        let p = ProtectedPaths::default();
        // A bare repository under any name, and one this write would complete.
        std::fs::create_dir_all(ws.join("bare/objects")).unwrap();
        std::fs::create_dir_all(ws.join("bare/refs")).unwrap();
        assert!(!p.covers(&ws.join("bare/notes.txt")));
        assert!(p.covers(&ws.join("bare/HEAD")), "completes a git directory");
        std::fs::write(ws.join("bare/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(p.covers(&ws.join("bare/config")));
        // A hooks path and an include that a repository's configuration names.
        std::fs::create_dir_all(ws.join("repo/.git")).unwrap();
        std::fs::write(
            ws.join("repo/.git/config"),
            "[core]\n\thooksPath = .husky\n[include]\n\tpath = ../shared.gitconfig\n",
        )
        .unwrap();
        assert!(p.covers(&ws.join("repo/.husky/pre-commit")));
        assert!(p.covers(&ws.join("repo/shared.gitconfig")));
        assert!(!p.covers(&ws.join("repo/src/main.rs")));
        assert!(!p.covers(&ws.join("repo/.gitignore")));
        // The user's global configuration, when home is in reach.
        std::fs::write(ws.join(".gitconfig"), "[core]\n\thooksPath = ~/hooks\n").unwrap();
        let home = ProtectedPaths::default().for_home(Some(ws.clone()));
        assert!(home.covers(&ws.join(".gitconfig")));
        assert!(home.covers(&ws.join("hooks/pre-push")));
        assert!(!p.covers(&ws.join("hooks/pre-push")));
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

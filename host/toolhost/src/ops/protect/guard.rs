//! The git guard: after a call that could write beneath some roots (a
//! command's processes, a component's writable WASI directories), nothing
//! git would run for the user anywhere beneath them carries what the call
//! put there.
//!
//! # How
//!
//! A survey walks the roots the way git's discovery would see them: every
//! directory holding a `.git` (directory, `gitdir:` file or link) and every
//! directory shaped like a git directory (a bare repository, a submodule's
//! or a worktree's git directory), with their `commondir` redirections, and
//! from each repository the files that decide what git runs: its
//! configuration and worktree configuration, their includes, the global
//! configuration, and the hooks in the hooks directory git would use
//! (`core.hooksPath` included). Directories are remembered by identity and
//! change time, so a survey re-reads only the directories that changed since
//! the last one (a directory whose change time is too recent to trust is
//! read again next time, as git does with its index). Each directory read is
//! also watched with inotify ([`DirWatch`]): one the kernel reported nothing
//! for since it was read is taken from memory without even a `stat`, which
//! makes the survey after a call cost what changed, not the size of the
//! tree. Any report on a directory, or on a name in it, and any lost report
//! (the queue overflowed), sends the survey back to the `stat`.
//!
//! After the call, each of those files whose change time falls in the call
//! (the kernel sets it; no program can set it back) is judged by what it
//! is ([`super::git`]): a configuration must be inert, a hook may not be an
//! executable file git would run. One that is not is neutralized: the
//! version before the call is put back where one was known, otherwise a
//! configuration keeps only its inert entries and a hook is removed; the
//! call's version is kept in the quarantine directory, and the call's
//! result says what was reverted.
//!
//! # What it cannot see
//!
//! A change made and undone within the call leaves nothing to judge (and
//! nothing for git to run). A program the user runs *while* the call runs
//! sees what the call wrote until the call ends; the process jail keeps the
//! configuration and hooks of the repositories that exist when a command
//! starts read-only for that reason. A change the user makes to a
//! repository's configuration while a call runs is judged as the call's.

use super::git::{self, MAX_CODE_FILE};
use rustix::fd::OwnedFd;
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Change times this close to the survey's start are not trusted: file
/// times come from a coarse clock (up to 10 ms behind), so a change just
/// after a read can carry the same time.
const RACY: Duration = Duration::from_millis(50);
/// Most directories one survey visits (a survey of more stops there and
/// says so: the rest is not checked).
pub const MAX_SURVEY_DIRS: usize = 200_000;
/// Most includes followed from one configuration file (git's own limit).
const MAX_INCLUDE_DEPTH: usize = 10;

/// What identifies a version of a file: which inode, when it last changed,
/// its size and mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
    size: u64,
    mode: u32,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            size: meta.size(),
            mode: meta.mode(),
        }
    }

    fn changed_since(&self, t: SystemTime) -> bool {
        let since = t
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_sub(RACY);
        let ctime = Duration::new(self.ctime.0.max(0) as u64, self.ctime.1.max(0) as u32);
        ctime >= since
    }
}

/// What a directory's entries tell about git, remembered by identity.
#[derive(Clone, Debug)]
struct DirInfo {
    id: FileId,
    /// Its entries can be trusted until its identity changes.
    settled: bool,
    subdirs: Vec<OsString>,
    /// Its other entries' names, kept only for a hooks directory (the
    /// survey of a large tree keeps no file names).
    files: Vec<OsString>,
    /// What its `.git` entry is, if it has one.
    dot_git: Option<DotGit>,
    looks_like_git_dir: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum DotGit {
    Dir,
    File,
    Link,
}

/// What a file git reads decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    /// A configuration file (or one it includes).
    Config,
    /// A file in a hooks directory that git would run by its name.
    Hook,
    /// A `gitdir:` file or `commondir` file: where git looks.
    Redirect,
}

/// A repository as git finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    /// The directory git finds it from: the one holding `.git`, or the
    /// git directory itself for a bare one.
    pub top: PathBuf,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    /// The hooks directory git would use.
    pub hooks: PathBuf,
}

/// One file that decides what git runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeFile {
    pub path: PathBuf,
    pub kind: CodeKind,
}

/// The remembered content of a code file, to put back.
#[derive(Clone, Debug)]
struct Version {
    id: FileId,
    /// `None` when it was too large or unreadable.
    content: Option<Arc<Vec<u8>>>,
}

/// What the guard undid after a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reverted {
    pub path: PathBuf,
    /// Why, as a clause: `set core.fsmonitor, which makes git run a program`.
    pub reason: String,
    /// What was done: the earlier version put back, the inert part kept, or
    /// the file removed.
    pub action: Action,
    /// Where the call's version was kept.
    pub kept: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Restored,
    ReducedToInert,
    Removed,
}

impl Reverted {
    /// One line for the model and the person: what was reverted and why.
    pub fn sentence(&self) -> String {
        let done = match self.action {
            Action::Restored => "put back the version from before the call",
            Action::ReducedToInert => "kept only its settings that run nothing",
            Action::Removed => "removed it",
        };
        let kept = self
            .kept
            .as_ref()
            .map(|p| format!(" (the call's version is kept at {})", p.display()))
            .unwrap_or_default();
        format!(
            "toolhost reverted {}: the call {}; git's configuration and hooks may not be \
             changed to run programs, so toolhost {done}{kept}.",
            self.path.display(),
            self.reason
        )
    }
}

/// The survey's memory between calls.
#[derive(Default)]
struct State {
    dirs: HashMap<PathBuf, DirInfo>,
    /// What the kernel said changed among the directories read.
    watch: DirWatch,
    /// Each code file's version as last accepted (the user's, or what a
    /// call left that could run nothing): what a call's change is compared
    /// with, and what is put back.
    versions: HashMap<PathBuf, Version>,
    /// Texts read while surveying, by identity.
    reads: HashMap<PathBuf, Version>,
    repositories: Vec<Repository>,
    code: Vec<CodeFile>,
    surveyed: bool,
    /// A survey stopped at [`MAX_SURVEY_DIRS`].
    incomplete: bool,
}

/// The git guard of one set of write roots (see the module docs). Shared by
/// every call whose writes reach those roots.
pub struct GitGuard {
    roots: Vec<PathBuf>,
    home: Option<PathBuf>,
    /// Where neutralized versions are kept (created when first needed).
    quarantine: Option<PathBuf>,
    state: Mutex<State>,
    /// Writers that outlive calls (session processes), each with the time
    /// since which it may have written: a change since the earliest is
    /// theirs, not the user's, whatever call's settle finds it.
    writers: Mutex<Vec<(u64, SystemTime)>>,
}

/// A writer of the guard's roots that outlives calls ([`GitGuard::writer`]);
/// dropped once it is gone and its writes were settled.
pub struct Writer {
    guard: Arc<GitGuard>,
    id: u64,
}

impl Writer {
    /// A watch since the writer began.
    pub fn watch(&self) -> Watch {
        let writers = self.guard.writers.lock().unwrap_or_else(|e| e.into_inner());
        let started = writers
            .iter()
            .find(|(id, _)| *id == self.id)
            .map_or_else(SystemTime::now, |(_, since)| *since);
        Watch { started }
    }

    pub fn guard(&self) -> &Arc<GitGuard> {
        &self.guard
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let mut writers = self.guard.writers.lock().unwrap_or_else(|e| e.into_inner());
        writers.retain(|(id, _)| *id != self.id);
    }
}

impl std::fmt::Debug for GitGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitGuard")
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

/// A call being watched: when it started.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    started: SystemTime,
}

impl GitGuard {
    /// A guard of `roots` (real paths); `home` locates the user's global
    /// configuration, `quarantine` keeps what it neutralizes.
    pub fn new(roots: Vec<PathBuf>, home: Option<PathBuf>, quarantine: Option<PathBuf>) -> Self {
        GitGuard {
            roots,
            home,
            quarantine,
            state: Mutex::new(State::default()),
            writers: Mutex::new(Vec::new()),
        }
    }

    /// A writer that outlives calls begins now (a session process): until
    /// it is dropped, every settle judges what changed since now as a
    /// writer's (see [`Self::settle`]).
    pub fn writer(self: &Arc<Self>) -> Writer {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        // The first survey, so that what exists now is known as the user's.
        let _ = self.watch();
        let mut writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        writers.push((id, SystemTime::now()));
        Writer {
            guard: self.clone(),
            id,
        }
    }

    /// Since when a change is a writer's or the call's: the earlier of the
    /// call's start and the earliest live writer's.
    fn since(&self, watch: Watch) -> SystemTime {
        let writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        writers
            .iter()
            .map(|(_, since)| *since)
            .fold(watch.started, std::cmp::min)
    }

    /// A guard of `roots` for this user: `$HOME` locates the global
    /// configuration.
    pub fn of_user(roots: Vec<PathBuf>, quarantine: Option<&Path>) -> Self {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        GitGuard::new(roots, home, quarantine.map(Path::to_path_buf))
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Start watching a call: the first call surveys the roots (so that
    /// later surveys read only what changed, and what exists is known).
    pub fn watch(&self) -> Watch {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.surveyed {
            self.survey(&mut state);
        }
        Watch {
            started: SystemTime::now(),
        }
    }

    /// The repositories and code files the last survey found (what the jail
    /// keeps read-only while a command runs).
    pub fn known(&self) -> (Vec<Repository>, Vec<CodeFile>) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.repositories.clone(), state.code.clone())
    }

    /// Whether the last survey stopped before the end of the roots.
    pub fn incomplete(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .incomplete
    }

    /// End watching a call: survey again, and neutralize every file that
    /// decides what git runs, changed during the call, that could run code.
    pub fn settle(&self, watch: Watch) -> Vec<Reverted> {
        let since = self.since(watch);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.survey(&mut state);
        let mut reverted = Vec::new();
        let code = state.code.clone();
        for file in code.iter().filter(|f| self.beneath_roots(&f.path)) {
            let Some(id) = file_id(&file.path) else {
                state.versions.remove(&file.path);
                continue;
            };
            let earlier = state.versions.get(&file.path).cloned();
            if earlier.as_ref().is_some_and(|e| e.id == id) {
                continue;
            }
            let Some(current) = read_version(&file.path) else {
                continue;
            };
            let reason = if current.id.changed_since(since) {
                match file.kind {
                    CodeKind::Config => self.risky_config(&file.path, current.content.as_deref()),
                    CodeKind::Hook => hook_risk(&file.path, &current),
                    CodeKind::Redirect => None,
                }
            } else {
                // Changed before the call began: the user's own change.
                None
            };
            let Some(reason) = reason else {
                state.versions.insert(file.path.clone(), current);
                continue;
            };
            // The version from before the call, if one was remembered.
            let before = earlier.filter(|e| !e.id.changed_since(since));
            reverted.push(self.neutralize(file, &current, before.as_ref(), reason));
            match read_version(&file.path) {
                Some(version) => state.versions.insert(file.path.clone(), version),
                None => state.versions.remove(&file.path),
            };
        }
        reverted
    }

    fn beneath_roots(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }

    /// Why a configuration file could run code, if it could.
    fn risky_config(&self, path: &Path, content: Option<&Vec<u8>>) -> Option<String> {
        let Some(content) = content else {
            return Some("made it larger than toolhost reads".into());
        };
        let Ok(text) = std::str::from_utf8(content) else {
            return Some("made it a file that is not text".into());
        };
        let dir = path.parent().unwrap_or(Path::new("/"));
        let risky: Vec<String> = git::risky_entries(text)
            .into_iter()
            // A submodule's git directory names its worktree; one within
            // the roots redirects nothing outside them.
            .filter(|name| {
                name != "core.worktree"
                    || git::parse_config(text).is_ok_and(|entries| {
                        entries
                            .iter()
                            .filter(|e| e.name() == "core.worktree")
                            .all(|e| {
                                e.value.as_deref().is_some_and(|v| {
                                    self.beneath_roots(&git::lexical_join(dir, Path::new(v)))
                                })
                            })
                    })
            })
            .collect();
        (!risky.is_empty()).then(|| {
            format!(
                "set {}, which git may use to run a program or to look elsewhere",
                risky.join(", ")
            )
        })
    }

    /// Undo `file`'s change: put back `before` (the version from before
    /// the call) where known, else keep a configuration's inert part or
    /// remove a hook. The call's version goes to the quarantine.
    fn neutralize(
        &self,
        file: &CodeFile,
        current: &Version,
        before: Option<&Version>,
        reason: String,
    ) -> Reverted {
        let kept = current
            .content
            .as_deref()
            .and_then(|bytes| self.keep(&file.path, bytes));
        let restore = before.and_then(|b| b.content.clone().map(|c| (c, b.id.mode)));
        let action = match (restore, file.kind) {
            (Some((content, mode)), _) => {
                replace_file(&file.path, &content, mode & 0o7777);
                Action::Restored
            }
            (None, CodeKind::Config) => {
                let text = current
                    .content
                    .as_deref()
                    .and_then(|c| std::str::from_utf8(c).ok())
                    .map(git::inert_part)
                    .unwrap_or_default();
                replace_file(&file.path, text.as_bytes(), current.id.mode & 0o777);
                Action::ReducedToInert
            }
            (None, _) => {
                let _ = std::fs::remove_file(&file.path);
                Action::Removed
            }
        };
        Reverted {
            path: file.path.clone(),
            reason,
            action,
            kept,
        }
    }

    /// Keep `bytes` (a neutralized version of `path`) in the quarantine.
    fn keep(&self, path: &Path, bytes: &[u8]) -> Option<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.quarantine.as_ref()?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .ok()?;
        let stamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let flat: String = path
            .to_string_lossy()
            .trim_start_matches('/')
            .chars()
            .map(|c| if c == '/' { '!' } else { c })
            .collect();
        let name = format!("{stamp}-{flat}");
        let target = dir.join(name);
        crate::files::write_private(&target, bytes).ok()?;
        Some(target)
    }

    /// Walk the roots (re-reading only changed directories) and work out the
    /// repositories and their code files.
    fn survey(&self, state: &mut State) {
        state.watch.drain();
        let start = SystemTime::now();
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let mut tops: Vec<(PathBuf, Option<DotGit>)> = Vec::new();
        let mut stack: Vec<PathBuf> = self.roots.clone();
        state.incomplete = false;
        while let Some(path) = stack.pop() {
            if seen.len() >= MAX_SURVEY_DIRS {
                state.incomplete = true;
                break;
            }
            let Some(info) = dir_info(&mut state.dirs, &mut state.watch, &path, start, false)
            else {
                continue;
            };
            seen.insert(path.clone());
            if info.dot_git.is_some() {
                tops.push((path.clone(), info.dot_git));
            }
            // A directory shaped like a git directory is a repository of its
            // own (bare, or a submodule's or worktree's git directory) to
            // git run inside it; a `.git` is found from its parent.
            if info.looks_like_git_dir && path.file_name() != Some(".git".as_ref()) {
                tops.push((path.clone(), None));
            }
            for name in &info.subdirs {
                // A git directory's own tree holds other git directories only
                // under `modules/` and `worktrees/`; its objects and refs are
                // not walked.
                if info.looks_like_git_dir && !(name == "modules" || name == "worktrees") {
                    continue;
                }
                stack.push(path.join(name));
            }
        }
        let globals = self.global_configs();
        let mut repositories = Vec::new();
        let mut code: Vec<CodeFile> = Vec::new();
        let add = |code: &mut Vec<CodeFile>, path: PathBuf, kind: CodeKind| {
            if !code.iter().any(|c| c.path == path) {
                code.push(CodeFile { path, kind });
            }
        };
        for config in &globals {
            self.add_config(state, config, 0, &mut |p| {
                add(&mut code, p, CodeKind::Config)
            });
        }
        let global_hooks = globals
            .iter()
            .filter_map(|g| {
                let text = self.text(state, g)?;
                let value = git::hooks_path(&text)?;
                git::config_path(&value, g.parent()?, self.home.as_deref())
            })
            .next_back();
        tops.sort();
        tops.dedup();
        for (top, dot_git) in tops {
            let git_dir = match dot_git {
                Some(DotGit::Dir) | Some(DotGit::Link) => top.join(".git"),
                Some(DotGit::File) => {
                    add(&mut code, top.join(".git"), CodeKind::Redirect);
                    match self.text(state, &top.join(".git")) {
                        Some(text) => match git::gitdir_target(&top, &text) {
                            Some(dir) => dir,
                            None => continue,
                        },
                        None => continue,
                    }
                }
                None => top.clone(),
            };
            let commondir_file = git_dir.join("commondir");
            let common_dir = match self.text(state, &commondir_file) {
                Some(text) => {
                    add(&mut code, commondir_file.clone(), CodeKind::Redirect);
                    git::lexical_join(&git_dir, Path::new(text.trim()))
                }
                None => git_dir.clone(),
            };
            let configs = [common_dir.join("config"), git_dir.join("config.worktree")];
            let mut local_hooks = None;
            for config in &configs {
                if let Some(text) = self.text(state, config)
                    && let Some(value) = git::hooks_path(&text)
                {
                    let base = if dot_git.is_some() { &top } else { &git_dir };
                    local_hooks = git::config_path(&value, base, self.home.as_deref());
                }
                self.add_config(state, config, 0, &mut |p| {
                    add(&mut code, p, CodeKind::Config)
                });
            }
            let hooks = local_hooks
                .or_else(|| global_hooks.clone())
                .unwrap_or_else(|| common_dir.join("hooks"));
            // Git follows a link to a hooks directory; so does the guard.
            if let Some(info) = dir_info(&mut state.dirs, &mut state.watch, &hooks, start, true) {
                seen.insert(hooks.clone());
                for name in info.files.iter().chain(&info.subdirs) {
                    if git::is_hook_name(name) {
                        add(&mut code, hooks.join(name), CodeKind::Hook);
                    }
                }
            }
            repositories.push(Repository {
                top,
                git_dir,
                common_dir,
                hooks,
            });
        }
        if !state.incomplete {
            state.dirs.retain(|p, _| seen.contains(p));
        }
        let known: HashSet<PathBuf> = code.iter().map(|c| c.path.clone()).collect();
        state.reads.retain(|p, _| known.contains(p));
        if !state.surveyed {
            // The first survey: what is there now is the user's.
            for file in &code {
                if let Some(version) = read_version(&file.path) {
                    state.versions.insert(file.path.clone(), version);
                }
            }
        }
        state.repositories = repositories;
        state.code = code;
        state.surveyed = true;
    }

    /// The global configuration files git reads for this user.
    fn global_configs(&self) -> Vec<PathBuf> {
        let mut configs = vec![PathBuf::from("/etc/gitconfig")];
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")));
        if let Some(xdg) = xdg {
            configs.push(xdg.join("git/config"));
        }
        if let Some(home) = &self.home {
            configs.push(home.join(".gitconfig"));
        }
        configs
    }

    /// Add `config` and what it includes (recursively) through `add`.
    fn add_config(
        &self,
        state: &mut State,
        config: &Path,
        depth: usize,
        add: &mut dyn FnMut(PathBuf),
    ) {
        add(config.to_path_buf());
        if depth >= MAX_INCLUDE_DEPTH {
            return;
        }
        let Some(text) = self.text(state, config) else {
            return;
        };
        let base = config.parent().unwrap_or(Path::new("/"));
        for include in git::includes(&text) {
            if let Some(path) = git::config_path(&include, base, self.home.as_deref()) {
                self.add_config(state, &path, depth + 1, add);
            }
        }
    }

    /// A small file's text, through the remembered versions when its
    /// identity has not changed.
    fn text(&self, state: &mut State, path: &Path) -> Option<String> {
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() > MAX_CODE_FILE {
            return None;
        }
        let id = FileId::of(&meta);
        if let Some(version) = state.reads.get(path)
            && version.id == id
            && let Some(content) = &version.content
        {
            return String::from_utf8(content.to_vec()).ok();
        }
        let version = read_version(path)?;
        let text = version
            .content
            .as_ref()
            .and_then(|c| String::from_utf8(c.to_vec()).ok());
        state.reads.insert(path.to_path_buf(), version);
        text
    }
}

/// Why a hook file would run code, if it would: git runs an executable file
/// by its name.
fn hook_risk(path: &Path, current: &Version) -> Option<String> {
    let executable = std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
        || current.id.mode & 0o111 != 0;
    executable.then(|| {
        format!(
            "made {} an executable hook, which git runs",
            path.file_name().unwrap_or_default().to_string_lossy()
        )
    })
}

/// The identity of the regular file at `path` (of what it points to, for a
/// link; the link's own change time counts too).
fn file_id(path: &Path) -> Option<FileId> {
    let link = std::fs::symlink_metadata(path).ok()?;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut id = FileId::of(&meta);
    if link.file_type().is_symlink() {
        id.ctime = id.ctime.max((link.ctime(), link.ctime_nsec()));
    }
    Some(id)
}

/// The file at `path` now: its identity and (up to [`MAX_CODE_FILE`])
/// content.
fn read_version(path: &Path) -> Option<Version> {
    let id = file_id(path)?;
    let content = crate::files::read_regular(path, MAX_CODE_FILE)
        .ok()
        .flatten()
        .map(Arc::new);
    Some(Version { id, content })
}

/// Replace `path` with `bytes` atomically (a temporary file renamed over
/// it; a link at `path` is replaced, not followed).
fn replace_file(path: &Path, bytes: &[u8], mode: u32) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let Some(dir) = path.parent() else { return };
    let temp = dir.join(format!(
        ".toolhost-revert-{}",
        crate::files::unique_suffix()
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.set_permissions(std::fs::Permissions::from_mode(mode))
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
        // What could run code must not stay.
        let _ = std::fs::remove_file(path);
    }
}

/// The entries of the directory `path` as git's discovery needs them, from
/// `cache` when its identity has not changed since it was read. A link is
/// followed only when `follow` (the walk never leaves the roots by one).
fn dir_info(
    cache: &mut HashMap<PathBuf, DirInfo>,
    watch: &mut DirWatch,
    path: &Path,
    start: SystemTime,
    follow: bool,
) -> Option<DirInfo> {
    // Not followed through a link: a link can be pointed elsewhere with no
    // report on the directory it named.
    if !follow
        && watch.is_clean(path)
        && let Some(info) = cache.get(path)
        && info.settled
    {
        return Some(info.clone());
    }
    // Watched before it is read: a change after the read is reported.
    let watched = !follow && watch.add(path);
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    }
    .ok()?;
    if !meta.is_dir() {
        return None;
    }
    let id = FileId::of(&meta);
    if let Some(info) = cache.get(path)
        && info.id == id
        && info.settled
    {
        return Some(info.clone());
    }
    let info = read_dir_info(path, id, &meta, start, follow)?;
    if watched && info.settled {
        watch.clean(path);
    }
    cache.insert(path.to_path_buf(), info.clone());
    Some(info)
}

/// Inotify on the directories a survey read (see the module docs).
#[derive(Default)]
struct DirWatch {
    /// `None` until first used, or where inotify cannot be had.
    fd: Option<OwnedFd>,
    started: bool,
    /// Each watch's directory.
    paths: HashMap<i32, PathBuf>,
    /// Directories read, watched, and reported unchanged since.
    clean: HashSet<PathBuf>,
}

/// Most directories one guard watches: inotify watches are the user's
/// (editors and file watchers need them too); past this, directories are
/// `stat`ed as before.
const MAX_WATCHES: usize = 4096;

impl DirWatch {
    fn is_clean(&self, path: &Path) -> bool {
        self.clean.contains(path)
    }

    fn clean(&mut self, path: &Path) {
        self.clean.insert(path.to_path_buf());
    }

    /// Watch `path` for changes to its entries and itself; false when it is
    /// not watched.
    fn add(&mut self, path: &Path) -> bool {
        use rustix::fs::inotify::{CreateFlags, WatchFlags};
        if !self.started {
            self.started = true;
            self.fd = rustix::fs::inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok();
        }
        let Some(fd) = &self.fd else { return false };
        if self.paths.len() >= MAX_WATCHES && !self.paths.values().any(|p| p == path) {
            return false;
        }
        let mask = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::ATTRIB
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW;
        match rustix::fs::inotify::add_watch(fd, path, mask) {
            Ok(wd) => {
                // The same directory under a new name (renamed) keeps its
                // watch: its reports are this path's from now on.
                if let Some(old) = self.paths.insert(wd, path.to_path_buf()) {
                    self.clean.remove(&old);
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Take the kernel's reports: every directory reported, and every name
    /// reported in one, is no longer clean; a lost report makes none clean.
    fn drain(&mut self) {
        use rustix::fs::inotify::{ReadFlags, Reader};
        let Some(fd) = &self.fd else { return };
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 8192];
        let mut reader = Reader::new(fd, &mut buf);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::AGAIN) => return,
                // Unreadable reports are lost reports.
                Err(_) => {
                    self.clean.clear();
                    return;
                }
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                self.clean.clear();
                continue;
            }
            let Some(dir) = self.paths.get(&event.wd()) else {
                continue;
            };
            self.clean.remove(dir);
            if let Some(name) = event.file_name() {
                let name = std::ffi::OsStr::from_bytes(name.to_bytes());
                // The name's own entry, and anything once known beneath it.
                let child = dir.join(name);
                self.clean.retain(|p| !p.starts_with(&child));
            }
            if flags.contains(ReadFlags::IGNORED) {
                self.paths.remove(&event.wd());
            }
        }
    }
}

fn read_dir_info(
    path: &Path,
    id: FileId,
    meta: &std::fs::Metadata,
    start: SystemTime,
    keep_files: bool,
) -> Option<DirInfo> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries.collect::<Vec<_>>(),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => read_closed_dir(path, meta)?,
        Err(_) => return None,
    };
    let mut info = DirInfo {
        id,
        settled: !id.changed_since(start),
        subdirs: Vec::new(),
        files: Vec::new(),
        dot_git: None,
        looks_like_git_dir: false,
    };
    let mut names: HashSet<OsString> = HashSet::new();
    for entry in entries.into_iter().flatten() {
        let name = entry.file_name();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if name == ".git" {
            info.dot_git = Some(if kind.is_dir() {
                DotGit::Dir
            } else if kind.is_symlink() {
                DotGit::Link
            } else {
                DotGit::File
            });
        }
        if kind.is_dir() {
            info.subdirs.push(name.clone());
        } else if keep_files {
            info.files.push(name.clone());
        }
        if ["HEAD", "objects", "refs", "commondir"]
            .iter()
            .any(|n| name == *n)
        {
            names.insert(name);
        }
    }
    info.looks_like_git_dir = git::looks_like_git_dir(|n| names.contains(std::ffi::OsStr::new(n)));
    Some(info)
}

/// The entries of a directory its owner closed (`chmod 0`): git, run by
/// the same user, could still be pointed into it, so it is opened for the
/// moment of reading and closed again as it was.
fn read_closed_dir(
    path: &Path,
    meta: &std::fs::Metadata,
) -> Option<Vec<std::io::Result<std::fs::DirEntry>>> {
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return None;
    }
    let mode = meta.permissions().mode() & 0o7777;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o500)).ok()?;
    let entries = std::fs::read_dir(path).map(|e| e.collect::<Vec<_>>());
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    entries.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    fn guard(root: &Path) -> GitGuard {
        GitGuard::new(
            vec![root.to_path_buf()],
            None,
            Some(root.join("../quarantine")),
        )
    }

    /// A temporary workspace (`ws`, by its real path) holding `dirs`
    /// (`""`: the workspace itself); the guard removes it when dropped.
    fn workspace_with(dirs: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let within: Vec<String> = dirs.iter().map(|d| format!("ws/{d}")).collect();
        let within: Vec<&str> = within.iter().map(String::as_str).collect();
        let (tmp, base) = crate::testing::real_temp_dir_with(&within);
        (tmp, base.join("ws"))
    }

    fn later() {
        std::thread::sleep(RACY + Duration::from_millis(20));
    }

    #[test]
    fn finds_top_nested_submodule_worktree_and_bare_repositories() {
        let (_tmp, ws) = workspace_with(&["vendor/lib"]);
        git(&ws, &["init", "-q"]);
        git(&ws.join("vendor/lib"), &["init", "-q"]);
        git(&ws, &["init", "-q", "--bare", "bare.git"]);
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        git(&ws, &["init", "-q", "--bare", ".git/modules/sub"]);
        let g = guard(&ws);
        g.watch();
        let (repos, code) = g.known();
        let tops: Vec<&Path> = repos.iter().map(|r| r.top.as_path()).collect();
        for expected in [
            ws.clone(),
            ws.join("vendor/lib"),
            ws.join("bare.git"),
            ws.join("sub"),
            ws.join(".git/modules/sub"),
        ] {
            assert!(
                tops.contains(&expected.as_path()),
                "{expected:?} in {tops:?}"
            );
        }
        let sub = repos.iter().find(|r| r.top == ws.join("sub")).unwrap();
        assert_eq!(sub.git_dir, ws.join(".git/modules/sub"));
        assert!(
            code.iter()
                .any(|c| c.path == ws.join("vendor/lib/.git/config"))
        );
        assert!(
            code.iter()
                .any(|c| c.path == ws.join(".git/modules/sub/config"))
        );
        assert!(
            code.iter()
                .any(|c| c.path == ws.join("sub/.git") && c.kind == CodeKind::Redirect)
        );
    }

    /// Surveys that take settled directories from memory (nothing reported
    /// for them) still see a repository moved into place under a name that
    /// was once known, deep in a tree whose upper directories are clean.
    #[test]
    fn a_survey_from_memory_still_sees_what_a_rename_deep_in_the_tree_brought() {
        let (_tmp, ws) = workspace_with(&["a/b/c", "elsewhere/a/b/c"]);
        git(&ws.join("elsewhere/a/b/c"), &["init", "-q"]);
        let g = guard(&ws);
        g.watch();
        later();
        g.watch();
        g.settle(g.watch()); // every directory settled, watched and clean
        assert!(g.state.lock().unwrap().watch.is_clean(&ws.join("a/b/c")));
        let tops =
            |g: &GitGuard| -> Vec<PathBuf> { g.known().0.into_iter().map(|r| r.top).collect() };
        assert!(!tops(&g).contains(&ws.join("a/b/c")));
        // An ancestor of the known `a/b/c` is swapped, by renames only, for
        // a tree with a repository there: `a/b` and `a/b/c` themselves are
        // never reported, only the name `a` in the workspace.
        let w = g.watch();
        std::fs::rename(ws.join("a"), ws.join("old-a")).unwrap();
        std::fs::rename(ws.join("elsewhere/a"), ws.join("a")).unwrap();
        g.settle(w);
        assert!(tops(&g).contains(&ws.join("a/b/c")), "{:?}", tops(&g));
        assert!(
            g.known()
                .1
                .iter()
                .any(|c| c.path == ws.join("a/b/c/.git/config"))
        );
    }

    #[test]
    fn a_risky_change_during_a_call_is_undone_and_an_inert_one_kept() {
        let (_tmp, ws) = workspace_with(&[""]);
        git(&ws, &["init", "-q"]);
        let g = guard(&ws);
        let before = std::fs::read_to_string(ws.join(".git/config")).unwrap();
        later();
        let watch = g.watch();
        git(&ws, &["config", "user.email", "a@example.invalid"]);
        assert!(g.settle(watch).is_empty(), "an inert change stays");
        let inert = std::fs::read_to_string(ws.join(".git/config")).unwrap();
        assert!(inert.contains("a@example.invalid"));
        assert_ne!(inert, before);

        later();
        let watch = g.watch();
        git(&ws, &["config", "core.fsmonitor", "/tmp/marker"]);
        std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            ws.join(".git/hooks/pre-commit"),
            PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let reverted = g.settle(watch);
        assert_eq!(reverted.len(), 2, "{reverted:?}");
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
            inert
        );
        assert!(!ws.join(".git/hooks/pre-commit").exists());
        let config = reverted
            .iter()
            .find(|r| r.path.ends_with("config"))
            .unwrap();
        assert_eq!(config.action, Action::Restored);
        assert!(
            config.reason.contains("core.fsmonitor"),
            "{}",
            config.reason
        );
        let kept = std::fs::read_to_string(config.kept.as_ref().unwrap()).unwrap();
        assert!(kept.contains("/tmp/marker"));
    }

    #[test]
    fn a_repository_created_during_a_call_keeps_only_its_inert_settings() {
        let (_tmp, ws) = workspace_with(&["a/b"]);
        let g = guard(&ws);
        later();
        let watch = g.watch();
        git(&ws.join("a/b"), &["init", "-q"]);
        git(
            &ws.join("a/b"),
            &["config", "alias.x", "!touch /tmp/marker"],
        );
        let reverted = g.settle(watch);
        assert_eq!(reverted.len(), 1, "{reverted:?}");
        assert_eq!(reverted[0].action, Action::ReducedToInert);
        let config = std::fs::read_to_string(ws.join("a/b/.git/config")).unwrap();
        assert!(!config.contains("alias"), "{config}");
        assert!(config.contains("repositoryformatversion"), "{config}");
    }

    #[test]
    fn a_repository_planted_deep_down_is_found_through_its_changed_parent() {
        let (_tmp, ws) = workspace_with(&["x/y"]);
        let g = guard(&ws);
        later();
        g.watch();
        let watch = g.watch();
        // A planted repository deep down is still found: its parent changed.
        std::fs::create_dir_all(ws.join("x/y/.git/objects")).unwrap();
        std::fs::create_dir_all(ws.join("x/y/.git/refs")).unwrap();
        std::fs::write(ws.join("x/y/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(ws.join("x/y/.git/config"), "[core]\n\tpager = sh -c x\n").unwrap();
        let reverted = g.settle(watch);
        assert_eq!(reverted.len(), 1, "{reverted:?}");
        assert!(g.known().0.iter().any(|r| r.top == ws.join("x/y")));
    }
}

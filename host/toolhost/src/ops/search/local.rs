//! [`LocalSearch`]: search on the local disk with ripgrep's walkers.
//!
//! # Two phases
//!
//! A walk first runs sequentially with names sorted in each directory, so
//! entries come in result order (component by component) and it stops at the
//! first entry past the last one that can be in the result: a limit reached
//! early costs only the files before the cut. Searches that run longer than
//! [`SORTED_ENTRIES`] entries or [`SORTED_BYTES`] searched bytes go on with
//! ripgrep's parallel walker for the rest of the tree (every entry after the
//! last one handled), collecting into the same path-ordered set, which prunes
//! what sorts after its cut. The parallel walker alone visits entries in no
//! useful order, so a limit used to cost several times the files needed; the
//! sequential walker alone leaves cores idle on a whole-tree search.
//!
//! # Confinement
//!
//! The search root is resolved by [`LocalFs::resolve_real`] (the rules of
//! every filesystem operation). The walk starts at the root's real path and
//! never follows a symlink, so it stays below the root. Files are opened
//! through the granted root's directory handle (`openat2(RESOLVE_BENEATH)`),
//! so even a directory swapped for a symlink while the walk runs cannot make
//! it read a file outside the roots; at worst such a race lists names.

use super::core::{
    Cancellable, FileHits, FileSink, FindGlob, IgnoreLevel, IgnoreRules, MAX_LINE_BUFFER, Ranked,
    grep_one_file, grep_override, io_cause, overflow_warning, ranked_grep, regex_matcher, shown,
};
use super::{GlobRequest, GlobResult, GrepRequest, GrepResult, SearchError};
use super::{Search, StopFlag};
use crate::ops::fs::{FsRead, LocalFs, RealPath};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::overrides::Override;
use ignore::{WalkBuilder, WalkState};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Largest ignore file read above the search root.
const MAX_IGNORE_FILE: u64 = 1 << 20;

/// Entries the sorted walk visits before the parallel walker takes over:
/// a 1000-result find in a source tree needs a few thousand.
const SORTED_ENTRIES: u64 = 8192;

/// Bytes the sorted walk searches before the parallel walker takes over:
/// a 1000-match grep for a common pattern needs a few hundred KB.
const SORTED_BYTES: u64 = 4 << 20;

/// The `search` Operations on the local disk, inside the roots of a [`LocalFs`].
#[derive(Debug)]
pub struct LocalSearch {
    fs: Arc<LocalFs>,
    threads: usize,
    /// Budget of the sorted walk: entries visited, bytes searched.
    sorted: (u64, u64),
}

impl LocalSearch {
    /// Search the roots of `fs`, with as many walker threads as the machine
    /// has cores (ripgrep's default, at most 12).
    pub fn new(fs: Arc<LocalFs>) -> LocalSearch {
        LocalSearch {
            fs,
            threads: 0,
            sorted: (SORTED_ENTRIES, SORTED_BYTES),
        }
    }

    /// Use `n` walker threads (0: one per core).
    pub fn threads(mut self, n: usize) -> LocalSearch {
        self.threads = n;
        self
    }

    /// Hand over to the parallel walker after `entries` entries or `bytes`
    /// searched bytes (tests use tiny budgets to cover the hand-over).
    #[cfg(test)]
    pub(crate) fn sorted_budget(mut self, entries: u64, bytes: u64) -> LocalSearch {
        self.sorted = (entries, bytes);
        self
    }
}

/// The resolved search root.
struct Target<'a> {
    real: RealPath<'a>,
    /// The real absolute path the walk starts from.
    abs: PathBuf,
    is_dir: bool,
}

impl Target<'_> {
    /// The path to open through the root handle for `rel` below the target.
    fn handle_path(&self, rel: &Path) -> PathBuf {
        if rel.as_os_str().is_empty() {
            // `join("")` would add a trailing slash, which a file refuses.
            self.real.rel.clone()
        } else {
            self.real.rel.join(rel)
        }
    }
}

/// The handle-relative form of a path (`.` for the root itself).
fn dot(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// Open a file for reading through a root handle. Non-blocking, so a FIFO
/// swapped in cannot hang the walk.
fn open_file(dir: &Dir, rel: &Path) -> io::Result<std::fs::File> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    Ok(dir.open_with(dot(rel), &options)?.into_std())
}

impl LocalSearch {
    fn target(&self, root: &str) -> Result<Target<'_>, SearchError> {
        let real = self
            .fs
            .resolve_real(root)
            .map_err(|e| SearchError::at_root(root, e))?;
        let meta =
            real.dir.metadata(dot(&real.rel)).map_err(
                |e| match rustix::io::Errno::from_io_error(&e) {
                    Some(rustix::io::Errno::NOENT) | Some(rustix::io::Errno::NOTDIR) => {
                        SearchError::NotFound(root.to_string())
                    }
                    _ if e.kind() == io::ErrorKind::PermissionDenied
                        && e.raw_os_error().is_none() =>
                    {
                        SearchError::OutsideRoots(root.to_string())
                    }
                    _ => SearchError::Other(format!("{root}: {}", io_cause(&e))),
                },
            )?;
        let is_dir = meta.is_dir();
        if !is_dir && !meta.is_file() {
            return Err(SearchError::Other(format!(
                "Not a file or directory: {root}"
            )));
        }
        let abs = real.absolute();
        Ok(Target { real, abs, is_dir })
    }

    /// The ignore rules of the directories from the granted root down to the
    /// search root's parent (the walker reads those at and below the root).
    fn outer_rules(&self, target: &Target<'_>, warnings: &mut Vec<String>) -> IgnoreRules {
        let mut rules = IgnoreRules::default();
        let mut ancestors: Vec<&Path> = target.real.rel.ancestors().skip(1).collect();
        ancestors.reverse();
        for rel in ancestors {
            let dir_abs = target.real.root.join(rel);
            let level = IgnoreLevel::load(
                &dir_abs,
                |name| read_small(target.real.dir, &rel.join(name)),
                &dir_abs.to_string_lossy(),
                warnings,
            );
            rules = rules.with(level);
        }
        rules
    }

    /// The walker: ignore files honoured everywhere, hidden files included,
    /// `.git` never entered, symlinks not followed, no global git excludes.
    fn walker(
        &self,
        target: &Target<'_>,
        overrides: Option<&Override>,
        outer: &IgnoreRules,
    ) -> WalkBuilder {
        let mut builder = WalkBuilder::new(&target.abs);
        builder
            .hidden(false)
            .parents(false)
            .ignore(true)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .threads(self.threads);
        if let Some(overrides) = overrides {
            builder.overrides(overrides.clone());
        }
        let (overrides, outer) = (overrides.cloned(), outer.clone());
        // Secrets of the protected set (a credential store, a secret's
        // source) are never walked: their names are not listed, their
        // bytes not searched. The walk starts from a real path and follows
        // no link, so an entry's path is its real path; only the secrets
        // along the search root can hide one of its entries, and those are
        // picked once, not for every entry.
        let secrets = self.fs.protected().secrets_along(&target.abs);
        builder.filter_entry(move |entry| {
            let hidden = || secrets.iter().any(|s| entry.path().starts_with(s));
            if entry.file_name() == ".git" || hidden() {
                return false;
            }
            if outer.is_empty() || entry.depth() == 0 {
                return true;
            }
            // Rules from above the search root rank below the walker's own
            // (it has already applied those) and below a `--glob` whitelist.
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if let Some(o) = &overrides
                && o.matched(entry.path(), is_dir).is_whitelist()
            {
                return true;
            }
            !outer.is_ignored(entry.path(), is_dir)
        });
        builder
    }
}

/// The sequential walk with names sorted in each directory: entries in
/// result order.
fn sorted(mut walker: WalkBuilder) -> ignore::Walk {
    walker.sort_by_file_name(|a, b| a.cmp(b)).build()
}

/// The sorted walk's entries with their paths relative to `base`, in result
/// order, until the cut: the first entry past it (so is the rest), a stop, or
/// a full result ends them. Walk errors go to `warnings`.
fn before_cut<'a, T>(
    mut walk: ignore::Walk,
    base: &'a Path,
    stop: &'a StopFlag,
    ranked: &'a Ranked<T>,
    warnings: &'a Mutex<Vec<String>>,
) -> impl Iterator<Item = (ignore::DirEntry, PathBuf)> + 'a {
    std::iter::from_fn(move || {
        loop {
            if stop.is_raised() || ranked.is_overflowed() {
                return None;
            }
            let entry = match walk.next()? {
                Ok(entry) => entry,
                Err(e) => {
                    describe(&e, base, &mut warnings.lock().expect("warnings"));
                    continue;
                }
            };
            let Ok(rel) = entry.path().strip_prefix(base).map(Path::to_path_buf) else {
                continue;
            };
            if ranked.is_beyond(&rel) {
                return None;
            }
            return Some((entry, rel));
        }
    })
}

/// What the parallel walker of one search shares: the base its paths are
/// relative to, the stop flag, the result, the warnings, and where the
/// sorted walk left off.
struct ParallelWalk<'a, T> {
    base: &'a Path,
    stop: &'a StopFlag,
    ranked: &'a Ranked<T>,
    warnings: &'a Mutex<Vec<String>>,
    resume: &'a Resume,
}

impl<'a, T> ParallelWalk<'a, T> {
    /// The parallel walk of what the sorted walk left, if it left anything
    /// and the search goes on.
    fn after(
        base: &'a Path,
        stop: &'a StopFlag,
        ranked: &'a Ranked<T>,
        warnings: &'a Mutex<Vec<String>>,
        resume: &'a Resume,
    ) -> Option<Self> {
        let more = resume.last.is_some() && !stop.is_raised() && !ranked.is_overflowed();
        more.then_some(ParallelWalk {
            base,
            stop,
            ranked,
            warnings,
            resume,
        })
    }

    /// One entry, through the steps every search takes: quit when stopped
    /// or full, note a walk error, leave the entries the sorted walk handled
    /// and those past the cut (a directory's whole subtree); then `handle`
    /// the entry with its path relative to the base and whether it is a
    /// directory.
    fn entry(
        &self,
        entry: Result<ignore::DirEntry, ignore::Error>,
        handle: impl FnOnce(&ignore::DirEntry, &Path, bool) -> WalkState,
    ) -> WalkState {
        if self.stop.is_raised() || self.ranked.is_overflowed() {
            return WalkState::Quit;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                describe(&e, self.base, &mut self.warnings.lock().expect("warnings"));
                return WalkState::Continue;
            }
        };
        let Ok(rel) = entry.path().strip_prefix(self.base) else {
            return WalkState::Continue;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        // The root is always handled: the sorted walk began with it.
        if let Some(state) = self.resume.handled(rel, is_dir) {
            return state;
        }
        if self.ranked.is_beyond(rel) {
            return if is_dir {
                WalkState::Skip
            } else {
                WalkState::Continue
            };
        }
        handle(&entry, rel, is_dir)
    }
}

/// Where the sorted walk left off when it ran out of budget: it has handled
/// every entry up to and including `last` in walk order, so everything before
/// `last` except its ancestors' and its own contents that follow it.
struct Resume {
    last: Option<PathBuf>,
}

impl Resume {
    /// What the parallel walker does with `rel` if the sorted walk handled it
    /// (`None`: it did not). A directory on the way to `last` is entered; any
    /// other directory before it was walked whole.
    fn handled(&self, rel: &Path, is_dir: bool) -> Option<WalkState> {
        let last = self.last.as_deref()?;
        if rel > last {
            return None;
        }
        Some(if is_dir && !last.starts_with(rel) {
            WalkState::Skip
        } else {
            WalkState::Continue
        })
    }
}

/// Read a small regular file through a root handle; `None` if absent or odd.
fn read_small(dir: &Dir, rel: &Path) -> Option<Vec<u8>> {
    let file = open_file(dir, rel).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A walk error as warnings: `{path} ({cause})`, paths relative to `base`.
fn describe(err: &ignore::Error, base: &Path, out: &mut Vec<String>) {
    match err {
        ignore::Error::Partial(errs) => errs.iter().for_each(|e| describe(e, base, out)),
        ignore::Error::WithDepth { err, .. } => describe(err, base, out),
        ignore::Error::WithPath { path, err } => {
            out.push(format!("{} ({})", relative(path, base), cause(err)));
        }
        ignore::Error::Loop { child, .. } => {
            out.push(format!("{} (symlink loop)", relative(child, base)));
        }
        other => out.push(cause(other)),
    }
}

fn cause(err: &ignore::Error) -> String {
    match err {
        ignore::Error::Io(e) => {
            // The sequential walker wraps walkdir's error, whose message
            // repeats the path; the OS error is its source.
            let os = e
                .get_ref()
                .and_then(|inner| inner.source())
                .and_then(|source| source.downcast_ref::<io::Error>());
            io_cause(os.unwrap_or(e))
        }
        ignore::Error::WithLineNumber { line, err } => format!("line {line}: {}", cause(err)),
        ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } => cause(err),
        other => other.to_string(),
    }
}

fn relative(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => shown(rel),
        Err(_) => path.display().to_string(),
    }
}

/// One file searched through the root handle; also returns the bytes read.
/// A secret of the protected set (judged on the real path of the file
/// opened, whatever link led there) is searched as an empty file.
fn search_one(
    fs: &LocalFs,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    dir: &Dir,
    handle_path: &Path,
    request: &GrepRequest,
    stop: &StopFlag,
) -> io::Result<(FileHits, u64)> {
    let file = open_file(dir, handle_path)?;
    if fs.hidden(&file) {
        return Ok((FileHits::default(), 0));
    }
    let mut sink = FileSink::new(request, stop);
    let mut reader = Cancellable {
        inner: file,
        stop,
        read: 0,
    };
    searcher.search_reader(matcher, &mut reader, &mut sink)?;
    Ok((sink.finish(), reader.read))
}

fn searcher(request: &GrepRequest, binary: BinaryDetection) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .heap_limit(Some(MAX_LINE_BUFFER))
        .before_context(request.context as usize)
        .after_context(request.context as usize)
        .binary_detection(binary)
        .build()
}

impl Search for LocalSearch {
    fn grep(&self, request: &GrepRequest, stop: &StopFlag) -> Result<GrepResult, SearchError> {
        let matcher = regex_matcher(request)?;
        let target = self.target(&request.root)?;
        let overrides = grep_override(&target.abs, request.glob.as_deref())?;
        if !target.is_dir {
            // An explicit file: searched whatever the ignore rules and the glob
            // say, binary or not (NULs read as line ends), as rg does.
            let mut searcher = searcher(request, BinaryDetection::convert(b'\0'));
            let hits = search_one(
                &self.fs,
                &mut searcher,
                &matcher,
                target.real.dir,
                &target.handle_path(Path::new("")),
                request,
                stop,
            )
            .map(|(hits, _)| hits)
            .map_err(|e| io_cause(&e));
            return grep_one_file(hits, request, stop);
        }

        let mut warnings = Vec::new();
        let outer = self.outer_rules(&target, &mut warnings);
        let warnings = Mutex::new(warnings);
        let ranked: Ranked<FileHits> =
            Ranked::new(u64::from(request.max_matches).saturating_add(1));
        let mut resume = Resume { last: None };
        // One file of either walk: its hits ranked, or why it could not be
        // read noted. `None` when the search was stopped meanwhile, else the
        // bytes read.
        let rank_file = |searcher: &mut Searcher, matcher: &RegexMatcher, rel: &Path| {
            let found = search_one(
                &self.fs,
                searcher,
                matcher,
                target.real.dir,
                &target.handle_path(rel),
                request,
                stop,
            );
            match found {
                Ok((hits, read)) => {
                    ranked.offer_hits(rel.to_path_buf(), hits);
                    Some(read)
                }
                Err(_) if stop.is_raised() => None,
                Err(e) => {
                    let warning = format!("{} ({})", shown(rel), io_cause(&e));
                    warnings.lock().expect("warnings").push(warning);
                    Some(0)
                }
            }
        };
        let mut sorted_searcher = searcher(request, BinaryDetection::quit(b'\0'));
        let (mut entries, mut bytes, mut last) = (0u64, 0u64, PathBuf::new());
        let walk = sorted(self.walker(&target, overrides.as_ref(), &outer));
        for (entry, rel) in before_cut(walk, &target.abs, stop, &ranked, &warnings) {
            let rel = rel.as_path();
            if entries >= self.sorted.0 || bytes >= self.sorted.1 {
                // `rel` is not handled: the parallel walker takes it from here.
                resume.last = Some(std::mem::take(&mut last));
                break;
            }
            entries += 1;
            if entry.file_type().is_some_and(|t| t.is_file()) {
                match rank_file(&mut sorted_searcher, &matcher, rel) {
                    Some(read) => bytes += read,
                    None => break,
                }
            }
            last = rel.to_path_buf();
        }
        if let Some(walk) = ParallelWalk::after(&target.abs, stop, &ranked, &warnings, &resume) {
            self.walker(&target, overrides.as_ref(), &outer)
                .build_parallel()
                .run(|| {
                    let mut searcher = searcher(request, BinaryDetection::quit(b'\0'));
                    let matcher = matcher.clone();
                    let (walk, rank_file) = (&walk, &rank_file);
                    Box::new(move |entry| {
                        walk.entry(entry, |entry, rel, _| {
                            let is_file = entry.file_type().is_some_and(|t| t.is_file());
                            if is_file && rank_file(&mut searcher, &matcher, rel).is_none() {
                                return WalkState::Quit;
                            }
                            WalkState::Continue
                        })
                    })
                });
        }
        let warnings = warnings.into_inner().expect("warnings");
        ranked_grep(ranked, request, warnings, stop)
    }

    fn glob(&self, request: &GlobRequest, stop: &StopFlag) -> Result<GlobResult, SearchError> {
        let glob = FindGlob::new(&request.pattern, Path::new(&request.root))?;
        let target = self.target(&request.root)?;
        if !target.is_dir {
            return Err(SearchError::Other(format!(
                "Not a directory: {}",
                request.root
            )));
        }
        let mut warnings = Vec::new();
        let outer = self.outer_rules(&target, &mut warnings);
        let warnings = Mutex::new(warnings);
        let ranked: Ranked<String> = Ranked::new(u64::from(request.max_results).saturating_add(1));
        let mut resume = Resume { last: None };
        let (mut entries, mut last) = (0u64, PathBuf::new());
        let offer = |rel: &Path, is_dir: bool| {
            if glob.is_match(rel) {
                let mut path = shown(rel);
                if is_dir {
                    path.push('/');
                }
                ranked.offer(rel.to_path_buf(), 1, path.len(), path);
            }
        };
        let walk = sorted(self.walker(&target, None, &outer));
        for (entry, rel) in before_cut(walk, &target.abs, stop, &ranked, &warnings) {
            let rel = rel.as_path();
            if entries >= self.sorted.0 {
                // `rel` is not handled: the parallel walker takes it from here.
                resume.last = Some(std::mem::take(&mut last));
                break;
            }
            entries += 1;
            if entry.depth() > 0 {
                offer(rel, entry.file_type().is_some_and(|t| t.is_dir()));
            }
            last = rel.to_path_buf();
        }
        if let Some(walk) = ParallelWalk::after(&target.abs, stop, &ranked, &warnings, &resume) {
            self.walker(&target, None, &outer).build_parallel().run(|| {
                let (walk, offer) = (&walk, &offer);
                Box::new(move |entry| {
                    walk.entry(entry, |_, rel, is_dir| {
                        offer(rel, is_dir);
                        WalkState::Continue
                    })
                })
            });
        }
        if stop.is_raised() {
            return Err(SearchError::Cancelled);
        }
        let mut warnings = warnings.into_inner().expect("warnings");
        if ranked.is_overflowed() {
            warnings.push(overflow_warning());
        }
        warnings.sort();
        warnings.dedup();
        let mut paths: Vec<String> = ranked.into_sorted().into_iter().map(|(_, p)| p).collect();
        let limit_reached = paths.len() > request.max_results as usize;
        paths.truncate(request.max_results as usize);
        Ok(GlobResult {
            paths,
            limit_reached,
            warnings,
        })
    }

    fn roots(&self) -> Vec<String> {
        FsRead::roots(self.fs.as_ref())
    }
}

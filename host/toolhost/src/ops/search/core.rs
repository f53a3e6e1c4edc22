//! What every search backend shares: compiling the request (regex, globs),
//! ignore rules gathered outside the walker, collecting one file's lines,
//! keeping only the first results in path order while a walk runs in
//! parallel, and assembling the final, deterministic result.

use super::StopFlag;
use super::{GrepFile, GrepLine, GrepRequest, GrepResult, SearchError};
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Most bytes of text (lines and paths) one search collects. Beyond it the
/// search stops and says so in a warning: a result is copied into the guest's
/// memory, which is capped, and a tool shows at most 50 KB of it anyway.
pub const MAX_RESULT_BYTES: usize = 16 << 20;

/// The warning added when [`MAX_RESULT_BYTES`] stopped a search.
pub(super) fn overflow_warning() -> String {
    format!(
        "(search stopped after collecting {} MiB of results; narrow the pattern or the path)",
        MAX_RESULT_BYTES >> 20
    )
}

/// The regular expression of a grep request, as ripgrep builds it: Rust regex
/// syntax, one line at a time (`\n` never matches), case-insensitive on
/// request. A literal pattern is split at newlines into alternatives, as
/// `rg --fixed-strings` does.
pub(super) fn regex_matcher(request: &GrepRequest) -> Result<RegexMatcher, SearchError> {
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(request.ignore_case)
        .fixed_strings(request.literal)
        .line_terminator(Some(b'\n'));
    let built = if request.literal {
        let literals: Vec<&str> = request.pattern.split('\n').collect();
        builder.build_literals(&literals)
    } else {
        builder.build(&request.pattern)
    };
    built.map_err(|e| SearchError::InvalidPattern(regex_reason(&e.to_string())))
}

/// The cause of a regex error without the echo of the pattern: the regex
/// crate's message ends in an `error: …` line; other messages are kept whole.
fn regex_reason(message: &str) -> String {
    message
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(message.trim())
        .to_string()
}

/// The glob filter of a grep request: ripgrep's `--glob` (gitignore syntax
/// rooted at the search root; a glob without `/` matches names at any depth;
/// `!` excludes). Like rg's, it wins over ignore files.
pub(super) fn grep_override(
    root: &Path,
    glob: Option<&str>,
) -> Result<Option<Override>, SearchError> {
    let Some(glob) = glob else {
        return Ok(None);
    };
    let mut builder = OverrideBuilder::new(root);
    builder.add(glob).map_err(|e| glob_error(&e))?;
    builder.build().map(Some).map_err(|e| glob_error(&e))
}

fn glob_error(e: &ignore::Error) -> SearchError {
    match e {
        ignore::Error::Glob { err, .. } => SearchError::InvalidGlob(err.clone()),
        other => SearchError::InvalidGlob(other.to_string()),
    }
}

/// What a find pattern is matched against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GlobTarget {
    /// The entry's name (a pattern without `/`).
    Name,
    /// The path relative to the search root.
    Relative,
    /// The absolute path (a pattern starting with `/`).
    Absolute,
}

/// A find pattern, with fd's rules as Pi runs it (`fd --glob`, plus
/// `--full-path` and a `**/` prefix for patterns with `/`): a pattern without
/// `/` matches entry names at any depth; with `/` it matches the path relative
/// to the search root (`**/` is put in front unless it starts with `**/` or
/// is `**`); a pattern starting with `/` matches the absolute path. `*` never
/// crosses `/`. Smart case, as fd: case-insensitive unless the pattern has an
/// uppercase letter.
#[derive(Clone, Debug)]
pub(super) struct FindGlob {
    matcher: GlobMatcher,
    target: GlobTarget,
    root: PathBuf,
}

impl FindGlob {
    pub(super) fn new(pattern: &str, root: &Path) -> Result<FindGlob, SearchError> {
        let (glob, target) = if !pattern.contains('/') {
            (pattern.to_string(), GlobTarget::Name)
        } else if pattern.starts_with('/') {
            (pattern.to_string(), GlobTarget::Absolute)
        } else if pattern.starts_with("**/") || pattern == "**" {
            (pattern.to_string(), GlobTarget::Relative)
        } else {
            (format!("**/{pattern}"), GlobTarget::Relative)
        };
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(true)
            .case_insensitive(!pattern.chars().any(char::is_uppercase))
            .build()
            .map_err(|e| SearchError::InvalidGlob(e.kind().to_string()))?
            .compile_matcher();
        Ok(FindGlob {
            matcher,
            target,
            root: root.to_path_buf(),
        })
    }

    /// Whether the entry at `rel` (relative to the search root) matches.
    pub(super) fn is_match(&self, rel: &Path) -> bool {
        match self.target {
            GlobTarget::Name => rel.file_name().is_some_and(|n| self.matcher.is_match(n)),
            GlobTarget::Relative => self.matcher.is_match(rel),
            GlobTarget::Absolute => self.matcher.is_match(self.root.join(rel)),
        }
    }
}

/// The ignore files of one directory.
#[derive(Clone, Debug)]
pub(super) struct IgnoreLevel {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
}

impl IgnoreLevel {
    /// The rules of `dir`, from the contents of its `.ignore`, `.gitignore`
    /// and `.git/info/exclude` (as `read` returns them; `None` when absent).
    /// Lines that do not parse are reported in `warnings` and skipped.
    pub(super) fn load(
        dir: &Path,
        read: impl Fn(&str) -> Option<Vec<u8>>,
        shown: &str,
        warnings: &mut Vec<String>,
    ) -> IgnoreLevel {
        let build = |name: &str, warnings: &mut Vec<String>| {
            let mut builder = GitignoreBuilder::new(dir);
            if let Some(bytes) = read(name) {
                let text = String::from_utf8_lossy(&bytes);
                for (n, line) in text.lines().enumerate() {
                    if let Err(e) = builder.add_line(None, line) {
                        warnings.push(format!("{} (line {}: {e})", join_shown(shown, name), n + 1));
                    }
                }
            }
            builder.build().unwrap_or_else(|_| Gitignore::empty())
        };
        IgnoreLevel {
            ignore: build(".ignore", warnings),
            gitignore: build(".gitignore", warnings),
            exclude: build(".git/info/exclude", warnings),
        }
    }

    fn is_empty(&self) -> bool {
        self.ignore.is_empty() && self.gitignore.is_empty() && self.exclude.is_empty()
    }
}

fn join_shown(dir: &str, name: &str) -> String {
    if dir.is_empty() || dir == "." {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// A stack of directories' ignore rules, outermost first, matched as the
/// `ignore` crate does: `.ignore` rules (deepest directory first) win over
/// `.gitignore` rules, which win over `.git/info/exclude`; the first rule that
/// matches decides (a `!` rule whitelists).
#[derive(Clone, Debug, Default)]
pub(super) struct IgnoreRules {
    levels: Vec<std::sync::Arc<IgnoreLevel>>,
}

impl IgnoreRules {
    pub(super) fn with(&self, level: IgnoreLevel) -> IgnoreRules {
        let mut levels = self.levels.clone();
        if !level.is_empty() {
            levels.push(std::sync::Arc::new(level));
        }
        IgnoreRules { levels }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// Whether the rules ignore `path` (absolute, below every level's directory).
    pub(super) fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let pick: [fn(&IgnoreLevel) -> &Gitignore; 3] =
            [|l| &l.ignore, |l| &l.gitignore, |l| &l.exclude];
        for which in pick {
            for level in self.levels.iter().rev() {
                match which(level).matched(path, is_dir) {
                    Match::None => continue,
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                }
            }
        }
        false
    }
}

/// A file's searched lines, before the global limit is applied.
#[derive(Debug, Default)]
pub(super) struct FileHits {
    pub lines: Vec<GrepLine>,
    /// Matching lines kept (at most the request's `max-matches`).
    pub matches: u32,
    /// The file has more matching lines than were kept.
    pub more: bool,
    /// Bytes of text held.
    pub bytes: usize,
}

impl FileHits {
    /// How many matches this file puts towards "the first N, and is there more".
    fn weight(&self) -> u64 {
        u64::from(self.matches) + u64::from(self.more)
    }
}

/// Cut `text` to at most `max` bytes at a character boundary.
pub(super) fn cut_text(bytes: &[u8], max: usize) -> (String, bool) {
    // Converting only a prefix keeps a huge line (minified code) cheap; a
    // character is at most 4 bytes, so `max + 4` holds every character that
    // could start before the cut.
    let prefix = &bytes[..bytes.len().min(max.saturating_add(4))];
    let mut text = String::from_utf8_lossy(prefix).into_owned();
    let mut cut = prefix.len() < bytes.len();
    if text.len() > max {
        text.truncate(text.floor_char_boundary(max));
        cut = true;
    }
    (text, cut)
}

/// Collects one file's matching and context lines for grep.
///
/// Keeps up to `cap` matches (no file can give more to the result), then only
/// what the last kept match's after-context needs, and notes whether another
/// match exists; it stops the search as soon as nothing more can change the
/// result. The searcher merges overlapping context windows itself, so no line
/// arrives twice.
pub(super) struct FileSink<'a> {
    cap: u32,
    context: u64,
    max_line_bytes: usize,
    stop: &'a StopFlag,
    hits: FileHits,
    /// Last line the last kept match's after-context reaches.
    tail_end: u64,
}

/// The error a sink returns when the call was cancelled.
pub(super) fn cancelled_io() -> io::Error {
    io::Error::other("the search was cancelled")
}

impl<'a> FileSink<'a> {
    pub(super) fn new(request: &GrepRequest, stop: &'a StopFlag) -> FileSink<'a> {
        FileSink {
            cap: request.max_matches,
            context: u64::from(request.context),
            max_line_bytes: request.max_line_bytes as usize,
            stop,
            hits: FileHits::default(),
            tail_end: 0,
        }
    }

    pub(super) fn finish(self) -> FileHits {
        self.hits
    }

    fn push(&mut self, line_number: u64, bytes: &[u8], is_match: bool) {
        let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let (text, cut) = cut_text(line, self.max_line_bytes);
        self.hits.bytes += text.len();
        self.hits.lines.push(GrepLine {
            line_number,
            text,
            is_match,
            cut,
        });
    }

    fn still_collecting(&self) -> bool {
        self.hits.matches < self.cap
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.stop.is_raised() {
            return Err(cancelled_io());
        }
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            let n = first + i as u64;
            if self.still_collecting() {
                self.hits.matches += 1;
                self.push(n, line, true);
                if !self.still_collecting() {
                    self.tail_end = n + self.context;
                }
            } else {
                self.hits.more = true;
                if n > self.tail_end {
                    return Ok(false);
                }
                // Past the limit but inside the last kept match's window: a
                // context line, as Pi shows lines around its last match.
                self.push(n, line, false);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.stop.is_raised() {
            return Err(cancelled_io());
        }
        let n = ctx.line_number().unwrap_or(0);
        if self.still_collecting() || n <= self.tail_end {
            self.push(n, ctx.bytes(), false);
            return Ok(true);
        }
        // Only looking for one more match now.
        Ok(!self.hits.more)
    }
}

/// A reader that fails once the call is cancelled, so a search inside one
/// huge file stops too. Counts the bytes read.
pub(super) struct Cancellable<'a, R> {
    pub inner: R,
    pub stop: &'a StopFlag,
    pub read: u64,
}

impl<R: io::Read> io::Read for Cancellable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.is_raised() {
            return Err(cancelled_io());
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// The first results in path order, kept while a walk runs in parallel.
///
/// Paths compare component by component (`a/b` before `a.txt`), the order of
/// a depth-first walk with sorted names. Once the kept entries weigh `need`
/// (the limit plus one: enough to fill the result and know whether more
/// exist), anything after the last kept path can change nothing: later
/// arrivals are refused and the walker is told to skip them, and whole
/// directories after it are pruned (their contents sort after them).
pub(super) struct Ranked<T> {
    inner: Mutex<RankedInner<T>>,
    /// Whether a threshold exists (checked without the lock on the hot path).
    full: AtomicBool,
    /// The collection outgrew [`MAX_RESULT_BYTES`].
    overflowed: AtomicBool,
}

struct RankedInner<T> {
    items: BTreeMap<PathBuf, (u64, usize, T)>,
    weight: u64,
    bytes: usize,
    need: u64,
    threshold: Option<PathBuf>,
}

impl<T> Ranked<T> {
    pub(super) fn new(need: u64) -> Ranked<T> {
        Ranked {
            inner: Mutex::new(RankedInner {
                items: BTreeMap::new(),
                weight: 0,
                bytes: 0,
                need,
                threshold: None,
            }),
            full: AtomicBool::new(false),
            overflowed: AtomicBool::new(false),
        }
    }

    /// Whether `rel` sorts after every entry that can still be in the result.
    pub(super) fn is_beyond(&self, rel: &Path) -> bool {
        if !self.full.load(Ordering::Acquire) {
            return false;
        }
        let inner = self.inner.lock().expect("search results lock");
        inner.threshold.as_deref().is_some_and(|t| rel > t)
    }

    /// Whether the collection outgrew [`MAX_RESULT_BYTES`]; the walk should stop.
    pub(super) fn is_overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// Offer an entry of `weight` results holding `bytes` of text.
    pub(super) fn offer(&self, rel: PathBuf, weight: u64, bytes: usize, item: T) {
        if weight == 0 {
            return;
        }
        let mut inner = self.inner.lock().expect("search results lock");
        if inner.threshold.as_ref().is_some_and(|t| &rel > t) {
            return;
        }
        inner.weight += weight;
        inner.bytes += bytes;
        inner.items.insert(rel, (weight, bytes, item));
        // Drop entries from the end while the rest still weigh enough.
        while let Some((_, (last_weight, _, _))) = inner.items.last_key_value() {
            if inner.weight - last_weight < inner.need {
                break;
            }
            let (_, (w, b, _)) = inner.items.pop_last().expect("a last entry");
            inner.weight -= w;
            inner.bytes -= b;
        }
        if inner.weight >= inner.need {
            inner.threshold = inner.items.last_key_value().map(|(k, _)| k.clone());
            self.full.store(true, Ordering::Release);
        }
        if inner.bytes > MAX_RESULT_BYTES {
            self.overflowed.store(true, Ordering::Relaxed);
        }
    }

    /// The kept entries in path order.
    pub(super) fn into_sorted(self) -> Vec<(PathBuf, T)> {
        let inner = self.inner.into_inner().expect("search results lock");
        inner
            .items
            .into_iter()
            .map(|(k, (_, _, item))| (k, item))
            .collect()
    }
}

impl Ranked<FileHits> {
    pub(super) fn offer_hits(&self, rel: PathBuf, hits: FileHits) {
        self.offer(rel, hits.weight(), hits.bytes, hits);
    }
}

/// A path relative to the search root as the model sees it: `/` separators.
pub(super) fn shown(rel: &Path) -> String {
    let text = rel.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        text.into_owned()
    } else {
        text.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

/// The grep result from the files a walk ranked: `Cancelled` if the search
/// was stopped, else [`assemble_grep`] of the files in path order, warned
/// when the collected results outgrew their bound.
pub(super) fn ranked_grep(
    ranked: Ranked<FileHits>,
    request: &GrepRequest,
    mut warnings: Vec<String>,
    stop: &StopFlag,
) -> Result<GrepResult, SearchError> {
    if stop.is_raised() {
        return Err(SearchError::Cancelled);
    }
    if ranked.is_overflowed() {
        warnings.push(overflow_warning());
    }
    let files = ranked
        .into_sorted()
        .into_iter()
        .map(|(rel, hits)| (shown(&rel), hits))
        .collect();
    Ok(assemble_grep(files, request, warnings))
}

/// The grep result from files in path order: the first `max_matches` matches,
/// the lines of the file where the limit falls cut after its last kept
/// match's context (later matching lines inside that window become context).
fn assemble_grep(
    files: Vec<(String, FileHits)>,
    request: &GrepRequest,
    mut warnings: Vec<String>,
) -> GrepResult {
    let mut remaining = request.max_matches;
    let mut limit_reached = false;
    let mut out = Vec::new();
    for (path, hits) in files {
        if hits.weight() == 0 {
            continue;
        }
        if remaining == 0 {
            limit_reached = true;
            break;
        }
        let mut lines = hits.lines;
        if hits.matches > remaining || hits.more {
            limit_reached = true;
        }
        if hits.matches > remaining {
            let last_kept = lines
                .iter()
                .filter(|l| l.is_match)
                .nth(remaining as usize - 1)
                .map(|l| l.line_number)
                .expect("the file has more matches than remain");
            let end = last_kept + u64::from(request.context);
            lines.retain(|l| l.line_number <= end);
            for line in lines.iter_mut().filter(|l| l.line_number > last_kept) {
                line.is_match = false;
            }
        }
        remaining -= hits.matches.min(remaining);
        if !lines.is_empty() {
            out.push(GrepFile { path, lines });
        }
    }
    warnings.sort();
    warnings.dedup();
    GrepResult {
        files: out,
        matches: request.max_matches - remaining,
        limit_reached,
        warnings,
    }
}

/// The grep result for an explicit file (not a directory): its hits, or
/// why it could not be read, under the path the call named.
pub(super) fn grep_one_file(
    hits: Result<FileHits, String>,
    request: &GrepRequest,
    stop: &StopFlag,
) -> Result<GrepResult, SearchError> {
    if stop.is_raised() {
        return Err(SearchError::Cancelled);
    }
    let hits = hits.map_err(|e| SearchError::Other(format!("{}: {e}", request.root)))?;
    let name = Path::new(&request.root)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(assemble_grep(vec![(name, hits)], request, Vec::new()))
}

/// Most memory one search buffers for a line (with its context): a file
/// whose single line is gigabytes long is reported, not read into memory.
pub(super) const MAX_LINE_BUFFER: usize = 64 << 20;

/// A short cause for an I/O error: `permission denied`, not `Permission
/// denied (os error 13)`.
pub(super) fn io_cause(e: &io::Error) -> String {
    // grep-searcher's words for its heap limit.
    if e.to_string().starts_with("configured allocation limit") {
        return format!("a line longer than {} MiB", MAX_LINE_BUFFER >> 20);
    }
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::NotADirectory => "not a directory".into(),
        _ => {
            let text = e.to_string();
            match text.find(" (os error") {
                Some(i) => text[..i].to_lowercase(),
                None => text,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(pattern: &str) -> GrepRequest {
        GrepRequest::new(pattern, "/")
    }

    #[test]
    fn regex_errors_name_the_cause_only() {
        match regex_matcher(&request("a(")) {
            Err(SearchError::InvalidPattern(reason)) => assert_eq!(reason, "unclosed group"),
            other => panic!("{other:?}"),
        }
        let mut literal = request("a(");
        literal.literal = true;
        assert!(regex_matcher(&literal).is_ok());
    }

    #[test]
    fn cut_text_never_splits_a_character() {
        assert_eq!(cut_text("héllo".as_bytes(), 2), ("h".to_string(), true));
        assert_eq!(cut_text("héllo".as_bytes(), 3), ("hé".to_string(), true));
        assert_eq!(cut_text(b"abc", 3), ("abc".to_string(), false));
        let long = "😀".repeat(1000);
        let (text, cut) = cut_text(long.as_bytes(), 2000);
        assert!(cut);
        assert_eq!(text, "😀".repeat(500));
    }

    #[test]
    fn find_globs_follow_fd_rules() {
        let root = Path::new("/ws");
        let g = |p: &str| FindGlob::new(p, root).unwrap();
        assert!(g("*.txt").is_match(Path::new("sub/deep/a.txt")));
        assert!(g("*.txt").is_match(Path::new("A.TXT")), "smart case");
        assert!(!g("*.TXT").is_match(Path::new("a.txt")), "smart case");
        assert!(g("src/*.rs").is_match(Path::new("src/a.rs")));
        assert!(g("src/*.rs").is_match(Path::new("x/src/a.rs")));
        assert!(!g("src/*.rs").is_match(Path::new("src/x/a.rs")));
        assert!(g("src/**/*.rs").is_match(Path::new("src/x/y/a.rs")));
        assert!(g("**/*.json").is_match(Path::new("a.json")));
        assert!(g("/ws/sub/*.txt").is_match(Path::new("sub/a.txt")));
        assert!(!g("/sub/*.txt").is_match(Path::new("sub/a.txt")));
        match FindGlob::new("[", root) {
            Err(SearchError::InvalidGlob(reason)) => {
                assert_eq!(reason, "unclosed character class; missing ']'")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ranked_keeps_the_first_entries_in_path_order() {
        let ranked = Ranked::new(3);
        for name in ["d", "b", "a/z", "e", "a.txt", "c"] {
            ranked.offer(PathBuf::from(name), 1, 1, name.to_string());
        }
        // a/z < a.txt < b: component order, not byte order.
        assert!(ranked.is_beyond(Path::new("b/x")));
        assert!(!ranked.is_beyond(Path::new("a.txt")));
        let kept: Vec<String> = ranked.into_sorted().into_iter().map(|(_, v)| v).collect();
        assert_eq!(kept, ["a/z", "a.txt", "b"]);
    }

    fn hits(lines: &[(u64, bool)], more: bool) -> FileHits {
        FileHits {
            matches: lines.iter().filter(|l| l.1).count() as u32,
            lines: lines
                .iter()
                .map(|&(n, m)| GrepLine {
                    line_number: n,
                    text: format!("l{n}"),
                    is_match: m,
                    cut: false,
                })
                .collect(),
            more,
            bytes: 0,
        }
    }

    #[test]
    fn assembly_cuts_the_file_where_the_limit_falls() {
        let mut req = request("x");
        req.max_matches = 3;
        req.context = 1;
        let files = vec![
            ("a".to_string(), hits(&[(1, true), (2, false)], false)),
            (
                "b".to_string(),
                hits(
                    &[(4, false), (5, true), (6, true), (7, true), (8, false)],
                    false,
                ),
            ),
            ("c".to_string(), hits(&[(1, true)], false)),
        ];
        let r = assemble_grep(files, &req, vec!["z".into(), "y".into(), "z".into()]);
        assert_eq!(r.matches, 3);
        assert!(r.limit_reached);
        assert_eq!(r.files.len(), 2);
        let b: Vec<(u64, bool)> = r.files[1]
            .lines
            .iter()
            .map(|l| (l.line_number, l.is_match))
            .collect();
        // Matches 5 and 6 kept; 7 is inside 6's context window, shown as context.
        assert_eq!(b, [(4, false), (5, true), (6, true), (7, false)]);
        assert_eq!(r.warnings, ["y", "z"]);
    }

    #[test]
    fn assembly_reports_no_limit_when_exactly_n_exist() {
        let mut req = request("x");
        req.max_matches = 2;
        let files = vec![("a".to_string(), hits(&[(1, true), (2, true)], false))];
        let r = assemble_grep(files, &req, vec![]);
        assert_eq!((r.matches, r.limit_reached), (2, false));
    }

    #[test]
    fn ignore_rules_prefer_ignore_files_then_deeper_directories() {
        let mut warnings = Vec::new();
        let top = IgnoreLevel::load(
            Path::new("/ws"),
            |name| match name {
                ".gitignore" => Some(b"*.log\nbuild/\n".to_vec()),
                _ => None,
            },
            ".",
            &mut warnings,
        );
        let sub = IgnoreLevel::load(
            Path::new("/ws/sub"),
            |name| match name {
                ".gitignore" => Some(b"!keep.log\n".to_vec()),
                ".ignore" => Some(b"secret.txt\na{b\n".to_vec()),
                _ => None,
            },
            "sub",
            &mut warnings,
        );
        let rules = IgnoreRules::default().with(top).with(sub);
        assert!(rules.is_ignored(Path::new("/ws/sub/x.log"), false));
        assert!(!rules.is_ignored(Path::new("/ws/sub/keep.log"), false));
        assert!(rules.is_ignored(Path::new("/ws/sub/secret.txt"), false));
        assert!(rules.is_ignored(Path::new("/ws/sub/build"), true));
        assert!(!rules.is_ignored(Path::new("/ws/sub/build"), false));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("sub/.ignore (line 2: "),
            "{warnings:?}"
        );
    }
}

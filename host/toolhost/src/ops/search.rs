//! The `search` Operations: grep and glob walks on the ripgrep libraries.
//!
//! # Behaviour (spec §1.11, §1.12, §7.17–§7.21)
//!
//! * `.gitignore`, `.ignore` and `.git/info/exclude` are honoured everywhere,
//!   inside a git repository or not; rules of directories between the granted
//!   root and the search root apply too, rules above the granted root never
//!   (nothing outside the roots is read, and a stray ignore file in a parent
//!   directory cannot hide the workspace). The user's global git excludes are
//!   not read: results do not depend on the machine.
//! * Hidden files are searched; an entry named `.git` is never entered or listed.
//! * Symlinks inside the tree are not followed (as `rg` and `fd`), so a walk
//!   never leaves the roots; find lists them as entries. The search root itself
//!   is resolved like every other path ([`LocalFs::resolve_real`]): `..`,
//!   absolute paths and symlinks leaving the roots are refused.
//! * Binary files (a NUL byte) found by the walk are skipped as `rg` skips
//!   them; a file named as the root is searched with NULs read as line ends
//!   (rg's treatment of explicit files).
//! * Results are deterministic: entries in path order (component by
//!   component, so `a/b` before `a.txt`), matches in line order; a limit keeps
//!   the first N of that order, and `limit-reached` means more exist.
//! * An entry that cannot be read is a warning; the search goes on.
//!
//! # Speed
//!
//! [`LocalSearch`] first walks sequentially in sorted order, so a limit
//! reached early stops the walk at the cut (a 1000-match grep searches only
//! the files before it); a search that outlasts a small budget goes on with
//! the `ignore` crate's parallel walker, searching each file on the walker's
//! threads as `rg` does, for every entry after the last one handled. Results
//! are collected in a path-ordered set that, once it holds the limit plus
//! one, refuses and prunes everything sorting after its last entry. The glue
//! runs the walk on tokio's blocking pool. [`FsSearch`] searches any
//! [`FsRead`] backend (the in-memory one in tests) with a sequential walk.
//!
//! # Cancellation
//!
//! A walk checks a [`StopFlag`] at every entry, in every read of a file and at
//! every matching line. The glue raises it when the call is cancelled and when
//! the call's future is dropped (deadline or kill), so no walk outlives its
//! call for long.
//!
//! [`FsRead`]: crate::ops::fs::FsRead
//! [`LocalFs::resolve_real`]: crate::ops::fs::LocalFs

mod core;
mod local;
mod over_fs;

pub use self::core::MAX_RESULT_BYTES;
pub use self::local::LocalSearch;
pub use self::over_fs::FsSearch;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

/// Why a search failed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SearchError {
    /// The root does not exist (the text names it).
    NotFound(String),
    /// The regular expression does not compile.
    InvalidPattern(String),
    /// The glob does not compile.
    InvalidGlob(String),
    /// The root is outside the granted roots.
    OutsideRoots(String),
    Cancelled,
    Other(String),
}

impl SearchError {
    /// The error of a search whose `root` could not be opened.
    pub(crate) fn at_root(root: &str, e: crate::ops::fs::FsError) -> SearchError {
        use crate::ops::fs::ErrorCode;
        match e.code {
            ErrorCode::OutsideRoots => SearchError::OutsideRoots(root.to_string()),
            ErrorCode::NotFound | ErrorCode::NotADirectory => {
                SearchError::NotFound(root.to_string())
            }
            ErrorCode::Cancelled => SearchError::Cancelled,
            _ => SearchError::Other(e.message),
        }
    }
}

/// A content search.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GrepRequest {
    pub pattern: String,
    /// Absolute path of a directory or a file.
    pub root: String,
    /// Only files matching this glob (a pattern without `/` matches names at
    /// any depth).
    pub glob: Option<String>,
    pub ignore_case: bool,
    /// The pattern is a literal string, not a regular expression.
    pub literal: bool,
    /// Lines of context before and after each match; overlapping windows merge.
    pub context: u32,
    /// Stop after this many matching lines.
    pub max_matches: u32,
    /// Longer lines are cut to this many bytes (at a character boundary).
    pub max_line_bytes: u32,
}

impl GrepRequest {
    /// A case-sensitive regular-expression search of `root` (an absolute
    /// path) in every file, without context, stopping at 100 matching lines
    /// (Pi's default limit) and cutting lines at 2,000 bytes.
    pub fn new(pattern: impl Into<String>, root: impl Into<String>) -> GrepRequest {
        GrepRequest {
            pattern: pattern.into(),
            root: root.into(),
            glob: None,
            ignore_case: false,
            literal: false,
            context: 0,
            max_matches: 100,
            max_line_bytes: 2000,
        }
    }
}

/// A matching (or context) line.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GrepLine {
    pub line_number: u64,
    pub text: String,
    /// False for a context line.
    pub is_match: bool,
    /// The text was cut at `max_line_bytes`.
    pub cut: bool,
}

/// The lines found in one file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GrepFile {
    /// Relative to the root with `/` separators; the file name when the root
    /// is a file.
    pub path: String,
    pub lines: Vec<GrepLine>,
}

/// What a content search found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GrepResult {
    pub files: Vec<GrepFile>,
    /// Matching lines returned.
    pub matches: u32,
    /// More matches exist beyond `max_matches`.
    pub limit_reached: bool,
    /// Paths that could not be searched, with the cause (the search went on).
    pub warnings: Vec<String>,
}

/// A search of names.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GlobRequest {
    pub pattern: String,
    /// Absolute path of the directory to search.
    pub root: String,
    /// Stop after this many results.
    pub max_results: u32,
}

/// What a search of names found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GlobResult {
    /// Relative to the root with `/` separators; directories end with `/`.
    pub paths: Vec<String>,
    /// More results exist beyond `max_results`.
    pub limit_reached: bool,
    pub warnings: Vec<String>,
}

/// Searching the granted roots. Paths in requests are absolute.
pub trait Search: Send + Sync + std::fmt::Debug {
    /// Matching lines (and context) of the files under `request.root`.
    /// Returns [`SearchError::Cancelled`] once `stop` is raised.
    fn grep(&self, request: &GrepRequest, stop: &StopFlag) -> Result<GrepResult, SearchError>;
    /// Entries under `request.root` matching a glob.
    fn glob(&self, request: &GlobRequest, stop: &StopFlag) -> Result<GlobResult, SearchError>;
    /// The granted roots, as absolute paths.
    fn roots(&self) -> Vec<String>;
}

/// Either search, as one value: how the workspace protocol carries it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Query {
    Grep(GrepRequest),
    Glob(GlobRequest),
}

/// What a [`Query`] found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Found {
    Grep(GrepResult),
    Glob(GlobResult),
}

impl Query {
    /// Run it on `backend`.
    pub fn run(&self, backend: &dyn Search, stop: &StopFlag) -> Result<Found, SearchError> {
        match self {
            Query::Grep(r) => backend.grep(r, stop).map(Found::Grep),
            Query::Glob(r) => backend.glob(r, stop).map(Found::Glob),
        }
    }

    /// The directory it searches.
    pub fn root(&self) -> &str {
        match self {
            Query::Grep(r) => &r.root,
            Query::Glob(r) => &r.root,
        }
    }

    /// The same search of another directory.
    pub fn rooted(mut self, root: String) -> Query {
        match &mut self {
            Query::Grep(r) => r.root = root,
            Query::Glob(r) => r.root = root,
        }
        self
    }
}

/// A search request of one kind, whose result is a [`Found`] of its kind.
pub trait Request: Into<Query> + Send + 'static {
    type Found: Send + 'static;
    /// Its kind's result out of `found`; `None` for another kind's.
    fn found(found: Found) -> Option<Self::Found>;
}

/// Each kind of request: its [`Query`] and [`Found`] variant.
macro_rules! request_kind {
    ($request:ident, $found:ident, $variant:ident) => {
        impl From<$request> for Query {
            fn from(r: $request) -> Query {
                Query::$variant(r)
            }
        }

        impl Request for $request {
            type Found = $found;
            fn found(found: Found) -> Option<$found> {
                match found {
                    Found::$variant(r) => Some(r),
                    _ => None,
                }
            }
        }
    };
}

request_kind!(GrepRequest, GrepResult, Grep);
request_kind!(GlobRequest, GlobResult, Glob);

/// Tells a running search to stop. Cheap to check (one atomic load), so walks
/// check it at every entry and every read.
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Raises the flag when dropped: a search whose call went away stops.
struct RaiseOnDrop(StopFlag);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.raise();
    }
}

/// Run `f` on the blocking pool with `backend`, answering `cancelled` as
/// soon as `cancel` fires (the walk notices its flag and stops on its own),
/// and raising the flag if this future is dropped (a deadline, a kill).
pub(crate) async fn run_search<T: Send + 'static>(
    backend: Arc<dyn Search>,
    cancel: CancellationToken,
    f: impl FnOnce(&dyn Search, &StopFlag) -> Result<T, SearchError> + Send + 'static,
) -> Result<T, SearchError> {
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }
    let stop = StopFlag::new();
    let _stop_when_dropped = RaiseOnDrop(stop.clone());
    let worker = {
        let stop = stop.clone();
        tokio::task::spawn_blocking(move || f(backend.as_ref(), &stop))
    };
    tokio::select! {
        joined = worker => joined.unwrap_or_else(|e| {
            Err(SearchError::Other(format!("the search failed: {e}")))
        }),
        _ = cancel.cancelled() => Err(SearchError::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::fs::{LocalFs, MemoryFs, MemoryNode};
    use std::path::{Path, PathBuf};

    /// A workspace on disk with the same tree mirrored in memory, so each
    /// request runs on both backends and must give the same answer.
    struct Tree {
        _tmp: tempfile::TempDir,
        ws: PathBuf,
    }

    impl Tree {
        fn new(files: &[(&str, &str)]) -> Tree {
            let tmp = tempfile::tempdir().unwrap();
            let ws = tmp.path().canonicalize().unwrap().join("ws");
            std::fs::create_dir(&ws).unwrap();
            let tree = Tree { _tmp: tmp, ws };
            for (path, text) in files {
                tree.write(path, text);
            }
            tree
        }

        fn write(&self, rel: &str, text: &str) {
            let p = self.ws.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }

        fn root(&self, rel: &str) -> String {
            if rel.is_empty() {
                self.ws.to_string_lossy().into_owned()
            } else {
                self.ws.join(rel).to_string_lossy().into_owned()
            }
        }

        fn local(&self) -> LocalSearch {
            LocalSearch::new(Arc::new(
                LocalFs::new(std::slice::from_ref(&self.ws)).unwrap(),
            ))
        }

        /// The tree in memory (files and directories; symlinks are not mirrored).
        fn memory(&self) -> FsSearch {
            let root = self.ws.to_string_lossy().into_owned();
            let fs = MemoryFs::new(&[root.as_str()]);
            fn copy(fs: &MemoryFs, dir: &Path) {
                for entry in std::fs::read_dir(dir).unwrap() {
                    let entry = entry.unwrap();
                    let path = entry.path();
                    let ty = entry.file_type().unwrap();
                    if ty.is_dir() {
                        fs.insert(&path.to_string_lossy(), MemoryNode::Dir);
                        copy(fs, &path);
                    } else if ty.is_file() {
                        fs.write_file(&path.to_string_lossy(), std::fs::read(&path).unwrap());
                    }
                }
            }
            copy(&fs, &self.ws);
            FsSearch::new(Arc::new(fs))
        }

        /// `search` on both backends; they must agree.
        fn both<T: std::fmt::Debug>(
            &self,
            search: impl Fn(&dyn Search, &StopFlag) -> Result<T, SearchError>,
        ) -> Result<T, SearchError> {
            let stop = StopFlag::new();
            let local = search(&self.local(), &stop);
            let memory = search(&self.memory(), &stop);
            assert_eq!(
                format!("{local:?}"),
                format!("{memory:?}"),
                "backends differ"
            );
            local
        }

        fn grep(&self, request: GrepRequest) -> Result<GrepResult, SearchError> {
            self.both(|backend, stop| backend.grep(&request, stop))
        }

        fn glob(&self, pattern: &str, max: u32) -> Result<GlobResult, SearchError> {
            let request = GlobRequest {
                pattern: pattern.into(),
                root: self.root(""),
                max_results: max,
            };
            self.both(|backend, stop| backend.glob(&request, stop))
        }

        fn request(&self, pattern: &str) -> GrepRequest {
            GrepRequest::new(pattern, self.root(""))
        }
    }

    /// `path:line:text` for matches, `path-line-text` for context lines.
    fn lines(result: &GrepResult) -> Vec<String> {
        result
            .files
            .iter()
            .flat_map(|f| {
                f.lines.iter().map(move |l| {
                    let sep = if l.is_match { ':' } else { '-' };
                    format!("{}{sep}{}{sep}{}", f.path, l.line_number, l.text)
                })
            })
            .collect()
    }

    #[test]
    fn ignore_files_apply_everywhere_and_git_is_never_entered() {
        let tree = Tree::new(&[
            (".gitignore", "ignored.txt\nbuild/\n"),
            (".ignore", "secret*\n"),
            ("ignored.txt", "needle\n"),
            ("kept.txt", "needle\n"),
            (".hidden", "needle\n"),
            (".git/config", "needle\n"),
            ("build/out.txt", "needle\n"),
            ("secret.txt", "needle\n"),
            ("sub/.gitignore", "!ignored.txt\nlocal.txt\n"),
            ("sub/ignored.txt", "needle\n"),
            ("sub/local.txt", "needle\n"),
        ]);
        let r = tree.grep(tree.request("needle")).unwrap();
        assert_eq!(
            lines(&r),
            [
                ".hidden:1:needle",
                "kept.txt:1:needle",
                "sub/ignored.txt:1:needle"
            ]
        );
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        let found = tree.glob("*", 100).unwrap();
        assert_eq!(
            found.paths,
            [
                ".gitignore",
                ".hidden",
                ".ignore",
                "kept.txt",
                "sub/",
                "sub/.gitignore",
                "sub/ignored.txt"
            ]
        );
    }

    #[test]
    fn rules_between_the_granted_root_and_the_search_root_apply_and_none_above() {
        let tree = Tree::new(&[
            (".gitignore", "*.log\n"),
            ("sub/a.log", "needle\n"),
            ("sub/a.txt", "needle\n"),
        ]);
        // A stray ignore file above the workspace hides nothing.
        std::fs::write(tree.ws.parent().unwrap().join(".gitignore"), "*\n").unwrap();
        let mut request = tree.request("needle");
        request.root = tree.root("sub");
        assert_eq!(lines(&tree.grep(request).unwrap()), ["a.txt:1:needle"]);
        assert_eq!(tree.glob("a.*", 10).unwrap().paths, ["sub/a.txt"]);
    }

    #[test]
    fn results_are_sorted_and_the_limit_takes_the_first() {
        let mut files = Vec::new();
        for name in ["b.txt", "a/z.txt", "a.txt", "c/d/e.txt", "c.txt"] {
            files.push((name, "x\nx\n"));
        }
        let tree = Tree::new(&files);
        let all = tree.grep(tree.request("x")).unwrap();
        assert_eq!(
            all.files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>(),
            ["a/z.txt", "a.txt", "b.txt", "c/d/e.txt", "c.txt"]
        );
        assert_eq!((all.matches, all.limit_reached), (10, false));
        let mut request = tree.request("x");
        request.max_matches = 3;
        let first = tree.grep(request.clone()).unwrap();
        assert_eq!(lines(&first), ["a/z.txt:1:x", "a/z.txt:2:x", "a.txt:1:x"]);
        assert_eq!((first.matches, first.limit_reached), (3, true));
        request.max_matches = 10;
        let exact = tree.grep(request).unwrap();
        assert_eq!((exact.matches, exact.limit_reached), (10, false));

        let found = tree.glob("*.txt", 2).unwrap();
        assert_eq!(
            (found.paths.clone(), found.limit_reached),
            (vec!["a/z.txt".to_string(), "a.txt".into()], true)
        );
        let found = tree.glob("*.txt", 5).unwrap();
        assert!(!found.limit_reached);
        assert_eq!(found.paths.len(), 5);
    }

    #[test]
    fn overlapping_context_windows_merge() {
        let tree = Tree::new(&[("a.txt", "1\nhit\n3\nhit\n5\n6\n7\nhit\n")]);
        let mut request = tree.request("hit");
        request.context = 1;
        let r = tree.grep(request.clone()).unwrap();
        assert_eq!(
            lines(&r),
            [
                "a.txt-1-1",
                "a.txt:2:hit",
                "a.txt-3-3",
                "a.txt:4:hit",
                "a.txt-5-5",
                "a.txt-7-7",
                "a.txt:8:hit"
            ]
        );
        // The limit cuts after the last kept match's window; a later match
        // inside it is context.
        request.max_matches = 1;
        request.context = 2;
        let r = tree.grep(request).unwrap();
        assert_eq!(
            lines(&r),
            ["a.txt-1-1", "a.txt:2:hit", "a.txt-3-3", "a.txt-4-hit"]
        );
        assert!(r.limit_reached);
    }

    #[test]
    fn long_lines_are_cut_at_a_character_boundary() {
        let line = format!("needle {}", "é".repeat(2000));
        let tree = Tree::new(&[("a.txt", &line)]);
        let mut request = tree.request("needle");
        request.max_line_bytes = 100;
        let r = tree.grep(request).unwrap();
        let got = &r.files[0].lines[0];
        assert!(got.cut);
        assert_eq!(got.text, format!("needle {}", "é".repeat(46)));
    }

    #[test]
    fn binary_files_are_skipped_unless_named() {
        let tree = Tree::new(&[("bin.dat", "needle\0more\n"), ("a.txt", "needle\n")]);
        let r = tree.grep(tree.request("needle")).unwrap();
        assert_eq!(lines(&r), ["a.txt:1:needle"]);
        let mut request = tree.request("needle");
        request.root = tree.root("bin.dat");
        let r = tree.grep(request).unwrap();
        assert_eq!(lines(&r), ["bin.dat:1:needle"]);
    }

    #[test]
    fn glob_filters_grep_like_rg() {
        let tree = Tree::new(&[
            (".gitignore", "*.log\n"),
            ("a.rs", "x\n"),
            ("sub/b.rs", "x\n"),
            ("c.txt", "x\n"),
            ("d.log", "x\n"),
        ]);
        let mut request = tree.request("x");
        request.glob = Some("*.rs".into());
        assert_eq!(
            lines(&tree.grep(request.clone()).unwrap()),
            ["a.rs:1:x", "sub/b.rs:1:x"]
        );
        request.glob = Some("!*.rs".into());
        assert_eq!(lines(&tree.grep(request.clone()).unwrap()), ["c.txt:1:x"]);
        // As rg's --glob, a matching glob wins over the ignore files.
        request.glob = Some("*.log".into());
        assert_eq!(lines(&tree.grep(request.clone()).unwrap()), ["d.log:1:x"]);
        request.glob = Some("[".into());
        match tree.grep(request) {
            Err(SearchError::InvalidGlob(reason)) => {
                assert_eq!(reason, "unclosed character class; missing ']'")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn find_lists_directories_with_a_slash_and_matches_paths_with_slashes() {
        let tree = Tree::new(&[
            ("src/a.rs", ""),
            ("src/deep/b.rs", ""),
            ("lib/src/c.rs", ""),
            ("README.md", ""),
        ]);
        assert_eq!(tree.glob("src", 10).unwrap().paths, ["lib/src/", "src/"]);
        assert_eq!(
            tree.glob("src/*.rs", 10).unwrap().paths,
            ["lib/src/c.rs", "src/a.rs"]
        );
        assert_eq!(
            tree.glob("**/*.rs", 10).unwrap().paths,
            ["lib/src/c.rs", "src/a.rs", "src/deep/b.rs"]
        );
        assert_eq!(tree.glob("readme.*", 10).unwrap().paths, ["README.md"]);
        let abs = format!("{}/src/*.rs", tree.root(""));
        assert_eq!(tree.glob(&abs, 10).unwrap().paths, ["src/a.rs"]);
    }

    #[test]
    fn errors_name_their_cause() {
        let tree = Tree::new(&[("a.txt", "x\n")]);
        let mut request = tree.request("a(");
        assert!(
            matches!(tree.grep(request.clone()), Err(SearchError::InvalidPattern(r)) if r == "unclosed group")
        );
        request.pattern = "x".into();
        request.root = tree.root("missing");
        assert!(
            matches!(tree.grep(request.clone()), Err(SearchError::NotFound(p)) if p == tree.root("missing"))
        );
        request.root = tree.root("a.txt/below");
        assert!(matches!(tree.grep(request), Err(SearchError::NotFound(_))));
        let file_root = GlobRequest {
            pattern: "*".into(),
            root: tree.root("a.txt"),
            max_results: 10,
        };
        let stop = StopFlag::new();
        match tree.local().glob(&file_root, &stop) {
            Err(SearchError::Other(m)) => {
                assert_eq!(m, format!("Not a directory: {}", tree.root("a.txt")))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn roots_outside_the_grant_are_refused_and_links_are_not_followed() {
        let tree = Tree::new(&[("a.txt", "needle\n")]);
        let outside = tree.ws.parent().unwrap().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "needle\n").unwrap();
        std::os::unix::fs::symlink(&outside, tree.ws.join("out-dir")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), tree.ws.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(tree.ws.join("a.txt"), tree.ws.join("in.txt")).unwrap();
        let search = tree.local();
        let stop = StopFlag::new();
        let mut request = tree.request("needle");
        // Links in the tree are not followed (a link to a file inside is not
        // searched twice either); find lists them as entries.
        assert_eq!(
            lines(&search.grep(&request, &stop).unwrap()),
            ["a.txt:1:needle"]
        );
        let all = GlobRequest {
            pattern: "*".into(),
            root: tree.root(""),
            max_results: 10,
        };
        assert_eq!(
            search.glob(&all, &stop).unwrap().paths,
            ["a.txt", "in.txt", "out-dir", "out.txt"]
        );
        for root in [
            format!("{}/..", tree.root("")),
            tree.root("out-dir"),
            tree.root("out.txt"),
            outside.to_string_lossy().into_owned(),
        ] {
            request.root = root.clone();
            assert!(
                matches!(
                    search.grep(&request, &stop),
                    Err(SearchError::OutsideRoots(_))
                ),
                "{root}"
            );
        }
        // A root reached through a link inside the workspace is fine.
        request.root = tree.root("in.txt");
        assert_eq!(
            lines(&search.grep(&request, &stop).unwrap()),
            ["in.txt:1:needle"]
        );
    }

    #[test]
    fn a_raised_flag_cancels() {
        let tree = Tree::new(&[("a.txt", "x\n")]);
        let stop = StopFlag::new();
        stop.raise();
        assert!(matches!(
            tree.local().grep(&tree.request("x"), &stop),
            Err(SearchError::Cancelled)
        ));
        assert!(matches!(
            tree.memory().grep(&tree.request("x"), &stop),
            Err(SearchError::Cancelled)
        ));
    }

    /// A directory `name` holding a directory whose path is longer than the
    /// kernel accepts, so nobody can read it (root included): a walk that
    /// reaches it warns.
    fn unreadable_dir(tree: &Tree, name: &str) {
        // Built with descriptor-relative calls, as no absolute path reaches it.
        use rustix::fs::{Mode, OFlags, mkdirat, openat};
        let segment = "d".repeat(250);
        let mut dir = openat(rustix::fs::CWD, &tree.ws, OFlags::DIRECTORY, Mode::empty()).unwrap();
        for name in std::iter::once(name).chain(std::iter::repeat_n(segment.as_str(), 20)) {
            mkdirat(&dir, name, Mode::from_raw_mode(0o755)).unwrap();
            dir = openat(&dir, name, OFlags::DIRECTORY, Mode::empty()).unwrap();
        }
        let file = openat(
            &dir,
            "f.txt",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        rustix::io::write(&file, b"needle\n").unwrap();
    }

    #[test]
    fn an_unreadable_directory_is_a_warning_and_the_rest_is_kept() {
        let tree = Tree::new(&[("a.txt", "needle\n"), ("z.txt", "needle\n")]);
        unreadable_dir(&tree, "deep");
        let r = tree
            .local()
            .grep(&tree.request("needle"), &StopFlag::new())
            .unwrap();
        assert_eq!(lines(&r), ["a.txt:1:needle", "z.txt:1:needle"]);
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].starts_with("deep/ddd"), "{:?}", r.warnings);
        assert!(
            r.warnings[0].ends_with("(file name too long)"),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn a_limit_stops_the_walk_at_the_cut() {
        // Nothing after the last result (and the entry that shows more
        // exist) is visited: the unreadable directory is never reached.
        let tree = Tree::new(&[("a.txt", "x\nx\n"), ("b.txt", "x\n"), ("c.txt", "x\n")]);
        unreadable_dir(&tree, "d");
        let search = tree.local();
        let stop = StopFlag::new();
        let mut request = tree.request("x");
        request.max_matches = 2;
        let r = search.grep(&request, &stop).unwrap();
        assert_eq!(lines(&r), ["a.txt:1:x", "a.txt:2:x"]);
        assert!(r.limit_reached);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        let find = |max| GlobRequest {
            pattern: "*".into(),
            root: tree.root(""),
            max_results: max,
        };
        let r = search.glob(&find(2), &stop).unwrap();
        assert_eq!(r.paths, ["a.txt", "b.txt"]);
        assert!(r.limit_reached);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        // Without the cut the walk gets there.
        request.max_matches = 100;
        assert_eq!(search.grep(&request, &stop).unwrap().warnings.len(), 1);
        assert_eq!(search.glob(&find(100), &stop).unwrap().warnings.len(), 1);
    }

    #[test]
    fn the_parallel_walk_goes_on_where_the_sorted_walk_stopped() {
        // Every budget hands over at a different entry (a file, a directory,
        // one on the way back up); the results never change.
        let mut files = Vec::new();
        for dir in ["", "a/", "a/b/", "a/b/c/", "a.d/", "e/", "e/f/"] {
            for name in ["1.txt", "2.rs", "3.txt"] {
                files.push((format!("{dir}{name}"), format!("x {dir}\nno\nx\n")));
            }
        }
        files.push(("e/.gitignore".into(), "*.rs\n".into()));
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let tree = Tree::new(&refs);
        let stop = StopFlag::new();
        let find = |max| GlobRequest {
            pattern: "*".into(),
            root: tree.root(""),
            max_results: max,
        };
        for max in [1, 7, 20, 1000] {
            let mut request = tree.request("x");
            request.max_matches = max;
            let want_grep = format!("{:?}", tree.grep(request.clone()));
            let want_find = format!("{:?}", tree.glob("*", max));
            for budget in 1..40 {
                let local = tree.local().sorted_budget(budget, u64::MAX);
                let got = format!("{:?}", local.grep(&request, &stop));
                assert_eq!(got, want_grep, "grep, limit {max}, budget {budget} entries");
                let got = format!("{:?}", local.glob(&find(max), &stop));
                assert_eq!(got, want_find, "find, limit {max}, budget {budget} entries");
                let local = tree.local().sorted_budget(u64::MAX, budget);
                let got = format!("{:?}", local.grep(&request, &stop));
                assert_eq!(got, want_grep, "grep, limit {max}, budget {budget} bytes");
            }
        }
    }

    /// A backend that waits for its stop flag, and reports when it starts
    /// and when it saw the flag.
    #[derive(Debug)]
    struct WaitsForStop(std::sync::Mutex<std::sync::mpsc::Sender<()>>);

    impl Search for WaitsForStop {
        fn grep(&self, _: &GrepRequest, stop: &StopFlag) -> Result<GrepResult, SearchError> {
            self.0.lock().unwrap().send(()).unwrap();
            while !stop.is_raised() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            self.0.lock().unwrap().send(()).unwrap();
            Err(SearchError::Cancelled)
        }

        fn glob(&self, _: &GlobRequest, _: &StopFlag) -> Result<GlobResult, SearchError> {
            unreachable!("not used")
        }

        fn roots(&self) -> Vec<String> {
            Vec::new()
        }
    }

    fn waiting_backend() -> (Arc<dyn Search>, std::sync::mpsc::Receiver<()>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (Arc::new(WaitsForStop(std::sync::Mutex::new(tx))), rx)
    }

    /// Bound for "the walk noticed", so a broken flag fails instead of hanging.
    const NOTICE: std::time::Duration = std::time::Duration::from_secs(30);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelling_the_call_answers_cancelled_and_stops_the_walk() {
        let (backend, noticed) = waiting_backend();
        let cancel = CancellationToken::new();
        let request = Tree::new(&[]).request("x");
        let search = tokio::spawn(run_search(backend, cancel.clone(), move |b, stop| {
            b.grep(&request, stop)
        }));
        noticed.recv_timeout(NOTICE).expect("the walk started");
        cancel.cancel();
        assert!(matches!(search.await.unwrap(), Err(SearchError::Cancelled)));
        noticed
            .recv_timeout(NOTICE)
            .expect("the walk saw its stop flag");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_the_call_stops_the_walk() {
        let (backend, noticed) = waiting_backend();
        let request = Tree::new(&[]).request("x");
        let search = tokio::spawn(run_search(
            backend,
            CancellationToken::new(),
            move |b, stop| b.grep(&request, stop),
        ));
        noticed.recv_timeout(NOTICE).expect("the walk started");
        // A call past its deadline is dropped, not cancelled.
        search.abort();
        assert!(search.await.unwrap_err().is_cancelled());
        noticed
            .recv_timeout(NOTICE)
            .expect("the walk saw its stop flag");
    }
}

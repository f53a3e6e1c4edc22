//! [`FsSearch`]: search through any [`FsRead`] backend (the in-memory one in
//! tests, a remote one), with the same rules and results as [`LocalSearch`].
//!
//! The walk is sequential and visits names in sorted order, so it stops as
//! soon as the first results are known. An `FsRead` view follows symlinks
//! (its entries carry their targets' kinds) and refuses targets outside the
//! roots; a symlink loop is cut at [`MAX_DEPTH`] with a warning.
//!
//! [`LocalSearch`]: super::LocalSearch

use super::core::{
    FileHits, FileSink, FindGlob, IgnoreLevel, IgnoreRules, MAX_LINE_BUFFER, MAX_RESULT_BYTES,
    Ranked, grep_one_file, grep_override, overflow_warning, ranked_grep, regex_matcher, shown,
};
use super::{GlobRequest, GlobResult, GrepRequest, GrepResult, SearchError};
use super::{Search, StopFlag};
use crate::ops::fs::{EntryKind, ErrorCode, FsError};
use crate::ops::fs::{FsRead, MAX_READ_CHUNK};
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::Override;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Deepest directory a walk enters.
pub const MAX_DEPTH: usize = 64;

/// The `search` Operations over an [`FsRead`] backend.
#[derive(Debug)]
pub struct FsSearch {
    fs: Arc<dyn FsRead>,
}

impl FsSearch {
    pub fn new(fs: Arc<dyn FsRead>) -> FsSearch {
        FsSearch { fs }
    }

    fn read_all(&self, path: &str) -> Result<Vec<u8>, FsError> {
        let mut bytes = Vec::new();
        loop {
            let chunk = self.fs.read(path, bytes.len() as u64, MAX_READ_CHUNK)?;
            if chunk.is_empty() {
                return Ok(bytes);
            }
            bytes.extend_from_slice(&chunk);
        }
    }

    /// Whether the root is a directory (`false`: a file).
    fn target(&self, root: &str) -> Result<bool, SearchError> {
        let meta = self
            .fs
            .stat(root)
            .map_err(|e| SearchError::at_root(root, e))?;
        match meta.kind {
            EntryKind::Directory => Ok(true),
            EntryKind::File => Ok(false),
            _ => Err(SearchError::Other(format!(
                "Not a file or directory: {root}"
            ))),
        }
    }

    fn level(&self, dir: &Path, shown_dir: &str, warnings: &mut Vec<String>) -> IgnoreLevel {
        IgnoreLevel::load(
            dir,
            |name| self.read_all(&dir.join(name).to_string_lossy()).ok(),
            shown_dir,
            warnings,
        )
    }

    /// Rules of the directories from the granted root to the root's parent.
    fn outer_rules(&self, root: &Path, warnings: &mut Vec<String>) -> IgnoreRules {
        let granted = self
            .fs
            .roots()
            .into_iter()
            .map(PathBuf::from)
            .filter(|r| root.starts_with(r))
            .max_by_key(|r| r.as_os_str().len());
        let mut rules = IgnoreRules::default();
        let Some(granted) = granted else {
            return rules;
        };
        let mut ancestors: Vec<&Path> = root
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(&granted))
            .collect();
        ancestors.reverse();
        for dir in ancestors {
            rules = rules.with(self.level(dir, &dir.to_string_lossy(), warnings));
        }
        rules
    }

    /// Visit the entries below `dir` in sorted order, depth first.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        dir: &Path,
        rel: &Path,
        depth: usize,
        rules: &IgnoreRules,
        overrides: Option<&Override>,
        stop: &StopFlag,
        warnings: &mut Vec<String>,
        visit: &mut Visit<'_>,
    ) -> Flow {
        let mut entries = match self.fs.list_dir(&dir.to_string_lossy()) {
            Ok(entries) => entries,
            Err(e) => {
                warnings.push(format!("{} ({})", shown_or_dot(rel), cause(&e)));
                return Flow::Continue;
            }
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let rules = rules.with(self.level(dir, &shown_or_dot(rel), warnings));
        for entry in entries {
            if stop.is_raised() {
                return Flow::Stop;
            }
            // Unreachable targets (broken links, links out of the roots) are skipped.
            let (name, Some(kind)) = (entry.name, entry.kind) else {
                continue;
            };
            if name == ".git" {
                continue;
            }
            let is_dir = kind == EntryKind::Directory;
            let (child, child_rel) = (dir.join(&name), rel.join(&name));
            let by_glob = overrides.map(|o| o.matched(&child, is_dir));
            let ignored = match by_glob {
                Some(m) if m.is_whitelist() => false,
                Some(m) if m.is_ignore() => true,
                _ => rules.is_ignored(&child, is_dir),
            };
            if ignored {
                continue;
            }
            if visit(&child_rel, &child, is_dir, warnings) == Flow::Stop {
                return Flow::Stop;
            }
            if is_dir {
                if depth + 1 > MAX_DEPTH {
                    warnings.push(format!(
                        "{} (deeper than {MAX_DEPTH} directories; a symlink loop?)",
                        shown(&child_rel)
                    ));
                    continue;
                }
                let flow = self.walk(
                    &child,
                    &child_rel,
                    depth + 1,
                    &rules,
                    overrides,
                    stop,
                    warnings,
                    visit,
                );
                if flow == Flow::Stop {
                    return Flow::Stop;
                }
            }
        }
        Flow::Continue
    }
}

/// Called for each entry not ignored: (relative path, absolute path, is a
/// directory, warnings); `Stop` ends the walk.
type Visit<'a> = dyn FnMut(&Path, &Path, bool, &mut Vec<String>) -> Flow + 'a;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

fn shown_or_dot(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_string()
    } else {
        shown(rel)
    }
}

fn cause(e: &FsError) -> String {
    match e.code {
        ErrorCode::PermissionDenied => "permission denied".into(),
        ErrorCode::NotFound => "no such file or directory".into(),
        ErrorCode::OutsideRoots => "outside the granted roots".into(),
        _ => e.message.clone(),
    }
}

impl Search for FsSearch {
    fn grep(&self, request: &GrepRequest, stop: &StopFlag) -> Result<GrepResult, SearchError> {
        let matcher = regex_matcher(request)?;
        let is_dir = self.target(&request.root)?;
        let root = PathBuf::from(&request.root);
        let overrides = grep_override(&root, request.glob.as_deref())?;
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .heap_limit(Some(MAX_LINE_BUFFER))
            .before_context(request.context as usize)
            .after_context(request.context as usize)
            .binary_detection(if is_dir {
                BinaryDetection::quit(b'\0')
            } else {
                BinaryDetection::convert(b'\0')
            })
            .build();
        let mut search = |path: &Path| -> Result<FileHits, String> {
            let bytes = self
                .read_all(&path.to_string_lossy())
                .map_err(|e| cause(&e))?;
            let mut sink = FileSink::new(request, stop);
            // As a reader (not a slice), so binary detection converts or
            // quits exactly as it does on the local disk.
            searcher
                .search_reader(&matcher, bytes.as_slice(), &mut sink)
                .map_err(|e| e.to_string())?;
            Ok(sink.finish())
        };
        if !is_dir {
            return grep_one_file(search(&root), request, stop);
        }
        let mut warnings = Vec::new();
        let outer = self.outer_rules(&root, &mut warnings);
        let ranked: Ranked<FileHits> =
            Ranked::new(u64::from(request.max_matches).saturating_add(1));
        let mut visit = |rel: &Path, abs: &Path, is_dir: bool, warnings: &mut Vec<String>| {
            // Names come in sorted order: past the threshold, all that follows is too.
            if ranked.is_beyond(rel) || ranked.is_overflowed() {
                return Flow::Stop;
            }
            if !is_dir {
                match search(abs) {
                    Ok(hits) => ranked.offer_hits(rel.to_path_buf(), hits),
                    Err(_) if stop.is_raised() => return Flow::Stop,
                    Err(e) => warnings.push(format!("{} ({e})", shown(rel))),
                }
            }
            Flow::Continue
        };
        self.walk(
            &root,
            Path::new(""),
            0,
            &outer,
            overrides.as_ref(),
            stop,
            &mut warnings,
            &mut visit,
        );
        ranked_grep(ranked, request, warnings, stop)
    }

    fn glob(&self, request: &GlobRequest, stop: &StopFlag) -> Result<GlobResult, SearchError> {
        let root = PathBuf::from(&request.root);
        let glob = FindGlob::new(&request.pattern, &root)?;
        if !self.target(&request.root)? {
            return Err(SearchError::Other(format!(
                "Not a directory: {}",
                request.root
            )));
        }
        let mut warnings = Vec::new();
        let outer = self.outer_rules(&root, &mut warnings);
        let max = request.max_results as usize;
        let mut paths: Vec<String> = Vec::new();
        let (mut limit_reached, mut bytes, mut overflowed) = (false, 0usize, false);
        let mut visit = |rel: &Path, _: &Path, is_dir: bool, _: &mut Vec<String>| {
            if glob.is_match(rel) {
                if paths.len() == max {
                    limit_reached = true;
                    return Flow::Stop;
                }
                if bytes > MAX_RESULT_BYTES {
                    overflowed = true;
                    return Flow::Stop;
                }
                let mut path = shown(rel);
                if is_dir {
                    path.push('/');
                }
                bytes += path.len();
                paths.push(path);
            }
            Flow::Continue
        };
        self.walk(
            &root,
            Path::new(""),
            0,
            &outer,
            None,
            stop,
            &mut warnings,
            &mut visit,
        );
        if stop.is_raised() {
            return Err(SearchError::Cancelled);
        }
        if overflowed {
            warnings.push(overflow_warning());
        }
        warnings.sort();
        warnings.dedup();
        Ok(GlobResult {
            paths,
            limit_reached,
            warnings,
        })
    }

    fn roots(&self) -> Vec<String> {
        self.fs.roots()
    }
}

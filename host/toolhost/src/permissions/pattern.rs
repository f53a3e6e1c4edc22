//! The pattern of a rule, read the way its subject needs: as text where `*`
//! is any text (commands, arguments), as a path glob (paths), or as a host.

use super::Anchors;
use crate::wildcard::Wildcard;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub(super) struct Pattern {
    /// `*` as any text, everything else literal.
    text: Wildcard,
    /// As a glob over absolute paths; `None` when it is not one.
    path: Option<globset::GlobMatcher>,
    /// As `host[:port]`, lowercased; `*.` in front for subdomains.
    host: (String, Option<u16>),
}

impl Pattern {
    pub(super) fn new(pattern: &str, anchors: &Anchors) -> Result<Pattern, String> {
        let text = Wildcard::new(pattern)?;
        let path = anchored(pattern, anchors).and_then(|absolute| {
            globset::GlobBuilder::new(&absolute.to_string_lossy())
                .literal_separator(true)
                .build()
                .ok()
                .map(|g| g.compile_matcher())
        });
        let host = match pattern.rsplit_once(':') {
            Some((host, port)) if port.parse::<u16>().is_ok() => {
                (host.to_ascii_lowercase(), port.parse().ok())
            }
            _ => (pattern.to_ascii_lowercase(), None),
        };
        Ok(Pattern { text, path, host })
    }

    /// Whether every path the pattern can match lies under `root` (its
    /// literal part before the first glob character is inside `root`).
    pub(super) fn starts_inside(&self, root: &Path) -> bool {
        let Some(glob) = &self.path else {
            return false;
        };
        let text = glob.glob().glob();
        // The directories before the first glob character (`/w*` can match
        // `/www`, so its literal part is `/`).
        let literal = match text.find(['*', '?', '[', '{']) {
            Some(at) => text[..at].rsplit_once('/').map_or("", |(dir, _)| dir),
            None => text,
        };
        Path::new(literal).starts_with(root)
    }

    pub(super) fn matches_text(&self, text: &str) -> bool {
        self.text.is_match(text)
    }

    pub(super) fn matches_path(&self, path: &Path) -> bool {
        self.path.as_ref().is_some_and(|g| g.is_match(path))
    }

    pub(super) fn matches_host(&self, host: &str, port: u16) -> bool {
        let (pattern, want_port) = &self.host;
        if want_port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => host == *pattern,
        }
    }
}

/// A path pattern made absolute: `~/…` under the home directory, a relative
/// one under the workspace. `None` for `~` without a home. Its directories
/// before the first glob character are taken as their real path where they
/// exist, as the paths it is matched against are real: `/data/**` with
/// `/data` a link to `/mnt/data` speaks of `/mnt/data/**`.
fn anchored(pattern: &str, anchors: &Anchors) -> Option<PathBuf> {
    let absolute = if pattern == "~" || pattern.starts_with("~/") {
        let home = anchors.home.as_ref()?;
        home.join(pattern.trim_start_matches('~').trim_start_matches('/'))
    } else if Path::new(pattern).is_absolute() {
        PathBuf::from(pattern)
    } else {
        anchors.workspace.join(pattern)
    };
    Some(real_prefix(&absolute))
}

/// `path` with the longest existing run of its literal directories (those
/// before any glob character) replaced by their real path.
fn real_prefix(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    let literal_end = text.find(['*', '?', '[', '{']).unwrap_or(text.len());
    // Whole components only: the literal part ends at the last separator.
    let literal = &text[..literal_end];
    let cut = if literal_end == text.len() {
        literal.len()
    } else {
        literal.rfind('/').unwrap_or(0)
    };
    let (head, tail) = text.split_at(cut);
    let mut real = crate::files::real_or_planned(Path::new(head))
        .to_string_lossy()
        .into_owned();
    real.push_str(tail);
    PathBuf::from(real)
}

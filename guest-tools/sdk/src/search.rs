//! Searching file contents and names through the host's `search` Operations
//! (needs the `search` grant), at native speed, in sorted path order.

pub use crate::bindings::toolhost::tool::search::{
    GlobRequest, GlobResult, GrepFile, GrepLine, GrepRequest, GrepResult, SearchError, glob, grep,
};

/// `pattern` without its leading `./` (repeated): a pattern relative to the
/// search directory as Pi 1.6's find and grep read one (fd and rg match no
/// path that starts with `./`).
pub fn without_dot_slash(mut pattern: &str) -> &str {
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    pattern
}

/// Warnings named in [`warning_notice`]; the rest are counted.
pub const MAX_WARNINGS_SHOWN: usize = 5;

/// The notice of a search that skipped paths it could not read (spec §7.19):
/// `Some paths could not be searched: {path} ({cause}); …`, naming at most
/// [`MAX_WARNINGS_SHOWN`] and counting the rest. `None` without warnings.
pub fn warning_notice(warnings: &[String]) -> Option<String> {
    if warnings.is_empty() {
        return None;
    }
    let mut named = warnings
        .iter()
        .take(MAX_WARNINGS_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if warnings.len() > MAX_WARNINGS_SHOWN {
        named.push_str(&format!(
            "; and {} more",
            warnings.len() - MAX_WARNINGS_SHOWN
        ));
    }
    Some(format!("Some paths could not be searched: {named}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_five_warnings_and_counts_the_rest() {
        assert_eq!(warning_notice(&[]), None);
        let one = vec!["locked (permission denied)".to_string()];
        assert_eq!(
            warning_notice(&one).unwrap(),
            "Some paths could not be searched: locked (permission denied)"
        );
        let many: Vec<String> = (0..7).map(|i| format!("d{i} (x)")).collect();
        assert_eq!(
            warning_notice(&many).unwrap(),
            "Some paths could not be searched: d0 (x); d1 (x); d2 (x); d3 (x); d4 (x); and 2 more"
        );
    }
}

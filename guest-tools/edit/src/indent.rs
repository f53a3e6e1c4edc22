//! The last matching fallback (spec §7.9, §5 bug 11): an oldText that
//! differs from the file only in indentation (tabs against spaces, another
//! width, a dropped outer level) still finds its lines, when that gives a
//! unique match, and the replacement is re-indented to the file's style.
//!
//! Works line by line on fuzzy-normalised text (so trailing whitespace is
//! already gone). Each line of the oldText must equal its file line once
//! leading spaces and tabs are set aside, except that the first line may
//! start inside its file line when the oldText starts without indentation,
//! and a last line without newline may stop inside its file line.

use std::ops::Range;

/// The outcome of the indentation-tolerant search.
#[derive(Debug, PartialEq, Eq)]
pub enum IndentMatch {
    None,
    /// The only match (a range of the searched text) and the replacement
    /// re-indented to the file's style.
    Unique(Range<usize>, String),
    /// This many candidate regions.
    Ambiguous(usize),
}

fn is_indent(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// The leading spaces and tabs of `line`.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches(is_indent).len()]
}

fn dedent(line: &str) -> &str {
    line.trim_start_matches(is_indent)
}

/// Search `needle` (fuzzy-normalised oldText) in `text` (fuzzy-normalised file).
pub fn find(text: &str, needle: &str, replacement: &str) -> IndentMatch {
    let ends_with_newline = needle.ends_with('\n');
    let body = needle.strip_suffix('\n').unwrap_or(needle);
    let old: Vec<&str> = body.split('\n').collect();
    if old.iter().all(|l| dedent(l).is_empty()) {
        return IndentMatch::None;
    }
    let first_indented = !indent(old[0]).is_empty();
    if old.len() == 1 && !ends_with_newline && !first_indented {
        // A plain substring: the fuzzy search has already answered.
        return IndentMatch::None;
    }

    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line = |j: usize| -> &str {
        let end = starts.get(j + 1).map_or(text.len(), |s| s - 1);
        &text[starts[j]..end]
    };
    // With a final newline the last old line must be followed by a break.
    let usable = if ends_with_newline {
        starts.len() - 1
    } else {
        starts.len()
    };

    let mut found: Option<(usize, Range<usize>)> = None;
    let mut count = 0;
    for j in 0..usable.saturating_sub(old.len() - 1) {
        if let Some(range) = match_at(&old, ends_with_newline, first_indented, j, &starts, &line) {
            count += 1;
            found.get_or_insert((j, range));
        }
    }
    match (count, found) {
        (1, Some((j, range))) => {
            let pairs: Vec<(&str, &str)> = old
                .iter()
                .enumerate()
                .filter(|(i, l)| (*i > 0 || first_indented) && !dedent(l).is_empty())
                .map(|(i, l)| (indent(l), indent(line(j + i))))
                .collect();
            IndentMatch::Unique(range, reindent(replacement, &pairs, first_indented))
        }
        (0, _) => IndentMatch::None,
        (n, _) => IndentMatch::Ambiguous(n),
    }
}

/// The range the old lines cover when they start at file line `j`.
fn match_at<'t>(
    old: &[&str],
    ends_with_newline: bool,
    first_indented: bool,
    j: usize,
    starts: &[usize],
    line: &impl Fn(usize) -> &'t str,
) -> Option<Range<usize>> {
    let last = old.len() - 1;
    for (i, o) in old.iter().enumerate() {
        let f = line(j + i);
        let ok = if i == 0 && !first_indented {
            f.ends_with(o)
        } else if i == last && !ends_with_newline {
            dedent(f).starts_with(dedent(o))
        } else {
            dedent(f) == dedent(o)
        };
        if !ok {
            return None;
        }
    }
    let first = line(j);
    let start = if first_indented {
        starts[j]
    } else {
        starts[j] + first.len() - old[0].len()
    };
    let last_line = line(j + last);
    let end = if ends_with_newline {
        starts[j + last] + last_line.len() + 1
    } else {
        starts[j + last] + indent(last_line).len() + dedent(old[last]).len()
    };
    Some(start..end)
}

/// How indentation written for the oldText translates to the file's.
#[derive(Debug, PartialEq, Eq)]
enum IndentMap {
    /// Same characters, another depth: `from` becomes `to` at the start.
    Prefix { from: String, to: String },
    /// Another character (tabs against spaces): `n` of `from` become
    /// `n * num / den` of `to`.
    Scale {
        from: char,
        to: char,
        num: usize,
        den: usize,
    },
}

impl IndentMap {
    /// Infer the translation from (oldText indent, file indent) pairs.
    fn infer(pairs: &[(&str, &str)]) -> Option<IndentMap> {
        let model = style(pairs.iter().map(|p| p.0));
        let file = style(pairs.iter().map(|p| p.1));
        if let (Some(Some(from)), Some(Some(to))) = (model, file)
            && from != to
            && let Some(map) = Self::scale(pairs, from, to)
        {
            return Some(map);
        }
        Self::prefix(pairs)
    }

    fn scale(pairs: &[(&str, &str)], from: char, to: char) -> Option<IndentMap> {
        let (den, num) = pairs
            .iter()
            .map(|(m, f)| (m.len(), f.len()))
            .find(|&(m, _)| m > 0)?;
        if num == 0 {
            return None;
        }
        pairs
            .iter()
            .all(|(m, f)| m.len() * num == f.len() * den)
            .then_some(IndentMap::Scale { from, to, num, den })
    }

    fn prefix(pairs: &[(&str, &str)]) -> Option<IndentMap> {
        let mut map: Option<(&str, &str)> = None;
        for (m, f) in pairs {
            let common = m
                .bytes()
                .rev()
                .zip(f.bytes().rev())
                .take_while(|(a, b)| a == b)
                .count();
            let this = (&m[..m.len() - common], &f[..f.len() - common]);
            if map.is_some_and(|known| known != this) {
                return None;
            }
            map = Some(this);
        }
        let (from, to) = map?;
        Some(IndentMap::Prefix {
            from: from.to_string(),
            to: to.to_string(),
        })
    }

    fn convert(&self, indent: &str) -> Option<String> {
        match self {
            IndentMap::Prefix { from, to } => indent
                .strip_prefix(from.as_str())
                .map(|rest| format!("{to}{rest}")),
            IndentMap::Scale { from, to, num, den } => {
                let n = indent.len();
                (indent.chars().all(|c| c == *from) && (n * num).is_multiple_of(*den))
                    .then(|| to.to_string().repeat(n * num / den))
            }
        }
    }
}

/// The one character all `indents` are made of: `Some(None)` when they are
/// all empty, `None` when they mix characters.
fn style<'a>(indents: impl Iterator<Item = &'a str>) -> Option<Option<char>> {
    let mut found: Option<char> = None;
    for c in indents.flat_map(str::chars) {
        match found {
            Some(f) if f != c => return None,
            _ => found = Some(c),
        }
    }
    Some(found)
}

/// Re-indent the replacement's lines with the translation the pairs show.
/// Its first line is left alone when the match starts inside a line; blank
/// lines and lines the translation does not cover keep their text.
fn reindent(replacement: &str, pairs: &[(&str, &str)], first_at_line_start: bool) -> String {
    if pairs.iter().all(|(m, f)| m == f) {
        return replacement.to_string();
    }
    let Some(map) = IndentMap::infer(pairs) else {
        return replacement.to_string();
    };
    replacement
        .split('\n')
        .enumerate()
        .map(|(i, line)| {
            if (i == 0 && !first_at_line_start) || dedent(line).is_empty() {
                return line.to_string();
            }
            match map.convert(indent(line)) {
                Some(new) => format!("{new}{}", dedent(line)),
                None => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(text: &str, needle: &str, replacement: &str) -> (String, String) {
        match find(text, needle, replacement) {
            IndentMatch::Unique(r, new) => (text[r].to_string(), new),
            other => panic!("expected a unique match, got {other:?}"),
        }
    }

    /// A file, the model's old and new text, and what the unique match
    /// found in the file and the replacement became.
    struct Case {
        name: &'static str,
        file: &'static str,
        old: &'static str,
        new: &'static str,
        matched: &'static str,
        replaced: &'static str,
    }

    const UNIQUE_CASES: &[Case] = &[
        Case {
            name: "spaces for tabs find the lines and the replacement uses tabs",
            file: "fn main() {\n\tif x {\n\t\ty();\n\t}\n}\n",
            old: "    if x {\n        y();\n    }\n",
            new: "    if x {\n        y();\n        z();\n    }\n",
            matched: "\tif x {\n\t\ty();\n\t}\n",
            replaced: "\tif x {\n\t\ty();\n\t\tz();\n\t}\n",
        },
        Case {
            name: "tabs for spaces and another width",
            file: "a:\n  b:\n    c: 1\n",
            old: "\tb:\n\t\tc: 1",
            new: "\tb:\n\t\tc: 2\n\t\td: 3",
            matched: "  b:\n    c: 1",
            replaced: "  b:\n    c: 2\n    d: 3",
        },
        // The model copied from `run` on, without the class's indentation.
        Case {
            name: "a dropped outer level is restored",
            file: "class A {\n    run() {\n        go();\n    }\n}\n",
            old: "run() {\n    go();\n}",
            new: "run() {\n    go(1);\n}",
            matched: "run() {\n        go();\n    }",
            replaced: "run() {\n        go(1);\n    }",
        },
        Case {
            name: "the first line may start inside its line",
            file: "x = call(a,\n\tb)\n",
            old: "call(a,\n    b)",
            new: "call(a,\n    c)",
            matched: "call(a,\n\tb)",
            replaced: "call(a,\n\tc)",
        },
        // The whole file matches; its mixed indentation gives no translation.
        Case {
            name: "inconsistent indentation keeps the replacement",
            file: "\tone\n    two\n",
            old: "  one\n  two\n",
            new: "  uno\n  dos\n",
            matched: "\tone\n    two\n",
            replaced: "  uno\n  dos\n",
        },
    ];

    #[test]
    fn a_unique_match_finds_the_lines_and_reindents_the_replacement() {
        for case in UNIQUE_CASES {
            let (matched, new) = unique(case.file, case.old, case.new);
            assert_eq!(matched, case.matched, "matched text: {}", case.name);
            assert_eq!(new, case.replaced, "replacement: {}", case.name);
        }
    }

    #[test]
    fn blank_lines_and_uncovered_indentation_are_kept() {
        let file = "\tone\n\n\ttwo\n";
        let (_, new) = unique(file, "    one\n\n    two\n", "    one\n\n  odd\n    two\n");
        assert_eq!(new, "\tone\n\n  odd\n\ttwo\n");
    }

    #[test]
    fn several_candidates_are_ambiguous_and_none_is_none() {
        let file = "\tx\n\ty\n\tx\n\ty\n";
        assert_eq!(find(file, "  x\n  y\n", ""), IndentMatch::Ambiguous(2));
        assert_eq!(find(file, "  x\n  z\n", ""), IndentMatch::None);
        // A final newline needs a line break after the last line.
        assert_eq!(find("\tx", "  x\n", ""), IndentMatch::None);
        // Only blank lines, or a plain substring: nothing to add here.
        assert_eq!(find(file, "\n\n", ""), IndentMatch::None);
        assert_eq!(find(file, "q", ""), IndentMatch::None);
    }
}

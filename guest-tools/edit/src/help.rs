//! Help after Pi's "Could not find" sentence (spec §7.10, §5 bug 13): say
//! that fuzzy matching was tried, and show the region of the file that looks
//! most like the oldText, as numbered lines, so the model can copy the real
//! text on its next try.

use crate::fuzzy;
use std::collections::HashMap;
use toolhost_sdk::truncate::{GREP_MAX_LINE_LENGTH, truncate_line};

/// Lines of context shown around the region.
const CONTEXT: usize = 2;
/// At most this many lines are shown.
const MAX_SHOWN: usize = 16;

/// The lines after Pi's sentence, each starting with `\n`.
pub fn not_found(path: &str, lf: &str, old: &str) -> String {
    let mut help = String::from(
        "\nFuzzy matching was tried too (ignoring trailing whitespace, indentation and Unicode quote, dash and space variants) and found nothing.",
    );
    // A final newline ends the last line; it does not start another.
    let lines: Vec<&str> = lf.strip_suffix('\n').unwrap_or(lf).split('\n').collect();
    if lf.is_empty() {
        help.push_str(&format!("\n{path} is empty."));
        return help;
    }
    let Some((first, count)) = closest(&lines, old) else {
        help.push_str(&format!("\nNo line of {path} resembles the old text."));
        return help;
    };
    let start = first.saturating_sub(CONTEXT);
    let end = (first + count + CONTEXT)
        .min(lines.len())
        .min(start + MAX_SHOWN);
    help.push_str(&format!(
        "\nThe closest region of {path} (lines {}-{end}):",
        start + 1
    ));
    let width = end.to_string().len();
    for (i, line) in lines[start..end].iter().enumerate() {
        let (line, _) = truncate_line(line, GREP_MAX_LINE_LENGTH);
        help.push_str(&format!("\n{:>width$}: {line}", start + i + 1));
    }
    help
}

/// A line as compared here: fuzzy-normalised, indentation set aside.
fn key(line: &str) -> String {
    fuzzy::normalize(line).trim_start().to_string()
}

/// The first line (0-based) and line count of the region most like `old`.
///
/// Every file line equal (as a [`key`]) to an oldText line votes for the
/// region that would put them side by side, weighted by its length so that
/// braces and blank lines count little. Without any such line, the file line
/// most similar to the oldText's first non-blank line anchors the region.
fn closest(lines: &[&str], old: &str) -> Option<(usize, usize)> {
    let old = old.strip_suffix('\n').unwrap_or(old);
    let old_lines: Vec<String> = old.split('\n').map(key).collect();
    let count = old_lines.len();
    let mut wanted: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, k) in old_lines.iter().enumerate() {
        if !k.is_empty() {
            wanted.entry(k.as_str()).or_default().push(i);
        }
    }
    let mut votes: HashMap<isize, usize> = HashMap::new();
    let keys: Vec<String> = lines.iter().map(|l| key(l)).collect();
    for (j, k) in keys.iter().enumerate() {
        if let Some(at) = wanted.get(k.as_str()) {
            for &i in at {
                *votes.entry(j as isize - i as isize).or_default() += k.chars().count();
            }
        }
    }
    let best = votes
        .into_iter()
        .max_by(|(sa, va), (sb, vb)| va.cmp(vb).then(sb.cmp(sa)));
    if let Some((start, _)) = best {
        return Some((start.max(0) as usize, count));
    }

    let (i, probe) = old_lines.iter().enumerate().find(|(_, k)| !k.is_empty())?;
    let (j, score) = keys
        .iter()
        .enumerate()
        .map(|(j, k)| (j, similarity(probe, k)))
        .fold(None, |best: Option<(usize, f64)>, (j, s)| match best {
            Some((_, b)) if b >= s => best,
            _ => Some((j, s)),
        })?;
    (score > 0.0).then(|| (j.saturating_sub(i), count))
}

/// Dice's coefficient on character bigrams (0 = nothing shared, 1 = same).
fn similarity(a: &str, b: &str) -> f64 {
    let bigrams = |s: &str| -> HashMap<(char, char), usize> {
        let chars: Vec<char> = s.chars().collect();
        let mut m = HashMap::new();
        for w in chars.windows(2) {
            *m.entry((w[0], w[1])).or_default() += 1;
        }
        m
    };
    let (x, y) = (bigrams(a), bigrams(b));
    let total: usize = x.values().sum::<usize>() + y.values().sum::<usize>();
    if total == 0 {
        return if a == b { 1.0 } else { 0.0 };
    }
    let shared: usize = x
        .iter()
        .map(|(g, n)| (*n).min(y.get(g).copied().unwrap_or(0)))
        .sum();
    2.0 * shared as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_region_the_matching_lines_point_at() {
        let file = (1..=30)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        // Lines 11 and 13 match; line 12 was mistyped.
        let help = not_found("f.txt", &file, "line 11\nline twelve\nline 13");
        assert_eq!(
            help,
            "\nFuzzy matching was tried too (ignoring trailing whitespace, indentation and Unicode quote, dash and space variants) and found nothing.\
             \nThe closest region of f.txt (lines 9-15):\
             \n 9: line 9\n10: line 10\n11: line 11\n12: line 12\n13: line 13\n14: line 14\n15: line 15"
        );
    }

    #[test]
    fn without_equal_lines_the_most_similar_line_anchors_the_region() {
        let file = "alpha()\nfn compute_total(items) {\n  sum\n}\nomega()";
        let help = not_found("a.rs", file, "fn compute_totals(items) {\n  sum(items)\n};");
        assert!(
            help.ends_with(
                "(lines 1-5):\n1: alpha()\n2: fn compute_total(items) {\n3:   sum\n4: }\n5: omega()"
            ),
            "{help}"
        );
    }

    #[test]
    fn the_region_is_capped_and_long_lines_are_cut() {
        let long = "x".repeat(600);
        let file = format!("{long}\n{}", "y\n".repeat(40));
        let old = format!("{long}\n{}", "y\n".repeat(40));
        let help = not_found("f", &file, &old);
        // The leading empty line, the two sentences, then the region.
        assert_eq!(help.lines().count(), 3 + MAX_SHOWN);
        assert!(help.contains(&format!("1: {}... [truncated]", "x".repeat(500))));
    }

    #[test]
    fn empty_and_unrelated_files_say_so() {
        assert!(not_found("e.txt", "", "a").ends_with("\ne.txt is empty."));
        assert!(
            not_found("u.txt", "zz", "a").ends_with("\nNo line of u.txt resembles the old text.")
        );
    }
}

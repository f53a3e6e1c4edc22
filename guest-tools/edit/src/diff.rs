//! The two diffs in `edit`'s details, byte for byte as Pi makes them.
//!
//! * [`patch_of`]: jsdiff 8's `createTwoFilesPatch(path, path, old, new)`
//!   with 4 lines of context and file headers only.
//! * [`display_of`]: Pi's own numbered display diff and the first changed line.
//!
//! Both take the same [`diff_lines`] result, so one diff serves both.
//!
//! Both rest on jsdiff's `diffLines`, ported here rather than replaced by
//! another diff crate: a line diff has many minimal answers, and which one
//! jsdiff picks follows from its variant of Myers' algorithm (which diagonal
//! it extends first, where it stops considering diagonals, how it merges
//! runs). Any other implementation would produce different hunks for the same
//! edit, and the patch is part of what agents and tests compare.

use std::rc::Rc;

/// What a run of lines is in the diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Common,
    Added,
    Removed,
}

/// A run of consecutive lines with one [`Kind`]; each line keeps its
/// terminator (`\n` or `\r\n`) except a last line without one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub kind: Kind,
    pub lines: Vec<&'a str>,
}

/// jsdiff's line tokenizer: split after each `\n` or `\r\n`; a final empty
/// piece (text ending with a newline, or empty text) is not a line.
pub fn tokenize(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            lines.push(&text[start..=i]);
            start = i + 1;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// One component of a path through the edit graph: a run of `count` tokens,
/// linked to the run before it. Paths share their history, as jsdiff's
/// objects do; dropping is iterative so a long history cannot overflow the
/// (small) wasm stack.
struct Component {
    count: usize,
    kind: Kind,
    previous: Option<Rc<Component>>,
}

impl Drop for Component {
    fn drop(&mut self) {
        let mut next = self.previous.take();
        while let Some(rc) = next {
            match Rc::try_unwrap(rc) {
                Ok(mut c) => next = c.previous.take(),
                Err(_) => break,
            }
        }
    }
}

#[derive(Clone)]
struct Path {
    old_pos: isize,
    last: Option<Rc<Component>>,
}

/// `Diff.prototype.addToPath`: one more added or removed token.
fn add_to_path(path: &Path, kind: Kind, old_pos_inc: isize) -> Path {
    let component = match &path.last {
        Some(last) if last.kind == kind => Component {
            count: last.count + 1,
            kind,
            previous: last.previous.clone(),
        },
        last => Component {
            count: 1,
            kind,
            previous: last.clone(),
        },
    };
    Path {
        old_pos: path.old_pos + old_pos_inc,
        last: Some(Rc::new(component)),
    }
}

/// `Diff.prototype.extractCommon`: follow the diagonal while tokens are equal;
/// returns the new position.
fn extract_common(path: &mut Path, old: &[&str], new: &[&str], diagonal: isize) -> isize {
    let (old_len, new_len) = (old.len() as isize, new.len() as isize);
    let mut old_pos = path.old_pos;
    let mut new_pos = old_pos - diagonal;
    let mut common = 0;
    while new_pos + 1 < new_len
        && old_pos + 1 < old_len
        && old[(old_pos + 1) as usize] == new[(new_pos + 1) as usize]
    {
        new_pos += 1;
        old_pos += 1;
        common += 1;
    }
    if common > 0 {
        path.last = Some(Rc::new(Component {
            count: common,
            kind: Kind::Common,
            previous: path.last.take(),
        }));
    }
    path.old_pos = old_pos;
    new_pos
}

/// `diffLines(old, new)` with jsdiff 8's default options.
pub fn diff_lines<'a>(old_text: &'a str, new_text: &'a str) -> Vec<Part<'a>> {
    let old = tokenize(old_text);
    let new = tokenize(new_text);
    let (old_len, new_len) = (old.len() as isize, new.len() as isize);
    let max_edit_length = old_len + new_len;

    // `bestPath` is indexed by diagonal, -max-1 ..= max+1.
    let offset = max_edit_length + 1;
    let mut best: Vec<Option<Path>> = vec![None; (2 * offset + 1) as usize];
    let slot = |d: isize| (d + offset) as usize;

    let mut seed = Path {
        old_pos: -1,
        last: None,
    };
    let new_pos = extract_common(&mut seed, &old, &new, 0);
    if seed.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return build_values(seed.last, &old, &new);
    }
    best[slot(0)] = Some(seed);

    // Once a path reaches the right (bottom) edge of the edit graph, diagonals
    // beyond it (below it) cannot lead to a shorter script (jsdiff's pruning).
    let mut min_diagonal = isize::MIN;
    let mut max_diagonal = isize::MAX;
    let mut edit_length: isize = 1;
    while edit_length <= max_edit_length {
        let mut diagonal = min_diagonal.max(-edit_length);
        // The upper bound is re-read every iteration, as jsdiff's loop
        // condition is: a path reaching the end shrinks it mid-sweep.
        while diagonal <= max_diagonal.min(edit_length) {
            let remove_path = best[slot(diagonal - 1)].take();
            let add_path = best[slot(diagonal + 1)].clone();
            let can_add = add_path.as_ref().is_some_and(|p| {
                let new_pos = p.old_pos - diagonal;
                0 <= new_pos && new_pos < new_len
            });
            let can_remove = remove_path
                .as_ref()
                .is_some_and(|p| p.old_pos + 1 < old_len);
            if !can_add && !can_remove {
                best[slot(diagonal)] = None;
                diagonal += 2;
                continue;
            }
            // Branch from the path that got furthest in the old text, as
            // jsdiff does (a removal wins ties).
            let take_add = match (&remove_path, &add_path) {
                _ if !can_remove => true,
                (Some(r), Some(a)) => can_add && r.old_pos < a.old_pos,
                _ => false,
            };
            let mut base = match (take_add, &add_path, &remove_path) {
                (true, Some(a), _) => add_to_path(a, Kind::Added, 0),
                (false, _, Some(r)) => add_to_path(r, Kind::Removed, 1),
                _ => unreachable!("the chosen path exists"),
            };
            let new_pos = extract_common(&mut base, &old, &new, diagonal);
            if base.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return build_values(base.last, &old, &new);
            }
            if base.old_pos + 1 >= old_len {
                max_diagonal = max_diagonal.min(diagonal - 1);
            }
            if new_pos + 1 >= new_len {
                min_diagonal = min_diagonal.max(diagonal + 1);
            }
            best[slot(diagonal)] = Some(base);
            diagonal += 2;
        }
        edit_length += 1;
    }
    // Without `maxEditLength` or a timeout, jsdiff always finds a path within
    // old + new edits.
    unreachable!("diffLines found no path")
}

/// `Diff.prototype.buildValues`: the components in order, as token runs.
fn build_values<'a>(
    last: Option<Rc<Component>>,
    old: &[&'a str],
    new: &[&'a str],
) -> Vec<Part<'a>> {
    let mut runs = Vec::new();
    let mut next = last;
    while let Some(c) = next {
        runs.push((c.kind, c.count));
        next = c.previous.clone();
    }
    runs.reverse();
    let (mut old_pos, mut new_pos) = (0, 0);
    runs.into_iter()
        .map(|(kind, count)| {
            let lines = if kind == Kind::Removed {
                let lines = old[old_pos..old_pos + count].to_vec();
                old_pos += count;
                lines
            } else {
                let lines = new[new_pos..new_pos + count].to_vec();
                new_pos += count;
                if kind == Kind::Common {
                    old_pos += count;
                }
                lines
            };
            Part { kind, lines }
        })
        .collect()
}

/// [`patch_of`] of `old` and `new` (tests).
#[cfg(test)]
pub fn patch(path: &str, old: &str, new: &str, context: usize) -> String {
    patch_of(path, &diff_lines(old, new), context)
}

/// jsdiff's `createTwoFilesPatch(path, path, old, new, undefined, undefined,
/// {context, headerOptions: FILE_HEADERS_ONLY})`, from the line diff `parts`
/// of `old` and `new`.
pub fn patch_of(path: &str, parts: &[Part<'_>], context: usize) -> String {
    let hunks = hunks(parts, context);
    let mut out = format!("--- {path}\n+++ {path}");
    for hunk in hunks {
        // Unified diff quirk: an empty range names the line before it.
        let old_start = if hunk.old_lines == 0 {
            hunk.old_start - 1
        } else {
            hunk.old_start
        };
        let new_start = if hunk.new_lines == 0 {
            hunk.new_start - 1
        } else {
            hunk.new_start
        };
        out.push_str(&format!(
            "\n@@ -{old_start},{} +{new_start},{} @@",
            hunk.old_lines, hunk.new_lines
        ));
        for line in hunk.lines {
            out.push('\n');
            match line.strip_suffix('\n') {
                Some(body) => out.push_str(body),
                None => {
                    out.push_str(&line);
                    out.push_str("\n\\ No newline at end of file");
                }
            }
        }
    }
    out.push('\n');
    out
}

struct Hunk {
    old_start: usize,
    old_lines: usize,
    new_start: usize,
    new_lines: usize,
    /// Prefixed lines (` `, `-`, `+`), terminators still attached.
    lines: Vec<String>,
}

/// `structuredPatch`'s hunk builder: changes with `context` lines around
/// them; changes separated by at most `2 * context` common lines share a hunk.
fn hunks(parts: &[Part<'_>], context: usize) -> Vec<Hunk> {
    let prefixed = |prefix: char, lines: &[&str]| -> Vec<String> {
        lines.iter().map(|l| format!("{prefix}{l}")).collect()
    };
    // jsdiff appends an empty common part so the last hunk is closed.
    let sentinel = Part {
        kind: Kind::Common,
        lines: Vec::new(),
    };
    let all: Vec<&Part<'_>> = parts.iter().chain(std::iter::once(&sentinel)).collect();

    let mut hunks = Vec::new();
    // 0 means "no hunk open", as in jsdiff (line numbers start at 1).
    let (mut old_range_start, mut new_range_start) = (0usize, 0usize);
    let mut current: Vec<String> = Vec::new();
    let (mut old_line, mut new_line) = (1usize, 1usize);
    for (i, part) in all.iter().enumerate() {
        let lines = &part.lines;
        if part.kind != Kind::Common {
            if old_range_start == 0 {
                old_range_start = old_line;
                new_range_start = new_line;
                if i > 0 {
                    let prev = &all[i - 1].lines;
                    let take = prev.len().min(context);
                    current = prefixed(' ', &prev[prev.len() - take..]);
                    old_range_start -= current.len();
                    new_range_start -= current.len();
                }
            }
            let sign = if part.kind == Kind::Added { '+' } else { '-' };
            current.extend(prefixed(sign, lines));
            if part.kind == Kind::Added {
                new_line += lines.len();
            } else {
                old_line += lines.len();
            }
        } else {
            if old_range_start != 0 {
                if lines.len() <= context * 2 && i + 2 < all.len() {
                    // Close enough to the next change: keep the hunk open.
                    current.extend(prefixed(' ', lines));
                } else {
                    let context_size = lines.len().min(context);
                    current.extend(prefixed(' ', &lines[..context_size]));
                    hunks.push(Hunk {
                        old_start: old_range_start,
                        old_lines: old_line - old_range_start + context_size,
                        new_start: new_range_start,
                        new_lines: new_line - new_range_start + context_size,
                        lines: std::mem::take(&mut current),
                    });
                    old_range_start = 0;
                    new_range_start = 0;
                }
            }
            old_line += lines.len();
            new_line += lines.len();
        }
    }
    hunks
}

/// [`display_of`] of `old` and `new` (tests).
#[cfg(test)]
pub fn display(old: &str, new: &str, context: usize) -> (String, Option<usize>) {
    display_of(old, new, &diff_lines(old, new), context)
}

/// Pi's display diff (`generateDiffString`) and the first changed line of
/// the new text (1-based), `None` when nothing changed.
///
/// Changed lines are `-{n} text` / `+{n} text`, context lines ` {n} text`
/// with old-file numbers, right-aligned to the digits of the longer text's
/// line count (`split("\n")`). At most `context` lines are shown before and
/// after each change; a longer unchanged run collapses to ` {pad} ...`.
/// `parts` is the line diff of `old` and `new`.
pub fn display_of(
    old: &str,
    new: &str,
    parts: &[Part<'_>],
    context: usize,
) -> (String, Option<usize>) {
    let width = old
        .split('\n')
        .count()
        .max(new.split('\n').count())
        .to_string()
        .len();
    let mut out = Display {
        width,
        lines: Vec::new(),
        old_n: 1,
        new_n: 1,
    };
    let mut last_was_change = false;
    let mut first_changed = None;
    for (i, part) in parts.iter().enumerate() {
        // The part's text split on `\n`, without a final empty piece.
        let raw: Vec<&str> = part
            .lines
            .iter()
            .map(|l| l.strip_suffix('\n').unwrap_or(l))
            .collect();
        if part.kind != Kind::Common {
            first_changed.get_or_insert(out.new_n);
            for line in raw {
                out.changed(part.kind, line);
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(|p| p.kind != Kind::Common);
        match (last_was_change, next_is_change) {
            (true, true) if raw.len() <= context * 2 => out.context(&raw),
            (true, true) => {
                out.context(&raw[..context]);
                out.skip(raw.len() - 2 * context);
                out.context(&raw[raw.len() - context..]);
            }
            (true, false) => {
                let shown = raw.len().min(context);
                out.context(&raw[..shown]);
                out.skip(raw.len() - shown);
            }
            (false, true) => {
                let skipped = raw.len().saturating_sub(context);
                out.skip(skipped);
                out.context(&raw[skipped..]);
            }
            (false, false) => out.pass(raw.len()),
        }
        last_was_change = false;
    }
    (out.lines.join("\n"), first_changed)
}

/// The display diff being written, with the current line numbers.
struct Display {
    width: usize,
    lines: Vec<String>,
    old_n: usize,
    new_n: usize,
}

impl Display {
    fn changed(&mut self, kind: Kind, line: &str) {
        let width = self.width;
        if kind == Kind::Added {
            self.lines.push(format!("+{:>width$} {line}", self.new_n));
            self.new_n += 1;
        } else {
            self.lines.push(format!("-{:>width$} {line}", self.old_n));
            self.old_n += 1;
        }
    }

    fn context(&mut self, lines: &[&str]) {
        let width = self.width;
        for line in lines {
            self.lines.push(format!(" {:>width$} {line}", self.old_n));
            self.old_n += 1;
            self.new_n += 1;
        }
    }

    /// Unchanged lines collapsed to ` {pad} ...` (nothing when there are none).
    fn skip(&mut self, count: usize) {
        if count > 0 {
            self.lines
                .push(format!(" {:width$} ...", "", width = self.width));
            self.pass(count);
        }
    }

    /// Unchanged lines not shown at all.
    fn pass(&mut self, count: usize) {
        self.old_n += count;
        self.new_n += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_like_jsdiff() {
        assert_eq!(tokenize("a\nb\r\n\nc"), ["a\n", "b\r\n", "\n", "c"]);
        assert_eq!(tokenize("a\n"), ["a\n"]);
        assert!(tokenize("").is_empty());
        // A lone CR does not end a line.
        assert_eq!(tokenize("a\rb\n"), ["a\rb\n"]);
    }

    #[test]
    fn pis_recorded_details() {
        // C043: a change in a file without a final newline.
        assert_eq!(
            patch("f.txt", "Hello, world!", "Hello, testing!", 4),
            "--- f.txt\n+++ f.txt\n@@ -1,1 +1,1 @@\n-Hello, world!\n\\ No newline at end of file\n+Hello, testing!\n\\ No newline at end of file\n"
        );
        assert_eq!(
            display("Hello, world!", "Hello, testing!", 4),
            ("-1 Hello, world!\n+1 Hello, testing!".to_string(), Some(1))
        );
        // C067: context collapses on both sides.
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 10\n", "LINE TEN\nextra\n");
        assert_eq!(
            display(&old, &new, 4),
            (
                "    ...\n  6 line 6\n  7 line 7\n  8 line 8\n  9 line 9\n-10 line 10\n+10 LINE TEN\n+11 extra\n 11 line 11\n 12 line 12\n 13 line 13\n 14 line 14\n    ..."
                    .to_string(),
                Some(10)
            )
        );
        assert_eq!(
            patch("f.txt", &old, &new, 4),
            "--- f.txt\n+++ f.txt\n@@ -6,9 +6,10 @@\n line 6\n line 7\n line 8\n line 9\n-line 10\n+LINE TEN\n+extra\n line 11\n line 12\n line 13\n line 14\n"
        );
        // C058: removals come before additions.
        assert_eq!(
            display("a\nb\nc\n", "X\nY\nc\n", 4).0,
            "-1 a\n-2 b\n+1 X\n+2 Y\n 3 c"
        );
    }

    #[test]
    fn changes_close_together_share_a_hunk_and_far_ones_do_not() {
        // Lines 1..=30, with the lines in `changed` rewritten.
        let file = |changed: &[usize]| -> String {
            (1..=30)
                .map(|i| {
                    if changed.contains(&i) {
                        format!("x{i}\n")
                    } else {
                        format!("{i}\n")
                    }
                })
                .collect()
        };
        let old = file(&[]);
        // 7 common lines between the changes (≤ 2 × 4): one hunk.
        assert_eq!(
            patch("p", &old, &file(&[5, 13]), 4).matches("@@ -").count(),
            1
        );
        // 8 common lines between them: still one (jsdiff's `<=`).
        assert_eq!(
            patch("p", &old, &file(&[5, 14]), 4).matches("@@ -").count(),
            1
        );
        // 9: two hunks.
        let p = patch("p", &old, &file(&[5, 15]), 4);
        assert!(p.contains("@@ -1,9 +1,9 @@\n"), "{p}");
        assert!(p.contains("@@ -11,9 +11,9 @@\n"), "{p}");
        // The display collapses a run longer than 2 × 4 between changes.
        let (d, first) = display(&old, &file(&[5, 15]), 4);
        assert!(d.contains(" 9 9\n    ...\n 11 11"), "{d}");
        assert_eq!(first, Some(5));
    }

    #[test]
    fn empty_ranges_name_the_line_before() {
        assert_eq!(
            patch("e", "", "new\n", 4),
            "--- e\n+++ e\n@@ -0,0 +1,1 @@\n+new\n"
        );
        assert_eq!(
            patch("e", "a\nb\n", "a\n", 4),
            "--- e\n+++ e\n@@ -1,2 +1,1 @@\n a\n-b\n"
        );
        // Adding a final newline.
        assert_eq!(
            patch("n", "a", "a\n", 4),
            "--- n\n+++ n\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n"
        );
    }

    /// Inputs and outputs recorded from jsdiff 8.0.4 itself (see
    /// `tests/gen-jsdiff-vectors.js`): many short answers tie on these texts,
    /// so only the same algorithm with the same tie-breaking agrees.
    #[test]
    fn agrees_with_jsdiff_on_recorded_vectors() {
        let cases: serde_json::Value =
            serde_json::from_str(include_str!("../tests/jsdiff-vectors.json")).unwrap();
        let cases = cases.as_array().unwrap();
        assert!(cases.len() > 350);
        for (i, case) in cases.iter().enumerate() {
            let old = case["old"].as_str().unwrap();
            let new = case["new"].as_str().unwrap();
            let parts: Vec<(String, usize)> = diff_lines(old, new)
                .iter()
                .map(|p| {
                    let sign = match p.kind {
                        Kind::Common => " ",
                        Kind::Added => "+",
                        Kind::Removed => "-",
                    };
                    (sign.to_string(), p.lines.len())
                })
                .collect();
            let want: Vec<(String, usize)> = case["parts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p[0].as_str().unwrap().to_string(),
                        p[1].as_u64().unwrap() as usize,
                    )
                })
                .collect();
            assert_eq!(parts, want, "case {i}: parts of {old:?} -> {new:?}");
            assert_eq!(
                patch("f.txt", old, new, 4),
                case["patch"].as_str().unwrap(),
                "case {i}: patch of {old:?} -> {new:?}"
            );
        }
    }
}

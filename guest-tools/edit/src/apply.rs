//! Matching every edit against the original text and applying them all
//! (spec §1.8 step 6 with §7.8 and §7.9).
//!
//! Each oldText is looked for in three steps, the first that finds it wins:
//!
//! 1. exactly, and its uniqueness is judged on the exact text (§7.9; Pi
//!    counts even exact matches in fuzzy-normalised text, §5 bug 12);
//! 2. in Pi's fuzzy-normalised text ([`crate::fuzzy`]);
//! 3. in that text again with indentation set aside ([`crate::indent`]).
//!
//! Every step that finds more than one region fails the call with Pi's
//! "Found {n} occurrences" error. All edits are matched against the same
//! original, checked for overlaps, then applied at once.
//!
//! As in Pi, the lines a fuzzy match touches are rewritten from the
//! normalised text (their trailing whitespace goes, curly quotes straighten)
//! and every other line keeps its bytes. An exact match replaces exactly its
//! text, even when other edits of the call needed fuzzy matching.

use crate::fuzzy::{self, Folded};
use crate::indent::{self, IndentMatch};
use crate::text::{Chunk, Source};
use std::ops::Range;

/// One replacement, with oldText and newText read as LF text.
#[derive(Clone, Debug)]
pub struct Edit {
    pub old: String,
    pub new: String,
}

/// Why the edits cannot be applied (the texts are in `lib.rs`).
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    EmptyOldText { index: usize },
    NotFound { index: usize },
    Duplicate { index: usize, count: usize },
    Overlap { first: usize, second: usize },
    NoChange,
}

/// Where an edit matched.
#[derive(Clone, Debug)]
enum Span {
    /// In the LF text.
    Exact(Range<usize>),
    /// In the fuzzy-normalised text.
    Fuzzy(Range<usize>),
}

#[derive(Clone, Debug)]
struct Matched {
    index: usize,
    span: Span,
    new: String,
}

/// The edited file as chunks of original and new text.
pub fn apply(src: &Source, edits: &[Edit]) -> Result<Vec<Chunk>, Failure> {
    if let Some(index) = edits.iter().position(|e| e.old.is_empty()) {
        return Err(Failure::EmptyOldText { index });
    }
    let lf = src.lf.as_str();
    // Built only when some edit needs it: most edits match exactly.
    let mut folded: Option<Folded> = None;
    let mut matched = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let span = find(lf, &mut folded, index, edit)?;
        matched.push(span);
    }

    let chunks = match &folded {
        None => exact_only(src, matched)?,
        Some(view) => with_fuzzy(src, view, matched)?,
    };
    if src.lf_text(&chunks) == src.lf {
        return Err(Failure::NoChange);
    }
    Ok(chunks)
}

/// Find one edit: exactly, then fuzzily, then tolerating indentation.
fn find(
    lf: &str,
    folded: &mut Option<Folded>,
    index: usize,
    edit: &Edit,
) -> Result<Matched, Failure> {
    if let Some(start) = unique_match(lf, &edit.old, index)? {
        return Ok(Matched {
            index,
            span: Span::Exact(start..start + edit.old.len()),
            new: edit.new.clone(),
        });
    }

    let view = folded.get_or_insert_with(|| Folded::new(lf));
    let needle = fuzzy::normalize(&edit.old);
    // An oldText of nothing but whitespace normalises to nothing: it names
    // no region (Pi would report every position as an occurrence).
    if needle.is_empty() {
        return Err(Failure::NotFound { index });
    }
    if let Some(start) = unique_match(&view.text, &needle, index)? {
        return Ok(Matched {
            index,
            span: Span::Fuzzy(start..start + needle.len()),
            new: edit.new.clone(),
        });
    }

    match indent::find(&view.text, &needle, &edit.new) {
        IndentMatch::Unique(range, new) => Ok(Matched {
            index,
            span: Span::Fuzzy(range),
            new,
        }),
        IndentMatch::Ambiguous(count) => Err(Failure::Duplicate { index, count }),
        IndentMatch::None => Err(Failure::NotFound { index }),
    }
}

/// Where `needle` occurs in `text`: `None` nowhere, the offset where it
/// occurs once, and an error naming the count where it occurs more often.
fn unique_match(text: &str, needle: &str, index: usize) -> Result<Option<usize>, Failure> {
    let mut found = text.match_indices(needle);
    let Some((start, _)) = found.next() else {
        return Ok(None);
    };
    match found.count() {
        0 => Ok(Some(start)),
        more => Err(Failure::Duplicate {
            index,
            count: more + 1,
        }),
    }
}

/// Sort by position (ties keep call order, as JavaScript's stable sort) and
/// refuse overlaps, naming the earlier-in-file edit first.
fn sort_disjoint<T>(
    items: &mut [T],
    range: impl Fn(&T) -> Range<usize>,
    index: impl Fn(&T) -> usize,
) -> Result<(), Failure> {
    items.sort_by_key(|m| range(m).start);
    for pair in items.windows(2) {
        if range(&pair[0]).end > range(&pair[1]).start {
            return Err(Failure::Overlap {
                first: index(&pair[0]),
                second: index(&pair[1]),
            });
        }
    }
    Ok(())
}

/// Every edit matched exactly: splice the replacements in.
fn exact_only(src: &Source, mut matched: Vec<Matched>) -> Result<Vec<Chunk>, Failure> {
    let lf_range = |m: &Matched| match &m.span {
        Span::Exact(r) => r.clone(),
        Span::Fuzzy(_) => unreachable!("no fuzzy match without the fuzzy view"),
    };
    sort_disjoint(&mut matched, lf_range, |m| m.index)?;
    let mut chunks = Vec::new();
    let mut at = 0;
    for m in matched {
        let range = lf_range(&m);
        push_original(&mut chunks, at..range.start);
        chunks.push(Chunk::New {
            ending: src.ending_for(range.start),
            text: m.new,
        });
        at = range.end;
    }
    push_original(&mut chunks, at..src.lf.len());
    Ok(chunks)
}

fn push_original(chunks: &mut Vec<Chunk>, range: Range<usize>) {
    if !range.is_empty() {
        chunks.push(Chunk::Original(range));
    }
}

/// Line start offsets of `text` (lines split on `\n`; the piece after the
/// last `\n` is a line too, possibly empty).
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The line holding offset `at`.
fn line_of(starts: &[usize], at: usize) -> usize {
    starts.partition_point(|&s| s <= at) - 1
}

/// Where line `line` ends (after its `\n`).
fn line_end(starts: &[usize], line: usize, len: usize) -> usize {
    starts.get(line + 1).copied().unwrap_or(len)
}

/// A match with its range in the fuzzy-normalised text and the lines it touches.
struct Placed {
    m: Matched,
    folded: Range<usize>,
    lines: Range<usize>,
}

/// Some edit needed fuzzy matching: Pi's line-preserving overlay. Edits whose
/// touched lines overlap form a group; a group with a fuzzy match is written
/// from the normalised text of its lines, a group of exact matches is spliced
/// into the original; lines outside every group keep their bytes.
fn with_fuzzy(src: &Source, view: &Folded, matched: Vec<Matched>) -> Result<Vec<Chunk>, Failure> {
    let lf_starts = line_starts(&src.lf);
    let folded_starts = line_starts(&view.text);
    // Normalisation keeps every `\n`, so line numbers agree in both texts.
    debug_assert_eq!(lf_starts.len(), folded_starts.len());

    let mut placed: Vec<Placed> = matched
        .into_iter()
        .map(|m| {
            let folded = match &m.span {
                Span::Exact(r) => view.start_of(r.start)..view.end_of(r.end),
                Span::Fuzzy(r) => r.clone(),
            };
            let first = line_of(&folded_starts, folded.start);
            let last = if folded.end > folded.start {
                line_of(&folded_starts, folded.end - 1)
            } else {
                first
            };
            Placed {
                m,
                folded,
                lines: first..last + 1,
            }
        })
        .collect();
    sort_disjoint(&mut placed, |p| p.folded.clone(), |p| p.m.index)?;

    // Group edits whose line ranges overlap.
    let mut groups: Vec<(Range<usize>, Vec<Placed>)> = Vec::new();
    for p in placed {
        match groups.last_mut() {
            Some((lines, members)) if p.lines.start < lines.end => {
                lines.end = lines.end.max(p.lines.end);
                members.push(p);
            }
            _ => groups.push((p.lines.clone(), vec![p])),
        }
    }

    let mut chunks = Vec::new();
    let mut at = 0;
    for (lines, members) in groups {
        let lf_start = lf_starts[lines.start];
        let lf_end = line_end(&lf_starts, lines.end - 1, src.lf.len());
        push_original(&mut chunks, at..lf_start);
        if members.iter().all(|p| matches!(p.m.span, Span::Exact(_))) {
            let mut pos = lf_start;
            for p in members {
                let Span::Exact(range) = p.m.span else {
                    unreachable!("checked above")
                };
                push_original(&mut chunks, pos..range.start);
                chunks.push(Chunk::New {
                    ending: src.ending_for(range.start),
                    text: p.m.new,
                });
                pos = range.end;
            }
            push_original(&mut chunks, pos..lf_end);
        } else {
            let f_start = folded_starts[lines.start];
            let f_end = line_end(&folded_starts, lines.end - 1, view.text.len());
            let mut text = String::new();
            let mut pos = f_start;
            for p in members {
                text.push_str(&view.text[pos..p.folded.start]);
                text.push_str(&p.m.new);
                pos = p.folded.end;
            }
            text.push_str(&view.text[pos..f_end]);
            chunks.push(Chunk::New {
                text,
                ending: src.ending_for(lf_start),
            });
        }
        at = lf_end;
    }
    push_original(&mut chunks, at..src.lf.len());
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::to_lf;

    fn edits(pairs: &[(&str, &str)]) -> Vec<Edit> {
        pairs
            .iter()
            .map(|(o, n)| Edit {
                old: to_lf(o),
                new: to_lf(n),
            })
            .collect()
    }

    /// (bytes written, LF text) after applying `pairs` to `file`.
    fn run(file: &str, pairs: &[(&str, &str)]) -> Result<(String, String), Failure> {
        let src = Source::decode(file.as_bytes());
        let chunks = apply(&src, &edits(pairs))?;
        Ok((
            String::from_utf8(src.encode(&chunks)).unwrap(),
            src.lf_text(&chunks),
        ))
    }

    fn written(file: &str, pairs: &[(&str, &str)]) -> String {
        run(file, pairs).unwrap().0
    }

    #[test]
    fn exact_edits_apply_against_the_original() {
        assert_eq!(written("a b c\n", &[("a", "A"), ("c", "C")]), "A b C\n");
        // Matched against the original, not after earlier edits.
        assert_eq!(written("ab\n", &[("b", "a"), ("a", "b")]), "ba\n");
    }

    #[test]
    fn errors_in_pis_order() {
        assert_eq!(
            run("abc", &[("a", "x"), ("", "y")]),
            Err(Failure::EmptyOldText { index: 1 })
        );
        assert_eq!(
            run("foo foo foo", &[("foo", "bar")]),
            Err(Failure::Duplicate { index: 0, count: 3 })
        );
        assert_eq!(
            run("abc", &[("a", "x"), ("q", "y")]),
            Err(Failure::NotFound { index: 1 })
        );
        assert_eq!(
            run("abcd", &[("cd", "x"), ("abc", "y")]),
            Err(Failure::Overlap {
                first: 1,
                second: 0
            })
        );
        assert_eq!(run("abc", &[("b", "b")]), Err(Failure::NoChange));
        // Non-overlapping count, as JavaScript's split: "aaa" holds "aa" once.
        assert!(run("aaa", &[("aa", "b")]).is_ok());
    }

    #[test]
    fn uniqueness_of_an_exact_match_is_judged_exactly() {
        // Pi rejects this: "x  " also normalises to "x" (spec §5 bug 12).
        assert_eq!(written("x\nx  \n", &[("x\n", "y\n")]), "y\nx  \n");
    }

    #[test]
    fn fuzzy_matches_rewrite_only_the_lines_they_touch() {
        assert_eq!(
            written("keep   \ntarget  \nafter \n", &[("target\n", "T\n")]),
            "keep   \nT\nafter \n"
        );
        assert_eq!(
            written("hello\u{A0}world\n", &[("hello world", "hello universe")]),
            "hello universe\n"
        );
        // The touched line is normalised as a whole, as in Pi.
        assert_eq!(
            written(
                "say \u{201C}hi\u{201D} to \u{2018}x\u{2019}  \nnext\n",
                &[("\"hi\"", "\"yo\"")]
            ),
            "say \"yo\" to 'x'\nnext\n"
        );
        // Two fuzzy matches are both found uniquely or reported.
        assert_eq!(
            run("a\u{2013}b\na\u{2014}b\n", &[("a-b", "x")]),
            Err(Failure::Duplicate { index: 0, count: 2 })
        );
    }

    #[test]
    fn an_exact_match_stays_exact_beside_a_fuzzy_one() {
        // Edit 0 is exact on line 1; edit 1 needs fuzzy matching on line 2.
        assert_eq!(
            written("one  \ntwo\u{A0}2  \n", &[("one", "1"), ("two 2", "deux")]),
            "1  \ndeux\n"
        );
        // On the same line, both land in the normalised line.
        assert_eq!(
            written("a \u{201C}b\u{201D} c  \n", &[("a", "A"), ("\"b\"", "B")]),
            "A B c\n"
        );
    }

    #[test]
    fn indentation_tolerant_matching_reindents_the_replacement() {
        let file = "fn f() {\n\tlet a = 1;\n\tlet b = 2;\n}\n";
        assert_eq!(
            written(
                file,
                &[(
                    "    let a = 1;\n    let b = 2;\n",
                    "    let a = 10;\n    let b = 20;\n"
                )]
            ),
            "fn f() {\n\tlet a = 10;\n\tlet b = 20;\n}\n"
        );
    }

    #[test]
    fn line_endings_of_untouched_lines_are_kept() {
        // Mixed endings: only the edited line changes (spec §7.8).
        let file = "a\r\nb\nc\r\n";
        let (bytes, lf) = run(file, &[("b\n", "B\n")]).unwrap();
        assert_eq!(bytes, "a\r\nB\nc\r\n");
        assert_eq!(lf, "a\nB\nc\n");
        // New lines take the ending of the line they replace.
        assert_eq!(written(file, &[("c\n", "C\nD\n")]), "a\r\nb\nC\r\nD\r\n");
        // An oldText written with CRLF matches the LF text.
        assert_eq!(written("x\r\ny\r\n", &[("x\r\ny", "z")]), "z\r\n");
        // A lone CR is a character: it is matched and kept.
        assert_eq!(written("a\rb\nc\n", &[("b\nc", "X")]), "a\rX\n");
        assert_eq!(
            run("a\rb\n", &[("a\nb", "X")]),
            Err(Failure::NotFound { index: 0 })
        );
    }

    #[test]
    fn whitespace_only_old_text_that_is_not_there_is_not_found() {
        assert_eq!(
            run("ab", &[("  ", "x")]),
            Err(Failure::NotFound { index: 0 })
        );
    }

    #[test]
    fn a_whitespace_only_last_line_does_not_break_fuzzy_mode() {
        // Pi's overlay fails on this file ("different line count").
        assert_eq!(written("a\u{A0}b\n   ", &[("a b", "c")]), "c\n   ");
    }
}

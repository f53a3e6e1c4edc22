//! Pi's fuzzy normalisation (`normalizeForFuzzyMatch`, spec §1.8 step 6),
//! with a map from the original text to the normalised one.
//!
//! The normalisation: Unicode NFKC; trailing whitespace of every line
//! removed (JavaScript's `trimEnd` set); curly single quotes → `'`, curly
//! double quotes → `"`, Unicode dashes and the minus sign → `-`, Unicode
//! spaces → space. Leading whitespace and inner runs are kept.
//!
//! The map lets an exact match found in the original text take part in a
//! fuzzy-mode edit (spec §7.9: exact matches stay exact). It is built from
//! pieces: NFKC cannot combine across an ASCII character (no composition
//! takes an ASCII character as its second part, and ASCII characters are
//! starters, so reordering stops there), so normalising each run that starts
//! at an ASCII character on its own gives the same text as normalising the
//! whole. Runs that come out unchanged merge into identity pieces, where
//! offsets map one to one; a changed run maps as a whole.

use toolhost_sdk::js::is_whitespace as is_js_space;
use unicode_normalization::UnicodeNormalization;

/// Pi's character replacements after NFKC.
fn fold_char(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        c => c,
    }
}

/// Pi's `normalizeForFuzzyMatch(text)`.
pub fn normalize(text: &str) -> String {
    Folded::new(text).text
}

/// A run of the original text and where it went in the normalised text. A
/// piece ends where the next begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    src: usize,
    dst: usize,
    /// Unchanged: offsets inside map one to one.
    identity: bool,
}

/// A normalised text and its map back to the original.
#[derive(Debug)]
pub struct Folded {
    pub text: String,
    pieces: Vec<Piece>,
    src_len: usize,
}

impl Folded {
    pub fn new(src: &str) -> Folded {
        let mut folded = Folded {
            text: String::with_capacity(src.len()),
            pieces: Vec::new(),
            src_len: src.len(),
        };
        let mut at = 0;
        for line in src.split('\n') {
            if at > 0 {
                folded.identity(at - 1, "\n");
            }
            folded.line(at, line);
            at += line.len() + 1;
        }
        folded
    }

    /// Text copied from `src` on; a run of copied text is one piece.
    fn identity(&mut self, src: usize, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.pieces.last().is_some_and(|p| p.identity) {
            self.text.push_str(text);
        } else {
            self.push_piece(src, text, true);
        }
    }

    /// Text that stands, folded, for the source from `src` on.
    fn changed(&mut self, src: usize, text: &str) {
        self.push_piece(src, text, false);
    }

    fn push_piece(&mut self, src: usize, text: &str, identity: bool) {
        self.pieces.push(Piece {
            src,
            dst: self.text.len(),
            identity,
        });
        self.text.push_str(text);
    }

    /// One line (without its `\n`) starting at `base`.
    fn line(&mut self, base: usize, line: &str) {
        if line.is_ascii() {
            let kept = line.trim_end_matches(is_js_space).len();
            self.identity(base, &line[..kept]);
            if kept < line.len() {
                self.changed(base + kept, "");
            }
            return;
        }
        // Runs starting at each ASCII character, normalised one by one.
        let bytes = line.as_bytes();
        let mut runs: Vec<(usize, String)> = Vec::new();
        let mut start = 0;
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii() {
                let run = &line[start..i];
                let out: String = if run.is_ascii() {
                    run.to_string()
                } else {
                    run.nfkc().map(fold_char).collect()
                };
                runs.push((start, out));
                start = i;
            }
        }
        let total: usize = runs.iter().map(|(_, out)| out.len()).sum();
        let mut joined = String::with_capacity(total);
        for (_, out) in &runs {
            joined.push_str(out);
        }
        let kept = joined.trim_end_matches(is_js_space).len();

        let mut dst = 0;
        for (k, (offset, out)) in runs.iter().enumerate() {
            let src = base + offset;
            let end = runs.get(k + 1).map_or(line.len(), |r| r.0);
            let run = &line[*offset..end];
            let room = kept.saturating_sub(dst).min(out.len());
            if out == run {
                self.identity(src, &out[..room]);
                if room < out.len() {
                    self.changed(src + room, "");
                }
            } else {
                self.changed(src, &out[..room]);
            }
            dst += out.len();
        }
    }

    /// The piece holding source offset `at`.
    fn piece(&self, at: usize) -> usize {
        self.pieces
            .partition_point(|p| p.src <= at)
            .saturating_sub(1)
    }

    fn dst_end(&self, piece: usize) -> usize {
        self.pieces
            .get(piece + 1)
            .map_or(self.text.len(), |p| p.dst)
    }

    /// Where a range starting at source offset `at` starts in the normalised
    /// text (a changed piece is taken whole).
    pub fn start_of(&self, at: usize) -> usize {
        if at >= self.src_len || self.pieces.is_empty() {
            return self.text.len();
        }
        let p = self.pieces[self.piece(at)];
        if p.identity {
            p.dst + (at - p.src)
        } else {
            p.dst
        }
    }

    /// Where a range ending at source offset `at` (exclusive) ends.
    pub fn end_of(&self, at: usize) -> usize {
        if at == 0 || self.pieces.is_empty() {
            return 0;
        }
        let i = self.piece(at - 1);
        let p = self.pieces[i];
        if p.identity {
            p.dst + (at - p.src)
        } else {
            self.dst_end(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_like_pi() {
        assert_eq!(
            normalize("keep   \ntarget  \nafter \n"),
            "keep\ntarget\nafter\n"
        );
        assert_eq!(normalize("hello\u{A0}world"), "hello world");
        assert_eq!(
            normalize("\u{2018}a\u{2019} \u{201C}b\u{201D} c\u{2014}d\u{2212}e"),
            "'a' \"b\" c-d-e"
        );
        // NFKC: compatibility forms and composition.
        assert_eq!(normalize("\u{FB01}le \u{FF21}"), "file A");
        assert_eq!(normalize("e\u{301}"), "\u{E9}");
        // Leading whitespace, tabs and inner runs stay.
        assert_eq!(normalize("\t  a  b\t \n"), "\t  a  b\n");
        // JavaScript's trimEnd also strips U+FEFF and a lone CR at the end.
        assert_eq!(normalize("x\u{FEFF}\ny\r"), "x\ny");
        assert_eq!(normalize("   \n\u{3000}"), "\n");
    }

    #[test]
    fn maps_offsets_through_changed_pieces() {
        let src = "ab  \n\u{201C}q\u{201D} x";
        let f = Folded::new(src);
        assert_eq!(f.text, "ab\n\"q\" x");
        // Identity pieces map one to one.
        assert_eq!((f.start_of(1), f.end_of(2)), (1, 2));
        // Trailing spaces vanish: a range over them is empty at the line end.
        assert_eq!((f.start_of(2), f.end_of(4)), (2, 2));
        // The newline after them.
        assert_eq!((f.start_of(4), f.end_of(5)), (2, 3));
        // A curly quote (3 bytes) maps to one byte.
        let q = src.find('q').unwrap();
        assert_eq!((f.start_of(5), f.end_of(q)), (3, 4));
        // `q` and the quote after it are one run (it starts at `q`), which
        // maps as a whole.
        assert_eq!(&f.text[f.start_of(q)..f.end_of(q + 1)], "q\"");
        assert_eq!(&f.text[f.start_of(q)..f.end_of(src.len())], "q\" x");
    }

    #[test]
    fn a_combining_sequence_maps_as_a_whole() {
        let src = "ae\u{301}b";
        let f = Folded::new(src);
        assert_eq!(f.text, "a\u{E9}b");
        // A range ending inside the sequence widens to all of it.
        assert_eq!(&f.text[f.start_of(1)..f.end_of(2)], "\u{E9}");
        assert_eq!(&f.text[f.start_of(0)..f.end_of(1)], "a");
        assert_eq!(&f.text[f.start_of(src.len() - 1)..], "b");
    }
}

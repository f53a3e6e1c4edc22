//! The file's text as `edit` works on it, and back (spec §1.8 steps 4, 5 and
//! 7 with §7.8).
//!
//! Matching happens on LF text, as in Pi: the BOM is set aside and every
//! `\r\n` is read as `\n`. Unlike Pi (§5 bug 10), each line break remembers
//! whether it was `\r\n`, so the lines an edit does not touch are written
//! back with their own endings, and a lone `\r` is an ordinary character,
//! not a line break.

use std::ops::Range;

/// A line break as written in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Lf,
    CrLf,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Lf => "\n",
            Ending::CrLf => "\r\n",
        }
    }
}

/// `\r\n` → `\n` (a lone `\r` stays): how oldText and newText are read.
pub fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// A decoded file: its BOM, its LF text and where the CRLF breaks were.
#[derive(Debug)]
pub struct Source {
    bom: bool,
    /// The text without BOM, every `\r\n` read as `\n`.
    pub lf: String,
    /// Offsets in `lf` of the `\n`s that were `\r\n`, ascending.
    crlf: Vec<usize>,
}

impl Source {
    /// Decode file bytes (invalid UTF-8 becomes U+FFFD, as Node's decoder does).
    pub fn decode(bytes: &[u8]) -> Source {
        let text = String::from_utf8_lossy(bytes);
        let (bom, body) = match text.strip_prefix('\u{FEFF}') {
            Some(rest) => (true, rest),
            None => (false, &*text),
        };
        let mut lf = String::with_capacity(body.len());
        let mut crlf = Vec::new();
        let mut rest = body;
        while let Some(i) = rest.find("\r\n") {
            lf.push_str(&rest[..i]);
            crlf.push(lf.len());
            lf.push('\n');
            rest = &rest[i + 2..];
        }
        lf.push_str(rest);
        Source { bom, lf, crlf }
    }

    /// The ending of the line break at `lf` offset `at` (which holds `\n`).
    fn ending_at(&self, at: usize) -> Ending {
        if self.crlf.binary_search(&at).is_ok() {
            Ending::CrLf
        } else {
            Ending::Lf
        }
    }

    /// The ending that new line breaks get when text is replaced from `lf`
    /// offset `at`: the ending of the line `at` is in; for a last line
    /// without a break, the break before it; in a file without any break,
    /// `\n` (Pi's detection gives LF there too).
    pub fn ending_for(&self, at: usize) -> Ending {
        let bytes = self.lf.as_bytes();
        if let Some(i) = bytes[at.min(bytes.len())..]
            .iter()
            .position(|&b| b == b'\n')
        {
            return self.ending_at(at + i);
        }
        match bytes[..at.min(bytes.len())]
            .iter()
            .rposition(|&b| b == b'\n')
        {
            Some(i) => self.ending_at(i),
            None => Ending::Lf,
        }
    }

    /// Append the original text of `range` (in `lf` offsets), with its line
    /// breaks as they were.
    pub fn push_original(&self, range: Range<usize>, out: &mut String) {
        let first = self.crlf.partition_point(|&i| i < range.start);
        let mut at = range.start;
        for &i in self.crlf[first..].iter().take_while(|&&i| i < range.end) {
            out.push_str(&self.lf[at..i]);
            out.push_str("\r\n");
            at = i + 1;
        }
        out.push_str(&self.lf[at..range.end]);
    }

    /// The bytes to write: the BOM if there was one, then `chunks`.
    pub fn encode(&self, chunks: &[Chunk]) -> Vec<u8> {
        let mut out = String::with_capacity(self.lf.len() + self.crlf.len() + 3);
        if self.bom {
            out.push('\u{FEFF}');
        }
        for chunk in chunks {
            match chunk {
                Chunk::Original(range) => self.push_original(range.clone(), &mut out),
                Chunk::New { text, ending } => match ending {
                    Ending::Lf => out.push_str(text),
                    Ending::CrLf => out.push_str(&text.replace('\n', ending.as_str())),
                },
            }
        }
        out.into_bytes()
    }

    /// The LF text of `chunks` (what the diff and patch compare).
    pub fn lf_text(&self, chunks: &[Chunk]) -> String {
        let mut out = String::with_capacity(self.lf.len());
        for chunk in chunks {
            match chunk {
                Chunk::Original(range) => out.push_str(&self.lf[range.clone()]),
                Chunk::New { text, .. } => out.push_str(text),
            }
        }
        out
    }
}

/// A piece of the edited file: original text (an `lf` range) or new text
/// whose line breaks are written with `ending`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk {
    Original(Range<usize>),
    New { text: String, ending: Ending },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(bytes: &str, chunks: impl Fn(&Source) -> Vec<Chunk>) -> (String, String) {
        let src = Source::decode(bytes.as_bytes());
        let chunks = chunks(&src);
        (
            String::from_utf8(src.encode(&chunks)).unwrap(),
            src.lf_text(&chunks),
        )
    }

    #[test]
    fn crlf_is_read_as_lf_and_a_lone_cr_is_a_character() {
        let src = Source::decode(b"a\r\nb\rc\nd\r\r\n");
        assert_eq!(src.lf, "a\nb\rc\nd\r\n");
        assert_eq!(src.crlf, vec![1, 8]);
        assert_eq!(to_lf("x\r\ny\rz"), "x\ny\rz");
    }

    #[test]
    fn untouched_text_keeps_its_own_endings() {
        let all = |s: &Source| vec![Chunk::Original(0..s.lf.len())];
        for text in ["a\r\nb\nc\r\n", "\r\n\r\n", "x\ry\r", "plain"] {
            assert_eq!(roundtrip(text, all).0, text);
        }
    }

    #[test]
    fn new_text_takes_the_ending_of_the_line_it_replaces() {
        // Mixed file: line 1 CRLF, line 2 LF, line 3 CRLF.
        let file = "one\r\ntwo\nthree\r\n";
        let replace = |start: usize, end: usize| {
            move |s: &Source| {
                vec![
                    Chunk::Original(0..start),
                    Chunk::New {
                        text: "X\nY\n".into(),
                        ending: s.ending_for(start),
                    },
                    Chunk::Original(end..s.lf.len()),
                ]
            }
        };
        // "two\n" sits on an LF line: the new lines are LF, the others kept.
        assert_eq!(
            roundtrip(file, replace(4, 8)),
            ("one\r\nX\nY\nthree\r\n".into(), "one\nX\nY\nthree\n".into())
        );
        // "three\n" sits on a CRLF line.
        assert_eq!(roundtrip(file, replace(8, 14)).0, "one\r\ntwo\nX\r\nY\r\n");
    }

    #[test]
    fn a_last_line_without_break_takes_the_break_before_it() {
        let src = Source::decode(b"a\r\nb");
        assert_eq!(src.ending_for(2), Ending::CrLf);
        assert_eq!(Source::decode(b"abc").ending_for(1), Ending::Lf);
        assert_eq!(Source::decode(b"a\nb\r\n").ending_for(4), Ending::CrLf);
    }

    #[test]
    fn bom_is_set_aside_and_restored() {
        let (bytes, lf) = roundtrip("\u{FEFF}x\r\n", |s| {
            vec![Chunk::New {
                text: "y\n".into(),
                ending: s.ending_for(0),
            }]
        });
        assert_eq!(bytes, "\u{FEFF}y\r\n");
        assert_eq!(lf, "y\n");
    }

    #[test]
    fn invalid_utf8_decodes_to_replacement_characters() {
        let src = Source::decode(b"a\xffb");
        assert_eq!(src.lf, "a\u{FFFD}b");
    }
}

//! Pi's bash output accumulator (spec §1.5), shared by `bash` and
//! `powershell`, with toolhost's sanitising of the model-facing text (§7.13).
//!
//! Raw chunks (stdout and stderr interleaved) go through a streaming UTF-8
//! decoder (a character split across chunks is kept whole; invalid bytes
//! become U+FFFD as `TextDecoder` makes them), then through [`Sanitizer`],
//! which removes ANSI escape sequences and control characters other than
//! `\n` and `\t`. Only a rolling tail of the text is kept (at most four times
//! the byte cap, trimmed to twice it), with the true line and byte totals. As
//! soon as the output outgrows a cap, the complete *raw* output goes to the
//! full-output file through a [`FileStore`]; before that the raw chunks wait
//! in memory (at most a cap's worth plus one chunk). The file keeps at most
//! [`FULL_OUTPUT_CAP`] bytes, and says so at its end when it stopped there:
//! a command printing gigabytes must not fill the disk.

use std::borrow::Cow;
use toolhost_sdk::truncate::{TruncatedBy, Truncation, truncate_tail};

/// Most bytes a full-output file keeps.
pub const FULL_OUTPUT_CAP: u64 = 64 << 20;

/// Where the full output is kept. `create` returns the new file's path.
pub trait FileStore {
    fn create(&mut self) -> Option<String>;
    /// Append to the file at `path`; false when it failed.
    fn append(&mut self, path: &str, bytes: &[u8]) -> bool;
}

/// The full-output file.
enum File {
    NotNeeded,
    Open(String),
    /// Creating or writing it failed: its path is not shown (it would lie).
    Failed,
}

/// A view of the output for an update or the result.
#[derive(Debug)]
pub struct Snapshot {
    pub content: String,
    pub truncation: Truncation,
    pub full_output_path: Option<String>,
    /// The file's cap, when the output outgrew it.
    pub full_output_capped: Option<u64>,
}

pub struct Accumulator<S: FileStore> {
    max_lines: u64,
    max_bytes: usize,
    max_rolling_bytes: usize,
    decoder: Utf8Decoder,
    sanitizer: Sanitizer,
    raw_chunks: Vec<Vec<u8>>,
    tail: String,
    tail_starts_at_line_boundary: bool,
    /// A tail that is only the end of one over-long line and its newline is
    /// shown rather than dropped (Pi 1.6, #12062).
    long_last_line_shown: bool,
    /// The whole output, for a structured result (Pi 1.6).
    whole: Option<Whole>,
    total_raw_bytes: usize,
    /// Bytes of the sanitised text (what the model can be shown).
    total_bytes: usize,
    completed_lines: usize,
    total_lines: usize,
    current_line_bytes: usize,
    has_open_line: bool,
    finished: bool,
    store: S,
    file: File,
    /// Raw bytes written to the file, and its cap.
    file_bytes: u64,
    file_cap: u64,
    file_capped: bool,
}

impl<S: FileStore> Accumulator<S> {
    pub fn new(max_lines: u64, max_bytes: usize, store: S) -> Self {
        Accumulator {
            max_lines,
            max_bytes,
            max_rolling_bytes: (max_bytes * 2).max(1),
            decoder: Utf8Decoder::default(),
            sanitizer: Sanitizer::default(),
            raw_chunks: Vec::new(),
            tail: String::new(),
            tail_starts_at_line_boundary: true,
            long_last_line_shown: false,
            whole: None,
            total_raw_bytes: 0,
            total_bytes: 0,
            completed_lines: 0,
            total_lines: 0,
            current_line_bytes: 0,
            has_open_line: false,
            finished: false,
            store,
            file: File::NotNeeded,
            file_bytes: 0,
            file_cap: FULL_OUTPUT_CAP,
            file_capped: false,
        }
    }

    /// Whether a tail that is only the end of one over-long line (and its
    /// newline) is shown: Pi 0.85 drops the partial first line of the tail
    /// even then, and shows nothing.
    pub fn with_long_last_line_shown(mut self, shown: bool) -> Self {
        self.long_last_line_shown = shown;
        self
    }

    /// Also keep the whole output, up to `max` bytes (see [`Whole`]).
    pub fn with_whole_output(mut self, max: usize) -> Self {
        self.whole = Some(Whole::new(max));
        self
    }

    /// The whole output as [`Whole::text`] gives it, when it is kept.
    pub fn whole_output(&self) -> Option<(String, bool)> {
        self.whole.as_ref().map(Whole::text)
    }

    /// Keep at most `cap` bytes in the full-output file.
    #[cfg(test)]
    pub fn with_file_cap(mut self, cap: u64) -> Self {
        self.file_cap = cap;
        self
    }

    pub fn append(&mut self, data: &[u8]) {
        debug_assert!(!self.finished, "append after finish");
        self.total_raw_bytes += data.len();
        // Plain UTF-8 text, the common case, is neither decoded into a copy
        // nor sanitised into another.
        let decoded = self.decoder.decode_borrowed(data);
        let clean = self.sanitizer.clean(&decoded);
        self.append_text(&clean);
        match &self.file {
            File::Open(path) => {
                let path = path.clone();
                self.write(&path, data);
            }
            File::Failed => {}
            File::NotNeeded if self.should_use_file() => {
                self.ensure_file();
                if let File::Open(path) = &self.file {
                    let path = path.clone();
                    self.write(&path, data);
                }
            }
            File::NotNeeded => {
                if !data.is_empty() {
                    self.raw_chunks.push(data.to_vec());
                }
            }
        }
    }

    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let mut rest = String::new();
        self.decoder.finish(&mut rest);
        let mut clean = String::new();
        self.sanitizer.push(&rest, &mut clean);
        self.append_text(&clean);
        if self.should_use_file() {
            self.ensure_file();
        }
    }

    /// The tail as Pi's `truncateTail` cuts it, with the true totals; with
    /// `persist_if_truncated`, the full-output file exists afterwards.
    pub fn snapshot(&mut self, persist_if_truncated: bool) -> Snapshot {
        let tail = truncate_tail(self.snapshot_text(), self.max_lines, self.max_bytes);
        let truncated =
            self.total_lines as u64 > self.max_lines || self.total_bytes > self.max_bytes;
        let truncated_by = truncated.then(|| {
            tail.truncated_by
                .unwrap_or(if self.total_bytes > self.max_bytes {
                    TruncatedBy::Bytes
                } else {
                    TruncatedBy::Lines
                })
        });
        let truncation = Truncation {
            truncated,
            truncated_by,
            total_lines: self.total_lines,
            total_bytes: self.total_bytes,
            max_lines: self.max_lines,
            max_bytes: self.max_bytes,
            ..tail
        };
        if persist_if_truncated && truncated {
            self.ensure_file();
        }
        Snapshot {
            content: truncation.content.clone(),
            truncation,
            full_output_path: match &self.file {
                File::Open(path) => Some(path.clone()),
                _ => None,
            },
            full_output_capped: self.file_capped.then_some(self.file_cap),
        }
    }

    /// Bytes of the last (possibly unfinished) line.
    pub fn last_line_bytes(&self) -> usize {
        self.current_line_bytes
    }

    fn append_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let bytes = text.len();
        self.total_bytes += bytes;
        if let Some(whole) = &mut self.whole {
            whole.push(text.as_bytes());
        }
        if bytes > self.max_rolling_bytes * 2 {
            // What pushing it all and trimming would keep: its last
            // `max_rolling_bytes`, from a character boundary.
            let mut start = bytes - self.max_rolling_bytes;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            self.tail_starts_at_line_boundary = text.as_bytes()[start - 1] == b'\n';
            self.tail.clear();
            self.tail.push_str(&text[start..]);
        } else {
            self.tail.push_str(text);
            if self.tail.len() > self.max_rolling_bytes * 2 {
                self.trim_tail();
            }
        }
        match text.rfind('\n') {
            None => {
                self.current_line_bytes += bytes;
                self.has_open_line = true;
            }
            Some(last) => {
                self.completed_lines += count_newlines(text.as_bytes());
                let rest = &text[last + 1..];
                self.current_line_bytes = rest.len();
                self.has_open_line = !rest.is_empty();
            }
        }
        self.total_lines = self.completed_lines + usize::from(self.has_open_line);
    }

    fn trim_tail(&mut self) {
        let mut start = self.tail.len() - self.max_rolling_bytes;
        while !self.tail.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.tail_starts_at_line_boundary = self.tail.as_bytes()[start - 1] == b'\n';
        }
        self.tail.drain(..start);
    }

    /// The tail from its first whole line (Pi 1.6: the whole tail when that
    /// leaves nothing, its `getSnapshotText() || tailText`).
    fn snapshot_text(&self) -> &str {
        if self.tail_starts_at_line_boundary {
            return &self.tail;
        }
        match self.tail.find('\n') {
            Some(i) if self.long_last_line_shown && i + 1 == self.tail.len() => &self.tail,
            Some(i) => &self.tail[i + 1..],
            None => &self.tail,
        }
    }

    fn should_use_file(&self) -> bool {
        self.total_raw_bytes > self.max_bytes
            || self.total_bytes > self.max_bytes
            || self.total_lines as u64 > self.max_lines
    }

    fn ensure_file(&mut self) {
        if !matches!(self.file, File::NotNeeded) {
            return;
        }
        let Some(path) = self.store.create() else {
            self.file = File::Failed;
            self.raw_chunks.clear();
            return;
        };
        self.file = File::Open(path.clone());
        let pending = std::mem::take(&mut self.raw_chunks).concat();
        self.write(&path, &pending);
    }

    /// Append to the file up to its cap; past it, once, a line saying so.
    fn write(&mut self, path: &str, bytes: &[u8]) {
        if self.file_capped || bytes.is_empty() {
            return;
        }
        let room = self.file_cap.saturating_sub(self.file_bytes);
        let kept = &bytes[..bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if !kept.is_empty() && !self.store.append(path, kept) {
            self.file = File::Failed;
            return;
        }
        self.file_bytes += kept.len() as u64;
        if kept.len() < bytes.len() {
            self.file_capped = true;
            let note = format!(
                "\n[toolhost: the output went on; this file keeps its first {} MiB]\n",
                self.file_cap >> 20
            );
            if !self.store.append(path, note.as_bytes()) {
                self.file = File::Failed;
            }
        }
    }
}

/// How many `\n` bytes `bytes` holds (a loop the compiler vectorises).
/// The whole output for a structured result (Pi 1.x's
/// `readFullOutput(max)`): all of it up to `max` bytes; beyond, its first
/// and last halves around `[... {n} bytes omitted ...]`, each cut at a
/// character. Kept in memory (at most about twice `max`), of the text the
/// model is shown (§7.13: escapes and control characters removed).
pub struct Whole {
    max: usize,
    /// The first `max` bytes.
    head: Vec<u8>,
    /// The last bytes, at least `max - max / 2` of them once there are.
    tail: Vec<u8>,
    total: u64,
}

impl Whole {
    fn new(max: usize) -> Whole {
        Whole {
            max,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    fn tail_bytes(&self) -> usize {
        self.max - self.max / 2
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.max.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        let keep = self.tail_bytes();
        if bytes.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        } else {
            self.tail.extend_from_slice(bytes);
            if self.tail.len() > 2 * keep {
                self.tail.drain(..self.tail.len() - keep);
            }
        }
    }

    /// The text, and whether bytes were left out of it.
    fn text(&self) -> (String, bool) {
        if self.total <= self.max as u64 {
            return (String::from_utf8_lossy(&self.head).into_owned(), false);
        }
        let (head_bytes, tail_bytes) = (self.max / 2, self.tail_bytes());
        let head = &self.head[..head_bytes];
        let head = match std::str::from_utf8(head) {
            Ok(text) => text,
            // A character cut at the end is left out, as a streaming decode does.
            Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
        };
        let tail = &self.tail[self.tail.len() - tail_bytes..];
        let start = tail.iter().take_while(|b| *b & 0xc0 == 0x80).count();
        let tail = String::from_utf8_lossy(&tail[start..]);
        let omitted = self.total - (head_bytes + tail_bytes) as u64;
        (
            format!("{head}\n\n[... {omitted} bytes omitted ...]\n\n{tail}"),
            true,
        )
    }
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().map(|&b| usize::from(b == b'\n')).sum()
}

/// A streaming UTF-8 decoder with `TextDecoder`'s replacement rules: each
/// maximal invalid subsequence becomes one U+FFFD; an incomplete character
/// at the end of a chunk waits for the next.
#[derive(Default)]
pub struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    /// [`Self::decode`], borrowing `data` when it is whole valid UTF-8 (or
    /// ends inside a character, which waits for the next chunk).
    pub fn decode_borrowed<'a>(&mut self, data: &'a [u8]) -> Cow<'a, str> {
        if self.pending.is_empty() {
            match std::str::from_utf8(data) {
                Ok(text) => return Cow::Borrowed(text),
                Err(e) if e.error_len().is_none() => {
                    let (valid, rest) = data.split_at(e.valid_up_to());
                    self.pending = rest.to_vec();
                    return Cow::Borrowed(std::str::from_utf8(valid).expect("valid prefix"));
                }
                Err(_) => {}
            }
        }
        let mut out = String::new();
        self.decode(data, &mut out);
        Cow::Owned(out)
    }

    pub fn decode(&mut self, data: &[u8], out: &mut String) {
        let joined;
        let mut bytes: &[u8] = if self.pending.is_empty() {
            data
        } else {
            self.pending.extend_from_slice(data);
            joined = std::mem::take(&mut self.pending);
            &joined
        };
        loop {
            match std::str::from_utf8(bytes) {
                Ok(s) => {
                    out.push_str(s);
                    return;
                }
                Err(e) => {
                    let (valid, rest) = bytes.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).expect("valid prefix"));
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{FFFD}');
                            bytes = &rest[n..];
                        }
                        None => {
                            self.pending = rest.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// End of stream: an unfinished character is one U+FFFD.
    pub fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            self.pending.clear();
            out.push('\u{FFFD}');
        }
    }
}

/// Removes ANSI escape sequences (CSI, OSC and the other string sequences,
/// two-character escapes) and control characters except `\n` and `\t`, across
/// chunk boundaries. A string sequence never spans a newline, so a stray
/// `ESC ]` cannot swallow the rest of the output.
#[derive(Default)]
pub struct Sanitizer {
    state: State,
}

#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// ESC followed by intermediate bytes (`ESC ( B`).
    EscapeIntermediate,
    /// Control sequence: parameters and intermediates until a final byte.
    Csi,
    /// OSC, DCS, SOS, PM, APC: until BEL or ST.
    String,
    /// ESC inside a string: `\` ends it (ST).
    StringEscape,
}

impl Sanitizer {
    /// [`Self::push`] into a new string, or `text` itself when it is all
    /// plain text in the ground state.
    pub fn clean<'a>(&mut self, text: &'a str) -> Cow<'a, str> {
        if self.state == State::Ground && plain_run(text.as_bytes()) == text.len() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        self.push(text, &mut out);
        Cow::Owned(out)
    }

    pub fn push(&mut self, mut text: &str, out: &mut String) {
        loop {
            if self.state == State::Ground {
                // Plain text is copied as a run, up to the next byte that
                // may start a sequence or be a control character.
                let plain = plain_run(text.as_bytes());
                out.push_str(&text[..plain]);
                text = &text[plain..];
            }
            let mut chars = text.chars();
            let Some(c) = chars.next() else {
                return;
            };
            self.step(c, out);
            text = chars.as_str();
        }
    }

    fn step(&mut self, c: char, out: &mut String) {
        use State::*;
        match self.state {
            Ground => match c {
                '\x1b' => self.state = Escape,
                '\n' | '\t' => out.push(c),
                '\u{9b}' => self.state = Csi,
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => self.state = String,
                c if c.is_control() => {}
                c => out.push(c),
            },
            Escape => match c {
                '[' => self.state = Csi,
                ']' | 'P' | 'X' | '^' | '_' => self.state = String,
                '\x1b' => {}
                ' '..='/' => self.state = EscapeIntermediate,
                '0'..='~' => self.state = Ground,
                c => {
                    self.state = Ground;
                    self.step(c, out);
                }
            },
            EscapeIntermediate => match c {
                ' '..='/' => {}
                '0'..='~' => self.state = Ground,
                c => {
                    self.state = Ground;
                    self.step(c, out);
                }
            },
            Csi => match c {
                '0'..='?' | ' '..='/' => {}
                '@'..='~' => self.state = Ground,
                '\x1b' => self.state = Escape,
                c => {
                    self.state = Ground;
                    self.step(c, out);
                }
            },
            String => match c {
                '\x07' | '\u{9c}' => self.state = Ground,
                '\x1b' => self.state = StringEscape,
                '\n' => {
                    self.state = Ground;
                    out.push('\n');
                }
                _ => {}
            },
            StringEscape => match c {
                '\\' => self.state = Ground,
                c => {
                    self.state = Escape;
                    self.step(c, out);
                }
            },
        }
    }
}

/// The length of the leading run of `bytes` that [`Sanitizer`] keeps as it is
/// in its ground state: no C0 control but `\n` and `\t`, no DEL, and no C1
/// control (U+0080 to U+009F, UTF-8 `C2 80` to `C2 9F`). It ends on a
/// character boundary of valid UTF-8.
fn plain_run(bytes: &[u8]) -> usize {
    // Whole blocks of printable ASCII, `\n` and `\t` first: a branch-free
    // test per block, which the compiler vectorises.
    const BLOCK: usize = 64;
    let mut i = 0;
    for block in bytes.chunks_exact(BLOCK) {
        let odd = block.iter().fold(false, |odd, &b| {
            odd | !(b.wrapping_sub(b' ') < 0x5f || b == b'\n' || b == b'\t')
        });
        if odd {
            break;
        }
        i += BLOCK;
    }
    while i < bytes.len() {
        match bytes[i] {
            b'\n' | b'\t' | b' '..=b'~' | 0x80..=0xC1 | 0xC3..=0xFF => i += 1,
            0xC2 if !matches!(bytes.get(i + 1), Some(0x80..=0x9F)) => i += 1,
            _ => break,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Default)]
    struct Memory {
        files: BTreeMap<String, Vec<u8>>,
        fail: bool,
    }

    impl FileStore for &mut Memory {
        fn create(&mut self) -> Option<String> {
            if self.fail {
                return None;
            }
            let path = format!("/tmp/out-{}.log", self.files.len());
            self.files.insert(path.clone(), Vec::new());
            Some(path)
        }
        fn append(&mut self, path: &str, bytes: &[u8]) -> bool {
            self.files.get_mut(path).unwrap().extend_from_slice(bytes);
            true
        }
    }

    #[test]
    fn the_whole_output_is_kept_to_its_limit_then_its_ends_around_what_was_left_out() {
        let mut whole = Whole::new(10);
        whole.push(b"0123456789");
        assert_eq!(whole.text(), ("0123456789".to_string(), false));
        whole.push(b"abc");
        // 13 bytes: the first 5, the last 5, 3 left out.
        assert_eq!(
            whole.text(),
            (
                "01234\n\n[... 3 bytes omitted ...]\n\n89abc".to_string(),
                true
            )
        );
        let mut split = Whole::new(10);
        for chunk in ["0", "123456", "789a", "b", "c"] {
            split.push(chunk.as_bytes());
        }
        assert_eq!(split.text(), whole.text(), "chunks do not matter");
        // Characters cut by either end are left out.
        let mut wide = Whole::new(6);
        wide.push("éééé".as_bytes());
        assert_eq!(
            wide.text(),
            ("é\n\n[... 2 bytes omitted ...]\n\né".to_string(), true)
        );
    }

    #[test]
    fn the_full_output_file_stops_at_its_cap_and_says_so() {
        let mut mem = Memory::default();
        let mut acc = Accumulator::new(10, 100, &mut mem).with_file_cap(1000);
        for _ in 0..30 {
            acc.append(&[b'x'; 99]);
            acc.append(b"\n");
        }
        acc.finish();
        let snap = acc.snapshot(true);
        assert_eq!(snap.full_output_capped, Some(1000));
        let path = snap.full_output_path.unwrap();
        drop(acc);
        let file = String::from_utf8(mem.files[&path].clone()).unwrap();
        assert!(file.starts_with(&"x".repeat(99)));
        let (kept, note) = file.split_at(1000);
        assert_eq!(kept.len(), 1000);
        assert_eq!(
            note,
            "\n[toolhost: the output went on; this file keeps its first 0 MiB]\n"
        );
    }

    fn clean(chunks: &[&str]) -> String {
        let mut s = Sanitizer::default();
        let mut out = String::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        out
    }

    #[test]
    fn plain_runs_keep_what_the_character_machine_keeps() {
        let text =
            "a\u{a0}b\u{80}c\u{85}d\u{c2}é\x7f\x1b[1mX\x1b]t\x07\u{9d}osc\nend\u{10FFFF}✓\t\r!";
        let mut reference = String::new();
        let mut machine = Sanitizer::default();
        for c in text.chars() {
            machine.step(c, &mut reference);
        }
        assert_eq!(reference, "a\u{a0}bcdÂéX\nend\u{10FFFF}✓\t!");
        for (at, _) in text.char_indices() {
            assert_eq!(
                clean(&[&text[..at], &text[at..]]),
                reference,
                "split at {at}"
            );
        }
    }

    #[test]
    fn sanitizer_strips_escapes_and_controls_even_across_chunks() {
        assert_eq!(clean(&["\x1b[31mred\x1b[0m plain\n"]), "red plain\n");
        assert_eq!(clean(&["a\x1b[3", "8;5;196mb\x1b", "[0mc"]), "abc");
        assert_eq!(
            clean(&["tab\there\r\nbell\x07 bs\x08!"]),
            "tab\there\nbell bs!"
        );
        assert_eq!(
            clean(&["\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ title\x1b]0;t\x07!"]),
            "link title!"
        );
        assert_eq!(clean(&["\x1b(Bcharset \x1b=keypad"]), "charset keypad");
        assert_eq!(clean(&["10%\r20%\r100%\n"]), "10%20%100%\n");
        assert_eq!(clean(&["\u{9b}1mC1 csi\u{85}"]), "C1 csi");
        assert_eq!(clean(&["üñí ✓\n"]), "üñí ✓\n");
        // An unterminated OSC ends at the line; the next line survives.
        assert_eq!(clean(&["\x1b]2;title without end\nnext\n"]), "\nnext\n");
        // A CSI broken by a control character: the character is handled.
        assert_eq!(clean(&["\x1b[12\nx"]), "\nx");
    }

    #[test]
    fn decoder_keeps_split_characters_and_replaces_invalid_bytes() {
        let mut d = Utf8Decoder::default();
        let mut out = String::new();
        let bytes = "é✓".as_bytes();
        for b in bytes {
            d.decode(&[*b], &mut out);
        }
        assert_eq!(out, "é✓");
        out.clear();
        d.decode(b"a\xffb\xe2\x9c", &mut out);
        assert_eq!(out, "a\u{FFFD}b");
        d.finish(&mut out);
        assert_eq!(out, "a\u{FFFD}b\u{FFFD}");
    }

    /// Feed `chunks` to an accumulator of `max_lines` and `max_bytes` over
    /// files in memory and finish it: its snapshot (the file kept if
    /// truncated), and the files.
    fn finished(
        max_lines: u64,
        max_bytes: usize,
        chunks: &[impl AsRef<[u8]>],
    ) -> (Snapshot, BTreeMap<String, Vec<u8>>) {
        let mut m = Memory::default();
        let mut acc = Accumulator::new(max_lines, max_bytes, &mut m);
        for chunk in chunks {
            acc.append(chunk.as_ref());
        }
        acc.finish();
        let snap = acc.snapshot(true);
        drop(acc);
        (snap, m.files)
    }

    #[test]
    fn small_output_is_kept_whole_without_a_file() {
        let (snap, files) = finished(2000, 51200, &[b"a\n", b"b\n"]);
        assert_eq!(snap.content, "a\nb\n");
        assert!(!snap.truncation.truncated);
        assert_eq!(snap.full_output_path, None);
        assert!(files.is_empty());
    }

    #[test]
    fn byte_cap_matches_pi_c091_and_keeps_the_raw_bytes() {
        let lines: Vec<String> = (1..=1000).map(|i| format!("{i:099}\n")).collect();
        let (snap, files) = finished(2000, 51200, &lines);
        let t = &snap.truncation;
        assert!(t.truncated);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!((t.total_lines, t.total_bytes), (1000, 100000));
        assert_eq!((t.output_lines, t.output_bytes), (512, 51199));
        assert!(snap.content.starts_with(&format!("{:099}\n", 489)));
        let path = snap.full_output_path.unwrap();
        assert_eq!(files[&path], lines.concat().as_bytes());
    }

    #[test]
    fn the_file_keeps_escapes_the_text_drops() {
        let raw = b"\x1b[1mone\x1b[0m\ntwo\nthree\nfour\n";
        let (snap, files) = finished(3, 51200, &[raw]);
        assert_eq!(snap.content, "two\nthree\nfour");
        assert_eq!(snap.truncation.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(snap.truncation.total_bytes, "one\ntwo\nthree\nfour\n".len());
        let path = snap.full_output_path.unwrap();
        assert_eq!(files[&path], raw);
    }

    #[test]
    fn a_long_last_line_is_cut_at_a_character_boundary() {
        let mut m = Memory::default();
        let mut acc = Accumulator::new(2000, 10, &mut m);
        acc.append("xx€€€€€".as_bytes());
        acc.finish();
        let snap = acc.snapshot(true);
        assert!(snap.truncation.last_line_partial);
        assert_eq!(snap.content, "€€€");
        assert_eq!(acc.last_line_bytes(), 17);
    }

    #[test]
    fn pi_1_6_shows_the_end_of_a_long_line_that_fills_the_tail() {
        let run = |shown: bool| {
            let mut m = Memory::default();
            let mut acc = Accumulator::new(2000, 10, &mut m).with_long_last_line_shown(shown);
            acc.append(b"one\ntwo\n");
            acc.append(&[b'a'; 100]);
            acc.append(b"\n");
            acc.finish();
            let snap = acc.snapshot(true);
            (snap, acc.last_line_bytes())
        };
        let (snap, last) = run(true);
        assert_eq!(snap.content, "a".repeat(10));
        assert!(snap.truncation.last_line_partial);
        assert_eq!((snap.truncation.total_lines, last), (3, 0));
        let (snap, _) = run(false);
        assert_eq!(snap.content, "");
        assert_eq!(snap.truncation.output_lines, 0);
    }

    #[test]
    fn the_rolling_tail_stays_bounded_and_starts_at_a_line() {
        let mut m = Memory::default();
        let mut acc = Accumulator::new(2000, 100, &mut m);
        for i in 0..1000 {
            acc.append(format!("line {i:04} of output\n").as_bytes());
            assert!(acc.tail.len() <= 400 + 20);
        }
        acc.finish();
        let snap = acc.snapshot(false);
        assert!(snap.content.starts_with("line "), "{}", snap.content);
        assert!(snap.content.ends_with("line 0999 of output"));
        assert_eq!(snap.truncation.total_lines, 1000);
    }

    #[test]
    fn a_failed_file_is_not_shown() {
        let mut m = Memory {
            fail: true,
            ..Default::default()
        };
        let mut acc = Accumulator::new(1, 51200, &mut m);
        acc.append(b"a\nb\n");
        acc.finish();
        let snap = acc.snapshot(true);
        assert!(snap.truncation.truncated);
        assert_eq!(snap.full_output_path, None);
    }

    /// The snapshot, the file's bytes and the totals after `output` arrives
    /// in chunks of `size` bytes.
    fn fed_in_chunks(output: &[u8], size: usize) -> (String, String, Vec<u8>) {
        let mut m = Memory::default();
        let mut acc = Accumulator::new(2000, 300, &mut m);
        for chunk in output.chunks(size) {
            acc.append(chunk);
        }
        acc.finish();
        let snap = acc.snapshot(true);
        let summary = format!("{:?} {}", snap.truncation, acc.last_line_bytes());
        let file = m.files.values().next().cloned().unwrap_or_default();
        (snap.content, summary, file)
    }

    #[test]
    fn one_large_chunk_gives_what_many_small_ones_give() {
        // Plain lines, escapes, a long last line, characters split at every
        // offset, invalid bytes: the borrowed and trimmed paths agree with
        // the byte-by-byte ones.
        let mut output = Vec::new();
        for i in 0..400 {
            output.extend_from_slice(format!("line {i} é ✓ \x1b[1mbold\x1b[0m\n").as_bytes());
        }
        output.extend_from_slice(b"\xff\xfe half \xe2\x9c");
        output.extend_from_slice("✓ tail without a newline".repeat(40).as_bytes());
        let whole = fed_in_chunks(&output, output.len());
        for size in [1, 2, 3, 7, 64, 65, 599, 600, 601, 4096] {
            assert_eq!(fed_in_chunks(&output, size), whole, "chunks of {size}");
        }
        assert!(whole.0.ends_with("newline"), "{}", whole.0);
        assert_eq!(whole.2, output, "the file keeps the raw bytes");
    }
}

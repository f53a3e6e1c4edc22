//! Text from outside, made safe to show a person on a terminal.
//!
//! Names, descriptions, arguments, paths and messages that a tool, a
//! workspace file, an extension component or the model can choose reach the
//! views a person decides from (`trust`, `ext list`, `audit`, …) and the
//! error lines on stderr. Printed raw, a terminal obeys what they carry: a
//! file named `x\x1b[1A\x1b[2K` moves the cursor up and erases the line
//! above it (a grant, an earlier `curl … | sh`), `\r` rewrites a line from
//! its start, an OSC sequence retitles the window, a right-to-left override
//! (U+202E) shows `txt.exe` for `exe.txt`, and invisible characters hide
//! text a person never sees but the model reads. [`escape`] is the one
//! function every such view uses, so what a person reads is what is there.
//!
//! # The escape form
//!
//! Every character a terminal would obey or draw as nothing, and only those,
//! is written as an escape; everything else (letters of any script, emoji,
//! the backslash) is kept as it is:
//!
//! * the C0 controls U+0000–U+001F and DEL U+007F as `\x` and two lowercase
//!   hex digits: `\x1b`, `\x0d`, `\x0a`, `\x09`, `\x7f`;
//! * the C1 controls U+0080–U+009F, the format characters (Unicode general
//!   category Cf: bidi embeddings, overrides, isolates and marks, zero-width
//!   spaces and joiners, the byte-order mark, the tag characters), the line
//!   and paragraph separators U+2028 and U+2029, and the rest of the
//!   default-ignorable code points (variation selectors, Hangul fillers, the
//!   combining grapheme joiner, …) as `\u{…}` with lowercase hex digits and
//!   no padding: `\u{9b}`, `\u{202e}`, `\u{200b}`, `\u{feff}`, `\u{e0041}`.
//!
//! Variation selectors and tag characters are escaped although they move
//! nothing: they are invisible, and a string of them hides a text (an
//! instruction to the model in a tool's description) from the person who
//! reviews it. The cost is that an emoji written with its presentation
//! selector shows it: `❤\u{fe0f}`.
//!
//! A backslash is not escaped, so a name that holds the four characters
//! `\x1b` reads like one holding an escape character; both are harmless to
//! the terminal, and the JSON forms (`--json`) tell them apart.
//!
//! Only what is shown to a person is escaped. JSON output, the texts the
//! model reads and the values the library returns stay as they are.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

/// `text` with every character a terminal would obey or hide written as an
/// escape (see the module documentation for the form); borrowed when it
/// holds none. A line break is escaped too: the result is one line.
pub fn escape(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(needs_escape) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if (c as u32) < 0x20 || c == '\u{7f}' {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// [`escape`] of each line of a text a view shows as several lines (a
/// tool's description): the line breaks (`\n`) are kept, everything else a
/// terminal would obey is escaped, `\r` included.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    if !text.contains(|c| c != '\n' && needs_escape(c)) {
        return Cow::Borrowed(text);
    }
    let lines: Vec<Cow<'_, str>> = text.split('\n').map(escape).collect();
    Cow::Owned(lines.join("\n"))
}

/// [`escape`] of a path as `Path::display` shows it.
pub fn escape_path(path: &Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

/// [`escape`] of a text shown as a block (a file `read` prints, a tool's
/// result): line breaks and tabs are kept, everything else a terminal would
/// obey or hide is escaped, `\r` included, so a text cannot move the cursor
/// back over what was printed before it or draw a question of its own.
pub fn escape_block(text: &str) -> Cow<'_, str> {
    if !text.contains(|c| c != '\n' && c != '\t' && needs_escape(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(at) = rest.find(['\n', '\t']) {
        out.push_str(&escape(&rest[..at]));
        out.push_str(&rest[at..at + 1]);
        rest = &rest[at + 1..];
    }
    out.push_str(&escape(rest));
    Cow::Owned(out)
}

/// JSON text made safe for a terminal and still the same JSON: each
/// character [`needs_escape`] that `serde_json` leaves raw inside strings
/// (DEL, the C1 controls, bidi and invisible characters) written as a
/// `\uXXXX` escape (a surrogate pair beyond the BMP). `\n`, `\t` and `\r`
/// are kept: `serde_json` escapes them inside strings, so raw ones are the
/// layout of pretty-printed JSON. Anything else below U+0020 cannot occur
/// raw in JSON and is escaped too, for text that only claims to be JSON.
pub fn escape_json(json: &str) -> Cow<'_, str> {
    let hides = |c: char| !matches!(c, '\n' | '\t' | '\r') && needs_escape(c);
    if !json.contains(hides) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if hides(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `write!` and `writeln!` to a `Terminal` write text ([`Form::Text`]).
/// Each write is taken as whole text: `write_fmt` hands over whole `str`
/// pieces, and bytes that are not UTF-8 are shown as U+FFFD on a terminal.
impl<W: std::io::Write> std::io::Write for Terminal<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_bytes(Form::Text, bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// What a [`Terminal`] is given: text for a person, or JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Shown as [`escape_block`] shows it.
    Text,
    /// Shown as [`escape_json`] shows it: the same JSON, nothing a terminal obeys.
    Json,
}

/// The one writer of every view a person reads: whatever a front end
/// prints on stdout, stderr or the controlling terminal goes through a
/// `Terminal`, so a view added tomorrow cannot forget to escape what a tool,
/// a file, an extension or the model chose.
///
/// Where the stream is a terminal, everything written is escaped
/// ([`escape_block`] for text, [`escape_json`] for JSON); a view that also
/// escapes its parts itself is unchanged by this second pass, because an
/// escape is made of printable characters only. Where the stream is a file
/// or a pipe, the bytes are written as they are: `toolhost call read
/// --path a.bin > copy` keeps the file, and `--json` stays exactly what the
/// library returned. A writer's own colours and cursor movement are not
/// written through a `Terminal` (indicatif draws `run`'s view with the
/// texts it was given escaped).
pub struct Terminal<W> {
    out: W,
    escaping: bool,
}

impl<W: std::fmt::Debug> std::fmt::Debug for Terminal<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("out", &self.out)
            .field("escaping", &self.escaping)
            .finish()
    }
}

/// Whether the process's standard output and error are terminals, asked
/// once each.
static STDOUT_IS_TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
static STDERR_IS_TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

impl<W: std::io::Write + std::io::IsTerminal> Terminal<W> {
    /// `out`, escaped when it is a terminal (asked once, into `asked`).
    fn of(out: W, asked: &std::sync::OnceLock<bool>) -> Self {
        let escaping = *asked.get_or_init(|| out.is_terminal());
        Terminal { out, escaping }
    }
}

impl Terminal<std::io::Stdout> {
    /// The process's standard output, escaped when it is a terminal.
    pub fn stdout() -> Self {
        Terminal::of(std::io::stdout(), &STDOUT_IS_TERMINAL)
    }
}

impl Terminal<std::io::Stderr> {
    /// The process's standard error, escaped when it is a terminal.
    pub fn stderr() -> Self {
        Terminal::of(std::io::stderr(), &STDERR_IS_TERMINAL)
    }
}

impl<W: std::io::Write> Terminal<W> {
    /// A writer of `out`, which is a terminal when `terminal` is true (the
    /// controlling terminal `/dev/tty`, or a test's pseudo-terminal).
    pub fn new(out: W, terminal: bool) -> Self {
        Terminal {
            out,
            escaping: terminal,
        }
    }

    /// Whether what is written is escaped (the stream is a terminal).
    pub fn is_terminal(&self) -> bool {
        self.escaping
    }

    /// Writes `text` in `form`, escaped where the stream is a terminal.
    pub fn write(&mut self, form: Form, text: &str) -> std::io::Result<()> {
        if !self.escaping {
            return self.out.write_all(text.as_bytes());
        }
        let shown = match form {
            Form::Text => escape_block(text),
            Form::Json => escape_json(text),
        };
        self.out.write_all(shown.as_bytes())
    }

    /// Writes `bytes` in `form`: as they are to a file or a pipe; on a
    /// terminal as UTF-8 text (an invalid sequence shown as U+FFFD), escaped.
    pub fn write_bytes(&mut self, form: Form, bytes: &[u8]) -> std::io::Result<()> {
        if !self.escaping {
            return self.out.write_all(bytes);
        }
        self.write(form, &String::from_utf8_lossy(bytes))
    }

    /// Writes `text` and a line break.
    pub fn line(&mut self, form: Form, text: &str) -> std::io::Result<()> {
        self.write(form, text)?;
        self.out.write_all(b"\n")
    }

    /// Formats `args` and writes them as text with a line break: what the
    /// front ends' `println!` and `eprintln!` expand to.
    pub fn line_fmt(&mut self, args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
        match args.as_str() {
            Some(text) => self.line(Form::Text, text),
            None => self.line(Form::Text, &args.to_string()),
        }
    }

    /// The stream itself.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Whether [`escape`] writes `c` as an escape: controls, format characters,
/// line and paragraph separators and the other default-ignorable code
/// points.
pub fn needs_escape(c: char) -> bool {
    let c = c as u32;
    if c < 0x20 || (0x7f..=0x9f).contains(&c) {
        return true;
    }
    if c < 0xad {
        return false;
    }
    HIDDEN.iter().any(|&(low, high)| (low..=high).contains(&c))
}

/// Beyond the controls: the code points of general category Cf (format),
/// Zl and Zp, and those with the property Default_Ignorable_Code_Point
/// (Unicode 16), as inclusive ranges in order.
const HIDDEN: &[(u32, u32)] = &[
    (0x00ad, 0x00ad),   // soft hyphen
    (0x034f, 0x034f),   // combining grapheme joiner
    (0x0600, 0x0605),   // Arabic number signs
    (0x061c, 0x061c),   // Arabic letter mark (bidi)
    (0x06dd, 0x06dd),   // Arabic end of ayah
    (0x070f, 0x070f),   // Syriac abbreviation mark
    (0x0890, 0x0891),   // Arabic pound and piastre marks above
    (0x08e2, 0x08e2),   // Arabic disputed end of ayah
    (0x115f, 0x1160),   // Hangul choseong and jungseong fillers
    (0x17b4, 0x17b5),   // Khmer inherent vowels
    (0x180b, 0x180f),   // Mongolian variation selectors and vowel separator
    (0x200b, 0x200f),   // zero-width space, non-joiner, joiner; LRM, RLM
    (0x2028, 0x202e),   // line and paragraph separators; bidi embeddings and overrides
    (0x2060, 0x206f),   // word joiner, invisible operators; bidi isolates; deprecated formats
    (0x3164, 0x3164),   // Hangul filler
    (0xfe00, 0xfe0f),   // variation selectors 1–16
    (0xfeff, 0xfeff),   // zero-width no-break space (byte-order mark)
    (0xffa0, 0xffa0),   // halfwidth Hangul filler
    (0xfff0, 0xfffb),   // reserved; interlinear annotation controls
    (0x110bd, 0x110bd), // Kaithi number sign
    (0x110cd, 0x110cd), // Kaithi number sign above
    (0x13430, 0x1343f), // Egyptian hieroglyph format controls
    (0x1bca0, 0x1bca3), // shorthand format controls
    (0x1d173, 0x1d17a), // musical symbol beam and phrase controls
    (0xe0000, 0xe0fff), // tag characters, variation selectors 17–256, reserved
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_written_as_hex_escapes() {
        assert_eq!(
            escape("a\x1b[1A\x1b[2Kb\rc\nd\te\x7f\0"),
            "a\\x1b[1A\\x1b[2Kb\\x0dc\\x0ad\\x09e\\x7f\\x00"
        );
        assert_eq!(escape("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
        // C1 controls are characters of their own (CSI is U+009B).
        assert_eq!(escape("\u{9b}2K\u{85}"), "\\u{9b}2K\\u{85}");
    }

    #[test]
    fn bidi_and_invisible_characters_are_written_as_unicode_escapes() {
        assert_eq!(escape("photo\u{202e}gpj.exe"), "photo\\u{202e}gpj.exe");
        for (c, shown) in [
            ('\u{202a}', "\\u{202a}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{2069}', "\\u{2069}"),
            ('\u{200b}', "\\u{200b}"),
            ('\u{200f}', "\\u{200f}"),
            ('\u{2028}', "\\u{2028}"),
            ('\u{2029}', "\\u{2029}"),
            ('\u{feff}', "\\u{feff}"),
            ('\u{ad}', "\\u{ad}"),
            ('\u{e0041}', "\\u{e0041}"),
            ('\u{fe0f}', "\\u{fe0f}"),
        ] {
            assert_eq!(escape(&c.to_string()), shown, "{:x}", c as u32);
        }
    }

    #[test]
    fn readable_text_is_kept_and_borrowed() {
        for text in [
            "plain ascii ~!@#$%^&*()",
            "a\\x1b is four characters",
            "Größe: 3 µs, 東京, مرحبا, emoji 🦀",
            "",
        ] {
            assert!(
                matches!(escape(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    #[test]
    fn lines_keep_their_breaks_and_nothing_else() {
        assert_eq!(escape_lines("one\ntwo"), "one\ntwo");
        assert_eq!(
            escape_lines("one\r\n\x1b[1Atwo\u{202e}"),
            "one\\x0d\n\\x1b[1Atwo\\u{202e}"
        );
    }

    #[test]
    fn a_block_keeps_lines_and_tabs_and_nothing_a_terminal_obeys() {
        assert_eq!(escape_block("a\tb\nc"), "a\tb\nc");
        // A file that clears the screen and draws a question of its own.
        assert_eq!(
            escape_block("ok\n\x1b[2J\x1b[HAllow? [o]nce\r\n\u{9b}1A\u{202e}"),
            "ok\n\\x1b[2J\\x1b[HAllow? [o]nce\\x0d\n\\u{9b}1A\\u{202e}"
        );
        assert!(matches!(escape_block("plain\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_for_a_terminal_is_the_same_json() {
        let value = serde_json::json!({"t": "a\u{7f}b\u{9b}c\u{202e}d\u{e0041}\x1b\n"});
        let json = serde_json::to_string_pretty(&value).unwrap();
        let shown = escape_json(&json);
        assert!(!shown.contains(|c: char| needs_escape(c) && !"\n\t\r".contains(c)));
        assert!(shown.contains("\\u007f") && shown.contains("\\udb40\\udc41"));
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn a_terminal_escapes_and_a_pipe_keeps_the_bytes() {
        let text = "x\x1b[2Jy\n";
        let mut terminal = Terminal::new(Vec::new(), true);
        terminal.write(Form::Text, text).unwrap();
        assert_eq!(terminal.into_inner(), b"x\\x1b[2Jy\n");
        let mut pipe = Terminal::new(Vec::new(), false);
        pipe.write(Form::Text, text).unwrap();
        assert_eq!(pipe.into_inner(), text.as_bytes());
        // A view's own escaping is unchanged by the second pass.
        let mut twice = Terminal::new(Vec::new(), true);
        twice.line_fmt(format_args!("{}", escape(text))).unwrap();
        assert_eq!(twice.into_inner(), b"x\\x1b[2Jy\\x0a\n");
    }

    #[test]
    fn the_table_is_in_order_and_disjoint() {
        for pair in HIDDEN.windows(2) {
            assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0, "{pair:x?}");
        }
    }
}

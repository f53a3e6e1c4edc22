//! Pi's truncation helpers (spec §1.3), shared by every built-in tool.
//!
//! Lines are split on `\n`; a single trailing `\n` does not make an extra
//! line and the empty string has no lines. Sizes are UTF-8 bytes.

use serde::Serialize;

/// Default line cap of tool output.
pub const DEFAULT_MAX_LINES: u64 = 2000;
/// Default byte cap of tool output (50 KiB).
pub const DEFAULT_MAX_BYTES: usize = 51200;
/// Cap on one grep output line, in UTF-16 code units.
pub const GREP_MAX_LINE_LENGTH: usize = 500;
/// The line cap Pi passes when only bytes should limit (`Number.MAX_SAFE_INTEGER`).
pub const NO_LINE_LIMIT: u64 = 9_007_199_254_740_991;

/// Pi's `formatSize`: `512B`, `50.0KB`, `1.5MB` (one decimal, ties rounded up
/// like JavaScript's `toFixed`).
pub fn format_size(bytes: usize) -> String {
    const KIB: u128 = 1024;
    const MIB: u128 = 1024 * 1024;
    let b = bytes as u128;
    let one_decimal = |unit: u128| {
        // round(b * 10 / unit) with ties away from zero, in exact integers.
        let scaled = b * 10;
        let tenths = scaled / unit + u128::from(2 * (scaled % unit) >= unit);
        format!("{}.{}", tenths / 10, tenths % 10)
    };
    if b < KIB {
        format!("{bytes}B")
    } else if b < MIB {
        format!("{}KB", one_decimal(KIB))
    } else {
        format!("{}MB", one_decimal(MIB))
    }
}

/// Which cap cut the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// Pi's `TruncationResult`, serialised as `details.truncation` (field order kept).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: u64,
    pub max_bytes: usize,
}

impl Truncation {
    /// `{"truncation": …}` for a result's details.
    pub fn to_details(&self) -> serde_json::Value {
        serde_json::json!({ "truncation": self })
    }
}

/// Incremental `truncateHead`: feed the lines of `content.split('\n')` in order
/// (the trailing empty piece included), then [`finish`](HeadTruncator::finish).
///
/// Keeps only what the output can hold, so a tool can truncate a file larger
/// than its memory while counting every line and byte.
#[derive(Debug)]
pub struct HeadTruncator {
    max_lines: u64,
    max_bytes: usize,
    /// The last piece fed (its text, kept only while the output has room, and
    /// its length), processed when the next one arrives: a final empty piece is
    /// a trailing newline, not a line.
    pending: Option<(String, usize)>,
    pieces: usize,
    total_bytes: usize,
    total_lines: usize,
    first_line_bytes: usize,
    output: String,
    output_lines: usize,
    output_bytes: usize,
    stopped_by_bytes: bool,
    stopped: bool,
}

impl HeadTruncator {
    pub fn new(max_lines: u64, max_bytes: usize) -> Self {
        HeadTruncator {
            max_lines,
            max_bytes,
            pending: None,
            pieces: 0,
            total_bytes: 0,
            total_lines: 0,
            first_line_bytes: 0,
            output: String::new(),
            output_lines: 0,
            output_bytes: 0,
            stopped_by_bytes: false,
            stopped: false,
        }
    }

    /// Feed the next piece of `content.split('\n')`.
    pub fn push(&mut self, piece: &str) {
        self.total_bytes += piece.len() + usize::from(self.pieces > 0);
        self.pieces += 1;
        let text = if self.stopped {
            String::new()
        } else {
            piece.to_string()
        };
        if let Some((previous, len)) = self.pending.replace((text, piece.len())) {
            self.take_line(&previous, len);
        }
    }

    /// Whether the output is complete: later lines are only counted.
    pub fn is_full(&self) -> bool {
        self.stopped
    }

    fn take_line(&mut self, line: &str, len: usize) {
        if self.total_lines == 0 {
            self.first_line_bytes = len;
        }
        self.total_lines += 1;
        if self.stopped {
            return;
        }
        if self.output_lines as u64 >= self.max_lines {
            self.stopped = true;
            return;
        }
        let cost = line.len() + usize::from(self.output_lines > 0);
        if self.output_bytes + cost > self.max_bytes {
            self.stopped = true;
            self.stopped_by_bytes = true;
            return;
        }
        if self.output_lines > 0 {
            self.output.push('\n');
        }
        self.output.push_str(line);
        self.output_lines += 1;
        self.output_bytes += cost;
    }

    /// The result, exactly as Pi's `truncateHead` over the joined pieces.
    pub fn finish(mut self) -> Truncation {
        let mut trailing_newline = false;
        if let Some((last, len)) = self.pending.take() {
            if len == 0 {
                // `"a\n"` is one line; `""` is none. The piece still counted in bytes.
                trailing_newline = self.pieces > 1;
            } else {
                self.take_line(&last, len);
            }
        }
        let fits = self.total_lines as u64 <= self.max_lines && self.total_bytes <= self.max_bytes;
        if fits {
            let mut content = self.output;
            if trailing_newline {
                content.push('\n');
            }
            return Truncation {
                content,
                truncated: false,
                truncated_by: None,
                total_lines: self.total_lines,
                total_bytes: self.total_bytes,
                output_lines: self.total_lines,
                output_bytes: self.total_bytes,
                last_line_partial: false,
                first_line_exceeds_limit: false,
                max_lines: self.max_lines,
                max_bytes: self.max_bytes,
            };
        }
        if self.first_line_bytes > self.max_bytes {
            return Truncation {
                content: String::new(),
                truncated: true,
                truncated_by: Some(TruncatedBy::Bytes),
                total_lines: self.total_lines,
                total_bytes: self.total_bytes,
                output_lines: 0,
                output_bytes: 0,
                last_line_partial: false,
                first_line_exceeds_limit: true,
                max_lines: self.max_lines,
                max_bytes: self.max_bytes,
            };
        }
        let by_lines =
            self.output_lines as u64 >= self.max_lines && self.output_bytes <= self.max_bytes;
        let truncated_by = if by_lines || !self.stopped_by_bytes {
            TruncatedBy::Lines
        } else {
            TruncatedBy::Bytes
        };
        Truncation {
            output_bytes: self.output.len(),
            content: self.output,
            truncated: true,
            truncated_by: Some(truncated_by),
            total_lines: self.total_lines,
            total_bytes: self.total_bytes,
            output_lines: self.output_lines,
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: self.max_lines,
            max_bytes: self.max_bytes,
        }
    }
}

/// Pi's `truncateHead`: keep whole lines from the start.
pub fn truncate_head(content: &str, max_lines: u64, max_bytes: usize) -> Truncation {
    let mut t = HeadTruncator::new(max_lines, max_bytes);
    for piece in content.split('\n') {
        t.push(piece);
    }
    t.finish()
}

/// Pi's `truncateTail`: keep whole lines from the end; when even the last line
/// is too long, keep its last `max_bytes` bytes (from a character boundary).
pub fn truncate_tail(content: &str, max_lines: u64, max_bytes: usize) -> Truncation {
    let total_bytes = content.len();
    let lines = split_lines(content);
    let total_lines = lines.len();
    if total_lines as u64 <= max_lines && total_bytes <= max_bytes {
        return Truncation {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes,
            output_lines: total_lines,
            output_bytes: total_bytes,
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        };
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut stopped_by_bytes = false;
    let mut last_line_partial = false;
    for line in lines.iter().rev() {
        if kept.len() as u64 >= max_lines {
            break;
        }
        let cost = line.len() + usize::from(!kept.is_empty());
        if bytes + cost > max_bytes {
            stopped_by_bytes = true;
            if kept.is_empty() {
                let tail = tail_at_char_boundary(line, max_bytes);
                bytes = tail.len();
                kept.push(tail);
                last_line_partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += cost;
    }
    kept.reverse();
    let by_lines = kept.len() as u64 >= max_lines && bytes <= max_bytes;
    let truncated_by = if by_lines || !stopped_by_bytes {
        TruncatedBy::Lines
    } else {
        TruncatedBy::Bytes
    };
    let content = kept.join("\n");
    Truncation {
        output_bytes: content.len(),
        output_lines: kept.len(),
        content,
        truncated: true,
        truncated_by: Some(truncated_by),
        total_lines,
        total_bytes,
        last_line_partial,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// The last at most `max_bytes` bytes of `s`, starting at a character boundary.
fn tail_at_char_boundary(s: &str, max_bytes: usize) -> &str {
    let mut start = s.len().saturating_sub(max_bytes);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The lines of `content` by the rule above.
pub fn split_lines(content: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = content.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// Pi's `truncateLine`: cut a line longer than `max_units` UTF-16 code units
/// and mark it; never cuts inside a character. Returns the line and whether it
/// was cut.
pub fn truncate_line(line: &str, max_units: usize) -> (String, bool) {
    let mut units = 0usize;
    for (i, c) in line.char_indices() {
        let width = c.len_utf16();
        if units + width > max_units {
            return (format!("{}... [truncated]", &line[..i]), true);
        }
        units += width;
    }
    (line.to_string(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_size_matches_pi() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(61440), "60.0KB");
        assert_eq!(format_size(60000), "58.6KB");
        // 1280 / 1024 = 1.25 exactly: JavaScript's toFixed rounds the tie up.
        assert_eq!(format_size(1280), "1.3KB");
        assert_eq!(format_size(1024 * 1024), "1.0MB");
    }

    #[test]
    fn head_counts_trailing_newline_as_no_line() {
        let t = truncate_head("a\nb\n", 2000, 51200);
        assert_eq!((t.total_lines, t.total_bytes, t.truncated), (2, 4, false));
        assert_eq!(t.content, "a\nb\n");
        assert_eq!(truncate_head("", 2000, 51200).total_lines, 0);
        assert_eq!(truncate_head("\n", 2000, 51200).total_lines, 1);
    }

    #[test]
    fn head_line_cap() {
        let content: Vec<String> = (1..=2500).map(|i| format!("Line {i}")).collect();
        let t = truncate_head(&content.join("\n"), 2000, 51200);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.total_lines, t.total_bytes), (2500, 23892));
        assert_eq!((t.output_lines, t.output_bytes), (2000, 18892));
    }

    #[test]
    fn head_first_line_too_long() {
        let content = format!("{}\nshort", "y".repeat(61440));
        let t = truncate_head(&content, 2000, 51200);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(
            (t.total_lines, t.total_bytes, t.output_lines),
            (2, 61446, 0)
        );
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn head_byte_cap_keeps_whole_lines() {
        let t = truncate_head("aaaa\nbbbb\ncccc", 2000, 9);
        assert_eq!(t.content, "aaaa\nbbbb");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn tail_keeps_end_and_partial_last_line() {
        let t = truncate_tail("1\n2\n3\n4", 2, 51200);
        assert_eq!(t.content, "3\n4");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        let t = truncate_tail("short\néééé", 2000, 5);
        assert!(t.last_line_partial);
        assert_eq!(t.content, "éé");
    }

    #[test]
    fn truncate_line_never_splits_a_character() {
        let (line, cut) = truncate_line(&"😀".repeat(300), 500);
        assert!(cut);
        assert_eq!(line, format!("{}... [truncated]", "😀".repeat(250)));
        let (line, cut) = truncate_line("short", 500);
        assert_eq!((line.as_str(), cut), ("short", false));
    }
}

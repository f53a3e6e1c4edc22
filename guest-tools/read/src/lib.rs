//! The built-in `read` tool (spec §1.6 with §7.1, §7.2, §7.23, §7.24).
//!
//! Imports only `fs-read`. Text files are streamed in chunks twice (count the
//! lines, then take the selected ones), so a file larger than the tool's
//! memory is read with bounded memory while every count Pi reports stays exact.

mod image;

use toolhost_sdk::args;
use toolhost_sdk::fs::{self, EntryKind, ErrorCode, FsError, Metadata};
use toolhost_sdk::js;
use toolhost_sdk::path::resolve_to_cwd;
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, HeadTruncator, TruncatedBy, format_size,
};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};
use unicode_normalization::UnicodeNormalization;

const SCHEMA: &str = r#"{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"Path to the file to read (relative or absolute)"},"offset":{"type":"number","description":"Line number to start reading from (1-indexed)"},"limit":{"type":"number","description":"Maximum number of lines to read"}}}"#;

const DESCRIPTION: &str = "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.";

/// Bytes inspected for image magic and for NUL bytes (binary detection).
const SNIFF_BYTES: usize = 8192;

struct Read;

impl Tool for Read {
    fn definition(&self) -> Definition {
        Definition::new("read", "read", DESCRIPTION, SCHEMA)
            .prompt_snippet("Read file contents")
            .prompt_guideline("Use read to examine files instead of cat or sed.")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let raw = args::string(&args, "path");
        let offset = args::number(&args, "offset");
        let limit = args::number(&args, "limit");

        let (abs, meta) = locate(raw, ctx)?;
        if meta.kind == EntryKind::Directory {
            return Err(ToolError::new(format!(
                "Path is a directory: {raw}. Use ls to list it."
            )));
        }
        let file =
            FileSource::open(&abs, meta.size).map_err(|e| fail(&e, "access", &abs, raw, ctx))?;
        let head = &file.first[..file.first.len().min(SNIFF_BYTES)];
        if let Some(mime) = image::sniff(head) {
            return image::output(&file, mime).map_err(|e| fail(&e, "read", &abs, raw, ctx));
        }
        if head.contains(&0) {
            return Err(ToolError::new(format!(
                "Binary file: {raw} ({}). Use bash (e.g. xxd, file) to inspect it.",
                format_size(meta.size as usize)
            )));
        }
        read_text(ctx, &file, raw, offset, limit).map_err(|e| match e {
            TextError::Fs(e) => fail(&e, "read", &abs, raw, ctx),
            TextError::Tool(e) => e,
        })
    }
}

toolhost_sdk::export_tools!(Read);

fn fail(err: &FsError, op: &str, abs: &str, raw: &str, ctx: &Context) -> ToolError {
    ToolError::new(fs::error_text(err, op, abs, raw, ctx))
}

/// Resolve the argument and find the file, trying Pi's fallbacks for names a
/// model often gets subtly wrong (macOS screenshot spaces, NFD, curly quotes).
fn locate(raw: &str, ctx: &Context) -> Result<(String, Metadata), ToolError> {
    let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());
    let first_err = match fs::stat(&abs) {
        Ok(meta) => return Ok((abs, meta)),
        Err(e) => e,
    };
    if first_err.code == ErrorCode::NotFound {
        for candidate in fallbacks(&abs) {
            if let Ok(meta) = fs::stat(&candidate) {
                return Ok((candidate, meta));
            }
        }
    }
    Err(fail(&first_err, "access", &abs, raw, ctx))
}

/// Pi's `resolveReadPathAsync` variants, in its order.
fn fallbacks(abs: &str) -> Vec<String> {
    let am_pm = screenshot_spaces(abs);
    let nfd: String = abs.nfd().collect();
    let curly = abs.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    let mut out = Vec::new();
    for c in [am_pm, nfd, curly, nfd_curly] {
        if c != abs && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// `" AM."` / `" PM."` (any case) → narrow no-break space + AM/PM + `.`.
fn screenshot_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(' ') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let marker = tail.get(..3).map(|m| m.to_ascii_uppercase());
        match marker.as_deref() {
            Some("AM.") | Some("PM.") => {
                out.push('\u{202F}');
                out.push_str(&tail[..2]);
                out.push('.');
                rest = &tail[3..];
            }
            _ => {
                out.push(' ');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A file being read: its first chunk, and whether that is all of it.
pub(crate) struct FileSource {
    abs: String,
    pub(crate) first: Vec<u8>,
    complete: bool,
}

impl FileSource {
    fn open(abs: &str, size: u64) -> Result<Self, FsError> {
        let first = fs::read_chunk(abs, 0, fs::MAX_READ_CHUNK)?;
        let complete = (first.len() as u64) < fs::MAX_READ_CHUNK || first.len() as u64 >= size;
        Ok(FileSource {
            abs: abs.to_string(),
            first,
            complete,
        })
    }

    /// Every chunk of the file in order, until `f` returns `false`.
    pub(crate) fn scan(&self, mut f: impl FnMut(&[u8]) -> bool) -> Result<(), FsError> {
        if self.complete {
            f(&self.first);
            Ok(())
        } else {
            fs::for_each_chunk(&self.abs, f)
        }
    }

    /// The whole file in memory (images).
    pub(crate) fn all(&self) -> Result<Vec<u8>, FsError> {
        if self.complete {
            return Ok(self.first.clone());
        }
        let mut out = Vec::new();
        self.scan(|chunk| {
            out.extend_from_slice(chunk);
            true
        })?;
        Ok(out)
    }

    /// Call `f(index, line)` for the pieces of the file split on `\n` (the
    /// last piece included even when empty) until `f` returns `false`.
    fn lines(&self, mut f: impl FnMut(usize, &[u8]) -> bool) -> Result<(), FsError> {
        let mut carry: Vec<u8> = Vec::new();
        let mut index = 0usize;
        let mut go_on = true;
        self.scan(|chunk| {
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', chunk) {
                let keep = if carry.is_empty() {
                    f(index, &chunk[start..nl])
                } else {
                    carry.extend_from_slice(&chunk[start..nl]);
                    let k = f(index, &carry);
                    carry.clear();
                    k
                };
                index += 1;
                start = nl + 1;
                if !keep {
                    go_on = false;
                    return false;
                }
            }
            carry.extend_from_slice(&chunk[start..]);
            true
        })?;
        if go_on {
            f(index, &carry);
        }
        Ok(())
    }
}

enum TextError {
    Fs(FsError),
    Tool(ToolError),
}

impl From<FsError> for TextError {
    fn from(e: FsError) -> Self {
        TextError::Fs(e)
    }
}

/// The text path of Pi's read, with JavaScript's number semantics for
/// `offset`/`limit` (fractions, negatives) kept.
fn read_text(
    ctx: &Context,
    file: &FileSource,
    raw: &str,
    offset: Option<f64>,
    limit: Option<f64>,
) -> Result<ToolOutput, TextError> {
    // Pass 1: the number of pieces `text.split("\n")` yields.
    let mut total = 1usize;
    file.scan(|chunk| {
        total += memchr::memchr_iter(b'\n', chunk).count();
        true
    })?;
    if ctx.is_cancelled() {
        return Err(TextError::Tool(ToolError::aborted()));
    }
    let n = total as f64;

    // `offset ? Math.max(0, offset - 1) : 0` (0 and absent are falsy).
    let start_line = match offset {
        Some(o) if o != 0.0 && !o.is_nan() => (o - 1.0).max(0.0),
        _ => 0.0,
    };
    if start_line >= n {
        return Err(TextError::Tool(ToolError::new(format!(
            "Offset {} is beyond end of file ({total} lines total)",
            js::number(offset.unwrap_or(0.0))
        ))));
    }
    let end_line = limit.map(|l| (start_line + l).min(n));
    let (from, to) = js_slice_bounds(start_line, end_line, total);

    // Pass 2: feed the selected lines to the truncator.
    let mut truncator = HeadTruncator::new(DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let mut first_line_bytes = 0usize;
    file.lines(|i, line| {
        if i >= to {
            return false;
        }
        if i >= from {
            let text = String::from_utf8_lossy(line);
            if i == from {
                first_line_bytes = text.len();
            }
            truncator.push(&text);
        }
        true
    })?;
    let t = truncator.finish();

    let start_display = start_line + 1.0;
    let num = js::number;
    if t.first_line_exceeds_limit {
        let text = format!(
            "[Line {} is {}, exceeds {} limit. Use bash: sed -n '{}p' {} | head -c {DEFAULT_MAX_BYTES}]",
            num(start_display),
            format_size(first_line_bytes),
            format_size(DEFAULT_MAX_BYTES),
            num(start_display),
            shell_quote(raw),
        );
        return Ok(ToolOutput::text(text).with_details(t.to_details()));
    }
    if t.truncated {
        let end_display = start_display + t.output_lines as f64 - 1.0;
        let next = end_display + 1.0;
        let limit_note = match t.truncated_by {
            Some(TruncatedBy::Bytes) => format!(" ({} limit)", format_size(DEFAULT_MAX_BYTES)),
            _ => String::new(),
        };
        let text = format!(
            "{}\n\n[Showing lines {}-{} of {total}{limit_note}. Use offset={} to continue.]",
            t.content,
            num(start_display),
            num(end_display),
            num(next),
        );
        return Ok(ToolOutput::text(text).with_details(t.to_details()));
    }
    if let Some(end_line) = end_line {
        let user_limited = end_line - start_line;
        if start_line + user_limited < n {
            let remaining = n - (start_line + user_limited);
            let next = start_line + user_limited + 1.0;
            let text = format!(
                "{}\n\n[{} more lines in file. Use offset={} to continue.]",
                t.content,
                num(remaining),
                num(next)
            );
            return Ok(ToolOutput::text(text));
        }
    }
    Ok(ToolOutput::text(t.content))
}

/// `Array.prototype.slice(start, end)` index bounds over `len` elements.
fn js_slice_bounds(start: f64, end: Option<f64>, len: usize) -> (usize, usize) {
    let clamp = |x: f64| -> usize {
        let x = x.trunc();
        if x < 0.0 {
            (len as f64 + x).max(0.0) as usize
        } else {
            x.min(len as f64) as usize
        }
    };
    let from = clamp(start);
    let to = end.map_or(len, clamp);
    (from, to.max(from))
}

/// Quote a path for a POSIX shell command (spec §7.24).
fn shell_quote(path: &str) -> String {
    format!("'{}'", path.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_bounds_follow_javascript() {
        assert_eq!(js_slice_bounds(0.0, None, 3), (0, 3));
        assert_eq!(js_slice_bounds(1.5, Some(3.0), 5), (1, 3));
        assert_eq!(js_slice_bounds(0.0, Some(-1.0), 5), (0, 4));
        assert_eq!(js_slice_bounds(2.0, Some(1.0), 5), (2, 2));
    }

    #[test]
    fn screenshot_names() {
        assert_eq!(
            screenshot_spaces("/s/Shot 10.22.01 PM.png"),
            "/s/Shot 10.22.01\u{202F}PM.png"
        );
        assert_eq!(screenshot_spaces("/a b"), "/a b");
    }

    #[test]
    fn quotes_paths() {
        assert_eq!(shell_quote("it's.txt"), r"'it'\''s.txt'");
    }
}

//! `wc`: count the lines, words, characters and bytes of files, as `wc` does.
//!
//! An example toolhost extension on the Rust SDK. It reads files through the
//! host's `fs-read` Operations (the SDK's [`fs`] module), so the component
//! imports `toolhost:tool/fs-read` and loads only once the user grants it
//! directories in `toolhost.toml`:
//!
//! ```toml
//! [extensions.wordcount]
//! fs-read = ["docs"]
//! ```
//!
//! The host checks every path against the granted directories, whatever the
//! tool asks for, and validates the arguments against [`SCHEMA`] before
//! `execute` runs.

use toolhost_sdk::fs::{self, EntryKind, ErrorCode, FsError};
use toolhost_sdk::path::{relative_to, resolve_to_cwd};
use toolhost_sdk::serde_json::{Value, json};
use toolhost_sdk::{Content, Context, Definition, Tool, ToolError, ToolOutput};

const SCHEMA: &str = r#"{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"A file, or a directory whose files are all counted (recursively, skipping names that start with a dot). Relative paths are relative to the workspace."}}}"#;

/// The JSON Schema of its structured results: the counts of each file, their
/// total, and whether every file was counted. The host checks every result
/// against it, and MCP clients read it as the tool's `outputSchema`.
const OUTPUT_SCHEMA: &str = r##"{"type":"object","required":["files","total","complete"],"properties":{"files":{"type":"array","items":{"$ref":"#/$defs/counts","required":["path"]}},"total":{"$ref":"#/$defs/counts"},"complete":{"type":"boolean"}},"$defs":{"counts":{"type":"object","required":["lines","words","chars","bytes"],"properties":{"path":{"type":"string"},"lines":{"type":"integer","minimum":0},"words":{"type":"integer","minimum":0},"chars":{"type":"integer","minimum":0},"bytes":{"type":"integer","minimum":0}}}}}"##;

const DESCRIPTION: &str = "Count the lines, words, characters and bytes of a file, or of every file in a directory (recursively), like `wc`. Lines are newline characters; words are runs of characters between ASCII whitespace; characters are UTF-8 characters. Counts at most 1000 files.";

/// Files counted per call; a larger tree is cut there and says so.
const MAX_FILES: usize = 1000;
/// Directory levels followed; deeper ones (or a symlink loop) are not entered.
const MAX_DEPTH: usize = 32;
/// A progress update every this many files.
const PROGRESS_EVERY: usize = 100;

struct WordCount;

impl Tool for WordCount {
    fn definition(&self) -> Definition {
        Definition::new("wc", "Word count", DESCRIPTION, SCHEMA)
            .prompt_snippet("Count lines, words, characters and bytes of files")
            .output_schema(OUTPUT_SCHEMA)
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let raw = args["path"].as_str().unwrap_or(".");
        let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());

        let mut files = Vec::new();
        let complete = collect(ctx, raw, &abs, 0, &mut files)?;
        if files.is_empty() {
            return Err(ToolError::new(format!("No files to count in {raw}")));
        }

        let mut rows: Vec<(String, Counts)> = Vec::with_capacity(files.len());
        for (i, file) in files.iter().enumerate() {
            ctx.check_cancelled()?;
            let counts = count_file(file).map_err(|e| fs_error(ctx, &e, raw))?;
            rows.push((shown(ctx, file), counts));
            if (i + 1) % PROGRESS_EVERY == 0 {
                ctx.update(
                    vec![Content::Text(format!(
                        "Counted {} of {} files",
                        i + 1,
                        files.len()
                    ))],
                    None,
                );
            }
        }

        let total = rows
            .iter()
            .fold(Counts::default(), |acc, (_, c)| acc.add(c));
        let mut text = table(&rows, (rows.len() > 1).then_some(&total));
        if !complete {
            text.push_str(&format!(
                "\n\n[Stopped after {MAX_FILES} files. Count a subdirectory for the rest.]"
            ));
        }
        let counted = json!({
            "files": rows.iter().map(|(path, c)| {
                let mut v = c.to_json();
                v["path"] = json!(path);
                v
            }).collect::<Vec<_>>(),
            "total": total.to_json(),
            "complete": complete,
        });
        // The same counts as details (for Pi's loops) and as structured
        // content (for MCP clients).
        Ok(ToolOutput::text(text)
            .with_details(counted.clone())
            .with_structured(counted))
    }
}

toolhost_sdk::export_tools!(WordCount);

/// Counts of one file, or a sum of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    lines: u64,
    words: u64,
    chars: u64,
    bytes: u64,
}

impl Counts {
    fn add(self, other: &Counts) -> Counts {
        Counts {
            lines: self.lines + other.lines,
            words: self.words + other.words,
            chars: self.chars + other.chars,
            bytes: self.bytes + other.bytes,
        }
    }

    fn to_json(self) -> Value {
        json!({"lines": self.lines, "words": self.words, "chars": self.chars, "bytes": self.bytes})
    }
}

/// Counts a byte stream fed in chunks of any size (a word or a character may
/// span two chunks).
#[derive(Default)]
struct Counter {
    counts: Counts,
    in_word: bool,
}

impl Counter {
    fn feed(&mut self, chunk: &[u8]) {
        let c = &mut self.counts;
        c.bytes += chunk.len() as u64;
        for &b in chunk {
            if b == b'\n' {
                c.lines += 1;
            }
            // Every byte but a UTF-8 continuation byte starts a character.
            if b & 0xC0 != 0x80 {
                c.chars += 1;
            }
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C) {
                self.in_word = false;
            } else if !self.in_word {
                self.in_word = true;
                c.words += 1;
            }
        }
    }
}

fn count_file(path: &str) -> Result<Counts, (FsError, String)> {
    let mut counter = Counter::default();
    fs::for_each_chunk(path, |chunk| {
        counter.feed(chunk);
        true
    })
    .map_err(|e| (e, path.to_string()))?;
    Ok(counter.counts)
}

/// Gather the files under `abs` (the argument `raw`, resolved) in name order.
/// Returns `false` when [`MAX_FILES`] cut the list.
fn collect(
    ctx: &Context,
    raw: &str,
    abs: &str,
    depth: usize,
    files: &mut Vec<String>,
) -> Result<bool, ToolError> {
    ctx.check_cancelled()?;
    let meta = fs::stat(abs).map_err(|e| fs_error(ctx, &(e, abs.to_string()), raw))?;
    if meta.kind != EntryKind::Directory {
        if files.len() == MAX_FILES {
            return Ok(false);
        }
        files.push(abs.to_string());
        return Ok(true);
    }
    if depth > MAX_DEPTH {
        return Ok(true);
    }
    let mut entries = fs::list_dir(abs).map_err(|e| fs_error(ctx, &(e, abs.to_string()), raw))?;
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for entry in entries {
        if entry.name.starts_with('.') {
            continue;
        }
        let child = format!("{}/{}", abs.trim_end_matches('/'), entry.name);
        let complete = match entry.kind {
            Some(EntryKind::File) | Some(EntryKind::Directory) => {
                collect(ctx, raw, &child, depth + 1, files)?
            }
            // A dangling symlink, one out of the grants, a device: not counted.
            _ => true,
        };
        if !complete {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The model-facing text of a failed file operation.
fn fs_error(ctx: &Context, (err, path): &(FsError, String), raw: &str) -> ToolError {
    let shown = shown(ctx, path);
    match err.code {
        ErrorCode::Cancelled => ToolError::aborted(),
        ErrorCode::OutsideRoots => ToolError::new(format!(
            "{raw} is outside the directories this extension may read ({})",
            if ctx.roots.is_empty() {
                "none".to_string()
            } else {
                ctx.roots.join(", ")
            }
        )),
        ErrorCode::NotFound => ToolError::new(format!("No such file or directory: {shown}")),
        ErrorCode::PermissionDenied => ToolError::new(format!("Permission denied: {shown}")),
        _ => ToolError::new(format!("Cannot read {shown}: {}", err.message)),
    }
}

/// A path as the model should see it: relative to the workspace when inside it.
fn shown(ctx: &Context, abs: &str) -> String {
    match relative_to(&ctx.cwd, abs) {
        rel if rel.is_empty() => ".".to_string(),
        rel => rel,
    }
}

/// `wc`-style columns, right-aligned, with a total row when given.
fn table(rows: &[(String, Counts)], total: Option<&Counts>) -> String {
    let all = rows
        .iter()
        .map(|(p, c)| (p.as_str(), c))
        .chain(total.map(|t| ("total", t)));
    let cells: Vec<(&str, [String; 4])> = all
        .map(|(p, c)| {
            (
                p,
                [c.lines, c.words, c.chars, c.bytes].map(|n| n.to_string()),
            )
        })
        .collect();
    let headers = ["lines", "words", "chars", "bytes"];
    let widths: Vec<usize> = (0..4)
        .map(|i| {
            cells
                .iter()
                .map(|(_, n)| n[i].len())
                .chain([headers[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cols: [&str; 4], path: &str| {
        let mut s = String::new();
        for (i, col) in cols.iter().enumerate() {
            s.push_str(&format!("{col:>w$}  ", w = widths[i]));
        }
        s.push_str(path);
        s
    };
    let mut out = vec![line(headers, "path")];
    for (path, n) in &cells {
        out.push(line([&n[0], &n[1], &n[2], &n[3]], path));
    }
    out.join("\n")
}

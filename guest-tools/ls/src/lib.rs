//! The built-in `ls` tool (spec §1.13 with §7.1, §7.2, §7.22).
//!
//! Imports only `fs-read`. Entries are sorted by ICU root collation of the
//! lowercased names, as Pi's `localeCompare` does, then by exact name so the
//! order never depends on the filesystem.
//!
//! A limit below 1 is an error under Pi 0.85 (§7.22: Pi listed nothing and
//! said `(empty directory)`); Pi 1.6 reads it as `max(1, floor(limit))`
//! (docs/pi-1.6.md §3.8).

use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed};
use toolhost_sdk::args;
use toolhost_sdk::fs::{self, EntryKind, ErrorCode};
use toolhost_sdk::js;
use toolhost_sdk::notices::{self, Notices};
use toolhost_sdk::path::resolve_to_cwd;
use toolhost_sdk::pi;
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::truncate::{DEFAULT_MAX_BYTES, NO_LINE_LIMIT, truncate_head};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};

const SCHEMA: &str = r#"{"type":"object","properties":{"path":{"type":"string","description":"Directory to list (default: current directory)"},"limit":{"type":"number","description":"Maximum number of entries to return (default: 500)"}}}"#;

const DESCRIPTION: &str = "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first).";

const DEFAULT_LIMIT: f64 = 500.0;

struct Ls;

impl Tool for Ls {
    fn definition(&self) -> Definition {
        Definition::new("ls", "ls", DESCRIPTION, SCHEMA).prompt_snippet("List directory contents")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let raw = args::path_or_cwd(&args);
        let limit = args::number(&args, "limit").unwrap_or(DEFAULT_LIMIT);
        let limit = if pi::profile().since_1_5() {
            notices::at_least_one(limit)
        } else if limit.is_nan() || limit <= 0.0 {
            return Err(ToolError::new(format!(
                "Invalid limit: {}. Use a positive number of entries.",
                js::number(limit)
            )));
        } else {
            limit
        };

        let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());
        let meta = fs::stat(&abs).map_err(|e| match e.code {
            // Pi asks `existsSync`, which is false for both.
            ErrorCode::NotFound | ErrorCode::NotADirectory => {
                ToolError::new(format!("Path not found: {abs}"))
            }
            _ => ToolError::new(fs::error_text(&e, "stat", &abs, raw, ctx)),
        })?;
        if meta.kind != EntryKind::Directory {
            return Err(ToolError::new(format!("Not a directory: {abs}")));
        }
        let mut entries = fs::list_dir(&abs).map_err(|e| match e.code {
            ErrorCode::OutsideRoots | ErrorCode::Cancelled => {
                ToolError::new(fs::error_text(&e, "scandir", &abs, raw, ctx))
            }
            code => ToolError::new(format!(
                "Cannot read directory: {}",
                fs::node_message(code, "scandir", &abs)
            )),
        })?;
        ctx.check_cancelled()?;

        let collator = collator();
        let mut keyed: Vec<(String, fs::DirEntry)> = entries
            .drain(..)
            .map(|e| (e.name.to_lowercase(), e))
            .collect();
        keyed
            .sort_by(|(ka, a), (kb, b)| collator.compare(ka, kb).then_with(|| a.name.cmp(&b.name)));

        let mut lines: Vec<String> = Vec::new();
        let mut limit_reached = false;
        for (_, entry) in &keyed {
            if lines.len() as f64 >= limit {
                limit_reached = true;
                break;
            }
            // Entries whose target cannot be reached (broken symlinks, links
            // out of the granted roots) are skipped, as Pi skips failed stats.
            match entry.kind {
                Some(EntryKind::Directory) => lines.push(format!("{}/", entry.name)),
                Some(_) => lines.push(entry.name.clone()),
                None => {}
            }
        }
        if lines.is_empty() {
            return Ok(ToolOutput::text("(empty directory)"));
        }

        let truncation = truncate_head(&lines.join("\n"), NO_LINE_LIMIT, DEFAULT_MAX_BYTES);
        let mut notices = Notices::new();
        if limit_reached {
            notices.limit_reached("entries", limit, "", "entryLimitReached");
        }
        notices.truncated(&truncation, DEFAULT_MAX_BYTES);
        Ok(notices.finish(truncation.content))
    }
}

toolhost_sdk::export_tools!(Ls);

/// ICU root collation, default options: what `localeCompare` uses.
fn collator() -> CollatorBorrowed<'static> {
    // The root data is compiled into this component, so this cannot fail at
    // run time unless the build itself is broken.
    Collator::try_new(Default::default(), CollatorOptions::default())
        .expect("ICU root collation data is compiled in")
}

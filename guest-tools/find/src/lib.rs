//! The built-in `find` tool (spec §1.12 with §7.1, §7.17–§7.19, §7.21).
//!
//! Imports only `search`: the host walks natively with fd's rules as Pi runs
//! fd (`--glob --hidden`, `--full-path` with a `**/` prefix for patterns with
//! `/`, smart case, directories with a trailing `/`) and returns the entries
//! in path order. This component applies Pi's arguments and formats Pi's
//! output, notices and details.
//!
//! Where toolhost differs from Pi (spec §7): `.git` is never listed; results
//! are sorted and the limit keeps the first N, with the notice only when more
//! exist; an unreadable path adds a warning notice; errors have our own texts
//! (`Path not found: {abs}`, `Invalid glob '{glob}': {reason}`,
//! `Not a directory: {abs}`); a limit that is not a positive whole number is
//! an error (fd refused it too, with its own usage text).

use toolhost_sdk::args;
use toolhost_sdk::js;
use toolhost_sdk::notices::Notices;
use toolhost_sdk::path::resolve_to_cwd;
use toolhost_sdk::search::{self, GlobRequest, GlobResult, SearchError, warning_notice};
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::truncate::{DEFAULT_MAX_BYTES, NO_LINE_LIMIT, truncate_head};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput, fs};

const SCHEMA: &str = r#"{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string","description":"Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"},"path":{"type":"string","description":"Directory to search in (default: current directory)"},"limit":{"type":"number","description":"Maximum number of results (default: 1000)"}}}"#;

const DESCRIPTION: &str = "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).";

const DEFAULT_LIMIT: f64 = 1000.0;

struct Find;

impl Tool for Find {
    fn definition(&self) -> Definition {
        Definition::new("find", "find", DESCRIPTION, SCHEMA)
            .prompt_snippet("Find files by glob pattern (respects .gitignore)")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let pattern = args::string(&args, "pattern");
        let raw = args::path_or_cwd(&args);
        // `limit ?? 1000`, passed to fd's `--max-results`, which takes only
        // positive whole numbers.
        let limit = args::number(&args, "limit").unwrap_or(DEFAULT_LIMIT);
        if !(limit >= 1.0 && limit.fract() == 0.0) {
            return Err(ToolError::new(format!(
                "Invalid limit: {}. Use a positive whole number of results.",
                js::number(limit)
            )));
        }
        let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());
        let request = GlobRequest {
            pattern: pattern.to_string(),
            root: abs.clone(),
            max_results: limit.min(f64::from(u32::MAX)) as u32,
        };
        let result = search::glob(&request).map_err(|e| error_text(e, &abs, raw, pattern, ctx))?;
        ctx.check_cancelled()?;
        Ok(format(&result, limit))
    }
}

toolhost_sdk::export_tools!(Find);

/// The model-facing text of a failed walk (spec §7.21, §7.1).
fn error_text(err: SearchError, abs: &str, raw: &str, pattern: &str, ctx: &Context) -> ToolError {
    ToolError::new(match err {
        SearchError::NotFound(_) => format!("Path not found: {abs}"),
        SearchError::InvalidGlob(reason) | SearchError::InvalidPattern(reason) => {
            format!("Invalid glob '{pattern}': {reason}")
        }
        // The host's explanation, if it gave one, follows on its own lines.
        SearchError::OutsideRoots(named) => match named.split_once('\n') {
            Some((_, why)) => format!("{}\n{why}", fs::outside_message(raw, ctx)),
            None => fs::outside_message(raw, ctx),
        },
        SearchError::Cancelled => return ToolError::aborted(),
        SearchError::Other(message) => message,
    })
}

/// Pi's output: one relative path per line, capped at 50 KB, then the notices.
fn format(result: &GlobResult, limit: f64) -> ToolOutput {
    let warning = warning_notice(&result.warnings);
    if result.paths.is_empty() {
        let mut text = "No files found matching pattern".to_string();
        if let Some(w) = warning {
            text.push_str(&format!("\n\n[{w}]"));
        }
        return ToolOutput::text(text);
    }
    let truncation = truncate_head(&result.paths.join("\n"), NO_LINE_LIMIT, DEFAULT_MAX_BYTES);
    let mut notices = Notices::new();
    if result.limit_reached {
        notices.limit_reached(
            "results",
            limit,
            ", or refine pattern",
            "resultLimitReached",
        );
    }
    notices.truncated(&truncation, DEFAULT_MAX_BYTES);
    if let Some(w) = warning {
        notices.push(w, None);
    }
    notices.finish(truncation.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(out: &ToolOutput) -> &str {
        match &out.content[0] {
            toolhost_sdk::Content::Text(t) => t,
            other => panic!("{other:?}"),
        }
    }

    fn result(paths: &[&str], limit_reached: bool) -> GlobResult {
        GlobResult {
            paths: paths.iter().map(|p| p.to_string()).collect(),
            limit_reached,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn lists_paths_and_the_limit_notice() {
        let out = format(&result(&["a.txt", "sub/"], false), 2.0);
        assert_eq!(text(&out), "a.txt\nsub/");
        assert!(out.details.is_none());
        let out = format(&result(&["a.txt", "b.txt"], true), 2.0);
        assert_eq!(
            text(&out),
            "a.txt\nb.txt\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
        );
        assert_eq!(
            out.details.unwrap().to_string(),
            r#"{"resultLimitReached":2}"#
        );
    }

    #[test]
    fn caps_the_output_at_50kb() {
        let names: Vec<String> = (0..3000).map(|i| format!("{i:0>40}.txt")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let out = format(&result(&refs, false), 5000.0);
        assert!(text(&out).ends_with("\n\n[50.0KB limit reached]"));
        let details = out.details.unwrap();
        assert_eq!(details["truncation"]["truncatedBy"], "bytes");
        assert_eq!(details["truncation"]["totalLines"], 3000);
    }

    #[test]
    fn nothing_found() {
        assert_eq!(
            text(&format(&result(&[], false), 10.0)),
            "No files found matching pattern"
        );
    }
}

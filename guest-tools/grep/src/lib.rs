//! The built-in `grep` tool (spec §1.11 with §7.1, §7.17–§7.21).
//!
//! Imports only `search`: the host walks and searches natively on the
//! ripgrep libraries and returns files in path order with their matching and
//! context lines (overlapping windows merged). This component applies Pi's
//! argument rules and formats Pi's output, notices and details.
//!
//! The host's Pi profile picks [`Rules`]: Pi 1.6 drops a leading `./` of
//! the glob, reads a limit below 1 as 1 and rounds it down, adds the limit
//! notice only when more matches exist, and keeps a CR inside a line
//! (docs/pi-1.6.md §3.7).
//!
//! Where toolhost differs from Pi (spec §7): `.gitignore` counts outside git
//! repositories too and `.git` is never searched; results are sorted; an
//! unreadable path adds a warning notice instead of failing the call
//! (`Some paths could not be searched: {path} ({cause}); …`, at most five
//! named); context windows merge; errors have our own texts.

use toolhost_sdk::args;
use toolhost_sdk::notices::{self, Notices};
use toolhost_sdk::path::resolve_to_cwd;
use toolhost_sdk::pi;
use toolhost_sdk::search::{self, GrepRequest, GrepResult, SearchError, warning_notice};
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::truncate::{
    DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, NO_LINE_LIMIT, truncate_head, truncate_line,
};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput, fs};

/// The parameters; `{glob}` stands for the `glob` argument's description,
/// which is the release's ([`Rules::glob`]).
const SCHEMA: &str = r#"{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string","description":"Search pattern (regex or literal string)"},"path":{"type":"string","description":"Directory or file to search (default: current directory)"},"glob":{"type":"string","description":"{glob}"},"ignoreCase":{"type":"boolean","description":"Case-insensitive search (default: false)"},"literal":{"type":"boolean","description":"Treat pattern as literal string instead of regex (default: false)"},"context":{"type":"number","description":"Number of lines to show before and after each match (default: 0)"},"limit":{"type":"number","description":"Maximum number of matches to return (default: 100)"}}}"#;

const GLOB_0_85: &str = "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'";

const GLOB_1_6: &str = "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth";

const DESCRIPTION: &str = "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.";

const DEFAULT_LIMIT: f64 = 100.0;

/// Bytes the host keeps of a long line: enough for 500 UTF-16 units of any
/// text (at most 4 bytes per unit), so the cut here is always the exact one.
const MAX_LINE_BYTES: u32 = 4 * GREP_MAX_LINE_LENGTH as u32;

/// What differs between Pi releases; the one code path reads it.
struct Rules {
    /// The `glob` argument's description, in the parameters.
    glob: &'static str,
    /// A leading `./` of the glob (after a `!`) is dropped.
    glob_dot_slash_dropped: bool,
    /// `max(1, floor(limit))`, with the notice only when more than `limit`
    /// matches exist; otherwise `max(1, limit)`, with the notice once the
    /// count reaches it.
    exact_limit: bool,
    /// Only a trailing `\r` is removed from a line (a lone CR inside is
    /// content); otherwise every `\r`.
    inner_cr_kept: bool,
}

const PI_0_85: Rules = Rules {
    glob: GLOB_0_85,
    glob_dot_slash_dropped: false,
    exact_limit: false,
    inner_cr_kept: false,
};

const PI_1_6: Rules = Rules {
    glob: GLOB_1_6,
    glob_dot_slash_dropped: true,
    exact_limit: true,
    inner_cr_kept: true,
};

/// The rules of the host's profile.
fn rules() -> &'static Rules {
    pi::of(&PI_0_85, &PI_1_6)
}

struct Grep;

impl Tool for Grep {
    fn definition(&self) -> Definition {
        definition(rules())
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let rules = rules();
        let pattern = args::string(&args, "pattern");
        let raw = args::path_or_cwd(&args);
        // Pi passes `--glob` only for a non-empty glob.
        let glob = Some(args::string(&args, "glob")).filter(|g| !g.is_empty());
        let host_glob = glob.map(|g| host_glob(g, rules));
        let ignore_case = args::flag(&args, "ignoreCase");
        let literal = args::flag(&args, "literal");
        // `context > 0 ? context : 0`; lines are whole, so a fraction rounds down.
        let context = args::number(&args, "context")
            .filter(|c| *c > 0.0)
            .map_or(0, |c| c.min(f64::from(u32::MAX)) as u32);
        // 0.85's `Math.max(1, limit ?? 100)`: Pi stops once the count
        // reaches it, so a fractional limit keeps its ceiling in matches.
        let limit = args::number(&args, "limit").unwrap_or(DEFAULT_LIMIT);
        let limit = if rules.exact_limit {
            notices::at_least_one(limit)
        } else {
            limit.max(1.0)
        };
        let max_matches = limit.ceil().min(f64::from(u32::MAX)) as u32;

        let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());
        let request = GrepRequest {
            pattern: pattern.to_string(),
            root: abs.clone(),
            glob: host_glob,
            ignore_case,
            literal,
            context,
            max_matches,
            max_line_bytes: MAX_LINE_BYTES,
        };
        let result = search::grep(&request).map_err(|e| error_text(e, &abs, raw, glob, ctx))?;
        ctx.check_cancelled()?;
        Ok(format(&result, limit, rules))
    }
}

toolhost_sdk::export_tools!(Grep);

fn definition(rules: &Rules) -> Definition {
    Definition::new(
        "grep",
        "grep",
        DESCRIPTION,
        SCHEMA.replace("{glob}", rules.glob),
    )
    .prompt_snippet("Search file contents for patterns (respects .gitignore)")
}

/// The glob handed to the host: rg never matches a leading `./`, so Pi 1.6
/// drops it (keeping a leading `!`).
fn host_glob(glob: &str, rules: &Rules) -> String {
    if !rules.glob_dot_slash_dropped {
        return glob.to_string();
    }
    let (bang, rest) = match glob.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", glob),
    };
    format!("{bang}{}", search::without_dot_slash(rest))
}

/// The model-facing text of a failed search (spec §7.21, §7.1).
fn error_text(
    err: SearchError,
    abs: &str,
    raw: &str,
    glob: Option<&str>,
    ctx: &Context,
) -> ToolError {
    ToolError::new(match err {
        SearchError::NotFound(_) => format!("Path not found: {abs}"),
        SearchError::InvalidPattern(reason) => format!("Invalid regex: {reason}"),
        SearchError::InvalidGlob(reason) => {
            format!("Invalid glob '{}': {reason}", glob.unwrap_or_default())
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

/// Pi's output: one line per match (`path:n: text`) or context line
/// (`path-n- text`), capped at 50 KB, then the notices.
fn format(result: &GrepResult, limit: f64, rules: &Rules) -> ToolOutput {
    let warning = warning_notice(&result.warnings);
    if result.matches == 0 {
        let mut text = "No matches found".to_string();
        if let Some(w) = warning {
            text.push_str(&format!("\n\n[{w}]"));
        }
        return ToolOutput::text(text);
    }
    let mut lines = Vec::new();
    let mut lines_truncated = false;
    for file in &result.files {
        for line in &file.lines {
            let clean: String = if rules.inner_cr_kept {
                line.text.strip_suffix('\r').unwrap_or(&line.text).into()
            } else {
                line.text.chars().filter(|&c| c != '\r').collect()
            };
            let (mut text, cut) = truncate_line(&clean, GREP_MAX_LINE_LENGTH);
            if line.cut && !cut {
                text.push_str("... [truncated]");
            }
            lines_truncated |= cut || line.cut;
            let sep = if line.is_match { ':' } else { '-' };
            lines.push(format!(
                "{}{sep}{}{sep} {text}",
                file.path, line.line_number
            ));
        }
    }

    let truncation = truncate_head(&lines.join("\n"), NO_LINE_LIMIT, DEFAULT_MAX_BYTES);
    let mut notices = Notices::new();
    // Pi 0.85 counts matches until it reaches the limit, so its notice
    // appears when the limit was reached, even with nothing beyond it.
    if result.limit_reached || (!rules.exact_limit && f64::from(result.matches) >= limit) {
        notices.limit_reached("matches", limit, ", or refine pattern", "matchLimitReached");
    }
    notices.truncated(&truncation, DEFAULT_MAX_BYTES);
    if lines_truncated {
        notices.push(
            format!(
                "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            ),
            Some(("linesTruncated", Value::Bool(true))),
        );
    }
    if let Some(w) = warning {
        notices.push(w, None);
    }
    notices.finish(truncation.content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::search::{GrepFile, GrepLine};

    fn line(n: u64, text: &str, is_match: bool, cut: bool) -> GrepLine {
        GrepLine {
            line_number: n,
            text: text.into(),
            is_match,
            cut,
        }
    }

    fn result(lines: Vec<GrepLine>, limit_reached: bool) -> GrepResult {
        GrepResult {
            matches: lines.iter().filter(|l| l.is_match).count() as u32,
            files: vec![GrepFile {
                path: "a.txt".into(),
                lines,
            }],
            limit_reached,
            warnings: Vec::new(),
        }
    }

    fn text(out: &ToolOutput) -> &str {
        match &out.content[0] {
            toolhost_sdk::Content::Text(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn formats_matches_and_context_like_pi() {
        let out = format(
            &result(
                vec![
                    line(1, "before\r", false, false),
                    line(2, "x\tneedle", true, false),
                ],
                false,
            ),
            100.0,
            &PI_0_85,
        );
        assert_eq!(text(&out), "a.txt-1- before\na.txt:2: x\tneedle");
        assert!(out.details.is_none());
    }

    #[test]
    fn notices_for_the_limit_long_lines_and_warnings() {
        let long = "é".repeat(600);
        let mut r = result(vec![line(1, &long, true, false)], false);
        r.warnings = (0..7)
            .map(|i| format!("d{i} (permission denied)"))
            .collect();
        let out = format(&r, 1.0, &PI_0_85);
        let expected = format!(
            "a.txt:1: {}... [truncated]\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern. Some lines truncated to 500 chars. Use read tool to see full lines. Some paths could not be searched: d0 (permission denied); d1 (permission denied); d2 (permission denied); d3 (permission denied); d4 (permission denied); and 2 more]",
            "é".repeat(500)
        );
        assert_eq!(text(&out), expected);
        assert_eq!(
            out.details.unwrap().to_string(),
            r#"{"matchLimitReached":1,"linesTruncated":true}"#
        );
    }

    #[test]
    fn a_line_the_host_cut_is_marked_even_when_it_fits() {
        let out = format(
            &result(vec![line(3, "short", true, true)], false),
            100.0,
            &PI_0_85,
        );
        assert!(text(&out).starts_with("a.txt:3: short... [truncated]"));
    }

    #[test]
    fn pi_1_6_keeps_a_lone_cr_and_notes_the_limit_only_when_more_exist() {
        let lines = vec![
            line(1, "x\rneedle\ry\r", true, false),
            line(2, "n", true, false),
        ];
        let out = format(&result(lines.clone(), false), 2.0, &PI_1_6);
        assert_eq!(text(&out), "a.txt:1: x\rneedle\ry\na.txt:2: n");
        assert!(out.details.is_none());
        let out = format(&result(lines.clone(), false), 2.0, &PI_0_85);
        assert_eq!(
            text(&out),
            "a.txt:1: xneedley\na.txt:2: n\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
        );
        let out = format(&result(lines, true), 2.0, &PI_1_6);
        assert!(
            text(&out).ends_with(
                "\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
            )
        );
    }

    #[test]
    fn pi_1_6_drops_a_leading_dot_slash_of_the_glob() {
        assert_eq!(host_glob("./src/*.js", &PI_1_6), "src/*.js");
        assert_eq!(host_glob("!././src/*.js", &PI_1_6), "!src/*.js");
        assert_eq!(host_glob("*.js", &PI_1_6), "*.js");
        assert_eq!(host_glob("./src/*.js", &PI_0_85), "./src/*.js");
    }

    #[test]
    fn each_profile_has_its_schema() {
        assert!(
            definition(&PI_0_85)
                .parameters()
                .contains("'*.ts' or '**/*.spec.ts'")
        );
        assert!(
            definition(&PI_1_6)
                .parameters()
                .contains("glob pattern relative to path")
        );
    }

    #[test]
    fn no_matches_keeps_the_warning() {
        let mut r = result(Vec::new(), false);
        r.files.clear();
        assert_eq!(text(&format(&r, 100.0, &PI_0_85)), "No matches found");
        r.warnings = vec!["locked (permission denied)".into()];
        assert_eq!(
            text(&format(&r, 100.0, &PI_0_85)),
            "No matches found\n\n[Some paths could not be searched: locked (permission denied)]"
        );
    }
}

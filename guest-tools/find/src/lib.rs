//! The built-in `find` tool (spec §1.12 with §7.1, §7.17–§7.19, §7.21).
//!
//! Imports only `search`: the host walks natively with fd's rules as Pi 0.85
//! runs fd (`--glob --hidden`, `--full-path` with a `**/` prefix for patterns
//! with `/`, smart case, directories with a trailing `/`) and returns the
//! entries in path order. This component applies Pi's arguments and formats
//! Pi's output, notices and details.
//!
//! The host's Pi profile picks [`Rules`]: Pi 1.6 anchors a relative pattern
//! with `/` at the search directory, drops a leading `./` and reads a limit
//! below 1 as 1 (docs/pi-1.6.md §3.6). Anchoring is done here, by handing
//! the host the absolute pattern Pi 1.6 hands fd.
//!
//! Where toolhost differs from Pi (spec §7): `.git` is never listed; results
//! are sorted and the limit keeps the first N, with the notice only when more
//! exist; an unreadable path adds a warning notice; errors have our own texts
//! (`Path not found: {abs}`, `Invalid glob '{glob}': {reason}`,
//! `Not a directory: {abs}`); under Pi 0.85 a limit that is not a positive
//! whole number is an error (fd refused it too, with its own usage text).

use toolhost_sdk::args;
use toolhost_sdk::js;
use toolhost_sdk::notices::{self, Notices};
use toolhost_sdk::path::resolve_to_cwd;
use toolhost_sdk::pi;
use toolhost_sdk::search::{self, GlobRequest, GlobResult, SearchError, warning_notice};
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::truncate::{DEFAULT_MAX_BYTES, NO_LINE_LIMIT, truncate_head};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput, fs};

/// The parameters; `{pattern}` stands for the `pattern` argument's description,
/// which is the release's ([`Rules::pattern`]).
const SCHEMA: &str = r#"{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string","description":"{pattern}"},"path":{"type":"string","description":"Directory to search in (default: current directory)"},"limit":{"type":"number","description":"Maximum number of results (default: 1000)"}}}"#;

const PATTERN_0_85: &str =
    "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'";

const PATTERN_1_6: &str = "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth";

const DESCRIPTION: &str = "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).";

const DEFAULT_LIMIT: f64 = 1000.0;

/// What differs between Pi releases; the one code path reads it.
struct Rules {
    /// The `pattern` argument's description, in the parameters.
    pattern: &'static str,
    /// A leading `./` is dropped and a relative pattern with `/` matches
    /// paths from the search directory only (0.85: at any depth).
    anchored: bool,
    /// `max(1, floor(limit))`; otherwise a limit that is not a positive
    /// whole number is refused (§7.22).
    lenient_limit: bool,
}

const PI_0_85: Rules = Rules {
    pattern: PATTERN_0_85,
    anchored: false,
    lenient_limit: false,
};

const PI_1_6: Rules = Rules {
    pattern: PATTERN_1_6,
    anchored: true,
    lenient_limit: true,
};

/// The rules of the host's profile.
fn rules() -> &'static Rules {
    pi::of(&PI_0_85, &PI_1_6)
}

struct Find;

impl Tool for Find {
    fn definition(&self) -> Definition {
        definition(rules())
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        ctx.check_cancelled()?;
        let rules = rules();
        let pattern = args::string(&args, "pattern");
        let raw = args::path_or_cwd(&args);
        // `limit ?? 1000`: Pi 0.85 passed it to fd's `--max-results`, which
        // takes only positive whole numbers.
        let limit = args::number(&args, "limit").unwrap_or(DEFAULT_LIMIT);
        let limit = if rules.lenient_limit {
            notices::at_least_one(limit)
        } else if limit >= 1.0 && limit.fract() == 0.0 {
            limit
        } else {
            return Err(ToolError::new(format!(
                "Invalid limit: {}. Use a positive whole number of results.",
                js::number(limit)
            )));
        };
        let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());
        let request = GlobRequest {
            pattern: host_pattern(pattern, &abs, rules),
            root: abs.clone(),
            max_results: limit.min(f64::from(u32::MAX)) as u32,
        };
        let result = search::glob(&request).map_err(|e| error_text(e, &abs, raw, pattern, ctx))?;
        ctx.check_cancelled()?;
        Ok(format(&result, limit))
    }
}

toolhost_sdk::export_tools!(Find);

fn definition(rules: &Rules) -> Definition {
    Definition::new(
        "find",
        "find",
        DESCRIPTION,
        SCHEMA.replace("{pattern}", rules.pattern),
    )
    .prompt_snippet("Find files by glob pattern (respects .gitignore)")
}

/// The pattern to hand the host for the user's `pattern` under `rules`.
///
/// The host matches a pattern with `/` at any depth unless it starts with
/// `/` (the absolute path) or `**/`. An anchored relative pattern therefore
/// becomes what Pi 1.6 hands fd: the glob-escaped search root, `/`, the
/// pattern. Smart case stays the user's: the host decides it from the whole
/// pattern, so for an all-lowercase pattern the root's uppercase letters
/// become `?` (every path the walk offers starts with the root, so the root
/// part only has to match the root itself).
fn host_pattern(pattern: &str, root: &str, rules: &Rules) -> String {
    if !rules.anchored {
        return pattern.to_string();
    }
    let pattern = search::without_dot_slash(pattern);
    if !pattern.contains('/') || pattern.starts_with('/') {
        return pattern.to_string();
    }
    let lowercase = !pattern.chars().any(char::is_uppercase);
    let mut anchored = String::with_capacity(root.len() + pattern.len() + 1);
    for c in root.trim_end_matches('/').chars() {
        match c {
            '\\' | '*' | '?' | '[' | ']' | '{' | '}' => {
                anchored.push('\\');
                anchored.push(c);
            }
            c if lowercase && c.is_uppercase() => anchored.push('?'),
            c => anchored.push(c),
        }
    }
    anchored.push('/');
    anchored.push_str(pattern);
    anchored
}

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
    fn pi_1_6_anchors_relative_path_patterns_at_the_root() {
        let p = |pattern: &str, root: &str| host_pattern(pattern, root, &PI_1_6);
        assert_eq!(p("src/*.ts", "/ws"), "/ws/src/*.ts");
        assert_eq!(p("./src/*.ts", "/ws/"), "/ws/src/*.ts");
        assert_eq!(p("././*.ts", "/ws"), "*.ts");
        assert_eq!(p("*.ts", "/ws"), "*.ts");
        assert_eq!(p("**/src/*.ts", "/ws"), "/ws/**/src/*.ts");
        assert_eq!(p("/abs/*.ts", "/ws"), "/abs/*.ts");
        assert_eq!(p("src/*.ts", "/"), "/src/*.ts");
        assert_eq!(p("src/*.ts", "/w[s]/a*b{c}"), r"/w\[s\]/a\*b\{c\}/src/*.ts");
        // Smart case is the pattern's, not the root's.
        assert_eq!(p("src/*.ts", "/Home/ws"), "/?ome/ws/src/*.ts");
        assert_eq!(p("Src/*.ts", "/Home/ws"), "/Home/ws/Src/*.ts");
        // Pi 0.85 hands the pattern on as it is.
        assert_eq!(host_pattern("./src/*.ts", "/ws", &PI_0_85), "./src/*.ts");
    }

    #[test]
    fn each_profile_has_its_schema() {
        assert!(
            definition(&PI_0_85)
                .parameters()
                .contains("'*.ts', '**/*.json'")
        );
        assert!(
            definition(&PI_1_6)
                .parameters()
                .contains("relative to the search directory")
        );
    }

    #[test]
    fn nothing_found() {
        assert_eq!(
            text(&format(&result(&[], false), 10.0)),
            "No files found matching pattern"
        );
    }
}

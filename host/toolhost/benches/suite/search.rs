//! grep and find through the whole toolhost pipeline against the `rg` and
//! `fd` binaries, on the same tree, in the same run: a generated tree like a
//! repository's, and a real one (`~/.cargo/registry/src`, or
//! `$TOOLHOST_BENCH_REAL_TREE`) when it exists.
//!
//! Each comparison runs the commands Pi 0.85 runs (spec §1.11, §1.12): for
//! grep `rg --json --line-number --color=never --hidden -- PATTERN ROOT`,
//! read until the match limit and stopped there, as Pi does; for find
//! `fd --glob --color=never --hidden --max-results N -- PATTERN ROOT`.
//! toolhost answers the same question through `Host::run_batch` (a fresh
//! sandboxed instance per call, validation, the search Operations, the
//! guest's formatting). Times are medians of interleaved runs on a warm page
//! cache; the ratio is toolhost / native (the goal is ≤ 1.2).
//!
//! The generated tree sits in a git repository (a `.git` directory), so
//! `.gitignore` means the same to every program whatever its version.
//! `rg --hidden` also searches `.git` (Pi's bug 26), which toolhost skips; it
//! is kept small.
//!
//! Settings (environment): `TOOLHOST_BENCH_FILES` (default 40000),
//! `TOOLHOST_BENCH_DIR` (generate the tree there and keep it; default: a
//! temporary directory).

use crate::table::{Row, median, ms, ratio};
use crate::{Config, runtime};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost::{AssistantMessage, Host, ToolCall};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const WORDS: &[&str] = &[
    "let", "fn", "struct", "impl", "return", "match", "self", "value", "error", "config", "path",
    "buffer", "index", "result", "handle", "request", "response", "state", "token", "stream",
];

/// A source tree like a repository's: nested directories of text files, some
/// hidden, plus ignored build output and dependencies (skipped by everyone).
fn generate(root: &Path, files: usize) {
    let mut rng = toolhost_tests::Rng(0x9e37_79b9_7f4a_7c15);
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(".gitignore", "target/\nnode_modules/\n*.log\n");
    write(".git/HEAD", "ref: refs/heads/main\n");
    write(".git/config", "[core]\n\trepositoryformatversion = 0\n");
    let exts = ["rs", "ts", "md", "json", "txt", "log"];
    let mut made = 0;
    let mut dir_no = 0;
    while made < files {
        let depth = 1 + rng.below(4);
        let dir: Vec<String> = (0..depth)
            .map(|level| format!("m{}_{}", level, rng.below(12)))
            .collect();
        let dir = dir.join("/");
        dir_no += 1;
        for _ in 0..(5 + rng.below(30)) {
            let hidden = if rng.below(25) == 0 { "." } else { "" };
            let ext = exts[rng.below(exts.len() as u64) as usize];
            let mut text = String::new();
            for line in 0..(10 + rng.below(120)) {
                let words: Vec<&str> = (0..(3 + rng.below(12)))
                    .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                    .collect();
                text.push_str(&words.join(" "));
                if rng.below(40_000) == 0 {
                    text.push_str(" needle_rare");
                }
                if line % 7 == 0 {
                    text.push_str(" // TODO check");
                }
                text.push('\n');
            }
            write(&format!("{dir}/{hidden}f{made}.{ext}"), &text);
            made += 1;
        }
        if dir_no % 50 == 0 {
            // Ignored trees: build output and dependencies.
            for i in 0..40 {
                write(
                    &format!("target/debug/{dir_no}/o{i}.rs"),
                    "needle_rare in build output\n",
                );
                write(
                    &format!("node_modules/p{dir_no}/i{i}.ts"),
                    "needle_rare in a dependency\n",
                );
            }
        }
    }
}

/// A program on PATH (the first of `names`).
pub fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in names {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// Pi's grep: rg's JSON read line by line, stopped at `limit` matches.
/// Returns the matches seen.
fn run_rg(rg: &Path, pattern: &str, root: &Path, limit: usize) -> usize {
    let mut child = Command::new(rg)
        .args(["--json", "--line-number", "--color=never", "--hidden", "--"])
        .arg(pattern)
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting rg");
    let stdout = child.stdout.take().unwrap();
    let mut matches = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if line.starts_with(r#"{"type":"match""#) {
            matches += 1;
            if matches >= limit {
                let _ = child.kill();
                break;
            }
        }
    }
    let _ = child.wait();
    matches
}

/// Pi's find: fd with its flags; returns the paths printed.
fn run_fd(fd: &Path, pattern: &str, root: &Path, limit: usize) -> usize {
    let out = Command::new(fd)
        .args(["--glob", "--color=never", "--hidden", "--max-results"])
        .arg(limit.to_string())
        .arg("--")
        .arg(pattern)
        .arg(root)
        .stderr(Stdio::null())
        .output()
        .expect("running fd");
    out.stdout.iter().filter(|&&b| b == b'\n').count()
}

/// One call through the whole pipeline; returns the result's line count.
fn run_tool(
    rt: &tokio::runtime::Runtime,
    host: &Host,
    tool: &str,
    args: serde_json::Value,
) -> usize {
    let message = AssistantMessage::from_calls(vec![ToolCall {
        id: "bench".into(),
        name: tool.into(),
        arguments: args,
    }]);
    let outcome = rt.block_on(host.batch(&message).into_future());
    let result = &outcome.results[0];
    assert!(!result.is_error, "{tool} failed: {}", result.text());
    result.text().lines().take_while(|l| !l.is_empty()).count()
}

/// One timed command; returns how many lines or results it produced.
type Runner<'a> = Box<dyn FnMut() -> usize + 'a>;

struct Comparison<'a> {
    name: String,
    ours: Runner<'a>,
    theirs: Option<(&'a str, Runner<'a>)>,
}

/// The generated tree: `$TOOLHOST_BENCH_DIR` (kept), else a temporary one.
fn generated_tree() -> (PathBuf, Option<tempfile::TempDir>) {
    let files = env_usize("TOOLHOST_BENCH_FILES", 40_000);
    let (root, tmp) = match std::env::var_os("TOOLHOST_BENCH_DIR") {
        Some(dir) => (PathBuf::from(dir), None),
        None => {
            let tmp = tempfile::tempdir().unwrap();
            (tmp.path().to_path_buf(), Some(tmp))
        }
    };
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    if !root.join(".gitignore").exists() {
        eprint!("generating {files} files in {} ... ", root.display());
        std::io::stderr().flush().unwrap();
        let start = Instant::now();
        generate(&root, files);
        eprintln!("{:.1} s", start.elapsed().as_secs_f64());
    }
    (root, tmp)
}

/// A real source tree: `$TOOLHOST_BENCH_REAL_TREE`, else cargo's registry sources.
fn real_tree() -> Option<PathBuf> {
    let dir = match std::env::var_os("TOOLHOST_BENCH_REAL_TREE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cargo/registry/src"),
    };
    dir.canonicalize().ok().filter(|d| d.is_dir())
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let rg = which(&["rg"]);
    let fd = which(&["fd", "fdfind"]);
    if rg.is_none() || fd.is_none() {
        eprintln!(
            "note: rg or fd is not on PATH, so its comparisons have no baseline. Install them \
             with `apt-get install ripgrep fd-find` (Debian) or `cargo install ripgrep fd-find`."
        );
    }
    for (name, bin) in [("rg", &rg), ("fd", &fd)] {
        if let Some(bin) = bin {
            let version = Command::new(bin).arg("--version").output().unwrap();
            let version = String::from_utf8_lossy(&version.stdout);
            eprintln!(
                "{name}: {} ({})",
                version.lines().next().unwrap_or(""),
                bin.display()
            );
        }
    }
    let rt = runtime();
    let (generated, _keep) = generated_tree();
    let mut trees = vec![("generated", generated)];
    if let Some(real) = real_tree() {
        trees.push(("registry", real));
    }
    for (label, root) in &trees {
        let host = rt
            .block_on(
                Host::builder()
                    .workspace(root)
                    .user_config_dir(None)
                    .all_tools_active()
                    .build(),
            )
            .expect("building the host");
        let cases = if *label == "generated" {
            generated_cases()
        } else {
            real_cases()
        };
        let comparisons = comparisons(&rt, &host, root, (rg.as_deref(), fd.as_deref()), cases);
        compare(cfg, label, comparisons, rows);
    }
}

fn grep_cmp<'a>(
    rt: &'a tokio::runtime::Runtime,
    host: &'a Host,
    rg: Option<&'a Path>,
    name: &str,
    args: serde_json::Value,
    root: PathBuf,
    limit: usize,
) -> Comparison<'a> {
    let pattern = args["pattern"].as_str().unwrap().to_string();
    let native_root = match args["path"].as_str() {
        Some(p) => root.join(p),
        None => root,
    };
    Comparison {
        name: name.to_string(),
        ours: Box::new(move || run_tool(rt, host, "grep", args.clone())),
        theirs: rg.map(|rg| {
            let f: Runner = Box::new(move || run_rg(rg, &pattern, &native_root, limit));
            ("rg", f)
        }),
    }
}

fn find_cmp<'a>(
    rt: &'a tokio::runtime::Runtime,
    host: &'a Host,
    fd: Option<&'a Path>,
    name: &str,
    pattern: &str,
    root: PathBuf,
) -> Comparison<'a> {
    let pattern = pattern.to_string();
    let args = serde_json::json!({ "pattern": pattern });
    Comparison {
        name: name.to_string(),
        ours: Box::new(move || run_tool(rt, host, "find", args.clone())),
        theirs: fd.map(|fd| {
            let f: Runner = Box::new(move || run_fd(fd, &pattern, &root, 1000));
            ("fd", f)
        }),
    }
}

/// One comparison: a grep (name, arguments, ripgrep's `--max-count`) or a
/// find (name, glob).
enum Case {
    Grep(&'static str, serde_json::Value, usize),
    Find(&'static str, &'static str),
}

impl Case {
    /// A grep of `pattern` over the whole tree, at most 100 matches a file.
    fn grep(name: &'static str, pattern: &str) -> Case {
        Case::Grep(name, serde_json::json!({ "pattern": pattern }), 100)
    }

    /// A grep of `pattern` stopped at `limit` matches (ripgrep: a file).
    fn grep_limit(name: &'static str, pattern: &str, limit: usize) -> Case {
        let args = serde_json::json!({ "pattern": pattern, "limit": limit });
        Case::Grep(name, args, limit)
    }
}

/// The comparisons on the generated tree: fixed cost, a rare literal, a
/// dense regex, a rare name, a capped glob.
fn generated_cases() -> Vec<Case> {
    let one_file = serde_json::json!({"pattern": "target", "path": ".gitignore"});
    vec![
        Case::Grep("grep one small file (fixed cost)", one_file, 100),
        Case::grep("grep rare literal, whole tree", "needle_rare"),
        Case::grep_limit("grep regex, 1000-match limit (dense)", r"TODO \w+", 1000),
        Case::Find("find rare name, whole tree", "f1234*.rs"),
        Case::Find("find *.rs, 1000-result limit", "*.rs"),
    ]
}

/// The comparisons on a real tree (the cargo registry): nothing found, a
/// dense regex, a capped glob.
fn real_cases() -> Vec<Case> {
    vec![
        Case::grep("grep absent literal, whole tree", "toolhost_absent_needle"),
        Case::grep_limit("grep regex, 1000-match limit (dense)", r"fn \w+\(", 1000),
        Case::Find("find absent name, whole tree", "toolhost_absent_*.rs"),
        Case::Find("find *.rs, 1000-result limit", "*.rs"),
    ]
}

fn comparisons<'a>(
    rt: &'a tokio::runtime::Runtime,
    host: &'a Host,
    root: &Path,
    (rg, fd): (Option<&'a Path>, Option<&'a Path>),
    cases: Vec<Case>,
) -> Vec<Comparison<'a>> {
    cases
        .into_iter()
        .map(|case| match case {
            Case::Grep(name, args, limit) => {
                grep_cmp(rt, host, rg, name, args, root.to_path_buf(), limit)
            }
            Case::Find(name, pattern) => find_cmp(rt, host, fd, name, pattern, root.to_path_buf()),
        })
        .collect()
}

fn compare(cfg: &Config, tree: &str, mut comparisons: Vec<Comparison<'_>>, rows: &mut Vec<Row>) {
    let iters = cfg.scaled(9).max(1);
    for c in &mut comparisons {
        // One warm-up each: the page cache and the compiled components.
        let ours_lines = (c.ours)();
        let theirs_lines = c.theirs.as_mut().map(|(_, f)| f());
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..iters {
            let start = Instant::now();
            (c.ours)();
            ours.push(start.elapsed());
            if let Some((_, f)) = c.theirs.as_mut() {
                let start = Instant::now();
                f();
                theirs.push(start.elapsed());
            }
        }
        let ours = median(&ours);
        let figure = format!("{tree} tree: {} ({ours_lines} lines)", c.name);
        let row = Row::new(figure, ms(ours));
        rows.push(match (&c.theirs, theirs_lines) {
            (Some((native, _)), Some(lines)) => {
                let theirs: Duration = median(&theirs);
                let r = ratio(ours, theirs);
                row.baseline(format!("{native} {} ({lines} results)", ms(theirs)))
                    .ratio(r)
                    .target("≤ 1.2×", r <= 1.2)
            }
            _ => row.baseline("no native binary on PATH"),
        });
    }
}

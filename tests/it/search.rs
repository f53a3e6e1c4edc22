//! Tests of the `grep` and `find` built-ins: the spec's shared cases, one test
//! per §7 decision 17–21, and grep over a large generated tree against a plain
//! reference walk.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// What `grep` finds of `needle` and `find` lists of `*` in the workspace.
fn needles_and_files(host: &toolhost::Host) -> (String, String) {
    (
        text_of(host, "grep", json!({"pattern": "needle"})),
        text_of(host, "find", json!({"pattern": "*"})),
    )
}

#[test]
fn grep_cases_match_pi() {
    crate::cases::run_cases("grep", 8);
}

#[test]
fn find_cases_match_pi() {
    crate::cases::run_cases("find", 4);
}

#[track_caller]
fn text_of(host: &toolhost::Host, tool: &str, args: Value) -> String {
    let r = call(host, tool, args);
    assert!(!r.is_error, "{tool} failed: {}", r.text());
    r.text()
}

#[track_caller]
fn error_of(host: &toolhost::Host, tool: &str, args: Value) -> String {
    let r = call(host, tool, args);
    assert!(r.is_error, "{tool} did not fail: {}", r.text());
    assert_eq!(r.details, Some(json!({})));
    r.text()
}

/// §7.17: ignore files everywhere (no repository needed), by grep and find
/// alike; hidden files included; `.git` never searched or listed.
#[test]
fn ignore_files_count_everywhere_hidden_files_do_and_git_never() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.log\nbuild/\n");
    ws.write(".ignore", "private.txt\n");
    ws.write("src/.gitignore", "generated.txt\n");
    for name in [
        "app.log",
        "build/out.txt",
        "private.txt",
        ".env",
        ".git/config",
        ".git/HEAD",
        "src/main.txt",
        "src/generated.txt",
    ] {
        ws.write(name, "needle\n");
    }
    let host = host(&ws);
    assert_eq!(
        needles_and_files(&host),
        (
            ".env:1: needle\nsrc/main.txt:1: needle".into(),
            ".env\n.gitignore\n.ignore\nsrc/\nsrc/.gitignore\nsrc/main.txt".into()
        )
    );
    // The same inside a git repository, and for a sub-directory the
    // workspace's rules still apply.
    std::fs::create_dir_all(ws.path.join(".git/info")).unwrap();
    ws.write(".git/info/exclude", "src/main.txt\n");
    ws.write("src/debug.log", "needle\n");
    assert_eq!(
        text_of(&host, "grep", json!({"pattern": "needle", "path": "src"})),
        "No matches found"
    );
    assert_eq!(
        text_of(&host, "find", json!({"pattern": "*.log", "path": "src"})),
        "No files found matching pattern"
    );
    assert_eq!(
        text_of(&host, "find", json!({"pattern": "config"})),
        "No files found matching pattern"
    );
}

/// §7.18: sorted order, the limit takes the first N; find's notice only when
/// more exist (grep keeps Pi's: it fires once the count reaches the limit).
#[test]
fn results_are_sorted_and_limits_take_the_first() {
    let ws = Workspace::new();
    for name in ["m.txt", "b/y.txt", "b.txt", "a/z/x.txt", "z.txt"] {
        ws.write(name, "hit\nhit\n");
    }
    let host = host(&ws);
    assert_eq!(
        text_of(&host, "grep", json!({"pattern": "hit", "limit": 5})),
        "a/z/x.txt:1: hit\na/z/x.txt:2: hit\nb/y.txt:1: hit\nb/y.txt:2: hit\nb.txt:1: hit\n\n\
         [5 matches limit reached. Use limit=10 for more, or refine pattern]"
    );
    let r = call(&host, "grep", json!({"pattern": "hit", "limit": 10}));
    assert!(r.text().ends_with(
        "z.txt:2: hit\n\n[10 matches limit reached. Use limit=20 for more, or refine pattern]"
    ));
    assert_eq!(r.details, Some(json!({"matchLimitReached": 10})));
    assert_eq!(
        text_of(&host, "find", json!({"pattern": "*.txt", "limit": 3})),
        "a/z/x.txt\nb/y.txt\nb.txt\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]"
    );
    let r = call(&host, "find", json!({"pattern": "*.txt", "limit": 5}));
    assert_eq!(r.text(), "a/z/x.txt\nb/y.txt\nb.txt\nm.txt\nz.txt");
    assert_eq!(r.details, None);
    // Repeated calls give the same answer.
    let first = text_of(&host, "grep", json!({"pattern": "hit", "limit": 3}));
    for _ in 0..5 {
        assert_eq!(
            text_of(&host, "grep", json!({"pattern": "hit", "limit": 3})),
            first
        );
    }
}

/// The user nobody, for running the CLI without root's right to read anything.
const NOBODY: u32 = 65534;

/// §7.19: an unreadable directory keeps the matches found and adds a warning.
#[test]
fn an_unreadable_directory_is_a_warning_not_a_failure() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let ws = Workspace::new();
    for name in ["a.txt", "locked/secret.txt", "z.txt"] {
        ws.write(name, "needle\n");
    }
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(&ws.path, 0o755).unwrap();
    mode(&ws.path.join("locked"), 0o000).unwrap();
    // Root reads any directory: then run the CLI as nobody, who cannot.
    let as_root = std::fs::metadata(&ws.path).unwrap().uid() == 0;
    let scratch = tempfile::tempdir().unwrap();
    let run = |tool: &str, args: Value| -> Value {
        let mut cmd = std::process::Command::new(toolhost_bin());
        if as_root {
            use std::os::unix::process::CommandExt;
            // nobody may not reach the build directory: run a copy.
            let bin = scratch.path().join("toolhost");
            if !bin.exists() {
                std::fs::copy(toolhost_bin(), &bin).unwrap();
                mode(scratch.path(), 0o777).unwrap();
            }
            cmd = std::process::Command::new(&bin);
            cmd.uid(NOBODY).gid(NOBODY);
            cmd.env("TOOLHOST_CACHE_DIR", scratch.path().join("cache"));
            // nobody cannot read root's home: no user configuration either.
            cmd.env("XDG_CONFIG_HOME", scratch.path().join("config"));
        }
        cmd.arg("--workspace")
            .arg(&ws.path)
            .args(["call", tool, &args.to_string(), "--json"]);
        // The copy was just written: a child another test forked meanwhile
        // may hold it open until it execs ("Text file busy"); try again.
        let out = (0..100)
            .find_map(|_| match cmd.output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    None
                }
                other => Some(other.unwrap()),
            })
            .expect("the copy of toolhost stays busy");
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };
    let r = run("grep", json!({"pattern": "needle"}));
    mode(&ws.path.join("locked"), 0o755).unwrap();
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["content"][0]["text"],
        "a.txt:1: needle\nz.txt:1: needle\n\n\
         [Some paths could not be searched: locked (permission denied)]"
    );
    assert_eq!(r.get("details"), None);
    mode(&ws.path.join("locked"), 0o000).unwrap();
    let r = run("find", json!({"pattern": "*.txt"}));
    mode(&ws.path.join("locked"), 0o755).unwrap();
    assert_eq!(
        r["content"][0]["text"],
        "a.txt\nz.txt\n\n[Some paths could not be searched: locked (permission denied)]"
    );
}

/// §7.20: overlapping context windows merge; long lines are cut at 500
/// characters, never inside one.
#[test]
fn context_windows_merge_and_long_lines_are_cut_cleanly() {
    let ws = Workspace::new();
    ws.write("a.txt", "1\nhit\n3\nhit\n5\n6\n7\n8\nhit\n");
    let emoji = "😀".repeat(300);
    ws.write("wide.txt", format!("find {emoji}\r\n"));
    let host = host(&ws);
    assert_eq!(
        text_of(
            &host,
            "grep",
            json!({"pattern": "hit", "context": 2, "path": "a.txt"})
        ),
        "a.txt-1- 1\na.txt:2: hit\na.txt-3- 3\na.txt:4: hit\na.txt-5- 5\na.txt-6- 6\n\
         a.txt-7- 7\na.txt-8- 8\na.txt:9: hit"
    );
    let r = call(&host, "grep", json!({"pattern": "find"}));
    // 500 UTF-16 units: "find " (5) and 247 emoji (494); the next would split a pair.
    assert_eq!(
        r.text(),
        format!(
            "wide.txt:1: find {}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
            "😀".repeat(247)
        )
    );
    assert_eq!(r.details, Some(json!({"linesTruncated": true})));
}

/// §7.21 and §7.1: our own error texts, and the sandbox refusal.
#[test]
fn errors_name_the_path_and_the_cause() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");
    ws.symlink("escape", ws.path.parent().unwrap());
    let host = host(&ws);
    let w = ws.str();
    let bad_glob = "Invalid glob '[': unclosed character class; missing ']'";
    let mut cases = vec![
        (
            "grep",
            json!({"pattern": "x", "path": "nope"}),
            format!("Path not found: {w}/nope"),
        ),
        (
            "find",
            json!({"pattern": "*", "path": "nope"}),
            format!("Path not found: {w}/nope"),
        ),
        (
            "find",
            json!({"pattern": "*", "path": "a.txt"}),
            format!("Not a directory: {w}/a.txt"),
        ),
        (
            "grep",
            json!({"pattern": "x", "glob": "["}),
            bad_glob.into(),
        ),
        ("find", json!({"pattern": "["}), bad_glob.into()),
        (
            "grep",
            json!({"pattern": "(x"}),
            "Invalid regex: unclosed group".into(),
        ),
    ];
    for path in ["..", "escape", "/etc", "~"] {
        let outside = format!("Path is outside the workspace: {path}");
        cases.push((
            "grep",
            json!({"pattern": "x", "path": path}),
            outside.clone(),
        ));
        cases.push(("find", json!({"pattern": "*", "path": path}), outside));
    }
    cases.push((
        "find",
        json!({"pattern": "*", "limit": 0}),
        "Invalid limit: 0. Use a positive whole number of results.".into(),
    ));
    for (tool, args, error) in cases {
        assert_eq!(error_of(&host, tool, args.clone()), error, "{tool} {args}");
    }
    // A literal pattern is not a regex.
    assert_eq!(
        text_of(&host, "grep", json!({"pattern": "(x", "literal": true})),
        "No matches found"
    );
}

/// The built-ins run unchanged over an in-memory filesystem: search goes
/// through its `FsRead` view.
#[test]
fn search_works_over_an_in_memory_filesystem() {
    let ws = Workspace::new();
    let memory = memory_fs(
        &ws,
        &[
            (".gitignore", "*.log\n"),
            ("src/a.txt", "one\nneedle\n"),
            ("debug.log", "needle\n"),
        ],
    );
    let host = memory_host(&ws, memory);
    assert_eq!(
        needles_and_files(&host),
        (
            "src/a.txt:2: needle".into(),
            ".gitignore\nsrc/\nsrc/a.txt".into()
        )
    );
}

// ---------------------------------------------------------------------------
// A large generated tree against a plain reference walk.

/// The ignore rules this generator writes: `*.ext` and `name/` lines, each
/// applying at any depth below the directory of its file.
#[derive(Clone, Default)]
struct RefRules {
    suffixes: Vec<String>,
    dirs: Vec<String>,
}

impl RefRules {
    fn read(&self, dir: &Path) -> RefRules {
        let mut rules = self.clone();
        for name in [".gitignore", ".ignore"] {
            let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            for line in text.lines() {
                if let Some(ext) = line.strip_prefix('*') {
                    rules.suffixes.push(ext.to_string());
                } else if let Some(d) = line.strip_suffix('/') {
                    rules.dirs.push(d.to_string());
                }
            }
        }
        rules
    }

    fn ignores(&self, name: &str, is_dir: bool) -> bool {
        if is_dir {
            self.dirs.iter().any(|d| d == name)
        } else {
            self.suffixes.iter().any(|s| name.ends_with(s.as_str()))
        }
    }
}

/// Every `rel:line: text` of lines containing `needle`, walking with sorted
/// names (`.git` skipped, ignore rules applied), as the reference.
fn reference(dir: &Path, rel: &str, rules: &RefRules, out: &mut Vec<String>) {
    let rules = rules.read(dir);
    let mut entries: Vec<(String, PathBuf, bool)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let is_dir = e.file_type().unwrap().is_dir();
            (e.file_name().into_string().unwrap(), e.path(), is_dir)
        })
        .collect();
    entries.sort();
    for (name, path, is_dir) in entries {
        if name == ".git" || rules.ignores(&name, is_dir) {
            continue;
        }
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if is_dir {
            reference(&path, &child, &rules, out);
        } else {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                if line.contains("needle") {
                    out.push(format!("{child}:{}: {line}", i + 1));
                }
            }
        }
    }
}

#[test]
fn grep_over_ten_thousand_files_matches_a_reference_walk() {
    let ws = Workspace::new();
    let mut rng = toolhost_tests::Rng(0x5eed_1234_abcd_ef01);
    let exts = [".txt", ".rs", ".log", ".md"];
    ws.write(".gitignore", "*.log\nvendor/\n");
    ws.write(".git/objects/needle.txt", "needle in git\n");
    let mut files = 0;
    let mut d = 0;
    while files < 10_000 {
        // Directories two or three levels deep, some with their own rules.
        let dir = match rng.below(3) {
            0 => format!("d{}", d % 40),
            1 => format!("d{}/s{}", d % 40, d % 7),
            _ => format!("d{}/s{}/t{}", d % 40, d % 7, d % 3),
        };
        d += 1;
        if rng.below(10) == 0 {
            ws.write(&format!("{dir}/.ignore"), "*.md\n");
        }
        if rng.below(15) == 0 {
            ws.write(&format!("{dir}/vendor/lib.txt"), "needle vendored\n");
        }
        for _ in 0..25 {
            let name = format!(
                "{}f{:05}{}",
                if rng.below(20) == 0 { "." } else { "" },
                files,
                exts[rng.below(4) as usize]
            );
            let mut text = String::new();
            for line in 0..(1 + rng.below(8)) {
                if rng.below(90) == 0 {
                    text.push_str(&format!("a needle on line {line}\n"));
                } else {
                    text.push_str(&format!("plain text {}\n", rng.next_u64()));
                }
            }
            ws.write(&format!("{dir}/{name}"), text);
            files += 1;
        }
    }
    let mut expected = Vec::new();
    reference(&ws.path, "", &RefRules::default(), &mut expected);
    assert!(
        expected.len() > 100,
        "the tree should hold many matches, got {}",
        expected.len()
    );
    let host = host(&ws);
    let r = call(
        &host,
        "grep",
        json!({"pattern": "needle", "limit": 100_000}),
    );
    assert!(!r.is_error, "{}", r.text());
    assert!(r.details.is_none(), "{:?}", r.details);
    assert_eq!(r.text(), expected.join("\n"));
    // A limit keeps the first of that same order.
    let r = call(&host, "grep", json!({"pattern": "needle", "limit": 50}));
    assert_eq!(
        r.text(),
        format!(
            "{}\n\n[50 matches limit reached. Use limit=100 for more, or refine pattern]",
            expected[..50].join("\n")
        )
    );
}

#[test]
fn grep_over_a_file_whose_one_line_is_two_gigabytes_keeps_the_host_small() {
    let ws = Workspace::new();
    {
        use std::io::Write;
        let mut big =
            std::io::BufWriter::new(std::fs::File::create(ws.path.join("big.txt")).unwrap());
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..2048 {
            big.write_all(&chunk).unwrap();
        }
        big.write_all(b" needle\n").unwrap();
    }
    ws.write("small.txt", "a needle here\n");
    let args = json!({"pattern": "needle"}).to_string();
    let (out, peak_mib) = toolhost_peak_memory(&ws, &["--all-tools", "call", "grep", &args]);
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("peak resident memory of grep over a 2 GiB line: {peak_mib} MiB");
    assert_eq!(
        text,
        "small.txt:1: a needle here\n\n[Some paths could not be searched: big.txt (a line longer \
         than 64 MiB)]\n"
    );
    assert!(peak_mib < 512, "the host grew to {peak_mib} MiB");
}

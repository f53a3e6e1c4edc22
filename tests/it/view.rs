//! `toolhost run` on a terminal: the screen it leaves for the demo batch,
//! read through a terminal emulator, and colour only where it is wanted.

use crate::support::*;

/// Run `toolhost` with `args` on a pseudo-terminal of 120 × 40 with `env`;
/// every byte it wrote there.
#[track_caller]
fn run_on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    let (code, out) = on_a_terminal(&Workspace::new(), args, env, None);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out));
    out
}

/// What a terminal shows after `bytes`, with times made constant.
pub(crate) fn screen(bytes: &[u8]) -> String {
    let mut parser = vt100::Parser::new(40, 120, 0);
    parser.process(bytes);
    // Row by row: a row written to its last column counts as wrapped in
    // `contents()`, and would run into the next.
    let rows: Vec<String> = parser
        .screen()
        .rows(0, 120)
        .map(|row| row.trim_end().to_string())
        .collect();
    constant_times(&rows.join("\n")).trim_end().to_string()
}

/// `(12 ms)` → `(N ms)`, `in 1.2 s` → `in N s`: the only parts that vary.
fn constant_times(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut words: Vec<String> = Vec::new();
        let parts: Vec<&str> = line.split(' ').collect();
        for (i, w) in parts.iter().enumerate() {
            let unit = parts.get(i + 1).copied().unwrap_or("");
            let number = w.trim_start_matches('(');
            let is_time = !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit() || c == '.')
                && (unit.starts_with("ms") || unit.starts_with('s'));
            words.push(if is_time {
                w.replace(number, "N")
            } else {
                w.to_string()
            });
        }
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// The foreground colours (SGR 30–37, 90–97, 38) of the styles in `bytes`.
fn colours(bytes: &[u8]) -> Vec<u32> {
    let text = String::from_utf8_lossy(bytes);
    let mut found = Vec::new();
    for seq in text.split("\x1b[").skip(1) {
        let Some(end) = seq.find(|c: char| !(c.is_ascii_digit() || c == ';')) else {
            continue;
        };
        if !seq[end..].starts_with('m') {
            continue;
        }
        for param in seq[..end].split(';').filter_map(|p| p.parse::<u32>().ok()) {
            if (30..=38).contains(&param) || (90..=97).contains(&param) {
                found.push(param);
            }
        }
    }
    found
}

const DEMO_SCREEN: &str = "\
✓ ls wit  (N ms)
    README.md
    tool.wit
    v0.1/
    v0.2/
    … 1 more line
✓ read wit/tool.wit limit=3  (N ms)
    package toolhost:tool@0.4.0;

    /// Data types shared by every interface of the contract.
    [{more} more lines in file. Use offset=4 to continue.]
✗ read /etc/passwd  (N ms)
    Path is outside the workspace: /etc/passwd
✗ read  (N ms)
    Validation failed for tool \"read\":
      - path: must have required properties path

    Received arguments:
    … 1 more line
✗ teleport  (N ms)
    Tool teleport not found
5 calls: 2 ✓, 3 ✗ in N ms";

#[test]
fn run_on_a_terminal_shows_each_call_readably_and_json_when_asked() {
    let root = repo_root();
    let demo = root.join("examples/demo-batch.json");
    let args = [
        "--workspace",
        root.to_str().unwrap(),
        "--all-tools",
        "run",
        demo.to_str().unwrap(),
    ];
    let drawn = run_on_a_terminal(&args, &[]);
    // What is left of the contract after three lines (read counts the
    // pieces between newlines, as Pi does).
    let wit = std::fs::read_to_string(root.join("wit/tool.wit")).unwrap();
    let more = (wit.split('\n').count() - 3).to_string();
    assert_eq!(screen(&drawn), DEMO_SCREEN.replace("{more}", &more));
    assert!(colours(&drawn).contains(&32), "✓ is green");

    // NO_COLOR: the same screen, without a colour.
    let plain = run_on_a_terminal(&args, &[("NO_COLOR", "1")]);
    assert_eq!(screen(&plain), DEMO_SCREEN.replace("{more}", &more));
    assert_eq!(colours(&plain), Vec::<u32>::new(), "no colour");

    // --json on a terminal: today's JSON lines, exactly.
    let mut json_args = args.to_vec();
    json_args.insert(4, "--json");
    let lines = run_on_a_terminal(&json_args, &[]);
    let text = String::from_utf8(lines).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "tool_execution_start");
    assert!(
        text.trim_end()
            .lines()
            .last()
            .unwrap()
            .contains("\"turn_end\"")
    );
}

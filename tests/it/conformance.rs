//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`,
//! pinned in tests/conformance/, installed into target/conformance by
//! scripts/setup with the Node 22 it needs) against `toolhost mcp --http`,
//! every server scenario of each revision's requirements. A failure not in
//! tests/conformance/expected-failures.yml fails the test, and so does an
//! entry that passes (the file must shrink as toolhost learns). The server
//! has the testkit and the conformance tools (tests/guests/mcptools).

use crate::support::*;
use std::path::PathBuf;
use std::process::Command;

/// The suite's Node and its command-line entry point.
fn suite() -> (PathBuf, PathBuf) {
    let (node, modules) = node_modules(".bin/conformance");
    (node, modules.join(".bin/conformance"))
}

/// How the suite reaches the server.
#[derive(Clone, Copy)]
enum Auth {
    /// `--no-auth` on loopback, the suite straight at it.
    None,
    /// A token file, and haproxy in front adding `Authorization` (the suite
    /// sends no header of its own).
    TokenFile,
}

/// Run every server scenario `revision` requires against a fresh server;
/// the suite's summary lines and whether it exited 0.
fn run(revision: &str, auth: Auth) -> (String, bool) {
    let (node, cli) = suite();
    let ws = Workspace::new();
    // The tools, prompts and resources the scenarios ask for by name
    // (tests/guests/mcptools, with its manifest); one tool changes the tool
    // list.
    let (_tools_dir, tools) = conformance_tools();
    user_policy(
        &ws,
        "[extensions.mcptools]\ntools = true\nclient = [\"elicitation\", \"sampling\", \"roots\"]\n",
    );
    let token = "conformance-token-0123456789abcdef";
    let token_file = ws.config_home().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    // Behind a proxy, the server is told the address its clients use.
    let proxy_port = Haproxy::free_port();
    let proxy_host = format!("127.0.0.1:{proxy_port}");
    let proxy_origin = format!("http://{proxy_host}");
    let access = match auth {
        Auth::None => vec!["--no-auth"],
        Auth::TokenFile => vec![
            "--token-file",
            token_file.to_str().unwrap(),
            "--allow-host",
            &proxy_host,
            "--allow-origin",
            &proxy_origin,
        ],
    };
    let mut args = vec![
        "--extension",
        tools.to_str().unwrap(),
        "mcp",
        "--http",
        "127.0.0.1:0",
    ];
    args.extend(access);
    let server = Listening::start(&ws, &args);
    let header = format!("http-request set-header Authorization \"Bearer {token}\"");
    let proxy = matches!(auth, Auth::TokenFile)
        .then(|| Haproxy::start_on(proxy_port, &server.url, &[&header]));
    let url = proxy.as_ref().map_or(&server.url, |p| &p.url);
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(node)
        .arg(cli)
        .args(["server", "--url", url, "--requirements", revision])
        .arg("--expected-failures")
        .arg(repo_root().join("tests/conformance/expected-failures.yml"))
        .arg("-o")
        .arg(out_dir.path())
        .output()
        .expect("running the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stale = stale_entries(out_dir.path());
    assert!(
        stale.is_empty(),
        "expected-failures.yml lists checks that pass now; remove them: {stale:?}"
    );
    (text, out.status.success())
}

/// The entries of expected-failures.yml whose every check in the run's
/// results (`out_dir`, one `checks.json` per scenario) passed. The suite
/// reports a stale entry only in some modes; this holds in every one.
fn stale_entries(out_dir: &std::path::Path) -> Vec<String> {
    use std::collections::HashMap;
    // "scenario:check" → whether every occurrence passed.
    let mut passed: HashMap<String, bool> = HashMap::new();
    // scenario → whether it ran with no failure or warning (an entry for a
    // check it no longer reports is stale too: the suite names the checks
    // of a scenario whose tool exists more finely than of one whose is
    // missing).
    let mut scenario_clean: HashMap<String, bool> = HashMap::new();
    for dir in std::fs::read_dir(out_dir).unwrap().flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        // server-<scenario>-<YYYY-MM-DDTHH-MM-SS-mmmZ>
        let Some(scenario) = name.strip_prefix("server-").and_then(|rest| {
            let stamp = rest.char_indices().find(|&(i, c)| {
                let tail = rest.as_bytes().get(i + 1..i + 12).unwrap_or_default();
                c == '-'
                    && tail.len() == 11
                    && tail[..4].iter().all(u8::is_ascii_digit)
                    && tail[4] == b'-'
                    && tail[10] == b'T'
            })?;
            Some(&rest[..stamp.0])
        }) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(dir.path().join("checks.json")) else {
            continue;
        };
        let checks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
        for check in checks {
            let key = format!("{scenario}:{}", check["id"].as_str().unwrap_or_default());
            let ok = check["status"] == "SUCCESS";
            passed.entry(key).and_modify(|all| *all &= ok).or_insert(ok);
            let clean = !matches!(check["status"].as_str(), Some("FAILURE" | "WARNING"));
            scenario_clean
                .entry(scenario.to_string())
                .and_modify(|all| *all &= clean)
                .or_insert(clean);
        }
    }
    let baseline =
        std::fs::read_to_string(repo_root().join("tests/conformance/expected-failures.yml"))
            .unwrap();
    baseline
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter(|entry| match passed.get(*entry) {
            Some(all) => *all,
            None => entry
                .split_once(':')
                .is_some_and(|(scenario, _)| scenario_clean.get(scenario) == Some(&true)),
        })
        .map(str::to_string)
        .collect()
}

/// One test per revision and authentication, each running the suite and
/// asserting it passed (its report on failure).
macro_rules! suite_passes {
    ($($name:ident: $revision:expr, $auth:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let (text, passed) = run($revision, $auth);
                assert!(passed, "{text}");
            }
        )*
    };
}

suite_passes! {
    the_official_conformance_suite_passes_at_2025_11_25_but_for_the_expected_failures:
        "2025-11-25", Auth::None;
    the_official_conformance_suite_passes_at_2026_07_28_but_for_the_expected_failures:
        "2026-07-28", Auth::None;
    the_official_conformance_suite_passes_with_a_token_file_behind_a_proxy_at_2025_11_25:
        "2025-11-25", Auth::TokenFile;
    the_official_conformance_suite_passes_with_a_token_file_behind_a_proxy_at_2026_07_28:
        "2026-07-28", Auth::TokenFile;
}

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

/// Run every server scenario `revision` requires against a fresh server;
/// the suite's summary lines and whether it exited 0.
fn run(revision: &str) -> (String, bool) {
    let (node, cli) = suite();
    let ws = Workspace::new();
    // The tools the scenarios call by name (tests/guests/mcptools); one
    // changes the tool list.
    user_policy(&ws, "[extensions.mcptools]\ntools = true\n");
    let server = Listening::start(
        &ws,
        &[
            "--extension",
            toolhost_tests::MCPTOOLS,
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
        ],
    );
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(node)
        .arg(cli)
        .args(["server", "--url", &server.url, "--requirements", revision])
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
    (text, out.status.success())
}

#[test]
fn the_official_conformance_suite_passes_at_2025_11_25_but_for_the_expected_failures() {
    let (text, passed) = run("2025-11-25");
    assert!(passed, "{text}");
}

#[test]
fn the_official_conformance_suite_passes_at_2026_07_28_but_for_the_expected_failures() {
    let (text, passed) = run("2026-07-28");
    assert!(passed, "{text}");
}

//! `toolhost mcp` driven by the official MCP Python SDK (tests/mcp_client.py),
//! and the change signal behind `notifications/tools/list_changed`.

use crate::support::*;
use serde_json::{Value, json};
use std::process::Command;

/// A 1×1 PNG, so `read` returns an image block.
fn pixel_png() -> Vec<u8> {
    let mut bytes = Vec::new();
    image::RgbImage::from_pixel(1, 1, image::Rgb([255, 0, 0]))
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes
}

/// Runs tests/mcp_client.py over `transport` in the SDK's connect `mode`, and
/// checks its summary: the revision it negotiated, and every step's outcome.
#[track_caller]
fn python_sdk_drives_toolhost_mcp(transport: &str, mode: &str) -> Value {
    let ws = Workspace::new();
    ws.write("a.txt", "Hello, MCP!\n");
    ws.write("pixel.png", pixel_png());
    // The testkit is given with --extension, from outside the workspace; the
    // server watches it, and the script removes and restores it to see
    // list_changed. The fs probe is what the script plants in the workspace.
    let kit = tempfile::tempdir().unwrap();
    let extension = kit.path().join("testkit.wasm");
    std::fs::copy(toolhost_tests::TESTKIT, &extension).unwrap();
    let summary = script_summary(
        Command::new(python_with_mcp())
            .arg(repo_root().join("tests/mcp_client.py"))
            .arg(toolhost_bin())
            .arg(&ws.path)
            .arg(&extension)
            .arg(toolhost_tests::FSPROBE)
            .args([transport, mode])
            .env("XDG_CONFIG_HOME", ws.config_home()),
        &format!("mcp_client.py {transport} {mode}"),
    );
    let version = if mode == "legacy" {
        "2025-11-25"
    } else {
        "2026-07-28"
    };
    assert_eq!(summary["protocolVersion"], version);
    assert_eq!(summary["serverInfo"], "toolhost");
    assert_eq!(summary["listChanged"], 2);
    assert_eq!(summary["plantedRefused"], true);
    assert_eq!(summary["structured"], json!({"count": 3, "word": "three"}));
    assert_eq!(
        summary["schemaViolation"],
        "Tool typed returned structured content that does not match its output schema: \
         /count: \"three\" is not of type \"integer\""
    );
    assert_eq!(summary["progress"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        summary["bashProgress"].as_array().unwrap().last().unwrap(),
        "a\nb\n"
    );
    assert!(
        summary["cancelled"]
            .as_str()
            .unwrap()
            .ends_with("the tool answered: Operation aborted")
    );
    summary
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_on_stdio_with_the_handshake() {
    python_sdk_drives_toolhost_mcp("stdio", "legacy");
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_on_stdio_at_2026_07_28() {
    python_sdk_drives_toolhost_mcp("stdio", "auto");
}

/// Over HTTP the script also checks the listener's refusals and runs 32
/// clients at once.
#[track_caller]
fn python_sdk_drives_toolhost_mcp_over_http(mode: &str) {
    let summary = python_sdk_drives_toolhost_mcp("http", mode);
    let refusals = &summary["refusals"];
    assert_eq!(refusals["noToken"], 401);
    assert_eq!(refusals["wrongToken"], 401);
    assert_eq!(refusals["forbiddenOrigin"], 403);
    assert_eq!(refusals["foreignHost"], 403);
    assert_eq!(refusals["oversizedBody"], 413);
    assert_eq!(summary["concurrentClients"], 32);
    assert_eq!(summary["vanishedClientCancelled"], true);
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_over_http_with_the_handshake() {
    python_sdk_drives_toolhost_mcp_over_http("legacy");
}

#[test]
fn the_python_sdk_drives_toolhost_mcp_over_http_at_2026_07_28() {
    python_sdk_drives_toolhost_mcp_over_http("auto");
}

#[test]
fn changing_the_active_set_marks_the_host_changed() {
    let ws = Workspace::new();
    let host = host(&ws);
    let mut changes = host.changes();
    assert!(!changes.has_changed().unwrap());
    host.set_active_tools(&host.active_tools());
    assert!(
        !changes.has_changed().unwrap(),
        "the same set is no change: no list_changed for it"
    );
    host.set_active_tools(&["read", "slow"]);
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();
    host.set_active_tools(&["slow", "read"]);
    assert!(
        changes.has_changed().unwrap(),
        "the order is part of the list"
    );
    changes.mark_unchanged();
    host.set_active_tools(&["slow", "read", "no-such-tool"]);
    assert!(!changes.has_changed().unwrap(), "unknown names are dropped");
}

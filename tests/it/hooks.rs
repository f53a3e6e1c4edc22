//! Hook components (spec §3.2 with §7.5): chained after the embedder's hooks,
//! sandboxed and time-limited; a failing `tool_call` hook blocks the call, a
//! failing `tool_result` hook leaves the result and is reported.

use crate::support::*;
use serde_json::json;
use toolhost::{Event, Host};

fn hooked(ws: &Workspace) -> Host {
    hooked_by(ws, toolhost_tests::HOOKKIT, "hookkit", 2)
}

/// `echo` of `value` through the hooks: its text and whether it is an error.
fn echo(host: &Host, value: &str) -> (String, bool) {
    let r = call(host, "echo", json!({ "value": value }));
    (r.text(), r.is_error)
}

/// `echo` of `value` through the hooks answers `text`, an error or not.
#[track_caller]
fn assert_echo(host: &Host, value: &str, text: &str, is_error: bool) {
    assert_eq!(echo(host, value), (text.to_string(), is_error), "{value}");
}

#[test]
fn a_hook_component_blocks_rewrites_or_lets_calls_through() {
    let ws = Workspace::new();
    let host = hooked(&ws);
    assert_echo(&host, "rm -rf /", r#"hookkit blocked "rm -rf /""#, true);
    assert_echo(&host, "rewrite", r#"echoed: {"value":"rewritten"}"#, false);
    assert_echo(&host, "harmless", r#"echoed: {"value":"harmless"}"#, false);
    let ext = &host.extensions()[1];
    assert_eq!(
        (ext.name.as_str(), ext.hooks, ext.tools.len()),
        ("hookkit", true, 0)
    );
}

#[test]
fn a_hook_that_fails_crashes_or_hangs_blocks_the_call() {
    let ws = Workspace::new();
    let host = hooked(&ws);
    assert_echo(&host, "fail", "hookkit refuses this call", true);
    let (text, is_error) = echo(&host, "crash");
    assert!(is_error);
    assert!(
        text.starts_with("Hook hookkit crashed: wasm `unreachable` instruction executed"),
        "{text}"
    );
    assert_echo(
        &host,
        "spin",
        "Hook hookkit timed out after 2 seconds and was stopped",
        true,
    );
    assert_echo(&host, "ok", r#"echoed: {"value":"ok"}"#, false);
}

#[test]
fn a_blocking_hook_may_ask_the_loop_to_terminate() {
    let ws = Workspace::new();
    let host = hooked(&ws);
    let (outcome, _) = run_one(&host, "echo", json!({"value": "stop"}));
    assert_eq!(outcome.results[0].text(), "Tool execution was blocked");
    assert!(outcome.terminate);
}

#[test]
fn tool_result_hooks_patch_results_or_are_reported_when_they_fail() {
    let ws = Workspace::new();
    let host = hooked(&ws);
    let r = call(&host, "fast", json!({}));
    assert_eq!(
        (r.text().as_str(), r.is_error),
        ("patched by hookkit (was error: false)", false)
    );
    assert_eq!(r.details, Some(json!({"hook": "hookkit"})));

    let (outcome, events) = run_one(&host, "fail", json!({"message": "boom"}));
    assert_eq!(outcome.results[0].text(), "boom", "the result is unchanged");
    assert!(outcome.results[0].is_error);
    let events = events.events.lock().unwrap();
    let reported = events.iter().find_map(|e| match e {
        Event::ExtensionError {
            extension,
            event,
            error,
            ..
        } => Some((extension.clone(), event.clone(), error.clone())),
        _ => None,
    });
    assert_eq!(
        reported,
        Some((
            "hookkit".into(),
            "tool_result".into(),
            "hookkit cannot look at failures".into()
        ))
    );
}

#[test]
fn hooks_do_not_run_for_calls_that_never_execute() {
    let ws = Workspace::new();
    let host = hooked(&ws);
    // Not found and invalid: neither hook runs (a tool_call hook would block
    // "rm -rf" with its own text).
    let r = call(&host, "echo", json!({"value": 5, "mode": "c"}));
    assert!(
        r.text().starts_with("Validation failed for tool \"echo\""),
        "{}",
        r.text()
    );
    assert_eq!(call(&host, "nope", json!({})).text(), "Tool nope not found");
}

#[test]
fn a_component_of_an_older_contract_crosses_every_record_of_its_version() {
    // oldcontract is built from the frozen wit/v0.3: a tool and a hook in
    // one component. Its progress, log, result blocks (text, audio, an
    // embedded resource), structured content and the hook's patch all cross
    // the newest's glue under 0.3.0's names.
    let ws = Workspace::new();
    let host = hooked_by(&ws, toolhost_tests::OLDCONTRACT, "oldcontract", 30);
    let ext = host
        .extensions()
        .iter()
        .find(|e| e.name == "oldcontract")
        .expect("oldcontract loaded");
    assert!(ext.hooks, "its hook export is found");

    let (outcome, recorder) = run_one(&host, "blocks", json!({}));
    let result = &outcome.results[0];
    assert!(!result.is_error, "{:?}", result.content);
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        json!([
            {"type": "text", "text": "three blocks"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {
                "uri": "test://oldcontract/notes", "mimeType": "text/plain", "text": "notes"}},
            {"type": "text", "text": "the 0.3.0 hook saw 3 blocks"},
        ])
    );
    assert_eq!(result.structured_content, Some(json!({"blocks": 3})));
    assert_eq!(result.details, Some(json!({"version": "0.3.0"})));
    let events = recorder.events.lock().unwrap();
    let update = events.iter().find_map(|e| match e {
        Event::ToolExecutionUpdate { partial_result, .. } => Some(partial_result.clone()),
        _ => None,
    });
    let update = serde_json::to_value(update.expect("a progress update")).unwrap();
    assert_eq!(update["content"][0]["type"], "audio", "{update}");
    assert_eq!(update["details"], json!({"stage": "recording"}));
    let logged = events.iter().any(|e| {
        matches!(e, Event::ToolExecutionLog { message, logger, .. }
            if message == "three blocks" && logger.as_deref() == Some("oldcontract"))
    });
    assert!(logged, "the log line arrives");
    drop(events);

    let refused = call(&host, "blocks", json!({"refuse": true}));
    assert!(refused.is_error);
    assert_eq!(refused.text(), "oldcontract refuses");
}

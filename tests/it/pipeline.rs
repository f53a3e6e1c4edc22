//! The call pipeline and the batch scheduler (spec §2 with §7.4–§7.6).

use crate::support::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use toolhost::{
    AfterAnswer, AfterToolCallContext, AfterToolCallResult, AssistantMessage, BatchOutcome,
    BeforeAnswer, BeforeToolCallContext, BeforeToolCallResult, CancellationToken, ContentBlock,
    Event, StopReason, ToolHooks, ToolResultMessage,
};

/// A batch of `calls` (tool, arguments) with the ids `c1`, `c2`, … in order.
fn message(calls: &[(&str, Value)]) -> AssistantMessage {
    AssistantMessage::from_calls(
        calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| tool_call(&format!("c{}", i + 1), name, args.clone()))
            .collect(),
    )
}

/// Run `calls` as one batch on a host of the test guests in a fresh
/// workspace, recording its events.
fn run_calls(calls: &[(&str, Value)], cancel: CancellationToken) -> (BatchOutcome, Arc<Recorder>) {
    let ws = Workspace::new();
    run(&host(&ws), &message(calls), cancel)
}

/// A batch of `first`, then `fast` and `nope` (a tool that does not
/// exist): the three ways a call ends.
fn then_fast_and_unknown(
    first: (&str, Value),
    cancel: CancellationToken,
) -> (BatchOutcome, Arc<Recorder>) {
    run_calls(&[first, ("fast", json!({})), ("nope", json!({}))], cancel)
}

/// Call `name` with `arguments` on a host of the test guests in a fresh
/// workspace.
fn call_fresh(name: &str, arguments: Value) -> ToolResultMessage {
    let ws = Workspace::new();
    call(&host(&ws), name, arguments)
}

#[test]
fn parallel_batch_follows_pis_observed_event_order() {
    let first = ("slow", json!({"ms": 400}));
    let (outcome, events) = then_fast_and_unknown(first, CancellationToken::new());
    let mut want: Vec<String> = [
        "start c1",
        "start c2",
        "start c3",
        "end c3 error",
        "end c2",
        "end c1",
    ]
    .map(String::from)
    .to_vec();
    want.extend(message_lines(&["c1", "c2", "c3"]));
    assert_eq!(events.lines(), want);
    let texts: Vec<String> = outcome.results.iter().map(|r| r.text()).collect();
    assert_eq!(
        texts,
        ["slow done after 400 ms", "fast done", "Tool nope not found"]
    );
    assert!(!outcome.terminate);
}

#[test]
fn unknown_tool_result_message_has_pis_shape() {
    let r = call_fresh("nope", json!({}));
    let mut v = serde_json::to_value(&r).unwrap();
    assert!(v["timestamp"].as_u64().unwrap() > 1_700_000_000_000);
    v.as_object_mut().unwrap().remove("timestamp");
    assert_eq!(
        v,
        json!({"role":"toolResult","toolCallId":"c1","toolName":"nope",
               "content":[{"type":"text","text":"Tool nope not found"}],"details":{},"isError":true})
    );
    // Field order as in spec §2.8.
    let keys: Vec<String> = serde_json::to_value(&r)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "role",
            "toolCallId",
            "toolName",
            "content",
            "details",
            "isError",
            "timestamp"
        ]
    );
}

#[test]
fn a_sequential_tool_makes_the_batch_sequential() {
    let (outcome, events) = run_calls(
        &[
            ("step", json!({"ms": 200})),
            ("fast", json!({})),
            ("step", json!({"ms": 10})),
        ],
        CancellationToken::new(),
    );
    let want: Vec<String> = ["c1", "c2", "c3"]
        .iter()
        .flat_map(|id| {
            [
                format!("start {id}"),
                format!("end {id}"),
                format!("message_start {id}"),
                format!("message_end {id}"),
            ]
        })
        .collect();
    assert_eq!(events.lines(), want);
    assert_eq!(outcome.results[0].text(), "step done after 200 ms");
}

#[test]
fn the_host_can_force_sequential_execution() {
    let ws = Workspace::new();
    let host = built(builder(&ws).sequential(true));
    let batch = message(&[("slow", json!({"ms": 200})), ("fast", json!({}))]);
    let (_, events) = run(&host, &batch, CancellationToken::new());
    assert_eq!(
        &events.lines()[..3],
        ["start c1", "end c1", "message_start c1"]
    );
}

#[test]
fn length_stop_fails_every_call_unexecuted() {
    let ws = Workspace::new();
    let host = host(&ws);
    let mut batch = message(&[("terminate", json!({})), ("nope", json!({}))]);
    batch.stop_reason = StopReason::Length;
    let (outcome, events) = run(&host, &batch, CancellationToken::new());
    let mut want: Vec<String> = Vec::new();
    for id in ["c1", "c2"] {
        want.extend([format!("start {id}"), format!("end {id} error")]);
        want.extend(message_lines(&[id]));
    }
    assert_eq!(events.lines(), want);
    assert_eq!(
        outcome.results[0].text(),
        "Tool call \"terminate\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    );
    assert!(outcome.results.iter().all(|r| r.is_error));
    assert!(!outcome.terminate, "the length path never terminates");
}

#[test]
fn error_and_aborted_stop_reasons_run_nothing() {
    let ws = Workspace::new();
    let host = host(&ws);
    for reason in [StopReason::Error, StopReason::Aborted] {
        let mut batch = message(&[("fast", json!({}))]);
        batch.stop_reason = reason;
        let (outcome, events) = run(&host, &batch, CancellationToken::new());
        assert!(outcome.results.is_empty());
        assert!(events.lines().is_empty());
    }
}

#[test]
fn terminate_only_when_every_result_asks() {
    let ws = Workspace::new();
    let host = host(&ws);
    let all = message(&[("terminate", json!({})), ("terminate", json!({}))]);
    assert!(run(&host, &all, CancellationToken::new()).0.terminate);
    let mixed = message(&[("terminate", json!({})), ("fast", json!({}))]);
    assert!(!run(&host, &mixed, CancellationToken::new()).0.terminate);
    let failing = message(&[("terminate", json!({})), ("nope", json!({}))]);
    assert!(!run(&host, &failing, CancellationToken::new()).0.terminate);
    assert!(
        !run(&host, &message(&[]), CancellationToken::new())
            .0
            .terminate,
        "no results"
    );
}

#[test]
fn abort_before_the_batch_gives_every_call_a_result_in_both_modes() {
    let ws = Workspace::new();
    let host = host(&ws);
    for calls in [
        vec![("slow", json!({"ms": 10})), ("nope", json!({}))],
        vec![("step", json!({"ms": 10})), ("fast", json!({}))],
    ] {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (outcome, events) = run(&host, &message(&calls), cancel);
        assert_eq!(outcome.results.len(), 2);
        for r in &outcome.results {
            assert_eq!(r.text(), "Operation aborted");
            assert!(r.is_error);
        }
        assert_eq!(events.count("start"), 2);
        assert_eq!(events.count("end"), 2);
        assert_eq!(events.count("message_end"), 2);
    }
}

#[test]
fn abort_during_a_parallel_batch_stops_running_calls() {
    let (outcome, events) = run_calls(
        &[("slow", json!({"ms": 60000})), ("fast", json!({}))],
        cancel_after(Duration::from_millis(300)),
    );
    assert_eq!(outcome.results[0].text(), "Operation aborted");
    assert!(outcome.results[0].is_error);
    assert_eq!(outcome.results[1].text(), "fast done");
    assert_eq!(events.count("message_end"), 2);
}

#[test]
fn abort_during_a_sequential_batch_still_answers_later_calls() {
    let first = ("step", json!({"ms": 60000}));
    let (outcome, events) = then_fast_and_unknown(first, cancel_after(Duration::from_millis(300)));
    let texts: Vec<String> = outcome.results.iter().map(|r| r.text()).collect();
    assert_eq!(texts, ["Operation aborted"; 3]);
    let mut want = Vec::new();
    for id in ["c1", "c2", "c3"] {
        want.extend([format!("start {id}"), format!("end {id} error")]);
        want.extend(message_lines(&[id]));
    }
    assert_eq!(events.lines(), want);
}

#[test]
fn a_call_ignoring_cancellation_is_stopped_after_the_grace_period() {
    let ws = Workspace::new();
    let host = host(&ws);
    for tool in ["spin", "sleepy"] {
        let batch = message(&[(tool, json!({"ms": 60000}))]);
        let cancel = cancel_after(Duration::from_millis(200));
        let (outcome, _) = run(&host, &batch, cancel);
        assert_eq!(outcome.results[0].text(), "Operation aborted", "{tool}");
    }
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
}

#[test]
fn validation_failure_is_an_error_result_with_pis_text() {
    let r = call_fresh("read", json!({}));
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        "Validation failed for tool \"read\":\n  - path: must have required properties path\n\nReceived arguments:\n{}"
    );
    assert_eq!(r.details, Some(json!({})));
}

#[test]
fn a_throwing_tool_is_an_error_result_with_its_message() {
    let r = call_fresh("fail", json!({"message": "it broke"}));
    assert!(r.is_error);
    assert_eq!(r.text(), "it broke");
    assert_eq!(r.details, Some(json!({})));
}

#[test]
fn prepare_arguments_rewrites_what_runs_but_not_what_is_stored() {
    let ws = Workspace::new();
    let (outcome, events) = run_one(&host(&ws), "legacy", json!({"old": "x"}));
    assert_eq!(outcome.results[0].text(), "legacy got {\"value\":\"x\"}");
    // §7.4: events keep the arguments the model sent.
    let events = events.events.lock().unwrap();
    let Event::ToolExecutionStart { args, .. } = &events[0] else {
        panic!("first event is the start")
    };
    assert_eq!(args, &json!({"old": "x"}));
}

#[test]
fn a_throwing_prepare_arguments_fails_the_call() {
    let r = call_fresh("prepfail", json!({}));
    assert!(r.is_error);
    assert_eq!(r.text(), "prepare failed: unsupported argument shape");
}

/// Run `progress` with `count` updates as a batch on a host of the test
/// guests in a fresh workspace; it must finish. Its events.
#[track_caller]
fn progress_events(count: u32) -> Arc<Recorder> {
    let ws = Workspace::new();
    let (outcome, events) = run_one(&host(&ws), "progress", json!({ "count": count }));
    assert_eq!(outcome.results[0].text(), "progress done");
    events
}

#[test]
fn progress_updates_are_forwarded_with_the_calls_arguments() {
    let events = progress_events(2);
    assert_eq!(
        events.lines()[..4],
        ["start c1", "update c1", "update c1", "end c1"].map(String::from)
    );
    let events = events.events.lock().unwrap();
    assert_eq!(
        serde_json::to_value(&events[1]).unwrap(),
        json!({"type":"tool_execution_update","toolCallId":"c1","toolName":"progress",
               "args":{"count":2},"partialResult":{"content":[{"type":"text","text":"partial 1"}],"details":{"n":1}}})
    );
}

#[test]
fn a_flood_of_progress_updates_is_capped() {
    let events = progress_events(25000);
    assert_eq!(
        events.count("update"),
        toolhost::MAX_PROGRESS_UPDATES as usize
    );
}

/// Hooks configured per test.
#[derive(Default)]
struct Hooks {
    cancel_batch: bool,
    block: Option<BeforeToolCallResult>,
    before_error: Option<String>,
    rewrite: Option<Value>,
    after_error: Option<String>,
    after_patch: Option<AfterToolCallResult>,
    after_calls: AtomicUsize,
}

impl ToolHooks for Hooks {
    fn before_tool_call<'a>(&'a self, ctx: &'a mut BeforeToolCallContext) -> BeforeAnswer<'a> {
        Box::pin(async move {
            if let Some(e) = &self.before_error {
                return Err(e.clone());
            }
            if self.cancel_batch {
                ctx.cancel.cancel();
            }
            if let Some(args) = &self.rewrite {
                ctx.args = args.clone();
            }
            Ok(self.block.clone())
        })
    }

    fn after_tool_call<'a>(&'a self, _ctx: &'a AfterToolCallContext) -> AfterAnswer<'a> {
        Box::pin(async move {
            self.after_calls.fetch_add(1, Ordering::SeqCst);
            if let Some(e) = &self.after_error {
                return Err(e.clone());
            }
            Ok(self.after_patch.clone())
        })
    }
}

/// Call `name` with `arguments` on a fresh host with `hooks`; the result,
/// and the hooks (which count their after calls).
fn call_hooked(hooks: Hooks, name: &str, arguments: Value) -> (ToolResultMessage, Arc<Hooks>) {
    let ws = Workspace::new();
    let hooks = Arc::new(hooks);
    let host = built(builder(&ws).hooks(hooks.clone()));
    (call(&host, name, arguments), hooks)
}

/// Run `calls` as one batch on a fresh host with `hooks`; the outcome, its
/// events, and the hooks.
fn run_hooked(hooks: Hooks, calls: &[(&str, Value)]) -> (BatchOutcome, Arc<Recorder>, Arc<Hooks>) {
    let ws = Workspace::new();
    let hooks = Arc::new(hooks);
    let host = built(builder(&ws).hooks(hooks.clone()));
    let (outcome, events) = run(&host, &message(calls), CancellationToken::new());
    (outcome, events, hooks)
}

#[test]
fn a_before_hook_blocks_without_reason_and_skips_the_after_hook() {
    let hooks = Hooks {
        block: Some(BeforeToolCallResult {
            block: true,
            ..Default::default()
        }),
        ..Default::default()
    };
    let (r, hooks) = call_hooked(hooks, "echo", json!({"value": "x"}));
    assert_eq!(
        (r.text().as_str(), r.is_error),
        ("Tool execution was blocked", true)
    );
    assert_eq!(r.details, Some(json!({})));
    assert_eq!(hooks.after_calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_blocking_hook_can_terminate_the_batch() {
    let hooks = Hooks {
        block: Some(BeforeToolCallResult {
            block: true,
            reason: Some("not now".into()),
            terminate: true,
        }),
        ..Default::default()
    };
    let (outcome, _, _) = run_hooked(hooks, &[("fast", json!({}))]);
    assert_eq!(outcome.results[0].text(), "not now");
    assert!(outcome.terminate);
}

#[test]
fn an_abort_during_the_before_hook_ends_the_call_as_aborted() {
    let hooks = Hooks {
        cancel_batch: true,
        block: Some(BeforeToolCallResult {
            block: true,
            reason: Some("would block".into()),
            terminate: false,
        }),
        ..Default::default()
    };
    let (outcome, events, hooks) = run_hooked(hooks, &[("fast", json!({})), ("fast", json!({}))]);
    // The abort wins over the hook's verdict, and the later call is answered too.
    let texts: Vec<String> = outcome.results.iter().map(|r| r.text()).collect();
    assert_eq!(texts, ["Operation aborted", "Operation aborted"]);
    assert_eq!(events.count("message_end"), 2);
    assert_eq!(hooks.after_calls.load(Ordering::SeqCst), 0);
}

/// A before hook that fails blocks the call with its message; one that
/// rewrites the arguments hands them to the tool without revalidation.
#[test]
fn a_before_hook_decides_what_the_call_gets() {
    struct Case {
        name: &'static str,
        hooks: Hooks,
        tool: &'static str,
        args: Value,
        text: &'static str,
        is_error: bool,
    }
    let cases = [
        Case {
            name: "a failing before hook blocks the call",
            hooks: Hooks {
                before_error: Some("policy engine down".into()),
                ..Default::default()
            },
            tool: "fast",
            args: json!({}),
            text: "policy engine down",
            is_error: true,
        },
        Case {
            name: "a before hook may rewrite arguments without revalidation",
            hooks: Hooks {
                rewrite: Some(json!({"value": 123})),
                ..Default::default()
            },
            tool: "echo",
            args: json!({"value": "x"}),
            text: "echoed: {\"value\":123}",
            is_error: false,
        },
    ];
    for case in cases {
        let (r, _) = call_hooked(case.hooks, case.tool, case.args);
        assert_eq!(
            (r.text().as_str(), r.is_error),
            (case.text, case.is_error),
            "{}",
            case.name
        );
    }
}

#[test]
fn a_throwing_after_hook_turns_the_result_into_its_error() {
    let hooks = Hooks {
        after_error: Some("after boom".into()),
        ..Default::default()
    };
    let (r, _) = call_hooked(hooks, "fast", json!({}));
    assert_eq!((r.text().as_str(), r.is_error), ("after boom", true));
    assert_eq!(r.details, Some(json!({})));
}

#[test]
fn an_after_hook_patches_fields_wholesale() {
    let hooks = Hooks {
        after_patch: Some(AfterToolCallResult {
            content: Some(vec![ContentBlock::text("patched")]),
            details: Some(json!({"by": "hook"})),
            is_error: Some(true),
            terminate: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (outcome, _, hooks) = run_hooked(hooks, &[("fast", json!({}))]);
    let r = &outcome.results[0];
    assert_eq!((r.text().as_str(), r.is_error), ("patched", true));
    assert_eq!(r.details, Some(json!({"by": "hook"})));
    assert!(outcome.terminate);
    assert_eq!(hooks.after_calls.load(Ordering::SeqCst), 1);
}

#[test]
fn the_active_set_decides_what_the_model_may_call() {
    let ws = Workspace::new();
    let host = built(builder(&ws).active_tools(["read", "nonexistent"]));
    assert_eq!(host.active_tools(), ["read"], "unknown names are dropped");
    assert_eq!(call(&host, "fast", json!({})).text(), "Tool fast not found");
    host.set_active_tools(&["fast"]);
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
}

#[test]
fn default_active_tools_are_pis_plus_extension_tools() {
    let ws = Workspace::new();
    let host = built(
        toolhost::Host::builder()
            .workspace(&ws.path)
            .extensions(|e| e.load(toolhost_tests::TESTKIT)),
    );
    let active = host.active_tools();
    assert_eq!(active[0], "read");
    assert!(
        !active.contains(&"ls".to_string()),
        "ls is not a Pi default"
    );
    assert!(
        active.contains(&"slow".to_string()),
        "extension tools are activated"
    );
}

#[test]
fn a_batch_larger_than_the_instance_pool_completes() {
    let ws = Workspace::new();
    let runtime = toolhost::Runtime::new(toolhost::RuntimeOptions {
        max_concurrent_calls: 3,
        ..Default::default()
    })
    .unwrap();
    let host = built(builder(&ws).runtime(runtime));
    let calls = vec![("slow", json!({"ms": 20})); 12];
    let (outcome, _) = run(&host, &message(&calls), CancellationToken::new());
    assert_eq!(outcome.results.len(), 12);
    assert!(
        outcome
            .results
            .iter()
            .all(|r| r.text() == "slow done after 20 ms")
    );
}

/// A before hook that changes the active tools when it sees a call id.
struct Switcher {
    host: std::sync::OnceLock<toolhost::Host>,
    switches: Vec<(&'static str, Vec<&'static str>)>,
}

impl ToolHooks for Switcher {
    fn before_tool_call<'a>(&'a self, ctx: &'a mut BeforeToolCallContext) -> BeforeAnswer<'a> {
        Box::pin(async move {
            for (id, active) in &self.switches {
                if ctx.tool_call.id == *id {
                    self.host.get().unwrap().set_active_tools(active);
                }
            }
            Ok(None)
        })
    }
}

#[test]
fn a_hook_changing_the_active_tools_decides_the_lookup_of_later_calls() {
    // Calls of a parallel batch are prepared ahead of their hooks; what a
    // hook of an earlier call changes still decides what a later name finds.
    let ws = Workspace::new();
    let switcher = Arc::new(Switcher {
        host: std::sync::OnceLock::new(),
        switches: vec![("c1", vec!["fast", "echo"]), ("c3", vec!["echo"])],
    });
    let host = built(builder(&ws).hooks(switcher.clone()));
    switcher.host.set(host.clone()).ok().unwrap();
    host.set_active_tools(&["fast"]);
    let batch = toolhost::AssistantMessage::from_calls(vec![
        tool_call("c1", "fast", json!({})),
        tool_call("c2", "echo", json!({"value": "now active"})),
        tool_call("c3", "fast", json!({})),
        tool_call("c4", "fast", json!({})),
    ]);
    let (outcome, _) = run(&host, &batch, CancellationToken::new());
    let texts: Vec<String> = outcome.results.iter().map(|r| r.text()).collect();
    assert_eq!(
        texts,
        [
            "fast done",
            r#"echoed: {"value":"now active"}"#,
            "fast done",
            "Tool fast not found"
        ]
    );
}

#[test]
fn calls_that_run_while_later_ones_are_prepared_emit_nothing_before_every_start() {
    // Without before hooks a prepared call executes while the next ones
    // are still prepared; its updates and end must still follow every
    // start event, as in Pi (spec §2.3), and immediate errors keep their
    // place among the starts.
    let ws = Workspace::new();
    let host = host(&ws);
    let mut calls = Vec::new();
    for i in 0..200 {
        let id = format!("c{i}");
        calls.push(match i % 3 {
            0 => tool_call(&id, "fast", json!({})),
            1 => tool_call(&id, "progress", json!({"count": 2})),
            _ => tool_call(&id, &format!("nope{i}"), json!({})),
        });
    }
    calls.push(tool_call("missing", "nope", json!({})));
    let (outcome, recorder) = run(
        &host,
        &toolhost::AssistantMessage::from_calls(calls),
        CancellationToken::new(),
    );
    assert_eq!(outcome.results.len(), 201);
    let lines = recorder.lines();
    let last_start = lines.iter().rposition(|l| l.starts_with("start ")).unwrap();
    let before: Vec<&String> = lines[..last_start]
        .iter()
        .filter(|l| !l.starts_with("start "))
        .collect();
    // Only immediate outcomes (the unknown tools) come before the last start.
    assert_eq!(before.len(), 66, "{before:?}");
    assert!(before.iter().all(|l| l.ends_with(" error")), "{before:?}");
    assert_eq!(recorder.count("update "), 67 * 2);
    assert_eq!(lines[last_start + 1], "end missing error");
}

#[test]
fn structured_content_is_checked_against_the_tools_output_schema() {
    // The testkit's `typed` tool (toolhost:tool@0.2.0) declares an output
    // schema and returns whatever structured content it is given.
    let ws = Workspace::new();
    let host = host(&ws);
    let typed = |args: Value| call(&host, "typed", args);
    let ok = typed(json!({"structured": {"count": 2, "word": "two"}}));
    assert!(!ok.is_error, "{:?}", ok.content);
    assert_eq!(
        ok.structured_content,
        Some(json!({"count": 2, "word": "two"}))
    );

    let wrong = typed(json!({"structured": {"count": 2.5, "word": 1}}));
    assert!(wrong.is_error);
    assert_eq!(wrong.structured_content, None);
    let text = wrong.text();
    assert!(
        text.starts_with(
            "Tool typed returned structured content that does not match its output schema: "
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"/count: 2.5 is not of type "integer""#),
        "{text}"
    );
    assert!(
        text.contains(r#"/word: 1 is not of type "string""#),
        "{text}"
    );

    let missing = typed(json!({}));
    assert!(missing.is_error);
    assert_eq!(
        missing.text(),
        "Tool typed returned no structured content, but its output schema requires it"
    );
    // The definition carries the schema, as `toolhost list` shows it.
    let listed = host.tools();
    let def = &listed
        .iter()
        .find(|t| t.definition.name == "typed")
        .unwrap()
        .definition;
    assert_eq!(
        def.output_schema.as_ref().unwrap()["required"],
        json!(["count"])
    );
}

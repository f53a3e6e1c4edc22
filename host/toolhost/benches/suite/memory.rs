//! Memory per in-flight call: peak RSS while 500 calls of a tool that sleeps
//! (the testkit's `sleepy`, one host sleep of 1.5 s) are in flight in one
//! parallel batch, minus the RSS of the same process just before, divided by
//! 500. The baseline is the plain wasmtime embedding ([`crate::plain`])
//! running the same 500 calls concurrently, one store and instance each.
//!
//! Each side runs in a child process of its own (this binary again, with
//! `TOOLHOST_BENCH_CHILD` set), so neither sees the other's allocations, and
//! the peak is reset (`/proc/self/clear_refs`) after warming up.

use crate::plain::PlainTool;
use crate::table::{Row, mb};
use crate::{runtime, testkit_host};
use std::process::Command;
use toolhost::{AssistantMessage, Runtime, ToolCall};

const CALLS: usize = 500;
const SLEEP_MS: u64 = 1500;
const CHILD_VAR: &str = "TOOLHOST_BENCH_CHILD";

/// `VmRSS` and `VmHWM` of this process, in bytes.
fn rss_and_peak() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Called first thing in `main`: runs one side when this is a child.
/// Runs `n` calls with these arguments at once, in one side's embedding.
type RunCalls<'a> = Box<dyn Fn(usize, &str) + 'a>;

pub fn child_main() -> bool {
    let Ok(side) = std::env::var(CHILD_VAR) else {
        return false;
    };
    let rt = runtime();
    let sleepy = serde_json::json!({ "ms": SLEEP_MS }).to_string();
    let run: RunCalls = match side.as_str() {
        "toolhost" => {
            let ws = tempfile::tempdir().unwrap();
            let host = rt
                .block_on(testkit_host(ws.path()).build())
                .expect("building the host");
            let rt = &rt;
            Box::new(move |n, args| {
                let _workspace = &ws;
                let calls = (0..n)
                    .map(|i| ToolCall {
                        id: format!("call_{i}"),
                        name: "sleepy".into(),
                        arguments: serde_json::from_str(args).unwrap(),
                    })
                    .collect();
                let message = AssistantMessage::from_calls(calls);
                let outcome = rt.block_on(host.batch(&message).into_future());
                assert!(outcome.results.iter().all(|r| !r.is_error));
            })
        }
        "plain" => {
            let plain = PlainTool::load(
                &Runtime::shared().unwrap(),
                std::path::Path::new(toolhost_tests::TESTKIT),
            );
            let rt = &rt;
            Box::new(move |n, args| {
                let args = args.to_string();
                rt.block_on(async {
                    let tasks: Vec<_> = (0..n)
                        .map(|_| {
                            let (plain, args) = (plain.clone(), args.clone());
                            tokio::spawn(async move { plain.call("sleepy", &args).await })
                        })
                        .collect();
                    for task in tasks {
                        assert_eq!(task.await.unwrap(), "sleepy woke up");
                    }
                });
            })
        }
        other => panic!("unknown {CHILD_VAR}={other}"),
    };
    // Warm up: code pages, pool slots, allocator arenas.
    run(8, r#"{"ms":0}"#);
    let (before, _) = rss_and_peak();
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak RSS");
    run(CALLS, &sleepy);
    let (_, peak) = rss_and_peak();
    println!("{before} {peak}");
    true
}

fn measure(side: &str) -> Option<(u64, u64)> {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_VAR, side)
        .output()
        .expect("starting the memory child");
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        eprintln!(
            "memory child {side} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let mut nums = text.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    Some((nums.next()?, nums.next()?))
}

pub fn run(rows: &mut Vec<Row>) {
    let (Some(ours), Some(plain)) = (measure("toolhost"), measure("plain")) else {
        rows.push(Row::new("memory per in-flight call", "failed (see stderr)"));
        return;
    };
    let per_call = |(before, peak): (u64, u64)| peak.saturating_sub(before) as f64 / CALLS as f64;
    let (ours_per, plain_per) = (per_call(ours), per_call(plain));
    rows.push(
        Row::new(
            format!("peak RSS per in-flight call ({CALLS} × `sleepy` in one batch)"),
            mb(ours_per),
        )
        .baseline(format!(
            "plain wasmtime, {CALLS} concurrent calls {}",
            mb(plain_per)
        ))
        .ratio(ours_per / plain_per)
        .target("≤ 2 MB", ours_per <= 2e6),
    );
    rows.push(
        Row::new(
            format!("peak RSS with {CALLS} calls in flight"),
            mb(ours.1 as f64),
        )
        .baseline(format!("before the batch {}", mb(ours.0 as f64))),
    );
}

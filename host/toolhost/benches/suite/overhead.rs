//! Host overhead per call: one call of a trivial tool (the testkit's `fast`,
//! which answers at once) through the whole pipeline, `Host::run_batch` with
//! a fresh sandbox, against the plain wasmtime embedding of the same
//! component ([`crate::plain`]): one instantiation and one `execute`.
//!
//! Both run in a task on the same multi-threaded tokio runtime, as an agent
//! loop would call them, interleaved in rounds so that drift on a noisy
//! machine hits both alike.

use crate::plain::PlainTool;
use crate::table::{Row, quantile, ratio, us};
use crate::{Config, runtime, testkit_host};
use std::time::{Duration, Instant};
use toolhost::{AssistantMessage, Runtime, ToolCall};

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let host = rt
        .block_on(testkit_host(ws.path()).build())
        .expect("building the host");
    let plain = PlainTool::load(
        &Runtime::shared().unwrap(),
        std::path::Path::new(toolhost_tests::TESTKIT),
    );
    let message = AssistantMessage::from_calls(vec![ToolCall {
        id: "call_1".into(),
        name: "fast".into(),
        arguments: serde_json::json!({}),
    }]);
    let calls = cfg.scaled(10_000);
    let rounds = 20;
    let (ours, theirs) = rt.block_on(async move {
        tokio::spawn(async move {
            let ours_once = || async {
                let outcome = host.batch(&message).into_future().await;
                let result = &outcome.results[0];
                assert!(!result.is_error, "fast failed: {}", result.text());
            };
            let theirs_once = || async {
                assert_eq!(plain.call("fast", "{}").await, "fast done");
            };
            for _ in 0..200 {
                ours_once().await;
                theirs_once().await;
            }
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                for _ in 0..calls / rounds {
                    let start = Instant::now();
                    ours_once().await;
                    ours.push(start.elapsed());
                }
                for _ in 0..calls / rounds {
                    let start = Instant::now();
                    theirs_once().await;
                    theirs.push(start.elapsed());
                }
            }
            (ours, theirs)
        })
        .await
        .unwrap()
    });
    let p = |samples: &[Duration], q| quantile(samples, q);
    let (p50, base50) = (p(&ours, 0.5), p(&theirs, 0.5));
    let (p99, base99) = (p(&ours, 0.99), p(&theirs, 0.99));
    rows.push(
        Row::timed(
            "call overhead p50: `fast` via run_batch, fresh sandbox",
            p50,
            "plain wasmtime instantiate + call",
            base50,
            us,
        )
        .target(
            "≤ 50 µs and ≤ 2×",
            p50 <= Duration::from_micros(50) && ratio(p50, base50) <= 2.0,
        ),
    );
    rows.push(Row::timed(
        "call overhead p99",
        p99,
        "plain wasmtime p99",
        base99,
        us,
    ));
}

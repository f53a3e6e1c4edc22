//! Kill latency: a guest that spins without ever calling the host (the
//! testkit's `spin`) under a 100 ms time limit; the figure is the time from
//! its deadline to its error result (`timed out … and was stopped`).
//!
//! It is measured from before `run_batch` starts, so it also holds the
//! preflight and the instantiation (tens of microseconds). The baseline is
//! the epoch tick, the interval at which a running guest is checked: no
//! kill can be faster than that on average.

use crate::table::{Row, median, ms, quantile};
use crate::{Config, runtime, testkit_host};
use std::time::{Duration, Instant};
use toolhost::{AssistantMessage, Limits, ToolCall};

const LIMIT: Duration = Duration::from_millis(100);

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let host = rt
        .block_on(
            testkit_host(ws.path())
                .extensions(|e| {
                    e.limits(Limits {
                        time: LIMIT,
                        ..Limits::default()
                    })
                })
                .build(),
        )
        .expect("building the host");
    let message = AssistantMessage::from_calls(vec![ToolCall {
        id: "call_1".into(),
        name: "spin".into(),
        arguments: serde_json::json!({}),
    }]);
    let mut late = Vec::new();
    for i in 0..cfg.scaled(20) + 1 {
        let start = Instant::now();
        let outcome = rt.block_on(host.batch(&message).into_future());
        let elapsed = start.elapsed();
        let result = &outcome.results[0];
        assert!(
            result.is_error && result.text().contains("timed out"),
            "spin was not stopped by its deadline: {}",
            result.text()
        );
        if i > 0 {
            late.push(elapsed.saturating_sub(LIMIT));
        }
    }
    let (p50, max) = (median(&late), quantile(&late, 1.0));
    let tick = toolhost::EPOCH_TICK;
    rows.push(
        Row::timed(
            "kill latency p50: spinning guest, deadline → error result",
            p50,
            "epoch tick",
            tick,
            ms,
        )
        .target("≤ 15 ms", p50 <= Duration::from_millis(15)),
    );
    rows.push(Row::timed("kill latency max", max, "epoch tick", tick, ms));
}

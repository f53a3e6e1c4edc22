//! Parallel scaling: one batch of 64 `read` calls (64 different files of
//! 16 KB, each read whole and formatted by the guest), run in parallel (the
//! default) against the same batch on a host that runs batches sequentially.
//! The ratio is the speed-up (sequential / parallel); on 2 cores at most 2.

use crate::table::{Row, alternating_medians, ms, ratio};
use crate::{Config, runtime};
use std::sync::Arc;
use std::time::Instant;
use toolhost::{AssistantMessage, Host, ToolCall};

const CALLS: usize = 64;

/// 64 files of 16 KB in `ws`, and a batch that reads each one whole.
pub fn read_batch(ws: &std::path::Path) -> AssistantMessage {
    let mut calls = Vec::new();
    for i in 0..CALLS {
        let text: String = (0..400)
            .map(|line| format!("line {line:4} of file {i:2}: some text to read back\n"))
            .collect();
        std::fs::write(ws.join(format!("file{i}.txt")), text).unwrap();
        calls.push(ToolCall {
            id: format!("call_{i}"),
            name: "read".into(),
            arguments: serde_json::json!({ "path": format!("file{i}.txt") }),
        });
    }
    AssistantMessage::from_calls(calls)
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let message = read_batch(ws.path());
    let build = |sequential: bool| {
        rt.block_on(
            Host::builder()
                .workspace(ws.path())
                .user_config_dir(None)
                .sequential(sequential)
                .build(),
        )
        .expect("building the host")
    };
    let (parallel, sequential) = (build(false), build(true));
    let time = |host: &Host| {
        let start = Instant::now();
        let outcome = rt.block_on(host.batch(&message).into_future());
        let elapsed = start.elapsed();
        assert!(outcome.results.iter().all(|r| !r.is_error));
        elapsed
    };
    for _ in 0..3 {
        time(&parallel);
        time(&sequential);
    }
    let (par, seq) = alternating_medians(cfg.scaled(30), || time(&parallel), || time(&sequential));
    let speedup = ratio(seq, par);
    rows.push(
        Row::new("64 × read in one batch, parallel", ms(par))
            .baseline(format!("the same batch sequential {}", ms(seq)))
            .ratio(speedup)
            .target("speed-up ≥ 1.7×", speedup >= 1.7),
    );

    // The machine's own scaling of this work, the ceiling of the row
    // above: two sequential batches at once, each on a runtime worker,
    // against the same two one after the other. Nothing is shared but the
    // engine, the cores and their caches.
    let shared = Arc::new(build(true));
    let message = Arc::new(message.clone());
    let both = |host: &Arc<Host>| {
        let start = Instant::now();
        rt.block_on(async {
            let runs: Vec<_> = (0..2)
                .map(|_| {
                    let (host, message) = (host.clone(), message.clone());
                    tokio::spawn(async move { host.batch(&message).into_future().await })
                })
                .collect();
            for run in runs {
                assert!(run.await.unwrap().results.iter().all(|r| !r.is_error));
            }
        });
        start.elapsed()
    };
    let (together, apart) = alternating_medians(
        cfg.scaled(30),
        || both(&shared),
        || time(&shared) + time(&shared),
    );
    rows.push(
        Row::new(
            "two sequential 64-read batches at once (the machine's scaling)",
            ms(together),
        )
        .baseline(format!("one after the other {}", ms(apart)))
        .ratio(ratio(apart, together)),
    );
}

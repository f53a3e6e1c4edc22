//! Recording (`--record`, issue "record and replay"): the 64-read batch of
//! `batch` on a host that records every call (each file's bytes kept once
//! by digest, every question and answer a chained line) against the same
//! batch unrecorded, and its replay from the recording. Target: recorded ≤
//! 1.3× unrecorded.

use crate::table::{Row, alternating_medians, ms, ratio};
use crate::{Config, runtime};
use std::sync::Arc;
use std::time::Instant;
use toolhost::tape::{RecordTo, Recording};
use toolhost::{AssistantMessage, Host};

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let message = crate::batch::read_batch(ws.path());
    let build = |record: Option<RecordTo>| {
        let mut builder = Host::builder().workspace(ws.path()).user_config_dir(None);
        if let Some(to) = record {
            builder = builder.record(to);
        }
        rt.block_on(builder.build()).expect("building the host")
    };
    let recording = out.path().join("bench.rec");
    let plain = build(None);
    let recorded = build(Some(RecordTo::new(&recording, "bench")));
    let time = |host: &Host, message: &AssistantMessage| {
        let start = Instant::now();
        let outcome = rt.block_on(host.batch(message).into_future());
        let elapsed = start.elapsed();
        assert!(outcome.results.iter().all(|r| !r.is_error));
        elapsed
    };
    for _ in 0..3 {
        time(&plain, &message);
        time(&recorded, &message);
    }
    let (with, without) = alternating_medians(
        cfg.scaled(30),
        || time(&recorded, &message),
        || time(&plain, &message),
    );
    let overhead = ratio(with, without);
    rows.push(
        Row::new("64 × read in one batch, recorded", ms(with))
            .baseline(format!("the same batch unrecorded {}", ms(without)))
            .ratio(overhead)
            .target("≤ 1.3×", overhead <= 1.3),
    );
    drop(recorded);

    // The replay of one recorded batch: every answer from the recording.
    let once = out.path().join("once.rec");
    let recorder = build(Some(RecordTo::new(&once, "bench")));
    time(&recorder, &message);
    drop(recorder);
    let tape = Arc::new(Recording::open(&once).expect("reading the recording back"));
    let replayer = |tape: &Arc<Recording>| {
        rt.block_on(
            Host::builder()
                .workspace(ws.path())
                .user_config_dir(None)
                .replay(tape.clone(), Vec::new())
                .build(),
        )
        .expect("building the replaying host")
    };
    let (replayed, live) = alternating_medians(
        cfg.scaled(10),
        || {
            // A replay hands out each recorded call once: a host per run.
            let host = replayer(&tape);
            let start = Instant::now();
            let outcome = rt.block_on(host.batch(&message).into_future());
            let elapsed = start.elapsed();
            assert!(host.tape_report().is_empty(), "{:?}", host.tape_report());
            assert!(outcome.results.iter().all(|r| !r.is_error));
            elapsed
        },
        || time(&plain, &message),
    );
    rows.push(
        Row::new("the same batch replayed from its recording", ms(replayed))
            .baseline(format!("run live {}", ms(live)))
            .ratio(ratio(replayed, live)),
    );
}

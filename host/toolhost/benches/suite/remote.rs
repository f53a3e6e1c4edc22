//! Remote workspaces: the same 64-read batch as `batch`, on a workspace
//! served by `toolhost workspace serve` through `--workspace-exec` (here a
//! local process: the round trip is a pipe's), against the same batch on
//! the local workspace. The figures: the batch's cost beyond the local
//! time, in round trips, and one read call's overhead over its local
//! self. Targets (issue "remote workspaces"): a 64-read batch within 2
//! round trips of the local time; a call within one round trip plus 1 ms.

use crate::startup::toolhost_bin;
use crate::table::{Row, alternating_medians, ms, ratio};
use crate::{Config, runtime};
use std::time::{Duration, Instant};
use toolhost::remote::{Connection, Transport};
use toolhost::{AssistantMessage, Host, ToolCall};

const CALLS: usize = 64;

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let Some(bin) = toolhost_bin() else {
        eprintln!("  remote: skipped: no toolhost binary (scripts/bench builds it)");
        return;
    };
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let mut calls = Vec::new();
    for i in 0..CALLS {
        let text: String = (0..400)
            .map(|line| format!("line {line:4} of file {i:2}: some text to read back\n"))
            .collect();
        std::fs::write(root.join(format!("file{i}.txt")), text).unwrap();
        calls.push(ToolCall {
            id: format!("call_{i}"),
            name: "read".into(),
            arguments: serde_json::json!({ "path": format!("file{i}.txt") }),
        });
    }
    let batch = AssistantMessage::from_calls(calls.clone());
    let one = AssistantMessage::from_calls(calls[..1].to_vec());
    let command = format!("'{}' workspace serve '{}'", bin.display(), root.display());
    let connection = Connection::open(&Transport::exec(&command).unwrap())
        .expect("starting the workspace service");
    let build = |remote: bool| {
        let builder = Host::builder().workspace(&root).user_config_dir(None);
        let builder = if remote {
            builder.remote_workspace(connection.clone())
        } else {
            builder
        };
        rt.block_on(builder.build()).expect("building the host")
    };
    let (local, remote) = (build(false), build(true));
    let time = |host: &Host, message: &AssistantMessage| {
        let start = Instant::now();
        let outcome = rt.block_on(host.batch(message).into_future());
        let elapsed = start.elapsed();
        assert!(outcome.results.iter().all(|r| !r.is_error), "{outcome:?}");
        elapsed
    };
    // One round trip: a stat, the smallest request there is.
    let round_trip = {
        let files = toolhost::backend::fs::FsRead::stat;
        let fs = toolhost::remote::RemoteFs::new(connection.clone());
        let path = root.join("file0.txt").display().to_string();
        for _ in 0..50 {
            files(&fs, &path).unwrap();
        }
        let mut samples: Vec<Duration> = (0..cfg.scaled(500).max(20))
            .map(|_| {
                let start = Instant::now();
                files(&fs, &path).unwrap();
                start.elapsed()
            })
            .collect();
        samples.sort();
        samples[samples.len() / 2]
    };
    for _ in 0..3 {
        time(&local, &batch);
        time(&remote, &batch);
    }
    let (far, near) = alternating_medians(
        cfg.scaled(30),
        || time(&remote, &batch),
        || time(&local, &batch),
    );
    let beyond = far.saturating_sub(near);
    let trips = beyond.as_secs_f64() / round_trip.as_secs_f64().max(1e-9);
    rows.push(
        Row::new("64 × read in one batch, remote workspace", ms(far))
            .baseline(format!(
                "the same batch local {} (round trip {:.0} µs)",
                ms(near),
                round_trip.as_secs_f64() * 1e6
            ))
            .ratio(ratio(far, near))
            .target(
                format!("≤ local + 2 round trips (is + {trips:.1})"),
                beyond <= round_trip * 2,
            ),
    );
    let (far, near) = alternating_medians(
        cfg.scaled(200),
        || time(&remote, &one),
        || time(&local, &one),
    );
    let overhead = far.saturating_sub(near);
    rows.push(
        Row::new("one read call, remote workspace", ms(far))
            .baseline(format!("the same call local {}", ms(near)))
            .ratio(ratio(far, near))
            .target(
                format!(
                    "≤ 1 round trip + 1 ms over local (is + {:.2} ms)",
                    overhead.as_secs_f64() * 1e3
                ),
                overhead <= round_trip + Duration::from_millis(1),
            ),
    );
}

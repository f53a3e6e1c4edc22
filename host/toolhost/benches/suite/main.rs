//! toolhost's benchmark suite: every figure of "What fast means here"
//! (`docs/performance.md`) measured side by side with its baseline in one
//! run, printed as one table with the ratio and the target.
//!
//! ```sh
//! scripts/bench                        # builds what it needs, runs everything
//! cargo bench -p toolhost --bench suite -- overhead batch   # some sections
//! ```
//!
//! Sections (run in this order; arguments select some): `overhead` (host
//! overhead per call against plain wasmtime), `batch` (parallel against
//! sequential), `kill` (kill latency), `memory` (RSS per in-flight call),
//! `startup` (warm and cold start of the CLI), `search` (grep and find
//! against rg and fd), `jail` (a shell command in the process jail against
//! the same without it, and in a 10,000-file repository with 20 nested ones
//! against an empty workspace), `http` (MCP over HTTP with 1, 8 and 32 clients
//! against the same calls over stdio), `remote` (a 64-read batch and one
//! read on a workspace served through `--workspace-exec` against the same
//! locally, in round trips), `record` (a 64-read batch recorded, and
//! replayed, against the same batch unrecorded), `paths` (the paths a model uses most
//! beside Pi 0.85: command output, a 2,001-call batch, first start, first
//! load of the JavaScript and Python examples). `TOOLHOST_BENCH_SCALE` multiplies the iteration
//! counts (default 1; 0.2 for a quick look).
//!
//! Timings on shared machines are noisy: every comparison interleaves its two
//! sides and reports medians (and p99 where said); ratios, not absolute
//! times, are what carries from one machine to another.

/// The allocator the toolhost binary ships with (see its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod batch;
mod egress;
mod http;
mod jail;
mod kill;
mod mcp;
mod memory;
mod overhead;
mod paths;
mod plain;
mod processes;
mod record;
mod remote;
mod search;
mod startup;
mod table;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use toolhost::HostBuilder;

const SECTIONS: &[&str] = &[
    "overhead",
    "batch",
    "kill",
    "memory",
    "startup",
    "search",
    "jail",
    "http",
    "mcp",
    "egress",
    "processes",
    "remote",
    "record",
    "paths",
];

/// Settings shared by the sections.
pub struct Config {
    scale: f64,
}

impl Config {
    /// `n` iterations scaled by `TOOLHOST_BENCH_SCALE` (at least 1).
    pub fn scaled(&self, n: usize) -> usize {
        ((n as f64 * self.scale).round() as usize).max(1)
    }
}

/// The runtime the CLI uses: multi-threaded, one worker per core.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A host on `workspace` with the testkit guest, every tool active and no
/// user configuration.
pub fn testkit_host(workspace: &Path) -> HostBuilder {
    toolhost::Host::builder()
        .workspace(workspace)
        .user_config_dir(None)
        .extensions(|e| e.load(toolhost_tests::TESTKIT))
        .all_tools_active()
        .cancel_grace(Duration::from_millis(300))
}

/// Run one call `name` with `arguments` through the whole pipeline, as a
/// batch of its own: its text and wall time. It must succeed.
pub fn timed_call(
    rt: &tokio::runtime::Runtime,
    host: &toolhost::Host,
    name: &str,
    arguments: serde_json::Value,
) -> (String, Duration) {
    let message = toolhost::AssistantMessage::from_calls(vec![toolhost::ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments,
    }]);
    let start = Instant::now();
    let outcome = rt.block_on(host.batch(&message).into_future());
    let elapsed = start.elapsed();
    let result = &outcome.results[0];
    assert!(!result.is_error, "{name}: {}", result.text());
    (result.text(), elapsed)
}

/// Run `command` (stdin closed) to its end: its output and wall time. It
/// must succeed; `what` names it if it does not.
pub fn timed_output(command: &mut Command, what: &str) -> (Output, Duration) {
    let start = Instant::now();
    let out = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {what}: {e}"));
    let elapsed = start.elapsed();
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, elapsed)
}

fn main() {
    if memory::child_main() || mcp::child_main() {
        return;
    }
    // `cargo bench` passes `--bench`; other arguments name sections.
    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    for name in &chosen {
        assert!(
            SECTIONS.contains(&name.as_str()),
            "unknown section {name}; the sections are {SECTIONS:?}"
        );
    }
    let cfg = Config {
        scale: std::env::var("TOOLHOST_BENCH_SCALE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1.0),
    };
    let mut rows = Vec::new();
    for section in SECTIONS {
        if !chosen.is_empty() && !chosen.iter().any(|c| c == section) {
            continue;
        }
        eprintln!("running {section} ...");
        let start = std::time::Instant::now();
        match *section {
            "overhead" => overhead::run(&cfg, &mut rows),
            "batch" => batch::run(&cfg, &mut rows),
            "kill" => kill::run(&cfg, &mut rows),
            "memory" => memory::run(&mut rows),
            "startup" => startup::run(&cfg, &mut rows),
            "search" => search::run(&cfg, &mut rows),
            "jail" => jail::run(&cfg, &mut rows),
            "processes" => processes::run(&cfg, &mut rows),
            "remote" => remote::run(&cfg, &mut rows),
            "record" => record::run(&cfg, &mut rows),
            "http" => http::run(&cfg, &mut rows),
            "mcp" => mcp::run(&cfg, &mut rows),
            "egress" => egress::run(&cfg, &mut rows),
            "paths" => paths::run(&cfg, &mut rows),
            _ => unreachable!(),
        }
        eprintln!("  {section}: {:.1} s", start.elapsed().as_secs_f64());
    }
    println!(
        "toolhost {} on {} cores ({}), medians unless said",
        env!("CARGO_PKG_VERSION"),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::consts::ARCH,
    );
    println!();
    table::print(&rows);
}

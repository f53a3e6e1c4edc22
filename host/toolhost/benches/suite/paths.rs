//! The paths a model uses most, each beside Pi 0.85 doing the same in the
//! same run (or plain wasmtime, where Pi has no counterpart):
//!
//! * `bash` printing 50 MB and 10 MB: `toolhost call bash` as a process
//!   against Pi's bash tool as a process (Node's start, Pi's modules, the
//!   call), with Pi's in-process time beside it; and the host's peak RSS
//!   for 50 MB against an idle call's.
//! * 2,001 `read` calls in one batch with every event written as a JSON
//!   line: `toolhost run` against Pi's agent loop printing its events (as
//!   `pi --mode json` does), cost per call (toolhost's process floor, an
//!   empty batch, taken off; Pi's in-process loop).
//! * The same batch as a model sends it: 2,001 reads of 64 distinct files of
//!   100 lines (4.5 KB), round-robin, against Pi's loop on the same files.
//! * 64 `read` calls, parallel against sequential, Pi's speed-up beside
//!   toolhost's (the `batch` section has toolhost's own row).
//! * First start on a fresh machine (`toolhost list`, empty compile cache)
//!   against Pi's start (Node and Pi's modules).
//! * First load of the JavaScript and Python examples (empty cache)
//!   against plain wasmtime compiling the same component.
//!
//! Pi comes from `scripts/pi-baseline/install` (Node 22 and Pi 0.85.0 in
//! `target/pi`, installed by `scripts/bench`); without it the Pi rows are
//! skipped, and the bench says so.

use crate::startup::toolhost_bin;
use crate::table::{Row, mb, median, ms, ratio};
use crate::{Config, timed_output};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Node 22 and the baseline scripts, when installed.
struct Pi {
    /// Where Pi and Node are installed (`target/pi`).
    dir: PathBuf,
    node: PathBuf,
    scripts: PathBuf,
}

impl Pi {
    fn find() -> Option<Pi> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dir = std::env::var_os("PI_BASELINE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join("target/pi"));
        let node = dir.join("node_modules/node/bin/node");
        let pi = dir.join("node_modules/@earendil-works/pi-coding-agent/package.json");
        (node.is_file() && pi.is_file()).then(|| Pi {
            dir: dir.clone(),
            node,
            scripts: repo.join("scripts/pi-baseline"),
        })
    }

    /// Run a baseline script; its JSON line (stdout, or the last line of
    /// stderr for `batch.mjs`) and its wall time as a process.
    fn run(&self, script: &str, args: &[&str], cwd: &Path) -> (Value, Duration) {
        let (out, elapsed) = timed_output(
            Command::new(&self.node)
                .arg(self.scripts.join(script))
                .args(args)
                .current_dir(cwd)
                .env("PI_BASELINE_DIR", &self.dir),
            &format!("node {script} {args:?}"),
        );
        let text = if script == "batch.mjs" {
            String::from_utf8_lossy(&out.stderr).into_owned()
        } else {
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let line = text
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or("{}");
        (serde_json::from_str(line).unwrap_or_default(), elapsed)
    }
}

/// A `toolhost` process: its wall time, and its peak RSS in bytes.
fn toolhost(
    bin: &Path,
    ws: &Path,
    cache: &Path,
    args: &[&str],
    stdin: Option<&Path>,
) -> (Duration, u64) {
    let mut command = Command::new(bin);
    command
        .arg("--workspace")
        .arg(ws)
        .args(args)
        .env("TOOLHOST_CACHE_DIR", cache)
        .env("XDG_CONFIG_HOME", ws.join(".config-none"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match stdin {
        Some(file) => command.stdin(std::fs::File::open(file).unwrap()),
        None => command.stdin(Stdio::null()),
    };
    let start = Instant::now();
    let child = command.spawn().expect("running toolhost");
    let (status, rss) = wait_with_rss(child);
    let elapsed = start.elapsed();
    assert!(status == 0, "toolhost {args:?} exited with {status}");
    (elapsed, rss)
}

/// Wait for `child`; its exit status and peak resident memory: Linux's
/// `wait4` reports the larger of its own and that of the descendants it
/// waited for (its commands).
#[allow(unsafe_code)]
fn wait_with_rss(child: std::process::Child) -> (i32, u64) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain data the kernel fills; `pid` is our child,
    // not yet reaped (the `Child` is dropped without waiting).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4");
    std::mem::forget(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage.ru_maxrss as u64 * 1024)
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let Some(bin) = toolhost_bin() else {
        eprintln!("  paths: skipped: no toolhost binary (scripts/bench builds it)");
        return;
    };
    let pi = Pi::find();
    if pi.is_none() {
        eprintln!(
            "  paths: Pi 0.85 is not installed (scripts/pi-baseline/install): its rows are skipped"
        );
    }
    let ws = tempfile::tempdir().unwrap();
    let warm = tempfile::tempdir().unwrap();
    let runs = cfg.scaled(5);

    let setup = Setup {
        bin: &bin,
        ws: ws.path(),
        cache: warm.path(),
        pi: pi.as_ref(),
        runs,
    };
    bash_rows(setup, rows);
    batch_rows(setup, rows);
    realistic_batch_row(setup, rows);
    first_start_rows(setup, rows);
    first_load_rows(setup, rows);
}

/// What every group of rows runs with: the binary, a workspace, a warm
/// compile cache, Pi when installed, and how many runs make a median.
#[derive(Clone, Copy)]
struct Setup<'a> {
    bin: &'a Path,
    ws: &'a Path,
    cache: &'a Path,
    pi: Option<&'a Pi>,
    runs: usize,
}

fn bash_rows(setup: Setup, rows: &mut Vec<Row>) {
    let Setup {
        bin,
        ws,
        cache,
        pi,
        runs,
    } = setup;
    let call = |bytes: u64| {
        let args = format!(r#"{{"command":"yes 0123456789 | head -c {bytes}"}}"#);
        toolhost(bin, ws, cache, &["call", "bash", &args], None)
    };
    call(1); // compile cache and page cache warm
    let idle_rss = (0..runs)
        .map(|_| {
            toolhost(
                bin,
                ws,
                cache,
                &["call", "bash", r#"{"command":"true"}"#],
                None,
            )
            .1
        })
        .max()
        .unwrap();
    for (bytes, label) in [(50_000_000u64, "50 MB"), (10_000_000, "10 MB")] {
        let (mut ours, mut theirs, mut inside, mut peak) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for _ in 0..runs {
            let (time, rss) = call(bytes);
            ours.push(time);
            peak = peak.max(rss);
            if let Some(pi) = pi {
                let n = bytes.to_string();
                let (json, time) = pi.run("bash.mjs", &["--bytes", &n, "--runs", "1"], ws);
                theirs.push(time);
                if let Some(run) = json["median_ms"].as_f64() {
                    inside.push(Duration::from_secs_f64(run / 1e3));
                }
            }
        }
        let ours = median(&ours);
        let mut row = Row::new(
            format!("bash printing {label}, `toolhost call` (a process)"),
            ms(ours),
        );
        if !theirs.is_empty() {
            let (theirs, inside) = (median(&theirs), median(&inside));
            row = row
                .baseline(format!(
                    "Pi's bash as a process {} (in-process {})",
                    ms(theirs),
                    ms(inside)
                ))
                .ratio(ratio(ours, theirs))
                .target(
                    "≤ 0.5× Pi's process",
                    ours.as_secs_f64() <= 0.5 * theirs.as_secs_f64(),
                );
        }
        rows.push(row);
        if bytes == 50_000_000 {
            rows.push(
                Row::new("peak RSS of the host, bash printing 50 MB", mb(peak as f64))
                    .baseline(format!("an idle call (`true`) {}", mb(idle_rss as f64)))
                    .ratio(peak as f64 / idle_rss as f64)
                    .target(
                        "within 50 MB of idle",
                        peak.saturating_sub(idle_rss) <= 50 << 20,
                    ),
            );
        }
    }
}

/// `calls` `read` calls of `file{i}.txt` as one assistant message.
fn read_batch(calls: usize) -> Value {
    let content: Vec<Value> = (0..calls)
        .map(|i| serde_json::json!({"type": "toolCall", "id": format!("call_{i}"), "name": "read", "arguments": {"path": format!("file{i}.txt")}}))
        .collect();
    serde_json::json!({"role": "assistant", "stopReason": "toolUse", "content": content})
}

/// 2,001 reads of 64 files of 100 lines, round-robin, events as JSON lines:
/// toolhost's cost per call against Pi's loop, both on the same files
/// (the text Pi's script writes, `line {l:4} of file {i:2}: …`).
fn realistic_batch_row(setup: Setup, rows: &mut Vec<Row>) {
    const CALLS: usize = 2001;
    const FILES: usize = 64;
    const LINES: usize = 100;
    let dir = setup.ws.join("reads-100-lines");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..FILES {
        let text: String = (0..LINES)
            .map(|l| format!("line {l:4} of file {i:2}: some text to read back\n"))
            .collect();
        std::fs::write(dir.join(format!("file{i}.txt")), text).unwrap();
    }
    let content: Vec<Value> = (0..CALLS)
        .map(|i| {
            serde_json::json!({"type": "toolCall", "id": format!("call_{i}"), "name": "read",
                "arguments": {"path": format!("file{}.txt", i % FILES)}})
        })
        .collect();
    let message =
        serde_json::json!({"role": "assistant", "stopReason": "toolUse", "content": content});
    let (n, m, l) = (CALLS.to_string(), FILES.to_string(), LINES.to_string());
    rows.push(per_call_row(
        setup,
        (&dir, &message, CALLS),
        &["--reads", &n, "--files", &m, "--lines", &l],
        format!("{CALLS} reads of {FILES} files of {LINES} lines, events as JSON lines: per call"),
        "Pi's loop on the same files",
    ));
}

/// `message` (`calls` calls) run by `toolhost run` in `dir`, its cost per
/// call (an empty batch's taken off), against Pi's loop run by `batch.mjs`
/// with `pi_args` in the same directory.
fn per_call_row(
    setup: Setup,
    (dir, message, calls): (&Path, &Value, usize),
    pi_args: &[&str],
    label: String,
    baseline: &str,
) -> Row {
    let (bin, ws, cache, pi, runs) = (setup.bin, setup.ws, setup.cache, setup.pi, setup.runs);
    let full = dir.join("batch.json");
    std::fs::write(&full, message.to_string()).unwrap();
    let empty = dir.join("empty.json");
    std::fs::write(&empty, read_batch(0).to_string()).unwrap();
    let run = |file: &Path| toolhost(bin, dir, cache, &["run", "-"], Some(file)).0;
    run(&full);
    let (mut ours, mut floor, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        ours.push(run(&full));
        floor.push(run(&empty));
        if let Some(pi) = pi {
            let dir = dir.to_string_lossy();
            let mut args = pi_args.to_vec();
            args.extend(["--dir", &dir, "--runs", "1"]);
            let (json, _) = pi.run("batch.mjs", &args, ws);
            if let Some(per_call) = json["per_call_us"].as_f64() {
                theirs.push(Duration::from_secs_f64(per_call / 1e6));
            }
        }
    }
    let per_call = median(&ours).saturating_sub(median(&floor)) / calls as u32;
    let row = Row::new(label, format!("{:.0} µs", per_call.as_secs_f64() * 1e6));
    if theirs.is_empty() {
        return row;
    }
    let theirs = median(&theirs);
    row.baseline(format!("{baseline} {:.0} µs", theirs.as_secs_f64() * 1e6))
        .ratio(ratio(per_call, theirs))
        .target(
            "≤ 0.33×",
            per_call.as_secs_f64() <= 0.33 * theirs.as_secs_f64(),
        )
}

fn batch_rows(setup: Setup, rows: &mut Vec<Row>) {
    let (ws, pi, runs) = (setup.ws, setup.pi, setup.runs);
    const CALLS: usize = 2001;
    let dir = ws.join("reads");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..CALLS {
        std::fs::write(
            dir.join(format!("file{i}.txt")),
            format!("line one of file {i}\nline two\n"),
        )
        .unwrap();
    }
    let n = CALLS.to_string();
    rows.push(per_call_row(
        setup,
        (&dir, &read_batch(CALLS), CALLS),
        &["--reads", &n],
        format!("{CALLS} `read` calls in one batch, events as JSON lines: per call"),
        "Pi's loop printing its events",
    ));

    if let Some(pi) = pi {
        let files = ws.join("reads64");
        std::fs::create_dir_all(&files).unwrap();
        let (json, _) = pi.run(
            "batch.mjs",
            &[
                "--reads",
                "64",
                "--lines",
                "400",
                "--dir",
                &files.to_string_lossy(),
                "--compare",
                "--runs",
                &(3 * runs).to_string(),
            ],
            ws,
        );
        let median_of = |mode: &str| json[mode]["batch_ms"]["median_ms"].as_f64();
        let (par, seq) = (median_of("parallel"), median_of("sequential"));
        if let (Some(par), Some(seq)) = (par, seq) {
            let figure = "Pi: 64 × read, parallel against sequential";
            let baseline = format!("sequential {seq:.1} ms");
            rows.push(Row::compared(
                figure,
                format!("{par:.1} ms"),
                baseline,
                seq / par,
            ));
        }
    }
}

fn first_start_rows(setup: Setup, rows: &mut Vec<Row>) {
    let Setup {
        bin, ws, pi, runs, ..
    } = setup;
    let mut cold = Vec::new();
    for _ in 0..runs {
        let empty = tempfile::tempdir().unwrap();
        cold.push(toolhost(bin, ws, empty.path(), &["list"], None).0);
    }
    let cold = median(&cold);
    let mut row = Row::new(
        "first start: `toolhost list`, empty compile cache",
        ms(cold),
    );
    if let Some(pi) = pi {
        let starts: Vec<Duration> = (0..runs)
            .map(|_| {
                let (json, _) = pi.run("bash.mjs", &["--bytes", "0", "--runs", "1"], ws);
                Duration::from_secs_f64(json["import_ms"].as_f64().unwrap_or(0.0) / 1e3)
            })
            .collect();
        row = row.baseline(format!(
            "Pi's start (Node, Pi's modules) {}",
            ms(median(&starts))
        ));
    }
    rows.push(row.target("≤ 50 ms", cold <= Duration::from_millis(50)));
}

fn first_load_rows(setup: Setup, rows: &mut Vec<Row>) {
    let Setup { bin, ws, runs, .. } = setup;
    let examples = Path::new(toolhost_tests::EXAMPLES);
    for (file, label, goal) in [
        ("jsonquery.wasm", "JavaScript", Duration::from_millis(300)),
        ("csvstats.wasm", "Python", Duration::from_secs(1)),
    ] {
        let path = examples.join(file);
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!(
                "  paths: {} is not built (guest-tools/examples/build.sh): skipped",
                path.display()
            );
            continue;
        };
        let ext = path.to_string_lossy();
        let (mut loads, mut plain, mut quick) = (Vec::new(), Vec::new(), Vec::new());
        // Plain wasmtime compiling it with Cranelift, and with Winch (the
        // quick compiler toolhost loads large components with first): the
        // floor of a first load.
        let compile = |strategy: wasmtime::Strategy| {
            let mut config = wasmtime::Config::new();
            config.wasm_component_model(true).strategy(strategy);
            let engine = wasmtime::Engine::new(&config).unwrap();
            let start = Instant::now();
            wasmtime::component::Component::from_binary(&engine, &bytes).unwrap();
            start.elapsed()
        };
        for _ in 0..runs.min(3) {
            let empty = tempfile::tempdir().unwrap();
            loads.push(toolhost(bin, ws, empty.path(), &["--extension", &ext, "list"], None).0);
            plain.push(compile(wasmtime::Strategy::Cranelift));
            quick.push(compile(wasmtime::Strategy::Winch));
        }
        let (load, plain, quick) = (median(&loads), median(&plain), median(&quick));
        rows.push(
            Row::new(
                format!("first load of the {label} example, empty cache (`toolhost list`)"),
                ms(load),
            )
            .baseline(format!(
                "plain wasmtime compiling it {} (Winch {})",
                ms(plain),
                ms(quick)
            ))
            .ratio(ratio(load, plain))
            .target(format!("≤ {}", ms(goal)), load <= goal),
        );
    }
}

//! Session processes (issue 26): what starting one costs, and one poll of
//! its output, through the whole pipeline.
//!
//! - Start: `process_start` of `sleep 600` with `wait: 0` (the call returns
//!   once the process runs), against `bash` running `true` (the same shell,
//!   jail and pipeline; the command ends with the call) in the same rounds.
//!   Every started process is stopped between rounds, outside the timing, so
//!   the session never nears its bound of 8.
//! - Poll: `process_output` of a running, silent process with `wait: 0`,
//!   against `read` of a one-line file: the cheapest call there is.

use crate::table::{Row, alternating_medians, us};
use crate::{Config, runtime, timed_call};
use toolhost::Host;

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("one.txt"), "one line\n").unwrap();
    let host: Host = rt
        .block_on(
            Host::builder()
                .workspace(ws.path())
                .user_config_dir(None)
                .build(),
        )
        .expect("building the host");
    let call = |name: &str, arguments| timed_call(&rt, &host, name, arguments);
    host.set_active_tools(&[
        "bash",
        "read",
        "process_start",
        "process_output",
        "process_stop",
    ]);
    let last_id = std::cell::Cell::new(0u64);
    let start = || {
        let (text, took) = call(
            "process_start",
            serde_json::json!({"command": "sleep 600", "wait": 0}),
        );
        let id = text
            .split("[Process ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|id| id.parse().ok())
            .expect("a process id");
        last_id.set(id);
        took
    };
    let stop = |id: u64| {
        call("process_stop", serde_json::json!({"id": id}));
    };
    let bash = || call("bash", serde_json::json!({"command": "true"})).1;
    // Warm both paths.
    start();
    stop(last_id.get());
    bash();
    let rounds = cfg.scaled(40);
    let (mut starts, mut bashes) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        starts.push(start());
        stop(last_id.get());
        bashes.push(bash());
    }
    let (started, ran) = (crate::table::median(&starts), crate::table::median(&bashes));
    rows.push(Row::timed(
        "session process: start (`process_start` of `sleep 600`, wait 0)",
        started,
        "bash `true`, whole call",
        ran,
        us,
    ));

    start();
    let id = last_id.get();
    let poll = || call("process_output", serde_json::json!({"id": id})).1;
    let read = || call("read", serde_json::json!({"path": "one.txt"})).1;
    let (polled, read) = alternating_medians(cfg.scaled(200), poll, read);
    stop(id);
    rows.push(Row::timed(
        "session process: one poll (`process_output`, nothing new)",
        polled,
        "`read` of a one-line file",
        read,
        us,
    ));
}

//! The process jail's cost per command: `bash` running `true` through the
//! whole pipeline, in the jail (bubblewrap, the init, a cgroup where the host
//! may make one) against the same call without it (Landlock and seccomp
//! alone), interleaved. Skipped, and said so, where the jail cannot run.

use crate::table::{Row, alternating_medians, ms};
use crate::{Config, runtime};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{AssistantMessage, CancellationToken, Host, JailMode, NoEvents, ToolCall};

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    if let toolhost::ops::process::jail::Support::Unavailable { reason } =
        toolhost::ops::process::jail::support()
    {
        eprintln!("  jail: skipped: {reason}");
        return;
    }
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let host = |mode: JailMode| -> Host {
        rt.block_on(
            toolhost::Host::builder()
                .workspace(ws.path())
                .user_config_dir(None)
                .jail(mode)
                .build(),
        )
        .expect("building the host")
    };
    let (jailed, bare) = (host(JailMode::Required), host(JailMode::Off));
    let message = AssistantMessage::from_calls(vec![ToolCall {
        id: "call_1".into(),
        name: "bash".into(),
        arguments: serde_json::json!({"command": "true"}),
    }]);
    let time = |host: &Host| -> Duration {
        let start = Instant::now();
        let outcome =
            rt.block_on(host.run_batch(&message, CancellationToken::new(), Arc::new(NoEvents)));
        let elapsed = start.elapsed();
        assert!(
            !outcome.results[0].is_error,
            "{}",
            outcome.results[0].text()
        );
        elapsed
    };
    // Warm both (the jail's probe, compiled components).
    time(&jailed);
    time(&bare);
    let (with, without) = alternating_medians(cfg.scaled(60), || time(&jailed), || time(&bare));
    let cost = with.saturating_sub(without);
    rows.push(
        Row::timed(
            "bash `true`, whole call, in the jail",
            with,
            "without the jail",
            without,
            ms,
        )
        .target(
            "jail ≤ 15 ms per command",
            cost <= Duration::from_millis(15),
        ),
    );
}

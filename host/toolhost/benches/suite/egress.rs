//! The egress proxy (`[shell] network = [...]`): what a command's
//! connections cost through it, against the same connections made directly
//! (`network = true`), both from a jailed `bash` in the same run, to a
//! server on loopback.
//!
//! A Python client inside the command measures itself, so the command's
//! start is not counted: the time of one connection (connect, a request,
//! its whole answer, close), the median of many in a row; and the
//! throughput of one 100 MiB download.

use crate::table::Row;
use crate::{Config, runtime};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

/// Bytes of the large download.
const BIG: usize = 100 << 20;

/// A server answering `/small` with a few bytes and `/big` with [`BIG`].
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                loop {
                    let mut header = String::new();
                    match reader.read_line(&mut header) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if header == "\r\n" => break,
                        Ok(_) => {}
                    }
                }
                let mut out = stream;
                let size = if line.contains("/big") { BIG } else { 5 };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n"
                );
                if out.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = vec![b'x'; 64 << 10];
                let mut left = size;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if out.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    left -= n;
                }
            });
        }
    });
    port
}

/// The client: `python3 client.py MODE N` with MODE `proxy` or `direct`;
/// prints `conn_us=…` (the median connection) and `mib_s=…`.
const CLIENT: &str = r#"
import socket, sys, time
mode, n, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def fetch(path):
    if mode == 'proxy':
        s = socket.create_connection(('127.0.0.1', 3128))
        s.sendall(b'GET http://localhost:%d%s HTTP/1.1\r\nhost: x\r\n\r\n' % (port, path))
    else:
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(b'GET %s HTTP/1.1\r\nhost: x\r\n\r\n' % path)
    got = 0
    while True:
        chunk = s.recv(1 << 20)
        if not chunk: break
        got += len(chunk)
    s.close()
    return got
times = []
for _ in range(n):
    start = time.perf_counter(); fetch(b'/small'); times.append(time.perf_counter() - start)
times.sort()
start = time.perf_counter(); got = fetch(b'/big'); took = time.perf_counter() - start
assert got > 100 << 20, got
print('conn_us=%.1f mib_s=%.1f' % (times[len(times) // 2] * 1e6, (got / (1 << 20)) / took))
"#;

/// The two figures of one mode, measured by a jailed bash under `network`.
fn measure(port: u16, mode: &str, network: &str, n: usize) -> (Duration, f64) {
    let ws = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("client.py"), CLIENT).unwrap();
    std::fs::write(
        config.path().join("toolhost.toml"),
        format!("[shell]\nnetwork = {network}\n"),
    )
    .unwrap();
    let rt = runtime();
    let host = rt
        .block_on(
            toolhost::Host::builder()
                .workspace(ws.path())
                .user_config_dir(Some(config.path().to_path_buf()))
                .build(),
        )
        .expect("building the host");
    let command = format!("python3 client.py {mode} {n} {port}");
    let call = toolhost::ToolCall {
        id: "egress".into(),
        name: "bash".into(),
        arguments: serde_json::json!({"command": command, "timeout": 300}),
    };
    let result = rt.block_on(async { host.call(call).await });
    let text = result.text();
    assert!(!result.is_error, "{mode}: {text}");
    let field = |name: &str| -> f64 {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{mode}: no {name} in {text}"))
    };
    (
        Duration::from_secs_f64(field("conn_us=") / 1e6),
        field("mib_s="),
    )
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let port = serve();
    let n = cfg.scaled(500);
    let (direct, direct_mib) = measure(port, "direct", "true", n);
    let (proxied, proxied_mib) = measure(port, "proxy", &format!("[\"localhost:{port}\"]"), n);
    rows.push(Row::timed(
        "egress proxy: one connection (connect, request, answer), median",
        proxied,
        "direct",
        direct,
        |d| format!("{:.0} µs", d.as_secs_f64() * 1e6),
    ));
    rows.push(Row::compared(
        "egress proxy: a 100 MiB download",
        format!("{proxied_mib:.0} MiB/s"),
        format!("direct {direct_mib:.0} MiB/s"),
        proxied_mib / direct_mib,
    ));
}

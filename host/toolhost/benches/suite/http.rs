//! MCP over HTTP under load: `read` calls through `toolhost mcp --http` on
//! loopback by 1, 8 and 32 clients at once (each its own connection, one
//! call after another), beside the same calls through `toolhost mcp` on
//! stdio with as many calls in flight on its one pipe. Both speak revision
//! 2026-07-28, so every request is the same self-contained JSON-RPC call.
//!
//! Bounded: each client makes a fixed number of calls, and a side stops
//! early after [`TIME_CAP`]. Reported: calls per second and the p50/p99
//! latency of one call, as a client sees it.

use crate::Config;
use crate::startup::toolhost_bin;
use crate::table::{Row, ms, quantile, ratio};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

const TIME_CAP: Duration = Duration::from_secs(20);

const TOKEN: &str = "bench-token-0123456789abcdef";

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "read", "arguments": {"path": "notes.txt"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
}

/// What one load run measured.
struct Load {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Load {
    /// The latencies of every client's task, once all have ended; the
    /// server stopped.
    async fn gather(
        tasks: Vec<tokio::task::JoinHandle<Vec<Duration>>>,
        start: Instant,
        mut child: tokio::process::Child,
    ) -> Load {
        let mut latencies = Vec::new();
        for task in tasks {
            latencies.extend(task.await.unwrap());
        }
        let elapsed = start.elapsed();
        let _ = child.kill().await;
        Load { latencies, elapsed }
    }

    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let Some(bin) = toolhost_bin() else {
        eprintln!("  http: skipped: no toolhost binary (scripts/bench builds it)");
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "a line of notes\n".repeat(64)).unwrap();
    let config = tempfile::tempdir().unwrap();
    // Measured as it is served: every request carries the bearer token.
    let token_file = config.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let rt = crate::runtime();
    let command = |args: &[&str]| {
        let mut command = tokio::process::Command::new(&bin);
        command
            .arg("--workspace")
            .arg(ws.path())
            .args(args)
            .env("XDG_CONFIG_HOME", config.path())
            .kill_on_drop(true);
        command
    };
    let calls = cfg.scaled(400);
    for clients in [1usize, 8, 32] {
        let (http, stdio) = rt.block_on(async {
            let mut server = command(&["mcp", "--http", "127.0.0.1:0", "--token-file"]);
            server.arg(&token_file);
            let http = over_http(server, clients, calls).await;
            let stdio = over_stdio(command(&["mcp"]), clients, calls).await;
            (http, stdio)
        });
        let p = |load: &Load, q| quantile(&load.latencies, q);
        rows.push(
            Row::new(
                format!("MCP over HTTP, `read`, {clients} client(s): calls/s"),
                format!("{:.0}/s", http.per_second()),
            )
            .baseline(format!(
                "stdio, {clients} in flight {:.0}/s",
                stdio.per_second()
            ))
            .ratio(http.per_second() / stdio.per_second()),
        );
        rows.push(
            Row::new(
                format!("MCP over HTTP, `read`, {clients} client(s): p50 / p99"),
                format!("{} / {}", ms(p(&http, 0.5)), ms(p(&http, 0.99))),
            )
            .baseline(format!(
                "stdio {} / {}",
                ms(p(&stdio, 0.5)),
                ms(p(&stdio, 0.99))
            ))
            .ratio(ratio(p(&http, 0.5), p(&stdio, 0.5))),
        );
    }
}

/// `clients` connections to `toolhost mcp --http`, each making `calls`
/// calls in turn.
/// `toolhost mcp` started with these standard streams (in, out, err).
fn started(
    command: &mut tokio::process::Command,
    [stdin, stdout, stderr]: [Stdio; 3],
) -> tokio::process::Child {
    let command = command.stdin(stdin).stdout(stdout).stderr(stderr);
    command.spawn().expect("starting toolhost mcp")
}

async fn over_http(mut command: tokio::process::Command, clients: usize, calls: usize) -> Load {
    let mut child = started(&mut command, [Stdio::null(), Stdio::null(), Stdio::piped()]);
    let stderr = child.stderr.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let prefix = "toolhost mcp: listening on http://";
    let addr = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("toolhost mcp --http exited before listening");
        if let Some(rest) = line.strip_prefix(prefix) {
            break rest.trim_end_matches("/mcp").to_string();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let deadline = Instant::now() + TIME_CAP;
    // One warm-up call compiles nothing new but fills every cache.
    http_client(&addr, 1, deadline).await;
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(http_client_owned(addr.clone(), calls, deadline)))
        .collect();
    Load::gather(tasks, start, child).await
}

async fn http_client_owned(addr: String, calls: usize, deadline: Instant) -> Vec<Duration> {
    http_client(&addr, calls, deadline).await
}

/// One keep-alive connection making `calls` calls, one after another.
async fn http_client(addr: &str, calls: usize, deadline: Instant) -> Vec<Duration> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut latencies = Vec::with_capacity(calls);
    for id in 0..calls as u64 {
        if Instant::now() > deadline {
            break;
        }
        let body = call(id).to_string();
        let request = http::Request::post("/mcp")
            .header("host", addr)
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "read")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let start = Instant::now();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        latencies.push(start.elapsed());
        // One SSE event holding the result.
        let text = String::from_utf8_lossy(&bytes);
        let data = text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("an SSE data line");
        check_result(&serde_json::from_str(data).unwrap());
    }
    latencies
}

fn check_result(response: &Value) {
    assert_eq!(
        response["result"]["content"][0]["text"]
            .as_str()
            .map(str::len),
        Some(16 * 64),
        "{response}"
    );
}

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// `toolhost mcp` on stdio with `in_flight` callers sharing its pipe, each
/// making `calls` calls in turn.
async fn over_stdio(mut command: tokio::process::Command, in_flight: usize, calls: usize) -> Load {
    let mut child = started(
        &mut command,
        [Stdio::piped(), Stdio::piped(), Stdio::null()],
    );
    let stdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take().unwrap()));
    let waiting: Waiting = Arc::default();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let readers = waiting.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let response: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = response["id"].as_u64() else {
                continue;
            };
            if let Some(tx) = readers.lock().unwrap().remove(&id) {
                let _ = tx.send(response);
            }
        }
    });
    let ids = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let one = |stdin: Arc<tokio::sync::Mutex<tokio::process::ChildStdin>>,
               waiting: Waiting,
               ids: Arc<std::sync::atomic::AtomicU64>| async move {
        let id = ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        waiting.lock().unwrap().insert(id, tx);
        let mut line = call(id).to_string();
        line.push('\n');
        let start = Instant::now();
        stdin.lock().await.write_all(line.as_bytes()).await.unwrap();
        let response = rx.await.expect("toolhost mcp answered");
        let latency = start.elapsed();
        check_result(&response);
        latency
    };
    let deadline = Instant::now() + TIME_CAP;
    one(stdin.clone(), waiting.clone(), ids.clone()).await;
    let start = Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let (stdin, waiting, ids) = (stdin.clone(), waiting.clone(), ids.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(calls);
                for _ in 0..calls {
                    if Instant::now() > deadline {
                        break;
                    }
                    latencies.push(one(stdin.clone(), waiting.clone(), ids.clone()).await);
                }
                latencies
            })
        })
        .collect();
    Load::gather(tasks, start, child).await
}

//! `toolhost serve --http`: the JSON-RPC protocol over HTTP at `/rpc`, and the
//! listener's rules (token, Host, Origin, body size), driven by a plain
//! HTTP/1.1 client written here over a TCP socket.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "serve-http-test-token-0123456789";

/// How long to wait for the server before calling it stuck (a bound on a
/// failure, not a timing check).
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `toolhost serve --http 127.0.0.1:0` with the testkit loaded.
struct HttpServer {
    child: Child,
    addr: String,
    _token_dir: tempfile::TempDir,
}

impl HttpServer {
    fn start(ws: &Workspace) -> HttpServer {
        let token_dir = tempfile::tempdir().unwrap();
        let token_file = token_dir.path().join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let mut child = ws
            .cli()
            .args(["--extension", toolhost_tests::TESTKIT])
            .args(["serve", "--http", "127.0.0.1:0", "--token-file"])
            .arg(&token_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let prefix = "toolhost serve: listening on http://";
        let addr = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "serve --http exited before listening"
            );
            if let Some(rest) = line.trim().strip_prefix(prefix) {
                break rest.trim_end_matches("/rpc").to_string();
            }
        };
        // Keep reading stderr so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer {
            child,
            addr,
            _token_dir: token_dir,
        }
    }

    /// POST `body` to `path` with the token (unless `headers` replace it).
    fn post(&self, path: &str, body: &str, headers: &[(&str, &str)]) -> Reply {
        let mut all: Vec<(&str, &str)> = vec![("Content-Type", "application/json")];
        let auth = format!("Bearer {TOKEN}");
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            all.push(("Authorization", &auth));
        }
        all.extend_from_slice(headers);
        let mut stream = self.send("POST", path, body.as_bytes(), &all);
        read_reply(&mut stream)
    }

    /// A JSON-RPC request to `/rpc`.
    fn rpc(&self, id: Value, method: &str, params: Value) -> Reply {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post("/rpc", &request.to_string(), &[])
    }

    /// Send a request and return the connection, its reply unread.
    fn send(&self, method: &str, path: &str, body: &[u8], headers: &[(&str, &str)]) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        stream.write_all(head.as_bytes()).unwrap();
        // A refused body may be cut short by the server; what it answered is
        // still read below.
        let _ = stream.write_all(body);
        stream
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body's JSON lines.
    fn lines(&self) -> Vec<Value> {
        self.body
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }
}

/// The status line and headers of a reply.
fn read_head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .parse()
        .unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            return (status, headers);
        }
        let (k, v) = line.split_once(':').unwrap();
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
}

/// The next piece of a chunked body; `None` at its end.
fn read_chunk(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut size = String::new();
    reader.read_line(&mut size).unwrap();
    let size = usize::from_str_radix(size.trim(), 16).unwrap();
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk).unwrap();
    chunk.truncate(size);
    (size > 0).then_some(chunk)
}

fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader);
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let mut body = Vec::new();
    if chunked {
        while let Some(chunk) = read_chunk(&mut reader) {
            body.extend(chunk);
        }
    } else {
        reader.read_to_end(&mut body).unwrap();
    }
    Reply {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

#[test]
fn a_batch_streams_its_events_then_its_response_as_json_lines() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws);
    let message = batch_json(&[
        ("c1", "slow", json!({"ms": 2000})),
        ("c2", "fast", json!({})),
        ("c3", "nope", json!({})),
    ]);
    let reply = server.rpc(json!("b1"), "batch/run", json!({"message": message}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
    let lines = reply.lines();
    let (response, notifications) = lines.split_last().unwrap();
    let events: Vec<Value> = notifications
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "batch/event");
            assert_eq!(n["params"]["id"], "b1");
            n["params"]["event"].clone()
        })
        .collect();
    // The same lines as on stdio: Pi's order (spec §2.3), then the response.
    assert_eq!(event_shape(&events), REVERSE_FINISH_EVENTS);
    assert_eq!(response["id"], "b1");
    assert_eq!(
        result_texts(&response["result"]["toolResults"]),
        [
            "slow done after 2000 ms",
            "fast done",
            "Tool nope not found"
        ]
    );

    // Anything else is one JSON response; a notification gets 202.
    let reply = server.rpc(json!(2), "tools/list", json!({}));
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let listed = &reply.lines()[0];
    assert_eq!(listed["id"], 2);
    assert!(strings_at(&listed["result"]["tools"], "/name").contains(&"read"));
    let note = json!({"jsonrpc": "2.0", "method": "tools/list"}).to_string();
    let reply = server.post("/rpc", &note, &[]);
    assert_eq!((reply.status, reply.body.as_str()), (202, ""));
    let reply = server.post("/rpc", "{\"jsonrpc\":", &[]);
    assert_eq!(reply.lines()[0]["error"]["code"], -32700);
}

#[test]
fn refused_requests_run_nothing() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws);
    let write = batch_json(&[("w", "write", json!({"path": "refused.txt", "content": "x"}))]);
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "batch/run",
                         "params": {"message": write}})
    .to_string();
    let reply = server.post("/rpc", &request, &[("Authorization", "Bearer nope")]);
    assert_eq!(reply.status, 401);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    let reply = server.post("/rpc", &request, &[("Authorization", "")]);
    assert_eq!(reply.status, 401);
    let reply = server.post("/rpc", &request, &[("Origin", "http://evil.example")]);
    assert_eq!(reply.status, 403);
    assert!(
        reply
            .body
            .contains("Origin http://evil.example is not allowed")
    );
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let rebound = format!("evil.example:{port}");
    let reply = server.post("/rpc", &request, &[("Host", &rebound)]);
    assert_eq!(reply.status, 403);
    assert!(reply.body.contains("Host evil.example"), "{}", reply.body);
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(5 << 20));
    let reply = server.post("/rpc", &huge, &[]);
    assert_eq!(reply.status, 413);
    assert!(
        reply.body.contains("limited to 4194304 bytes"),
        "{}",
        reply.body
    );
    let reply = server.post("/nowhere", &request, &[]);
    assert_eq!(reply.status, 404);
    assert!(
        !ws.path.join("refused.txt").exists(),
        "a refused request ran"
    );
    // The same request with the token runs.
    let reply = server.post("/rpc", &request, &[]);
    assert_eq!(reply.status, 200);
    assert_eq!(ws.read("refused.txt"), "x");
}

#[test]
fn thirty_two_clients_each_run_a_batch_at_once() {
    let ws = Workspace::new();
    for i in 0..32 {
        ws.write(&format!("f{i}.txt"), format!("file {i}\n"));
    }
    let server = HttpServer::start(&ws);
    std::thread::scope(|scope| {
        let clients: Vec<_> = (0..32)
            .map(|i| {
                let server = &server;
                scope.spawn(move || {
                    let message = batch_json(&[
                        (
                            &format!("r{i}"),
                            "read",
                            json!({"path": format!("f{i}.txt")}),
                        ),
                        (
                            &format!("b{i}"),
                            "bash",
                            json!({"command": format!("echo client {i}")}),
                        ),
                        (&format!("s{i}"), "slow", json!({"ms": 200})),
                    ]);
                    let reply = server.rpc(json!(i), "batch/run", json!({"message": message}));
                    assert_eq!(reply.status, 200, "{}", reply.body);
                    let lines = reply.lines();
                    let response = lines.last().unwrap();
                    assert_eq!(response["id"], i);
                    assert_eq!(
                        result_texts(&response["result"]["toolResults"]),
                        [
                            format!("file {i}\n").as_str(),
                            format!("client {i}\n").as_str(),
                            "slow done after 200 ms"
                        ]
                    );
                    // Every event of the stream is this client's batch.
                    assert!(
                        lines[..lines.len() - 1]
                            .iter()
                            .all(|l| l["params"]["id"] == i)
                    );
                })
            })
            .collect();
        for client in clients {
            client.join().unwrap();
        }
    });
}

#[test]
fn a_client_that_goes_away_cancels_its_batch() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws);
    let message = batch_json(&[("long", "slow", json!({"ms": 600000}))]);
    let request = json!({"jsonrpc": "2.0", "id": "gone", "method": "batch/run",
                         "params": {"message": message}})
    .to_string();
    let auth = format!("Bearer {TOKEN}");
    let stream = server.send(
        "POST",
        "/rpc",
        request.as_bytes(),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
    );
    let mut reader = BufReader::new(stream);
    let (status, _) = read_head(&mut reader);
    assert_eq!(status, 200);
    let first: Value = serde_json::from_slice(&read_chunk(&mut reader).unwrap()).unwrap();
    assert_eq!(first["params"]["event"]["type"], "tool_execution_start");
    // While its client is connected, the batch runs: its id is taken.
    let probe = json!({"message": batch_json(&[])});
    let running = server.rpc(json!("gone"), "batch/run", probe.clone());
    assert_eq!(
        running.lines()[0]["error"]["message"],
        "Invalid request: id \"gone\" is already used by a running batch"
    );
    drop(reader);
    // Gone: the ten-minute batch ends at once, and its id is free again.
    let start = Instant::now();
    loop {
        let reply = server.rpc(json!(2), "tools/list", json!({}));
        assert_eq!(reply.status, 200);
        let reply = server.rpc(json!("gone"), "batch/run", probe.clone());
        let last = reply.lines().pop().unwrap();
        if last.get("result").is_some() {
            break;
        }
        assert_eq!(
            last["error"]["message"],
            "Invalid request: id \"gone\" is already used by a running batch"
        );
        assert!(
            start.elapsed() < PATIENCE,
            "the batch of a client that went away is still running"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

//! Every message gets its right answer: `toolhost mcp` over stdio and over
//! HTTP, sent what a careless or hostile client sends (JSON the parser
//! refuses, ids of every JSON type and size, parameters that do not fit,
//! messages before the handshake, lines over 16 MiB), answers each message
//! that is or claims to be a request with the JSON-RPC error that fits, with
//! its id whenever it can be read, and never exits or hangs on one. First
//! the cases the attack found, one by one; then a fuzzer of our own that
//! generates message orders, ids and malformed input from a seed, and
//! checks every answer against what the message claims to be.
//!
//! The pipe is read directly, by a thread that splits bytes into lines:
//! waiting with `select()` on a buffered reader misses lines already in its
//! buffer.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long an answer may take before the test calls it missing.
const ANSWER_TIME: Duration = Duration::from_secs(30);

/// `toolhost mcp` on stdio, its output read line by line from the pipe.
struct Stdio_ {
    child: Child,
    input: Option<ChildStdin>,
    lines: mpsc::Receiver<Vec<u8>>,
    /// Lines read while waiting for another (the handshake's answer).
    carried: std::collections::VecDeque<String>,
}

impl Stdio_ {
    fn start(ws: &Workspace, extra: &[&str]) -> Stdio_ {
        let mut cli = ws.cli();
        cli.args(["--extension", toolhost_tests::TESTKIT])
            .args(extra)
            .arg("mcp");
        let mut child = spawn_piped(&mut cli, Stdio::null());
        let mut out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = match out.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                pending.extend_from_slice(&buf[..n]);
                while let Some(at) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=at).collect();
                    if tx.send(line[..line.len() - 1].to_vec()).is_err() {
                        return;
                    }
                }
            }
        });
        Stdio_ {
            input: child.stdin.take(),
            child,
            lines,
            carried: Default::default(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().unwrap();
        input.write_all(bytes).unwrap();
        input.write_all(b"\n").unwrap();
        input.flush().unwrap();
    }

    /// The next line the server wrote, as text; `None` after [`ANSWER_TIME`].
    fn next_line(&mut self, within: Duration) -> Option<String> {
        if let Some(line) = self.carried.pop_front() {
            return Some(line);
        }
        self.lines
            .recv_timeout(within)
            .ok()
            .map(|l| String::from_utf8(l).expect("the server writes UTF-8"))
    }

    /// The next answer (a line with an id and a result or an error),
    /// skipping notifications.
    fn answer(&mut self) -> String {
        loop {
            let line = self
                .next_line(ANSWER_TIME)
                .expect("an answer within the time");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value.get("result").is_some() || value.get("error").is_some() {
                return line;
            }
        }
    }

    /// Nothing more arrives for `wait` (notifications aside).
    fn no_answer(&mut self, wait: Duration) -> Option<String> {
        let end = std::time::Instant::now() + wait;
        while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
            let line = self.next_line(left)?;
            let value: Value = serde_json::from_str(&line).unwrap();
            if value.get("result").is_some() || value.get("error").is_some() {
                return Some(line);
            }
        }
        None
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    fn handshake(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "wire-test", "version": "1"}}})
            .to_string()
            .as_bytes(),
        );
        // Answers to what came before are kept for the caller.
        let mut earlier = Vec::new();
        loop {
            let line = self.answer();
            if line.contains("\"id\":\"init\"") {
                assert!(line.contains("\"result\""), "{line}");
                break;
            }
            earlier.push(line);
        }
        self.carried.extend(earlier);
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The error of an answer line: its id's JSON text, its code.
#[track_caller]
fn error_of(line: &str) -> (String, i64) {
    let value: Value = serde_json::from_str(line).unwrap();
    let code = value["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {line}"));
    // The id's text as written (a number beyond 64 bits must come back as sent).
    let start = line.find("\"id\":").expect("an id member") + 5;
    let rest = &line[start..];
    let end = if let Some(string) = rest.strip_prefix('"') {
        string.find('"').unwrap() + 2
    } else {
        rest.find([',', '}']).unwrap()
    };
    (rest[..end].to_string(), code)
}

/// A `tools/call` of `read` of `a.txt`, with `id` (JSON text).
fn read_a_txt(id: &str) -> String {
    request(
        id,
        "tools/call",
        r#"{"name":"read","arguments":{"path":"a.txt"}}"#,
    )
}

/// A request of `method` with `id` (JSON text) and `params` (JSON text).
fn request(id: &str, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

/// The attack's cases, each with the answer that fits.
fn cases() -> Vec<(&'static str, Vec<u8>, &'static str, i64)> {
    let deep = format!(
        r#"{{"name":"echo","arguments":{{"value":"x","opts":{}1{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    vec![
        (
            "nesting deeper than 128 levels",
            request("11", "tools/call", &deep).into_bytes(),
            "11",
            -32600,
        ),
        (
            "a lone surrogate escape in an argument",
            request(
                "12",
                "tools/call",
                r#"{"name":"echo","arguments":{"value":"\ud800"}}"#,
            )
            .into_bytes(),
            "12",
            -32600,
        ),
        (
            "malformed JSON",
            b"{\"jsonrpc\":\"2.0\",\"id\":13,".to_vec(),
            "null",
            -32700,
        ),
        ("not JSON at all", b"hello".to_vec(), "null", -32700),
        ("a batch", b"[1,2]".to_vec(), "null", -32600),
        (
            "params that is not an object",
            request("14", "tools/list", "[1]").into_bytes(),
            "14",
            -32602,
        ),
        (
            "params that is a string",
            request("\"s-15\"", "ping", "\"x\"").into_bytes(),
            "\"s-15\"",
            -32602,
        ),
        (
            "an integer id beyond 64 bits",
            request("18446744073709551616", "ping", "{}").into_bytes(),
            "18446744073709551616",
            -32600,
        ),
        (
            "an id that is an object",
            request(r#"{"a":1}"#, "ping", "{}").into_bytes(),
            "null",
            -32600,
        ),
        (
            "tools/call with a name that is a number",
            request("16", "tools/call", r#"{"name":5}"#).into_bytes(),
            "16",
            -32602,
        ),
        (
            "logging/setLevel with an unknown level",
            request("17", "logging/setLevel", r#"{"level":"loud"}"#).into_bytes(),
            "17",
            -32602,
        ),
        (
            "a method the server does not serve",
            request("18", "no/such", "{}").into_bytes(),
            "18",
            -32601,
        ),
        (
            "jsonrpc 1.0",
            br#"{"jsonrpc":"1.0","id":19,"method":"ping"}"#.to_vec(),
            "19",
            -32600,
        ),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"ping\",\"params\":{\"a\":\"\xff\"}}"
                .to_vec(),
            "20",
            -32600,
        ),
    ]
}

#[test]
fn over_stdio_every_bad_message_gets_its_answer_and_the_server_goes_on() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    let mut server = Stdio_::start(&ws, &[]);

    // Before the handshake: a notification first (it once made the server
    // exit with status 2), a response, then a request that is no
    // `initialize`: answered, and the server still waits for one.
    server
        .send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    server.send(br#"{"jsonrpc":"2.0","id":"r","result":{}}"#);
    server.send(request("\"early\"", "tools/list", "{}").as_bytes());
    let line = server.answer();
    assert_eq!(error_of(&line).0, "\"early\"", "{line}");
    assert!(server.alive());
    server.handshake();

    for (what, message, id, code) in cases() {
        server.send(&message);
        let line = server.answer();
        assert_eq!(error_of(&line), (id.to_string(), code), "{what}: {line}");
    }
    // A line over 16 MiB, its id at its start.
    let mut big = br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"value":""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', (16 << 20) + 10));
    big.extend_from_slice(br#""}}}"#);
    server.send(&big);
    let line = server.answer();
    assert_eq!(error_of(&line), ("\"big\"".into(), -32600), "{line}");
    // A notification whose parameters do not fit gets nothing (JSON-RPC
    // answers no notification); text that does not parse is answered, as
    // nobody can tell what it was meant to be.
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#);
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":[]}}"#);
    assert_eq!(server.no_answer(Duration::from_millis(300)), None);

    // And the server serves the next call.
    server.send(read_a_txt("99").as_bytes());
    let line = server.answer();
    assert!(line.contains("alpha"), "{line}");
    assert!(server.alive());

    // The end of its input ends it, with success.
    drop(server.input.take());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// A small deterministic generator (xorshift), so that a failure names a
/// seed that reproduces it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What a generated message claims to be, and so what must come back.
#[derive(Debug, PartialEq)]
enum Expect {
    /// An answer with this id's text (a result or an error).
    Answer(String),
    /// An answer with a `null` id (its id unreadable, or not a string or
    /// integer).
    NullAnswer,
    /// Nothing (a notification, a response).
    Nothing,
    /// A damaged message: one answer, with a `null` id or (where its
    /// envelope can still be read) its own id's text.
    Damaged(Option<String>),
}

/// One generated message and what it must get. `n` makes its id unique.
fn generate(rng: &mut Rng, n: usize) -> (Vec<u8>, Expect) {
    let methods = [
        "ping",
        "tools/list",
        "resources/list",
        "prompts/list",
        "logging/setLevel",
        "completion/complete",
        "tools/call",
        "resources/read",
        "no/such-method",
        "initialize",
    ];
    let params = [
        "{}",
        "[]",
        "5",
        "\"text\"",
        "null",
        r#"{"name":"echo","arguments":{"value":"v"}}"#,
        r#"{"name":"read","arguments":{"path":"a.txt"}}"#,
        r#"{"name":5}"#,
        r#"{"level":"debug"}"#,
        r#"{"level":"loud"}"#,
        r#"{"uri":"file:///nowhere"}"#,
        r#"{"name":"echo","arguments":{"value":"\ud800"}}"#,
        r#"{"ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":""}}"#,
    ];
    let method = *rng.pick(&methods);
    let param = *rng.pick(&params);
    // Ids of every JSON type; each readable one unique.
    let (id, expect) = match rng.below(10) {
        0 => (format!("\"s{n}\""), Expect::Answer(format!("\"s{n}\""))),
        1 => (format!("{n}"), Expect::Answer(format!("{n}"))),
        2 => (format!("-{}", n + 1), Expect::Answer(format!("-{}", n + 1))),
        3 => (
            format!("1844674407370955{n:05}"),
            Expect::Answer(format!("1844674407370955{n:05}")),
        ),
        4 => (format!("{n}.5"), Expect::Answer(format!("{n}.5"))),
        5 => ("null".into(), Expect::NullAnswer),
        6 => ("true".into(), Expect::NullAnswer),
        7 => (format!("{{\"n\":{n}}}"), Expect::NullAnswer),
        8 => (format!("[{n}]"), Expect::NullAnswer),
        _ => (String::new(), Expect::Nothing),
    };
    let mut text = if id.is_empty() {
        let name = rng.pick(&[
            "notifications/initialized",
            "notifications/cancelled",
            "notifications/progress",
            "notifications/unknown",
        ]);
        format!(r#"{{"jsonrpc":"2.0","method":"{name}","params":{param}}}"#)
    } else {
        request(&id, method, param)
    };
    // Damage some: cut short, or garbage inside. A request cut short is
    // no longer readable: a parse error, id null.
    let own = match &expect {
        Expect::Answer(id) => Some(id.clone()),
        _ => None,
    };
    let expect = match rng.below(8) {
        0 => {
            let cut = 1 + rng.below(text.len() - 1);
            text.truncate(cut);
            Expect::Damaged(own)
        }
        1 => {
            let at = 1 + rng.below(text.len() - 1);
            text.insert_str(at, "\u{1}}{");
            Expect::Damaged(own)
        }
        _ => expect,
    };
    (text.into_bytes(), expect)
}

#[test]
fn over_stdio_a_fuzzer_finds_every_message_answered_as_it_claims() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    for seed in [0x9e37_79b9_7f4a_7c15_u64, 0x2545_f491_4f6c_dd1d] {
        let mut rng = Rng(seed);
        let mut server = Stdio_::start(&ws, &[]);
        // Half the runs start with messages before the handshake.
        let mut expected = Vec::new();
        for n in 0..300 {
            if n == 20 {
                server.handshake();
            }
            let (message, expect) = generate(&mut rng, n);
            server.send(&message);
            // Before the handshake a readable request that is no ping or
            // initialize still gets an answer (an error), so the oracle
            // holds there too.
            expected.push((String::from_utf8_lossy(&message).into_owned(), expect));
        }
        // Every answer is matched to the message it answers: by its id, or
        // (a null id) to a message whose id could not be read.
        let mut open: Vec<&Expect> = expected
            .iter()
            .map(|(_, e)| e)
            .filter(|e| **e != Expect::Nothing)
            .collect();
        while !open.is_empty() {
            let Some(line) = server.next_line(ANSWER_TIME) else {
                panic!("seed {seed:#x}: no answer for {open:?}\nmessages: {expected:#?}");
            };
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("seed {seed:#x}: not JSON ({e}): {line}"));
            if value.get("result").is_none() && value.get("error").is_none() {
                continue;
            }
            let id = if value.get("error").is_some() {
                error_of(&line).0
            } else {
                value["id"].to_string()
            };
            let matches = |e: &&Expect| match e {
                Expect::Answer(want) => *want == id,
                Expect::NullAnswer => id == "null",
                Expect::Damaged(own) => id == "null" || own.as_deref() == Some(id.as_str()),
                Expect::Nothing => false,
            };
            // Exact ids first, then the null ones.
            let at = open
                .iter()
                .position(|e| matches!(e, Expect::Answer(want) if *want == id))
                .or_else(|| open.iter().position(matches))
                .unwrap_or_else(|| {
                    panic!("seed {seed:#x}: an answer nothing asked for: {line}\nopen: {open:?}")
                });
            open.remove(at);
        }
        assert!(server.alive(), "seed {seed:#x}: the server exited");
        assert_eq!(server.no_answer(Duration::from_millis(300)), None);
    }
}

/// A connection to the server at `url` that has sent a POST of `body`
/// to `/mcp`, with the token and `headers` beside the usual ones.
fn send_post(
    url: &str,
    token: Option<&str>,
    content_type: &str,
    headers: &[String],
    body: &[u8],
) -> std::net::TcpStream {
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(ANSWER_TIME)).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: {content_type}\r\n\
         Accept: application/json, text/event-stream\r\n{auth}{extra}Content-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream
}

/// A raw HTTP/1.1 POST of `body` to the server, with `headers`: the status
/// and the body.
fn post_with(
    url: &str,
    token: Option<&str>,
    content_type: &str,
    headers: &[String],
    body: &[u8],
) -> (u16, String) {
    let mut stream = send_post(url, token, content_type, headers, body);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {answer}"));
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string())
}

/// [`post_with`] and no more headers.
fn post(url: &str, token: Option<&str>, content_type: &str, body: &[u8]) -> (u16, String) {
    post_with(url, token, content_type, &[], body)
}

#[test]
fn over_http_every_bad_message_gets_a_400_with_its_json_rpc_error() {
    let ws = Workspace::new();
    let server = Listening::mcp(&ws, &[]);
    let token = server.token.as_deref();
    for (what, message, id, code) in cases() {
        let (status, body) = post(&server.url, token, "application/json", &message);
        if code == -32601 {
            // A method it does not serve is rmcp's to answer (a session or
            // its metadata first).
            continue;
        }
        assert_eq!(status, 400, "{what}: {body}");
        assert_eq!(
            error_of(body.trim()),
            (id.to_string(), code),
            "{what}: {body}"
        );
    }
    // What is no JSON-RPC message: 400 with a JSON-RPC error, not 415 text.
    let (status, body) = post(&server.url, token, "application/json", b"not a message");
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(body.trim()), ("null".into(), -32700));
    // Another media type is still the media type's refusal.
    let (status, _) = post(&server.url, token, "text/plain", b"{}");
    assert_eq!(status, 415);

    // The fuzzer's messages: every one gets an HTTP answer, and a JSON-RPC
    // error names its id whenever the message was refused here.
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    for n in 0..120 {
        let (message, expect) = generate(&mut rng, n);
        let (status, body) = post(&server.url, token, "application/json", &message);
        if status == 400 && body.trim_start().starts_with('{') {
            let (id, _) = error_of(body.trim());
            match &expect {
                Expect::Answer(want) => assert_eq!(&id, want, "{body}"),
                Expect::Damaged(own) => {
                    assert!(
                        id == "null" || own.as_deref() == Some(id.as_str()),
                        "{body}"
                    )
                }
                Expect::NullAnswer | Expect::Nothing => assert_eq!(id, "null", "{body}"),
            }
        }
        assert!(status < 500, "{status}: {body}");
    }
    // And it still serves a call (revision 2026-07-28: no handshake).
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let (status, body) = post_with(
        &server.url,
        token,
        "application/json",
        &[
            "MCP-Protocol-Version: 2026-07-28".into(),
            "Mcp-Method: tools/list".into(),
        ],
        call.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"tools\""), "{body}");
}

/// A POST of `body` with `headers`, read until the response's head and the
/// first bytes of its body have come, then dropped as a client that goes
/// away does: the head (status line and headers) as text.
fn post_and_drop(url: &str, token: Option<&str>, headers: &[String], body: &str) -> String {
    let mut stream = send_post(url, token, "application/json", headers, body.as_bytes());
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n")
            && got.len() > at + 4
        {
            break;
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    text.split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// `--max-requests 3` counts the calls running, not the connections open: a
/// client that drops each call's connection after its first bytes (the
/// server records the stream so that the call can be resumed, and runs it
/// on) once had twelve commands running at once. Each call here logs when
/// its command starts and ends; never more than three overlap.
#[test]
fn max_requests_bounds_the_calls_running_whatever_their_clients_drop() {
    let ws = Workspace::new();
    let server = Listening::mcp(&ws, &["--max-requests", "3"]);
    let token = server.token.as_deref();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "dropper", "version": "1"}}});
    let head = post_and_drop(&server.url, token, &[], &init.to_string());
    let session = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session: {head}"));
    let headers = vec![
        format!("Mcp-Session-Id: {session}"),
        "MCP-Protocol-Version: 2025-11-25".to_string(),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post_and_drop(&server.url, token, &headers, &initialized.to_string());

    let calls = 8;
    let threads: Vec<_> = (0..calls)
        .map(|i| {
            let (url, token, headers) = (
                server.url.clone(),
                token.map(str::to_string),
                headers.clone(),
            );
            std::thread::spawn(move || {
                let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                    "params": {"name": "bash", "arguments": {
                        "command": "echo s >> conc.log; sleep 1.5; echo e >> conc.log"}}});
                post_and_drop(&url, token.as_deref(), &headers, &call.to_string())
            })
        })
        .collect();
    for thread in threads {
        let head = thread.join().unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }
    // Wait for every command to have ended.
    let log = ws.path.join("conc.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let events = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.matches('e').count() == calls || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        events.matches('e').count(),
        calls,
        "not every call ran: {events:?}"
    );
    let (mut running, mut most) = (0i32, 0i32);
    for event in events.split_whitespace() {
        running += if event == "s" { 1 } else { -1 };
        most = most.max(running);
    }
    assert!(
        most <= 3,
        "{most} commands ran at once under --max-requests 3: {events:?}"
    );
}

/// The orders a client gets wrong or a server must bear: a request between
/// the `initialize` answer and `notifications/initialized`, and requests
/// (good and bad) while the server waits on the client to answer a
/// question of its own (an elicitation). Each gets its answer; the
/// question, answered late, still completes its call.
#[test]
fn over_stdio_requests_before_initialized_and_during_an_elicitation_are_answered() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    let (_tools_dir, tools) = conformance_tools();
    user_policy(
        &ws,
        "[extensions.mcptools]\ntools = true\nclient = [\"elicitation\"]\n",
    );
    let mut server = Stdio_::start(&ws, &["--extension", tools.to_str().unwrap()]);
    server.send(
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "wire-test", "version": "1"}}})
        .to_string()
        .as_bytes(),
    );
    assert!(server.answer().contains("\"id\":\"init\""));
    // Before `notifications/initialized`.
    server.send(request("\"early\"", "tools/list", "{}").as_bytes());
    let line = server.answer();
    assert!(
        line.contains("\"id\":\"early\"") && line.contains("\"tools\""),
        "{line}"
    );
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    server.send(
        request(
            "\"asks\"",
            "tools/call",
            r#"{"name":"test_elicitation","arguments":{"message":"who?"}}"#,
        )
        .as_bytes(),
    );
    let question = loop {
        let line = server.next_line(ANSWER_TIME).expect("the elicitation");
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["method"] == "elicitation/create" {
            break value;
        }
    };
    // While it waits: a ping, a bad request, a call, a parse error.
    server.send(request("\"p\"", "ping", "{}").as_bytes());
    server.send(request("\"bad\"", "tools/call", r#"{"name":5}"#).as_bytes());
    server.send(read_a_txt("\"other\"").as_bytes());
    server.send(b"{oops");
    let mut answers: Vec<String> = (0..4).map(|_| server.answer()).collect();
    answers.sort();
    let ids: Vec<(String, bool)> = answers
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].to_string(), v.get("error").is_some())
        })
        .collect();
    assert!(ids.contains(&("\"p\"".into(), false)), "{answers:?}");
    assert!(ids.contains(&("\"bad\"".into(), true)), "{answers:?}");
    assert!(ids.contains(&("\"other\"".into(), false)), "{answers:?}");
    assert!(ids.contains(&("null".into(), true)), "{answers:?}");
    // The question answered: its call completes.
    server.send(
        json!({"jsonrpc": "2.0", "id": question["id"], "result": {
            "action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}})
        .to_string()
        .as_bytes(),
    );
    let line = server.answer();
    assert!(
        line.contains("\"id\":\"asks\"") && line.contains("User response"),
        "{line}"
    );
}

#[test]
fn over_a_remote_workspace_a_client_calls_tools_and_reads_resources_there() {
    let (here, there) = (Workspace::new(), Workspace::new());
    there.write("r.txt", "remote resource\n");
    let exec = format!(
        "'{}' workspace serve '{}'",
        toolhost_bin().display(),
        there.str()
    );
    let mut server = Stdio_::start(&here, &["--workspace-exec", &exec]);
    server.handshake();
    let call = r#"{"name":"read","arguments":{"path":"r.txt"}}"#;
    server.send(request("1", "tools/call", call).as_bytes());
    let line = server.answer();
    assert!(line.contains(r#""text":"remote resource\n""#), "{line}");
    let uri = format!("file://{}/r.txt", there.str());
    let read = serde_json::json!({ "uri": uri }).to_string();
    server.send(request("2", "resources/read", &read).as_bytes());
    let line = server.answer();
    assert!(line.contains("remote resource"), "{line}");
}

/// A call the client cancels gets no answer, the calls around it do, and a
/// call still running when the client closes its input is answered before
/// the server exits (as rmcp drains its own requests).
#[test]
fn over_stdio_a_cancelled_call_gets_no_answer_and_one_running_at_the_end_does() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\n");
    let mut server = Stdio_::start(&ws, &[]);
    server.handshake();
    let bash = |id: &str, command: &str| {
        request(
            id,
            "tools/call",
            &json!({"name": "bash", "arguments": {"command": command}}).to_string(),
        )
    };
    server.send(bash("\"slow\"", "sleep 30").as_bytes());
    server.send(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}"#,
    );
    server.send(read_a_txt("\"read\"").as_bytes());
    let line = server.answer();
    assert!(
        line.contains("\"id\":\"read\"") && line.contains("alpha"),
        "{line}"
    );
    server.send(bash("\"last\"", "sleep 1; echo done").as_bytes());
    drop(server.input.take());
    let mut rest = Vec::new();
    while let Some(line) = server.next_line(ANSWER_TIME) {
        rest.push(line);
    }
    assert!(
        !rest.iter().any(|line| line.contains("\"id\":\"slow\"")),
        "{rest:?}"
    );
    assert!(
        rest.iter()
            .any(|line| line.contains("\"id\":\"last\"") && line.contains("done")),
        "{rest:?}"
    );
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

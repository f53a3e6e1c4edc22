//! `wasi:http` for extensions granted `http`: the httpget example against a
//! real HTTP server on loopback. The host checks every request (scheme, host
//! and port against the grant, the addresses the name resolves to), bounds
//! the response, records the hosts contacted, and refuses the component at
//! load when nothing is granted.
//!
//! The example is built by `guest-tools/examples/build.sh`, like the others.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A test HTTP/1.1 server on a port of its own, serving each connection in a
/// thread until the test process ends, and counting the connections it saw.
pub(crate) struct Server {
    pub(crate) port: u16,
    connections: Arc<AtomicUsize>,
    /// Each request's path and `authorization` header (empty when none), in
    /// the order they came.
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl Server {
    /// Listen on `addr` (`127.0.0.1:0`, or `0.0.0.0:0` to be reachable
    /// through the machine's own name); `other` is the port `/redirect`
    /// sends clients to.
    pub(crate) fn start(addr: &str, other: u16) -> Server {
        let listener = TcpListener::bind(addr).unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let requests = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let requests = requests.clone();
                std::thread::spawn(move || serve(stream, other, &requests));
            }
        });
        Server {
            port,
            connections,
            seen,
        }
    }

    /// Each request's path and `authorization` header so far.
    pub(crate) fn seen(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap().clone()
    }

    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A request's line and headers (through its blank line), and the reader
/// that holds what follows; `None` if it ends first.
fn read_head(stream: &TcpStream) -> Option<(String, String, BufReader<TcpStream>)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut headers = String::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) if line == "\r\n" => return Some((request_line, headers, reader)),
            Ok(_) => headers.push_str(&line),
        }
    }
}

/// A stand-in server on loopback answering each request with what
/// `answer` gives for its request line: a content type and a body.
fn stand_in(answer: impl Fn(&str) -> (&'static str, Vec<u8>) + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || {
                let Some((line, _, _)) = read_head(&stream) else {
                    return;
                };
                let (kind, body) = answer(&line);
                let mut out = stream;
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n",
                    body.len()
                );
                let _ = out.write_all(&body);
            });
        }
    });
    port
}

/// Answer one request: `/hello` a text, `/redirect` a 302 to `other`'s
/// `/hello`, `/big` 200 KiB without a Content-Length (read to the end),
/// `/echo` the request's headers, in the body and in response headers,
/// `/echo-name` the authorization's token as a response header's name.
fn serve(stream: TcpStream, other: u16, seen: &Mutex<Vec<(String, String)>>) {
    let Some((request_line, headers, mut reader)) = read_head(&stream) else {
        return;
    };
    let path = request_line.split(' ').nth(1).unwrap_or("/").to_string();
    let authorization = headers
        .lines()
        .find_map(|l| l.strip_prefix("authorization: "))
        .unwrap_or_default()
        .to_string();
    seen.lock()
        .unwrap()
        .push((path.clone(), authorization.clone()));
    let mut out = stream;
    let response = match path.as_str() {
        // What an attacker's favourite echo does: the request's headers,
        // compressed (the host cannot read them for the secret).
        "/gzip-echo" => {
            let body = gzip(headers.as_bytes());
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-encoding: gzip\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(&body);
            return;
        }
        "/echo" => format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; echo={authorization}\r\n\
             x-echo: {authorization}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{headers}",
            headers.len()
        ),
        // The secret echoed as a header's *name* (and a trailer's would be
        // the same code): `x-<token>: seen`.
        "/echo-name" => {
            let token = authorization.strip_prefix("Bearer ").unwrap_or("none");
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-{token}: seen\r\n\
                 content-length: 0\r\nconnection: close\r\n\r\n"
            )
        }
        "/hello" => {
            let body = "hello from the test server\n";
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            )
        }
        "/redirect" => format!(
            "HTTP/1.1 302 Found\r\nlocation: http://localhost:{other}/hello\r\n\
             content-length: 0\r\nconnection: close\r\n\r\n"
        ),
        "/hang" => {
            // Never answer: hold the connection until the client leaves.
            let mut rest = Vec::new();
            let _ = std::io::Read::read_to_end(&mut reader, &mut rest);
            return;
        }
        "/big" => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
            let _ = out.write_all(head.as_bytes());
            let chunk = vec![b'x'; 1024];
            for _ in 0..200 {
                if out.write_all(&chunk).is_err() {
                    return;
                }
            }
            return;
        }
        _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into(),
    };
    let _ = out.write_all(response.as_bytes());
}

/// `bytes` gzipped, by the machine's gzip.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = std::process::Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    child.wait_with_output().unwrap().stdout
}

/// The built httpget example; panics with the build command when missing.
#[track_caller]
fn httpget() -> PathBuf {
    crate::examples::example("httpget")
}

/// A workspace with httpget in the user's extensions and `policy` as the
/// user's toolhost.toml.
pub(crate) fn installed(policy: &str) -> Workspace {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.user_extensions()).unwrap();
    std::fs::copy(httpget(), ws.user_extensions().join("httpget.wasm")).unwrap();
    user_policy(&ws, policy);
    ws
}

pub(crate) fn grant(entries: &[String]) -> String {
    let list: Vec<String> = entries.iter().map(|e| format!("{e:?}")).collect();
    format!("[extensions.httpget]\nhttp = [{}]\n", list.join(", "))
}

/// `toolhost call http_get ARGS --json`: the result's text, whether it is an
/// error, and its details.
#[track_caller]
fn get(ws: &Workspace, args: Value) -> (String, bool, Value) {
    let msg = json_out(&toolhost(
        ws,
        &["call", "http_get", &args.to_string(), "--json"],
        None,
    ));
    (
        msg["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        msg["isError"].as_bool().unwrap(),
        msg["details"].clone(),
    )
}

/// A test server, and a workspace whose http_get extension may reach it
/// (as `localhost`).
fn granted_server() -> (Server, Workspace) {
    let server = Server::start("127.0.0.1:0", 1);
    let ws = installed(&grant(&[format!("http://localhost:{}", server.port)]));
    (server, ws)
}

/// A workspace whose shell may reach `localhost:{port}`.
fn shell_reaching(port: u16) -> Workspace {
    let ws = Workspace::new();
    user_policy(&ws, &format!("[shell]\nnetwork = [\"localhost:{port}\"]\n"));
    ws
}

/// `toolhost --audit LOG run BATCH --json` on `ws` with `env`, the batch a
/// message of `calls` and the log in the configuration home: the output,
/// and the log's path.
fn run_audited(
    ws: &Workspace,
    calls: &[(&str, &str, Value)],
    env: &[(&str, &str)],
) -> (std::process::Output, PathBuf) {
    let log = ws.config_home().join("audit.jsonl");
    let file = batch_file(ws, calls);
    let args = [
        "--audit",
        log.to_str().unwrap(),
        "run",
        file.to_str().unwrap(),
        "--json",
    ];
    (toolhost_with_env(ws, &args, None, env), log)
}

#[test]
fn a_granted_host_is_reached_and_its_body_returned() {
    let (server, ws) = granted_server();
    let url = format!("http://localhost:{}/hello", server.port);
    let (text, is_error, details) = get(&ws, json!({"url": url}));
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "HTTP 200\ncontent-type: text/plain\n\nhello from the test server\n"
    );
    assert_eq!(details["status"], 200);
    assert_eq!(details["url"], url);
}

#[test]
fn an_ungranted_port_host_or_scheme_is_refused_before_any_connection() {
    let granted = Server::start("127.0.0.1:0", 1);
    let other = Server::start("127.0.0.1:0", 1);
    let ws = installed(&grant(&[format!("http://localhost:{}", granted.port)]));
    let (text, is_error, _) = get(
        &ws,
        json!({"url": format!("http://localhost:{}/hello", other.port)}),
    );
    assert!(is_error);
    assert_eq!(
        text,
        format!(
            "HTTP request to http://localhost:{port}/hello refused: http://localhost:{port} is not \
             granted (granted: http://localhost:{granted})",
            port = other.port,
            granted = granted.port
        )
    );
    // The same port by address, or over https, is another destination.
    for (url, entry) in [
        (
            format!("http://127.0.0.1:{}/hello", granted.port),
            format!("http://127.0.0.1:{}", granted.port),
        ),
        (
            format!("https://localhost:{}/hello", granted.port),
            format!("localhost:{}", granted.port),
        ),
    ] {
        let (text, is_error, _) = get(&ws, json!({"url": url}));
        assert!(is_error);
        assert!(
            text.contains(&format!("refused: {entry} is not granted")),
            "{text}"
        );
    }
    assert_eq!(other.connections(), 0, "refused before connecting");
    assert_eq!(granted.connections(), 0, "refused before connecting");
}

#[test]
fn a_redirect_to_an_ungranted_port_is_refused_on_the_second_request() {
    let elsewhere = Server::start("127.0.0.1:0", 1);
    let server = Server::start("127.0.0.1:0", elsewhere.port);
    let ws = installed(&grant(&[format!("http://localhost:{}", server.port)]));
    let start = format!("http://localhost:{}/redirect", server.port);
    let (text, is_error, _) = get(&ws, json!({"url": start}));
    assert!(is_error, "{text}");
    let next = format!("http://localhost:{}/hello", elsewhere.port);
    assert_eq!(
        text,
        format!(
            "Redirected from {start} to {next}; HTTP request to {next} refused: \
             http://localhost:{port} is not granted (granted: http://localhost:{granted})",
            port = elsewhere.port,
            granted = server.port
        )
    );
    assert_eq!(server.connections(), 1, "the first request was sent");
    assert_eq!(elsewhere.connections(), 0, "the redirect was not followed");
}

#[test]
fn a_granted_name_resolving_to_a_loopback_or_private_address_is_refused() {
    // The machine's own name: Debian's /etc/hosts maps it to 127.0.1.1, a
    // container's to its private address.
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_lowercase();
    let server = Server::start("0.0.0.0:0", 1);
    let ws = installed(&grant(&[format!("http://{name}:{}", server.port)]));
    let (text, is_error, _) = get(
        &ws,
        json!({"url": format!("http://{name}:{}/hello", server.port)}),
    );
    assert!(is_error, "{text}");
    let prefix = format!(
        "HTTP request to http://{name}:{}/hello refused: {name} resolves to ",
        server.port
    );
    assert!(text.starts_with(&prefix), "{text}");
    assert!(
        text.contains(", a loopback address;") || text.contains(", a private address;"),
        "{text}"
    );
    assert!(
        text.ends_with("; grant the address itself to allow it"),
        "{text}"
    );
    assert_eq!(server.connections(), 0, "refused before connecting");
}

#[test]
fn a_response_over_the_limit_fails_naming_the_limit() {
    let server = Server::start("127.0.0.1:0", 1);
    let policy = format!(
        "{}http-response-kb = 64\n",
        grant(&[format!("http://localhost:{}", server.port)])
    );
    let ws = installed(&policy);
    let url = format!("http://localhost:{}/big", server.port);
    let (text, is_error, _) = get(&ws, json!({"url": url, "max_bytes": 1 << 20}));
    assert!(is_error, "{text}");
    assert_eq!(
        text,
        format!(
            "reading the body of {url} failed: HTTP response body size exceeds limit: 65536 bytes"
        )
    );
    // Under the limit, the same response is read whole.
    let ws = installed(&grant(&[format!("http://localhost:{}", server.port)]));
    let (text, is_error, details) = get(&ws, json!({"url": url, "max_bytes": 1 << 20}));
    assert!(!is_error, "{text}");
    assert_eq!(details["bytes"], 200 * 1024);
}

#[test]
fn without_an_http_grant_the_component_is_refused_at_load() {
    let ws = installed("");
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(ext[0]["name"], "httpget");
    let refused = ext[0]["refused"].as_str().unwrap();
    assert!(
        refused.starts_with("imports wasi:http/"),
        "names the import: {refused}"
    );
    assert!(
        refused.ends_with(
            "(make HTTP requests), which is not granted to it; grant it in toolhost.toml: \
             [extensions.httpget] http = [\"<host[:port]>\"]"
        ),
        "{refused}"
    );
    let (text, is_error, _) = get(&ws, json!({"url": "http://localhost:1/"}));
    assert_eq!((text.as_str(), is_error), ("Tool http_get not found", true));

    // What it asks for, as `toolhost ext inspect` (and `toolhost trust`) show it.
    let out = toolhost(&ws, &["ext", "inspect", httpget().to_str().unwrap()], None);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("requests: http"), "{printed}");
}

#[test]
fn the_audit_line_of_an_http_call_lists_the_host_contacted() {
    let (server, ws) = granted_server();
    let hello = format!("http://localhost:{}/hello", server.port);
    let (out, log) = run_audited(
        &ws,
        &[
            ("ok", "http_get", json!({ "url": hello })),
            ("no", "http_get", json!({"url": "http://evil.test/"})),
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entries: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let entry = |id: &str| {
        entries
            .iter()
            .find(|e| e["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no entry for {id} in {entries:#?}"))
    };
    assert_eq!(
        entry("ok")["used"]["hosts"],
        json!([format!("http://localhost:{}", server.port)])
    );
    assert_eq!(
        entry("no")["used"]["denied"],
        json!(["http http://evil.test:80/: not-granted"])
    );
    assert!(entry("no")["used"].get("hosts").is_none());
}

#[test]
fn https_goes_through_tls_even_to_a_granted_address() {
    // A plain-HTTP server granted for https: the host speaks TLS to it (the
    // certificate would be checked against the Mozilla roots), so the
    // handshake fails instead of the request going out in clear text.
    let server = Server::start("127.0.0.1:0", 1);
    let ws = installed(&grant(&[format!("127.0.0.1:{}", server.port)]));
    let url = format!("https://127.0.0.1:{}/hello", server.port);
    let (text, is_error, _) = get(&ws, json!({"url": url}));
    assert!(is_error, "{text}");
    assert_eq!(
        text,
        format!("GET {url} failed: ErrorCode::TlsProtocolError")
    );
    assert_eq!(
        server.connections(),
        1,
        "the address granted is the one reached"
    );
}

#[test]
fn cancelling_the_call_aborts_a_request_in_flight() {
    // A server that never answers, and a grace period longer than the test
    // would wait: only the host's own abort of the request ends the call
    // with the request's words (the grace period's kill would say
    // `Operation aborted`, a minute later).
    let server = Server::start("127.0.0.1:0", 0);
    let ws = Workspace::new();
    let grant = toolhost::GrantSpec {
        http: vec![format!("http://localhost:{}", server.port)],
        ..Default::default()
    };
    let host = built(
        toolhost::Host::builder()
            .workspace(&ws.path)
            .user_config_dir(None)
            .extensions(|e| e.load(httpget()).grant("httpget", grant))
            .all_tools_active()
            .cancel_grace(std::time::Duration::from_secs(600)),
    );
    let url = format!("http://localhost:{}/hang", server.port);
    let message = toolhost::AssistantMessage::from_calls(vec![tool_call(
        "h",
        "http_get",
        json!({ "url": url }),
    )]);
    let (outcome, _) = run(
        &host,
        &message,
        cancel_after(std::time::Duration::from_millis(500)),
    );
    let result = &outcome.results[0];
    assert!(result.is_error);
    assert!(
        result.text().contains(&format!(
            "HTTP request to {url} aborted: the call was cancelled"
        )),
        "{}",
        result.text()
    );
    assert_eq!(server.connections(), 1);
}

/// The secret the tests declare, and where it comes from.
pub(crate) const SECRET: &str = "tok-5ecret-0123456789abcdef";

/// `call http_get` of `url` in `ws`, the secret's variable set to
/// [`SECRET`], its result as JSON when `json`.
fn get_with_the_token(ws: &Workspace, url: &Value, json: bool) -> Output {
    let url = url.to_string();
    let mut args = vec!["call", "http_get", &url];
    if json {
        args.push("--json");
    }
    toolhost_with_env(ws, &args, None, &[("TEST_API_TOKEN", SECRET)])
}

/// Two servers on loopback: `a`, which points on to `b`, and `b`.
pub(crate) fn two_servers() -> (Server, Server) {
    let b = Server::start("127.0.0.1:0", 1);
    (Server::start("127.0.0.1:0", b.port), b)
}

/// httpget granted the servers `a` and `b`, with the secret API_TOKEN
/// declared for `a` only (and its variable granted as `env`, which must be
/// withheld).
pub(crate) fn with_a_secret(a: &Server, b: &Server, from: &str) -> Workspace {
    installed(&format!(
        "[extensions.httpget]\nhttp = [\"http://localhost:{a}\", \"http://localhost:{b}\"]\n\
         env = [\"TEST_API_TOKEN\"]\n\
         [extensions.httpget.secrets.API_TOKEN]\nfrom = \"{from}\"\n\
         hosts = [\"http://localhost:{a}\"]\n",
        a = a.port,
        b = b.port,
    ))
}

#[test]
fn a_secret_reaches_only_its_host_and_never_the_component() {
    let (a, b) = two_servers();
    let ws = with_a_secret(&a, &b, "env:TEST_API_TOKEN");
    let url = |path: &str, port: u16| json!({"url": format!("http://localhost:{port}{path}")});
    let (out, log) = run_audited(
        &ws,
        &[
            ("a", "http_get", url("/echo", a.port)),
            ("b", "http_get", url("/echo", b.port)),
            ("redirected", "http_get", url("/redirect", a.port)),
        ],
        &[("TEST_API_TOKEN", SECRET)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The component never holds it: its granted variable is withheld.
    assert!(
        stderr.contains(
            "env grant \"TEST_API_TOKEN\": it is the source of the secret API_TOKEN, which the \
             extension's requests carry and it never sees; withheld"
        ),
        "{stderr}"
    );
    assert!(
        !stdout.contains(SECRET),
        "the secret reached the output: {stdout}"
    );

    // The server of `a` received it; `b` never did, neither asked directly
    // nor as the target of a's redirect. (The batch's calls run side by
    // side: the order the servers saw them in is not the point.)
    let bearer = format!("Bearer {SECRET}");
    let sorted = |mut seen: Vec<(String, String)>| {
        seen.sort();
        seen
    };
    assert_eq!(
        sorted(a.seen()),
        [
            ("/echo".to_string(), bearer.clone()),
            ("/redirect".to_string(), bearer.clone())
        ]
    );
    assert_eq!(
        sorted(b.seen()),
        [
            ("/echo".to_string(), String::new()),
            ("/hello".to_string(), String::new())
        ]
    );

    // What a echoed, in its body and its headers, reached the component
    // redacted.
    let turn_end: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let texts = result_texts(&turn_end["toolResults"]);
    assert!(
        texts[0]
            .starts_with("HTTP 200\ncontent-type: text/plain; echo=Bearer [secret API_TOKEN]\n"),
        "{}",
        texts[0]
    );
    assert!(
        texts[0].contains("authorization: Bearer [secret API_TOKEN]"),
        "{}",
        texts[0]
    );
    assert!(!texts[1].contains("authorization"), "{}", texts[1]);
    assert!(
        texts[2].contains("hello from the test server"),
        "{}",
        texts[2]
    );

    // The audit line names the secret and the host, never the value.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(SECRET));
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sent = |id: &str| {
        let entry = entries.iter().find(|e| e["toolCallId"] == id).unwrap();
        entry["used"].get("secrets").cloned().unwrap_or(json!([]))
    };
    let a_host = format!("http://localhost:{}", a.port);
    assert_eq!(sent("a"), json!([format!("API_TOKEN to {a_host}")]));
    assert_eq!(sent("b"), json!([]));
    assert_eq!(
        sent("redirected"),
        json!([format!("API_TOKEN to {a_host}")])
    );
}

#[test]
fn a_secret_is_read_from_a_private_file_and_only_the_users_file_declares_one() {
    let (a, b) = two_servers();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{SECRET}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ws = with_a_secret(&a, &b, &format!("file:{}", token.display()));
    let url = json!({"url": format!("http://localhost:{}/echo", a.port)});
    // Readable by others: not sent, and said so.
    let out = toolhost(&ws, &["call", "http_get", &url.to_string()], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("secret API_TOKEN is not sent: file:") && stderr.contains("mode 644"),
        "{stderr}"
    );
    assert_eq!(a.seen(), [("/echo".to_string(), String::new())]);
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = toolhost(&ws, &["call", "http_get", &url.to_string()], None);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(SECRET));
    assert_eq!(
        a.seen()[1],
        ("/echo".to_string(), format!("Bearer {SECRET}"))
    );

    // A trusted workspace's file cannot declare one: the agent's tools can
    // write that file, and would choose which of the user's variables goes
    // where.
    let c = Server::start("127.0.0.1:0", 1);
    let ws = installed(&format!(
        "[extensions.httpget]\nhttp = [\"http://localhost:{}\"]\n",
        c.port
    ));
    ws.write(
        "toolhost.toml",
        "[extensions.httpget.secrets.STOLEN]\nfrom = \"env:TEST_API_TOKEN\"\n",
    );
    trust_workspace(&ws);
    let url = json!({"url": format!("http://localhost:{}/echo", c.port)});
    let out = get_with_the_token(&ws, &url, false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "[extensions.httpget.secrets]: secrets are declared only by the user's toolhost.toml; \
             ignored here"
        ),
        "{stderr}"
    );
    assert_eq!(c.seen(), [("/echo".to_string(), String::new())]);
}

#[test]
fn ext_add_declares_a_secret_and_ext_list_says_where_it_goes() {
    let server = Server::start("127.0.0.1:0", 1);
    let ws = Workspace::new();
    let host = format!("http://localhost:{}", server.port);
    let out = toolhost(
        &ws,
        &[
            "ext",
            "add",
            httpget().to_str().unwrap(),
            "--http",
            &host,
            "--secret",
            "API_TOKEN=env:TEST_API_TOKEN",
        ],
        None,
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = "secret API_TOKEN (from env:TEST_API_TOKEN) goes to every host of its http grant \
                in Authorization";
    assert!(printed.contains(line), "{printed}");
    let policy = std::fs::read_to_string(ws.user_config().join("toolhost.toml")).unwrap();
    assert!(
        policy.contains("[extensions.httpget.secrets.API_TOKEN]\nfrom = \"env:TEST_API_TOKEN\""),
        "{policy}"
    );
    let listed = toolhost(&ws, &["ext", "list"], None);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(line));
    let installed = ws.user_extensions().join("httpget.wasm");
    let inspected = toolhost(&ws, &["ext", "inspect", installed.to_str().unwrap()], None);
    assert!(
        String::from_utf8_lossy(&inspected.stdout).contains(line),
        "{}",
        String::from_utf8_lossy(&inspected.stdout)
    );
    // And it is sent.
    let url = json!({"url": format!("{host}/echo")});
    let out = get_with_the_token(&ws, &url, false);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(SECRET));
    assert_eq!(
        server.seen(),
        [("/echo".to_string(), format!("Bearer {SECRET}"))]
    );
}

/// `bash` with `[shell] network = entries`: the command's output (stdout
/// and stderr) and whether the call failed.
fn bash_with_network(entries: &str, command: &str) -> (Workspace, String) {
    let ws = Workspace::new();
    user_policy(&ws, &format!("[shell]\nnetwork = {entries}\n"));
    let (text, _) = call_text(&ws, "bash", json!({ "command": command }));
    (ws, text)
}

#[test]
fn commands_reach_the_granted_hosts_through_the_proxy_and_nothing_else() {
    let server = Server::start("127.0.0.1:0", 1);
    let port = server.port;
    let entries = format!("[\"localhost:{port}\"]");
    // The granted port, by plain HTTP through the proxy (curl reads
    // http_proxy), then a port that is not granted: the 403 says why.
    let (ws, out) = bash_with_network(
        &entries,
        &format!(
            "curl -sS http://localhost:{port}/hello; echo; \
             curl -sS http://localhost:{}/hello; echo; \
             echo proxy=$HTTPS_PROXY",
            port + 1
        ),
    );
    assert!(out.contains("hello from the test server"), "{out}");
    assert!(
        out.contains(&format!(
            "toolhost refused the connection to localhost:{}: localhost:{} is not in the network grant (granted: localhost:{port})",
            port + 1,
            port + 1
        )),
        "{out}"
    );
    assert!(out.contains("proxy=http://127.0.0.1:3128"), "{out}");
    // A tunnel (CONNECT, what https takes) to the granted port works too.
    let (_, out) = bash_with_network(
        &entries,
        &format!("curl -sS -p http://localhost:{port}/hello"),
    );
    assert!(out.contains("hello from the test server"), "{out}");
    // Around the proxy there is no way out: a direct connection, to the
    // granted port itself, finds no route (the jail's own namespace).
    let (_, out) = bash_with_network(
        &entries,
        &format!("curl -sS --noproxy '*' http://127.0.0.1:{port}/hello || echo direct failed"),
    );
    assert!(out.contains("direct failed"), "{out}");
    assert!(!out.contains("hello from the test server"), "{out}");
    let direct = server.seen().iter().filter(|(p, _)| p == "/hello").count();
    assert_eq!(direct, 2, "only the two proxied requests arrived");
    drop(ws);
}

#[test]
fn the_proxy_records_its_connections_and_a_bad_entry_means_no_network() {
    let server = Server::start("127.0.0.1:0", 1);
    let port = server.port;
    let ws = shell_reaching(port);
    let log = ws.config_home().join("audit.jsonl");
    let command = format!(
        "curl -s http://localhost:{port}/hello >/dev/null; curl -s http://localhost:{}/x >/dev/null; true",
        port + 1
    );
    let args = json!({ "command": command }).to_string();
    let out = toolhost(
        &ws,
        &["--audit", log.to_str().unwrap(), "call", "bash", &args],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(out);
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        line["used"]["hosts"],
        json!([format!("localhost:{port}")]),
        "{line}"
    );
    let denied = line["used"]["denied"].to_string();
    assert!(
        denied.contains(&format!(
            "network localhost:{}: localhost:{} is not in the network grant",
            port + 1,
            port + 1
        )),
        "{line}"
    );

    // A list meant to narrow the network that cannot be read gives none.
    let ws = Workspace::new();
    user_policy(&ws, "[shell]\nnetwork = [\"https://x.org\"]\n");
    let out = toolhost(
        &ws,
        &[
            "call",
            "bash",
            &json!({"command": format!("curl -sS http://localhost:{port}/hello || echo none")})
                .to_string(),
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[shell] network: network entry \"https://x.org\" has a scheme; write host or host:port; commands get no network"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("none"));
}

/// What the host holds for a command's proxied connections does not grow
/// with their number: its peak memory after 2,000 connections (100 open at
/// once, each a request and its answer) is within a bound of its peak after
/// 20.
#[test]
fn two_thousand_proxied_connections_leave_the_hosts_memory_bounded() {
    let server = Server::start("127.0.0.1:0", 1);
    let port = server.port;
    let ws = shell_reaching(port);
    let script = format!(
        "import socket, sys\n\
         n = int(sys.argv[1]); ok = 0\n\
         for start in range(0, n, 100):\n\
         \x20   batch = [socket.create_connection(('127.0.0.1', 3128)) for _ in range(min(100, n - start))]\n\
         \x20   for s in batch: s.sendall(b'GET http://localhost:{port}/hello HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n')\n\
         \x20   for s in batch:\n\
         \x20       data = b''\n\
         \x20       while True:\n\
         \x20           chunk = s.recv(4096)\n\
         \x20           if not chunk: break\n\
         \x20           data += chunk\n\
         \x20       ok += b'hello from the test server' in data\n\
         \x20       s.close()\n\
         print('answered', ok)\n"
    );
    ws.write("conns.py", &script);
    let run = |n: usize| {
        let args = json!({"command": format!("python3 conns.py {n}"), "timeout": 120}).to_string();
        let (out, peak) = toolhost_peak_memory(&ws, &["call", "bash", &args]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(stdout.contains(&format!("answered {n}")), "{stdout}");
        peak
    };
    let few = run(20);
    let many = run(2000);
    assert!(
        many <= few + 48,
        "2,000 connections took the host to {many} MiB, 20 to {few} MiB"
    );
}

#[test]
fn an_extensions_programs_reach_only_the_hosts_its_network_list_names() {
    let server = Server::start("127.0.0.1:0", 1);
    let port = server.port;
    let ws = Workspace::new();
    let ext = ws.copy_in("runprobe.wasm", toolhost_tests::RUNPROBE);
    user_policy(
        &ws,
        &format!(
            "[extensions.runprobe]\nprocess = [\"curl\"]\nfs-read = [\".\"]\n\
             network = [\"localhost:{port}\"]\n"
        ),
    );
    let curl = |url: String| {
        let args = json!({"program": "curl", "args": ["-sS", url]}).to_string();
        let out = toolhost(&ws, &["--extension", &ext, "call", "run", &args], None);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(curl(format!("http://localhost:{port}/hello")).contains("hello from the test server"));
    let refused = curl(format!("http://localhost:{}/hello", port + 1));
    assert!(
        refused.contains(&format!(
            "toolhost refused the connection to localhost:{}: localhost:{} is not in the network grant",
            port + 1,
            port + 1
        )),
        "{refused}"
    );
}

/// `npm view` against a registry stand-in on loopback, through the proxy:
/// npm takes the proxy from the environment the host sets.
#[test]
fn npm_view_works_through_the_proxy_against_a_local_registry() {
    let port = stand_in(|_| {
        // The tarball is never fetched by `npm view`.
        let packument = r#"{"name":"tiny-pkg","dist-tags":{"latest":"1.2.3"},"versions":{"1.2.3":{"name":"tiny-pkg","version":"1.2.3","description":"A stand-in","dist":{"tarball":"http://localhost:1/tiny-pkg-1.2.3.tgz","shasum":"0"}}}}"#;
        ("application/json", packument.as_bytes().to_vec())
    });
    let ws = shell_reaching(port);
    // The machine's npm (scripts/setup needs it for the examples too).
    let command = format!(
        "npm view tiny-pkg version --registry http://localhost:{port}/ --cache $TMPDIR/npm-cache 2>&1"
    );
    let (text, is_error) = call_text(&ws, "bash", json!({ "command": command }));
    assert!(!is_error, "{text}");
    assert_eq!(text.trim(), "1.2.3", "{text}");
}

/// `pip download` against a package index stand-in on loopback, through
/// the proxy: pip takes the proxy from the environment the host sets.
#[test]
fn pip_download_works_through_the_proxy_against_a_local_index() {
    // A wheel of one empty module, built by Python's zipfile.
    let dir = tempfile::tempdir().unwrap();
    let wheel = dir.path().join("tiny-1.0-py3-none-any.whl");
    let build = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w')\n\
             z.writestr('tiny.py', '')\n\
             z.writestr('tiny-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: tiny\\nVersion: 1.0\\n')\n\
             z.writestr('tiny-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             z.writestr('tiny-1.0.dist-info/RECORD', '')\n\
             z.close()\n",
        )
        .arg(&wheel)
        .status()
        .unwrap();
    assert!(build.success());
    let bytes = std::fs::read(&wheel).unwrap();
    let port = stand_in(move |line| {
        if line.contains("/simple/tiny/") {
            let html = "<html><body><a href=\"/files/tiny-1.0-py3-none-any.whl\">tiny-1.0-py3-none-any.whl</a></body></html>";
            ("text/html", html.as_bytes().to_vec())
        } else {
            ("application/octet-stream", bytes.clone())
        }
    });
    let ws = shell_reaching(port);
    let command = format!(
        "python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check -q \
         --index-url http://localhost:{port}/simple/ -d $TMPDIR/dl tiny 2>&1; ls $TMPDIR/dl"
    );
    let (text, is_error) = call_text(&ws, "bash", json!({ "command": command }));
    assert!(!is_error, "{text}");
    assert!(text.contains("tiny-1.0-py3-none-any.whl"), "{text}");
}

/// An answer the host cannot search (compressed) is refused when its
/// request carried a secret: an echo endpoint of the secret's own host,
/// asked for gzip, would otherwise hand the component the secret.
#[test]
fn a_compressed_answer_to_a_request_carrying_a_secret_is_refused() {
    let (a, b) = two_servers();
    let ws = with_a_secret(&a, &b, "env:TEST_API_TOKEN");
    let get = |server: &Server| {
        let url = json!({"url": format!("http://localhost:{}/gzip-echo", server.port)});
        let out = get_with_the_token(&ws, &url, true);
        let msg = json_out(&out);
        (
            msg["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            msg["isError"] == true,
        )
    };
    let (text, is_error) = get(&a);
    assert!(is_error, "{text}");
    assert!(
        text.contains(&format!(
            "HTTP response from http://localhost:{}/gzip-echo refused: the request carried a secret and the answer came encoded (gzip), which the host cannot search for the secret",
            a.port
        )),
        "{text}"
    );
    // Without a secret the same answer passes, as it is.
    let (text, is_error) = get(&b);
    assert!(!is_error, "{text}");
}

/// Under a network list, the jail's loopback holds one port a command may
/// connect to, the proxy's: Landlock refuses binding any port and
/// connecting to any other (a second layer behind the namespace, which has
/// nothing else to reach).
#[test]
fn under_a_network_list_a_command_may_connect_to_the_proxys_port_only() {
    let abi = toolhost::doctor::landlock().as_ref().map(|abi| *abi as u32);
    assert!(
        abi.is_ok_and(|abi| abi >= 4),
        "this machine's Landlock has no network rules (ABI < 4: {abi:?}); the claim needs them"
    );
    let script = "import socket\n\
                  for what, f in [('bind', lambda s: s.bind(('127.0.0.1', 5555))),\n\
                  \x20                ('connect', lambda s: s.connect(('127.0.0.1', 5556))),\n\
                  \x20                ('proxy', lambda s: s.connect(('127.0.0.1', 3128)))]:\n\
                  \x20   s = socket.socket()\n\
                  \x20   try:\n\
                  \x20       f(s); print(what, 'ok')\n\
                  \x20   except OSError as e:\n\
                  \x20       print(what, e.strerror)\n";
    let (ws, _) = bash_with_network("[\"localhost:1\"]", "true");
    ws.write("net.py", script);
    let (text, _) = call_text(&ws, "bash", json!({"command": "python3 net.py"}));
    assert_eq!(
        text.trim(),
        "bind Permission denied\nconnect Permission denied\nproxy ok",
        "{text}"
    );
}

/// A secret read from the OS's key store (`keyring:SERVICE/USER`), where
/// the `keyring` crate (and tools built on it) put it.
#[test]
fn a_secret_is_read_from_the_keyring() {
    let (a, b) = two_servers();
    let service = format!("toolhost-test-{}", std::process::id());
    // Stored as `keyctl padd user keyring-rs:api@SERVICE @u` stores it (the
    // description the keyring crate gives an entry), in the user's keyring.
    let description = std::ffi::CString::new(format!("keyring-rs:api@{service}")).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: add_key with NUL-terminated strings and a live payload.
    let key = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            description.as_ptr(),
            SECRET.as_ptr(),
            SECRET.len(),
            -4 as libc::c_long,
        )
    };
    assert!(key > 0, "add_key: {}", std::io::Error::last_os_error());
    let ws = with_a_secret(&a, &b, &format!("keyring:{service}/api"));
    let url = json!({"url": format!("http://localhost:{}/echo", a.port)});
    let out = toolhost(&ws, &["call", "http_get", &url.to_string()], None);
    #[allow(unsafe_code)]
    // SAFETY: keyctl(KEYCTL_INVALIDATE) takes a key's serial number.
    unsafe {
        libc::syscall(libc::SYS_keyctl, 21 as libc::c_long, key);
    }
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(SECRET),
        "the component saw it"
    );
    assert_eq!(
        a.seen(),
        [("/echo".to_string(), format!("Bearer {SECRET}"))],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // An entry that is not there: said at load, nothing sent.
    let ws = with_a_secret(&a, &b, &format!("keyring:{service}/missing"));
    let out = toolhost(&ws, &["call", "http_get", &url.to_string()], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "secret API_TOKEN is not sent: keyring:{service}/missing:"
        )),
        "{stderr}"
    );
    assert_eq!(a.seen()[1], ("/echo".to_string(), String::new()));
}

/// A secret read from the desktop's keyring: GNOME Keyring's Secret Service
/// on a session bus of the test's own (`scripts/setup` installs it), the
/// item stored by `secret-tool`, as a person would.
#[test]
fn a_secret_is_read_from_the_desktop_keyring() {
    let (a, b) = two_servers();
    let ws = with_a_secret(&a, &b, "keyring:toolhost-desktop/api");
    let home = tempfile::tempdir().unwrap();
    let url = json!({"url": format!("http://localhost:{}/echo", a.port)});
    let script = format!(
        "echo -n unlock | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1\n\
         printf '%s' \"$SECRET\" | secret-tool store --label toolhost-test service toolhost-desktop username api\n\
         exec \"$TOOLHOST\" --workspace \"$WS\" call http_get '{url}'\n"
    );
    let out = std::process::Command::new("dbus-run-session")
        .args(["--", "bash", "-c", &script])
        .env("HOME", home.path())
        .env("SECRET", SECRET)
        .env("TOOLHOST", toolhost_bin())
        .env("WS", &ws.path)
        .env("XDG_CONFIG_HOME", ws.config_home())
        .env("XDG_STATE_HOME", ws.state_home())
        .output()
        .expect(
            "dbus-run-session (scripts/setup installs dbus, gnome-keyring and libsecret-tools)",
        );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(SECRET), "the component saw it");
    assert_eq!(
        a.seen(),
        [("/echo".to_string(), format!("Bearer {SECRET}"))],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `toolhost trust` shows a secret a workspace's file declares for one of
/// its extensions as what it is: ignored.
#[test]
fn trust_shows_a_workspace_secret_as_ignored() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.extensions()).unwrap();
    std::fs::copy(httpget(), ws.extensions().join("httpget.wasm")).unwrap();
    ws.write(
        "toolhost.toml",
        "[extensions.httpget]\nhttp = [\"api.example.com\"]\n\
         [extensions.httpget.secrets.STOLEN]\nfrom = \"env:HOME\"\n",
    );
    let out = toolhost(&ws, &["trust"], None);
    let review = String::from_utf8_lossy(&out.stdout);
    assert!(
        review.contains(
            "secret STOLEN: declared here and ignored (only the user's toolhost.toml declares secrets)"
        ),
        "{review}"
    );
}

#[test]
fn hostile_a_secret_echoed_as_a_header_name_reaches_the_component_redacted() {
    let (a, b) = two_servers();
    let ws = with_a_secret(&a, &b, "env:TEST_API_TOKEN");
    let url = json!({"url": format!("http://localhost:{}/echo-name", a.port)});
    let out = get_with_the_token(&ws, &url, true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        a.seen(),
        [("/echo-name".to_string(), format!("Bearer {SECRET}"))]
    );
    // httpget passes every response header on in its details.
    assert!(
        !stdout.contains(SECRET),
        "the secret reached the component: {stdout}"
    );
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        result["details"]["headers"]
            .as_array()
            .unwrap()
            .contains(&json!(["x-secret-api_token", "seen"])),
        "{stdout}"
    );
}

/// The issue's own example: the workspace at `$HOME`, the token in
/// `~/.config/gh-token`, declared `from = "file:~/.config/gh-token"`. The
/// extension's requests carry it; no tool reads it, lists it or finds it.
#[test]
fn hostile_a_secrets_source_file_is_hidden_from_every_tool() {
    let (a, b) = two_servers();
    let ws = with_a_secret(&a, &b, "file:~/.config/gh-token");
    let token = ws.write(".config/gh-token", format!("{SECRET}\n"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Beside it, what is no secret stays readable.
    ws.write(".config/notes.txt", "a note\n");
    let home = [("HOME", ws.str())];
    let call = |tool: &str, args: Value| {
        let out = toolhost_with_env(&ws, &["call", tool, &args.to_string()], None, &home);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !text.contains(SECRET),
            "{tool} {args} showed the secret:\n{text}"
        );
        (out, text)
    };

    // The extension's request carries it.
    let (out, _) = call(
        "http_get",
        json!({"url": format!("http://localhost:{}/echo", a.port)}),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(a.seen()[0].1, format!("Bearer {SECRET}"));

    // bash, by every way of naming it (and with the network it has by
    // default, it would have sent it anywhere).
    let (_, text) = call(
        "bash",
        json!({"command": "cat ~/.config/gh-token; cat .config/gh-token; \
                           cat \"$HOME/.config/../.config/gh-token\"; \
                           ln -s .config/gh-token l && cat l; cp .config/gh-token c; cat c; \
                           grep -r tok- . ; cat .config/notes.txt"}),
    );
    assert!(text.contains("a note"), "{text}");
    // read: refused, by its name, through `..` and through a link.
    for path in [".config/gh-token", "x/../.config/gh-token", "l"] {
        let (out, text) = call("read", json!({ "path": path }));
        assert_eq!(out.status.code(), Some(1), "read {path}: {text}");
    }
    let (_, text) = call("read", json!({"path": ".config/notes.txt"}));
    assert!(text.contains("a note"), "{text}");
    // grep and find: never searched, never named.
    // Moved out from under its name: a rename of its directory (or of the
    // file), a hard link, then read under the new name. The way to it is
    // pinned in the jail, so nothing moves.
    call(
        "bash",
        json!({"command": "mv .config .x; mv .config/gh-token y; ln .config/gh-token z; true"}),
    );
    for path in [".x/gh-token", "y", "z"] {
        call("read", json!({ "path": path }));
    }
    assert_eq!(
        std::fs::read_to_string(&token).unwrap(),
        format!("{SECRET}\n"),
        "the secret's source was moved"
    );
    let (_, text) = call("grep", json!({"pattern": "tok-", "path": "."}));
    assert!(!text.contains("gh-token"), "{text}");
    // Through the link bash made, named as the file to search.
    let (_, text) = call("grep", json!({"pattern": "tok-", "path": "l"}));
    assert!(!text.contains("tok-"), "{text}");
    let (_, text) = call("find", json!({"pattern": "**/*token*"}));
    assert!(!text.contains("gh-token"), "{text}");
    let (_, text) = call("ls", json!({"path": ".config"}));
    assert!(text.contains("notes.txt"), "{text}");
}

/// A secret read from `env:` is the source of a secret for every grant:
/// another extension granted the same variable by name does not get it
/// (`getenv` finds it unset, and the start says why), while a variable
/// that is no secret's source still reaches it.
#[test]
fn hostile_another_extension_granted_a_secrets_source_variable_never_gets_it() {
    let (a, _b) = two_servers();
    let ws = installed(&format!(
        "[extensions.httpget]\nhttp = [\"http://localhost:{}\"]\n\
         [extensions.httpget.secrets.API_TOKEN]\nfrom = \"env:TEST_API_TOKEN\"\n\
         [extensions.kit]\nenv = [\"TEST_API_TOKEN\", \"TEST_PLAIN\"]\n",
        a.port
    ));
    std::fs::copy(
        toolhost_tests::TESTKIT,
        ws.user_extensions().join("kit.wasm"),
    )
    .unwrap();
    let env = [("TEST_API_TOKEN", SECRET), ("TEST_PLAIN", "plain-value")];
    let out = toolhost_with_env(
        &ws,
        &["call", "getenv", r#"{"name":"TEST_API_TOKEN"}"#],
        None,
        &env,
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        !stdout.contains(SECRET),
        "the other extension read the secret: {stdout}"
    );
    assert_eq!(stdout.trim(), "(unset)", "{stderr}");
    assert!(
        stderr.contains(
            "env grant \"TEST_API_TOKEN\": it is the source of a secret another grant names; withheld"
        ),
        "{stderr}"
    );
    let out = toolhost_with_env(
        &ws,
        &["call", "getenv", r#"{"name":"TEST_PLAIN"}"#],
        None,
        &env,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "plain-value");
}

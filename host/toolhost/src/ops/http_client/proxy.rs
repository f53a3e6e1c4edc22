//! Network by name for the programs tools start: the egress proxy.
//!
//! A command granted a list of domains (`[shell] network = ["pkg.example.com",
//! "*.github.com:443"]`) gets no network of its own; its HTTP clients reach
//! the outside through this proxy (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`),
//! which the host runs on a listener it is handed. For each connection it:
//!
//! 1. reads the request head (at most [`MAX_HEAD_BYTES`], within the call's
//!    time): `CONNECT host:port` (a tunnel, for https and anything else over
//!    TCP) or a plain HTTP request with an absolute URI (`GET
//!    http://host:port/path`);
//! 2. matches the host and port against the entries ([`NetPolicy`]): an
//!    entry `host:port` allows that port, an entry without a port 80 and
//!    443; `*.example.org` any name under `example.org`;
//! 3. resolves the name once and refuses it if an address it resolves to is
//!    loopback, private, link-local, metadata or any other special address
//!    (or a mapped form of one), unless the entry names the address itself
//!    or `localhost`, exactly as the `http` grant of extensions does
//!    ([`super::HttpPolicy::route`]);
//! 4. connects to the address it checked (never resolving again), and
//!    relays bytes both ways until either side closes, the call's time runs
//!    out, or the call ends.
//!
//! A refusal is answered `403 Forbidden` with a body naming the host, the
//! port and the reason, which curl, pip and npm show. Each connection allowed
//! or refused is reported ([`ProxyEvents`]) for the call's audit line. At
//! most [`MAX_CONNECTIONS`] run at once; more wait for a place, so a command
//! that opens thousands costs the host a bounded amount of memory.

use super::grant::{HttpGrant, HttpPolicy, Target, split_host_port};
use super::{Resolver, connect_first, resolve};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Largest request head read before the proxy decides.
pub const MAX_HEAD_BYTES: usize = 16 << 10;
/// Connections relayed at once; more wait for a place.
pub const MAX_CONNECTIONS: usize = 64;

/// How much of the network a grant gives programs: all of it (`true`),
/// none (`false`), or these hosts through the proxy.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum Network {
    All(bool),
    Hosts(Vec<String>),
}

impl Default for Network {
    fn default() -> Network {
        Network::All(false)
    }
}

impl Network {
    /// None of it.
    pub fn is_none(&self) -> bool {
        matches!(self, Network::All(false))
    }

    /// Whether `self` allows no more than `wider` does.
    pub fn within(&self, wider: &Network) -> bool {
        match (self, wider) {
            (_, Network::All(true)) | (Network::All(false), _) => true,
            (Network::Hosts(mine), Network::Hosts(theirs)) => {
                mine.iter().all(|h| theirs.contains(h))
            }
            _ => false,
        }
    }

    /// What two grants of it give together.
    pub fn union(&self, other: &Network) -> Network {
        match (self, other) {
            (Network::All(true), _) | (_, Network::All(true)) => Network::All(true),
            (Network::All(false), n) | (n, Network::All(false)) => n.clone(),
            (Network::Hosts(a), Network::Hosts(b)) => {
                let mut hosts = a.clone();
                hosts.extend(b.iter().filter(|h| !a.contains(h)).cloned());
                Network::Hosts(hosts)
            }
        }
    }
}

/// The hosts a command may reach through the proxy.
#[derive(Debug)]
pub struct NetPolicy {
    /// The entries as `http` grants (their scheme is not looked at).
    http: HttpPolicy,
    /// As written, for messages.
    entries: Vec<String>,
    /// The longest a connection may stay open, and every wait within it.
    pub time: Duration,
}

impl NetPolicy {
    /// The policy of `entries` (`host`, `host:port`, `*.domain[:port]`, an
    /// IP address, `localhost:port`); the error names the entry that does
    /// not parse.
    pub fn new(entries: &[String], time: Duration) -> Result<NetPolicy, String> {
        Ok(NetPolicy {
            http: HttpPolicy::new(&Self::http_entries(entries)?, time)?,
            entries: entries.to_vec(),
            time,
        })
    }

    /// Whether `entries` make a policy; the error names the entry that does
    /// not parse.
    pub fn check(entries: &[String]) -> Result<(), String> {
        Self::http_entries(entries).map(drop)
    }

    /// The `http` grant entries `entries` stand for (their scheme is not
    /// looked at: an entry without a port is the web's two).
    fn http_entries(entries: &[String]) -> Result<Vec<String>, String> {
        let mut grants = Vec::new();
        for entry in entries {
            if entry.contains("://") {
                return Err(format!(
                    "network entry {entry:?} has a scheme; write host or host:port"
                ));
            }
            let invalid = |reason: String| format!("network entry {entry:?} {reason}");
            HttpGrant::parse(&format!("http://{entry}")).map_err(invalid)?;
            let (_, port) = split_host_port(entry).map_err(invalid)?;
            // No port written: the web's two.
            grants.push(format!("http://{entry}"));
            if port.is_none() {
                grants.push(format!("https://{entry}"));
            }
        }
        Ok(grants)
    }
}

/// What the proxy did with one connection, for the call's record.
pub trait ProxyEvents: Send + Sync {
    /// A connection to `target` (`host:port`) was made.
    fn allowed(&self, target: &str);
    /// A connection to `target` was refused for `reason`.
    fn refused(&self, target: &str, reason: &str);
}

/// A call's record: connections as hosts contacted, refusals as denied.
impl ProxyEvents for crate::ops::usage::Usage {
    fn allowed(&self, target: &str) {
        self.note(crate::ops::usage::Use::Host, target);
    }

    fn refused(&self, target: &str, reason: &str) {
        let entry = format!("network {target}: {reason}");
        self.note(crate::ops::usage::Use::Denied, &entry);
    }
}

/// One proxy: its policy, resolver and record, serving until `cancel`.
pub struct Proxy {
    pub policy: Arc<NetPolicy>,
    pub resolver: Arc<dyn Resolver>,
    pub events: Arc<dyn ProxyEvents>,
}

impl Proxy {
    /// Serve the connections of `listener` until `cancel` (the call's end):
    /// each in a task of its own, at most [`MAX_CONNECTIONS`] at once.
    pub async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        cancel: CancellationToken,
    ) {
        let places = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            let place = tokio::select! {
                () = cancel.cancelled() => return,
                place = places.clone().acquire_owned() => match place {
                    Ok(place) => place,
                    Err(_) => return,
                },
            };
            let stream = tokio::select! {
                () = cancel.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let proxy = self.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                let time = proxy.policy.time;
                tokio::select! {
                    () = cancel.cancelled() => {}
                    _ = tokio::time::timeout(time, proxy.relay(stream)) => {}
                }
                drop(place);
            });
        }
    }

    /// One client connection, start to end.
    async fn relay<S: AsyncRead + AsyncWrite + Unpin>(&self, mut client: S) {
        let (head, rest) = match read_head(&mut client).await {
            Ok(read) => read,
            Err(reason) => {
                let _ = answer(&mut client, 400, "Bad Request", &reason).await;
                return;
            }
        };
        let request = match Request::parse(&head) {
            Ok(request) => request,
            Err(reason) => {
                let _ = answer(&mut client, 400, "Bad Request", &reason).await;
                return;
            }
        };
        let shown = host_port(&request.target);
        let upstream = match self.connect(&request.target).await {
            Ok(upstream) => upstream,
            Err(reason) => {
                self.events.refused(&shown, &reason);
                let text = format!("toolhost refused the connection to {shown}: {reason}");
                let _ = answer(&mut client, 403, "Forbidden", &text).await;
                return;
            }
        };
        self.events.allowed(&shown);
        let mut upstream = upstream;
        let sent = match &request.forward {
            // A tunnel: the client speaks (TLS, usually) once told.
            None => {
                let ok = b"HTTP/1.1 200 Connection established\r\n\r\n";
                client.write_all(ok).await
            }
            // Plain HTTP: the head in origin form, then what followed it.
            Some(head) => upstream.write_all(head).await,
        };
        if sent.is_err() || upstream.write_all(&rest).await.is_err() {
            return;
        }
        // Buffers of 64 KiB each way: 128 KiB a connection, at most
        // MAX_CONNECTIONS of them. (With tokio's default 8 KiB a 100 MiB
        // download ran at a third of a direct one's speed; with these, half:
        // `scripts/bench egress`.)
        let _ = tokio::io::copy_bidirectional_with_sizes(
            &mut client,
            &mut upstream,
            64 << 10,
            64 << 10,
        )
        .await;
    }

    /// A connection to `target`, checked as the module docs say; or why not.
    async fn connect(&self, target: &Target) -> Result<TcpStream, String> {
        let policy = &self.policy.http;
        let grant = policy
            .grants()
            .iter()
            .find(|g| g.matches_host_port(target))
            .ok_or_else(|| {
                format!(
                    "{} is not in the network grant (granted: {})",
                    host_port(target),
                    self.policy.entries.join(", ")
                )
            })?;
        let wait = self.policy.time;
        let resolved = resolve(grant, target, self.resolver.as_ref(), wait)
            .await
            .map_err(|e| e.to_string())?;
        let addrs = policy
            .route(grant, target, &resolved)
            .map_err(|refusal| refusal.text)?;
        connect_first(&addrs, wait).await.map_err(|e| e.to_string())
    }
}

/// `host:port`, as a network entry writes it.
fn host_port(target: &Target) -> String {
    format!("{}:{}", target.host_text(), target.port)
}

/// A parsed request head: where it goes, and (plain HTTP) the head to send.
struct Request {
    target: Target,
    /// `None` for CONNECT; the head in origin form otherwise.
    forward: Option<Vec<u8>>,
}

impl Request {
    fn parse(head: &[u8]) -> Result<Request, String> {
        let text = std::str::from_utf8(head).map_err(|_| "the request head is not text")?;
        let (line, headers) = text.split_once("\r\n").unwrap_or((text, ""));
        let mut parts = line.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("{line:?} is not an HTTP request line"));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(format!("{version} is not HTTP/1"));
        }
        if method == "CONNECT" {
            let uri: http::Uri = format!("http://{target}/")
                .parse()
                .map_err(|_| format!("CONNECT {target}: not host:port"))?;
            if uri.port_u16().is_none() {
                return Err(format!("CONNECT {target}: not host:port"));
            }
            let target = Target::of(&uri).map_err(|r| r.text)?;
            return Ok(Request {
                target,
                forward: None,
            });
        }
        let uri: http::Uri = target
            .parse()
            .map_err(|_| format!("{target} is not a URI"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!(
                "{method} {target}: a proxy request names an http:// URL (https goes through CONNECT)"
            ));
        }
        let target = Target::of(&uri).map_err(|r| r.text)?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        // The Host header names the host checked, whatever the client wrote
        // there (a server that routes by it serves only that host).
        let authority = uri.authority().map_or("", |a| a.as_str());
        let mut head = format!("{method} {path} {version}\r\nhost: {authority}\r\n");
        for line in headers.split("\r\n") {
            let is_host = line
                .split_once(':')
                .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("host"));
            if !is_host && !line.is_empty() {
                head.push_str(line);
                head.push_str("\r\n");
            }
        }
        head.push_str("\r\n");
        Ok(Request {
            target,
            forward: Some(head.into_bytes()),
        })
    }
}

/// The request head (through its blank line) and what came after it.
async fn read_head<S: AsyncRead + Unpin>(client: &mut S) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(format!(
                "the request head is longer than {MAX_HEAD_BYTES} bytes"
            ));
        }
        let n = client
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the request: {e}"))?;
        if n == 0 {
            return Err("the request ended before its head did".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Answer the client with `status` and `text`, and end.
async fn answer<S: AsyncWrite + Unpin>(
    client: &mut S,
    status: u16,
    reason: &str,
    text: &str,
) -> std::io::Result<()> {
    let body = format!("{text}\n");
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::http_client::SystemResolver;
    use std::net::IpAddr;
    use std::sync::Mutex;
    use tokio::io::AsyncBufReadExt;

    /// The record of what the proxy allowed and refused.
    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl ProxyEvents for Seen {
        fn allowed(&self, target: &str) {
            self.0.lock().unwrap().push(format!("allowed {target}"));
        }
        fn refused(&self, target: &str, reason: &str) {
            self.0
                .lock()
                .unwrap()
                .push(format!("refused {target}: {reason}"));
        }
    }

    /// Resolves every name to 127.0.0.1 (as a DNS answer could).
    struct Loopback;

    impl Resolver for Loopback {
        fn lookup<'a>(
            &'a self,
            _name: &'a str,
            _port: u16,
        ) -> futures::future::BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
            Box::pin(async { Ok(vec!["127.0.0.1".parse().unwrap()]) })
        }
    }

    /// A server answering each connection with the head it was sent (its
    /// blank line left out).
    async fn upstream() -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut reader = tokio::io::BufReader::new(stream);
                    let mut line = String::new();
                    loop {
                        let mut next = String::new();
                        match reader.read_line(&mut next).await {
                            Ok(0) | Err(_) => break,
                            Ok(_) if next == "\r\n" => break,
                            Ok(_) => line.push_str(&next),
                        }
                    }
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{line}",
                        line.len()
                    );
                    let _ = reader.get_mut().write_all(reply.as_bytes()).await;
                });
            }
        });
        port
    }

    async fn proxy(
        entries: &[String],
        resolver: Arc<dyn Resolver>,
    ) -> (u16, Arc<Seen>, CancellationToken) {
        let seen = Arc::new(Seen::default());
        let proxy = Arc::new(Proxy {
            policy: Arc::new(NetPolicy::new(entries, Duration::from_secs(10)).unwrap()),
            resolver,
            events: seen.clone(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cancel = CancellationToken::new();
        tokio::spawn(proxy.serve(listener, cancel.clone()));
        (port, seen, cancel)
    }

    /// Send `head` to the proxy at `port`, then `after` once it answers;
    /// everything it sent back.
    /// What the proxy on `port` answers a tunnel to `target` (`host:port`),
    /// with `after` sent through it once it is open (if anything).
    async fn connect(port: u16, target: &str, after: &str) -> String {
        ask(port, &format!("CONNECT {target} HTTP/1.1\r\n\r\n"), after).await
    }

    async fn ask(port: u16, head: &str, after: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        if !after.is_empty() {
            let mut first = [0u8; 39];
            s.read_exact(&mut first).await.unwrap();
            assert_eq!(&first, b"HTTP/1.1 200 Connection established\r\n\r\n");
            s.write_all(after.as_bytes()).await.unwrap();
        }
        let mut out = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out)).await;
        out
    }

    #[tokio::test]
    async fn a_granted_host_is_reached_by_tunnel_and_by_absolute_url_and_others_are_refused() {
        let port = upstream().await;
        let entries = vec![format!("localhost:{port}")];
        let (proxy, seen, _cancel) = proxy(&entries, Arc::new(SystemResolver)).await;
        // A tunnel: what the client sends through it arrives as sent.
        let out = ask(
            proxy,
            &format!("CONNECT localhost:{port} HTTP/1.1\r\nhost: x\r\n\r\n"),
            "PING /tunnel X\r\n\r\n",
        )
        .await;
        assert!(out.ends_with("PING /tunnel X\r\n"), "{out}");
        // Plain HTTP: the absolute URL goes on in origin form.
        let out = ask(
            proxy,
            &format!(
                "GET http://localhost:{port}/a?b HTTP/1.1\r\nHost: evil.example\r\naccept: */*\r\n\r\n"
            ),
            "",
        )
        .await;
        // In origin form, and the Host header names the host checked,
        // whatever the client wrote (a server routing by it cannot be
        // steered to another of its sites).
        assert!(
            out.ends_with(&format!(
                "GET /a?b HTTP/1.1\r\nhost: localhost:{port}\r\naccept: */*\r\n"
            )),
            "{out}"
        );
        // Another port of the same host: refused, with the reason in a 403.
        let other = port.wrapping_add(1);
        let out = connect(proxy, &format!("localhost:{other}"), "").await;
        assert!(out.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{out}");
        assert!(
            out.contains(&format!(
                "toolhost refused the connection to localhost:{other}: localhost:{other} is not in the network grant (granted: localhost:{port})"
            )),
            "{out}"
        );
        assert_eq!(
            seen.0.lock().unwrap()[..2],
            [
                format!("allowed localhost:{port}"),
                format!("allowed localhost:{port}")
            ]
        );
    }

    #[tokio::test]
    async fn a_name_resolving_to_a_private_address_is_refused_unless_the_entry_names_it() {
        let port = upstream().await;
        // pkg.example.test "resolves" to loopback: refused, as a rebinding
        // answer would be.
        let entries = vec![
            format!("pkg.example.test:{port}"),
            format!("127.0.0.1:{port}"),
        ];
        let (proxy, _seen, _cancel) = proxy(&entries, Arc::new(Loopback)).await;
        let out = connect(proxy, &format!("pkg.example.test:{port}"), "").await;
        assert!(out.starts_with("HTTP/1.1 403"), "{out}");
        assert!(
            out.contains("resolves to 127.0.0.1, a loopback address"),
            "{out}"
        );
        // The address itself, named by an entry: allowed.
        let out = connect(proxy, &format!("127.0.0.1:{port}"), "HI\r\n\r\n").await;
        assert!(out.ends_with("HI\r\n"), "{out}");
        // An entry without a port allows 80 and 443 only.
        let policy = NetPolicy::new(&["pkg.example.test".into()], Duration::from_secs(1)).unwrap();
        let t =
            |p: u16| Target::of(&format!("http://pkg.example.test:{p}/").parse().unwrap()).unwrap();
        let allows = |p: u16| {
            policy
                .http
                .grants()
                .iter()
                .any(|g| g.matches_host_port(&t(p)))
        };
        assert!(allows(80) && allows(443) && !allows(8080));
        // Malformed requests and entries say what is wrong.
        let out = ask(proxy, "GET https://x/ HTTP/1.1\r\n\r\n", "").await;
        assert!(
            out.starts_with("HTTP/1.1 400") && out.contains("https goes through CONNECT"),
            "{out}"
        );
        let err = NetPolicy::new(&["https://x.org".into()], Duration::from_secs(1))
            .err()
            .unwrap();
        assert!(err.contains("has a scheme"), "{err}");
    }

    /// Thousands of connections that never finish their head: at most
    /// MAX_CONNECTIONS are read at once, the rest wait in the kernel's
    /// queue (the host holds a bounded number of tasks and buffers).
    #[tokio::test]
    async fn connections_beyond_the_bound_wait_their_turn() {
        let port = upstream().await;
        let (proxy, _seen, cancel) =
            proxy(&[format!("localhost:{port}")], Arc::new(SystemResolver)).await;
        let mut idle = Vec::new();
        for _ in 0..(MAX_CONNECTIONS + 8) {
            let mut s = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
            s.write_all(b"CONNECT localhost").await.unwrap();
            idle.push(s);
        }
        // The next, complete one is not served while every place is taken…
        let mut waiting = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
        let head = format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n");
        waiting.write_all(head.as_bytes()).await.unwrap();
        let mut byte = [0u8; 1];
        let early = tokio::time::timeout(Duration::from_millis(300), waiting.read(&mut byte)).await;
        assert!(early.is_err(), "served beyond the bound");
        // …and is once they are given up.
        drop(idle);
        let served = tokio::time::timeout(Duration::from_secs(10), waiting.read(&mut byte)).await;
        assert!(matches!(served, Ok(Ok(1))), "{served:?}");
        cancel.cancel();
    }
}

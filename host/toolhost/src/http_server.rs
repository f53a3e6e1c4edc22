//! The HTTP listener both protocol servers can run on: `toolhost mcp --http`
//! (MCP's Streamable HTTP at `/mcp`) and `toolhost serve --http` (JSON-RPC
//! at `/rpc`). It knows nothing of either protocol: a server hands it
//! [`Route`]s, and it applies the same rules to every request first.
//!
//! Safe by default, because a tool host on a port is a shell on a port:
//!
//! * **Where it listens.** The address is the caller's; the CLI defaults to
//!   loopback.
//! * **The token, loopback included.** Every request must carry
//!   `Authorization: Bearer <token>` ([`HttpOptions::check`] refuses to start
//!   without a token). Loopback is no boundary between a user's programs:
//!   any local process can connect to it, among them the commands an agent's
//!   `bash` runs for another workspace (it has the network by default, as in
//!   Pi), which would otherwise read and write this workspace through the
//!   server. Serving without a token takes an explicit
//!   [`HttpOptions::no_auth`], and only on loopback.
//! * **DNS rebinding.** The `Host` header must name loopback
//!   (`localhost`, `127.0.0.1`, `[::1]`), the address listened on, or a
//!   name allowed with [`HttpOptions::allow_host`]; otherwise 403. A web page
//!   whose name was made to resolve to 127.0.0.1 sends its own name there.
//! * **Browsers.** A request carrying an `Origin` is refused (403) unless
//!   that origin is allowed ([`HttpOptions::allow_origin`]); programs do not
//!   send one.
//! * **The token.** A request without `Authorization: Bearer <token>`
//!   gets 401 and runs nothing.
//! * **Bounds.** At most [`HttpOptions::max_connections`] connections are
//!   served at once (more wait in the kernel's accept queue), headers must
//!   arrive within [`HEADER_TIMEOUT`], request bodies are capped
//!   ([`HttpOptions::max_body_bytes`], 413 beyond), and at most
//!   [`HttpOptions::max_requests`] POSTs run at once (more wait their turn;
//!   a client that leaves while waiting costs nothing more). A response
//!   streams as fast as its client reads: what waits for a slow client is
//!   bounded by the servers (a call's progress updates are capped), and a
//!   client that goes away cancels what its request was running.

use bytes::{Buf, Bytes};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// A response body: bytes as they come, never an error (a failure is a
/// status or a JSON-RPC error inside it).
pub type HttpBody = BoxBody<Bytes, Infallible>;

/// What serves one path: the request (its body not yet read) in, the
/// response out.
pub type Handler = Arc<
    dyn Fn(Request<Incoming>) -> Pin<Box<dyn Future<Output = Response<HttpBody>> + Send>>
        + Send
        + Sync,
>;

/// A path and what serves it.
#[derive(Clone)]
pub struct Route {
    pub path: &'static str,
    pub handler: Handler,
}

/// How long a client may take to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// The listener's settings; [`HttpOptions::new`] states every default.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// The bearer token every request must carry; `None` only with
    /// `no_auth`.
    pub token: Option<String>,
    /// Serve without a token: any local process may use the server. Only
    /// on loopback, and only when asked for (`--no-auth`).
    pub no_auth: bool,
    /// `Host` names allowed besides loopback and the address listened on;
    /// `*` allows any (only sensible behind a token).
    pub allowed_hosts: Vec<String>,
    /// `Origin`s allowed (`scheme://host:port`, or `scheme://host:*`).
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    pub max_requests: usize,
    pub max_connections: usize,
}

impl HttpOptions {
    /// Listen on `addr`, with no host or origin beyond loopback, bodies up
    /// to 4 MiB, 64 POSTs and 256 connections at once. No token yet:
    /// [`HttpOptions::check`] refuses to start until one is given with
    /// [`HttpOptions::token`] or, on loopback, [`HttpOptions::no_auth`].
    pub fn new(addr: SocketAddr) -> HttpOptions {
        HttpOptions {
            addr,
            token: None,
            no_auth: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: 4 << 20,
            max_requests: 64,
            max_connections: 256,
        }
    }

    pub fn token(mut self, token: impl Into<String>) -> HttpOptions {
        self.token = Some(token.into());
        self
    }

    /// Serve without a token (loopback only): every local process, the
    /// commands of other workspaces' agents among them, can then use it.
    pub fn no_auth(mut self) -> HttpOptions {
        self.no_auth = true;
        self
    }

    pub fn allow_host(mut self, host: impl Into<String>) -> HttpOptions {
        self.allowed_hosts.push(host.into());
        self
    }

    pub fn allow_origin(mut self, origin: impl Into<String>) -> HttpOptions {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Refuse settings that would expose the tools: a token is required
    /// unless `no_auth` is asked for on loopback, and must not be short.
    pub fn check(&self) -> Result<(), String> {
        match &self.token {
            Some(_) if self.no_auth => {
                Err("a bearer token and --no-auth were both given: choose one".into())
            }
            Some(token) if token.trim().is_empty() => {
                Err("the bearer token is empty: give a token of at least 16 characters".into())
            }
            Some(token) if token.len() < 16 => Err(format!(
                "the bearer token is {} characters long: give one of at least 16",
                token.len()
            )),
            Some(_) => Ok(()),
            None if !self.addr.ip().is_loopback() => Err(format!(
                "listening on {} (not a loopback address) needs a bearer token \
                 (--token-file); --no-auth is for loopback only",
                self.addr
            )),
            None if !self.no_auth => Err(format!(
                "listening on {} without a bearer token: give one (--token-file), or serve \
                 loopback to every local process with --no-auth",
                self.addr
            )),
            None => Ok(()),
        }
    }
}

/// A fresh random token: 32 bytes from the kernel, as hex.
pub fn generate_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(std::io::Error::from)?;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A bound listener; [`HttpListener::run`] serves it.
pub struct HttpListener {
    listener: TcpListener,
    guard: Arc<Guard>,
}

impl HttpListener {
    /// Check `options` and bind. The routes' paths are matched exactly.
    pub async fn bind(options: HttpOptions, routes: Vec<Route>) -> std::io::Result<HttpListener> {
        options.check().map_err(std::io::Error::other)?;
        let listener = TcpListener::bind(options.addr).await?;
        let local = listener.local_addr()?;
        let guard = Arc::new(Guard {
            requests: Arc::new(Semaphore::new(options.max_requests.max(1))),
            connections: Arc::new(Semaphore::new(options.max_connections.max(1))),
            local,
            options,
            routes,
        });
        Ok(HttpListener { listener, guard })
    }

    /// The address listened on (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.guard.local
    }

    /// Serve until `shutdown` is cancelled; connections then finish the
    /// request they are in.
    pub async fn run(self, shutdown: CancellationToken) -> std::io::Result<()> {
        loop {
            let permit = tokio::select! {
                permit = self.guard.connections.clone().acquire_owned() => {
                    permit.expect("the connection semaphore is never closed")
                }
                () = shutdown.cancelled() => return Ok(()),
            };
            let stream = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // A connection that failed before it was accepted (reset,
                    // or out of descriptors for a moment): the next one may not.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
                () = shutdown.cancelled() => return Ok(()),
            };
            let _ = stream.set_nodelay(true);
            let guard = self.guard.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let guard = guard.clone();
                    async move { Ok::<_, Infallible>(guard.handle(request).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), service);
                tokio::pin!(connection);
                tokio::select! {
                    _ = connection.as_mut() => {}
                    () = shutdown.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        let _ = connection.await;
                    }
                }
                drop(permit);
            });
        }
    }
}

/// The rules every request passes before its route sees it.
struct Guard {
    options: HttpOptions,
    local: SocketAddr,
    routes: Vec<Route>,
    requests: Arc<Semaphore>,
    connections: Arc<Semaphore>,
}

impl Guard {
    async fn handle(&self, request: Request<Incoming>) -> Response<HttpBody> {
        if let Err(response) = self.admit(&request) {
            return response;
        }
        let Some(route) = self.routes.iter().find(|r| r.path == request.uri().path()) else {
            let paths: Vec<&str> = self.routes.iter().map(|r| r.path).collect();
            return plain(
                StatusCode::NOT_FOUND,
                format!(
                    "Not found: {} (served: {})",
                    request.uri().path(),
                    paths.join(", ")
                ),
            );
        };
        let too_long = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            .is_some_and(|n| n > self.options.max_body_bytes as u64);
        if too_long {
            drain(request.into_body()).await;
            return too_large(self.options.max_body_bytes);
        }
        if request.method() != Method::POST {
            return (route.handler)(request).await;
        }
        // Waiting for a turn costs this task only; a client that leaves
        // drops it, and the permit with it.
        let permit = self
            .requests
            .clone()
            .acquire_owned()
            .await
            .expect("the request semaphore is never closed");
        // The permit counts the work, not the connection: whatever runs on
        // after its response is gone (a call kept for a resumed stream, a
        // task, a batch that must see its cancellation through) takes it
        // from the request's slot and holds it to its end. Otherwise it
        // lives as long as the response body: a streamed batch counts until
        // its last line.
        let mut request = request;
        let slot = PermitSlot::holding(Some(Permit(permit)));
        request.extensions_mut().insert(slot.clone());
        let response = (route.handler)(request).await;
        response.map(|body| hold(body, ReleaseUnlessTaken(slot)))
    }

    /// Host, Origin and token, in that order; the refusal otherwise.
    #[allow(clippy::result_large_err)]
    fn admit<B>(&self, request: &Request<B>) -> Result<(), Response<HttpBody>> {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()));
        let Some(host) = host else {
            return Err(plain(
                StatusCode::FORBIDDEN,
                "Forbidden: the request has no Host header",
            ));
        };
        if !self.host_allowed(host) {
            return Err(plain(
                StatusCode::FORBIDDEN,
                format!("Forbidden: Host {host} is not allowed (allow it with --allow-host)"),
            ));
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not text)");
            if !self.origin_allowed(origin) {
                return Err(plain(
                    StatusCode::FORBIDDEN,
                    format!(
                        "Forbidden: Origin {origin} is not allowed (allow it with --allow-origin)"
                    ),
                ));
            }
        }
        // Fail closed: without a token, only an explicit no_auth admits
        // (`check` refuses to bind otherwise).
        if self.options.token.is_some() || !self.options.no_auth {
            let expected = self.options.token.as_deref();
            let given = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            let admitted = given.zip(expected).is_some_and(|(given, token)| {
                same_secret(given.trim().as_bytes(), token.as_bytes())
            });
            if !admitted {
                let mut response = plain(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: this server needs Authorization: Bearer <token>",
                );
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return Err(response);
            }
        }
        Ok(())
    }

    fn host_allowed(&self, authority: &str) -> bool {
        let name = host_name(authority).to_ascii_lowercase();
        if matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1") {
            return true;
        }
        if name.parse::<IpAddr>().is_ok_and(|ip| ip == self.local.ip()) {
            return true;
        }
        self.options.allowed_hosts.iter().any(|allowed| {
            allowed == "*" || {
                let allowed = allowed.to_ascii_lowercase();
                // `name` alone allows any port; `name:port` that port only.
                allowed == name || allowed == authority.to_ascii_lowercase()
            }
        })
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        if self.own_origin(&origin) {
            return true;
        }
        self.options.allowed_origins.iter().any(|allowed| {
            let allowed = allowed.to_ascii_lowercase();
            match allowed.strip_suffix(":*") {
                Some(prefix) => {
                    origin == prefix
                        || origin
                            .strip_prefix(prefix)
                            .and_then(|rest| rest.strip_prefix(':'))
                            .is_some_and(|port| {
                                !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                            })
                }
                None => allowed == origin,
            }
        })
    }
}

impl Guard {
    /// Whether `origin` (lowercase) is this server's own: `http://` a
    /// loopback name or the address listened on, and the port listened on.
    /// Only a page this server served could carry it, and it serves none; a
    /// page of another local server (another port) or of a name rebound to
    /// loopback carries its own.
    fn own_origin(&self, origin: &str) -> bool {
        let Some(authority) = origin.strip_prefix("http://") else {
            return false;
        };
        let port = self.local.port().to_string();
        let Some(name) = authority
            .strip_suffix(port.as_str())
            .and_then(|rest| rest.strip_suffix(':'))
        else {
            return false;
        };
        let name = name.trim_start_matches('[').trim_end_matches(']');
        matches!(name, "localhost" | "127.0.0.1" | "::1")
            || name.parse::<IpAddr>().is_ok_and(|ip| ip == self.local.ip())
    }
}

/// The host of a `Host` value: `name`, `name:port`, `[v6]`, `[v6]:port`.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => authority,
    }
}

/// Compare secrets in time that depends on their lengths only.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// A response of one text line.
pub fn plain(status: StatusCode, text: impl Into<String>) -> Response<HttpBody> {
    let mut text = text.into();
    text.push('\n');
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// `status` with the JSON-RPC error `rejection` as its body (its id the
/// exact text the client sent, see [`crate::jsonrpc`]).
pub fn rejected(status: StatusCode, rejection: &crate::jsonrpc::Rejection) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::from(rejection.to_line())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 413 for a body over `limit` bytes, the connection closed after it. Both
/// servers on this listener speak JSON-RPC, so the body is a JSON-RPC error
/// (`-32600`, invalid request, `id` null since the request was not read)
/// that says why: a client sees the reason, not a broken pipe (the rest of
/// the body is drained first, see [`drain`]).
pub fn too_large(limit: usize) -> Response<HttpBody> {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32600,
            "message": format!(
                "Payload too large: request bodies are limited to {limit} bytes; send a \
                 smaller request"
            ),
            "data": { "limitBytes": limit },
        },
    });
    let mut response = Response::new(Full::new(Bytes::from(error.to_string())).boxed());
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A request's whole body, at most `limit` bytes; 413 beyond (the rest
/// drained, see [`drain`]), 400 when it cannot be read.
pub async fn read_body<B>(mut body: B, limit: usize) -> Result<Bytes, Response<HttpBody>>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            plain(
                StatusCode::BAD_REQUEST,
                format!("Bad request: reading the body: {e}"),
            )
        })?;
        if let Some(data) = frame.data_ref() {
            if bytes.len() + data.len() > limit {
                drain(body).await;
                return Err(too_large(limit));
            }
            bytes.extend_from_slice(data);
        }
    }
    Ok(Bytes::from(bytes))
}

/// Most bytes, and longest time, spent reading a refused body.
const DRAIN_BYTES: usize = 64 << 20;
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// Read and discard what is left of a refused request's body, within
/// bounds, so that a client still sending it reads the refusal instead of
/// a reset connection (nginx's lingering close). Nothing is kept.
pub async fn drain<B: Body + Unpin>(mut body: B) {
    let mut read = 0usize;
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while read < DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    read += frame.data_ref().map_or(0, |d| d.remaining());
                }
                _ => return,
            }
        }
    })
    .await;
}

/// One of `--max-requests` places, held by what it counts.
#[derive(Debug)]
pub struct Permit(#[allow(dead_code)] OwnedSemaphorePermit);

/// The permit of a request, in its extensions, for the work that outlives
/// the response to take ([`PermitSlot::take`]); untaken, it is released
/// with the response body. Taken once: a copy of the request kept
/// elsewhere cannot pin it.
#[derive(Clone, Debug)]
pub struct PermitSlot(Arc<std::sync::Mutex<Option<Permit>>>);

impl PermitSlot {
    /// A slot of its own holding `permit`, released when the last copy of
    /// the slot goes unless taken first: what a route gives the work it
    /// hands on (a call queued to a session), so that the permit goes with
    /// the work and not with the response body.
    pub fn holding(permit: Option<Permit>) -> PermitSlot {
        PermitSlot(Arc::new(std::sync::Mutex::new(permit)))
    }

    /// The request's permit, for the caller to hold until its work ends;
    /// `None` once taken.
    pub fn take(&self) -> Option<Permit> {
        self.0.lock().expect("permit slot lock").take()
    }
}

/// Releases a request's permit with its response body, unless its work
/// took it.
struct ReleaseUnlessTaken(PermitSlot);

impl Drop for ReleaseUnlessTaken {
    fn drop(&mut self) {
        drop(self.0.take());
    }
}

/// `body`, keeping `held` alive until the body ends or is dropped: a
/// request permit, or a drop guard that cancels what the request runs when
/// its client goes away.
pub fn hold<T: Send + Sync + 'static>(body: HttpBody, held: T) -> HttpBody {
    Held { body, _held: held }.boxed()
}

struct Held<T> {
    body: HttpBody,
    _held: T,
}

// Nothing in `Held` is ever pinned in place: the body is a box, `T` is
// only kept.
impl<T> Unpin for Held<T> {}

impl<T> Body for Held<T> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(options: HttpOptions) -> Guard {
        Guard {
            local: options.addr,
            requests: Arc::new(Semaphore::new(1)),
            connections: Arc::new(Semaphore::new(1)),
            options,
            routes: Vec::new(),
        }
    }

    fn request(headers: &[(&str, &str)]) -> Request<()> {
        let mut request = Request::builder().uri("/mcp");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.body(()).unwrap()
    }

    /// A listener on 127.0.0.1:8765 without authentication.
    fn on_loopback() -> HttpOptions {
        HttpOptions::new("127.0.0.1:8765".parse().unwrap()).no_auth()
    }

    fn status(guard: &Guard, headers: &[(&str, &str)]) -> Option<StatusCode> {
        guard.admit(&request(headers)).err().map(|r| r.status())
    }

    #[test]
    fn the_host_header_must_name_loopback_the_address_or_an_allowed_name() {
        let g = guard(on_loopback().allow_host("tools.internal"));
        // (the Host header, admitted)
        for (host, admitted) in [
            ("localhost:8765", true),
            ("127.0.0.1", true),
            ("[::1]:9", true),
            ("tools.internal:80", true),
            ("evil.example:8765", false),
            ("localhost.evil.example", false),
        ] {
            let refused = (!admitted).then_some(StatusCode::FORBIDDEN);
            assert_eq!(status(&g, &[("host", host)]), refused, "{host}");
        }
        assert_eq!(status(&g, &[]), Some(StatusCode::FORBIDDEN));
        let g =
            guard(HttpOptions::new("10.1.2.3:80".parse().unwrap()).token("0123456789abcdef0123"));
        let auth = ("authorization", "Bearer 0123456789abcdef0123");
        assert_eq!(status(&g, &[("host", "10.1.2.3"), auth]), None);
        assert_eq!(
            status(&g, &[("host", "10.1.2.4"), auth]),
            Some(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn an_origin_is_refused_unless_allowed() {
        let g = guard(on_loopback().allow_origin("http://localhost:*"));
        let host = ("host", "localhost");
        // (the Origin header, admitted)
        for (origin, admitted) in [
            ("http://localhost:3000", true),
            ("http://localhost", true),
            ("http://localhost.evil.example", false),
            ("https://evil.example", false),
        ] {
            let refused = (!admitted).then_some(StatusCode::FORBIDDEN);
            assert_eq!(status(&g, &[host, ("origin", origin)]), refused, "{origin}");
        }
        let g = guard(on_loopback());
        assert_eq!(
            status(&g, &[host, ("origin", "http://localhost:3000")]),
            Some(StatusCode::FORBIDDEN)
        );
        // The server's own origin (a loopback name, its port) is same-origin.
        for own in [
            "http://127.0.0.1:8765",
            "http://localhost:8765",
            "http://[::1]:8765",
        ] {
            assert_eq!(status(&g, &[host, ("origin", own)]), None, "{own}");
        }
        for other in [
            "http://127.0.0.1:87650",
            "http://127.0.0.1:876",
            "https://127.0.0.1:8765",
            "http://evil.example:8765",
            "http://127.0.0.2:8765",
            "http://localhost.evil.example:8765",
        ] {
            assert_eq!(
                status(&g, &[host, ("origin", other)]),
                Some(StatusCode::FORBIDDEN),
                "{other}"
            );
        }
    }

    #[test]
    fn a_token_is_required_unless_no_auth_is_asked_for_on_loopback() {
        let open = HttpOptions::new("0.0.0.0:8765".parse().unwrap());
        assert!(open.check().unwrap_err().contains("needs a bearer token"));
        assert!(
            open.clone()
                .no_auth()
                .check()
                .unwrap_err()
                .contains("--no-auth is for loopback only")
        );
        assert!(
            open.clone()
                .token("short")
                .check()
                .unwrap_err()
                .contains("at least 16")
        );
        let loopback = HttpOptions::new("127.0.0.1:1".parse().unwrap());
        assert!(
            loopback
                .check()
                .unwrap_err()
                .contains("without a bearer token")
        );
        assert!(loopback.clone().no_auth().check().is_ok());
        assert!(
            loopback
                .clone()
                .token("0123456789abcdef0123")
                .check()
                .is_ok()
        );
        assert!(
            loopback
                .token("0123456789abcdef0123")
                .no_auth()
                .check()
                .unwrap_err()
                .contains("choose one")
        );
        let g = guard(open.token("0123456789abcdef0123").allow_host("*"));
        let host = ("host", "anything");
        assert_eq!(status(&g, &[host]), Some(StatusCode::UNAUTHORIZED));
        assert_eq!(
            status(
                &g,
                &[host, ("authorization", "Bearer 0123456789abcdef0124")]
            ),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(
                &g,
                &[host, ("authorization", "Bearer 0123456789abcdef0123")]
            ),
            None
        );
        // Fail closed: a listener built without check() and without a token
        // still admits nothing unless no_auth was asked for.
        let closed = guard(HttpOptions::new("127.0.0.1:1".parse().unwrap()));
        assert_eq!(
            status(&closed, &[("host", "localhost")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(generate_token().unwrap().len(), 64);
    }
}

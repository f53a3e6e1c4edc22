//! The `http` Operation: `wasi:http` outgoing requests of a component granted
//! `http = ["api.example.com", "*.example.org:8443", "http://localhost:8080"]`,
//! sent by the host itself so that it sees, and checks, every request.
//!
//! `wasmtime-wasi-http` serves the `wasi:http` interfaces (types,
//! outgoing-handler); its `send_request` hook is this module's [`send`],
//! which on every request, in this order:
//!
//! 1. matches the request's scheme, host and port against the grant entries
//!    ([`HttpGrant`]); no match, no request;
//! 2. resolves the host itself and refuses the request if any address it
//!    resolves to is not a public unicast address ([`special`]: loopback,
//!    private, link-local, unspecified, shared CGNAT, multicast, broadcast,
//!    reserved, or an IPv4-mapped, -compatible or NAT64 form of those),
//!    unless the matching entry names the destination explicitly: an IP
//!    literal (which is the address connected to) or `localhost` (whose
//!    addresses must then all be loopback);
//! 3. connects to the checked address, never resolving the name again (a
//!    second resolution is what DNS rebinding exploits);
//! 4. speaks HTTP/1.1 over that connection (TLS with the Mozilla roots for
//!    `https`, the request's host as the server name), with the request body,
//!    the response body and every wait bounded ([`HttpPolicy`]), and aborts
//!    at once when the call is cancelled.
//!
//! Redirects are the guest's to follow: each one is a new request, checked
//! again. Every host connected to is recorded in the call's usage, every
//! refusal as denied.
//!
//! # What the guest sees
//!
//! `wasi:http`'s `http-request-denied` carries no text, so a host refusal
//! reaches the guest as `internal-error(some(reason))`, the reason being the
//! whole sentence (`HTTP request to http://evil.test:80/ refused: …`), which a
//! tool can pass to the model. A response body over the limit fails the body
//! stream with `HTTP response body size exceeds limit: N bytes` (its
//! `to-debug-string`).

use crate::ops::usage::{Usage, Use};
use http_body_util::BodyExt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{
    Error as WasiHttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

mod address;
mod body;
mod grant;
pub mod proxy;
mod secrets;
mod taped;
#[cfg(test)]
mod tests;

pub use address::special;
use body::{Incoming, Limited};
use grant::*;
pub use grant::{HttpGrant, HttpPolicy, Scheme};
pub use secrets::{HttpSecret, SecretSpec};
pub use taped::{Answered, Field, HttpTape, OnTape, Received, Sent};
#[cfg(test)]
pub(crate) use taped::{Code, Failure, FieldValue};

/// Largest response body passed to the guest, unless the grant sets
/// `http-response-kb`.
pub const DEFAULT_RESPONSE_BYTES: u64 = 16 << 20;
/// Largest request body sent for the guest.
pub const MAX_REQUEST_BYTES: u64 = 4 << 20;

/// A request the host refuses: a short reason for the audit log's denied
/// list and the sentence the guest sees.
#[derive(Debug)]
struct Refusal {
    code: &'static str,
    text: String,
}

impl Refusal {
    fn new(code: &'static str, text: String) -> Refusal {
        Refusal { code, text }
    }
}

/// What a request sees of the call it belongs to: its cancellation, and
/// the record of what it used. The call's signals provide it.
pub trait CallWatch: Send + Sync {
    fn cancel(&self) -> &CancellationToken;
    fn usage(&self) -> &Usage;
    /// How the call asks for a host it was not granted.
    fn asking(&self) -> Option<&dyn AskForHost>;
    /// The call's tape, when it records or replays ([`taped`]).
    fn tape(&self) -> Option<Arc<dyn HttpTape>> {
        None
    }
}

/// How a call asks for a host it was not granted: the permission layer
/// answers (`crate::permissions`: the rules, else the person), so that the
/// Operations stay below it.
pub trait AskForHost: Send + Sync {
    /// `Ok` when the request to `host:port` of `call` may go; else the text
    /// of the refusal (`refusal`, or what the person said).
    fn allow_host<'a>(
        &'a self,
        host: (String, u16),
        refusal: &'a str,
        call: &'a dyn CallWatch,
    ) -> futures::future::BoxFuture<'a, Result<(), String>>;
}

/// The per-call `wasi:http` state of a call's store: the context
/// `wasmtime-wasi-http` keeps, and the hooks that send through the policy.
pub(crate) struct HttpCall {
    ctx: WasiHttpCtx,
    hooks: Hooks,
}

impl HttpCall {
    /// `policy` is `None` for a component not granted `http` (linked only
    /// to be inspected): then every request is refused.
    pub(crate) fn new(policy: Option<Arc<HttpPolicy>>, signals: Arc<dyn CallWatch>) -> HttpCall {
        HttpCall {
            ctx: WasiHttpCtx::new(),
            hooks: Hooks { policy, signals },
        }
    }
}

impl HttpCall {
    /// The view `wasmtime-wasi-http` serves a call through, with the
    /// call's resource table.
    pub(crate) fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView {
            ctx: &mut self.ctx,
            table,
            hooks: &mut self.hooks,
        }
    }
}

/// Link `wasi:http` (types and outgoing-handler) for a component granted
/// `http`, or one only inspected (whose requests are all refused).
pub(crate) fn add_to_linker<T: WasiHttpView + wasmtime_wasi::WasiView + 'static>(
    linker: &mut Linker<T>,
    linked: bool,
) -> wasmtime::Result<()> {
    if linked {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    }
    Ok(())
}

struct Hooks {
    policy: Option<Arc<HttpPolicy>>,
    signals: Arc<dyn CallWatch>,
}

type IoFuture = Box<dyn Future<Output = Result<(), WasiHttpError>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), WasiHttpError>> + Send>;

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> SendFuture {
        let policy = self.policy.clone();
        let signals = self.signals.clone();
        Box::new(async move {
            let cancel = signals.cancel().clone();
            let uri = request.uri().clone();
            let sent = async {
                match signals.tape() {
                    Some(tape) => {
                        let live = |request| send(policy.clone(), &signals, request, options);
                        taped::send(tape, policy.clone(), &signals, request, live).await
                    }
                    None => send(policy.clone(), &signals, request, options).await,
                }
            };
            tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(aborted(&uri.to_string())),
                sent = sent => sent,
            }
        })
    }
}

fn internal(text: String) -> WasiHttpError {
    WasiHttpError::InternalError(Some(text))
}

fn aborted(url: &str) -> WasiHttpError {
    internal(format!(
        "HTTP request to {url} aborted: the call was cancelled"
    ))
}

/// A stream a request runs over: TCP, or TLS over TCP.
trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

/// Send one request under `policy`, following the steps of the module docs.
async fn send(
    policy: Option<Arc<HttpPolicy>>,
    signals: &Arc<dyn CallWatch>,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<(http::Response<WasiBody>, IoFuture), WasiHttpError> {
    let usage = signals.usage();
    let refuse = |refusal: Refusal, url: &str| {
        usage.note(Use::Denied, &format!("http {url}: {}", refusal.code));
        internal(refusal.text)
    };
    let target = match Target::of(request.uri()) {
        Ok(target) => target,
        Err(refusal) => {
            let url = request.uri().to_string();
            return Err(refuse(refusal, &url));
        }
    };
    let refused = |reason: String, code| {
        refuse(
            Refusal::new(
                code,
                format!("HTTP request to {} refused: {reason}", target.url),
            ),
            &target.url,
        )
    };
    let Some(policy) = policy else {
        return Err(refused(
            "this component is not granted http".into(),
            "not-granted",
        ));
    };
    // A host beyond the grant: what the rules or the person say (spec:
    // `crate::permissions`), else the refusal.
    let asked;
    let grant = match policy.grant_for(&target) {
        Some(grant) => grant,
        None => {
            let reason = format!(
                "{} is not granted (granted: {})",
                target.as_entry(),
                policy.granted_list()
            );
            let Some(asking) = signals.asking() else {
                return Err(refused(reason, "not-granted"));
            };
            let refusal = format!("HTTP request to {} refused: {reason}", target.url);
            let allowed =
                asking.allow_host((target.host_text(), target.port), &refusal, &**signals);
            if let Err(text) = allowed.await {
                usage.note(Use::Denied, &format!("http {}: not-granted", target.url));
                return Err(internal(text));
            }
            asked = HttpGrant::parse(&target.as_entry())
                .map_err(|reason| refused(reason, "not-granted"))?;
            &asked
        }
    };
    let bound = |asked: Option<Duration>| asked.map_or(policy.time, |t| t.min(policy.time));
    let connect_timeout = bound(options.and_then(|o| o.connect_timeout));
    let first_byte_timeout = bound(options.and_then(|o| o.first_byte_timeout));
    let between_bytes_timeout = bound(options.and_then(|o| o.between_bytes_timeout));

    let resolved = match resolve(grant, &target, &SystemResolver, connect_timeout).await {
        Ok(resolved) => resolved,
        Err(Unresolved::TimedOut(..)) => return Err(WasiHttpError::DnsTimeout),
        Err(failed) => {
            return Err(WasiHttpError::DnsError {
                rcode: Some(failed.to_string()),
                info_code: None,
            });
        }
    };
    let addrs = policy
        .route(grant, &target, &resolved)
        .map_err(|r| refused(r.text, r.code))?;

    usage.note(Use::Host, &target.as_entry());
    // The secrets that go to this host, now that every check has passed.
    let mut carries_secret = false;
    for secret in policy.secrets.iter().filter(|s| s.goes_to(&target)) {
        secret.add_to(request.headers_mut());
        usage.note(
            Use::Secret,
            &format!("{} to {}", secret.name, target.as_entry()),
        );
        carries_secret = true;
    }
    if carries_secret {
        // An answer the host could not read (compressed) could carry the
        // secret past the redaction: ask for one it can.
        request.headers_mut().remove(http::header::ACCEPT_ENCODING);
        request.headers_mut().remove(http::header::TE);
    }
    let tcp = connect_first(&addrs, connect_timeout)
        .await
        .map_err(|failed| match failed {
            Unconnected::Failed(_, e) => WasiHttpError::Connect(e),
            Unconnected::TimedOut(_) => WasiHttpError::ConnectionTimeout,
            Unconnected::NoAddress => WasiHttpError::ConnectionRefused,
        })?;
    let stream: Box<dyn Stream> = match target.scheme {
        Scheme::Http => Box::new(tcp),
        Scheme::Https => {
            let name = match &target.host {
                RequestHost::Ip(ip) => rustls::pki_types::ServerName::IpAddress((*ip).into()),
                RequestHost::Name(name) => rustls::pki_types::ServerName::try_from(name.clone())
                    .map_err(|e| internal(format!("{name} is not a TLS server name: {e}")))?,
            };
            let connector = tokio_rustls::TlsConnector::from(tls_config());
            let tls = tokio::time::timeout(connect_timeout, connector.connect(name, tcp))
                .await
                .map_err(|_| WasiHttpError::ConnectionTimeout)?
                .map_err(WasiHttpError::Tls)?;
            Box::new(tls)
        }
    };
    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| WasiHttpError::ConnectionTimeout)??;

    // The request line carries the path only: the scheme and authority are
    // for proxies, and the Host header (set from the authority) names the
    // host.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|e| internal(format!("HTTP request to {}: {e}", target.url)))?;
    let request = request.map(|body| {
        Limited {
            inner: body,
            sent: 0,
            limit: policy.request_bytes,
        }
        .boxed_unsync()
    });

    let cancelled = signals.cancel().clone();
    let mut conn = Box::pin(conn);
    let mut conn_done = false;
    let response = {
        let sent = tokio::time::timeout(first_byte_timeout, sender.send_request(request));
        tokio::pin!(sent);
        // Drive the connection while waiting for the response head; it may
        // end first (a response with `connection: close` is read whole).
        loop {
            tokio::select! {
                res = &mut sent => break res,
                done = &mut conn, if !conn_done => {
                    done.map_err(|e| from_hyper(e, policy.request_bytes))?;
                    conn_done = true;
                }
            }
        }
    };
    let response = response
        .map_err(|_| WasiHttpError::ConnectionReadTimeout)?
        .map_err(|e| from_hyper(e, policy.request_bytes))?;
    let url = target.url.clone();
    // No secret of the extension reaches it in a response: not in a
    // header, not in the body.
    let redactor = secrets::Redactor::of(&policy.secrets);
    let mut response = response;
    let encoding = response
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|e| !e.is_empty() && e != "identity");
    if let (true, Some(encoding)) = (carries_secret, encoding) {
        usage.note(
            Use::Denied,
            &format!("http {}: encoded-answer-to-secret", target.url),
        );
        return Err(internal(format!(
            "HTTP response from {} refused: the request carried a secret and the answer came \
             encoded ({encoding}), which the host cannot search for the secret",
            target.url
        )));
    }
    if let Some(redactor) = &redactor {
        redactor.headers(response.headers_mut());
    }
    let response = response.map(|incoming| {
        Incoming {
            inner: incoming,
            read: 0,
            limit: policy.response_bytes,
            idle: between_bytes_timeout,
            timer: Box::pin(tokio::time::sleep(between_bytes_timeout)),
            cancelled: Box::pin(signals.cancel().clone().cancelled_owned()),
            url: url.clone(),
            signals: signals.clone(),
            done: false,
            redactor,
        }
        .boxed_unsync()
    });
    let io: IoFuture = Box::new(async move {
        if conn_done {
            return Ok(());
        }
        tokio::select! {
            _ = cancelled.cancelled() => Err(aborted(&url)),
            done = conn => done.map_err(WasiHttpError::from),
        }
    });
    Ok((response, io))
}

/// How the host resolves a name: once, for every address it connects to
/// (the tests of the egress proxy give one that answers loopback addresses
/// for made-up names).
pub trait Resolver: Send + Sync {
    fn lookup<'a>(
        &'a self,
        name: &'a str,
        port: u16,
    ) -> futures::future::BoxFuture<'a, std::io::Result<Vec<IpAddr>>>;
}

/// The system's resolver: each address it gives, once.
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(
        &'a self,
        name: &'a str,
        port: u16,
    ) -> futures::future::BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let mut ips = Vec::new();
            for addr in tokio::net::lookup_host((name, port)).await? {
                if !ips.contains(&addr.ip()) {
                    ips.push(addr.ip());
                }
            }
            Ok(ips)
        })
    }
}

/// Why a target's name gave no addresses.
#[derive(Debug)]
enum Unresolved {
    TimedOut(String, Duration),
    Failed(String, std::io::Error),
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unresolved::TimedOut(name, wait) => {
                write!(f, "resolving {name} took longer than {} s", wait.as_secs())
            }
            Unresolved::Failed(name, e) => write!(f, "{name} does not resolve: {e}"),
        }
    }
}

/// What `target`'s name resolves to, once, within `wait`; nothing for an
/// address, or for a grant that names one (connected to as written:
/// [`HttpPolicy::route`]).
async fn resolve(
    grant: &HttpGrant,
    target: &Target,
    resolver: &dyn Resolver,
    wait: Duration,
) -> Result<Vec<IpAddr>, Unresolved> {
    match (&grant.host, &target.host) {
        (HostPattern::Ip(_), _) | (_, RequestHost::Ip(_)) => Ok(Vec::new()),
        (_, RequestHost::Name(name)) => {
            tokio::time::timeout(wait, resolver.lookup(name, target.port))
                .await
                .map_err(|_| Unresolved::TimedOut(name.clone(), wait))?
                .map_err(|e| Unresolved::Failed(name.clone(), e))
        }
    }
}

/// Why no address of a target took a connection.
#[derive(Debug)]
enum Unconnected {
    NoAddress,
    Failed(SocketAddr, std::io::Error),
    TimedOut(SocketAddr),
}

impl std::fmt::Display for Unconnected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unconnected::NoAddress => f.write_str("no address to connect to"),
            Unconnected::Failed(addr, e) => write!(f, "connecting to {addr}: {e}"),
            Unconnected::TimedOut(addr) => write!(f, "connecting to {addr} took too long"),
        }
    }
}

/// A connection to the first of the checked `addrs` that takes one, each
/// tried within `wait`; else why the last did not.
async fn connect_first(addrs: &[SocketAddr], wait: Duration) -> Result<TcpStream, Unconnected> {
    let mut last = Unconnected::NoAddress;
    for &addr in addrs {
        match tokio::time::timeout(wait, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Unconnected::Failed(addr, e),
            Err(_) => last = Unconnected::TimedOut(addr),
        }
    }
    Err(last)
}

/// A hyper error of a request, as the guest should see it: the request
/// body's limit, named, when that is what failed.
fn from_hyper(e: hyper::Error, limit: u64) -> WasiHttpError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&e);
    while let Some(cause) = source {
        if let Some(WasiHttpError::HttpRequestBodySize(_)) = cause.downcast_ref::<WasiHttpError>() {
            return WasiHttpError::HttpRequestBodySize(Some(limit));
        }
        source = cause.source();
    }
    WasiHttpError::Hyper(e)
}

/// The TLS settings of every request: the Mozilla roots, HTTP/1.1.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            // rustls 0.23.48 deprecates ring's provider for want of
            // post-quantum key exchange; its other provider, aws-lc-rs,
            // builds a C library with CMake on every clean build. Classical
            // key exchange stays until ring gains it or the build can bear
            // aws-lc (SECURITY.md).
            #[allow(deprecated)]
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("ring supports rustls's default protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(config)
        })
        .clone()
}

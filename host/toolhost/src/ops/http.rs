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
use bytes::Bytes;
use http::uri::Scheme as UriScheme;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tokio_util::sync::WaitForCancellationFutureOwned;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{
    Error as WasiHttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

/// The grant's key in `toolhost.toml`.
pub const GRANT: &str = "http";
/// The value a refusal suggests for it.
pub const GRANT_VALUE: &str = "[\"<host[:port]>\"]";
/// What the grant lets a component do, for messages.
pub const WHAT: &str = "make HTTP requests";
/// Largest response body passed to the guest, unless the grant sets
/// `http-response-kb`.
pub const DEFAULT_RESPONSE_BYTES: u64 = 16 << 20;
/// Largest request body sent for the guest.
pub const MAX_REQUEST_BYTES: u64 = 4 << 20;

/// Whether the import `name` is a `wasi:http` interface (only ever linked for
/// a component granted `http`).
pub fn is_http_import(name: &str) -> bool {
    name.starts_with("wasi:http/")
}

/// The scheme of a grant or a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// The host part of a grant entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HostPattern {
    /// Exactly this name (lower case, no trailing dot).
    Name(String),
    /// Exactly this address; also the address connected to.
    Ip(IpAddr),
    /// `*.DOMAIN`: any name of one or more labels under DOMAIN, not DOMAIN
    /// itself.
    Subdomains(String),
}

/// One entry of an `http` grant: `[http://|https://]host[:port]`. Without a
/// scheme it allows https only; the port defaults to the scheme's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpGrant {
    /// As written in `toolhost.toml`.
    entry: String,
    scheme: Scheme,
    host: HostPattern,
    port: u16,
}

/// The host of a request, as its URL names it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RequestHost {
    Name(String),
    Ip(IpAddr),
}

impl HttpGrant {
    /// Parse one entry; the error says what is wrong with it.
    pub fn parse(entry: &str) -> Result<HttpGrant, String> {
        if entry.is_empty() {
            return Err("is empty".into());
        }
        if entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("contains whitespace".into());
        }
        let lower = entry.to_ascii_lowercase();
        let (scheme, rest) = if let Some(rest) = lower.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = lower.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if lower.contains("://") {
            return Err("only the schemes http:// and https:// can be granted".into());
        } else {
            (Scheme::Https, lower.as_str())
        };
        // A trailing slash is how URLs are often copied; anything more is a path.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err("grants a host and port, not a path: write host[:port]".into());
        }
        if rest.contains('@') {
            return Err("contains credentials (user@host); a grant names only host[:port]".into());
        }
        let (host, port) = split_host_port(rest)?;
        let port = match port {
            None => scheme.default_port(),
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("port {p:?} is not a number from 1 to 65535")),
            },
        };
        let host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            HostPattern::Ip(IpAddr::V6(
                v6.parse()
                    .map_err(|_| format!("[{v6}] is not an IPv6 address"))?,
            ))
        } else if let Ok(v4) = host.parse::<Ipv4Addr>() {
            HostPattern::Ip(IpAddr::V4(v4))
        } else if let Some(domain) = host.strip_prefix("*.") {
            let domain = domain.strip_suffix('.').unwrap_or(domain);
            check_name(domain)?;
            if !domain.contains('.') {
                return Err(format!(
                    "*.{domain} would match every name under a top-level domain; a wildcard \
                     needs a domain of two or more labels, such as *.example.org"
                ));
            }
            HostPattern::Subdomains(domain.to_string())
        } else if host.contains('*') {
            return Err("\"*\" may only begin an entry, as in *.example.org".into());
        } else {
            let name = host.strip_suffix('.').unwrap_or(host);
            check_name(name)?;
            HostPattern::Name(name.to_string())
        };
        Ok(HttpGrant {
            entry: entry.to_string(),
            scheme,
            host,
            port,
        })
    }

    /// Whether the entry names its destination explicitly (an IP literal, or
    /// `localhost`): then the private-address rule does not apply to it.
    fn explicit(&self) -> bool {
        match &self.host {
            HostPattern::Ip(_) => true,
            HostPattern::Name(name) => name == "localhost",
            HostPattern::Subdomains(_) => false,
        }
    }

    fn matches(&self, target: &Target) -> bool {
        if self.scheme != target.scheme || self.port != target.port {
            return false;
        }
        match (&self.host, &target.host) {
            (HostPattern::Name(granted), RequestHost::Name(name)) => granted == name,
            (HostPattern::Subdomains(domain), RequestHost::Name(name)) => name
                .strip_suffix(domain.as_str())
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            (HostPattern::Ip(granted), RequestHost::Ip(ip)) => granted == ip,
            _ => false,
        }
    }
}

/// `host[:port]`, with an IPv6 host in brackets.
fn split_host_port(rest: &str) -> Result<(&str, Option<&str>), String> {
    if rest.starts_with('[') {
        let end = rest
            .find(']')
            .ok_or_else(|| "has an unclosed [ (an IPv6 address is written [::1])".to_string())?;
        let (host, after) = rest.split_at(end + 1);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(format!(
                    "has {after:?} after the address; write [address]:port"
                )),
            },
        };
    }
    match rest.split_once(':') {
        Some((_, port)) if port.contains(':') => {
            Err("an IPv6 address must be written in brackets, as [::1]:8080".into())
        }
        Some(("", _)) => Err("names no host".into()),
        Some((host, port)) => Ok((host, Some(port))),
        None if rest.is_empty() => Err("names no host".into()),
        None => Ok((rest, None)),
    }
}

/// A DNS name: labels of letters, digits and hyphens, the last one not all
/// digits (a name like `1.2.3` would be read as an IPv4 address).
fn check_name(name: &str) -> Result<(), String> {
    let labels: Vec<&str> = name.split('.').collect();
    let valid = name.len() <= 253
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && !labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        Ok(())
    } else {
        Err(format!("{name:?} is not a host name or an IP address"))
    }
}

/// Why an address may not be reached through a grant that names a host: a
/// description for messages (`a private address`), or `None` for a public
/// unicast address.
///
/// This is what keeps a granted name from reaching the machine itself, the
/// local network or a cloud metadata service (169.254.169.254) when its DNS
/// answer points there, whether by mistake or by rebinding.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => {
            // The IPv4 address inside an IPv6 one: IPv4-mapped
            // (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and the NAT64
            // well-known prefix (64:ff9b::a.b.c.d) all reach it.
            let s = v6.segments();
            let embedded = v6.to_ipv4_mapped().or_else(|| {
                let v4 =
                    Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
                let compatible = s[..6] == [0; 6] && u32::from(v4) > 1;
                let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
                (compatible || nat64).then_some(v4)
            });
            if let Some(v4) = embedded {
                return special_v4(v4);
            }
            if v6.is_unspecified() {
                Some("an unspecified address")
            } else if v6.is_loopback() {
                Some("a loopback address")
            } else if s[0] & 0xfe00 == 0xfc00 {
                Some("a private address")
            } else if s[0] & 0xffc0 == 0xfe80 || s[0] & 0xffc0 == 0xfec0 {
                Some("a link-local address")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else {
                None
            }
        }
    }
}

fn special_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = v4.octets();
    if v4.is_loopback() {
        Some("a loopback address")
    } else if v4.is_private() {
        Some("a private address")
    } else if v4.is_link_local() {
        Some("a link-local address")
    } else if a == 0 {
        Some("an unspecified address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (CGNAT) address")
    } else if v4.is_broadcast() {
        Some("a broadcast address")
    } else if v4.is_multicast() {
        Some("a multicast address")
    } else if a >= 240 {
        Some("a reserved address")
    } else {
        None
    }
}

/// What a component granted `http` may reach, and the bounds of each request.
#[derive(Debug)]
pub struct HttpPolicy {
    grants: Vec<HttpGrant>,
    /// Largest response body passed to the guest.
    pub response_bytes: u64,
    /// Largest request body sent.
    pub request_bytes: u64,
    /// The longest any wait of a request may be (connecting, the first
    /// byte, between bytes): the call's time limit.
    pub time: Duration,
}

impl HttpPolicy {
    /// A policy of the grant `entries`; the error names the first entry that
    /// does not parse, and why.
    pub fn new(entries: &[String], time: Duration) -> Result<HttpPolicy, String> {
        let grants = entries
            .iter()
            .map(|e| HttpGrant::parse(e).map_err(|reason| format!("http entry {e:?} {reason}")))
            .collect::<Result<_, _>>()?;
        Ok(HttpPolicy {
            grants,
            response_bytes: DEFAULT_RESPONSE_BYTES,
            request_bytes: MAX_REQUEST_BYTES,
            time,
        })
    }

    /// The same policy with another response limit.
    pub fn response_bytes(mut self, bytes: u64) -> HttpPolicy {
        self.response_bytes = bytes;
        self
    }

    fn grant_for(&self, target: &Target) -> Option<&HttpGrant> {
        self.grants.iter().find(|g| g.matches(target))
    }

    fn granted_list(&self) -> String {
        let entries: Vec<&str> = self.grants.iter().map(|g| g.entry.as_str()).collect();
        entries.join(", ")
    }

    /// The addresses a request to `target` may connect to, given what its
    /// host resolved to (ignored for an IP-literal grant), or why it may not.
    fn route(
        &self,
        grant: &HttpGrant,
        target: &Target,
        resolved: &[IpAddr],
    ) -> Result<Vec<SocketAddr>, Refusal> {
        let at = |ip: IpAddr| SocketAddr::new(ip, target.port);
        if let HostPattern::Ip(ip) = grant.host {
            return Ok(vec![at(ip)]);
        }
        if resolved.is_empty() {
            return Err(Refusal::new(
                "unresolved",
                format!("{} resolves to no address", target.host_text()),
            ));
        }
        for &ip in resolved {
            if grant.explicit() {
                // `localhost` names the loopback interface, nothing else.
                if !ip.is_loopback() && special(ip) != Some("a loopback address") {
                    return Err(Refusal::new(
                        "not-loopback",
                        format!(
                            "{} resolves to {ip}, which is not a loopback address",
                            target.host_text()
                        ),
                    ));
                }
            } else if let Some(kind) = special(ip) {
                return Err(Refusal::new(
                    "special-address",
                    format!(
                        "{} resolves to {ip}, {kind}; grant the address itself to allow it",
                        target.host_text()
                    ),
                ));
            }
        }
        Ok(resolved.iter().map(|&ip| at(ip)).collect())
    }
}

/// The destination of one request.
#[derive(Clone, Debug)]
struct Target {
    scheme: Scheme,
    host: RequestHost,
    port: u16,
    /// `scheme://host:port/path` (without the query), for messages.
    url: String,
}

impl Target {
    fn of(uri: &http::Uri) -> Result<Target, Refusal> {
        let scheme = match uri.scheme() {
            Some(s) if *s == UriScheme::HTTP => Scheme::Http,
            Some(s) if *s == UriScheme::HTTPS => Scheme::Https,
            _ => {
                return Err(Refusal::new(
                    "scheme",
                    format!("HTTP request to {uri} refused: only http and https are supported"),
                ));
            }
        };
        let authority = uri.authority().ok_or_else(|| {
            Refusal::new("no-host", format!("HTTP request to {uri} names no host"))
        })?;
        if authority.as_str().contains('@') {
            return Err(Refusal::new(
                "credentials",
                format!(
                    "HTTP request to {uri} refused: credentials in the URL (user@host) are not sent"
                ),
            ));
        }
        let raw = authority.host().to_ascii_lowercase();
        let host = match raw.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(v6) => match v6.parse::<Ipv6Addr>() {
                Ok(ip) => RequestHost::Ip(IpAddr::V6(ip)),
                Err(_) => RequestHost::Name(raw.clone()),
            },
            None => match raw.parse::<Ipv4Addr>() {
                Ok(ip) => RequestHost::Ip(IpAddr::V4(ip)),
                Err(_) => RequestHost::Name(raw.strip_suffix('.').unwrap_or(&raw).to_string()),
            },
        };
        let port = authority.port_u16().unwrap_or(scheme.default_port());
        let mut target = Target {
            scheme,
            host,
            port,
            url: String::new(),
        };
        let scheme_text = match scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        target.url = format!(
            "{scheme_text}://{}:{port}{}",
            target.host_text(),
            uri.path()
        );
        Ok(target)
    }

    fn host_text(&self) -> String {
        match &self.host {
            RequestHost::Name(name) => name.clone(),
            RequestHost::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
            RequestHost::Ip(ip) => ip.to_string(),
        }
    }

    /// The target as a grant entry would allow it (`api.example.com:443`,
    /// `http://localhost:8080`).
    fn as_entry(&self) -> String {
        match self.scheme {
            Scheme::Https => format!("{}:{}", self.host_text(), self.port),
            Scheme::Http => format!("http://{}:{}", self.host_text(), self.port),
        }
    }
}

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
    granted: bool,
    inspecting: bool,
) -> wasmtime::Result<()> {
    if granted || inspecting {
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
            tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(aborted(&uri.to_string())),
                sent = send(policy, &signals, request, options) => sent,
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
    let Some(grant) = policy.grant_for(&target) else {
        return Err(refused(
            format!(
                "{} is not granted (granted: {})",
                target.as_entry(),
                policy.granted_list()
            ),
            "not-granted",
        ));
    };
    let bound = |asked: Option<Duration>| asked.map_or(policy.time, |t| t.min(policy.time));
    let connect_timeout = bound(options.and_then(|o| o.connect_timeout));
    let first_byte_timeout = bound(options.and_then(|o| o.first_byte_timeout));
    let between_bytes_timeout = bound(options.and_then(|o| o.between_bytes_timeout));

    let resolved = match (&grant.host, &target.host) {
        (HostPattern::Ip(_), _) | (_, RequestHost::Ip(_)) => Vec::new(),
        (_, RequestHost::Name(name)) => {
            let lookup = tokio::net::lookup_host((name.as_str(), target.port));
            match tokio::time::timeout(connect_timeout, lookup).await {
                Err(_) => return Err(WasiHttpError::DnsTimeout),
                Ok(Err(e)) => {
                    return Err(WasiHttpError::DnsError {
                        rcode: Some(format!("{name} does not resolve: {e}")),
                        info_code: None,
                    });
                }
                Ok(Ok(addrs)) => {
                    let mut ips: Vec<IpAddr> = Vec::new();
                    for addr in addrs {
                        if !ips.contains(&addr.ip()) {
                            ips.push(addr.ip());
                        }
                    }
                    ips
                }
            }
        }
    };
    let addrs = policy
        .route(grant, &target, &resolved)
        .map_err(|r| refused(r.text, r.code))?;

    usage.note(Use::Host, &target.as_entry());
    let mut last_error = None;
    let mut tcp = None;
    for addr in &addrs {
        match tokio::time::timeout(connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                tcp = Some(stream);
                break;
            }
            Ok(Err(e)) => last_error = Some(WasiHttpError::Connect(e)),
            Err(_) => last_error = Some(WasiHttpError::ConnectionTimeout),
        }
    }
    let Some(tcp) = tcp else {
        return Err(last_error.unwrap_or(WasiHttpError::ConnectionRefused));
    };
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

/// Count a frame's data against `limit`: false once `counted` exceeds it.
fn within(frame: &Frame<Bytes>, counted: &mut u64, limit: u64) -> bool {
    *counted += frame.data_ref().map_or(0, |data| data.len() as u64);
    *counted <= limit
}

/// The guest's request body, failed once it exceeds the request limit.
struct Limited {
    inner: WasiBody,
    sent: u64,
    limit: u64,
}

impl Body for Limited {
    type Data = Bytes;
    type Error = WasiHttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, WasiHttpError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) if !within(&frame, &mut this.sent, this.limit) => {
                Poll::Ready(Some(Err(WasiHttpError::HttpRequestBodySize(Some(
                    this.limit,
                )))))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

/// The response body as the guest reads it: failed once it exceeds the
/// response limit, when no byte arrives within the between-bytes timeout,
/// and when the call is cancelled.
struct Incoming {
    inner: hyper::body::Incoming,
    read: u64,
    limit: u64,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    url: String,
    signals: Arc<dyn CallWatch>,
    done: bool,
}

impl Body for Incoming {
    type Data = Bytes;
    type Error = WasiHttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, WasiHttpError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.cancelled.as_mut().poll(cx).is_ready() {
            this.done = true;
            return Poll::Ready(Some(Err(aborted(&this.url))));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) if !within(&frame, &mut this.read, this.limit) => {
                this.done = true;
                let url = &this.url;
                let denied = format!("http {url}: response-too-large");
                this.signals.usage().note(Use::Denied, &denied);
                Poll::Ready(Some(Err(WasiHttpError::HttpResponseBodySize(Some(
                    this.limit,
                )))))
            }
            Poll::Ready(Some(Ok(frame))) => {
                let next = tokio::time::Instant::now() + this.idle;
                this.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                Poll::Ready(Some(Err(if e.is_timeout() {
                    WasiHttpError::HttpResponseTimeout
                } else {
                    WasiHttpError::Hyper(e)
                })))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.timer.as_mut().poll(cx).is_ready() {
                    this.done = true;
                    return Poll::Ready(Some(Err(WasiHttpError::ConnectionReadTimeout)));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(entry: &str) -> HttpGrant {
        HttpGrant::parse(entry).unwrap_or_else(|e| panic!("{entry}: {e}"))
    }

    fn target(url: &str) -> Target {
        Target::of(&url.parse().unwrap()).unwrap()
    }

    fn policy(entries: &[&str]) -> HttpPolicy {
        let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
        HttpPolicy::new(&entries, Duration::from_secs(30)).unwrap()
    }

    #[test]
    fn entries_parse_with_https_and_its_port_by_default() {
        let g = grant("api.example.com");
        assert_eq!(
            (g.scheme, g.port, g.host),
            (
                Scheme::Https,
                443,
                HostPattern::Name("api.example.com".into())
            )
        );
        let g = grant("http://LocalHost:8080/");
        assert_eq!(
            (g.scheme, g.port, g.host),
            (Scheme::Http, 8080, HostPattern::Name("localhost".into()))
        );
        assert_eq!(grant("http://x.org").port, 80);
        assert_eq!(
            grant("*.example.org:8443").host,
            HostPattern::Subdomains("example.org".into())
        );
        assert_eq!(
            grant("127.0.0.1:9000").host,
            HostPattern::Ip("127.0.0.1".parse().unwrap())
        );
        assert_eq!(
            grant("[::1]:9000").host,
            HostPattern::Ip("::1".parse().unwrap())
        );
        assert_eq!(
            grant("https://example.com.").host,
            HostPattern::Name("example.com".into())
        );
    }

    #[test]
    fn malformed_entries_say_what_is_wrong() {
        for (entry, why) in [
            ("", "is empty"),
            ("ftp://x.org", "only the schemes"),
            ("https://x.org/api", "not a path"),
            ("user@x.org", "credentials"),
            ("x.org:0", "port \"0\""),
            ("x.org:http", "port \"http\""),
            ("x.org:70000", "port \"70000\""),
            ("::1", "brackets"),
            ("[::1", "unclosed"),
            ("[nope]", "not an IPv6 address"),
            ("*.org", "two or more labels"),
            ("*", "may only begin"),
            ("a.*.org", "may only begin"),
            ("x_y.org", "not a host name"),
            ("1.2.3", "not a host name"),
            (":80", "names no host"),
            ("x .org", "whitespace"),
        ] {
            let err = HttpGrant::parse(entry).expect_err(entry);
            assert!(err.contains(why), "{entry:?}: {err}");
        }
    }

    #[test]
    fn scheme_host_and_port_must_all_match() {
        let p = policy(&[
            "api.example.com",
            "http://localhost:8080",
            "*.example.org:8443",
        ]);
        let granted = |url: &str| p.grant_for(&target(url)).is_some();
        assert!(granted("https://api.example.com/v1"));
        assert!(granted("https://API.example.com:443/"));
        assert!(
            !granted("http://api.example.com/"),
            "https only without a scheme"
        );
        assert!(!granted("https://api.example.com:8443/"));
        assert!(!granted("https://evil.api.example.com/"));
        assert!(granted("http://localhost:8080/"));
        assert!(!granted("http://localhost:8081/"));
        assert!(!granted("https://localhost:8080/"));
        assert!(granted("https://a.example.org:8443/"));
        assert!(
            granted("https://a.b.example.org:8443/"),
            "one or more labels"
        );
        assert!(
            !granted("https://example.org:8443/"),
            "not the domain itself"
        );
        assert!(!granted("https://badexample.org:8443/"));
        assert!(
            !granted("https://127.0.0.1:8080/"),
            "an address is not a name"
        );
    }

    #[test]
    fn a_refusal_names_the_target_as_an_entry_and_the_grants() {
        let p = policy(&["http://localhost:8080"]);
        let t = target("http://evil.test/x?secret=1");
        assert!(p.grant_for(&t).is_none());
        assert_eq!(t.url, "http://evil.test:80/x");
        assert_eq!(t.as_entry(), "http://evil.test:80");
        assert_eq!(p.granted_list(), "http://localhost:8080");
        assert_eq!(target("https://[::1]:9/").as_entry(), "[::1]:9");
    }

    #[test]
    fn addresses_are_classified() {
        for (ip, kind) in [
            ("127.0.0.1", Some("a loopback address")),
            ("127.0.1.1", Some("a loopback address")),
            ("10.0.0.5", Some("a private address")),
            ("172.16.0.1", Some("a private address")),
            ("172.31.255.255", Some("a private address")),
            ("192.168.1.1", Some("a private address")),
            ("169.254.169.254", Some("a link-local address")),
            ("0.0.0.0", Some("an unspecified address")),
            ("100.64.0.1", Some("a shared (CGNAT) address")),
            ("100.127.255.255", Some("a shared (CGNAT) address")),
            ("255.255.255.255", Some("a broadcast address")),
            ("224.0.0.1", Some("a multicast address")),
            ("240.0.0.1", Some("a reserved address")),
            ("::", Some("an unspecified address")),
            ("::1", Some("a loopback address")),
            ("fc00::1", Some("a private address")),
            ("fd12:3456::1", Some("a private address")),
            ("fe80::1", Some("a link-local address")),
            ("ff02::1", Some("a multicast address")),
            ("::ffff:10.0.0.5", Some("a private address")),
            ("::ffff:127.0.0.1", Some("a loopback address")),
            ("::ffff:169.254.169.254", Some("a link-local address")),
            ("::127.0.0.1", Some("a loopback address")),
            ("64:ff9b::10.1.2.3", Some("a private address")),
            ("93.184.216.34", None),
            ("100.128.0.1", None),
            ("172.32.0.1", None),
            ("2606:4700::1111", None),
            ("::ffff:93.184.216.34", None),
        ] {
            assert_eq!(special(ip.parse().unwrap()), kind, "{ip}");
        }
    }

    #[test]
    fn a_name_resolving_to_a_special_address_is_refused_unless_named_explicitly() {
        let p = policy(&[
            "api.example.com",
            "http://localhost:8080",
            "http://10.0.0.5:80",
        ]);
        let ips =
            |list: &[&str]| -> Vec<IpAddr> { list.iter().map(|s| s.parse().unwrap()).collect() };
        let t = target("https://api.example.com/");
        let g = p.grant_for(&t).unwrap();
        let err = p
            .route(g, &t, &ips(&["93.184.216.34", "10.0.0.5"]))
            .unwrap_err();
        assert_eq!(
            err.text,
            "api.example.com resolves to 10.0.0.5, a private address; grant the address itself to allow it"
        );
        let err = p.route(g, &t, &ips(&["::ffff:127.0.0.1"])).unwrap_err();
        assert!(err.text.contains("a loopback address"), "{}", err.text);
        assert_eq!(
            p.route(g, &t, &ips(&["93.184.216.34"])).unwrap(),
            ["93.184.216.34:443".parse().unwrap()]
        );
        assert!(p.route(g, &t, &[]).is_err());

        // `localhost` names loopback, and only loopback.
        let t = target("http://localhost:8080/");
        let g = p.grant_for(&t).unwrap();
        assert_eq!(
            p.route(g, &t, &ips(&["127.0.0.1", "::1"])).unwrap().len(),
            2
        );
        let err = p.route(g, &t, &ips(&["192.168.1.9"])).unwrap_err();
        assert_eq!(
            err.text,
            "localhost resolves to 192.168.1.9, which is not a loopback address"
        );

        // An address grant is the address connected to.
        let t = target("http://10.0.0.5/");
        let g = p.grant_for(&t).unwrap();
        assert_eq!(
            p.route(g, &t, &[]).unwrap(),
            ["10.0.0.5:80".parse().unwrap()]
        );
    }

    #[tokio::test]
    async fn a_request_body_over_the_limit_fails_naming_the_limit() {
        let body = |bytes: usize| {
            http_body_util::Full::new(Bytes::from(vec![b'x'; bytes]))
                .map_err(|never| match never {})
                .boxed_unsync()
        };
        let limited = |bytes| Limited {
            inner: body(bytes),
            sent: 0,
            limit: 1024,
        };
        assert_eq!(
            limited(1024).collect().await.unwrap().to_bytes().len(),
            1024
        );
        let err = limited(1025).collect().await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "HTTP request body size exceeds limit: 1024 bytes"
        );
    }

    #[test]
    fn wasi_http_imports_are_recognised() {
        let http = ["wasi:http/outgoing-handler@0.2.0", "wasi:http/types@0.2.12"];
        let other = ["wasi:io/streams@0.2.0", "wasi:httpx/types@0.2.0"];
        assert!(http.iter().all(|i| is_http_import(i)));
        assert!(!other.iter().any(|i| is_http_import(i)));
    }
}

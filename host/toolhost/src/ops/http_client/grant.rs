//! The grant's entries (`HttpGrant`), compiled into a component's policy
//! (`HttpPolicy`), and the target of one request matched against them.

use super::*;
use http::uri::Scheme as UriScheme;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// The scheme of a grant or a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub(super) fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// The host part of a grant entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum HostPattern {
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
    pub(super) entry: String,
    pub(super) scheme: Scheme,
    pub(super) host: HostPattern,
    pub(super) port: u16,
}

/// The host of a request, as its URL names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum RequestHost {
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
    pub(super) fn explicit(&self) -> bool {
        match &self.host {
            HostPattern::Ip(_) => true,
            HostPattern::Name(name) => name == "localhost",
            HostPattern::Subdomains(_) => false,
        }
    }

    /// Whether it allows `target`'s host and port, whatever the scheme
    /// (the egress proxy's entries: a tunnel has none).
    pub(super) fn matches_host_port(&self, target: &Target) -> bool {
        let target = Target {
            scheme: self.scheme,
            ..target.clone()
        };
        self.matches(&target)
    }

    pub(super) fn matches(&self, target: &Target) -> bool {
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
pub(super) fn split_host_port(rest: &str) -> Result<(&str, Option<&str>), String> {
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
pub(super) fn check_name(name: &str) -> Result<(), String> {
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

/// What a component granted `http` may reach, and the bounds of each request.
#[derive(Debug)]
pub struct HttpPolicy {
    pub(super) grants: Vec<HttpGrant>,
    /// Largest response body passed to the guest.
    pub response_bytes: u64,
    /// Largest request body sent.
    pub request_bytes: u64,
    /// The longest any wait of a request may be (connecting, the first
    /// byte, between bytes): the call's time limit.
    pub time: Duration,
    /// The secrets its requests carry ([`super::secrets`]).
    pub secrets: Vec<std::sync::Arc<super::HttpSecret>>,
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
            secrets: Vec::new(),
        })
    }

    /// Its grant entries.
    pub fn grants(&self) -> &[HttpGrant] {
        &self.grants
    }

    /// The same policy with another response limit.
    pub fn response_bytes(mut self, bytes: u64) -> HttpPolicy {
        self.response_bytes = bytes;
        self
    }

    pub(super) fn grant_for(&self, target: &Target) -> Option<&HttpGrant> {
        self.grants.iter().find(|g| g.matches(target))
    }

    pub(super) fn granted_list(&self) -> String {
        let entries: Vec<&str> = self.grants.iter().map(|g| g.entry.as_str()).collect();
        entries.join(", ")
    }

    /// The addresses a request to `target` may connect to, given what its
    /// host resolved to (ignored for an IP-literal grant), or why it may not.
    pub(super) fn route(
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
pub(super) struct Target {
    pub(super) scheme: Scheme,
    pub(super) host: RequestHost,
    pub(super) port: u16,
    /// `scheme://host:port/path` (without the query), for messages.
    pub(super) url: String,
}

impl Target {
    pub(super) fn of(uri: &http::Uri) -> Result<Target, Refusal> {
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

    pub(super) fn host_text(&self) -> String {
        match &self.host {
            RequestHost::Name(name) => name.clone(),
            RequestHost::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
            RequestHost::Ip(ip) => ip.to_string(),
        }
    }

    /// The target as a grant entry would allow it (`api.example.com:443`,
    /// `http://localhost:8080`).
    pub(super) fn as_entry(&self) -> String {
        match self.scheme {
            Scheme::Https => format!("{}:{}", self.host_text(), self.port),
            Scheme::Http => format!("http://{}:{}", self.host_text(), self.port),
        }
    }
}

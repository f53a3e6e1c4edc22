//! `http_get`: GET a URL and return its status, content type and body text.
//!
//! An example toolhost extension that reaches the network through
//! `wasi:http` (the `wasip2` crate's bindings), so the component imports
//! `wasi:http/outgoing-handler` and loads only once the user grants it hosts
//! in `toolhost.toml`:
//!
//! ```toml
//! [extensions.httpget]
//! http = ["api.example.com", "http://localhost:8080"]
//! ```
//!
//! The host checks every request (scheme, host, port, the addresses the host
//! resolves to) and refuses the rest with a sentence saying why, which this
//! tool passes on as its error. It follows redirects itself, each one a new
//! request the host checks again.

use toolhost_sdk::serde_json::{Value, json};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

const SCHEMA: &str = r#"{"type":"object","required":["url"],"properties":{"url":{"type":"string","description":"An http:// or https:// URL on a host this extension is granted."},"max_bytes":{"type":"integer","minimum":1,"maximum":16777216,"description":"Most bytes of the body returned (default 65536); the rest is not read."}}}"#;

const DESCRIPTION: &str = "GET an http:// or https:// URL and return its status, content type and body as text (at most max_bytes, default 64 KiB). Follows up to 5 redirects. Only hosts granted to this extension can be reached; a refusal says why.";

/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;
/// Body bytes returned unless the call asks for another amount.
const DEFAULT_MAX_BYTES: u64 = 64 << 10;
/// Bytes asked of the body stream at a time.
const CHUNK: u64 = 64 << 10;

struct HttpGet;

impl Tool for HttpGet {
    fn definition(&self) -> Definition {
        Definition::new("http_get", "HTTP GET", DESCRIPTION, SCHEMA)
            .prompt_snippet("Fetch a web page or API response by URL (granted hosts only)")
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let start = args["url"].as_str().unwrap_or_default().to_string();
        let max_bytes = args["max_bytes"].as_u64().unwrap_or(DEFAULT_MAX_BYTES);
        let mut url = Url::parse(&start).map_err(ToolError::new)?;
        let mut redirects: Vec<String> = Vec::new();
        loop {
            ctx.check_cancelled()?;
            let fetched = get(&url, max_bytes).map_err(|reason| {
                let via = match redirects.is_empty() {
                    true => String::new(),
                    false => format!("Redirected from {start} to {url}; "),
                };
                ToolError::new(format!("{via}{reason}"))
            })?;
            let location = fetched
                .location
                .as_deref()
                .filter(|_| matches!(fetched.status, 301 | 302 | 303 | 307 | 308));
            if let Some(location) = location {
                if redirects.len() == MAX_REDIRECTS {
                    return Err(ToolError::new(format!(
                        "GET {start} stopped after {MAX_REDIRECTS} redirects (the last to {url})"
                    )));
                }
                let next = url.join(location).map_err(ToolError::new)?;
                redirects.push(next.to_string());
                url = next;
                continue;
            }
            return Ok(output(&url, &redirects, fetched, max_bytes));
        }
    }
}

toolhost_sdk::export_tools!(HttpGet);

/// The tool's result: a status line, the content type, the body text.
fn output(url: &Url, redirects: &[String], fetched: Fetched, max_bytes: u64) -> ToolOutput {
    let body = String::from_utf8_lossy(&fetched.body).into_owned();
    let content_type = fetched.content_type.clone().unwrap_or_default();
    let mut text = format!(
        "HTTP {}\ncontent-type: {content_type}\n\n{body}",
        fetched.status
    );
    if fetched.truncated {
        text.push_str(&format!(
            "\n\n[Body truncated to {max_bytes} bytes. Ask for more with max_bytes.]"
        ));
    }
    ToolOutput::text(text).with_details(json!({
        "url": url.to_string(),
        "status": fetched.status,
        "contentType": fetched.content_type,
        "bytes": fetched.body.len(),
        "truncated": fetched.truncated,
        "redirects": redirects,
        "headers": fetched.headers,
    }))
}

/// One response: its status, headers and the body read.
struct Fetched {
    status: u16,
    /// Every header, by name, as the host passed them on.
    headers: Vec<(String, String)>,
    content_type: Option<String>,
    location: Option<String>,
    body: Vec<u8>,
    truncated: bool,
}

/// GET `url` once (no redirects), reading at most `max_bytes` of the body.
fn get(url: &Url, max_bytes: u64) -> Result<Fetched, String> {
    let headers = Fields::new();
    for (name, value) in [("accept", "*/*"), ("user-agent", "toolhost-httpget/0.1")] {
        headers
            .append(name, value.as_bytes())
            .map_err(|e| format!("setting the {name} header: {e:?}"))?;
    }
    let request = OutgoingRequest::new(headers);
    let scheme = match url.https {
        true => Scheme::Https,
        false => Scheme::Http,
    };
    let set = request
        .set_method(&Method::Get)
        .and(request.set_scheme(Some(&scheme)))
        .and(request.set_authority(Some(&url.authority)))
        .and(request.set_path_with_query(Some(&url.path)));
    set.map_err(|()| format!("{url} is not a valid request URL"))?;
    let future = outgoing_handler::handle(request, None).map_err(|e| failed(url, &e))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(failed(url, &e)),
        Some(Err(())) | None => return Err(format!("GET {url} failed: no response")),
    };
    let status = response.status();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .first()
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let content_type = header("content-type");
    let location = header("location");
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect();
    let body = response
        .consume()
        .map_err(|()| format!("GET {url}: the body cannot be read"))?;
    let stream = body
        .stream()
        .map_err(|()| format!("GET {url}: the body cannot be read"))?;
    let mut bytes = Vec::new();
    let mut truncated = false;
    loop {
        let want = CHUNK.min(max_bytes + 1 - bytes.len() as u64);
        match stream.blocking_read(want) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() as u64 > max_bytes {
                    bytes.truncate(max_bytes as usize);
                    truncated = true;
                    break;
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!(
                    "reading the body of {url} failed: {}",
                    e.to_debug_string()
                ));
            }
        }
    }
    // A body's stream goes before the body, the body before its response.
    drop(stream);
    drop(body);
    Ok(Fetched {
        status,
        headers,
        content_type,
        location,
        body: bytes,
        truncated,
    })
}

/// The error text of a failed request: the host's own sentence when it
/// refused it, the error code otherwise.
fn failed(url: &Url, code: &ErrorCode) -> String {
    match code {
        ErrorCode::InternalError(Some(text)) => text.clone(),
        ErrorCode::DnsError(payload) => format!(
            "GET {url} failed: DNS error: {}",
            payload.rcode.as_deref().unwrap_or("unknown")
        ),
        other => format!("GET {url} failed: {other:?}"),
    }
}

/// An http(s) URL, split as `wasi:http` takes it.
#[derive(Clone, Debug, PartialEq)]
struct Url {
    https: bool,
    /// `host[:port]`.
    authority: String,
    /// The path and query, starting with `/`.
    path: String,
}

impl Url {
    fn parse(text: &str) -> Result<Url, String> {
        let lower = text.to_ascii_lowercase();
        let (https, rest) = if lower.starts_with("https://") {
            (true, &text[8..])
        } else if lower.starts_with("http://") {
            (false, &text[7..])
        } else {
            return Err(format!("{text:?} is not an http:// or https:// URL"));
        };
        // The fragment is the client's, never sent.
        let rest = rest.split('#').next().unwrap_or_default();
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.is_empty() {
            return Err(format!("{text:?} names no host"));
        }
        let path = match path {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        Ok(Url {
            https,
            authority: authority.to_string(),
            path,
        })
    }

    /// A redirect's `Location`, absolute or relative to this URL.
    fn join(&self, location: &str) -> Result<Url, String> {
        let lower = location.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return Url::parse(location);
        }
        let scheme = if self.https { "https:" } else { "http:" };
        if location.starts_with("//") {
            return Url::parse(&format!("{scheme}{location}"));
        }
        let path = if location.starts_with('/') {
            location.to_string()
        } else {
            let dir = self.path.split('?').next().unwrap_or("/");
            let dir = &dir[..dir.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{location}")
        };
        Url::parse(&format!("{scheme}//{}{path}", self.authority))
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority, self.path)
    }
}

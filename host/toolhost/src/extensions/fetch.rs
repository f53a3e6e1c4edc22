//! Every read from a registry, bounded before its bytes are buffered.
//!
//! `oci-client` reads a manifest, a referrers index, a registry's error or a
//! token answer whole (`Response::bytes`, which holds the chunks and then
//! copies them): a registry that answers a manifest request with 1.5 GiB
//! took the host to 3.1 GiB before the digest check refused it. Every read
//! of `ext add`, `ext update`, the signature and referrer look-ups and the
//! bundle and payload blobs goes through [`RegistryReader`] instead, whose
//! one reading loop ([`RegistryReader::get`]) takes a limit for each
//! response before any byte of it: a `Content-Length` over the limit is
//! refused unread, and a body that runs past it is dropped as soon as it
//! does. The limits: manifests and indexes [`MAX_MANIFEST_BYTES`], a blob
//! the size its descriptor declares (then hashed), a registry's error
//! [`MAX_ERROR_BYTES`], a token answer [`MAX_TOKEN_BYTES`]. Connecting and
//! every wait for the next bytes are bounded in time too, and redirects
//! (registries send blobs to a CDN) go to https only.
//!
//! Pushes (`ext publish`, `ext attach`) still go through `oci-client`, to
//! the registry the user names.

use crate::files::sha256;
use oci_client::Reference;
use std::time::Duration;

/// The largest manifest or index read (a component's manifest is a few
/// hundred bytes; a referrers index lists a few).
pub const MAX_MANIFEST_BYTES: usize = 64 << 10;
/// The most read of a registry's error answer (enough for its JSON).
pub const MAX_ERROR_BYTES: usize = 4 << 10;
/// The most read of a token service's answer.
pub const MAX_TOKEN_BYTES: usize = 64 << 10;
/// Longest wait for a connection, and for the next bytes of an answer.
const CONNECT_TIME: Duration = Duration::from_secs(30);
const READ_TIME: Duration = Duration::from_secs(60);
/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 5;

/// Reads from one registry (anonymously, with a bearer token when the
/// registry asks for one), every answer bounded.
pub(crate) struct RegistryReader {
    http: reqwest::Client,
    /// `https://REGISTRY` (`http://` for a registry on loopback).
    base: String,
    token: tokio::sync::Mutex<Option<String>>,
    shown: String,
}

/// An answer's status, headers and (bounded) body.
struct Answer {
    status: reqwest::StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl RegistryReader {
    /// A reader of `registry` (`HOST[:PORT]`), which speaks plain HTTP
    /// only when it is on `loopback`; errors name `shown` (the reference).
    pub(crate) fn new(
        registry: &str,
        loopback: bool,
        shown: String,
    ) -> Result<RegistryReader, String> {
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            let url = attempt.url();
            let plain_ok = loopback
                && url
                    .host_str()
                    .is_some_and(|h| h == "localhost" || is_loopback_ip(h));
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if url.scheme() == "https" || (url.scheme() == "http" && plain_ok) {
                attempt.follow()
            } else {
                attempt.error("a redirect to plain http")
            }
        });
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIME)
            .read_timeout(READ_TIME)
            .redirect(redirects)
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot make a registry client: {e}"))?;
        let scheme = if loopback { "http" } else { "https" };
        Ok(RegistryReader {
            http,
            base: format!("{scheme}://{registry}"),
            token: tokio::sync::Mutex::new(None),
            shown,
        })
    }

    /// The manifest (or index) `reference` names, of `media_type`: its
    /// bytes and their digest, computed here; `None` when the registry has
    /// none. At most [`MAX_MANIFEST_BYTES`], refused before more is read.
    pub(crate) async fn manifest(
        &self,
        reference: &Reference,
        media_type: &str,
    ) -> Result<Option<(Vec<u8>, String)>, String> {
        let shown = &self.shown;
        let named = reference
            .digest()
            .or(reference.tag())
            .unwrap_or("latest")
            .to_string();
        let url = format!(
            "{}/v2/{}/manifests/{named}",
            self.base,
            reference.repository()
        );
        let answer = self
            .get(
                &url,
                media_type,
                MAX_MANIFEST_BYTES,
                reference,
                "its manifest",
            )
            .await?;
        if answer.status == reqwest::StatusCode::NOT_FOUND || unknown_manifest(&answer) {
            return Ok(None);
        }
        if !answer.status.is_success() {
            return Err(format!(
                "{shown}: the registry answered {} for its manifest{}",
                answer.status,
                said(&answer.body)
            ));
        }
        let digest = sha256(&answer.body);
        if let Some(served) = answer
            .headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            && served != digest
        {
            return Err(format!(
                "{shown}: the registry says the manifest is {served}, but its bytes are {digest}"
            ));
        }
        if let Some(named) = reference.digest()
            && named != digest
        {
            return Err(format!("{shown}: the registry served {digest} for {named}"));
        }
        Ok(Some((answer.body, digest)))
    }

    /// The blob `digest` of `reference`'s repository, which its descriptor
    /// says is `size` bytes: refused as soon as the registry sends more (or
    /// says it will), and unless it hashes to `digest`.
    pub(crate) async fn blob(
        &self,
        reference: &Reference,
        digest: &str,
        size: u64,
        what: &str,
    ) -> Result<Vec<u8>, String> {
        let shown = &self.shown;
        let limit = usize::try_from(size).map_err(|_| format!("{shown}: {what} is too large"))?;
        let url = format!("{}/v2/{}/blobs/{digest}", self.base, reference.repository());
        let answer = self.get(&url, "*/*", limit, reference, what).await?;
        if !answer.status.is_success() {
            return Err(format!(
                "{shown}: the registry answered {} for {what}{}",
                answer.status,
                said(&answer.body)
            ));
        }
        if answer.body.len() != limit {
            return Err(format!(
                "{shown}: {what} is {} bytes, not the {limit} its descriptor says",
                answer.body.len()
            ));
        }
        if sha256(&answer.body) != digest {
            return Err(format!(
                "{shown}: the registry served {what} whose digest is not {digest}"
            ));
        }
        Ok(answer.body)
    }

    /// GET `url` accepting `accept`, its body at most `limit` bytes when
    /// the answer is a success (an error's at most [`MAX_ERROR_BYTES`]). A
    /// registry that asks for a bearer token (401 with a `Bearer`
    /// challenge) gets the anonymous pull token from the service it names,
    /// once; the request is made again with it.
    async fn get(
        &self,
        url: &str,
        accept: &str,
        limit: usize,
        reference: &Reference,
        what: &str,
    ) -> Result<Answer, String> {
        let mut asked_for_token = false;
        loop {
            let token = self.token.lock().await.clone();
            let mut request = self.http.get(url).header(reqwest::header::ACCEPT, accept);
            if let Some(token) = &token {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.map_err(|e| {
                format!(
                    "{}: fetching {what}: {}",
                    self.shown,
                    crate::error::chain_of(&e)
                )
            })?;
            let status = response.status();
            if status == reqwest::StatusCode::UNAUTHORIZED && !asked_for_token {
                asked_for_token = true;
                if let Some(challenge) = response
                    .headers()
                    .get(reqwest::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(Challenge::parse)
                {
                    let token = self.token_for(&challenge, reference).await?;
                    *self.token.lock().await = Some(token);
                    continue;
                }
            }
            let limit = if status.is_success() {
                limit
            } else {
                MAX_ERROR_BYTES
            };
            let headers = response.headers().clone();
            let body = read_bounded(response, limit, status.is_success())
                .await
                .map_err(|e| format!("{}: {what}: {e}", self.shown))?;
            return Ok(Answer {
                status,
                headers,
                body,
            });
        }
    }

    /// The anonymous pull token the registry's token service gives for
    /// `reference`'s repository.
    async fn token_for(
        &self,
        challenge: &Challenge,
        reference: &Reference,
    ) -> Result<String, String> {
        let shown = &self.shown;
        let mut realm = reqwest::Url::parse(&challenge.realm).map_err(|e| {
            format!(
                "{shown}: the registry names a token service {:?}: {e}",
                challenge.realm
            )
        })?;
        let plain_ok = self.base.starts_with("http://")
            && realm
                .host_str()
                .is_some_and(|h| h == "localhost" || is_loopback_ip(h));
        if realm.scheme() != "https" && !plain_ok {
            return Err(format!(
                "{shown}: the registry names a token service over plain http ({}); refused",
                challenge.realm
            ));
        }
        let scope = challenge
            .scope
            .clone()
            .unwrap_or_else(|| format!("repository:{}:pull", reference.repository()));
        {
            let mut query = realm.query_pairs_mut();
            if let Some(service) = &challenge.service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &scope);
        }
        let response = self.http.get(realm).send().await.map_err(|e| {
            format!(
                "{shown}: asking for a pull token: {}",
                crate::error::chain_of(&e)
            )
        })?;
        let status = response.status();
        let body = read_bounded(response, MAX_TOKEN_BYTES, status.is_success())
            .await
            .map_err(|e| format!("{shown}: its token service: {e}"))?;
        if !status.is_success() {
            return Err(format!(
                "{shown}: its token service answered {status}{}",
                said(&body)
            ));
        }
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|e| format!("{shown}: its token service's answer cannot be read: {e}"))?;
        token
            .token
            .or(token.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("{shown}: its token service gave no token"))
    }
}

/// The body of `response`, at most `limit` bytes: a declared length over
/// it is refused before anything is read, and the reading stops as soon as
/// more arrives. An error's body (`success` false) is cut at the limit
/// instead: only its start is shown.
async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
    success: bool,
) -> Result<Vec<u8>, String> {
    let over = |n: String| format!("the registry sent {n} bytes, more than the {limit} expected");
    if success
        && let Some(length) = response.content_length()
        && length > limit as u64
    {
        return Err(over(length.to_string()));
    }
    let mut body = Vec::with_capacity(limit.min(64 << 10));
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading the answer: {}", crate::error::chain_of(&e)))?
    {
        if body.len() + chunk.len() > limit {
            if !success {
                body.extend_from_slice(&chunk[..limit - body.len()]);
                break;
            }
            return Err(over(format!("more than {}", body.len() + chunk.len() - 1)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Whether an error answer is the registry's `MANIFEST_UNKNOWN`.
fn unknown_manifest(answer: &Answer) -> bool {
    !answer.status.is_success()
        && serde_json::from_slice::<serde_json::Value>(&answer.body).is_ok_and(|v| {
            v["errors"]
                .as_array()
                .is_some_and(|e| e.iter().any(|e| e["code"] == "MANIFEST_UNKNOWN"))
        })
}

/// `: <what the registry said>` from the start of an error's body, shown
/// escaped and short.
fn said(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let short: String = text.chars().take(300).collect();
    format!(": {}", crate::display::escape(&short))
}

fn is_loopback_ip(host: &str) -> bool {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// A `WWW-Authenticate: Bearer realm="…",service="…",scope="…"` challenge.
#[derive(Debug, PartialEq)]
struct Challenge {
    realm: String,
    service: Option<String>,
    scope: Option<String>,
}

impl Challenge {
    fn parse(header: &str) -> Option<Challenge> {
        let (scheme, rest) = header.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut params = std::collections::HashMap::new();
        let mut rest = rest.trim();
        while !rest.is_empty() {
            let (key, after) = rest.split_once('=')?;
            let (value, after) = match after.strip_prefix('"') {
                Some(quoted) => {
                    let end = quoted.find('"')?;
                    (&quoted[..end], &quoted[end + 1..])
                }
                None => after.split_once(',').unwrap_or((after, "")),
            };
            params.insert(key.trim().to_ascii_lowercase(), value.to_string());
            rest = after.trim_start_matches([',', ' ']);
        }
        Some(Challenge {
            realm: params.remove("realm")?,
            service: params.remove("service"),
            scope: params.remove("scope"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_is_read() {
        assert_eq!(
            Challenge::parse(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#
            ),
            Some(Challenge {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into()),
                scope: Some("repository:a/b:pull".into()),
            })
        );
        assert_eq!(Challenge::parse("Basic realm=\"x\""), None);
        assert_eq!(Challenge::parse("Bearer service=\"x\""), None);
    }
}

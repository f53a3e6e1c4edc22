//! Secrets an extension's requests carry and the extension never sees.
//!
//! The user's `toolhost.toml` declares them in the extension's grant:
//!
//! ```toml
//! [extensions.gh]
//! http = ["api.github.com"]
//!
//! [extensions.gh.secrets.GITHUB_TOKEN]
//! from = "env:GITHUB_TOKEN"     # env:NAME, file:PATH (mode 0600) or keyring:SERVICE/USER
//! hosts = ["api.github.com"]    # entries of its http grant; default: all of them
//! header = "Authorization"      # the default
//! format = "Bearer {}"          # the default; {} is the secret
//! ```
//!
//! The host reads each when it loads the extension ([`HttpSecret::resolve`]),
//! adds it to the requests whose scheme, host and port one of its `hosts`
//! matches, after every check of the request has passed (so never to a host
//! the extension was not granted, and never to the next host of a redirect
//! unless that host is listed too: each redirect is a new request), and
//! replaces every occurrence of any of the extension's secrets in a
//! response's headers and body before the component reads them
//! ([`Redactor`]). The component's environment never holds one: a granted
//! variable that is a secret's source is withheld. The audit log names the
//! secret and the host, never the value.

use super::grant::{HttpGrant, Target};
use http::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A secret as `toolhost.toml` declares it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct SecretSpec {
    /// `env:NAME`, `file:PATH` or `keyring:SERVICE/USER`.
    pub from: String,
    /// The http grant entries it goes to; empty means every one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The header it is sent in (default `Authorization`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The header's value, `{}` standing for the secret (default `Bearer {}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

impl SecretSpec {
    /// The environment variable it is read from, if it is read from one.
    pub fn env_source(&self) -> Option<&str> {
        self.from.strip_prefix("env:")
    }

    /// The file it is read from, if it is read from one (`~/` is the
    /// user's home, as in every path of `toolhost.toml`).
    pub fn file_source(&self) -> Option<std::path::PathBuf> {
        file_of(&self.from)
    }

    /// The header it is sent in.
    pub fn header_name(&self) -> &str {
        self.header.as_deref().unwrap_or("Authorization")
    }

    /// Its hosts as a person reads them: the listed entries, or `every
    /// host of its http grant`.
    pub fn hosts_text(&self) -> String {
        match self.hosts.is_empty() {
            true => "every host of its http grant".into(),
            false => self.hosts.join(", "),
        }
    }
}

/// Shortest secret the host sends: a shorter one would be redacted out of
/// ordinary text in every response.
pub const MIN_SECRET_BYTES: usize = 8;

/// A secret read, ready to be added to requests.
pub struct HttpSecret {
    pub name: String,
    value: Arc<str>,
    hosts: Vec<HttpGrant>,
    header: HeaderName,
    header_value: HeaderValue,
}

impl std::fmt::Debug for HttpSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSecret")
            .field("name", &self.name)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl HttpSecret {
    /// Read the secret `name` as `spec` declares it, for an extension
    /// granted the hosts `granted`; an error says why it is not sent.
    pub fn resolve(
        name: &str,
        spec: &SecretSpec,
        granted: &[HttpGrant],
    ) -> Result<HttpSecret, String> {
        let value = read_source(&spec.from)?;
        let value = value.trim_end_matches(['\n', '\r']).to_string();
        if value.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "it is shorter than {MIN_SECRET_BYTES} bytes, too short to keep out of responses"
            ));
        }
        let hosts = if spec.hosts.is_empty() {
            granted.to_vec()
        } else {
            let mut hosts = Vec::new();
            for entry in &spec.hosts {
                let host = HttpGrant::parse(entry).map_err(|e| format!("host {entry:?} {e}"))?;
                if !granted.contains(&host) {
                    return Err(format!(
                        "host {entry:?} is not an entry of the extension's http grant"
                    ));
                }
                hosts.push(host);
            }
            hosts
        };
        let header = HeaderName::try_from(spec.header_name())
            .map_err(|_| format!("{:?} is not a header name", spec.header_name()))?;
        let format = spec.format.as_deref().unwrap_or("Bearer {}");
        if !format.contains("{}") {
            return Err(format!("its format {format:?} has no {{}} for the secret"));
        }
        let mut header_value = HeaderValue::try_from(format.replacen("{}", &value, 1))
            .map_err(|_| "it cannot be sent in a header (a control character?)".to_string())?;
        header_value.set_sensitive(true);
        Ok(HttpSecret {
            name: name.to_string(),
            value: value.into(),
            hosts,
            header,
            header_value,
        })
    }

    /// Whether a request to `target` carries it.
    pub(super) fn goes_to(&self, target: &Target) -> bool {
        self.hosts.iter().any(|h| h.matches(target))
    }

    /// Put it in `headers` (replacing what the component set there).
    pub(super) fn add_to(&self, headers: &mut http::HeaderMap) {
        headers.insert(self.header.clone(), self.header_value.clone());
    }

    fn needle(&self) -> (Vec<u8>, Vec<u8>) {
        (
            self.value.as_bytes().to_vec(),
            format!("[secret {}]", self.name).into_bytes(),
        )
    }
}

/// The value at `from`: `env:NAME`, `file:PATH` (a regular file of mode
/// 0600 or stricter, owned by this user) or `keyring:SERVICE/USER`.
fn read_source(from: &str) -> Result<String, String> {
    if let Some(name) = from.strip_prefix("env:") {
        return std::env::var(name)
            .map_err(|_| format!("the environment variable {name} is not set"));
    }
    if let Some(path) = file_of(from) {
        return read_file(&path);
    }
    if let Some(entry) = from.strip_prefix("keyring:") {
        return read_keyring(entry);
    }
    Err(format!(
        "from = {from:?} is none of env:NAME, file:PATH, keyring:SERVICE/USER"
    ))
}

/// The file `from` (`file:PATH`) names, `~/` being the user's home.
fn file_of(from: &str) -> Option<std::path::PathBuf> {
    let path = from.strip_prefix("file:")?;
    Some(match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if !home.is_empty() => std::path::Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    })
}

fn read_file(path: &std::path::Path) -> Result<String, String> {
    use rustix::fs::{FileType, Mode, OFlags};
    use std::io::Read;
    let shown = path.display();
    if !path.is_absolute() {
        return Err(format!("file:{shown} is not an absolute path"));
    }
    // Opened not through a link, and every check made on the open file: the
    // file checked is the file read, whatever is put at the path meanwhile.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd =
        rustix::fs::open(path, flags | OFlags::NONBLOCK, Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::LOOP => format!("file:{shown} is not a regular file (a link)"),
            e => format!("file:{shown}: {}", std::io::Error::from(e)),
        })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("file:{shown}: {e}"))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(format!("file:{shown} is not a regular file"));
    }
    if stat.st_mode & 0o077 != 0 {
        return Err(format!(
            "file:{shown} may be read by others (mode {:o}); make it 0600",
            stat.st_mode & 0o777
        ));
    }
    if stat.st_uid != rustix::process::getuid().as_raw() {
        return Err(format!("file:{shown} belongs to another user"));
    }
    let max = 64 << 10;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("file:{shown}: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("file:{shown} is larger than {max} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| format!("file:{shown} is not UTF-8 text"))
}

/// The entry `SERVICE/USER` of the desktop's keyring where one is
/// reachable (the Secret Service on the session's D-Bus: GNOME Keyring,
/// KWallet, KeePassXC; the item whose attributes `service` and `username`
/// are SERVICE and USER, as `secret-tool store … service SERVICE username
/// USER`, Python's keyring and the `keyring` crate store it), else of the
/// kernel's key store (keyutils).
fn read_keyring(entry: &str) -> Result<String, String> {
    let (service, user) = entry
        .split_once('/')
        .ok_or_else(|| format!("keyring:{entry} is not keyring:SERVICE/USER"))?;
    let desktop = match std::env::var_os("DBUS_SESSION_BUS_ADDRESS") {
        Some(_) => desktop_keyring(service, user),
        None => Err("no session bus".into()),
    };
    match desktop {
        Ok(Some(secret)) => Ok(secret),
        Ok(None) => kernel_keyring(entry, service, user),
        Err(desktop) => kernel_keyring(entry, service, user)
            .map_err(|kernel| format!("{kernel}; the desktop keyring: {desktop}")),
    }
}

/// The secret of the desktop keyring's item for `service` and `user`, if
/// there is one (unlocking it if the keyring allows); an error says why the
/// keyring could not be asked. On a thread and a runtime of its own, so
/// that it can be read from any caller, and within 10 s.
fn desktop_keyring(service: &str, user: &str) -> Result<Option<String>, String> {
    let (service, user) = (service.to_string(), user.to_string());
    let ask = move || -> Result<Option<String>, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let asked = async {
                use secret_service::{EncryptionType, SecretService};
                let keyring = SecretService::connect(EncryptionType::Dh)
                    .await
                    .map_err(|e| e.to_string())?;
                let attributes = std::collections::HashMap::from([
                    ("service", service.as_str()),
                    ("username", user.as_str()),
                ]);
                let found = keyring
                    .search_items(attributes)
                    .await
                    .map_err(|e| e.to_string())?;
                let item = match (found.unlocked.first(), found.locked.first()) {
                    (Some(item), _) => item,
                    (None, Some(item)) => {
                        item.unlock().await.map_err(|e| e.to_string())?;
                        item
                    }
                    (None, None) => return Ok(None),
                };
                let secret = item.get_secret().await.map_err(|e| e.to_string())?;
                String::from_utf8(secret)
                    .map(Some)
                    .map_err(|_| "its secret is not UTF-8 text".to_string())
            };
            tokio::time::timeout(std::time::Duration::from_secs(10), asked)
                .await
                .map_err(|_| "no answer within 10 s".to_string())?
        })
    };
    std::thread::spawn(ask)
        .join()
        .map_err(|_| "its client failed".to_string())?
}

/// The entry `SERVICE/USER` of the kernel's key store (keyutils), as the
/// `keyring` crate and tools built on it store it (a `user` key described
/// `keyring-rs:USER@SERVICE`), or as `keyctl padd user keyring-rs:USER@SERVICE
/// @u` does: found from this process's own keyrings (the session's, else
/// the user's), which confers possession, and read once; nothing is
/// linked or changed.
fn kernel_keyring(entry: &str, service: &str, user: &str) -> Result<String, String> {
    let description = std::ffi::CString::new(format!("keyring-rs:{user}@{service}"))
        .map_err(|_| format!("keyring:{entry} holds a NUL byte"))?;
    const KEYCTL_SEARCH: libc::c_long = 10;
    const KEYCTL_READ: libc::c_long = 11;
    const SESSION: libc::c_long = -3;
    const USER: libc::c_long = -4;
    let kind = c"user";
    let mut key = -1;
    for keyring in [SESSION, USER] {
        #[allow(unsafe_code)]
        // SAFETY: keyctl with NUL-terminated strings that live across the call.
        let found = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_SEARCH,
                keyring,
                kind.as_ptr(),
                description.as_ptr(),
                0 as libc::c_long,
            )
        };
        if found >= 0 {
            key = found;
            break;
        }
    }
    if key < 0 {
        return Err(format!(
            "keyring:{entry}: no such entry in this session's key store"
        ));
    }
    let mut buffer = vec![0u8; 64 << 10];
    #[allow(unsafe_code)]
    // SAFETY: the buffer is live and as long as said.
    let read = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_READ,
            key,
            buffer.as_mut_ptr(),
            buffer.len(),
        )
    };
    let read = usize::try_from(read)
        .map_err(|_| format!("keyring:{entry}: {}", std::io::Error::last_os_error()))?;
    if read > buffer.len() {
        return Err(format!("keyring:{entry}: larger than 64 KiB"));
    }
    buffer.truncate(read);
    String::from_utf8(buffer).map_err(|_| format!("keyring:{entry} is not UTF-8 text"))
}

/// Replaces every occurrence of an extension's secrets in what a response
/// carries, across the chunks a body arrives in: bytes that could be the
/// start of a secret are held back until the next chunk (or the end)
/// decides.
pub(super) struct Redactor {
    needles: Vec<(Vec<u8>, Vec<u8>)>,
    longest: usize,
    pending: Vec<u8>,
}

/// What a header *name* holding a secret is renamed to: a valid header
/// name (`[`, `]` and spaces are not), the secret's name lowercased.
fn name_replacement(replacement: &[u8]) -> Vec<u8> {
    let name = replacement
        .strip_prefix(b"[secret ")
        .and_then(|r| r.strip_suffix(b"]"))
        .unwrap_or(b"redacted");
    let mut out = b"secret-".to_vec();
    out.extend(name.iter().map(|b| match b.to_ascii_lowercase() {
        c @ (b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.') => c,
        _ => b'-',
    }));
    out
}

impl Redactor {
    /// A redactor of `secrets`; none when there are none.
    pub(super) fn of(secrets: &[Arc<HttpSecret>]) -> Option<Redactor> {
        if secrets.is_empty() {
            return None;
        }
        let needles: Vec<(Vec<u8>, Vec<u8>)> = secrets.iter().map(|s| s.needle()).collect();
        let longest = needles.iter().map(|(n, _)| n.len()).max().unwrap_or(1);
        Some(Redactor {
            needles,
            longest,
            pending: Vec::new(),
        })
    }

    /// `text` with every secret replaced (a whole value: a header's).
    pub(super) fn whole(&self, text: &[u8]) -> Option<Vec<u8>> {
        let mut copy = Redactor {
            needles: self.needles.clone(),
            longest: self.longest,
            pending: text.to_vec(),
        };
        let out = copy.take(true);
        (out != text).then_some(out)
    }

    /// `headers` (a response's, or its trailers) with every secret
    /// replaced, in names as in values. A name is matched without regard to
    /// case (HTTP/1 names are case-insensitive and arrive lowercased, so an
    /// echo of `X-Ghp_AbC…: 1` would otherwise show the secret in lower
    /// case) and renamed to `…secret-github_token…`; a value is matched
    /// byte for byte and becomes `[secret GITHUB_TOKEN]`.
    pub(super) fn headers(&self, headers: &mut http::HeaderMap) {
        let name_hit = |name: &str| {
            self.needles.iter().any(|(n, _)| {
                name.as_bytes()
                    .windows(n.len())
                    .any(|w| w.eq_ignore_ascii_case(n))
            })
        };
        if headers.keys().any(|name| name_hit(name.as_str())) {
            let mut renamed = http::HeaderMap::with_capacity(headers.len());
            let mut current: Option<http::HeaderName> = None;
            for (name, value) in std::mem::take(headers) {
                if let Some(name) = name {
                    current = Some(if name_hit(name.as_str()) {
                        self.rename(name.as_str())
                    } else {
                        name
                    });
                }
                if let Some(name) = &current {
                    renamed.append(name.clone(), value);
                }
            }
            *headers = renamed;
        }
        for value in headers.values_mut() {
            if let Some(clean) = self.whole(value.as_bytes()) {
                *value = http::HeaderValue::from_bytes(&clean)
                    .unwrap_or_else(|_| http::HeaderValue::from_static("[secret]"));
            }
        }
    }

    /// `name` with each secret in it (in any case) replaced.
    fn rename(&self, name: &str) -> http::HeaderName {
        let bytes = name.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        'scan: while i < bytes.len() {
            for (needle, replacement) in &self.needles {
                if bytes.len() - i >= needle.len()
                    && bytes[i..i + needle.len()].eq_ignore_ascii_case(needle)
                {
                    out.extend(name_replacement(replacement));
                    i += needle.len();
                    continue 'scan;
                }
            }
            out.push(bytes[i]);
            i += 1;
        }
        http::HeaderName::from_bytes(&out)
            .unwrap_or_else(|_| http::HeaderName::from_static("x-toolhost-secret"))
    }

    /// The next chunk's bytes that are decided.
    pub(super) fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        self.take(false)
    }

    /// What is held back, at the end of the body.
    pub(super) fn finish(&mut self) -> Vec<u8> {
        self.take(true)
    }

    fn take(&mut self, all: bool) -> Vec<u8> {
        let pending = &self.pending;
        // From here on a secret could begin and not have arrived whole.
        let decided = match all {
            true => pending.len(),
            false => pending.len().saturating_sub(self.longest - 1),
        };
        let mut out = Vec::with_capacity(pending.len());
        let mut i = 0;
        'scan: while i < pending.len() {
            for (needle, replacement) in &self.needles {
                if pending[i..].starts_with(needle) {
                    out.extend_from_slice(replacement);
                    i += needle.len();
                    continue 'scan;
                }
            }
            if i >= decided {
                break;
            }
            // Up to the next byte that could begin a secret.
            let next = pending[i + 1..decided.max(i + 1)]
                .iter()
                .position(|b| self.needles.iter().any(|(n, _)| n[0] == *b))
                .map_or(decided.max(i + 1), |p| i + 1 + p);
            out.extend_from_slice(&pending[i..next]);
            i = next;
        }
        self.pending.drain(..i);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(secrets: &[&str]) -> Redactor {
        let needles: Vec<(Vec<u8>, Vec<u8>)> = secrets
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_bytes().to_vec(), format!("[secret S{i}]").into_bytes()))
            .collect();
        let longest = needles.iter().map(|(n, _)| n.len()).max().unwrap();
        Redactor {
            needles,
            longest,
            pending: Vec::new(),
        }
    }

    #[test]
    fn a_secret_in_a_header_name_or_value_is_replaced_in_any_case() {
        let r = redactor(&["Tok-12345678"]);
        let mut headers = http::HeaderMap::new();
        headers.append("x-echo-tok-12345678", "a".parse().unwrap());
        headers.append("x-echo-tok-12345678", "b".parse().unwrap());
        headers.append("tok-12345678", "Tok-12345678".parse().unwrap());
        headers.append("content-type", "text/plain".parse().unwrap());
        r.headers(&mut headers);
        let shown: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        assert_eq!(
            shown,
            [
                ("x-echo-secret-s0", "a"),
                ("x-echo-secret-s0", "b"),
                ("secret-s0", "[secret S0]"),
                ("content-type", "text/plain"),
            ]
            .map(|(n, v)| (n.to_string(), v.to_string()))
        );
    }

    /// Every way of cutting the text into two or three chunks gives the
    /// same redacted text as the whole.
    #[test]
    fn a_secret_split_across_chunks_is_replaced() {
        let text = b"a tok-12345678 b tok-12345678tok-12345678 c xyz-abcdefgh! tok-1234";
        let whole = String::from_utf8(
            redactor(&["tok-12345678", "xyz-abcdefgh"])
                .whole(text)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            whole,
            "a [secret S0] b [secret S0][secret S0] c [secret S1]! tok-1234"
        );
        for a in 0..=text.len() {
            for b in a..=text.len() {
                let mut r = redactor(&["tok-12345678", "xyz-abcdefgh"]);
                let mut out = r.push(&text[..a]);
                out.extend(r.push(&text[a..b]));
                out.extend(r.push(&text[b..]));
                out.extend(r.finish());
                assert_eq!(String::from_utf8(out).unwrap(), whole, "cut at {a}, {b}");
            }
        }
    }

    #[test]
    fn text_without_a_secret_passes_unchanged() {
        let r = redactor(&["tok-12345678"]);
        assert_eq!(r.whole(b"tok-1234567 and more"), None);
    }

    #[test]
    fn a_secret_file_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cret-value\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let from = format!("file:{}", path.display());
        let err = read_source(&from).unwrap_err();
        assert!(err.contains("may be read by others (mode 644)"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_source(&from).unwrap(), "s3cret-value\n");
        // Not through a link.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let err = read_source(&format!("file:{}", link.display())).unwrap_err();
        assert!(err.contains("is not a regular file"), "{err}");
    }
}

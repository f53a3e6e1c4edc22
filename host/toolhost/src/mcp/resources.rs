//! The workspace's files as resources (MCP's `resources/*`), through the
//! very grant the built-in `read` holds.
//!
//! # What a resource can name
//!
//! A resource is a `file:` URI naming a regular file that `read` could open,
//! and that is not hidden. Every route to anything else is refused:
//!
//! * Only `file:///ABSOLUTE` (or `file://localhost/ABSOLUTE`) URIs; another
//!   scheme, another host, a query or a fragment names no resource.
//! * The path is percent-decoded once, then resolved lexically (`..`), and
//!   must lie inside the roots of `read`'s backend ([`FsRead::roots`]): the
//!   workspace. An encoded `NUL` or a path that is not UTF-8 is refused.
//! * Hidden, whatever `read` may do: the protected paths (git's internals at
//!   any depth, the workspace's `toolhost.toml` and `.toolhost/`, toolhost's
//!   own configuration, cache and state) and the secrets of the protected
//!   set (the user's credential stores, every secret's source a grant names:
//!   [`crate::ops::protect`]). They are never listed, completed, read or
//!   watched.
//! * The file is opened with [`FsRead::read_unlinked`]: a symbolic link
//!   anywhere on the way is refused by the kernel, so the path judged above
//!   is the path opened, even when a link is swapped in meanwhile.
//! * At most [`MAX_BYTES`] (what `read` takes in one read of the backend);
//!   a larger file is refused with its size, pointing at `read`'s paging.
//!
//! Listing walks the workspace with the search backend's glob walk, so it
//! honours `.gitignore` exactly as `find` does, in `find`'s path order, and
//! pages by the last path sent.

use crate::ops::fs::{ErrorCode, FsError, FsRead, MAX_READ_CHUNK, ProtectedPaths};
use crate::ops::search::{GlobRequest, Search, StopFlag};
use base64::Engine as _;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Resources in one page of a listing.
pub const PAGE: usize = 100;
/// Most entries one listing walks; a larger workspace lists its first ones
/// in path order (the rest are reached by `read`, `find`, and templates).
pub const MAX_LISTED: u32 = 10_000;
/// The largest file a resource holds: one read of the backend.
pub const MAX_BYTES: u64 = MAX_READ_CHUNK;
/// The template every file of the workspace matches: `{path}` is its
/// absolute path without the leading `/`.
pub const TEMPLATE: &str = "file:///{path}";
/// Most values one completion answers with (MCP's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// The workspace's files as resources: `read`'s backend and search, what is
/// hidden.
#[derive(Clone, Debug)]
pub struct WorkspaceFiles {
    fs: Arc<dyn FsRead>,
    search: Arc<dyn Search>,
    protected: Arc<ProtectedPaths>,
}

/// One listed file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub uri: String,
    /// Its path relative to the workspace.
    pub name: String,
    pub mime_type: Option<&'static str>,
}

/// One page of the listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub resources: Vec<Listed>,
    /// The cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
}

/// A resource's contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Contents {
    Text {
        uri: String,
        mime_type: String,
        text: String,
    },
    /// Base64 of the bytes.
    Blob {
        uri: String,
        mime_type: String,
        blob: String,
    },
}

/// Why a URI is not served, with the URI.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct Refused {
    pub uri: String,
    pub reason: Reason,
}

/// What is wrong with a URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Nothing is there (or it is no longer there).
    NotFound,
    /// Not a `file:` URI of this machine (the text says what is wrong).
    NotAFileUri(&'static str),
    /// Outside the roots `read` may open.
    Outside,
    /// A protected path or a secret store.
    Hidden,
    /// A symbolic link on the way.
    Link,
    Directory,
    TooLarge(u64),
    /// The file could not be read (the text says why).
    Unreadable(String),
}

impl Refused {
    fn new(uri: &str, reason: Reason) -> Refused {
        Refused {
            uri: uri.to_string(),
            reason,
        }
    }

    /// The error's text, naming the URI and the cause.
    pub fn message(&self) -> String {
        let uri = &self.uri;
        match &self.reason {
            Reason::NotFound => format!("Resource not found: {uri}"),
            Reason::NotAFileUri(why) => {
                format!(
                    "Resource not found: {uri} ({why}; resources are file:///PATH URIs of the workspace)"
                )
            }
            Reason::Outside => format!(
                "Resource refused: {uri} is outside the workspace, the only place read may open"
            ),
            Reason::Hidden => format!(
                "Resource refused: {uri} is protected (git's internals, toolhost's configuration \
                 and credentials are never resources)"
            ),
            Reason::Link => format!(
                "Resource refused: {uri} leads through a symbolic link; name the file it leads to"
            ),
            Reason::Directory => format!(
                "Resource refused: {uri} is a directory; its files are resources (complete the \
                 template {TEMPLATE} to find them)"
            ),
            Reason::TooLarge(size) => format!(
                "Resource refused: {uri} is {}, more than the {} a resource holds; read it with \
                 the read tool (offset, limit)",
                mebibytes(*size),
                mebibytes(MAX_BYTES)
            ),
            Reason::Unreadable(why) => format!("Resource refused: {uri} cannot be read: {why}"),
        }
    }
}

impl WorkspaceFiles {
    /// The files `fs` (the built-in `read`'s backend) can open, walked with
    /// `search`, without what `protected` covers or hides (the user's
    /// credential stores, every secret's source).
    pub(crate) fn new(
        fs: Arc<dyn FsRead>,
        search: Arc<dyn Search>,
        protected: Arc<ProtectedPaths>,
    ) -> WorkspaceFiles {
        WorkspaceFiles {
            fs,
            search,
            protected,
        }
    }

    /// The roots `read` may open (the workspace).
    fn roots(&self) -> Vec<PathBuf> {
        self.fs.roots().into_iter().map(PathBuf::from).collect()
    }

    /// Whether the real absolute `path` is never a resource.
    fn hidden(&self, path: &Path) -> bool {
        self.protected.out_of_reach(path)
    }

    /// Whether `path` is no name of a resource: hidden, a symbolic link (a
    /// read refuses links; what a link leads to is named where it lies), or
    /// not found in its directory as that directory is opened beneath the
    /// root with no link on the way. The walk that found `path` opened
    /// directories by name, so one swapped for a link (to `~/.ssh`) during
    /// it would have listed another directory's names; they are named only
    /// once the directory they were found in is that directory. `seen`
    /// keeps each directory's listing for the page.
    fn unnamed(&self, path: &Path, seen: &mut HashMap<PathBuf, Option<Vec<String>>>) -> bool {
        if self.hidden(path) {
            return true;
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return true;
        };
        let listed = seen.entry(dir.to_path_buf()).or_insert_with(|| {
            self.fs
                .list_dir_unlinked(&dir.to_string_lossy())
                .ok()
                .map(|entries| {
                    entries
                        .into_iter()
                        .filter(|e| e.kind != Some(crate::ops::fs::EntryKind::Symlink))
                        .map(|e| e.name)
                        .collect()
                })
        });
        !listed
            .as_ref()
            .is_some_and(|names| names.iter().any(|n| **n == *name.to_string_lossy()))
    }

    /// The page after `cursor` (the first without one) of the workspace's
    /// files, in `find`'s order, `.gitignore`d files left out.
    pub fn list(&self, cursor: Option<&str>) -> Result<Page, String> {
        let mut files = Vec::new();
        for root in self.roots() {
            let request = GlobRequest {
                pattern: "**".into(),
                root: root.to_string_lossy().into_owned(),
                max_results: MAX_LISTED,
            };
            let found = self
                .search
                .glob(&request, &StopFlag::new())
                .map_err(|e| format!("listing {}: {e:?}", root.display()))?;
            files.extend(
                found
                    .paths
                    .into_iter()
                    .filter(|p| !p.ends_with('/'))
                    .map(|rel| (root.join(&rel), rel)),
            );
        }
        let after = |rel: &String| cursor.is_none_or(|c| path_order(rel, c).is_gt());
        let mut resources = Vec::new();
        let mut more = false;
        let mut seen = HashMap::new();
        for (path, rel) in files.into_iter().filter(|(_, rel)| after(rel)) {
            if self.unnamed(&path, &mut seen) {
                continue;
            }
            if resources.len() == PAGE {
                more = true;
                break;
            }
            resources.push(Listed {
                uri: file_uri(&path),
                mime_type: mime_by_name(&rel),
                name: rel,
            });
        }
        let next_cursor = more
            .then(|| resources.last().map(|l| l.name.clone()))
            .flatten();
        Ok(Page {
            resources,
            next_cursor,
        })
    }

    /// The absolute path `uri` names, when it may be a resource: a `file:`
    /// URI inside the roots, not hidden.
    pub fn path_of(&self, uri: &str) -> Result<PathBuf, Refused> {
        let path =
            parse_file_uri(uri).map_err(|why| Refused::new(uri, Reason::NotAFileUri(why)))?;
        if !self.roots().iter().any(|root| path.starts_with(root)) {
            return Err(Refused::new(uri, Reason::Outside));
        }
        if self.hidden(&path) {
            return Err(Refused::new(uri, Reason::Hidden));
        }
        Ok(path)
    }

    /// The contents of the resource `uri`.
    pub fn read(&self, uri: &str) -> Result<Contents, Refused> {
        let path = self.path_of(uri)?;
        let shown = path.to_string_lossy();
        let refused = |e: FsError| {
            let reason = match e.code {
                ErrorCode::NotFound | ErrorCode::NotADirectory => Reason::NotFound,
                ErrorCode::TooManyLinks => Reason::Link,
                ErrorCode::OutsideRoots => Reason::Outside,
                ErrorCode::IsADirectory => Reason::Directory,
                _ => Reason::Unreadable(e.message),
            };
            Refused::new(uri, reason)
        };
        let bytes = self
            .fs
            .read_unlinked(&shown, 0, MAX_BYTES)
            .map_err(refused)?;
        // A read that filled the limit may have left more behind.
        if bytes.len() as u64 >= MAX_BYTES {
            let size = self.fs.stat(&shown).map_or(MAX_BYTES + 1, |m| m.size);
            if size > MAX_BYTES {
                return Err(Refused::new(uri, Reason::TooLarge(size)));
            }
        }
        Ok(contents(uri, &shown, bytes))
    }

    /// The modification stamp of the resource `uri` (what a subscription
    /// compares): `None` while it cannot be read.
    pub fn stamp(&self, uri: &str) -> Option<(u64, Option<i64>, blake3::Hash)> {
        let path = self.path_of(uri).ok()?;
        let shown = path.to_string_lossy();
        let meta = self.fs.stat(&shown).ok()?;
        // The bytes too: a write within the clock's resolution that keeps
        // the size changes the hash.
        let bytes = self.fs.read_unlinked(&shown, 0, MAX_BYTES).ok()?;
        Some((meta.size, meta.modified_ms, blake3::hash(&bytes)))
    }

    /// Completions of the template's `{path}` (an absolute path without its
    /// leading `/`), as a shell completes a path: the entries of the
    /// directory it names that start with its last part, directories with
    /// a `/`; above the workspace, the way down to it. The values, and how
    /// many matched in all.
    pub fn complete(&self, value: &str) -> (Vec<String>, usize) {
        let typed = format!("/{}", value.trim_start_matches('/'));
        let (dir, prefix) = match typed.rfind('/') {
            Some(i) => (&typed[..=i], &typed[i + 1..]),
            None => ("/", typed.as_str()),
        };
        let Some(dir_path) = crate::ops::fs::normalize(dir) else {
            return (Vec::new(), 0);
        };
        let mut values = Vec::new();
        for root in self.roots() {
            if dir_path.starts_with(&root) {
                // What is hidden is judged by name, so the directory listed
                // must be the one named: it is opened beneath the root with
                // every link on the way refused (a link to `.ssh`, or one
                // swapped in after this check, lists nothing), and its
                // entries are judged as they are, links not followed.
                if self.hidden(&dir_path) {
                    continue;
                }
                let Ok(entries) = self.fs.list_dir_unlinked(&dir_path.to_string_lossy()) else {
                    continue;
                };
                for entry in entries {
                    if !entry.name.starts_with(prefix) {
                        continue;
                    }
                    let path = dir_path.join(&entry.name);
                    if entry.kind == Some(crate::ops::fs::EntryKind::Symlink) || self.hidden(&path)
                    {
                        continue;
                    }
                    let slash = if entry.kind == Some(crate::ops::fs::EntryKind::Directory) {
                        "/"
                    } else {
                        ""
                    };
                    values.push(format!("{}{}{slash}", &dir[1..], entry.name));
                }
            } else if root.starts_with(&dir_path) {
                // Above the workspace: the next step down to it.
                let below = root.strip_prefix(&dir_path).unwrap_or(&root);
                if let Some(next) = below.components().next() {
                    let next = next.as_os_str().to_string_lossy();
                    if next.starts_with(prefix) {
                        values.push(format!("{}{next}/", &dir[1..]));
                    }
                }
            }
        }
        values.sort_by(|a, b| path_order(a, b));
        values.dedup();
        let total = values.len();
        values.truncate(MAX_COMPLETIONS);
        (values, total)
    }
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// The order of `find`'s results: component by component, so that `a/b`
/// comes before `a.txt`.
fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

/// `file://` and the path, percent-encoded where a URI needs it.
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The absolute path of a `file:` URI of this machine, `..` resolved; what
/// is wrong with it otherwise.
pub fn parse_file_uri(uri: &str) -> Result<PathBuf, &'static str> {
    let rest = uri
        .strip_prefix("file://")
        .or_else(|| {
            // The scheme is case-insensitive.
            uri.get(..7)
                .filter(|s| s.eq_ignore_ascii_case("file://"))
                .map(|_| &uri[7..])
        })
        .ok_or("not a file: URI")?;
    if rest.contains(['?', '#']) {
        return Err("a file: URI with a query or a fragment");
    }
    let path = match rest.find('/') {
        Some(0) => rest,
        Some(i) if rest[..i].eq_ignore_ascii_case("localhost") => &rest[i..],
        _ => return Err("a file: URI of another host"),
    };
    let decoded =
        pi_compat::js::percent_decode_bytes(path).ok_or("a malformed percent-encoding")?;
    if decoded.contains(&0) {
        return Err("an encoded NUL");
    }
    let decoded = String::from_utf8(decoded).map_err(|_| "a path that is not UTF-8")?;
    crate::ops::fs::normalize(&decoded).ok_or("not an absolute path")
}

/// A file's contents: an image by its magic bytes, text when it is UTF-8,
/// else bytes.
fn contents(uri: &str, path: &str, bytes: Vec<u8>) -> Contents {
    if let Some(mime) = image_mime(&bytes) {
        return Contents::Blob {
            uri: uri.to_string(),
            mime_type: mime.into(),
            blob: base64::engine::general_purpose::STANDARD.encode(&bytes),
        };
    }
    match String::from_utf8(bytes) {
        Ok(text) => Contents::Text {
            uri: uri.to_string(),
            mime_type: mime_by_name(path)
                .filter(|m| is_text(m))
                .unwrap_or("text/plain")
                .into(),
            text,
        },
        Err(e) => Contents::Blob {
            uri: uri.to_string(),
            mime_type: mime_by_name(path)
                .filter(|m| !is_text(m))
                .unwrap_or("application/octet-stream")
                .into(),
            blob: base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
        },
    }
}

fn is_text(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json" | "application/toml" | "application/yaml" | "application/xml"
        )
}

/// The image types `read` sends as images, by their magic bytes.
fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A file's type by its name's ending, where it is a common one.
fn mime_by_name(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "txt" | "log" | "text" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" | "jsx" => "text/x-typescript",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "c" | "h" => "text/x-c",
        "cc" | "cpp" | "hpp" => "text/x-c++",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "sh" | "bash" => "text/x-shellscript",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_parse_only_as_paths_of_this_machine() {
        let ok = |uri: &str| parse_file_uri(uri).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(ok("file:///ws/a.txt").unwrap(), "/ws/a.txt");
        assert_eq!(ok("FILE:///ws/a%20b.txt").unwrap(), "/ws/a b.txt");
        assert_eq!(ok("file://localhost/ws/a.txt").unwrap(), "/ws/a.txt");
        assert_eq!(ok("file:///ws/../etc/passwd").unwrap(), "/etc/passwd");
        assert_eq!(ok("file:///ws/%2E%2E/etc/passwd").unwrap(), "/etc/passwd");
        assert_eq!(ok("file:///ws/a%2Fb").unwrap(), "/ws/a/b");
        assert!(ok("file://evil.example/ws/a.txt").is_err());
        assert!(ok("file:ws/a.txt").is_err());
        assert!(ok("file://ws/a.txt").is_err());
        assert!(ok("file:///ws/a.txt?x=1").is_err());
        assert!(ok("file:///ws/a.txt#top").is_err());
        assert!(ok("file:///ws/a%00.txt").is_err());
        assert!(ok("file:///ws/a%ff.txt").is_err());
        assert!(ok("file:///ws/a%2").is_err());
        // An escape is exactly two hex digits: `%+f` is not 0x0f.
        assert_eq!(
            ok("file:///ws/a%+f.txt"),
            Err("a malformed percent-encoding")
        );
        assert_eq!(
            ok("file:///ws/a%-1.txt"),
            Err("a malformed percent-encoding")
        );
        assert!(ok("http://localhost/ws/a.txt").is_err());
        assert!(ok("/ws/a.txt").is_err());
    }

    #[test]
    fn a_listed_uri_parses_back_to_its_path() {
        for path in ["/ws/a b/c#d?.txt", "/ws/ünï/%41.md", "/ws/[x]{y}.rs"] {
            let uri = file_uri(Path::new(path));
            assert!(!uri[7..].contains(['#', '?', ' ']), "{uri}");
            assert_eq!(parse_file_uri(&uri).unwrap(), PathBuf::from(path));
        }
    }

    #[test]
    fn contents_are_images_by_magic_text_when_utf8_and_bytes_else() {
        let png = b"\x89PNG\r\n\x1a\nrest".to_vec();
        assert!(matches!(
            contents("u", "/ws/x.txt", png),
            Contents::Blob { mime_type, .. } if mime_type == "image/png"
        ));
        assert!(matches!(
            contents("u", "/ws/x.rs", b"fn main() {}".to_vec()),
            Contents::Text { mime_type, .. } if mime_type == "text/x-rust"
        ));
        assert!(matches!(
            contents("u", "/ws/x.png", b"not a png".to_vec()),
            Contents::Text { mime_type, .. } if mime_type == "text/plain"
        ));
        assert!(matches!(
            contents("u", "/ws/x.bin", vec![0xff, 0xfe, 0]),
            Contents::Blob { mime_type, .. } if mime_type == "application/octet-stream"
        ));
    }

    /// `completion/complete` once checked a directory by name, then listed
    /// it through whatever a link swapped in meanwhile pointed at: with the
    /// workspace at `$HOME`, it named the keys in `~/.ssh`. A directory is
    /// swapped for a link to `.ssh` and back, thousands of times, while
    /// completions run: none ever names a key, and the real directory's
    /// file is completed when it is there.
    #[test]
    fn a_completion_never_lists_what_a_swapped_link_points_at() {
        use crate::ops::fs::LocalFs;
        use crate::ops::search::LocalSearch;
        use std::sync::atomic::{AtomicBool, Ordering};
        let (_tmp, ws) = crate::testing::real_temp_dir();
        std::fs::create_dir_all(ws.join(".ssh")).unwrap();
        std::fs::write(ws.join(".ssh/id_ed25519"), "KEY").unwrap();
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::fs::write(ws.join("d/id_notes.txt"), "notes").unwrap();
        let protected = ProtectedPaths::new([]).hide_secrets([ws.join(".ssh")]);
        let fs = Arc::new(
            LocalFs::new(std::slice::from_ref(&ws))
                .unwrap()
                .protect(protected.clone()),
        );
        let files = WorkspaceFiles::new(
            fs.clone(),
            Arc::new(LocalSearch::new(fs)),
            Arc::new(protected),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (ws, stop) = (ws.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::fs::rename(ws.join("d"), ws.join("d-real"));
                    let _ = std::os::unix::fs::symlink(ws.join(".ssh"), ws.join("d"));
                    let _ = std::fs::remove_file(ws.join("d"));
                    let _ = std::fs::rename(ws.join("d-real"), ws.join("d"));
                }
            })
        };
        let typed = format!("{}/d/id", ws.display());
        let mut completed = 0;
        for _ in 0..3000 {
            let (values, _) = files.complete(&typed);
            assert!(
                !values.iter().any(|v| v.contains("id_ed25519")),
                "a key was named: {values:?}"
            );
            completed += values
                .iter()
                .filter(|v| v.ends_with("id_notes.txt"))
                .count();
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(completed > 0, "the real directory was never completed");
    }
}

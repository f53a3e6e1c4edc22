//! Reading the files that decide what runs (policy files, manifests,
//! components, the trust store, the compile cache's key) so that none of
//! them can stall or exhaust the host, and writing the host's own files
//! atomically.
//!
//! Any of them may have been planted: a FIFO would block a plain read
//! forever, `/dev/zero` (or a symlink to it) would fill memory, and opening
//! some devices has effects of its own. So a file is first opened with
//! `O_PATH`, which opens nothing, and examined: only a regular file no larger
//! than the bound is then opened for reading (through the same descriptor, so
//! it cannot be swapped meanwhile), and never more than the bound is read.

use rustix::fs::{FileType, Mode, OFlags};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest `toolhost.toml` read.
pub const MAX_POLICY_BYTES: u64 = 1 << 20;
/// Largest `extension.toml` read.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 10;
/// Largest component read. The largest real ones bundle an interpreter
/// (componentize-py: about 20 MB).
pub const MAX_COMPONENT_BYTES: u64 = 128 << 20;
/// Largest trust store read.
pub const MAX_TRUST_BYTES: u64 = 4 << 20;

/// The contents of the regular file `path`, at most `max` bytes; `Ok(None)`
/// when nothing is there. The error says why the file was refused, in words
/// that follow its path (`is a FIFO, not a regular file`).
pub fn read_regular(path: &Path, max: u64) -> Result<Option<Vec<u8>>, String> {
    match open_regular(path, max)? {
        None => Ok(None),
        Some(file) => read_open(&file, max).map(Some),
    }
}

/// The regular file `path` opened for reading, unread, when it holds at most
/// `max` bytes; `Ok(None)` when nothing is there. Refused as
/// [`read_regular`] refuses.
pub fn open_regular(path: &Path, max: u64) -> Result<Option<std::fs::File>, String> {
    let fd = match rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(format!("cannot be read: {}", std::io::Error::from(e))),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot be read: {e}"))?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        let through = if path.is_symlink() {
            "a symlink to "
        } else {
            ""
        };
        return Err(format!(
            "is {through}{}, not a regular file",
            describe(kind)
        ));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    if size > max {
        return Err(too_large(size, max));
    }
    // Reopen the very file examined; without /proc, open the path again and
    // let the checks on the open file below catch a swap.
    let file = rustix::fs::open(
        format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .or_else(|_| {
        rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        )
    })
    .map_err(|e| format!("cannot be read: {}", std::io::Error::from(e)))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| format!("cannot be read: {e}"))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err("changed while it was read".into());
    }
    Ok(Some(std::fs::File::from(file)))
}

/// What remains of `file` (one [`open_regular`] opened), at most `max` bytes.
pub fn read_open(file: &std::fs::File, max: u64) -> Result<Vec<u8>, String> {
    let size = file.metadata().map_or(0, |m| m.len()).min(max);
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64, max));
    }
    Ok(bytes)
}

/// All of `file` from its start, at most `max` bytes, leaving its offset
/// where it was (for a second reader of the same open file).
pub fn read_whole_at(file: &std::fs::File, max: u64) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::FileExt as _;
    let mut bytes = vec![0; 64 << 10];
    let mut len = 0;
    loop {
        if len == bytes.len() {
            bytes.resize(len * 2, 0);
        }
        match file.read_at(&mut bytes[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot be read: {e}")),
        }
        if len as u64 > max {
            return Err(too_large(len as u64, max));
        }
    }
    bytes.truncate(len);
    Ok(bytes)
}

/// [`read_regular`] of a text file.
pub fn read_text(path: &Path, max: u64) -> Result<Option<String>, String> {
    match read_regular(path, max)? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| "is not UTF-8 text".to_string()),
    }
}

fn too_large(size: u64, max: u64) -> String {
    format!("is {size} bytes, more than the {max} bytes toolhost reads of such a file")
}

fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Socket => "a socket",
        FileType::Symlink => "a symlink",
        _ => "a special file",
    }
}

/// Replace `path` with `bytes` atomically (a private temporary file renamed
/// over it, on the disk before the rename), creating its directory.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    place_private(path, bytes, Place::Replace { sync: true })
}

/// [`write_private`] without waiting for the disk: for what is checked
/// when it is read back (a compile-cache entry carries a MAC, so one torn
/// by a crash is compiled again, never used).
pub(crate) fn write_private_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    place_private(path, bytes, Place::Replace { sync: false })
}

/// Create `path` with `bytes` unless it exists (`AlreadyExists` then): the
/// file never exists half-written, and of two writers at once exactly one
/// wins (a private temporary file, on the disk, hard-linked into place).
pub(crate) fn create_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    place_private(path, bytes, Place::Create)
}

#[derive(Clone, Copy)]
enum Place {
    Replace { sync: bool },
    Create,
}

fn place_private(path: &Path, bytes: &[u8], place: Place) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().expect("a file path has a parent");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        unique_suffix()
    ));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        match place {
            Place::Replace { sync } => {
                if sync {
                    file.sync_data()?;
                }
                std::fs::rename(&tmp, path)
            }
            Place::Create => {
                file.sync_data()?;
                std::fs::hard_link(&tmp, path)
            }
        }
    })();
    // A rename consumed the temporary name; a link (or a failure) left it.
    if written.is_err() || matches!(place, Place::Create) {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Fill `buf` from the kernel's random source.
pub(crate) fn getrandom(buf: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `bytes` random bytes as hex.
pub(crate) fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A part of a temporary file's name that no other writer uses at the same
/// time: not the process id, which is the same (1) in every container, where
/// several hosts may share a workspace or a cache.
pub(crate) fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = random_hex(8).unwrap_or_else(|_| format!("{:x}", std::process::id()));
    format!("{random}-{n}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_fifos_devices_directories_and_large_files_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("ok.toml"), "a = 1").unwrap();
        std::fs::write(dir.join("big"), vec![b'x'; 2048]).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        std::os::unix::fs::symlink(dir.join("ok.toml"), dir.join("link")).unwrap();
        assert_eq!(
            read_text(&dir.join("ok.toml"), 100).unwrap().as_deref(),
            Some("a = 1")
        );
        assert_eq!(
            read_text(&dir.join("link"), 100).unwrap().as_deref(),
            Some("a = 1"),
            "a symlink to a regular file is read"
        );
        assert_eq!(read_regular(&dir.join("missing"), 100), Ok(None));
        assert_eq!(
            read_regular(&dir.join("fifo"), 100).unwrap_err(),
            "is a FIFO, not a regular file"
        );
        assert_eq!(
            read_regular(&dir.join("zero"), 100).unwrap_err(),
            "is a symlink to a character device, not a regular file"
        );
        assert_eq!(
            read_regular(dir, 100).unwrap_err(),
            "is a directory, not a regular file"
        );
        assert!(
            read_regular(&dir.join("big"), 1024)
                .unwrap_err()
                .starts_with("is 2048 bytes, more than the 1024 bytes")
        );
    }
}

/// The SHA-256 of `bytes` (what OCI registries name content by).
pub fn sha256_bytes(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

/// `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`:
/// where the engine keeps compiled code and the jail its probe's answer.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLHOST_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/toolhost"))
}

/// `sha256:` and the hexadecimal SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in sha256_bytes(bytes) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A file's content digest: `blake3:` and 64 hex digits.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Digest(String);

impl Digest {
    pub fn of(bytes: &[u8]) -> Digest {
        Self::from_hex(blake3::hash(bytes).to_hex().as_str())
    }

    /// The digest whose BLAKE3 hash is `hex` (already computed).
    pub fn from_hex(hex: &str) -> Digest {
        Digest(format!("blake3:{hex}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The hex digits alone (the compile cache's key).
    pub fn hex(&self) -> &str {
        self.0.trim_start_matches("blake3:")
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The real path of `path`, or where it would be: its longest existing
/// ancestor resolved, the missing rest appended.
pub(crate) fn real_or_planned(path: &Path) -> std::path::PathBuf {
    let mut missing = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = current.canonicalize() {
            return missing.iter().rev().fold(real, |p, name| p.join(name));
        }
        match (current.file_name(), current.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_os_string());
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// A policy file (`toolhost.toml`), parsed for editing with its comments
/// and layout (empty when missing); an error names the file.
pub(crate) fn read_policy(path: &Path) -> Result<toml_edit::DocumentMut, crate::error::Error> {
    let text = read_text(path, MAX_POLICY_BYTES)
        .map_err(|reason| policy_error(path, reason))?
        .unwrap_or_default();
    text.parse()
        .map_err(|e: toml_edit::TomlError| policy_error(path, e.to_string().trim()))
}

/// Write a policy file edited with [`read_policy`] (mode `0600`).
pub(crate) fn write_policy(
    path: &Path,
    doc: &toml_edit::DocumentMut,
) -> Result<(), crate::error::Error> {
    write_private(path, doc.to_string().as_bytes()).map_err(|e| policy_error(path, e.to_string()))
}

fn policy_error(path: &Path, reason: impl Into<String>) -> crate::error::Error {
    crate::error::Error::Policy {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

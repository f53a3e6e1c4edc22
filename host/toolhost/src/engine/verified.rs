//! A cache entry verified once, not at every start.
//!
//! Verifying an entry's MAC reads and hashes all of it (half a megabyte for a
//! small extension, tens for a Python one), at every start, for every
//! extension: most of what an extension added to a warm start. Once an entry
//! has verified, a note beside it (`….cwasm.ok`, 32 bytes) records which
//! file verified: a keyed MAC, under the cache key, of the entry's name and of
//! the identity and times of the file itself (device, inode, size,
//! modification and change times, read from the open descriptor). A later
//! start that finds the same file (the same descriptor it then hands to the
//! engine) with a note that matches uses it without hashing it again.
//!
//! What makes a note stop matching: any write to the entry, a replacement
//! (a new inode), a link made to it, a `touch` or a rename (each sets the
//! change time, which no process can set back without changing the clock).
//! A note is written only for a file whose change time is at least
//! [`SETTLED`] old, so that a write in the same clock tick as the
//! verification (file times are taken from a coarse clock) cannot go
//! unnoticed, and only when the file's stamp did not change while it was
//! hashed. A note cannot be forged without the cache key, and a note copied
//! beside another entry names the other entry's component.
//!
//! An extension's component file is noted the same way once it was read and
//! hashed (`sources/<hash of its path>.ok` in the cache directory: its digest
//! and a MAC of the digest, the path and the file's stamp). A later start
//! that finds the file unchanged takes its digest from the note, and reads
//! it only when the compile cache lacks its code: most of what an extension
//! still added to a warm start was reading and hashing it.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old a file's last change must be for a note to vouch for it.
pub(super) const SETTLED: Duration = Duration::from_secs(2);

/// The note beside the entry at `entry`.
pub(super) fn note_path(entry: &Path) -> PathBuf {
    entry.with_extension("cwasm.ok")
}

/// What identifies an open file and every change made to it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub(super) fn of(file: &std::fs::File) -> Option<Stamp> {
        let m = file.metadata().ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Whether the file last changed at least [`SETTLED`] before `now`.
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(since_epoch) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let (secs, nanos) = self.ctime;
        let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) else {
            return false;
        };
        since_epoch.saturating_sub(Duration::new(secs, nanos.min(999_999_999))) >= SETTLED
    }

    /// A MAC, under `key`, of `what` the note says of this file: the parts
    /// each followed by a NUL (only the last, of a fixed length, may hold
    /// one), then the stamp.
    fn mac(&self, key: &[u8; 32], what: &[&[u8]]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(key);
        for part in what {
            h.update(part).update(b"\0");
        }
        for n in [self.dev, self.ino, self.size] {
            h.update(&n.to_le_bytes());
        }
        for (s, ns) in [self.mtime, self.ctime] {
            h.update(&s.to_le_bytes()).update(&ns.to_le_bytes());
        }
        h.finalize()
    }

    /// The MAC of a note that vouches for a cache entry.
    fn entry_mac(&self, key: &[u8; 32], engine_key: &str, hash: &str) -> blake3::Hash {
        self.mac(
            key,
            &[
                b"verified cache entry",
                engine_key.as_bytes(),
                hash.as_bytes(),
            ],
        )
    }
}

/// Whether the note beside `entry` vouches for the file `stamp` describes,
/// as the entry of component `hash` for the engine `engine_key`.
pub(super) fn noted(
    key: &[u8; 32],
    engine_key: &str,
    hash: &str,
    entry: &Path,
    stamp: &Stamp,
) -> bool {
    let Ok(Some(note)) = crate::files::read_regular(&note_path(entry), 64) else {
        return false;
    };
    let Ok(note) = <[u8; 32]>::try_from(note.as_slice()) else {
        return false;
    };
    // `blake3::Hash`'s equality is constant-time.
    blake3::Hash::from_bytes(note) == stamp.entry_mac(key, engine_key, hash)
}

/// Note that the file `stamp` describes verified as `entry`, when it is
/// settled (see the module's text). Failing to write it costs only the next
/// start's hashing.
pub(super) fn note(key: &[u8; 32], engine_key: &str, hash: &str, entry: &Path, stamp: &Stamp) {
    if stamp.settled(SystemTime::now()) {
        let mac = stamp.entry_mac(key, engine_key, hash);
        let _ = crate::files::write_private_unsynced(&note_path(entry), mac.as_bytes());
    }
}

/// Largest summary read: a component's definitions may take 1 MiB of text
/// (`loader::MAX_DEFINITIONS_BYTES`), quoted in JSON, beside its imports.
const MAX_SUMMARY_BYTES: u64 = 8 << 20;

/// The summary of the component whose cache entry is `entry`.
fn summary_path(entry: &Path) -> PathBuf {
    entry.with_extension("summary")
}

fn summary_mac(key: &[u8; 32], engine_key: &str, hash: &str, body: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new_keyed(key);
    for part in [
        "component summary",
        env!("CARGO_PKG_VERSION"),
        engine_key,
        hash,
    ] {
        h.update(part.as_bytes()).update(b"\0");
    }
    h.update(body).finalize()
}

/// The summary noted beside `entry` for the component `hash`, if its MAC
/// verifies (the summary is what a load of that component found: what it
/// imports, exports and declares).
pub(super) fn read_summary(
    key: &[u8; 32],
    engine_key: &str,
    hash: &str,
    entry: &Path,
) -> Option<Vec<u8>> {
    let mut note = crate::files::read_regular(&summary_path(entry), MAX_SUMMARY_BYTES).ok()??;
    let at = note.len().checked_sub(32)?;
    let mac: [u8; 32] = note[at..].try_into().ok()?;
    note.truncate(at);
    // `blake3::Hash`'s equality is constant-time.
    (blake3::Hash::from_bytes(mac) == summary_mac(key, engine_key, hash, &note)).then_some(note)
}

/// Note `body` as the summary of the component `hash` beside its entry.
pub(super) fn write_summary(
    key: &[u8; 32],
    engine_key: &str,
    hash: &str,
    entry: &Path,
    body: &[u8],
) {
    let mut note = body.to_vec();
    note.extend_from_slice(summary_mac(key, engine_key, hash, body).as_bytes());
    let _ = crate::files::write_private_unsynced(&summary_path(entry), &note);
}

/// The note of the component file at `path`, in the cache directory `dir`.
fn source_note_path(dir: &Path, path: &Path) -> PathBuf {
    let name = blake3::hash(path.as_os_str().as_bytes());
    dir.join("sources").join(format!("{}.ok", name.to_hex()))
}

fn source_mac(key: &[u8; 32], path: &Path, digest: &[u8; 32], stamp: &Stamp) -> blake3::Hash {
    stamp.mac(
        key,
        &[
            b"verified component file",
            path.as_os_str().as_bytes(),
            digest,
        ],
    )
}

/// The digest (BLAKE3) of the component file at `path`, which `stamp`
/// describes, when a note in `dir` vouches for it.
pub(super) fn noted_source(
    key: &[u8; 32],
    dir: &Path,
    path: &Path,
    stamp: &Stamp,
) -> Option<[u8; 32]> {
    let note = crate::files::read_regular(&source_note_path(dir, path), 128).ok()??;
    let (digest, mac) = note.split_at_checked(32)?;
    let digest: [u8; 32] = digest.try_into().ok()?;
    let mac: [u8; 32] = mac.try_into().ok()?;
    // `blake3::Hash`'s equality is constant-time.
    (blake3::Hash::from_bytes(mac) == source_mac(key, path, &digest, stamp)).then_some(digest)
}

/// Note that the component file at `path`, which `stamp` describes, has the
/// digest `digest`, when it is settled.
pub(super) fn note_source(
    key: &[u8; 32],
    dir: &Path,
    path: &Path,
    stamp: &Stamp,
    digest: &[u8; 32],
) {
    if !stamp.settled(SystemTime::now()) {
        return;
    }
    let note = source_note_path(dir, path);
    let mut bytes = digest.to_vec();
    bytes.extend_from_slice(source_mac(key, path, digest, stamp).as_bytes());
    if let Some(parent) = note.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = crate::files::write_private_unsynced(&note, &bytes);
}

/// The note of the SHA-256 of the component whose BLAKE3 is `hash`.
fn sha256_note_path(dir: &Path, hash: &str) -> PathBuf {
    dir.join("sha256").join(format!("{hash}.ok"))
}

fn sha256_mac(key: &[u8; 32], hash: &str, sha256: &str) -> blake3::Hash {
    let mut h = blake3::Hasher::new_keyed(key);
    for part in ["component sha256", hash, sha256] {
        h.update(part.as_bytes()).update(b"\0");
    }
    h.finalize()
}

/// The SHA-256 (`sha256:…`) of the component whose BLAKE3 is `hash`, when
/// a note in `dir` vouches for it.
pub(super) fn noted_sha256(key: &[u8; 32], dir: &Path, hash: &str) -> Option<String> {
    let note = crate::files::read_regular(&sha256_note_path(dir, hash), 256).ok()??;
    let at = note.len().checked_sub(32)?;
    let (sha256, mac) = note.split_at(at);
    let sha256 = std::str::from_utf8(sha256).ok()?;
    let mac: [u8; 32] = mac.try_into().ok()?;
    // `blake3::Hash`'s equality is constant-time.
    (blake3::Hash::from_bytes(mac) == sha256_mac(key, hash, sha256)).then(|| sha256.to_string())
}

/// Note that the component whose BLAKE3 is `hash` has the SHA-256 `sha256`.
pub(super) fn note_sha256(key: &[u8; 32], dir: &Path, hash: &str, sha256: &str) {
    let note = sha256_note_path(dir, hash);
    let mut bytes = sha256.as_bytes().to_vec();
    bytes.extend_from_slice(sha256_mac(key, hash, sha256).as_bytes());
    if let Some(parent) = note.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = crate::files::write_private_unsynced(&note, &bytes);
}

/// The note that the check `subject` (a digest of everything it read)
/// passed.
fn check_note_path(dir: &Path, subject: &str) -> PathBuf {
    dir.join("checks").join(format!("{subject}.ok"))
}

fn check_mac(key: &[u8; 32], subject: &str) -> blake3::Hash {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(b"check passed\0").update(subject.as_bytes());
    h.finalize()
}

/// Whether a note in `dir` vouches that the check `subject` passed.
pub(super) fn noted_check(key: &[u8; 32], dir: &Path, subject: &str) -> bool {
    let Ok(Some(note)) = crate::files::read_regular(&check_note_path(dir, subject), 64) else {
        return false;
    };
    let Ok(mac) = <[u8; 32]>::try_from(note.as_slice()) else {
        return false;
    };
    // `blake3::Hash`'s equality is constant-time.
    blake3::Hash::from_bytes(mac) == check_mac(key, subject)
}

/// Note that the check `subject` passed.
pub(super) fn note_check(key: &[u8; 32], dir: &Path, subject: &str) {
    let note = check_note_path(dir, subject);
    if let Some(parent) = note.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = crate::files::write_private_unsynced(&note, check_mac(key, subject).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ctime: i64) -> Stamp {
        Stamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: (4, 5),
            ctime: (ctime, 0),
        }
    }

    #[test]
    fn a_file_changed_in_the_last_two_seconds_is_not_settled() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        assert!(stamp(997).settled(now));
        assert!(stamp(998).settled(now));
        assert!(!stamp(999).settled(now));
        assert!(!stamp(1_001).settled(now), "a change time in the future");
        assert!(!stamp(-1).settled(now));
    }

    #[test]
    fn a_source_note_gives_its_digest_only_for_its_path_its_file_and_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let (key, path, digest) = ([7u8; 32], Path::new("/ws/ext.wasm"), [3u8; 32]);
        assert_eq!(noted_source(&key, dir.path(), path, &stamp(10)), None);
        note_source(&key, dir.path(), path, &stamp(10), &digest);
        assert_eq!(
            noted_source(&key, dir.path(), path, &stamp(10)),
            Some(digest)
        );
        assert_eq!(noted_source(&[8u8; 32], dir.path(), path, &stamp(10)), None);
        let other = Path::new("/ws/other.wasm");
        assert_eq!(noted_source(&key, dir.path(), other, &stamp(10)), None);
        let changed = Stamp {
            ctime: (10, 1),
            ..stamp(10)
        };
        assert_eq!(noted_source(&key, dir.path(), path, &changed), None);
        // The note of another path copied over this one's names that path.
        note_source(&key, dir.path(), other, &stamp(10), &[4u8; 32]);
        std::fs::copy(
            source_note_path(dir.path(), other),
            source_note_path(dir.path(), path),
        )
        .unwrap();
        assert_eq!(noted_source(&key, dir.path(), path, &stamp(10)), None);
        // A file changed a moment ago is not noted.
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let fresh = Path::new("/ws/fresh.wasm");
        note_source(&key, dir.path(), fresh, &stamp(now), &digest);
        assert_eq!(noted_source(&key, dir.path(), fresh, &stamp(now)), None);
    }

    #[test]
    fn a_note_names_the_entry_and_every_field_of_the_file() {
        let key = [7u8; 32];
        let base = stamp(10).entry_mac(&key, "e", "h");
        assert_ne!(
            base,
            stamp(10).entry_mac(&key, "e", "h2"),
            "another component"
        );
        assert_ne!(base, stamp(10).entry_mac(&key, "e2", "h"), "another engine");
        assert_ne!(
            base,
            stamp(10).entry_mac(&[8u8; 32], "e", "h"),
            "another key"
        );
        let changed = [
            Stamp {
                dev: 9,
                ..stamp(10)
            },
            Stamp {
                ino: 9,
                ..stamp(10)
            },
            Stamp {
                size: 9,
                ..stamp(10)
            },
            Stamp {
                mtime: (4, 6),
                ..stamp(10)
            },
            Stamp {
                ctime: (10, 1),
                ..stamp(10)
            },
        ];
        for s in changed {
            assert_ne!(base, s.entry_mac(&key, "e", "h"), "{s:?}");
        }
    }
}

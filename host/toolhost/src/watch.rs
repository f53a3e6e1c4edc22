//! Noticing that extension files changed, by polling.
//!
//! A server that lives as long as its client (`toolhost mcp`) reloads its
//! tools when the extensions directory or an extension file changes. Polling
//! the metadata of a handful of paths every few hundred milliseconds costs
//! nothing measurable and behaves the same on every filesystem (inotify misses
//! changes on network mounts and needs a watch per directory); a change is
//! reported only once it has held still for one interval, so a file still
//! being copied in is not loaded half-written.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What is known about one path: kind, size and modification time, and for a
/// directory its entries two levels deep (the depth extension discovery reads:
/// files, and subdirectories holding a manifest and a component).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint(Vec<(PathBuf, Option<Stamp>)>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dir: bool,
    len: u64,
    modified: Option<SystemTime>,
}

fn stamp(path: &Path) -> Option<Stamp> {
    // Follows symlinks: a link swapped to another target is a change.
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        dir: meta.is_dir(),
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

impl Fingerprint {
    /// The current state of `paths`; a missing path is recorded as missing.
    pub fn of(paths: &[PathBuf]) -> Fingerprint {
        let mut entries = Vec::new();
        for path in paths {
            record(path, 2, &mut entries);
        }
        Fingerprint(entries)
    }
}

fn record(path: &Path, depth: u32, entries: &mut Vec<(PathBuf, Option<Stamp>)>) {
    let s = stamp(path);
    entries.push((path.to_path_buf(), s));
    if depth == 0 || !s.is_some_and(|s| s.dir) {
        return;
    }
    let Ok(dir) = std::fs::read_dir(path) else {
        return;
    };
    let mut children: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
    children.sort();
    for child in children {
        record(&child, depth - 1, entries);
    }
}

/// Polls a set of paths for changes.
#[derive(Debug)]
pub struct Watcher {
    paths: Vec<PathBuf>,
    interval: Duration,
    last: Fingerprint,
}

impl Watcher {
    /// Start watching `paths` from their current state.
    pub fn new(paths: Vec<PathBuf>, interval: Duration) -> Watcher {
        let last = Fingerprint::of(&paths);
        Watcher {
            paths,
            interval,
            last,
        }
    }

    /// Wait until the paths differ from the last state seen and have stayed
    /// the same for one interval.
    pub async fn changed(&mut self) {
        loop {
            tokio::time::sleep(self.interval).await;
            let now = Fingerprint::of(&self.paths);
            if now == self.last {
                continue;
            }
            tokio::time::sleep(self.interval).await;
            let settled = Fingerprint::of(&self.paths);
            if settled == now {
                self.last = settled;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_sees_added_changed_and_removed_files() {
        let dir = tempfile::tempdir().unwrap();
        let [ext, file] = ["extensions", "tool.wasm"].map(|n| dir.path().join(n));
        let paths = vec![ext.clone(), file.clone()];
        let missing = Fingerprint::of(&paths);
        std::fs::create_dir(&ext).unwrap();
        let empty = Fingerprint::of(&paths);
        assert_ne!(missing, empty);
        std::fs::create_dir(ext.join("sub")).unwrap();
        std::fs::write(ext.join("sub/tool.wasm"), "abc").unwrap();
        let nested = Fingerprint::of(&paths);
        assert_ne!(empty, nested, "a component in a subdirectory counts");
        assert_eq!(nested, Fingerprint::of(&paths), "nothing changed");
        std::fs::write(ext.join("sub/tool.wasm"), "abcd").unwrap();
        assert_ne!(nested, Fingerprint::of(&paths), "a size change counts");
        std::fs::write(&file, "x").unwrap();
        let with_file = Fingerprint::of(&paths);
        std::fs::remove_file(&file).unwrap();
        assert_ne!(with_file, Fingerprint::of(&paths));
    }
}

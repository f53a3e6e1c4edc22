//! What a call reads through WASI files (Python's `open`, JavaScript's
//! `fs`), on its tape.
//!
//! Recording, every `open-at` of the call's preopened directories is a
//! question: the path the component opened, whether for writing, and what
//! it found there: a file's bytes (kept once, by digest), a directory's
//! entries, or the error. Replaying, the call's preopens are a scratch tree
//! made of what the recording holds (each file it opened with its recorded
//! bytes, each directory it opened with its entries' names), put at the
//! recorded places; each `open-at` is compared with the recorded one in
//! order, as every other question is, and served from that tree. Nothing
//! of the machine's files is read. What a component writes through WASI
//! files is not kept: a replay writes it to the scratch tree.

use super::{Asked, CallTape, Taped};
use crate::ops::fs::FsRead;
use crate::tape::Blobs;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};

/// The largest file whose bytes a recording keeps when a component opens
/// it through WASI; a larger one is withheld (its replay stops there).
pub(crate) const MAX_KEPT: u64 = 64 << 20;
/// The most entries of a directory a recording keeps.
const MAX_ENTRIES: usize = 10_000;

/// A store whose calls may be on tape.
pub(crate) trait StoreTape {
    fn tape(&self) -> Option<Arc<CallTape>>;
    /// The call's file reader, which judges whether the bytes at a real
    /// path are a protected path's (a recording never keeps those); none:
    /// every byte opened through WASI is withheld.
    fn reader(&self) -> Option<Arc<dyn FsRead>>;
}

/// What an `open-at` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    File(Vec<u8>),
    /// Its entries: each name, and whether it is a directory.
    Dir(Vec<(String, bool)>),
    /// Opened for writing (what it writes is not kept).
    Writable,
    Failed(String),
}

impl Taped for Opened {
    fn put(&self, blobs: &dyn Blobs) -> Value {
        match self {
            Opened::File(bytes) => json!({ "file": bytes.put(blobs) }),
            Opened::Dir(entries) => json!({ "dir": entries }),
            Opened::Writable => json!("writable"),
            Opened::Failed(code) => json!({ "failed": code }),
        }
    }

    fn take(value: &Value, blobs: &dyn Blobs) -> Option<Self> {
        if value.as_str() == Some("writable") {
            return Some(Opened::Writable);
        }
        if let Some(file) = value.get("file") {
            return Vec::take(file, blobs).map(Opened::File);
        }
        if let Some(dir) = value.get("dir") {
            return serde_json::from_value(dir.clone()).ok().map(Opened::Dir);
        }
        Some(Opened::Failed(value.get("failed")?.as_str()?.to_string()))
    }
}

/// A preopened directory as a call's tape keeps it: where the component
/// sees it, and whether it may write there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WasiDir {
    pub path: String,
    pub writable: bool,
}

/// Shadow `wasi:filesystem`'s `open-at` (linked by `wasmtime-wasi` just
/// before) with one that asks on the call's tape, when it has one.
pub(crate) fn add_to_linker<T: WasiView + StoreTape + 'static>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance("wasi:filesystem/types@0.2.12")?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store: wasmtime::StoreContextMut<'_, T>,
         (fd, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                // Taken before the store is lent to the filesystem.
                let tape = store.data().tape();
                let reader = tape.as_ref().and_then(|_| store.data().reader());
                let mut view = store.data_mut().filesystem();
                let opened = view.open_at(fd, path_flags, path, open_flags, flags).await;
                let opened: Result<Resource<Descriptor>, ErrorCode> = match opened {
                    Ok(fd) => Ok(fd),
                    Err(e) => Err(types::Host::convert_error_code(&mut view, e)?),
                };
                if let Some(tape) = tape {
                    let write = flags.contains(DescriptorFlags::WRITE)
                        || open_flags.contains(OpenFlags::CREATE)
                        || open_flags.contains(OpenFlags::TRUNCATE);
                    let descriptor = match &opened {
                        Ok(fd) => Some(view.table.get(fd)?.clone()),
                        Err(_) => None,
                    };
                    let protects = |path: &Path| {
                        reader
                            .as_ref()
                            .is_none_or(|r| r.protects(&path.to_string_lossy()))
                    };
                    tape.wasi_open(descriptor.as_ref(), &opened, write, &protects)
                        .map_err(wasmtime::Error::msg)?;
                }
                Ok((opened,))
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The real path of an open file or directory.
fn real_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// What `descriptor` holds, as a recording keeps it.
fn found(descriptor: &Descriptor, write: bool) -> (Opened, Option<&'static str>) {
    match descriptor {
        Descriptor::File(_) if write => (Opened::Writable, None),
        Descriptor::File(file) => {
            let size = file.file.metadata().map(|m| m.len()).unwrap_or(0);
            if size > MAX_KEPT {
                return (
                    Opened::File(Vec::new()),
                    Some("the file is larger than a recording keeps"),
                );
            }
            let mut bytes = vec![0; usize::try_from(size).unwrap_or(0)];
            let mut read = 0;
            while read < bytes.len() {
                match file.file.read_at(&mut bytes[read..], read as u64) {
                    Ok(0) => break,
                    Ok(n) => read += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            bytes.truncate(read);
            (Opened::File(bytes), None)
        }
        Descriptor::Dir(dir) => {
            let entries = real_path(&dir.dir)
                .and_then(|path| std::fs::read_dir(path).ok())
                .into_iter()
                .flatten()
                .flatten()
                .take(MAX_ENTRIES)
                .map(|entry| {
                    let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                    (entry.file_name().to_string_lossy().into_owned(), is_dir)
                })
                .collect();
            (Opened::Dir(entries), None)
        }
    }
}

impl CallTape {
    /// The component opened `descriptor` (or failed to) through WASI:
    /// recorded, or compared with the recording (`Err`: the divergence).
    fn wasi_open(
        &self,
        descriptor: Option<&Descriptor>,
        opened: &Result<Resource<Descriptor>, ErrorCode>,
        write: bool,
        protects: &dyn Fn(&Path) -> bool,
    ) -> Result<(), String> {
        let real = descriptor.and_then(|d| match d {
            Descriptor::File(f) => real_path(&f.file),
            Descriptor::Dir(d) => real_path(&d.dir),
        });
        let path = real.as_deref().map(|real| self.seen_as(real));
        let asked = Asked::WasiOpen {
            path: path.unwrap_or_default(),
            write,
        };
        if let Some(replayed) = self.replayed::<Opened>(&asked) {
            return replayed.map(|_| ());
        }
        let (answer, withheld) = match (opened, descriptor) {
            (Ok(_), Some(Descriptor::File(_))) if real.as_deref().is_none_or(protects) => (
                Opened::File(Vec::new()),
                Some("it is a protected path, whose bytes a recording never holds"),
            ),
            (Ok(_), Some(descriptor)) => found(descriptor, write),
            (Err(code), _) => (Opened::Failed(format!("{code:?}")), None),
            (Ok(_), None) => (Opened::Failed("unknown".into()), None),
        };
        self.record(asked, &answer, withheld);
        Ok(())
    }

    /// Where the component sees the real path `real`: itself, recording
    /// (preopens are put where they are); beneath the scratch tree,
    /// replaying.
    fn seen_as(&self, real: &Path) -> String {
        let scratch = self.scratch.get().map(|s| s.path());
        match scratch.and_then(|s| real.strip_prefix(s).ok()) {
            Some(inside) => Path::new("/").join(inside).to_string_lossy().into_owned(),
            None => real.to_string_lossy().into_owned(),
        }
    }

    /// The call's preopened directories, `live`: recorded (`None`), or,
    /// replaying, the recorded ones placed in a scratch tree holding what
    /// the recording has of them: each as the host directory to open and
    /// where the component sees it.
    pub(crate) fn wasi_dirs(
        &self,
        live: &[WasiDir],
    ) -> std::io::Result<Option<Vec<(PathBuf, WasiDir)>>> {
        if let super::Mode::Record { recorder, n } = &self.mode {
            if !live.is_empty() && !std::mem::replace(&mut self.state().wasi_dirs_kept, true) {
                recorder.line(json!({ "call": n, "wasi_dirs": live }));
            }
            return Ok(None);
        }
        let Some(recorded) = self.recorded() else {
            return Ok(Some(Vec::new()));
        };
        let scratch = match self.scratch.get() {
            Some(scratch) => scratch,
            None => {
                let made = tempfile::Builder::new()
                    .prefix("toolhost-replay-")
                    .tempdir()?;
                self.materialize(made.path(), recorded)?;
                self.scratch.get_or_init(|| made)
            }
        };
        let dirs = recorded
            .wasi_dirs
            .iter()
            .map(|dir| {
                let host = beneath(scratch.path(), &dir.path);
                std::fs::create_dir_all(&host)?;
                Ok((host, dir.clone()))
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Some(dirs))
    }

    /// Lay out what `recorded` opened through WASI beneath `scratch`.
    fn materialize(&self, scratch: &Path, recorded: &super::RecordedCall) -> std::io::Result<()> {
        let blobs = self.blobs();
        for op in &recorded.ops {
            let Asked::WasiOpen { path, .. } = &op.asked else {
                continue;
            };
            if op.withheld.is_some() {
                continue;
            }
            let place = beneath(scratch, path);
            match Opened::take(&op.answer, blobs) {
                Some(Opened::File(bytes)) => {
                    if let Some(parent) = place.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    std::fs::write(&place, bytes)?;
                }
                Some(Opened::Dir(entries)) => {
                    std::fs::create_dir_all(&place)?;
                    for (name, is_dir) in entries {
                        if name.contains('/') || name == ".." || name == "." {
                            continue;
                        }
                        let entry = place.join(&name);
                        if entry.symlink_metadata().is_ok() {
                            continue;
                        }
                        if is_dir {
                            std::fs::create_dir_all(&entry)?;
                        } else {
                            std::fs::write(&entry, b"")?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `path` (absolute, as the component saw it) beneath `root`, without
/// leaving it (`..` and `.` are dropped).
fn beneath(root: &Path, path: &str) -> PathBuf {
    let mut place = root.to_path_buf();
    for part in Path::new(path).components() {
        if let std::path::Component::Normal(name) = part {
            place.push(name);
        }
    }
    place
}

//! The local backend: granted directories opened as capabilities (see the
//! module above for what it defends against).

use super::*;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt, PermissionsExt};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

#[derive(Debug)]
struct Root {
    path: PathBuf,
    dir: Dir,
}

/// `fs-read` and `fs-write` on the local disk, confined to granted roots;
/// writes also refuse the protected paths.
#[derive(Debug)]
pub struct LocalFs {
    roots: Vec<Root>,
    protected: ProtectedPaths,
}

/// Where an absolute path lands: a root and a path relative to it.
struct Located<'a> {
    root: &'a Root,
    rel: PathBuf,
}

impl Located<'_> {
    /// The absolute path, as resolved.
    fn absolute(&self) -> PathBuf {
        self.root.path.join(&self.rel)
    }

    fn rel(&self) -> &Path {
        if self.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.rel
        }
    }
}

/// A path resolved to its real location inside a granted root
/// ([`LocalFs::resolve_real`]).
#[derive(Debug)]
pub(crate) struct RealPath<'a> {
    /// The granted root holding it (a real absolute path).
    pub root: &'a Path,
    /// The root's directory handle: opening `rel` through it cannot leave the root.
    pub dir: &'a Dir,
    /// The real path relative to `root`; empty for the root itself.
    pub rel: PathBuf,
}

impl RealPath<'_> {
    /// The real absolute path.
    pub fn absolute(&self) -> PathBuf {
        if self.rel.as_os_str().is_empty() {
            self.root.to_path_buf()
        } else {
            self.root.join(&self.rel)
        }
    }
}

impl LocalFs {
    /// Open each root (canonicalised: its real path is what tools see).
    pub fn new(roots: &[PathBuf]) -> io::Result<LocalFs> {
        let roots = roots
            .iter()
            .map(|r| {
                let path = r.canonicalize()?;
                let dir = Dir::open_ambient_dir(&path, cap_std::ambient_authority())?;
                Ok(Root { path, dir })
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(LocalFs {
            roots,
            protected: ProtectedPaths::default(),
        })
    }

    /// Open each granted directory itself, whatever lies at its path now
    /// (see [`GrantedDir`]): the roots are what was approved.
    pub fn pinned(roots: &[GrantedDir]) -> io::Result<LocalFs> {
        let roots = roots
            .iter()
            .map(|r| {
                Ok(Root {
                    path: r.path().to_path_buf(),
                    dir: r.dir()?,
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(LocalFs {
            roots,
            protected: ProtectedPaths::default(),
        })
    }

    /// What it protects: writes refused, secrets never read.
    pub(crate) fn protected(&self) -> &ProtectedPaths {
        &self.protected
    }

    /// Refuse writes that would change one of `protected` (the `.git/hooks`
    /// and `.git/config` rule holds without it).
    pub fn protect(mut self, protected: ProtectedPaths) -> Self {
        self.protected = protected;
        self
    }

    /// Where a change to `path` lands, refused when that is a protected path
    /// (judged on the path as resolved; [`Self::check_protected`] judges
    /// again on the directory handle the change is made in).
    fn locate_unprotected(&self, path: &str) -> Result<Located<'_>, FsError> {
        let located = self.locate_for_write(path)?;
        if self.protected.covers(&located.absolute()) {
            return Err(protected(path));
        }
        Ok(located)
    }

    /// Refuse changing the entry `name` of `dir` (or `dir` itself) when that
    /// is a protected path. `dir`'s real path is read back from the kernel,
    /// so what is checked is where the change will happen, whatever symlinks
    /// were swapped in since the path was resolved; `planned` (the resolved
    /// path) stands in only where `/proc` is missing.
    fn check_protected(
        &self,
        dir: &Dir,
        name: Option<&str>,
        planned: &Path,
        path: &str,
    ) -> Result<(), FsError> {
        let target = match real_path_of(dir) {
            Some(real) => name.map_or(real.clone(), |n| real.join(n)),
            None => planned.to_path_buf(),
        };
        if self.protected.covers(&target) {
            return Err(protected(path));
        }
        Ok(())
    }

    /// `path` opened with `flags` beneath its root, the kernel refusing
    /// every symbolic link on the way (ELOOP), the last component's too:
    /// the path judged by name is the one opened, whatever is swapped in.
    fn open_unlinked(
        &self,
        path: &str,
        flags: rustix::fs::OFlags,
    ) -> Result<std::os::fd::OwnedFd, FsError> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let abs = absolute(path)?;
        let located = self.locate_lexical(&abs).ok_or_else(|| outside(path))?;
        rustix::fs::openat2(
            &located.root.dir,
            located.rel(),
            flags | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|e| io_error(&e.into(), path))
    }

    /// The entries of the directory `opened`, each with its own kind (a
    /// link not followed), without the protected set's secrets: judged on
    /// the real path the kernel reports for the open directory.
    fn entries_of(&self, opened: &Dir) -> io::Result<Vec<(String, Option<EntryKind>)>> {
        let real = real_path_of(opened);
        let along = real
            .as_deref()
            .map(|real| self.protected.secrets_along(real));
        let hidden = |name: &str| match (&real, &along) {
            (Some(real), Some(along)) => along.iter().any(|s| real.join(name).starts_with(s)),
            _ => !self.protected.secrets().is_empty(),
        };
        let mut names = Vec::new();
        for entry in opened.entries()? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if hidden(&name) {
                continue;
            }
            names.push((name, entry.file_type().map(kind_of).ok()));
        }
        Ok(names)
    }

    /// Whether the file just opened is a secret of the protected set (a
    /// credential store, a secret's source): judged on the real path the
    /// kernel reports for the open file, so no link, `..` or swapped
    /// directory on the way names it otherwise.
    pub(crate) fn hidden(&self, file: &impl std::os::fd::AsRawFd) -> bool {
        if self.protected.secrets().is_empty() {
            return false;
        }
        match real_path_of(file) {
            Some(real) => self.protected.hides(&real),
            // Without `/proc` the real path cannot be read back: refuse.
            None => true,
        }
    }

    /// The root holding `abs` lexically (the longest match), if any.
    fn locate_lexical(&self, abs: &Path) -> Option<Located<'_>> {
        self.roots
            .iter()
            .filter_map(|root| {
                abs.strip_prefix(&root.path).ok().map(|rel| Located {
                    root,
                    rel: rel.to_path_buf(),
                })
            })
            .max_by_key(|l| l.root.path.as_os_str().len())
    }

    /// Where `path` really is: every symlink followed, each step inside a
    /// granted root, by the same rules as every other operation here (`..`
    /// resolved lexically first, absolute paths and links leaving the roots
    /// refused). For backends that work natively from a real path, such as
    /// search; the path need not exist (its missing tail is kept as given).
    pub(crate) fn resolve_real(&self, path: &str) -> Result<RealPath<'_>, FsError> {
        let located = self.locate_for_write(path)?;
        Ok(RealPath {
            root: &located.root.path,
            dir: &located.root.dir,
            rel: located.rel,
        })
    }

    fn is_root_ancestor(&self, abs: &Path) -> bool {
        self.roots.iter().any(|r| r.path.starts_with(abs))
    }

    /// Run `op` on the path's root handle; if the kernel reports an escape
    /// (an absolute symlink), resolve links step by step and run it once more.
    fn with_path<T>(
        &self,
        path: &str,
        op: impl Fn(&Dir, &Path) -> io::Result<T>,
    ) -> Result<T, FsError> {
        let abs = absolute(path)?;
        let located = self.locate_lexical(&abs).ok_or_else(|| outside(path))?;
        match op(&located.root.dir, located.rel()) {
            Err(e) if is_escape(&e) => {
                let resolved = self.resolve_links(&abs, path)?;
                op(&resolved.root.dir, resolved.rel()).map_err(|e| io_error(&e, path))
            }
            other => other.map_err(|e| io_error(&e, path)),
        }
    }

    /// Where a write to `path` lands: symlinks followed as far as they
    /// exist, every step inside a root.
    fn locate_for_write(&self, path: &str) -> Result<Located<'_>, FsError> {
        let abs = absolute(path)?;
        if self.locate_lexical(&abs).is_none() {
            return Err(outside(path));
        }
        self.resolve_links(&abs, path)
    }

    /// The directory handle holding `located` and the entry's name in it.
    fn parent_of(&self, located: &Located<'_>, path: &str) -> Result<(Dir, String), FsError> {
        let name = located
            .rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                fs_error(
                    ErrorCode::IsADirectory,
                    format!("{path}: is a granted root directory"),
                )
            })?;
        let parent = located.rel.parent().unwrap_or(Path::new(""));
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let dir = located
            .root
            .dir
            .open_dir(parent)
            .map_err(|e| io_error(&e, path))?;
        Ok((dir, name))
    }

    /// Follow symlinks one component at a time, keeping every step inside a
    /// root. Components above the roots are taken as they are (roots are real
    /// paths, so their ancestors hold no links on the way to them).
    fn resolve_links(&self, abs: &Path, shown: &str) -> Result<Located<'_>, FsError> {
        let mut walk = LinkWalk::new(abs);
        while let Some((name, candidate)) = walk.next_step() {
            let Some(at) = self.locate_lexical(&candidate) else {
                if self.is_root_ancestor(&candidate) {
                    walk.enter(candidate);
                    continue;
                }
                return Err(outside(shown));
            };
            let meta = match at.root.dir.symlink_metadata(at.rel()) {
                Ok(meta) => meta,
                Err(e) if is_missing(&e) => {
                    // Nothing to follow past a missing component (or past a
                    // file used as a directory); the operation itself
                    // reports it.
                    walk.enter_rest(candidate);
                    break;
                }
                Err(e) => return Err(io_error(&e, shown)),
            };
            if !meta.file_type().is_symlink() {
                walk.enter(candidate);
                continue;
            }
            if !walk.hop() {
                return Err(fs_error(
                    ErrorCode::TooManyLinks,
                    format!("{shown}: too many levels of symbolic links"),
                ));
            }
            let target = match rustix::fs::readlinkat(&at.root.dir, at.rel(), Vec::new()) {
                Ok(target) => target,
                // No longer a symlink: it was swapped since it was looked at.
                // Look at this step again (each look counts as a hop, so a
                // swap that never stops ends the walk).
                Err(rustix::io::Errno::INVAL) => {
                    walk.retry(name);
                    continue;
                }
                Err(e) => return Err(io_error(&io::Error::from(e), shown)),
            };
            walk.follow(Path::new(&*target.to_string_lossy()));
        }
        self.locate_lexical(walk.current())
            .ok_or_else(|| outside(shown))
    }
}

/// ENOENT or ENOTDIR: the path does not name anything (yet).
fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || rustix::io::Errno::from_io_error(e) == Some(rustix::io::Errno::NOTDIR)
}

/// cap-std's refusal of a path that leaves the directory handle.
fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
}

/// Map an I/O error to the WIT error, naming the path the tool gave.
/// `faccessat` with the effective ids, relative to `dir`, following a final
/// symlink (its target was resolved inside the roots with the directory).
fn accessible(dir: &Dir, name: &str, mode: rustix::fs::Access) -> io::Result<()> {
    rustix::fs::accessat(dir, name, mode, rustix::fs::AtFlags::EACCESS).map_err(io::Error::from)
}

/// The real path of what `fd` has open, as the kernel reports it;
/// `None` without `/proc`.
fn real_path_of(fd: &impl std::os::fd::AsRawFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

/// Up to `want` bytes from `offset` of `file`, just opened (a directory's
/// read is refused as `EISDIR`). The buffer is made for the bytes the file
/// holds there, so that a small file is read in one `read(2)` and the one
/// that finds its end, not in reads that double from 32 bytes.
fn read_opened(mut file: &std::fs::File, offset: u64, want: u64) -> io::Result<Vec<u8>> {
    let metadata = file.metadata()?;
    if metadata.is_dir() {
        return Err(io::Error::from_raw_os_error(
            rustix::io::Errno::ISDIR.raw_os_error(),
        ));
    }
    if offset > 0 {
        file.seek(SeekFrom::Start(offset))?;
    }
    // What the file held when it was looked at; it may grow or shrink
    // since, which the read follows.
    let expected = metadata.len().saturating_sub(offset).min(want);
    let mut buf = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    file.take(want).read_to_end(&mut buf)?;
    Ok(buf)
}

fn io_error(e: &io::Error, path: &str) -> FsError {
    use rustix::io::Errno;
    if is_escape(e) {
        return outside(path);
    }
    let code = match Errno::from_io_error(e) {
        Some(Errno::NOENT) => ErrorCode::NotFound,
        Some(Errno::NOTDIR) => ErrorCode::NotADirectory,
        Some(Errno::ISDIR) => ErrorCode::IsADirectory,
        Some(Errno::EXIST) => ErrorCode::AlreadyExists,
        Some(Errno::ACCESS) | Some(Errno::PERM) => ErrorCode::PermissionDenied,
        Some(Errno::LOOP) => ErrorCode::TooManyLinks,
        Some(Errno::INVAL) => ErrorCode::InvalidInput,
        _ => match e.kind() {
            io::ErrorKind::NotFound => ErrorCode::NotFound,
            io::ErrorKind::PermissionDenied => ErrorCode::PermissionDenied,
            _ => ErrorCode::Other,
        },
    };
    fs_error(code, format!("{path}: {e}"))
}

fn kind_of(ft: cap_std::fs::FileType) -> EntryKind {
    if ft.is_dir() {
        EntryKind::Directory
    } else if ft.is_file() {
        EntryKind::File
    } else if ft.is_symlink() {
        EntryKind::Symlink
    } else {
        EntryKind::Other
    }
}

fn metadata_of(m: &cap_std::fs::Metadata) -> Metadata {
    let modified_ms = m.modified().ok().and_then(|t| {
        t.into_std()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_millis() as i64)
    });
    Metadata {
        kind: kind_of(m.file_type()),
        size: m.len(),
        modified_ms,
    }
}

impl FsRead for LocalFs {
    fn protects(&self, path: &str) -> bool {
        let path = std::path::Path::new(path);
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.protected.holds(&real)
    }

    fn stat(&self, path: &str) -> Result<Metadata, FsError> {
        self.with_path(path, |dir, rel| dir.metadata(rel))
            .map(|m| metadata_of(&m))
    }

    fn read(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        let want = max_bytes.min(MAX_READ_CHUNK);
        self.with_path(path, |dir, rel| {
            let mut options = OpenOptions::new();
            options
                .read(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
            let file = dir.open_with(rel, &options)?.into_std();
            if self.hidden(&file) {
                return Ok(None);
            }
            read_opened(&file, offset, want).map(Some)
        })?
        .ok_or_else(|| protected(path))
    }

    fn read_unlinked(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        use rustix::fs::OFlags;
        let fd = self.open_unlinked(path, OFlags::RDONLY | OFlags::NONBLOCK)?;
        let file = std::fs::File::from(fd);
        if self.hidden(&file) {
            return Err(protected(path));
        }
        read_opened(&file, offset, max_bytes.min(MAX_READ_CHUNK)).map_err(|e| io_error(&e, path))
    }

    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        let names = self.with_path(path, |dir, rel| {
            let opened = dir.open_dir(if rel.as_os_str().is_empty() {
                Path::new(".")
            } else {
                rel
            })?;
            self.entries_of(&opened)
        })?;
        let base = path.trim_end_matches('/');
        Ok(names
            .into_iter()
            .map(|(name, kind)| {
                // A symlink's kind is its target's, when the target is reachable.
                let kind = match kind {
                    Some(EntryKind::Symlink) | None => {
                        self.stat(&format!("{base}/{name}")).ok().map(|m| m.kind)
                    }
                    known => known,
                };
                DirEntry { name, kind }
            })
            .collect())
    }

    fn list_dir_unlinked(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        use rustix::fs::OFlags;
        let fd = self.open_unlinked(path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let opened = Dir::from_std_file(std::fs::File::from(fd));
        let names = self.entries_of(&opened).map_err(|e| io_error(&e, path))?;
        Ok(names
            .into_iter()
            .map(|(name, kind)| DirEntry { name, kind })
            .collect())
    }

    fn roots(&self) -> Vec<String> {
        self.roots
            .iter()
            .map(|r| r.path.to_string_lossy().into_owned())
            .collect()
    }
}

/// Open the directory `name` of `dir` without following a symlink there.
fn open_dir_nofollow(dir: &Dir, name: &str) -> io::Result<Dir> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY,
        Mode::empty(),
    )?;
    Ok(Dir::from_std_file(std::fs::File::from(fd)))
}

/// A name for a temporary file beside `name`, unique among concurrent
/// writers, also those of other hosts on the same workspace.
fn temp_name(name: &str) -> String {
    format!(".{name}.toolhost-{}.tmp", crate::files::unique_suffix())
}

impl FsWrite for LocalFs {
    fn write_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        let located = self.locate_unprotected(path)?;
        let (dir, name) = self.parent_of(&located, path)?;
        self.check_protected(&dir, Some(&name), &located.absolute(), path)?;
        let existing = match dir.metadata(&name) {
            Ok(m) if m.is_dir() => {
                return Err(fs_error(
                    ErrorCode::IsADirectory,
                    format!("{path}: is a directory"),
                ));
            }
            Ok(m) => {
                // The rename would replace a file this process may not write
                // (Node's writeFile opens it and fails with EACCES).
                if m.is_file() {
                    accessible(&dir, &name, rustix::fs::Access::WRITE_OK)
                        .map_err(|e| io_error(&e, path))?;
                }
                Some(m.permissions())
            }
            Err(_) => None,
        };
        let tmp = temp_name(&name);
        let written = (|| -> io::Result<()> {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = dir.open_with(&tmp, &options)?;
            file.write_all(contents)?;
            if let Some(perms) = &existing {
                file.set_permissions(cap_std::fs::Permissions::from_mode(perms.mode()))?;
            }
            file.sync_data()?;
            dir.rename(&tmp, &dir, &name)
        })();
        if let Err(e) = written {
            let _ = dir.remove_file(&tmp);
            return Err(io_error(&e, path));
        }
        Ok(())
    }

    fn append_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        let located = self.locate_unprotected(path)?;
        let (dir, name) = self.parent_of(&located, path)?;
        self.check_protected(&dir, Some(&name), &located.absolute(), path)?;
        let mut options = OpenOptions::new();
        // The name was resolved through its links: one appearing now was
        // swapped in, and is not followed.
        options
            .append(true)
            .create(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        let mut file = dir
            .open_with(&name, &options)
            .map_err(|e| io_error(&e, path))?;
        file.write_all(contents).map_err(|e| io_error(&e, path))
    }

    fn create_dir_all(&self, path: &str) -> Result<(), FsError> {
        let located = self.locate_unprotected(path)?;
        // One level at a time, each opened without following links and
        // checked before anything is created in it.
        let mut dir = located
            .root
            .dir
            .try_clone()
            .map_err(|e| io_error(&e, path))?;
        let mut planned = located.root.path.clone();
        for name in located.rel.iter() {
            let name = name.to_string_lossy();
            planned.push(name.as_ref());
            self.check_protected(&dir, Some(&name), &planned, path)?;
            match dir.create_dir(name.as_ref()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_error(&e, path)),
            }
            dir = open_dir_nofollow(&dir, &name).map_err(|e| {
                if rustix::io::Errno::from_io_error(&e) == Some(rustix::io::Errno::NOTDIR) {
                    // A file in the way, as `mkdir -p` reports it.
                    io_error(
                        &io::Error::from_raw_os_error(rustix::io::Errno::EXIST.raw_os_error()),
                        path,
                    )
                } else {
                    io_error(&e, path)
                }
            })?;
        }
        Ok(())
    }

    fn access(&self, path: &str) -> Result<(), FsError> {
        let located = self.locate_unprotected(path)?;
        let (dir, name) = self.parent_of(&located, path)?;
        // A protected file may be read, never written: not accessible for
        // writing, so an edit stops before it does any work.
        self.check_protected(&dir, Some(&name), &located.absolute(), path)?;
        let mode = rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK;
        accessible(&dir, &name, mode).map_err(|e| io_error(&e, path))
    }

    fn lock_key(&self, path: &str) -> Result<String, FsError> {
        let located = self.locate_for_write(path)?;
        Ok(located
            .root
            .path
            .join(&located.rel)
            .to_string_lossy()
            .into_owned())
    }

    fn roots(&self) -> Vec<String> {
        FsRead::roots(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(dir: &Path) -> LocalFs {
        LocalFs::new(&[dir.to_path_buf()]).unwrap()
    }

    #[test]
    fn refuses_dotdot_absolute_and_symlink_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(tmp.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), ws.join("abs-out")).unwrap();
        std::os::unix::fs::symlink("../secret.txt", ws.join("rel-out")).unwrap();
        let fs = local(&ws);
        let ws = ws.canonicalize().unwrap();
        let w = ws.to_str().unwrap();
        for p in [
            format!("{w}/../secret.txt"),
            format!("{w}/abs-out"),
            format!("{w}/rel-out"),
            "/etc/passwd".to_string(),
        ] {
            let err = fs.read(&p, 0, 10).unwrap_err();
            assert_eq!(err.code, ErrorCode::OutsideRoots, "{p}: {}", err.message);
        }
    }

    #[test]
    fn follows_symlinks_that_stay_inside() {
        let (_tmp, ws) = crate::testing::real_temp_dir();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/a.txt"), "hello").unwrap();
        std::os::unix::fs::symlink(ws.join("sub/a.txt"), ws.join("abs-in")).unwrap();
        std::os::unix::fs::symlink("sub", ws.join("rel-dir")).unwrap();
        std::os::unix::fs::symlink(ws.join("sub"), ws.join("abs-dir")).unwrap();
        let fs = local(&ws);
        let w = ws.to_str().unwrap();
        assert_eq!(fs.read(&format!("{w}/abs-in"), 0, 100).unwrap(), b"hello");
        assert_eq!(
            fs.read(&format!("{w}/rel-dir/a.txt"), 1, 3).unwrap(),
            b"ell"
        );
        assert_eq!(
            fs.read(&format!("{w}/abs-dir/a.txt"), 0, 100).unwrap(),
            b"hello"
        );
        let entries = fs.list_dir(w).unwrap();
        let kind = |n: &str| entries.iter().find(|e| e.name == n).unwrap().kind;
        assert_eq!(kind("abs-dir"), Some(EntryKind::Directory));
        assert_eq!(kind("abs-in"), Some(EntryKind::File));
    }

    #[test]
    fn maps_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = local(tmp.path());
        let w = tmp.path().canonicalize().unwrap();
        let w = w.to_str().unwrap();
        assert_eq!(
            fs.stat(&format!("{w}/nope")).unwrap_err().code,
            ErrorCode::NotFound
        );
        assert_eq!(fs.read(w, 0, 1).unwrap_err().code, ErrorCode::IsADirectory);
        assert_eq!(
            fs.stat("relative").unwrap_err().code,
            ErrorCode::InvalidInput
        );
    }
}

#[cfg(test)]
mod write_tests {
    use super::*;

    #[test]
    fn writes_are_atomic_keep_permissions_and_follow_links() {
        use std::os::unix::fs::PermissionsExt as _;
        let (_tmp, ws) = crate::testing::real_temp_dir();
        let w = ws.to_str().unwrap();
        let fs = LocalFs::new(std::slice::from_ref(&ws)).unwrap();
        std::fs::write(ws.join("script.sh"), "old").unwrap();
        std::fs::set_permissions(ws.join("script.sh"), std::fs::Permissions::from_mode(0o754))
            .unwrap();
        fs.write_file(&format!("{w}/script.sh"), b"new").unwrap();
        assert_eq!(std::fs::read(ws.join("script.sh")).unwrap(), b"new");
        let mode = std::fs::metadata(ws.join("script.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o754);
        // A write through a symlink changes the target, and the link stays.
        std::os::unix::fs::symlink(ws.join("script.sh"), ws.join("alias")).unwrap();
        fs.write_file(&format!("{w}/alias"), b"via alias").unwrap();
        assert_eq!(std::fs::read(ws.join("script.sh")).unwrap(), b"via alias");
        assert!(
            std::fs::symlink_metadata(ws.join("alias"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs.lock_key(&format!("{w}/alias")).unwrap(),
            format!("{w}/script.sh")
        );
        // No temporary files are left behind.
        let names: Vec<String> = std::fs::read_dir(&ws)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn writes_cannot_leave_the_roots() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::os::unix::fs::symlink(tmp.path(), ws.join("up")).unwrap();
        let fs = LocalFs::new(std::slice::from_ref(&ws)).unwrap();
        let w = ws.canonicalize().unwrap();
        let w = w.to_str().unwrap();
        for p in [
            format!("{w}/../x"),
            format!("{w}/up/x"),
            "/tmp/x".to_string(),
        ] {
            assert_eq!(
                fs.write_file(&p, b"x").unwrap_err().code,
                ErrorCode::OutsideRoots,
                "{p}"
            );
            assert_eq!(
                fs.create_dir_all(&p).unwrap_err().code,
                ErrorCode::OutsideRoots,
                "{p}"
            );
        }
        assert!(!tmp.path().join("x").exists());
    }

    #[test]
    fn create_dir_all_reports_a_file_in_the_way() {
        let (_tmp, ws) = crate::testing::real_temp_dir();
        let w = ws.to_str().unwrap();
        std::fs::write(ws.join("f.txt"), "x").unwrap();
        let fs = LocalFs::new(std::slice::from_ref(&ws)).unwrap();
        fs.create_dir_all(&format!("{w}/a/b/c")).unwrap();
        assert!(ws.join("a/b/c").is_dir());
        let err = fs.create_dir_all(&format!("{w}/f.txt")).unwrap_err();
        assert_eq!(err.code, ErrorCode::AlreadyExists, "{}", err.message);
    }
}

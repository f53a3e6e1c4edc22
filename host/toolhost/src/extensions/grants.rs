//! What a grant's path names, resolved once when the host starts, and
//! refused where a tool could have chosen it.
//!
//! A grant names a directory (`fs-read`, `fs-write`, `[shell] read-write`),
//! an extension file or directory (`extension-paths`) or a program
//! (`process`) by its path. What a person approved is the thing that path
//! named; but the agent's tools may change what it names before the next
//! start: bash replaces `docs` with a symbolic link to `$HOME`, moves an
//! ancestor away and links one elsewhere in its place, or plants `git` in a
//! directory on `PATH`. So:
//!
//! * A path is resolved component by component through descriptors, each
//!   opened without following a link ([`resolve`]): what is checked is what
//!   is then used, with no window between the two.
//! * A symbolic link met on the way that lies inside a place tools can write
//!   ([`WritePlaces`]) refuses the grant, with a message naming the grant,
//!   its owner, the link, its target and the place. A link a person placed
//!   anywhere else is followed (and what it leads to is checked the same
//!   way).
//! * The directory found is held open ([`GrantedDir`]): the Operations, the
//!   WASI preopens and the process jail all reach that directory for the
//!   host's lifetime, whatever is done at its path later.
//! * A granted program never comes from a place tools can write: an absolute
//!   path there is refused, and a bare name is looked up on `PATH` past
//!   those places ([`crate::ops::process::ProcessPolicy::no_programs_from`]).
//!
//! The places tools can write: the workspace, the host's temp directory
//! (`TMPDIR` of the shell tools), every `[shell] read-write` directory and
//! every extension's `fs-write` directory, each as written and as it resolves
//! now. Resolving may itself follow a link planted in one of them: the set
//! then only grows, which refuses more, never less.

use crate::extensions::policy::Policy;
use crate::ops::fs::GrantedDir;
use rustix::fd::OwnedFd;
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Symbolic links followed while resolving one path (Linux's own bound).
const MAX_LINKS: usize = 40;

/// The places tools can write, each with the words that name it.
#[derive(Clone, Debug)]
pub(crate) struct WritePlaces {
    workspace: PathBuf,
    places: Vec<(PathBuf, String)>,
}

impl WritePlaces {
    /// The places of a host on `workspace` with the temp directory
    /// `temp_dir` under `policy` (see the module docs).
    pub(crate) fn new(workspace: &Path, temp_dir: &Path, policy: &Policy) -> WritePlaces {
        let mut places = WritePlaces {
            workspace: workspace.to_path_buf(),
            places: Vec::new(),
        };
        places.add(workspace.to_path_buf(), "the workspace".into());
        places.add(
            temp_dir.to_path_buf(),
            format!("the temp directory {}", temp_dir.display()),
        );
        for (path, what) in policy.write_grants() {
            places.add(path, format!("the directory granted by {what}"));
        }
        places
    }

    fn add(&mut self, path: PathBuf, name: String) {
        let real = path.canonicalize().ok();
        for p in std::iter::once(path).chain(real) {
            if !self.places.iter().any(|(known, _)| *known == p) {
                self.places.push((p, name.clone()));
            }
        }
    }

    /// Their paths.
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        self.places.iter().map(|(p, _)| p.clone()).collect()
    }

    /// The words naming the place `path` lies strictly inside, if any.
    fn holding(&self, path: &Path) -> Option<&str> {
        self.places
            .iter()
            .find(|(place, _)| path.starts_with(place) && path != place)
            .map(|(_, name)| name.as_str())
    }

    /// The words naming the place `path` lies inside (or is), if any.
    pub(crate) fn name_of(&self, path: &Path) -> Option<&str> {
        self.places
            .iter()
            .find(|(place, _)| path.starts_with(place))
            .map(|(_, name)| name.as_str())
    }

    /// `file` as given or, if that is in no place, as it resolves now (a
    /// link elsewhere into a place is in it too), with the words naming
    /// the place it lies in.
    pub(crate) fn place_of(&self, file: &Path) -> Option<(PathBuf, &str)> {
        let paths = self.paths();
        let (path, place) = crate::ops::process::place_of(file, &paths)?;
        let name = self.name_of(place)?;
        Some((path, name))
    }

    /// `path` as a message shows it: relative inside the workspace.
    fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.workspace) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }
}

/// What a path resolved to.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// Its real path (no symbolic link in it).
    pub path: PathBuf,
    /// The file or directory itself, opened with `O_PATH`.
    pub fd: OwnedFd,
    pub kind: FileType,
}

/// Why a path was not resolved.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unresolved {
    /// Nothing is there (and no link inside a place tools can write led there).
    Missing,
    /// Refused: why, in words that follow "is refused: ".
    Refused(String),
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unresolved::Missing => f.write_str("it does not exist"),
            Unresolved::Refused(reason) => f.write_str(reason),
        }
    }
}

/// Resolve `path` (see the module docs). `instead` ends the refusal of a
/// symbolic link inside a place tools can write (`grant its target
/// instead`).
pub(crate) fn resolve(
    path: &Path,
    places: &WritePlaces,
    instead: &str,
) -> Result<Resolved, Unresolved> {
    use Unresolved::Refused;
    let path =
        std::path::absolute(path).map_err(|e| Refused(format!("it cannot be resolved: {e}")))?;
    let open = |dir: &OwnedFd, name: &OsStr| {
        rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    let root = || {
        rustix::fs::open(
            "/",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    let failed = |at: &Path, e: Errno| match e {
        Errno::NOENT => Unresolved::Missing,
        Errno::NOTDIR => Refused(format!("{} is not a directory", places.show(at))),
        e => Refused(format!(
            "{} cannot be opened: {}",
            places.show(at),
            std::io::Error::from(e)
        )),
    };
    let mut real = PathBuf::from("/");
    let mut fd = root().map_err(|e| failed(&real, e))?;
    let mut kind = FileType::Directory;
    // Components still to walk, the next one last.
    let mut pending: Vec<OsString> = components(&path);
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if kind != FileType::Directory {
            return Err(Refused(format!(
                "{} is not a directory",
                places.show(&real)
            )));
        }
        if name == ".." {
            // `real` holds no link: its parent is the directory's.
            if real.pop() {
                fd = open(&fd, OsStr::new("..")).map_err(|e| failed(&real, e))?;
            }
            continue;
        }
        let here = real.join(&name);
        let next = open(&fd, &name).map_err(|e| failed(&here, e))?;
        let stat = rustix::fs::fstat(&next).map_err(|e| failed(&here, e))?;
        let next_kind = FileType::from_raw_mode(stat.st_mode);
        if next_kind != FileType::Symlink {
            (real, fd, kind) = (here, next, next_kind);
            continue;
        }
        let target = rustix::fs::readlinkat(&next, "", Vec::new()).map_err(|e| failed(&here, e))?;
        let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
        if let Some(place) = places.holding(&here) {
            return Err(Refused(format!(
                "{} is a symbolic link (to {}) inside {place}, which tools can change; {instead}",
                places.show(&here),
                target.display()
            )));
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Refused(format!(
                "it leads through more than {MAX_LINKS} symbolic links"
            )));
        }
        if target.is_absolute() {
            real = PathBuf::from("/");
            fd = root().map_err(|e| failed(&real, e))?;
        }
        pending.extend(components(&target));
    }
    Ok(Resolved {
        path: real,
        fd,
        kind,
    })
}

/// The names of `path`'s components, last first (a stack to pop); `..`
/// kept, `.` and the root dropped.
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .rev()
        .collect()
}

/// The granted directory `path` (see the module docs): the error says why
/// it is refused.
pub(crate) fn directory(path: &Path, places: &WritePlaces) -> Result<GrantedDir, String> {
    let resolved = resolve(path, places, "grant its target instead").map_err(|e| e.to_string())?;
    if resolved.kind != FileType::Directory {
        return Err("it is not a directory".into());
    }
    GrantedDir::from_fd(resolved.path, resolved.fd).map_err(|e| e.to_string())
}

/// Why the granted program `program` is refused: an absolute path inside a
/// place tools can write (itself, or the file it leads to). Bare names are
/// looked up when they run.
pub(crate) fn program_refusal(program: &str, places: &WritePlaces) -> Option<String> {
    let path = Path::new(program);
    if !path.is_absolute() {
        return None;
    }
    let (file, place) = places.place_of(path)?;
    Some(format!(
        "{} lies inside {place}, which tools can change",
        places.show(&file)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::trust::TrustStore;

    struct Fixture {
        _tmp: tempfile::TempDir,
        ws: PathBuf,
        outside: PathBuf,
        places: WritePlaces,
    }

    fn fixture() -> Fixture {
        let (tmp, base) = crate::testing::real_temp_dir();
        let (ws, outside, temp) = (base.join("ws"), base.join("outside"), base.join("temp"));
        for dir in [&ws, &outside, &temp] {
            std::fs::create_dir_all(dir.join("docs/api")).unwrap();
        }
        let policy = Policy::load(&ws, None, &TrustStore::empty()).unwrap();
        let places = WritePlaces::new(&ws, &temp, &policy);
        Fixture {
            _tmp: tmp,
            ws,
            outside,
            places,
        }
    }

    #[test]
    fn a_real_directory_is_pinned_and_a_link_a_person_placed_outside_is_followed() {
        let f = fixture();
        let docs = directory(&f.ws.join("docs/api/../api"), &f.places).unwrap();
        assert_eq!(docs.path(), f.ws.join("docs/api"));
        // A user's own link, outside every place tools can write, into one.
        let link = f.outside.join("to-ws");
        std::os::unix::fs::symlink(&f.ws, &link).unwrap();
        let through = directory(&link.join("docs"), &f.places).unwrap();
        assert_eq!(through.path(), f.ws.join("docs"));
    }

    #[test]
    fn a_link_inside_a_place_tools_can_write_is_refused_wherever_it_is_on_the_way() {
        let f = fixture();
        std::fs::rename(f.ws.join("docs"), f.ws.join("docs.orig")).unwrap();
        std::os::unix::fs::symlink(f.outside.join("docs"), f.ws.join("docs")).unwrap();
        let refused = |p: &Path| directory(p, &f.places).unwrap_err();
        let expected = format!(
            "docs is a symbolic link (to {}/docs) inside the workspace, which tools can \
             change; grant its target instead",
            f.outside.display()
        );
        assert_eq!(refused(&f.ws.join("docs")), expected);
        assert_eq!(refused(&f.ws.join("docs/api")), expected, "an ancestor");
        // Reached through a person's link outside: still inside the workspace.
        let link = f.outside.join("to-ws");
        std::os::unix::fs::symlink(&f.ws, &link).unwrap();
        assert_eq!(refused(&link.join("docs")), expected);
        assert_eq!(
            refused(&f.ws.join("missing")),
            "it does not exist".to_string()
        );
        std::fs::write(f.ws.join("file"), "").unwrap();
        assert_eq!(refused(&f.ws.join("file")), "it is not a directory");
        assert_eq!(refused(&f.ws.join("file/x")), "file is not a directory");
    }

    #[test]
    fn a_program_inside_a_place_tools_can_write_is_refused_by_its_path_or_where_it_leads() {
        let f = fixture();
        let planted = f.ws.join("bin/tool");
        std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        assert_eq!(
            program_refusal(planted.to_str().unwrap(), &f.places).as_deref(),
            Some("bin/tool lies inside the workspace, which tools can change")
        );
        let link = f.outside.join("tool");
        std::os::unix::fs::symlink(&planted, &link).unwrap();
        assert_eq!(
            program_refusal(link.to_str().unwrap(), &f.places).as_deref(),
            Some("bin/tool lies inside the workspace, which tools can change")
        );
        assert_eq!(program_refusal("git", &f.places), None);
        assert_eq!(program_refusal("/bin/sh", &f.places), None);
    }
}

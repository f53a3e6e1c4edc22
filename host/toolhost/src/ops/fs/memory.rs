//! The in-memory backend, for tests.

use super::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// One node of [`MemoryFs`].
#[derive(Clone, Debug)]
pub enum MemoryNode {
    File(Vec<u8>),
    Dir,
    Symlink(String),
}

/// `fs-read` over an in-memory tree (tests; tools behave exactly as on disk,
/// including refusals outside the roots and symlink following).
#[derive(Debug, Default)]
pub struct MemoryFs {
    roots: Vec<PathBuf>,
    nodes: RwLock<BTreeMap<PathBuf, MemoryNode>>,
}

impl MemoryFs {
    /// An empty tree with these roots (each an existing directory).
    pub fn new(roots: &[&str]) -> MemoryFs {
        let fs = MemoryFs {
            roots: roots.iter().map(PathBuf::from).collect(),
            nodes: RwLock::default(),
        };
        for root in roots {
            fs.insert(root, MemoryNode::Dir);
        }
        fs
    }

    /// Add or replace a node, creating parent directories.
    pub fn insert(&self, path: &str, node: MemoryNode) {
        let path = normalize(path).expect("MemoryFs paths are absolute");
        let mut nodes = self.nodes.write().expect("memory fs lock");
        for ancestor in path.ancestors().skip(1) {
            nodes
                .entry(ancestor.to_path_buf())
                .or_insert(MemoryNode::Dir);
        }
        nodes.insert(path, node);
    }

    pub fn write_file(&self, path: &str, contents: impl Into<Vec<u8>>) {
        self.insert(path, MemoryNode::File(contents.into()));
    }

    fn in_roots(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| p.starts_with(r))
    }

    /// Follow symlinks in every component; the result must stay in the roots.
    fn resolve(&self, path: &str) -> Result<(PathBuf, MemoryNode), FsError> {
        let abs = absolute(path)?;
        if !self.in_roots(&abs) {
            return Err(outside(path));
        }
        let nodes = self.nodes.read().expect("memory fs lock");
        let mut walk = LinkWalk::new(&abs);
        while let Some((_, candidate)) = walk.next_step() {
            let above_roots = self.roots.iter().any(|r| r.starts_with(&candidate));
            if !above_roots && !self.in_roots(&candidate) {
                return Err(outside(path));
            }
            match nodes.get(&candidate) {
                Some(MemoryNode::Symlink(target)) => {
                    if !walk.hop() {
                        return Err(fs_error(ErrorCode::TooManyLinks, path.to_string()));
                    }
                    walk.follow(Path::new(target));
                }
                Some(MemoryNode::File(_)) if walk.has_more() => {
                    return Err(fs_error(ErrorCode::NotADirectory, path.to_string()));
                }
                Some(_) => walk.enter(candidate),
                None if above_roots => walk.enter(candidate),
                None => return Err(fs_error(ErrorCode::NotFound, path.to_string())),
            }
        }
        let current = walk.into_path();
        if !self.in_roots(&current) {
            return Err(outside(path));
        }
        let node = nodes
            .get(&current)
            .cloned()
            .ok_or_else(|| fs_error(ErrorCode::NotFound, path.to_string()))?;
        Ok((current, node))
    }
}

impl FsRead for MemoryFs {
    fn stat(&self, path: &str) -> Result<Metadata, FsError> {
        let (_, node) = self.resolve(path)?;
        Ok(match node {
            MemoryNode::File(bytes) => Metadata {
                kind: EntryKind::File,
                size: bytes.len() as u64,
                modified_ms: None,
            },
            _ => Metadata {
                kind: EntryKind::Directory,
                size: 0,
                modified_ms: None,
            },
        })
    }

    fn read(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        match self.resolve(path)? {
            (_, MemoryNode::File(bytes)) => {
                let start = (offset as usize).min(bytes.len());
                let end = start.saturating_add(max_bytes.min(MAX_READ_CHUNK) as usize);
                Ok(bytes[start..end.min(bytes.len())].to_vec())
            }
            _ => Err(fs_error(ErrorCode::IsADirectory, path.to_string())),
        }
    }

    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        let (dir, node) = self.resolve(path)?;
        if !matches!(node, MemoryNode::Dir) {
            return Err(fs_error(ErrorCode::NotADirectory, path.to_string()));
        }
        let children: Vec<String> = {
            let nodes = self.nodes.read().expect("memory fs lock");
            nodes
                .keys()
                .filter(|p| p.parent() == Some(dir.as_path()))
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        };
        let base = dir.to_string_lossy();
        Ok(children
            .into_iter()
            .map(|name| {
                let kind = self
                    .stat(&format!("{}/{name}", base.trim_end_matches('/')))
                    .ok()
                    .map(|m| m.kind);
                DirEntry { name, kind }
            })
            .collect())
    }

    fn roots(&self) -> Vec<String> {
        self.roots
            .iter()
            .map(|r| r.to_string_lossy().into_owned())
            .collect()
    }

    fn read_unlinked(&self, path: &str, offset: u64, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        let abs = absolute(path)?;
        if !self.in_roots(&abs) {
            return Err(outside(path));
        }
        let linked = {
            let nodes = self.nodes.read().expect("memory fs lock");
            abs.ancestors()
                .any(|p| matches!(nodes.get(p), Some(MemoryNode::Symlink(_))))
        };
        if linked {
            return Err(fs_error(
                ErrorCode::TooManyLinks,
                format!("{path}: a symbolic link on the way"),
            ));
        }
        self.read(path, offset, max_bytes)
    }
}

impl MemoryFs {
    /// Where a write lands: the resolved path of an existing entry, or the
    /// lexical path of a new one whose parent must be a directory.
    fn write_target(&self, path: &str) -> Result<PathBuf, FsError> {
        match self.resolve(path) {
            Ok((target, MemoryNode::Dir)) => Err(fs_error(
                ErrorCode::IsADirectory,
                format!("{}: is a directory", target.display()),
            )),
            Ok((target, _)) => Ok(target),
            Err(e) if e.code == ErrorCode::NotFound => {
                let abs = normalize(path).expect("resolved paths are absolute");
                let parent = abs.parent().unwrap_or(Path::new("/"));
                match self.resolve(&parent.to_string_lossy()) {
                    Ok((dir, MemoryNode::Dir)) => Ok(dir.join(abs.file_name().unwrap_or_default())),
                    Ok(_) => Err(fs_error(ErrorCode::NotADirectory, path.to_string())),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }
}

impl FsWrite for MemoryFs {
    fn write_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        let target = self.write_target(path)?;
        self.nodes
            .write()
            .expect("memory fs lock")
            .insert(target, MemoryNode::File(contents.to_vec()));
        Ok(())
    }

    fn append_file(&self, path: &str, contents: &[u8]) -> Result<(), FsError> {
        let target = self.write_target(path)?;
        let mut nodes = self.nodes.write().expect("memory fs lock");
        match nodes.entry(target).or_insert(MemoryNode::File(Vec::new())) {
            MemoryNode::File(bytes) => bytes.extend_from_slice(contents),
            _ => return Err(fs_error(ErrorCode::IsADirectory, path.to_string())),
        }
        Ok(())
    }

    fn create_dir_all(&self, path: &str) -> Result<(), FsError> {
        let abs =
            normalize(path).ok_or_else(|| fs_error(ErrorCode::InvalidInput, path.to_string()))?;
        if !self.in_roots(&abs) {
            return Err(outside(path));
        }
        let mut nodes = self.nodes.write().expect("memory fs lock");
        for dir in abs.ancestors().collect::<Vec<_>>().into_iter().rev() {
            match nodes.get(dir) {
                Some(MemoryNode::Dir) => {}
                Some(_) => {
                    return Err(fs_error(
                        ErrorCode::AlreadyExists,
                        dir.display().to_string(),
                    ));
                }
                None => {
                    nodes.insert(dir.to_path_buf(), MemoryNode::Dir);
                }
            }
        }
        Ok(())
    }

    fn access(&self, path: &str) -> Result<(), FsError> {
        // Its files have no permissions: what exists may be written.
        FsRead::stat(self, path).map(|_| ())
    }

    fn lock_key(&self, path: &str) -> Result<String, FsError> {
        match self.resolve(path) {
            Ok((target, _)) => Ok(target.to_string_lossy().into_owned()),
            Err(e) if e.code == ErrorCode::NotFound => Ok(normalize(path)
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()),
            Err(e) => Err(e),
        }
    }

    fn roots(&self) -> Vec<String> {
        FsRead::roots(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_fs_matches_local_rules() {
        let fs = MemoryFs::new(&["/ws"]);
        fs.write_file("/ws/a.txt", "abc");
        fs.insert("/ws/link", MemoryNode::Symlink("/ws/a.txt".into()));
        fs.insert("/ws/out", MemoryNode::Symlink("/etc/passwd".into()));
        assert_eq!(fs.read("/ws/link", 1, 10).unwrap(), b"bc");
        assert_eq!(
            fs.read("/ws/out", 0, 1).unwrap_err().code,
            ErrorCode::OutsideRoots
        );
        assert_eq!(
            fs.read("/ws/../etc", 0, 1).unwrap_err().code,
            ErrorCode::OutsideRoots
        );
        let names: Vec<_> = fs
            .list_dir("/ws")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["a.txt", "link", "out"]);
    }
}

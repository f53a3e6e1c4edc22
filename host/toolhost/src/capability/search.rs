//! `search`: grep and glob over what a component may read, with the
//! ignore rules and limits of the built-in `grep` and `find`.

use super::{BuiltinBackends, Capability, GrantSpec, Imported};
use crate::ops::Capabilities;
use crate::ops::fs::{GrantedDir, LocalFs};
use crate::ops::search::LocalSearch;
use std::sync::Arc;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("search", "search files", "true", |c| c.search.is_some()),
    imported: Imported::Package,
    asked: |g| g.search,
    merge: |mine, other| mine.search |= other.search,
    builtin,
};

/// A built-in searches the workspace.
fn builtin(_: &GrantSpec, b: &BuiltinBackends, caps: &mut Capabilities) -> Result<(), String> {
    caps.search = Some(b.workspace.2.clone());
    Ok(())
}

/// An extension searches the directories it may read (`read_roots`, its
/// `fs-read` grant resolved); a warning says why it got no search.
pub(crate) fn provide_for_extension(
    read_roots: &[GrantedDir],
    caps: &mut Capabilities,
) -> Result<(), String> {
    if read_roots.is_empty() {
        return Err("search is granted but no fs-read directory to search".into());
    }
    let fs =
        LocalFs::pinned(read_roots).map_err(|e| format!("opening the search directories: {e}"))?;
    caps.search = Some(Arc::new(LocalSearch::new(Arc::new(fs))));
    Ok(())
}

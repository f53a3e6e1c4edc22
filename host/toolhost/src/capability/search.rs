//! `search`: grep and glob over what a component may read, with the
//! ignore rules and limits of the built-in `grep` and `find`.

use super::{BuiltinBackends, Capability, ForExtension, GrantSpec, Imported};
use crate::ops::Capabilities;
use crate::ops::search::LocalSearch;
use crate::ops::usage::Use;
use std::sync::Arc;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("search", "search files", "true", |c| c.search.is_some()),
    imported: Imported::Package,
    asked: |g| g.search,
    merge: |mine, other| mine.search |= other.search,
    builtin,
    extension,
    audit: super::audited(Use::Read, "read"),
    doctor: super::no_layers,
};

/// A built-in searches the workspace.
fn builtin(_: &GrantSpec, b: &BuiltinBackends, caps: &mut Capabilities) -> Result<(), String> {
    caps.search = Some(b.workspace.2.clone());
    Ok(())
}

/// An extension searches the directories it may read (its `fs-read`
/// grant, resolved).
fn extension(x: &ForExtension<'_>, caps: &mut Capabilities, warnings: &mut Vec<String>) {
    if x.read_roots.is_empty() {
        warnings.push("search is granted but no fs-read directory to search".into());
    } else if let Some(fs) = super::pinned(x.read_roots, "search", x.protected, warnings) {
        caps.search = Some(Arc::new(LocalSearch::new(Arc::new(fs))));
    }
}

//! `fs-read`: read files in the granted directories.

use super::{BuiltinBackends, Capability, GrantSpec, Imported, place};
use crate::ops::Capabilities;
use crate::ops::fs::WithOutputs;
use crate::ops::usage::Use;
use std::sync::Arc;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("fs-read", "read files", "[\"<directory>\"]", |c| {
        c.fs_read.is_some()
    }),
    imported: Imported::Package,
    asked: |g| !g.fs_read.is_empty(),
    merge: |mine, other| super::merge_list(&mut mine.fs_read, &other.fs_read),
    builtin,
    // Its directories, as approved.
    extension: |x, caps, warnings| {
        if let Some(fs) = super::pinned(x.read_roots, "fs-read", x.protected, warnings) {
            caps.fs_read = Some(Arc::new(fs));
        }
    },
    audit: super::audited(Use::Read, "read"),
    doctor: super::no_layers,
};

/// The workspace; with the full-output files, those too (read-only), as
/// Pi's `read` opens the file its `bash` named.
fn builtin(grant: &GrantSpec, b: &BuiltinBackends, caps: &mut Capabilities) -> Result<(), String> {
    super::unknown_places(&grant.fs_read, &[place::WORKSPACE, place::OUTPUTS])?;
    let has = |p: &str| grant.fs_read.iter().any(|g| g == p);
    if !has(place::WORKSPACE) {
        return Err(format!("a built-in reads {} or nothing", place::WORKSPACE));
    }
    let workspace = b.workspace.0.clone();
    caps.fs_read = Some(if has(place::OUTPUTS) {
        Arc::new(WithOutputs {
            inner: workspace,
            files: b.outputs.1.clone(),
            outputs: b.outputs.2.clone(),
        })
    } else {
        workspace
    });
    Ok(())
}

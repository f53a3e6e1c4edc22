//! `fs-write`: create, change and remove files in the granted directories.

use super::{BuiltinBackends, Capability, GrantSpec, Imported, place};
use crate::ops::Capabilities;
use crate::ops::usage::Use;
use std::sync::Arc;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("fs-write", "write files", "[\"<directory>\"]", |c| {
        c.fs_write.is_some()
    }),
    imported: Imported::Package,
    asked: |g| !g.fs_write.is_empty(),
    merge: |mine, other| super::merge_list(&mut mine.fs_write, &other.fs_write),
    builtin,
    // Its directories, as approved, the protected paths refused.
    extension: |x, caps, warnings| {
        if let Some(fs) = super::pinned(x.write_roots, "fs-write", x.protected, warnings) {
            caps.fs_write = Some(Arc::new(fs));
        }
    },
    audit: super::audited(Use::Written, "wrote"),
    doctor: super::no_layers,
};

/// The workspace (its protected paths refused), or the full-output files'
/// directory (each file written recorded for `read`).
fn builtin(grant: &GrantSpec, b: &BuiltinBackends, caps: &mut Capabilities) -> Result<(), String> {
    caps.fs_write = match grant.fs_write.as_slice() {
        [one] if one == place::WORKSPACE => Some(b.workspace.1.clone()),
        [one] if one == place::OUTPUTS => Some(b.outputs.0.clone()),
        _ => {
            return Err(format!(
                "a built-in writes one of {} and {}",
                place::WORKSPACE,
                place::OUTPUTS
            ));
        }
    };
    Ok(())
}

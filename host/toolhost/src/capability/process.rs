//! `process`: run the granted programs, in the process jail.

use super::{BuiltinBackends, Capability, GrantSpec, Imported, place};
use crate::ops::Capabilities;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("process", "run programs", "[\"<program>\"]", |c| {
        c.process.is_some()
    }),
    imported: Imported::Package,
    asked: |g| !g.process.is_empty(),
    merge: |mine, other| {
        super::merge_list(&mut mine.process, &other.process);
        mine.network |= other.network;
    },
    builtin,
};

/// The shells, under the shell tools' policy, with the guard over what
/// their commands write.
fn builtin(grant: &GrantSpec, b: &BuiltinBackends, caps: &mut Capabilities) -> Result<(), String> {
    super::unknown_places(&grant.process, &[place::SHELLS])?;
    caps.process = Some(b.shells.0.clone());
    caps.guard = Some(b.shells.1.clone());
    Ok(())
}

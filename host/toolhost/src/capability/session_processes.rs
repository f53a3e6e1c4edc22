//! `session-processes`: start processes that outlive the call but not the
//! session (`ops/process/session.rs`), under the component's own `process`
//! grant and jail. `session-processes = true`.

use super::{Capability, ForExtension, Imported};
use crate::ops::Capabilities;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted(
        "session-processes",
        "start processes that outlive the call, until the session ends",
        "true",
        |c| c.session_processes,
    ),
    imported: Imported::Package,
    asked: |g| g.session_processes,
    merge: |mine, other| mine.session_processes |= other.session_processes,
    builtin: |_, _, caps| {
        caps.session_processes = true;
        Ok(())
    },
    extension,
    audit: super::audited(crate::ops::usage::Use::Program, "ran"),
    doctor: super::no_layers,
};

/// Granted; it starts nothing without programs of its own to start.
fn extension(x: &ForExtension<'_>, caps: &mut Capabilities, warnings: &mut Vec<String>) {
    if x.grant.process.is_empty() {
        warnings.push(
            "session-processes: granted, but no program is (process = [...]); it can start \
             nothing"
                .into(),
        );
    }
    caps.session_processes = true;
}

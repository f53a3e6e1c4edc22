//! `tools`: see and change the active tool set.

use super::{Capability, Imported};

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("tools", "change the active tools", "true", |c| {
        c.tools.is_some()
    }),
    imported: Imported::Package,
    asked: |g| g.tools,
    merge: |mine, other| mine.tools |= other.tools,
    builtin: super::extensions_only,
    extension: |x, caps, _| caps.tools = Some(x.tool_set.clone()),
    audit: None,
    doctor: super::no_layers,
};

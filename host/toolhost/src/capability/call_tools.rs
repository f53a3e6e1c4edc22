//! `call-tools`: call other tools through the host (`ops/nested.rs`, Pi
//! 1.x's `ctx.executeTool`). The grant names the tools:
//! `call-tools = ["read", "grep"]`, or `["*"]` for every tool the model may
//! call. A nested call is confined as the model's would be: it runs under
//! the called tool's grants, never the caller's.

use super::{Capability, ForExtension, Imported};
use crate::ops::Capabilities;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted(
        "call-tools",
        "call other tools (each under its own grants)",
        "[\"read\"]",
        |c| c.call_tools.is_some(),
    ),
    imported: Imported::Package,
    asked: |g| !g.call_tools.is_empty(),
    merge: |mine, other| super::merge_list(&mut mine.call_tools, &other.call_tools),
    builtin: super::extensions_only,
    extension,
    audit: super::audited(crate::ops::usage::Use::Called, "called"),
    doctor: super::no_layers,
};

/// The names it may call; a name that no tool could have is said and left
/// out.
fn extension(x: &ForExtension<'_>, caps: &mut Capabilities, warnings: &mut Vec<String>) {
    let mut names = Vec::new();
    for name in &x.grant.call_tools {
        if name == "*" || crate::message::valid_tool_name(name) {
            names.push(name.clone());
        } else {
            warnings.push(format!(
                "call-tools: {name:?} is not a tool name (letters, digits, '_' or '-') or \"*\"; \
                 not granted"
            ));
        }
    }
    if !names.is_empty() {
        caps.call_tools = Some(names.into());
    }
}

//! `client`: ask the person's client for a form, a completion of its model,
//! or its roots (`ops/client.rs`). The grant names which:
//! `client = ["elicitation", "sampling", "roots"]`.

use super::{Capability, ForExtension, Imported};
use crate::ops::Capabilities;
use crate::ops::client::{ClientCaps, ClientMethod};

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted(
        "client",
        "ask the person's client (forms, its model, its roots)",
        "[\"elicitation\", \"sampling\", \"roots\"]",
        |c| c.client.is_some(),
    ),
    imported: Imported::Package,
    asked: |g| !g.client.is_empty(),
    merge: |mine, other| super::merge_list(&mut mine.client, &other.client),
    builtin: super::extensions_only,
    extension,
    audit: super::audited(crate::ops::usage::Use::Client, "asked the client"),
    doctor: super::no_layers,
};

/// The kinds of request it names; an unknown kind is said and left out.
fn extension(x: &ForExtension<'_>, caps: &mut Capabilities, warnings: &mut Vec<String>) {
    let mut granted = ClientCaps::default();
    for name in &x.grant.client {
        match ClientMethod::named(name) {
            Some(method) => granted = granted.with(method),
            None => warnings.push(format!(
                "client: {name:?} is not something a client can be asked (elicitation, \
                 sampling, roots); not granted"
            )),
        }
    }
    if granted != ClientCaps::default() {
        caps.client = Some(granted);
    }
}

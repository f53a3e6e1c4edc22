//! `client`: ask the person's client for a form, a completion of its model,
//! or its roots (`ops/client.rs`). The grant names which:
//! `client = ["elicitation", "sampling", "roots"]`.

use super::{Capability, ForExtension, GrantSpec, Imported};
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
    audit: Some(super::Audited {
        list: crate::ops::usage::Use::Client,
        shown_as: "asked the client",
    }),
    doctor: super::no_layers,
};

/// The kinds of request it names; an unknown kind is said and left out.
fn extension(
    grant: &GrantSpec,
    _: &ForExtension<'_>,
    caps: &mut Capabilities,
    warnings: &mut Vec<String>,
) {
    let mut granted = ClientCaps::default();
    for name in &grant.client {
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

//! `secrets`: values the host adds to an extension's HTTP requests, which
//! the extension never sees (`ops/http_client/secrets.rs`). Only the user's
//! file declares them: `[extensions.NAME.secrets] TOKEN = { from = "env:…",
//! hosts = […] }`, and each is sent only to hosts its `http` grant names.

use super::{Capability, ForExtension, Imported};
use crate::ops::Capabilities;
use crate::ops::http_client::HttpSecret;
use crate::ops::usage::Use;
use std::sync::Arc;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted(
        "secrets",
        "send secrets with its HTTP requests",
        "{ NAME = { from = \"env:VARIABLE\", hosts = [\"<host>\"] } }",
        |c| c.http.as_ref().is_some_and(|h| !h.secrets.is_empty()),
    ),
    imported: Imported::Through("http"),
    asked: |g| !g.secrets.is_empty(),
    merge: |mine, other| mine.secrets.extend(other.secrets.clone()),
    builtin: super::extensions_only,
    extension,
    audit: super::audited(Use::Secret, "sent secrets"),
    doctor: super::no_layers,
};

/// Each secret, resolved, joins the HTTP policy `http` built just before
/// it in the table; one that cannot be resolved is not sent, and said so.
fn extension(x: &ForExtension<'_>, caps: &mut Capabilities, warnings: &mut Vec<String>) {
    let Some(policy) = caps.http.as_mut().and_then(Arc::get_mut) else {
        warnings.push("secrets: http is not granted, so no secret is sent".into());
        return;
    };
    for (name, spec) in &x.grant.secrets {
        match HttpSecret::resolve(name, spec, policy.grants()) {
            Ok(secret) => policy.secrets.push(Arc::new(secret)),
            Err(reason) => warnings.push(format!("secret {name} is not sent: {reason}")),
        }
    }
}

//! `http`: `wasi:http` requests to the granted hosts (`ops/http_client/`).

use super::{Capability, ForExtension, Imported};
use crate::ops::Capabilities;
use crate::ops::http_client::HttpPolicy;
use crate::ops::usage::Use;
use std::sync::Arc;

pub(super) const CAPABILITY: Capability = Capability {
    interface: super::granted("http", "make HTTP requests", "[\"<host[:port]>\"]", |c| {
        c.http.is_some()
    }),
    imported: Imported::Wasi("wasi:http/"),
    asked: |g| !g.http.is_empty(),
    merge: |mine, other| {
        super::merge_list(&mut mine.http, &other.http);
        mine.http_response_kb = other.http_response_kb.or(mine.http_response_kb);
    },
    builtin: super::extensions_only,
    extension,
    audit: super::audited(Use::Host, "contacted"),
    doctor: super::no_layers,
};

/// Its hosts; each request waits at most the call's own time limit. The
/// secrets it carries are `secrets`' (the next row).
fn extension(x: &ForExtension<'_>, caps: &mut Capabilities, warnings: &mut Vec<String>) {
    match HttpPolicy::new(&x.grant.http, x.call_time) {
        Ok(policy) => {
            let policy = match x.grant.http_response_kb {
                Some(kb) => policy.response_bytes(kb.saturating_mul(1024)),
                None => policy,
            };
            caps.http = Some(Arc::new(policy));
        }
        Err(reason) => warnings.push(format!("{reason}; http not granted")),
    }
}

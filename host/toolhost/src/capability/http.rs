//! `http`: `wasi:http` requests to the granted hosts (`ops/http.rs`).

use super::{Capability, Imported};

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
};

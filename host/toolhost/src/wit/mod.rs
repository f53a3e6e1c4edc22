//! The WIT layer: the `toolhost:tool` contract at the edge of the host.
//!
//! Everything generated from the WIT package, and every conversion between
//! its types and the host's own, lives here, one module per released
//! version of the package (`v0_1` for `toolhost:tool@0.1.0`; a later version
//! gets a module beside it, as Zed's `since_v*` modules do). The Operations
//! (`crate::ops`) have plain Rust types and backend traits; each interface's
//! glue here serves them to a component through a narrow view of the call's
//! state, as wasmtime's WASI crate does.
//!
//! [`v0_1::interfaces`] is the one table of the granted interfaces: name,
//! wording, whether a set of capabilities grants it, the `toolhost.toml`
//! line that would, and how it is linked. Import checking, stubbing for
//! inspection and linking all read it.

pub mod v0_1;

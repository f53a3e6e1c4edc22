//! The agent's tool set through the host's `tools` Operations (needs the
//! `tools` grant): see what is active and activate more, for tools that load
//! other tools on demand. Names that become active during a call are reported
//! in its result (`addedToolNames`).

pub use crate::bindings::toolhost::tool::tools::{active, all, set_active};

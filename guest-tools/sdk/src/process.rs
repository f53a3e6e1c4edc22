//! Running programs through the host's `process` Operations (needs the
//! `process` grant): the child runs in its own process group, with an
//! allowlisted environment, and is stopped when its handle is dropped.

pub use crate::bindings::toolhost::tool::process::{
    Child, ChildEvent, Command, ExitStatus, ProcessError, ProcessErrorCode, spawn,
};

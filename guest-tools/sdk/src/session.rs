//! Processes of the session through the host's `session-processes`
//! Operations (needs the `session-processes` grant and programs granted by
//! `process`): they outlive the call that started them and end with the
//! session.

pub use crate::bindings::toolhost::tool::session_processes::{
    Input, ProcessInfo, ProcessOutput, State, TerminalSize, processes, read, start, stop, write,
};

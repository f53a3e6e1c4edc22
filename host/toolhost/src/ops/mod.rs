//! Operations: the host services a tool imports, each a narrow interface with
//! swappable backends (local disk, in memory), as Pi's per-tool Operations.
//! Each module holds a backend trait, its implementations, and the WIT glue
//! that serves the interface from a call's state.

pub mod fs;
pub mod process;
pub mod protected;
pub mod search;
pub mod tools;

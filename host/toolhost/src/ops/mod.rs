//! Operations: the host services a tool imports, each a narrow interface with
//! swappable backends (local disk, in memory), as Pi's per-tool Operations.

pub mod fs;

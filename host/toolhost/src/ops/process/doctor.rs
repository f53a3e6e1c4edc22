//! What `toolhost doctor` reports: each layer that confines the programs
//! tools start (`confine/`, where each layer's probe is), whether it is on
//! here, what it means, and how to turn on one that is off.

pub use super::confine::Report as Layer;

/// Every layer, probed on this machine: the list each spawn prepares and
/// applies (`confine::LAYERS`).
pub fn layers() -> Vec<Layer> {
    super::confine::probe()
}

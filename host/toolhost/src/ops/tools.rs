//! The `tools` Operations: a tool reads and sets the agent's active tool set
//! (Pi's `getActiveTools`/`setActiveTools`, spec §3.1, §3.4).

use std::sync::Arc;

/// What the `tools` Operations need of the host's tool set. The registry
/// implements it; the Operations know nothing else of it.
pub trait ToolSetBackend: Send + Sync {
    /// The active tools' names, in order.
    fn active(&self) -> Vec<String>;
    /// Every registered tool's name, in order.
    fn all(&self) -> Vec<String>;
    /// Replaces the active set (unknown names are ignored, as in Pi).
    fn set_active(&self, names: &[String]);
}

/// A component's handle on the host's tool set (the `tools` grant).
#[derive(Clone)]
pub struct ToolSet(Arc<dyn ToolSetBackend>);

impl ToolSet {
    pub fn new(backend: Arc<dyn ToolSetBackend>) -> Self {
        ToolSet(backend)
    }

    pub fn active(&self) -> Vec<String> {
        self.0.active()
    }

    pub fn all(&self) -> Vec<String> {
        self.0.all()
    }

    pub fn set_active(&self, names: &[String]) {
        self.0.set_active(names)
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolSet")
    }
}

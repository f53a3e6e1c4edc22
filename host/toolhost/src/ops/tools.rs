//! The `tools` Operations: a tool reads and sets the agent's active tool set
//! (Pi's `getActiveTools`/`setActiveTools`, spec §3.1, §3.4).

use crate::bindings::tools;
use crate::component::CallState;
use crate::registry::Registry;
use std::sync::{Arc, RwLock};

/// A component's handle on the host's tool set (the `tools` grant).
#[derive(Clone)]
pub struct ToolSet(pub(crate) Arc<RwLock<Registry>>);

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolSet")
    }
}

impl CallState {
    fn tool_set(&self) -> wasmtime::Result<&ToolSet> {
        // Linked only with the grant: reaching this without it is a host bug.
        self.caps
            .tools
            .as_ref()
            .ok_or_else(|| wasmtime::format_err!("tools is not granted"))
    }
}

impl tools::Host for CallState {
    fn active(&mut self) -> wasmtime::Result<Vec<String>> {
        let set = self.tool_set()?;
        Ok(set.0.read().expect("registry lock").active().to_vec())
    }

    fn all(&mut self) -> wasmtime::Result<Vec<String>> {
        let set = self.tool_set()?;
        Ok(set.0.read().expect("registry lock").names())
    }

    fn set_active(&mut self, names: Vec<String>) -> wasmtime::Result<()> {
        let set = self.tool_set()?;
        set.0.write().expect("registry lock").set_active(&names);
        Ok(())
    }
}

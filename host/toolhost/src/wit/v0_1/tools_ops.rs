//! The `tools` interface served from [`crate::ops::tools::ToolSet`].

use super::{OpsCtx, tools};
use crate::ops::tools::ToolSet;

impl OpsCtx<'_> {
    fn tool_set(&self) -> wasmtime::Result<&ToolSet> {
        // Linked only with the grant: reaching this without it is a host bug.
        self.caps
            .tools
            .as_ref()
            .ok_or_else(|| wasmtime::format_err!("tools is not granted"))
    }
}

impl tools::Host for OpsCtx<'_> {
    fn active(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(self.tool_set()?.active())
    }

    fn all(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(self.tool_set()?.all())
    }

    fn set_active(&mut self, names: Vec<String>) -> wasmtime::Result<()> {
        self.tool_set()?.set_active(&names);
        Ok(())
    }
}

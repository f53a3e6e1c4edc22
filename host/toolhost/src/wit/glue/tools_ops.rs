//! The `tools` interface served from [`crate::ops::tools::ToolSet`].

use super::tools;
use crate::wit::OpsCtx;

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

//! The `tools` interface served from [`crate::ops::tools::ToolSet`].

use super::tools;
use crate::tape::{Asked, taped_now};
use crate::wit::OpsCtx;

impl tools::Host for OpsCtx<'_> {
    fn active(&mut self) -> wasmtime::Result<Vec<String>> {
        let tape = self.on_tape(|_| Asked::ActiveTools);
        let set = self.tool_set()?;
        taped_now(tape, || set.active())
    }

    fn all(&mut self) -> wasmtime::Result<Vec<String>> {
        let tape = self.on_tape(|_| Asked::AllTools);
        let set = self.tool_set()?;
        taped_now(tape, || set.all())
    }

    fn set_active(&mut self, names: Vec<String>) -> wasmtime::Result<()> {
        let tape = self.on_tape(|_| Asked::SetActiveTools {
            names: names.clone(),
        });
        let set = self.tool_set()?;
        taped_now(tape, || set.set_active(&names))
    }
}

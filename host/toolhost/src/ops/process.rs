//! The `process` Operations: running programs for tools such as bash.
//!
//! (Being built: spawning is refused until the backend lands.)

use crate::bindings::process::{self, ChildEvent, Command, ProcessError, ProcessErrorCode};
use crate::sandbox::CallState;
use wasmtime::component::Resource;

/// What a component may run, where, and with which environment.
#[derive(Clone, Debug, Default)]
pub struct ProcessPolicy {}

/// A running process group.
#[derive(Debug)]
pub struct Child {}

impl process::Host for CallState {
    fn spawn(
        &mut self,
        command: Command,
    ) -> wasmtime::Result<Result<Resource<Child>, ProcessError>> {
        Ok(Err(ProcessError {
            code: ProcessErrorCode::Other,
            message: format!(
                "cannot run {}: process support is not built yet",
                command.program
            ),
        }))
    }
}

impl process::HostChild for CallState {
    async fn next(&mut self, _child: Resource<Child>) -> wasmtime::Result<ChildEvent> {
        Ok(ChildEvent::Exit(process::ExitStatus::Cancelled))
    }

    fn kill(&mut self, _child: Resource<Child>) -> wasmtime::Result<()> {
        Ok(())
    }

    fn drop(&mut self, child: Resource<Child>) -> wasmtime::Result<()> {
        self.table.delete(child)?;
        Ok(())
    }
}

//! `process`: the process Operations' types at the edge, and their glue.

use super::process;
use crate::ops::process::{self as ops, Child};
use crate::ops::usage::Use;
use crate::permissions::Need;
use crate::wit::OpsCtx;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Resource;

impl From<process::Command> for ops::Command {
    fn from(c: process::Command) -> Self {
        ops::Command {
            program: c.program,
            args: c.args,
            cwd: c.cwd,
            env: c.env,
            timeout_ms: c.timeout_ms,
        }
    }
}

impl From<ops::ProcessError> for process::ProcessError {
    fn from(e: ops::ProcessError) -> Self {
        use ops::ProcessErrorCode as C;
        use process::ProcessErrorCode as W;
        process::ProcessError {
            code: match e.code {
                C::NotAllowed => W::NotAllowed,
                C::NotFound => W::NotFound,
                C::CwdNotFound => W::CwdNotFound,
                C::InvalidInput => W::InvalidInput,
                C::Cancelled => W::Cancelled,
                C::Other => W::Other,
            },
            message: e.message,
        }
    }
}

impl From<ops::ExitStatus> for process::ExitStatus {
    fn from(status: ops::ExitStatus) -> Self {
        match status {
            ops::ExitStatus::Code(code) => Self::Code(code),
            ops::ExitStatus::Signal(name) => Self::Signal(name),
            ops::ExitStatus::TimedOut(ms) => Self::TimedOut(ms),
            ops::ExitStatus::Cancelled => Self::Cancelled,
            ops::ExitStatus::LimitExceeded(text) => Self::LimitExceeded(text),
        }
    }
}

impl From<ops::ChildEvent> for process::ChildEvent {
    fn from(event: ops::ChildEvent) -> Self {
        match event {
            ops::ChildEvent::Output(bytes) => Self::Output(bytes),
            ops::ChildEvent::Exit(status) => Self::Exit(status.into()),
        }
    }
}

impl process::Host for OpsCtx<'_> {
    async fn spawn(
        &mut self,
        command: process::Command,
    ) -> wasmtime::Result<Result<Resource<Child>, process::ProcessError>> {
        let Some(mut policy) = self.caps.process.clone() else {
            return Ok(Err(process::ProcessError {
                code: process::ProcessErrorCode::NotAllowed,
                message: "this component may not run programs".into(),
            }));
        };
        let program = command.program.clone();
        // A program beyond the grant: what the rules or the person say.
        if let (Some(asking), Some(refusal)) = (self.asking, policy.refusal_of(&program)) {
            let need = Need::Program {
                program: program.clone(),
            };
            if let Err(text) = asking
                .need(need, &refusal.message, self.cancel, self.usage)
                .await
            {
                self.usage
                    .note(Use::Denied, &format!("process {program}: not-allowed"));
                return Ok(Err(process::ProcessError {
                    code: process::ProcessErrorCode::NotAllowed,
                    message: text,
                }));
            }
            policy = Arc::new(policy.as_ref().clone().program(program.clone()));
        }
        // A shell command the network rules or the person gave the network.
        if self.asking.is_some_and(|a| a.network()) && !policy.has_network() {
            policy = Arc::new(policy.as_ref().clone().network(true));
        }
        let spawned = policy
            .spawn_with_input_anywhere(
                command.into(),
                ops::Input::Null,
                self.cancel.clone(),
                self.spawned,
                self.usage,
            )
            .await;
        match spawned {
            Ok((child, _)) => {
                self.usage.note(Use::Program, &program);
                Ok(Ok(self.table.push(child)?))
            }
            Err(e) => {
                if e.code == ops::ProcessErrorCode::NotAllowed {
                    self.usage
                        .note(Use::Denied, &format!("process {program}: not-allowed"));
                }
                Ok(Err(e.into()))
            }
        }
    }
}

impl process::HostChild for OpsCtx<'_> {
    async fn next(&mut self, child: Resource<Child>) -> wasmtime::Result<process::ChildEvent> {
        Ok(self.table.get_mut(&child)?.next().await.into())
    }

    async fn next_within(
        &mut self,
        child: Resource<Child>,
        wait_ms: u32,
    ) -> wasmtime::Result<Option<process::ChildEvent>> {
        let wait = Duration::from_millis(u64::from(wait_ms));
        let event = self.table.get_mut(&child)?.next_within(wait).await;
        Ok(event.map(Into::into))
    }

    fn kill(&mut self, child: Resource<Child>) -> wasmtime::Result<()> {
        self.table.get(&child)?.kill();
        Ok(())
    }

    fn drop(&mut self, child: Resource<Child>) -> wasmtime::Result<()> {
        self.table.delete(child)?;
        Ok(())
    }
}

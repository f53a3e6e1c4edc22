//! `process`: the process Operations' types at the edge, and their glue.

use super::process;
use crate::ops::process::{self as ops, Child};
use crate::ops::usage::Use;
use crate::permissions::Need;
use crate::tape::{Asked, CallTape, taped, taped_now};
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
        let command = ops::Command::from(command);
        let tape = self.on_tape(|_| Asked::Spawn {
            program: command.program.clone(),
            args: command.args.clone(),
            cwd: command.cwd.clone(),
            env: command.env.iter().map(|(name, _)| name.clone()).collect(),
            timeout_ms: command.timeout_ms,
        });
        let started = match tape {
            None => self.start(command).await,
            Some((tape, asked)) => match tape.replayed::<Result<(), ops::ProcessError>>(&asked) {
                // Replayed: a child whose events are all on the tape.
                Some(replayed) => replayed
                    .map_err(wasmtime::Error::msg)?
                    .map(|()| ops::ChildFeed::new().1),
                None => {
                    let started = self.start(command).await;
                    let answer = started.as_ref().map(|_| ()).map_err(Clone::clone);
                    tape.record(asked, &answer, None);
                    started
                }
            },
        };
        match started {
            Ok(child) => {
                let child = self.table.push(child)?;
                if let Some(tape) = self.tape {
                    tape.child_started(child.rep());
                }
                Ok(Ok(child))
            }
            Err(e) => Ok(Err(e.into())),
        }
    }
}

impl OpsCtx<'_> {
    /// Start `command` under the component's process policy, or beyond it
    /// where the rules or the person allow the program.
    async fn start(&mut self, command: ops::Command) -> Result<Child, ops::ProcessError> {
        let Some(mut policy) = self.caps.process.clone() else {
            return Err(ops::error(
                ops::ProcessErrorCode::NotAllowed,
                "this component may not run programs",
            ));
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
                return Err(ops::error(ops::ProcessErrorCode::NotAllowed, text));
            }
            policy = Arc::new(policy.as_ref().clone().program(program.clone()));
        }
        // A shell command the network rules or the person gave the network.
        if self.asking.is_some_and(|a| a.network()) && !policy.has_network() {
            policy = Arc::new(policy.as_ref().clone().network(true));
        }
        let spawned = policy
            .spawn_with_input_anywhere(
                command,
                ops::Input::Null,
                self.cancel.clone(),
                self.spawned,
                self.usage,
            )
            .await;
        match spawned {
            Ok((child, _)) => {
                self.usage.note(Use::Program, &program);
                Ok(child)
            }
            Err(e) => {
                if e.code == ops::ProcessErrorCode::NotAllowed {
                    self.usage
                        .note(Use::Denied, &format!("process {program}: not-allowed"));
                }
                Err(e)
            }
        }
    }
}

impl<'a> OpsCtx<'a> {
    /// The call's process `child` on its tape.
    fn child_on_tape(
        &self,
        child: &Resource<Child>,
        asked: impl FnOnce(usize) -> Asked,
    ) -> Option<(&'a CallTape, Asked)> {
        let index = self.tape?.child_of(child.rep());
        self.on_tape(|_| asked(index))
    }
}

impl process::HostChild for OpsCtx<'_> {
    async fn next(&mut self, child: Resource<Child>) -> wasmtime::Result<process::ChildEvent> {
        let tape = self.child_on_tape(&child, |child| Asked::Next {
            child,
            wait_ms: None,
        });
        let live = self.table.get_mut(&child)?.next();
        Ok(taped(tape, live).await?.into())
    }

    async fn next_within(
        &mut self,
        child: Resource<Child>,
        wait_ms: u32,
    ) -> wasmtime::Result<Option<process::ChildEvent>> {
        let tape = self.child_on_tape(&child, |child| Asked::Next {
            child,
            wait_ms: Some(wait_ms),
        });
        let wait = Duration::from_millis(u64::from(wait_ms));
        let live = self.table.get_mut(&child)?.next_within(wait);
        Ok(taped(tape, live).await?.map(Into::into))
    }

    fn kill(&mut self, child: Resource<Child>) -> wasmtime::Result<()> {
        let tape = self.child_on_tape(&child, |child| Asked::Kill { child });
        let child = self.table.get(&child)?;
        taped_now(tape, || child.kill())
    }

    fn drop(&mut self, child: Resource<Child>) -> wasmtime::Result<()> {
        self.table.delete(child)?;
        Ok(())
    }
}

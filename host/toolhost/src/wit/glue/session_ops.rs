//! `session-processes`: the processes of the call's session
//! ([`crate::ops::process::session`]), started under the component's
//! `process` policy. Each start, write and stop is recorded in the call's
//! audit line as what it ran; each question is on the call's tape
//! (`crate::tape`), so a replay answers it without a process.

use super::{process, session_processes as sp};
use crate::ops::process::session::{ProcessInfo, Read, SessionProcesses, State};
use crate::ops::process::{Input, ProcessError, ProcessErrorCode};
use crate::ops::usage::Use;
use crate::tape::{Asked, taped, taped_now};
use crate::wit::OpsCtx;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

type Reply<T> = wasmtime::Result<Result<T, process::ProcessError>>;

/// Longest wait a read or write may ask for: a call's own time limit stops
/// it sooner.
const MAX_WAIT: Duration = Duration::from_secs(600);

fn refused(code: ProcessErrorCode, message: &str) -> ProcessError {
    ProcessError {
        code,
        message: message.into(),
    }
}

fn info(i: ProcessInfo) -> sp::ProcessInfo {
    let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    sp::ProcessInfo {
        id: i.id,
        shown: i.command,
        terminal: i.terminal,
        state: match i.state {
            State::Running => sp::State::Running,
            State::Exited(status) => sp::State::Exited(status.into()),
        },
        started_ms: millis(i.started.duration_since(UNIX_EPOCH).unwrap_or_default()),
        age_ms: millis(i.age),
        output_bytes: i.output_bytes,
    }
}

fn output(r: Read) -> sp::ProcessOutput {
    sp::ProcessOutput {
        info: info(r.info),
        output: r.output,
        dropped: r.dropped,
    }
}

/// The session's processes, when the component may use them.
fn session(ctx: &OpsCtx<'_>) -> Result<Arc<SessionProcesses>, ProcessError> {
    if !ctx.caps.session_processes {
        return Err(refused(
            ProcessErrorCode::NotAllowed,
            "this component may not start session processes",
        ));
    }
    if ctx.cancel.is_cancelled() {
        return Err(refused(
            ProcessErrorCode::Cancelled,
            "the call was cancelled",
        ));
    }
    ctx.processes.cloned().ok_or_else(|| {
        refused(
            ProcessErrorCode::Other,
            "this call's front end keeps no session processes",
        )
    })
}

impl sp::Host for OpsCtx<'_> {
    async fn start(
        &mut self,
        command: process::Command,
        input: sp::Input,
        shown: String,
    ) -> Reply<sp::ProcessInfo> {
        let command = crate::ops::process::Command::from(command);
        let input = match input {
            sp::Input::None => Input::Null,
            sp::Input::Pipe => Input::Pipe,
            sp::Input::Terminal(size) => Input::Terminal {
                rows: size.rows,
                cols: size.cols,
            },
        };
        let tape = self.on_tape(|_| Asked::SessionStart {
            program: command.program.clone(),
            args: command.args.clone(),
            cwd: command.cwd.clone(),
            env: command.env.iter().map(|(name, _)| name.clone()).collect(),
            input: match &input {
                Input::Terminal { rows, cols } => format!("terminal {rows}x{cols}"),
                Input::Pipe => "pipe".into(),
                _ => "none".into(),
            },
            shown: shown.clone(),
        });
        let (session, caps, usage) = (session(self), self.caps, self.usage);
        let live = async move {
            let session = session?;
            let Some(policy) = caps.process.clone() else {
                return Err(refused(
                    ProcessErrorCode::NotAllowed,
                    "this component may not run programs",
                ));
            };
            let program = command.program.clone();
            let started = session
                .start(
                    &policy,
                    command,
                    &shown,
                    input,
                    (usage, caps.guard.as_ref()),
                )
                .await;
            if started.is_ok() {
                usage.note(
                    Use::Program,
                    &format!("{program} (session process: {shown})"),
                );
            }
            started
        };
        Ok(taped(tape, live).await?.map(info).map_err(Into::into))
    }

    async fn read(&mut self, id: u32, wait_ms: u32) -> Reply<sp::ProcessOutput> {
        let tape = self.on_tape(|_| Asked::SessionRead { id, wait_ms });
        let (session, cancel) = (session(self), self.cancel);
        let live = async move {
            let wait = Duration::from_millis(wait_ms.into()).min(MAX_WAIT);
            session?.read(id, wait, cancel).await
        };
        Ok(taped(tape, live).await?.map(output).map_err(Into::into))
    }

    async fn write(&mut self, id: u32, data: Vec<u8>, wait_ms: u32) -> Reply<sp::ProcessOutput> {
        let tape = self.on_tape(|blobs| Asked::SessionWrite {
            id,
            bytes: (!data.is_empty()).then(|| blobs.keep(&data)),
            wait_ms,
        });
        let (session, cancel, usage) = (session(self), self.cancel, self.usage);
        let live = async move {
            let session = session?;
            let wait = Duration::from_millis(wait_ms.into()).min(MAX_WAIT);
            if !data.is_empty() {
                usage.note(
                    Use::Program,
                    &format!("wrote {} bytes to session process {id}", data.len()),
                );
            }
            session.write(id, &data, wait, cancel).await
        };
        Ok(taped(tape, live).await?.map(output).map_err(Into::into))
    }

    fn processes(&mut self) -> wasmtime::Result<Vec<sp::ProcessInfo>> {
        let tape = self.on_tape(|_| Asked::SessionList);
        let listed = taped_now(tape, || match session(self) {
            Ok(session) => session.list(),
            Err(_) => Vec::new(),
        })?;
        Ok(listed.into_iter().map(info).collect())
    }

    async fn stop(&mut self, id: u32) -> Reply<sp::ProcessOutput> {
        let tape = self.on_tape(|_| Asked::SessionStop { id });
        let (session, usage) = (session(self), self.usage);
        let live = async move {
            let stopped = session?.stop(id).await;
            if stopped.is_ok() {
                usage.note(Use::Program, &format!("stopped session process {id}"));
            }
            stopped
        };
        Ok(taped(tape, live).await?.map(output).map_err(Into::into))
    }
}

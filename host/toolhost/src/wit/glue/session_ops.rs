//! `session-processes`: the processes of the call's session
//! ([`crate::ops::process::session`]), started under the component's
//! `process` policy. Each start, write and stop is recorded in the call's
//! audit line as what it ran.

use super::{process, session_processes as sp};
use crate::ops::process::session::{ProcessInfo, Read, SessionProcesses, State};
use crate::ops::process::{Input, ProcessError, ProcessErrorCode};
use crate::ops::usage::Use;
use crate::wit::OpsCtx;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

type Reply<T> = wasmtime::Result<Result<T, process::ProcessError>>;

/// Longest wait a read or write may ask for: a call's own time limit stops
/// it sooner.
const MAX_WAIT: Duration = Duration::from_secs(600);

fn refused(code: ProcessErrorCode, message: &str) -> process::ProcessError {
    ProcessError {
        code,
        message: message.into(),
    }
    .into()
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
fn session(ctx: &OpsCtx<'_>) -> Result<Arc<SessionProcesses>, process::ProcessError> {
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
        self.beyond_tape("the session's processes")?;
        let session = match session(self) {
            Ok(session) => session,
            Err(e) => return Ok(Err(e)),
        };
        let Some(policy) = self.caps.process.clone() else {
            return Ok(Err(refused(
                ProcessErrorCode::NotAllowed,
                "this component may not run programs",
            )));
        };
        let input = match input {
            sp::Input::None => Input::Null,
            sp::Input::Pipe => Input::Pipe,
            sp::Input::Terminal(size) => Input::Terminal {
                rows: size.rows,
                cols: size.cols,
            },
        };
        let program = command.program.clone();
        let started = session
            .start(
                &policy,
                command.into(),
                &shown,
                input,
                (self.usage, self.caps.guard.as_ref()),
            )
            .await;
        if started.is_ok() {
            self.usage.note(
                Use::Program,
                &format!("{program} (session process: {shown})"),
            );
        }
        Ok(started.map(info).map_err(Into::into))
    }

    async fn read(&mut self, id: u32, wait_ms: u32) -> Reply<sp::ProcessOutput> {
        self.beyond_tape("the session's processes")?;
        let session = match session(self) {
            Ok(session) => session,
            Err(e) => return Ok(Err(e)),
        };
        let wait = Duration::from_millis(wait_ms.into()).min(MAX_WAIT);
        let read = session.read(id, wait, self.cancel).await;
        Ok(read.map(output).map_err(Into::into))
    }

    async fn write(&mut self, id: u32, data: Vec<u8>, wait_ms: u32) -> Reply<sp::ProcessOutput> {
        self.beyond_tape("the session's processes")?;
        let session = match session(self) {
            Ok(session) => session,
            Err(e) => return Ok(Err(e)),
        };
        let wait = Duration::from_millis(wait_ms.into()).min(MAX_WAIT);
        if !data.is_empty() {
            self.usage.note(
                Use::Program,
                &format!("wrote {} bytes to session process {id}", data.len()),
            );
        }
        let written = session.write(id, &data, wait, self.cancel).await;
        Ok(written.map(output).map_err(Into::into))
    }

    fn processes(&mut self) -> wasmtime::Result<Vec<sp::ProcessInfo>> {
        self.beyond_tape("the session's processes")?;
        Ok(match session(self) {
            Ok(session) => session.list().into_iter().map(info).collect(),
            Err(_) => Vec::new(),
        })
    }

    async fn stop(&mut self, id: u32) -> Reply<sp::ProcessOutput> {
        self.beyond_tape("the session's processes")?;
        let session = match session(self) {
            Ok(session) => session,
            Err(e) => return Ok(Err(e)),
        };
        let stopped = session.stop(id).await;
        if stopped.is_ok() {
            self.usage
                .note(Use::Program, &format!("stopped session process {id}"));
        }
        Ok(stopped.map(output).map_err(Into::into))
    }
}

//! One tool call's way through the host (spec §2.2, §2.3, §2.6):
//!
//! start event → lookup in the active set → prepare-arguments (in the call's
//! fresh instance) → validate and coerce → before hooks → (scheduled) →
//! execute (in the same instance) with progress and cancellation → after
//! hooks → end event.
//!
//! Every failure on the way becomes an error result bound to the call's id,
//! with Pi's texts; nothing escapes as a panic or a host error.

use crate::audit::Outcome;
use crate::component::{CallFailure, CallInstance, CallSignals};
use crate::events::{Event, EventSink};
use crate::hooks::{AfterOutcome, AfterToolCallContext, BeforeToolCallContext};
use crate::message::{
    AssistantMessage, ContentBlock, PartialResult, ToolCall, ToolResult, ToolResultMessage,
};
use crate::ops::process::STOP_GRACE;
use crate::ops::protect::guard::{self as git_guard, GitGuard, Reverted};
use crate::ops::usage::{Usage, Use, Used};
use crate::registry::RegisteredTool;
use crate::session::Session;
use crate::validate;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

/// Pi's text for a call that noticed the abort.
pub const OPERATION_ABORTED: &str = "Operation aborted";

/// A call that has its final result.
#[derive(Clone, Debug)]
pub(crate) struct Finished {
    pub call: ToolCall,
    pub result: ToolResult,
    pub is_error: bool,
    pub trace: Trace,
}

/// What the audit log learns of a call besides its result.
#[derive(Clone, Debug)]
pub(crate) struct Trace {
    pub started: SystemTime,
    clock: Instant,
    /// The digest of the component that served it, once looked up.
    pub component: Option<Arc<str>>,
    /// How it ended, before the after hooks (see [`Trace::outcome`]).
    ended: Outcome,
    pub used: Used,
}

impl Trace {
    pub(crate) fn begin() -> Trace {
        Trace {
            started: SystemTime::now(),
            clock: Instant::now(),
            component: None,
            ended: Outcome::Ok,
            used: Used::default(),
        }
    }

    pub(crate) fn ended(mut self, outcome: Outcome) -> Trace {
        self.ended = outcome;
        self
    }

    /// How the call ended, given its final error flag (an after hook may
    /// have turned a result into an error, or back).
    pub(crate) fn outcome(&self, is_error: bool) -> Outcome {
        match (is_error, self.ended) {
            (false, _) => Outcome::Ok,
            (true, Outcome::Ok) => Outcome::Error,
            (true, ended) => ended,
        }
    }

    pub(crate) fn duration_ms(&self) -> f64 {
        self.clock.elapsed().as_secs_f64() * 1000.0
    }
}

/// The outcome of a call whose instance failed.
fn failure_outcome(failure: &CallFailure) -> Outcome {
    match failure {
        CallFailure::Timeout(_) => Outcome::Timeout,
        CallFailure::Killed => Outcome::Cancelled,
        CallFailure::MemoryLimit(_) | CallFailure::Trap { .. } | CallFailure::Start(_) => {
            Outcome::Crashed
        }
    }
}

/// A call that passed preparation and waits to execute.
pub(crate) struct ReadyCall {
    call: ToolCall,
    tool: Arc<RegisteredTool>,
    args: Value,
    signals: Arc<CallSignals>,
    /// The instance `prepare-arguments` ran in, kept for `execute` (`None`
    /// when the pool was too busy to hold it).
    instance: Option<CallInstance>,
    trace: Trace,
}

pub(crate) enum Preflight {
    /// Ended before execution (not found, invalid, blocked, aborted, crashed).
    Done(Box<Finished>),
    Ready(Box<ReadyCall>),
}

/// A finished call ready to be appended (see [`BatchContext::settle`]).
pub(crate) struct Settled {
    /// Its result asks the loop to stop after this batch.
    pub terminate: bool,
    message: ToolResultMessage,
    events: [Event; 2],
}

/// What every call of one batch shares. Made by [`BatchContext::new`];
/// `batch.rs` reads it through its methods.
pub(crate) struct BatchContext {
    session: Arc<Session>,
    message: Arc<AssistantMessage>,
    cancel: CancellationToken,
    sink: Arc<dyn EventSink>,
    /// Calls may name any loaded tool, not only the active ones (a call the
    /// embedder makes by name, [`crate::Host::call`]).
    any_tool: bool,
    /// Holds back what executing calls emit while the batch is still being
    /// prepared (see [`crate::batch`]).
    gate: Gate,
    /// Each call's place in the order of file mutations, taken when the
    /// batch arrived (see `crate::ops::fs::lock`).
    turns: Vec<crate::ops::fs::TurnSlot>,
}

/// Which tools the calls of a batch may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The active tools, as the model sees them.
    Active,
    /// Any loaded tool (a call the embedder makes by name).
    AnyLoaded,
}

/// Events of executing calls held back until the batch's preflight is
/// over, so that every start event precedes them, as in Pi, even while
/// calls prepared first already run. Open unless closed.
#[derive(Default)]
pub(crate) struct Gate(std::sync::Mutex<Option<Vec<Event>>>);

impl Gate {
    pub(crate) fn close(&self) {
        *self.0.lock().expect("gate lock") = Some(Vec::new());
    }

    /// Emit what was held, in order, and let everything through from now on.
    pub(crate) fn open(&self, sink: &dyn EventSink) {
        let mut held = self.0.lock().expect("gate lock");
        for event in held.take().unwrap_or_default() {
            sink.emit(event);
        }
    }

    fn emit(&self, sink: &dyn EventSink, event: Event) {
        let mut held = self.0.lock().expect("gate lock");
        match held.as_mut() {
            Some(held) => held.push(event),
            None => {
                drop(held);
                sink.emit(event);
            }
        }
    }
}

impl BatchContext {
    /// The context of `message`'s calls; `turns`, when the batch arrived
    /// before it runs, are its places in the order of file mutations, one
    /// per call (else they are taken now).
    pub(crate) fn new(
        session: Arc<Session>,
        message: Arc<AssistantMessage>,
        (cancel, sink): (CancellationToken, Arc<dyn EventSink>),
        turns: Option<Vec<crate::ops::fs::Turn>>,
        reach: Reach,
    ) -> BatchContext {
        let calls = message.tool_calls.len();
        let turns = match turns {
            Some(turns) => {
                assert_eq!(turns.len(), calls, "turns taken for another batch");
                turns
            }
            None => session.mutations.take(calls),
        };
        BatchContext {
            session,
            message,
            cancel,
            sink,
            any_tool: reach == Reach::AnyLoaded,
            gate: Gate::default(),
            turns: turns
                .into_iter()
                .map(|turn| crate::ops::fs::TurnSlot::new(Some(turn)))
                .collect(),
        }
    }

    /// The batch's message.
    pub(crate) fn message(&self) -> &AssistantMessage {
        &self.message
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// Hold back what executing calls emit until [`Self::release_events`].
    pub(crate) fn hold_events(&self) {
        self.gate.close();
    }

    /// Emit what was held, in order, and let everything through from now on.
    pub(crate) fn release_events(&self) {
        self.gate.open(self.sink.as_ref());
    }

    /// Emit `event` now, past the gate (a call's end, in Pi's order).
    pub(crate) fn emit_now(&self, event: Event) {
        self.sink.emit(event);
    }

    pub(crate) fn start(&self, call: &ToolCall) {
        self.sink.emit(Event::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        });
    }

    pub(crate) fn end_event(finished: &Finished) -> Event {
        Event::ToolExecutionEnd {
            tool_call_id: finished.call.id.clone(),
            tool_name: finished.call.name.clone(),
            result: finished.result.clone(),
            is_error: finished.is_error,
        }
    }

    fn end(&self, finished: &Finished) {
        self.sink.emit(Self::end_event(finished));
    }

    /// An event of an executing call: through the gate.
    pub(crate) fn emit_executing(&self, event: Event) {
        self.gate.emit(self.sink.as_ref(), event);
    }

    /// A host-decided error of an executing call, its end through the gate.
    fn fail_executing(&self, call: &ToolCall, text: impl Into<String>, trace: Trace) -> Finished {
        let finished = failed(call, text, false, trace);
        self.emit_executing(Self::end_event(&finished));
        finished
    }

    /// An error outcome decided by the host: its end event goes out now.
    pub(crate) fn fail(
        &self,
        call: &ToolCall,
        text: impl Into<String>,
        terminate: bool,
        trace: Trace,
    ) -> Finished {
        let finished = failed(call, text, terminate, trace);
        self.end(&finished);
        finished
    }

    /// Write a finished call's line to the audit log, if there is one.
    fn audit(&self, finished: &Finished) {
        let Some(log) = &self.session.audit_log else {
            return;
        };
        let trace = &finished.trace;
        let error = finished
            .is_error
            .then(|| crate::audit::error_summary(&finished.result.text()));
        log.record(&crate::audit::Entry {
            time: crate::audit::timestamp(trace.started),
            session: self.session.settings.session_id.clone(),
            tool_call_id: finished.call.id.clone(),
            tool: finished.call.name.clone(),
            component: trace.component.as_deref().map(str::to_string),
            arguments: crate::audit::redact::redact(&finished.call.arguments),
            used: trace.used.clone(),
            outcome: trace.outcome(finished.is_error),
            error,
            duration_ms: trace.duration_ms(),
        });
    }

    /// Make a finished call ready to be appended to the conversation: its
    /// result message and the two events that append it (and its line in
    /// the audit log, written now). A parallel batch does this on the
    /// worker the call finished on, so that only the appending is left for
    /// the end, in source order.
    pub(crate) fn settle(&self, finished: Finished) -> Settled {
        self.audit(&finished);
        let Finished {
            call,
            result,
            is_error,
            ..
        } = finished;
        let terminate = result.terminate;
        let message = ToolResultMessage::from_result(&call, result, is_error);
        Settled {
            terminate,
            events: [
                Event::MessageStart {
                    message: message.clone(),
                },
                Event::MessageEnd {
                    message: message.clone(),
                },
            ],
            message,
        }
    }

    /// Append a settled call: its two events go out, stamped with the time
    /// it is appended, and its result message is returned.
    pub(crate) fn append(&self, settled: Settled) -> ToolResultMessage {
        let Settled {
            mut message,
            events,
            ..
        } = settled;
        let now = crate::message::now_ms();
        message.timestamp = now;
        for mut event in events {
            if let Event::MessageStart { message } | Event::MessageEnd { message } = &mut event {
                message.timestamp = now;
            }
            self.sink.emit(event);
        }
        message
    }

    /// A preflight outcome that ends the call with a host-decided error
    /// (its end event is the caller's to emit).
    fn done(
        &self,
        call: &ToolCall,
        text: impl Into<String>,
        terminate: bool,
        trace: Trace,
    ) -> Preflight {
        Preflight::Done(Box::new(failed(call, text, terminate, trace)))
    }

    /// A call whose instance failed while it was prepared.
    fn broke(&self, call: &ToolCall, failure: &CallFailure, trace: Trace) -> Preflight {
        let text = failure.message(&format!("Tool {}", call.name));
        self.done(call, text, false, trace.ended(failure_outcome(failure)))
    }

    /// A call that noticed the abort before it ran (§7.6).
    fn aborted(&self, call: &ToolCall, trace: Trace) -> Preflight {
        self.done(
            call,
            OPERATION_ABORTED,
            false,
            trace.ended(Outcome::Cancelled),
        )
    }

    /// The tool `call` names, from the registry as it is now.
    pub(crate) fn lookup(&self, call: &ToolCall) -> Option<Arc<RegisteredTool>> {
        let registry = self.session.registry();
        if self.any_tool {
            registry.get(&call.name)
        } else {
            registry.get_active(&call.name)
        }
    }

    /// Everything before execution. The start event has been emitted; the
    /// end of a call that ends here goes out now.
    pub(crate) async fn preflight(&self, i: usize) -> Preflight {
        let prepared = self.prepare(i).await;
        if let Preflight::Done(finished) = &prepared {
            self.end(finished);
        }
        prepared
    }

    /// Everything before execution, emitting nothing.
    pub(crate) async fn prepare(&self, i: usize) -> Preflight {
        let call = &self.message.tool_calls[i];
        // Its turn, kept only if its tool can lock a file at all: the calls
        // after it never wait for one that cannot.
        let turn = self.turns[i].take();
        let mut trace = Trace::begin();
        if self.cancel.is_cancelled() {
            // §7.6: after an abort every call still gets its result.
            return self.aborted(call, trace);
        }
        let Some(tool) = self.lookup(call) else {
            let text = format!("Tool {} not found", call.name);
            return self.done(call, text, false, trace.ended(Outcome::NotFound));
        };
        trace.component = Some(tool.digest.clone());
        let name = &call.name;
        let usage = match self.session.audit_log {
            Some(_) => Usage::recording(),
            None => Usage::default(),
        };
        let signals = CallSignals::with_usage(
            self.cancel.clone(),
            self.session.settings.cancel_grace,
            usage,
            turn.filter(|_| tool.sandbox.may_lock_files()),
        );
        // One fresh instance serves the whole call: prepare-arguments, then
        // execute. A second instance for execute would double what a call
        // costs (one trivial call: 25 → 15 µs) and put an instantiation in
        // the serial part of a parallel batch (all calls are prepared in
        // order before any runs). Both functions see only this call's
        // arguments, so sharing the instance shares nothing between calls.
        let mut instance = match tool.sandbox.instantiate(signals.clone()).await {
            Ok(instance) => instance,
            Err(failure) => return self.broke(call, &failure, trace),
        };
        let prepared = instance
            .prepare_arguments(name, &call.arguments.to_string())
            .await;
        // Holding the instance until execution holds a pool slot; when the
        // pool runs low it is dropped now and execute gets a fresh one, so a
        // batch larger than the pool cannot wait on itself.
        let instance = tool.sandbox.may_hold_instance().then_some(instance);
        // §7.4: the prepared arguments are validated and executed; the stored
        // call (events, messages) keeps what the model sent.
        let prepared = match prepared {
            Err(failure) => return self.broke(call, &failure, trace),
            Ok(Err(thrown)) => {
                return self.done(call, thrown, false, trace.ended(Outcome::Invalid));
            }
            Ok(Ok(None)) => call.arguments.clone(),
            Ok(Ok(Some(text))) => match serde_json::from_str(&text) {
                Ok(value) => value,
                Err(e) => {
                    let text =
                        format!("Tool {name} prepared arguments that are not valid JSON: {e}");
                    return self.done(call, text, false, trace.ended(Outcome::Invalid));
                }
            },
        };
        let args = match tool.schema.coerce_and_validate(&prepared) {
            Ok(args) => args,
            Err(issues) => {
                let text = validate::failure_text(name, &issues, &prepared);
                return self.done(call, text, false, trace.ended(Outcome::Invalid));
            }
        };

        let mut ctx = BeforeToolCallContext {
            assistant_message: self.message.clone(),
            tool_call: call.clone(),
            args,
            cancel: self.cancel.clone(),
        };
        for hook in &self.session.hooks {
            match hook.before(&mut ctx).await {
                // A hook that throws blocks the call (fail closed).
                Err(thrown) => {
                    return self.done(call, thrown, false, trace.ended(Outcome::Blocked));
                }
                Ok(verdict) => {
                    if self.cancel.is_cancelled() {
                        return self.aborted(call, trace);
                    }
                    if let Some(v) = verdict.filter(|v| v.block) {
                        let reason = v
                            .reason
                            .unwrap_or_else(|| "Tool execution was blocked".to_string());
                        return self.done(call, reason, v.terminate, trace.ended(Outcome::Blocked));
                    }
                }
            }
        }
        if self.cancel.is_cancelled() {
            return self.aborted(call, trace);
        }
        Preflight::Ready(Box::new(ReadyCall {
            call: call.clone(),
            tool,
            args: ctx.args,
            signals,
            instance,
            trace,
        }))
    }

    /// Execute a prepared call, run the after hooks and emit its end event.
    pub(crate) async fn execute(self: &Arc<Self>, ready: ReadyCall) -> Finished {
        let ReadyCall {
            call,
            tool,
            args,
            signals,
            instance,
            mut trace,
        } = ready;
        if self.cancel.is_cancelled() {
            return self.fail_executing(&call, OPERATION_ABORTED, trace.ended(Outcome::Cancelled));
        }
        let mut instance = match instance {
            Some(mut instance) => {
                // The time limit is execute's: preparing the rest of the batch
                // and the before hooks do not count against it.
                instance.restart_clock();
                instance
            }
            None => match tool.sandbox.instantiate(signals.clone()).await {
                Ok(instance) => instance,
                Err(failure) => {
                    let outcome = failure_outcome(&failure);
                    let text = failure.message(&format!("Tool {}", call.name));
                    return self.fail_executing(&call, text, trace.ended(outcome));
                }
            },
        };
        let (id, name, raw_args) = (call.id.clone(), call.name.clone(), call.arguments.clone());
        let this = self.clone();
        signals.on_progress(move |partial: PartialResult| {
            this.emit_executing(Event::ToolExecutionUpdate {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: raw_args.clone(),
                partial_result: partial,
            })
        });
        let context = self.session.call_context(&call.id, &tool);
        let active_before = self.session.tools.current();
        let guard = tool.sandbox.guard();
        let watch = watch_git(guard.clone()).await;
        let outcome = instance
            .execute(&call.name, context, &args.to_string())
            .await;
        signals.settle();
        let added = newly_active(&active_before, &self.session.tools.current());
        drop(instance); // Free the pool slot before the hooks run.
        let reverted = match (guard, watch) {
            (Some(guard), Some(watch)) => settle_git(guard, watch, &signals).await,
            _ => Vec::new(),
        };
        trace.used = signals.usage.used();
        let (mut result, mut is_error) = match outcome {
            Ok(Ok(result)) if let Err(text) = check_structured(&tool, &call.name, &result) => {
                (ToolResult::error(text), true)
            }
            Ok(Ok(mut result)) => {
                for name in added {
                    if !result.added_tool_names.contains(&name) {
                        result.added_tool_names.push(name);
                    }
                }
                (result, false)
            }
            Ok(Err(thrown)) => (ToolResult::error(thrown), true),
            Err(failure) => {
                trace.ended = failure_outcome(&failure);
                let text = failure.message(&format!("Tool {}", call.name));
                (ToolResult::error(text), true)
            }
        };
        if !reverted.is_empty() {
            // Said to the model beside the tool's own text, so that it
            // knows its change did not stay.
            let text = reverted.iter().map(Reverted::sentence).collect::<Vec<_>>();
            result.content.push(ContentBlock::Text {
                text: text.join("\n"),
            });
        }

        for hook in &self.session.hooks {
            let ctx = AfterToolCallContext {
                assistant_message: self.message.clone(),
                tool_call: call.clone(),
                args: args.clone(),
                result,
                is_error,
                cancel: self.cancel.clone(),
            };
            let outcome = hook.after(&ctx).await;
            (result, is_error) = (ctx.result, ctx.is_error);
            match outcome {
                AfterOutcome::Patch(Some(patch)) => patch.apply(&mut result, &mut is_error),
                AfterOutcome::Patch(None) => {}
                AfterOutcome::Throw(thrown) => {
                    result = ToolResult::error(thrown);
                    is_error = true;
                }
                AfterOutcome::Report { extension, error } => {
                    self.emit_executing(Event::ExtensionError {
                        extension,
                        event: "tool_result".into(),
                        tool_call_id: call.id.clone(),
                        error,
                    })
                }
            }
        }
        let finished = Finished {
            call,
            result,
            is_error,
            trace,
        };
        self.emit_executing(Self::end_event(&finished));
        finished
    }
}

/// Start watching a call under `guard` (off the runtime: the first survey
/// walks the roots).
async fn watch_git(guard: Option<Arc<GitGuard>>) -> Option<git_guard::Watch> {
    let guard = guard?;
    tokio::task::spawn_blocking(move || guard.watch())
        .await
        .ok()
}

/// After a call under `guard`: wait until every process it started is gone,
/// then undo what it changed that would make git run code (recorded for the
/// audit log too).
async fn settle_git(
    guard: Arc<GitGuard>,
    watch: git_guard::Watch,
    signals: &CallSignals,
) -> Vec<Reverted> {
    let limit = STOP_GRACE + Duration::from_secs(5);
    signals.spawned.all_gone(limit).await;
    let reverted = tokio::task::spawn_blocking(move || guard.settle(watch))
        .await
        .unwrap_or_default();
    for undone in &reverted {
        signals
            .usage
            .note(Use::Reverted, &undone.path.display().to_string());
    }
    reverted
}

/// A host-decided error result of `call`.
pub(crate) fn failed(
    call: &ToolCall,
    text: impl Into<String>,
    terminate: bool,
    trace: Trace,
) -> Finished {
    let mut result = ToolResult::error(text);
    result.terminate = terminate;
    Finished {
        call: call.clone(),
        result,
        is_error: true,
        trace,
    }
}

/// Tools that became active while a call ran, when none was deactivated (Pi's
/// session wrapper, spec §3.1): a call that replaced the set added nothing.
fn newly_active(before: &[String], after: &[String]) -> Vec<String> {
    if before.iter().any(|name| !after.contains(name)) {
        return Vec::new();
    }
    after
        .iter()
        .filter(|name| !before.contains(name))
        .cloned()
        .collect()
}

/// A result's structured content against its tool's output schema: a tool
/// that declares one must return structured content that matches it.
fn check_structured(tool: &RegisteredTool, name: &str, result: &ToolResult) -> Result<(), String> {
    let Some(schema) = &tool.output else {
        return Ok(());
    };
    match &result.structured_content {
        None => Err(format!(
            "Tool {name} returned no structured content, but its output schema requires it"
        )),
        Some(value) => schema.check(value).map_err(|violations| {
            format!(
                "Tool {name} returned structured content that does not match its output \
                 schema: {violations}"
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::newly_active;

    #[test]
    fn added_names_follow_pis_rule() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(newly_active(&s(&["a"]), &s(&["a", "b"])), s(&["b"]));
        assert!(
            newly_active(&s(&["a"]), &s(&["b"])).is_empty(),
            "a was removed"
        );
        assert!(newly_active(&s(&["a"]), &s(&["a"])).is_empty());
    }
}

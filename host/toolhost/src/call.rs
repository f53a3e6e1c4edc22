//! One tool call's way through the host (spec §2.2, §2.3, §2.6):
//!
//! lookup in the active set → prepare-arguments (in the call's fresh
//! instance) → validate and coerce → before hooks → (scheduled) → execute
//! (in the same instance) with progress and cancellation → after hooks.
//!
//! Every failure on the way becomes an error result bound to the call's id,
//! with Pi's texts; nothing escapes as a panic or a host error. When the
//! call's events go out, its place in the file-mutation order, and what its
//! result becomes are its batch's ([`crate::batch`]): a call reaches its
//! batch only through [`Scope`].

use crate::audit::Outcome;
use crate::component::{CallFailure, CallInstance, CallSignals};
use crate::events::Event;
use crate::hooks::{AfterOutcome, AfterToolCallContext, BeforeToolCallContext};
use crate::message::{
    AssistantMessage, ContentBlock, PartialResult, ToolCall, ToolResult, ToolResultMessage,
};
use crate::ops::fs::Turn;
use crate::ops::process::STOP_GRACE;
use crate::ops::protect::guard::{self as git_guard, GitGuard, Reverted};
use crate::ops::usage::{Usage, Use, Used};
use crate::permissions::ask::CallAsking;
use crate::permissions::{Asker, Need};
use crate::registry::RegisteredTool;
use crate::session::Session;
use crate::tape::{CallTape, Serving};
use crate::validate;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

pub use crate::message::OPERATION_ABORTED;

/// What a call needs of the batch it belongs to.
pub(crate) trait Scope: Send + Sync + 'static {
    fn session(&self) -> &Session;
    /// The message whose calls the batch runs.
    fn message(&self) -> &Arc<AssistantMessage>;
    fn cancel(&self) -> &CancellationToken;
    /// The tool `call` names, from the registry as it is now.
    fn lookup(&self, call: &ToolCall) -> Option<Arc<RegisteredTool>>;
    /// The person to ask, when the front end has one.
    fn asker(&self) -> Option<&Arc<Asker>>;
    /// The person's client, when the front end has one.
    fn client(&self) -> Option<&Arc<dyn crate::ops::client::Client>>;
    /// The processes of the front end's session.
    fn processes(&self) -> &Arc<crate::ops::process::session::SessionProcesses>;
    /// Call `i`'s place in the order of file mutations (once).
    fn take_turn(&self, i: usize) -> Option<Turn>;
    /// An event of an executing call (its progress, a hook's report).
    fn emit_executing(&self, event: Event);
    /// The call whose tool made these calls through the host (`None`: the
    /// model made them).
    fn parent(&self) -> Option<&str> {
        None
    }
    /// How many calls through the host lead to these (0: the model's).
    fn depth(&self) -> usize {
        0
    }
}

/// A call that has its final result.
#[derive(Clone, Debug)]
pub(crate) struct Finished {
    call: ToolCall,
    result: ToolResult,
    is_error: bool,
    trace: Trace,
}

impl Finished {
    /// Its `tool_execution_end` event.
    pub(crate) fn end_event(&self) -> Event {
        Event::ToolExecutionEnd {
            tool_call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            result: self.result.clone(),
            is_error: self.is_error,
        }
    }

    /// Write its line to `session`'s audit log, if there is one, and its
    /// end to its tape, if it has one.
    pub(crate) fn audit(&self, session: &Session) {
        if let Some(tape) = &self.trace.tape {
            tape.end(&self.result, self.is_error);
        }
        let Some(log) = &session.audit_log else {
            return;
        };
        let trace = &self.trace;
        let error = self
            .is_error
            .then(|| crate::audit::error_summary(&self.result.text()));
        log.record(&crate::audit::Entry {
            time: crate::audit::timestamp(trace.started),
            session: session.settings.session_id.clone(),
            tool_call_id: self.call.id.clone(),
            parent_tool_call_id: trace.parent.clone(),
            tool: self.call.name.clone(),
            component: trace.component.as_deref().map(str::to_string),
            arguments: crate::audit::redact::redact(&self.call.arguments),
            used: trace.used.clone(),
            outcome: trace.outcome(self.is_error),
            error,
            duration_ms: trace.duration_ms(),
        });
    }

    /// Its tape, when the session records or replays.
    pub(crate) fn tape(&self) -> Option<&Arc<CallTape>> {
        self.trace.tape.as_ref()
    }

    /// How it ended, as the audit log says.
    pub(crate) fn outcome(&self) -> Outcome {
        self.trace.outcome(self.is_error)
    }

    /// Its result message, and whether its result asks the loop to stop.
    pub(crate) fn into_message(self) -> (ToolResultMessage, bool) {
        let terminate = self.result.terminate;
        let message = ToolResultMessage::from_result(&self.call, self.result, self.is_error);
        (message, terminate)
    }
}

/// What the audit log learns of a call besides its result.
#[derive(Clone, Debug)]
struct Trace {
    started: SystemTime,
    clock: Instant,
    /// The digest of the component that served it, once looked up.
    component: Option<Arc<str>>,
    /// How it ended, before the after hooks (see [`Trace::outcome`]).
    ended: Outcome,
    used: Used,
    /// The call that made it through the host, for a nested call.
    parent: Option<String>,
    /// Its tape, when the session records or replays.
    tape: Option<Arc<CallTape>>,
}

impl Trace {
    fn begin() -> Trace {
        Trace {
            started: SystemTime::now(),
            clock: Instant::now(),
            component: None,
            ended: Outcome::Ok,
            used: Used::default(),
            parent: None,
            tape: None,
        }
    }

    fn ended(mut self, outcome: Outcome) -> Trace {
        self.ended = outcome;
        self
    }

    /// How the call ended, given its final error flag (an after hook may
    /// have turned a result into an error, or back).
    fn outcome(&self, is_error: bool) -> Outcome {
        match (is_error, self.ended) {
            (false, _) => Outcome::Ok,
            (true, Outcome::Ok) => Outcome::Error,
            (true, ended) => ended,
        }
    }

    fn duration_ms(&self) -> f64 {
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

/// A preflight outcome that ends the call with a host-decided error.
fn done(call: &ToolCall, text: impl Into<String>, terminate: bool, trace: Trace) -> Preflight {
    Preflight::Done(Box::new(failed_with(call, text, terminate, trace)))
}

/// A call whose instance failed while it was prepared.
fn broke(call: &ToolCall, failure: &CallFailure, trace: Trace) -> Preflight {
    let text = failure.message(&format!("Tool {}", call.name));
    done(call, text, false, trace.ended(failure_outcome(failure)))
}

/// A call that noticed the abort before it ran (§7.6).
fn aborted(call: &ToolCall, trace: Trace) -> Preflight {
    done(
        call,
        OPERATION_ABORTED,
        false,
        trace.ended(Outcome::Cancelled),
    )
}

/// Everything before execution of call `i` of `scope`'s message; emits
/// nothing.
pub(crate) async fn prepare(scope: &dyn Scope, i: usize) -> Preflight {
    let message = scope.message();
    let call = &message.tool_calls[i];
    // Its turn, kept only if its tool can lock a file at all: the calls
    // after it never wait for one that cannot.
    let turn = scope.take_turn(i);
    let cancel = scope.cancel();
    let session = scope.session();
    let mut trace = Trace::begin();
    trace.parent = scope.parent().map(str::to_string);
    if cancel.is_cancelled() {
        // §7.6: after an abort every call still gets its result.
        return aborted(call, trace);
    }
    let Some(tool) = scope.lookup(call) else {
        let text = format!("Tool {} not found", call.name);
        return done(call, text, false, trace.ended(Outcome::NotFound));
    };
    trace.component = Some(tool.digest.clone());
    let name = &call.name;
    let usage = match session.audit_log {
        Some(_) => Usage::recording(),
        None => Usage::default(),
    };
    let signals = CallSignals::with_usage(
        cancel.clone(),
        session.settings.cancel_grace,
        usage,
        turn.filter(|_| tool.sandbox.may_lock_files()),
    );
    if let Some(deck) = &session.deck {
        let tape = deck.begin(Serving {
            call,
            digest: &tool.digest,
            source: tool.source.to_string(),
            parent: scope.parent(),
        });
        let _ = signals.tape.set(tape.clone());
        trace.tape = Some(tape);
    }
    // One fresh instance serves the whole call: prepare-arguments, then
    // execute. A second instance for execute would double what a call
    // costs (one trivial call: 25 → 15 µs) and put an instantiation in
    // the serial part of a parallel batch (all calls are prepared in
    // order before any runs). Both functions see only this call's
    // arguments, so sharing the instance shares nothing between calls.
    let mut instance = match tool.sandbox.instantiate(signals.clone()).await {
        Ok(instance) => instance,
        Err(failure) => return broke(call, &failure, trace),
    };
    let prepared = instance
        .prepare_arguments(&tool.guest_name, &call.arguments.to_string())
        .await;
    // Holding the instance until execution holds a pool slot; when the
    // pool runs low it is dropped now and execute gets a fresh one, so a
    // batch larger than the pool cannot wait on itself.
    let instance = tool.sandbox.may_hold_instance().then_some(instance);
    // §7.4: the prepared arguments are validated and executed; the stored
    // call (events, messages) keeps what the model sent.
    let prepared = match prepared {
        Err(failure) => return broke(call, &failure, trace),
        Ok(Err(thrown)) => {
            return done(call, thrown, false, trace.ended(Outcome::Invalid));
        }
        Ok(Ok(None)) => call.arguments.clone(),
        Ok(Ok(Some(text))) => match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(e) => {
                let text = format!("Tool {name} prepared arguments that are not valid JSON: {e}");
                return done(call, text, false, trace.ended(Outcome::Invalid));
            }
        },
    };
    let args = match tool
        .schema
        .coerce_and_validate_as(&prepared, session.settings.pi)
    {
        Ok(args) => args,
        Err(issues) => {
            let text = validate::failure_text(name, &issues, &prepared);
            return done(call, text, false, trace.ended(Outcome::Invalid));
        }
    };

    let mut ctx = BeforeToolCallContext {
        assistant_message: message.clone(),
        tool_call: call.clone(),
        args,
        cancel: cancel.clone(),
    };
    for hook in &session.hooks {
        match hook.before(&mut ctx).await {
            // A hook that throws blocks the call (fail closed).
            Err(thrown) => {
                return done(call, thrown, false, trace.ended(Outcome::Blocked));
            }
            Ok(verdict) => {
                if cancel.is_cancelled() {
                    return aborted(call, trace);
                }
                if let Some(v) = verdict.filter(|v| v.block) {
                    let reason = v
                        .reason
                        .unwrap_or_else(|| "Tool execution was blocked".to_string());
                    return done(call, reason, v.terminate, trace.ended(Outcome::Blocked));
                }
            }
        }
    }
    if cancel.is_cancelled() {
        return aborted(call, trace);
    }
    // The rules see the arguments the call will run with (after the
    // hooks); a `deny` or `ask` rule that names the call decides here, and
    // what it needs beyond its grants is decided where it is used.
    let rules = &session.permissions;
    if !rules.is_inert() {
        let asking = Arc::new(CallAsking::new(
            rules.clone(),
            scope.asker().cloned(),
            session.always_file.clone(),
            name,
            &call.id,
            tool.source.to_string(),
            &tool.digest,
            ctx.args.clone(),
            session.protected.clone(),
        ));
        let _ = signals.asking.set(asking.clone());
        if rules.speak_of(name) {
            let need = match ctx.args.get("command").and_then(Value::as_str) {
                Some(line) if tool.sandbox.runs_shell() => Need::Command {
                    line: line.to_string(),
                },
                _ => Need::Call,
            };
            if let Err(text) = asking.check_call(need, cancel, &signals.usage).await {
                trace.used = signals.usage.used();
                return done(call, text, false, trace.ended(Outcome::Blocked));
            }
        }
        // A shell command without the network (`--no-network`) may get it
        // from the `network(…)` rules or the person.
        if let Some(line) = ctx.args.get("command").and_then(Value::as_str)
            && tool.sandbox.runs_shell()
            && !tool.sandbox.programs_have_network()
            && rules.speak_of("network")
            && let Err(text) = asking.check_network(line, cancel, &signals.usage).await
        {
            trace.used = signals.usage.used();
            return done(call, text, false, trace.ended(Outcome::Blocked));
        }
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

/// Execute a prepared call and run the after hooks; its updates go to
/// `scope` as they come, its end is the caller's to emit.
pub(crate) async fn execute(scope: Arc<dyn Scope>, ready: ReadyCall) -> Finished {
    let ReadyCall {
        call,
        tool,
        args,
        signals,
        instance,
        mut trace,
    } = ready;
    if scope.cancel().is_cancelled() {
        return failed_with(
            &call,
            OPERATION_ABORTED,
            false,
            trace.ended(Outcome::Cancelled),
        );
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
                return failed_with(&call, text, false, trace.ended(outcome));
            }
        },
    };
    let raw_args = call.arguments.clone();
    let logs = scope.clone();
    let (id, name) = (call.id.clone(), call.name.clone());
    signals.on_log(move |level, logger, message| {
        logs.emit_executing(Event::ToolExecutionLog {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            level,
            logger,
            message,
        })
    });
    let _ = signals.processes.set(scope.processes().clone());
    if let Some(granted) = tool.sandbox.callable_tools() {
        let nesting = Nesting {
            depth: scope.depth(),
            scope: scope.clone(),
            parent_id: call.id.clone(),
            caller: call.name.clone(),
            granted,
            usage: signals.usage.clone(),
            calls: Default::default(),
        };
        let _ = signals.nested.set(Arc::new(nesting));
    }
    if let Some(client) = scope.client() {
        let _ = signals
            .client
            .set(Arc::new(crate::ops::client::CallClient::new(
                client.clone(),
                call.name.clone(),
            )));
    }
    let (id, name) = (call.id.clone(), call.name.clone());
    let updates = scope.clone();
    signals.on_progress(move |partial: PartialResult| {
        updates.emit_executing(Event::ToolExecutionUpdate {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            args: raw_args.clone(),
            partial_result: partial,
        })
    });
    let session = scope.session();
    let mut context = session.call_context(&call.id, &tool);
    if let Some(tape) = signals.tape.get() {
        // Replayed, the call sees the machine it was recorded on.
        context = tape.context(context, |c| c.cwd.clone());
    }
    let active_before = session.tools.current();
    let guard = tool.sandbox.guard();
    let watch = watch_git(guard.clone()).await;
    let outcome = instance
        .execute(&tool.guest_name, context, &args.to_string())
        .await;
    signals.settle();
    let added = newly_active(&active_before, &session.tools.current());
    drop(instance); // Free the pool slot before the hooks run.
    let reverted = match (guard, watch) {
        (Some(guard), Some(watch)) => settle_git(guard, watch, &signals).await,
        _ => Vec::new(),
    };
    // And what a remote workspace's guard put back there.
    let mut said: Vec<String> = reverted.iter().map(Reverted::sentence).collect();
    for undone in signals.spawned.take_undone() {
        signals.usage.note(Use::Reverted, &undone.path);
        said.push(undone.sentence);
    }
    trace.used = signals.usage.used();
    let (mut result, mut is_error) = match outcome {
        // A returned error (Pi 1.x's `isError`) keeps its details; no output
        // schema speaks for an error.
        Ok(Ok((result, true))) => (result, true),
        Ok(Ok((result, false))) if let Err(text) = check_structured(&tool, &call.name, &result) => {
            (ToolResult::error(text), true)
        }
        Ok(Ok((mut result, false))) => {
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
    if !said.is_empty() {
        // Said to the model beside the tool's own text, so that it
        // knows its change did not stay.
        result.content.push(ContentBlock::Text {
            text: said.join("\n"),
        });
    }

    for hook in &session.hooks {
        let ctx = AfterToolCallContext {
            assistant_message: scope.message().clone(),
            tool_call: call.clone(),
            args: args.clone(),
            result,
            is_error,
            cancel: scope.cancel().clone(),
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
                scope.emit_executing(Event::ExtensionError {
                    extension,
                    event: "tool_result".into(),
                    tool_call_id: call.id.clone(),
                    error,
                })
            }
        }
    }
    Finished {
        call,
        result,
        is_error,
        trace,
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

/// A host-decided error result of `call`, which ended as `outcome` (not
/// run, crashed) outside its own way through the host.
pub(crate) fn failed(
    call: &ToolCall,
    text: impl Into<String>,
    terminate: bool,
    outcome: Outcome,
) -> Finished {
    failed_with(call, text, terminate, Trace::begin().ended(outcome))
}

/// A host-decided error result of `call`, traced as `trace`.
fn failed_with(
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

// ---------------------------------------------------------------------------
// Nested calls: a tool calls other tools through the host (`call-tools`)
// ---------------------------------------------------------------------------

/// How deep calls may nest: a tool's call of a tool that calls a tool …
pub(crate) const MAX_NESTING: usize = 8;

/// What a call granted `call-tools` is lent: each of its nested calls runs
/// through [`prepare`] and [`execute`] in a [`Nested`] scope, as the
/// model's call of that tool would (its validation, the hooks, the rules,
/// the called tool's own grants), and is audited on its own line naming
/// this call. The caller's time limit keeps running while it waits: what
/// it cannot do in its time it cannot do by delegating either.
struct Nesting {
    scope: Arc<dyn Scope>,
    /// The calling call's id and its tool's name.
    parent_id: String,
    caller: String,
    /// The names its grant gives (`*`: every tool the model may call).
    granted: Arc<[String]>,
    /// The calling call's record: each nested call is listed in it.
    usage: Usage,
    /// How deep the calling call is (0: the model made it).
    depth: usize,
    calls: std::sync::atomic::AtomicU32,
}

impl Nesting {
    fn grants(&self, name: &str) -> bool {
        self.granted.iter().any(|g| g == "*" || g == name)
    }

    /// The refusal of a call its grant does not name, or too deep.
    fn refusal(&self, name: &str) -> Option<String> {
        let caller = &self.caller;
        if self.depth >= MAX_NESTING {
            return Some(format!(
                "Tool {caller} may not call {name}: tool calls nest at most {MAX_NESTING} deep"
            ));
        }
        (!self.grants(name)).then(|| {
            format!(
                "Tool {caller} may not call {name}: its grant names {} (call-tools in toolhost.toml)",
                self.granted.join(", ")
            )
        })
    }

    async fn run(&self, name: String, arguments: String) -> crate::ops::nested::NestedResult {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let id = format!("{}/{n}", self.parent_id);
        // Arguments that are not a JSON object are the model's mistake in
        // Pi's words: they are validated as given.
        let arguments =
            serde_json::from_str(&arguments).unwrap_or_else(|_| Value::String(arguments.clone()));
        let call = ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments,
        };
        self.usage.note(Use::Called, &format!("{name} {id}"));
        let session = self.scope.session();
        let finished = match self.refusal(&name) {
            Some(text) => {
                let mut trace = Trace::begin().ended(Outcome::Blocked);
                trace.parent = Some(self.parent_id.clone());
                failed_with(&call, text, false, trace)
            }
            None => {
                let nested = Arc::new(Nested {
                    parent: self.scope.clone(),
                    parent_id: self.parent_id.clone(),
                    depth: self.depth + 1,
                    message: Arc::new(AssistantMessage {
                        raw: serde_json::json!({
                            "role": "assistant",
                            "content": [{"type": "toolCall", "id": id, "name": name,
                                         "arguments": call.arguments}],
                        }),
                        tool_calls: vec![call],
                        stop_reason: crate::message::StopReason::ToolUse,
                    }),
                });
                match prepare(nested.as_ref(), 0).await {
                    Preflight::Done(finished) => *finished,
                    Preflight::Ready(ready) => execute(nested, *ready).await,
                }
            }
        };
        finished.audit(session);
        crate::ops::nested::NestedResult {
            tool_call_id: id,
            is_error: finished.is_error,
            result: finished.result,
        }
    }
}

impl crate::ops::nested::NestedCalls for Nesting {
    fn callable(&self) -> Vec<String> {
        let registry = self.scope.session().registry();
        let mut names = registry.callable_names();
        names.retain(|name| self.grants(name));
        names
    }

    fn execute(
        &self,
        name: String,
        arguments: String,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = crate::ops::nested::NestedResult> + Send + '_>,
    > {
        Box::pin(self.run(name, arguments))
    }
}

/// The scope of one nested call: its caller's batch, session and person,
/// a message of its own (the one call), no place in the order of file
/// mutations (its caller is already running), and the tools other tools
/// may call (active, or exposed as callable; never model-only or hidden).
struct Nested {
    parent: Arc<dyn Scope>,
    parent_id: String,
    depth: usize,
    message: Arc<AssistantMessage>,
}

impl Scope for Nested {
    fn session(&self) -> &Session {
        self.parent.session()
    }

    fn message(&self) -> &Arc<AssistantMessage> {
        &self.message
    }

    fn cancel(&self) -> &CancellationToken {
        self.parent.cancel()
    }

    fn lookup(&self, call: &ToolCall) -> Option<Arc<RegisteredTool>> {
        self.session().registry().get_callable(&call.name)
    }

    fn asker(&self) -> Option<&Arc<Asker>> {
        self.parent.asker()
    }

    fn client(&self) -> Option<&Arc<dyn crate::ops::client::Client>> {
        self.parent.client()
    }

    fn processes(&self) -> &Arc<crate::ops::process::session::SessionProcesses> {
        self.parent.processes()
    }

    fn take_turn(&self, _: usize) -> Option<Turn> {
        None
    }

    /// A nested call's progress and reports reach no front end: its
    /// result is its caller's to report (as in Pi), its audit line the
    /// record.
    fn emit_executing(&self, _: Event) {}

    fn parent(&self) -> Option<&str> {
        Some(&self.parent_id)
    }

    fn depth(&self) -> usize {
        self.depth
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

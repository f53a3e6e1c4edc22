//! Pi's batch semantics, in one place (spec §1.4, §2.1, §2.3, §2.4, §2.7
//! with §7.6): which calls run and how (the sequential rule), the order of
//! the events ([`events`]: every start in source order, the gate that holds
//! back what running calls emit, each end as its call finishes), the result
//! messages in source order and the termination vote, and each call's place
//! in the per-file mutation queue (its turn, taken when the batch arrives;
//! the queue itself is `crate::ops::fs::lock`).
//!
//! A call's own way through the host (lookup, prepare, validate, hooks,
//! execute) is `crate::call`'s; it sees its batch only through
//! [`call::Scope`].
//!
//! Parallel (the default, [`parallel`]): every call is prepared in source
//! order (start events, immediate outcomes emit their end at once), then all
//! prepared calls run concurrently, each emitting its end when it finishes
//! (completion order); the result messages follow in source order.
//! Sequential (one sequential tool in the batch, or the host configured so):
//! each call runs to its result message before the next starts.

mod events;
mod parallel;

use crate::audit::Outcome;
use crate::call::{self, Finished, Preflight, Scope};
use crate::events::{Event, EventSink};
use crate::message::{AssistantMessage, StopReason, ToolCall, ToolResultMessage};
use crate::ops::client::Client;
use crate::ops::fs::{Turn, TurnSlot};
use crate::ops::process::session::SessionProcesses;
use crate::permissions::Asker;
use crate::registry::{ExecutionMode, RegisteredTool};
use crate::session::Session;
use events::{Gate, Settled};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The result messages of a batch, in source order, and the terminate vote.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOutcome {
    pub results: Vec<ToolResultMessage>,
    /// True when at least one call finished and every result asked to stop.
    pub terminate: bool,
    /// How each call ended, in the order of `results` (the audit log's
    /// outcome: a tool that crashed is `Crashed`, not only an error).
    pub outcomes: Vec<crate::audit::Outcome>,
}

/// Which tools the calls of a batch may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The active tools, as the model sees them.
    Active,
    /// Any loaded tool (a call the embedder makes by name).
    AnyLoaded,
}

/// Where a batch's events go and who it asks: the front end it came from.
pub(crate) struct Front {
    pub cancel: CancellationToken,
    pub sink: Arc<dyn EventSink>,
    /// The person behind the front end, if it has one to ask (else the
    /// session's, [`Session::asker`]).
    pub asker: Option<Arc<Asker>>,
    /// The person's client, if the front end has one.
    pub client: Option<Arc<dyn Client>>,
    /// The processes of the front end's session, if it keeps its own (else
    /// the host's, [`Session::processes`]).
    pub processes: Option<Arc<SessionProcesses>>,
}

/// Run `message`'s calls in `session`, their events to `front`'s sink;
/// `turns`, when the batch arrived before it runs, are its calls' places in
/// the order of file mutations, one per call (else they are taken now).
pub(crate) async fn run(
    session: Arc<Session>,
    message: Arc<AssistantMessage>,
    front: Front,
    turns: Option<Vec<Turn>>,
    reach: Reach,
) -> BatchOutcome {
    let Front {
        cancel,
        sink,
        asker,
        client,
        processes,
    } = front;
    let processes = processes.unwrap_or_else(|| session.processes.clone());
    let asker = asker.or_else(|| session.asker.clone());
    let client = client.or_else(|| session.client.clone());
    let calls = message.tool_calls.len();
    let turns = match turns {
        Some(turns) => {
            assert_eq!(turns.len(), calls, "turns taken for another batch");
            turns
        }
        None => session.mutations.take(calls),
    };
    let batch = Arc::new(Batch {
        session,
        message,
        cancel,
        sink,
        asker,
        client,
        processes,
        any_tool: reach == Reach::AnyLoaded,
        gate: Gate::default(),
        turns: turns
            .into_iter()
            .map(|turn| TurnSlot::new(Some(turn)))
            .collect(),
        outcomes: Default::default(),
    });
    batch.run().await
}

/// What every call of one batch shares.
struct Batch {
    session: Arc<Session>,
    message: Arc<AssistantMessage>,
    cancel: CancellationToken,
    sink: Arc<dyn EventSink>,
    asker: Option<Arc<Asker>>,
    client: Option<Arc<dyn Client>>,
    processes: Arc<SessionProcesses>,
    /// Calls may name any loaded tool, not only the active ones (a call the
    /// embedder makes by name, [`crate::Host::call`]).
    any_tool: bool,
    /// Holds back what executing calls emit while the batch is still being
    /// prepared ([`events`]).
    gate: Gate,
    /// Each call's place in the order of file mutations, taken when the
    /// batch arrived (see `crate::ops::fs::lock`).
    turns: Vec<TurnSlot>,
    /// How each appended call ended, in the order appended.
    outcomes: std::sync::Mutex<Vec<Outcome>>,
}

impl Scope for Batch {
    fn session(&self) -> &Session {
        &self.session
    }

    fn message(&self) -> &Arc<AssistantMessage> {
        &self.message
    }

    fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    fn lookup(&self, call: &ToolCall) -> Option<Arc<RegisteredTool>> {
        let registry = self.session.registry();
        if self.any_tool {
            registry.get(&call.name)
        } else {
            registry.get_active(&call.name)
        }
    }

    fn asker(&self) -> Option<&Arc<Asker>> {
        self.asker.as_ref()
    }

    fn client(&self) -> Option<&Arc<dyn Client>> {
        self.client.as_ref()
    }

    fn processes(&self) -> &Arc<SessionProcesses> {
        &self.processes
    }

    fn take_turn(&self, i: usize) -> Option<Turn> {
        self.turns[i].take()
    }

    fn emit_executing(&self, event: Event) {
        self.gate.emit(self.sink.as_ref(), event);
    }
}

impl Batch {
    async fn run(self: &Arc<Self>) -> BatchOutcome {
        let calls = &self.message.tool_calls;
        let settled: Vec<Settled> = match self.message.stop_reason {
            // The provider failed or was aborted: no call runs (spec §2.1).
            StopReason::Error | StopReason::Aborted => Vec::new(),
            StopReason::Length => {
                // Nothing is prepared, validated, hooked or run; never
                // terminates.
                let results = calls
                    .iter()
                    .map(|call| {
                        self.start(call);
                        let text = length_text(&call.name);
                        let finished = call::failed(call, text, false, Outcome::NotRun);
                        self.end(&finished);
                        self.append(self.settle(finished))
                    })
                    .collect();
                return BatchOutcome {
                    results,
                    terminate: false,
                    outcomes: self.take_outcomes(),
                };
            }
            StopReason::ToolUse | StopReason::Stop if self.is_sequential() => {
                return self.sequential().await;
            }
            StopReason::ToolUse | StopReason::Stop => parallel::run(self).await,
        };
        let terminate = terminates(settled.iter().map(|s| s.terminate));
        BatchOutcome {
            results: settled.into_iter().map(|s| self.append(s)).collect(),
            terminate,
            outcomes: self.take_outcomes(),
        }
    }

    /// The outcomes of the calls appended so far, in order.
    fn take_outcomes(&self) -> Vec<Outcome> {
        std::mem::take(&mut *self.outcomes.lock().expect("outcomes lock"))
    }

    /// Sequential if the host says so or any call names a sequential tool.
    fn is_sequential(&self) -> bool {
        if self.session.settings.sequential {
            return true;
        }
        self.message.tool_calls.iter().any(|call| {
            self.lookup(call)
                .is_some_and(|t| t.definition.execution_mode == ExecutionMode::Sequential)
        })
    }

    /// Each call to its result message before the next starts.
    async fn sequential(self: &Arc<Self>) -> BatchOutcome {
        let mut results = Vec::new();
        let mut votes = Vec::new();
        for (i, call) in self.message.tool_calls.iter().enumerate() {
            self.start(call);
            let finished = match self.preflight(i).await {
                Preflight::Done(f) => *f,
                Preflight::Ready(ready) => self.execute(*ready).await,
            };
            let settled = self.settle(finished);
            votes.push(settled.terminate);
            results.push(self.append(settled));
        }
        BatchOutcome {
            terminate: terminates(votes),
            results,
            outcomes: self.take_outcomes(),
        }
    }

    /// Everything before execution of call `i`, whose start event has gone
    /// out; the end of a call that ends here goes out now.
    async fn preflight(&self, i: usize) -> Preflight {
        let prepared = call::prepare(self, i).await;
        if let Preflight::Done(finished) = &prepared {
            self.end(finished);
        }
        prepared
    }

    /// Execute a prepared call; its end goes out through the gate.
    async fn execute(self: &Arc<Self>, ready: call::ReadyCall) -> Finished {
        let finished = call::execute(self.clone(), ready).await;
        if let Some(tape) = finished.tape() {
            // A replayed call ends in its recorded turn.
            tape.turn_to_end().await;
            tape.ending();
        }
        self.emit_executing(finished.end_event());
        finished
    }
}

/// Pi's text for calls of a message cut off by the output token limit.
fn length_text(name: &str) -> String {
    format!(
        "Tool call \"{name}\" was not executed: the response hit the output token limit, \
         so its arguments may be truncated. Re-issue the tool call with complete arguments."
    )
}

/// True when at least one call finished and every one asked to stop.
fn terminates(votes: impl IntoIterator<Item = bool>) -> bool {
    let mut votes = votes.into_iter().peekable();
    votes.peek().is_some() && votes.all(|stop| stop)
}

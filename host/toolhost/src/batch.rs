//! The batch scheduler (spec §2.3, §2.4, §2.7 with §7.6).
//!
//! Parallel (the default): every call is prepared in source order (start
//! events, immediate outcomes emit their end at once), then all prepared calls
//! run concurrently, each emitting its end when it finishes (completion
//! order); the result messages follow in source order. Without before hooks
//! a prepared call starts executing while the next ones are prepared; what
//! it emits waits until every call has started, so the events are Pi's. Sequential (one
//! sequential tool in the batch, or the host configured so): each call runs
//! to its result message before the next starts.

use crate::audit::Outcome;
use crate::call::{BatchContext, Finished, Preflight, ReadyCall, Trace};
use crate::message::{StopReason, ToolResultMessage};
use crate::registry::ExecutionMode;
use futures::FutureExt;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The result messages of a batch, in source order, and the terminate vote.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOutcome {
    pub results: Vec<ToolResultMessage>,
    /// True when at least one call finished and every result asked to stop.
    pub terminate: bool,
}

/// Pi's text for calls of a message cut off by the output token limit.
fn length_text(name: &str) -> String {
    format!(
        "Tool call \"{name}\" was not executed: the response hit the output token limit, \
         so its arguments may be truncated. Re-issue the tool call with complete arguments."
    )
}

pub(crate) async fn run(ctx: Arc<BatchContext>) -> BatchOutcome {
    let calls = &ctx.message.tool_calls;
    let finished: Vec<Finished> = match ctx.message.stop_reason {
        // The provider failed or was aborted: no call runs (spec §2.1).
        StopReason::Error | StopReason::Aborted => Vec::new(),
        StopReason::Length => {
            // Nothing is prepared, validated, hooked or run; never terminates.
            let results = calls
                .iter()
                .map(|call| {
                    ctx.start(call);
                    let trace = Trace::begin().ended(Outcome::NotRun);
                    ctx.message(&ctx.fail(call, length_text(&call.name), false, trace))
                })
                .collect();
            return BatchOutcome {
                results,
                terminate: false,
            };
        }
        StopReason::ToolUse | StopReason::Stop => {
            if is_sequential(&ctx) {
                return sequential(&ctx).await;
            }
            parallel(&ctx).await
        }
    };
    BatchOutcome {
        results: finished.iter().map(|f| ctx.message(f)).collect(),
        terminate: terminates(&finished),
    }
}

/// Sequential if the host says so or any call names a sequential tool.
fn is_sequential(ctx: &BatchContext) -> bool {
    if ctx.session.settings.sequential {
        return true;
    }
    let registry = ctx.session.registry.read().expect("registry lock");
    ctx.message.tool_calls.iter().any(|call| {
        registry
            .get_active(&call.name)
            .is_some_and(|t| t.definition.execution_mode == ExecutionMode::Sequential)
    })
}

async fn sequential(ctx: &Arc<BatchContext>) -> BatchOutcome {
    let mut results = Vec::new();
    let mut finished = Vec::new();
    for call in &ctx.message.tool_calls {
        ctx.start(call);
        let f = match ctx.preflight(call).await {
            Preflight::Done(f) => *f,
            Preflight::Ready(ready) => ctx.execute(*ready).await,
        };
        results.push(ctx.message(&f));
        finished.push(f);
    }
    BatchOutcome {
        terminate: terminates(&finished),
        results,
    }
}

/// Prepared calls waiting for a worker, in source order.
type Queue = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<(usize, Box<ReadyCall>)>>>;

async fn parallel(ctx: &Arc<BatchContext>) -> Vec<Finished> {
    let calls = &ctx.message.tool_calls;
    let mut slots: Vec<Option<Finished>> = vec![None; calls.len()];
    // Preparing runs in source order on this task while calls prepared
    // first already execute on the other workers: Pi's order is in the
    // events, which the gate keeps (every start before any update or end of
    // an executing call), not in when the work happens. No overlap when the
    // order could be seen otherwise: with before hooks (Pi runs the hook of
    // call N+1 before call N executes, and a hook may look, or change the
    // active tools a later call is looked up in), or when a tool of the batch
    // may change the active tools itself.
    let overlap = calls.len() > 1
        && ctx.session.hooks.is_empty()
        && !calls.iter().any(|call| {
            ctx.lookup(call)
                .is_some_and(|t| t.sandbox.may_change_tools())
        });
    let (tx, rx) = mpsc::unbounded_channel();
    let queue: Queue = Arc::new(tokio::sync::Mutex::new(rx));
    // One worker per runtime thread (this task is one of them), each running
    // the calls it takes concurrently: a call waiting on a process or a file
    // never holds up the rest, and a call that only computes runs to its end
    // on the core that prepared it or took it. Measured on 2 cores (scripts/
    // bench batch, 64 `read` calls): a task per call 4.4 ms, calls dealt to
    // one share per worker after preparing all 3.2 ms.
    let helpers: Vec<_> = (1..cores().min(calls.len()))
        .map(|_| {
            let (ctx, queue) = (ctx.clone(), queue.clone());
            tokio::spawn(async move { worker(&ctx, &queue).await })
        })
        .collect();
    if overlap {
        ctx.gate.close();
    }
    let mut held = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        ctx.start(call);
        match ctx.preflight(call).await {
            Preflight::Done(f) => slots[i] = Some(*f),
            Preflight::Ready(r) if overlap => {
                let _ = tx.send((i, r));
            }
            Preflight::Ready(r) => held.push((i, r)),
        }
    }
    for ready in held {
        let _ = tx.send(ready);
    }
    drop(tx);
    ctx.gate.open(ctx.sink.as_ref());
    for (i, f) in worker(ctx, &queue).await {
        slots[i] = Some(f);
    }
    for helper in helpers {
        // `worker` binds every call's panic to that call's result.
        let done = helper.await.expect("a batch worker does not panic");
        for (i, f) in done {
            slots[i] = Some(f);
        }
    }
    slots.into_iter().flatten().collect()
}

/// Threads to spread a batch's calls over: the runtime's workers (one on a
/// current-thread runtime, where other tasks would run on the same thread).
/// Asked of the runtime: `available_parallelism` reads cgroup files, which
/// cost more than a trivial call.
fn cores() -> usize {
    tokio::runtime::Handle::try_current().map_or(1, |rt| rt.metrics().num_workers().max(1))
}

/// Take prepared calls from `queue` and run them until it is closed and
/// empty. A new call is taken only when every call this worker runs waits
/// (on a process, a file, a timer or its epoch yield), so calls that only
/// compute are spread over the workers instead of piling up on the first
/// to ask.
async fn worker(ctx: &Arc<BatchContext>, queue: &Queue) -> Vec<(usize, Finished)> {
    let mut running = FuturesUnordered::new();
    let mut done = Vec::new();
    let mut open = true;
    loop {
        if running.is_empty() {
            if !open {
                return done;
            }
            match queue.lock().await.recv().await {
                Some((i, ready)) => running.push(run_one(ctx, i, ready)),
                None => open = false,
            }
            continue;
        }
        tokio::select! {
            biased;
            Some(finished) = running.next() => done.push(finished),
            next = async { queue.lock().await.recv().await }, if open => match next {
                Some((i, ready)) => running.push(run_one(ctx, i, ready)),
                None => open = false,
            },
        }
    }
}

/// Run one prepared call; a call that panics ends in an error result of its
/// own, and the others go on.
async fn run_one(ctx: &Arc<BatchContext>, i: usize, ready: Box<ReadyCall>) -> (usize, Finished) {
    let outcome = std::panic::AssertUnwindSafe(ctx.execute(*ready))
        .catch_unwind()
        .await;
    let finished = outcome.unwrap_or_else(|_| {
        let call = &ctx.message.tool_calls[i];
        let text = format!(
            "Tool {} failed: the host task running it panicked",
            call.name
        );
        ctx.fail(call, text, false, Trace::begin().ended(Outcome::Crashed))
    });
    (i, finished)
}

fn terminates(finished: &[Finished]) -> bool {
    !finished.is_empty() && finished.iter().all(|f| f.result.terminate)
}

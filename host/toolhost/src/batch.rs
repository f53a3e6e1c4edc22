//! The batch scheduler (spec §2.3, §2.4, §2.7 with §7.6).
//!
//! Parallel (the default): every call is prepared in source order (start
//! events, immediate outcomes emit their end at once), then all prepared calls
//! run concurrently, each emitting its end when it finishes (completion
//! order); the result messages follow in source order. Sequential (one
//! sequential tool in the batch, or the host configured so): each call runs
//! to its result message before the next starts.

use crate::call::{BatchContext, Finished, Preflight, ReadyCall};
use crate::message::{StopReason, ToolResultMessage};
use crate::registry::ExecutionMode;
use futures::FutureExt;
use std::sync::Arc;

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
                    ctx.message(&ctx.fail(call, length_text(&call.name), false))
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

async fn parallel(ctx: &Arc<BatchContext>) -> Vec<Finished> {
    let calls = &ctx.message.tool_calls;
    let mut slots: Vec<Option<Finished>> = vec![None; calls.len()];
    let mut ready = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        ctx.start(call);
        match ctx.preflight(call).await {
            Preflight::Done(f) => slots[i] = Some(*f),
            Preflight::Ready(r) => ready.push((i, r)),
        }
    }
    // Every call starts at once and runs concurrently with the others (a
    // call waiting on a process or a file never holds up the rest), but not
    // each in a task of its own: a call handed to another thread runs on a
    // core whose caches hold none of it, and each hand-over is a wake-up.
    // The calls are dealt round-robin into one share per worker thread; the
    // batch's own task runs the first share and a task per other share runs
    // the rest, each share's calls polled together. A guest computing
    // without end still lets its share's other calls go on: it yields at
    // every epoch tick. Measured on 2 cores (scripts/bench batch, 64 `read`
    // calls, sequential 4.7 ms): a task per call 4.4 ms, shares 3.2 ms.
    let shares = ready.len().min(cores());
    let mut dealt: Vec<Vec<(usize, Box<ReadyCall>)>> = (0..shares).map(|_| Vec::new()).collect();
    for (n, call) in ready.into_iter().enumerate() {
        dealt[n % shares].push(call);
    }
    let mut dealt = dealt.into_iter();
    let own = dealt.next().unwrap_or_default();
    let others: Vec<_> = dealt
        .map(|share| {
            let ctx = ctx.clone();
            tokio::spawn(async move { run_share(&ctx, share).await })
        })
        .collect();
    for (i, f) in run_share(ctx, own).await {
        slots[i] = Some(f);
    }
    for handle in others {
        // `run_share` binds every call's panic to that call's result.
        let share = handle.await.expect("a share's task does not panic");
        for (i, f) in share {
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

/// Run a share of prepared calls concurrently; a call that panics ends in an
/// error result of its own, and the others go on.
async fn run_share(
    ctx: &Arc<BatchContext>,
    share: Vec<(usize, Box<ReadyCall>)>,
) -> Vec<(usize, Finished)> {
    let calls = &ctx.message.tool_calls;
    let running = share.into_iter().map(|(i, r)| async move {
        let outcome = std::panic::AssertUnwindSafe(ctx.execute(*r))
            .catch_unwind()
            .await;
        let finished = outcome.unwrap_or_else(|_| {
            let call = &calls[i];
            let text = format!(
                "Tool {} failed: the host task running it panicked",
                call.name
            );
            ctx.fail(call, text, false)
        });
        (i, finished)
    });
    futures::future::join_all(running).await
}

fn terminates(finished: &[Finished]) -> bool {
    !finished.is_empty() && finished.iter().all(|f| f.result.terminate)
}

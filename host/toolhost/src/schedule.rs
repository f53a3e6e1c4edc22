//! The batch scheduler (spec §2.3, §2.4, §2.7 with §7.6).
//!
//! Parallel (the default): every call is prepared in source order (start
//! events, immediate outcomes emit their end at once), then all prepared calls
//! run concurrently, each emitting its end when it finishes (completion
//! order); the result messages follow in source order. Sequential (one
//! sequential tool in the batch, or the host configured so): each call runs
//! to its result message before the next starts.

use crate::message::{StopReason, ToolResultMessage};
use crate::pipeline::{BatchContext, Finished, Preflight};
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
    if ctx.host.sequential {
        return true;
    }
    let registry = ctx.host.registry.read().expect("registry lock");
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
    // A lone call runs in the batch's own task: a task of its own would only
    // add a hand-over between threads (a few microseconds of a trivial call).
    // A panic stays bound to the call, as it would in a task of its own.
    if let [(i, _)] = ready[..] {
        let (_, r) = ready.pop().expect("one ready call");
        let outcome = std::panic::AssertUnwindSafe(ctx.execute(*r))
            .catch_unwind()
            .await;
        slots[i] = Some(outcome.unwrap_or_else(|_| {
            let call = &calls[i];
            let text = format!("Tool {} failed: the host task running it panicked", call.name);
            ctx.fail(call, text, false)
        }));
        return slots.into_iter().flatten().collect();
    }
    // Started in source order, all at once; each its own task so that calls
    // run on every core.
    let running: Vec<_> = ready
        .into_iter()
        .map(|(i, r)| {
            let ctx = ctx.clone();
            (i, tokio::spawn(async move { ctx.execute(*r).await }))
        })
        .collect();
    for (i, handle) in running {
        slots[i] = Some(match handle.await {
            Ok(f) => f,
            Err(e) => {
                let call = &calls[i];
                let text = format!("Tool {} failed: the host task running it {e}", call.name);
                ctx.fail(call, text, false)
            }
        });
    }
    slots.into_iter().flatten().collect()
}

fn terminates(finished: &[Finished]) -> bool {
    !finished.is_empty() && finished.iter().all(|f| f.result.terminate)
}

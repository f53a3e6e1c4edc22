//! A parallel batch (spec §2.3): every call starts in source order, the
//! prepared calls run concurrently on the runtime's workers, each ends when
//! it finishes. Without before hooks (and without a tool that changes the
//! active set) nothing a call's preparation does depends on the calls
//! before it, so each worker prepares and runs calls together
//! ([`together`]); only the events keep Pi's order ([`super::events`]).

use super::Batch;
use super::events::{Announcer, Settled};
use crate::audit::Outcome;
use crate::call::{self, Preflight, ReadyCall, Scope};
use futures::FutureExt;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Prepared calls waiting for a worker, in source order.
type Queue = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<(usize, Box<ReadyCall>)>>>;

/// Run the batch's calls; their settled results in source order.
pub(super) async fn run(ctx: &Arc<Batch>) -> Vec<Settled> {
    let calls = &ctx.message.tool_calls;
    let mut slots: Vec<Option<Settled>> = (0..calls.len()).map(|_| None).collect();
    // Preparing runs in source order on this task while calls prepared
    // first already execute on the other workers: Pi's order is in the
    // events, which the gate keeps (every start before any update or end of
    // an executing call), not in when the work happens. No overlap when the
    // order could be seen otherwise: with before hooks (Pi runs the hook of
    // call N+1 before call N executes, and a hook may look, or change the
    // active tools a later call is looked up in), or when a tool of the batch
    // may change the active tools itself, or when a call may ask the
    // person before it runs (the questions come in the message's order).
    let overlap = calls.len() > 1
        && ctx.session.hooks.is_empty()
        && ctx.session.permissions.is_inert()
        && !calls.iter().any(|call| {
            ctx.lookup(call)
                .is_some_and(|t| t.sandbox.may_change_tools())
        });
    if overlap {
        return together(ctx).await;
    }
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
    let mut held = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        ctx.start(call);
        match ctx.preflight(i).await {
            Preflight::Done(f) => slots[i] = Some(ctx.settle(*f)),
            Preflight::Ready(r) => held.push((i, r)),
        }
    }
    for ready in held {
        let _ = tx.send(ready);
    }
    drop(tx);
    let mine = worker(ctx, &queue).await;
    in_order(slots, mine, helpers).await
}

/// Every worker's settled calls in source order (`slots` holds those that
/// ended before running). A worker binds every call's panic to that call's
/// result, so a worker itself never panics.
async fn in_order(
    mut slots: Vec<Option<Settled>>,
    mine: Vec<(usize, Settled)>,
    helpers: Vec<tokio::task::JoinHandle<Vec<(usize, Settled)>>>,
) -> Vec<Settled> {
    let mut place = |done: Vec<(usize, Settled)>| {
        for (i, settled) in done {
            slots[i] = Some(settled);
        }
    };
    place(mine);
    for helper in helpers {
        place(helper.await.expect("a batch worker does not panic"));
    }
    slots.into_iter().flatten().collect()
}

/// A parallel batch whose calls' preparations are independent: every
/// worker takes the next call, prepares it and runs it at once, on the core
/// whose caches hold its fresh instance (preparing every call on one core
/// first left the other idle for that long, and each call ran on cold
/// caches). The events are Pi's all the same: a call's start, and the end
/// of one that ended before running, go out when every call before it has
/// gone out ([`Announcer`]); what running calls emit waits behind the gate
/// until every call has started.
async fn together(ctx: &Arc<Batch>) -> Vec<Settled> {
    let n = ctx.message.tool_calls.len();
    let shared = Arc::new(Together {
        next: AtomicUsize::new(0),
        announcer: Mutex::new(Announcer::new(ctx, n)),
    });
    let helpers: Vec<_> = (1..cores().min(n))
        .map(|_| {
            let (ctx, shared) = (ctx.clone(), shared.clone());
            tokio::spawn(async move { together_worker(&ctx, &shared).await })
        })
        .collect();
    let mine = together_worker(ctx, &shared).await;
    in_order((0..n).map(|_| None).collect(), mine, helpers).await
}

/// What the workers of [`together`] share.
struct Together {
    /// The next call no worker has taken.
    next: AtomicUsize,
    announcer: Mutex<Announcer>,
}

impl Together {
    /// See [`Announcer::announce`].
    fn announce(&self, ctx: &Batch, i: usize, end: Option<crate::events::Event>) -> bool {
        let mut announcer = self.announcer.lock().expect("announcer lock");
        announcer.announce(ctx, i, end)
    }

    fn take(&self, n: usize) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < n).then_some(i)
    }
}

/// Take calls and prepare and run each; a new one only when every call
/// this worker runs waits (see [`worker`]).
async fn together_worker(ctx: &Arc<Batch>, shared: &Together) -> Vec<(usize, Settled)> {
    let n = ctx.message.tool_calls.len();
    let mut running = FuturesUnordered::new();
    let mut done = Vec::new();
    let mut open = true;
    loop {
        if running.is_empty() {
            match shared.take(n) {
                Some(i) => running.push(prepare_and_run(ctx, shared, i)),
                None => return done,
            }
            continue;
        }
        // Poll what runs once; take another call only when all of it waits.
        match running.next().now_or_never() {
            Some(Some(finished)) => done.push(finished),
            Some(None) => {}
            None if open => match shared.take(n) {
                Some(i) => running.push(prepare_and_run(ctx, shared, i)),
                None => open = false,
            },
            None => {
                if let Some(finished) = running.next().await {
                    done.push(finished);
                }
            }
        }
    }
}

/// Prepare call `i`, announce it, and run it; a call that panics ends in an
/// error result of its own, and the others go on.
async fn prepare_and_run(ctx: &Arc<Batch>, shared: &Together, i: usize) -> (usize, Settled) {
    let call = &ctx.message.tool_calls[i];
    let outcome = std::panic::AssertUnwindSafe(async {
        match call::prepare(ctx.as_ref(), i).await {
            Preflight::Done(f) => {
                shared.announce(ctx, i, Some(f.end_event()));
                *f
            }
            Preflight::Ready(ready) => {
                shared.announce(ctx, i, None);
                ctx.execute(*ready).await
            }
        }
    })
    .catch_unwind()
    .await;
    let finished = outcome.unwrap_or_else(|_| {
        let f = call::failed(call, panicked(call), false, Outcome::Crashed);
        let end = f.end_event();
        if !shared.announce(ctx, i, Some(end.clone())) {
            ctx.emit_executing(end);
        }
        f
    });
    (i, ctx.settle(finished))
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
async fn worker(ctx: &Arc<Batch>, queue: &Queue) -> Vec<(usize, Settled)> {
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
async fn run_one(ctx: &Arc<Batch>, i: usize, ready: Box<ReadyCall>) -> (usize, Settled) {
    let outcome = std::panic::AssertUnwindSafe(ctx.execute(*ready))
        .catch_unwind()
        .await;
    let finished = outcome.unwrap_or_else(|_| {
        let call = &ctx.message.tool_calls[i];
        let f = call::failed(call, panicked(call), false, Outcome::Crashed);
        ctx.emit_executing(f.end_event());
        f
    });
    (i, ctx.settle(finished))
}

/// The error text of a call whose host task panicked.
fn panicked(call: &crate::message::ToolCall) -> String {
    format!(
        "Tool {} failed: the host task running it panicked",
        call.name
    )
}

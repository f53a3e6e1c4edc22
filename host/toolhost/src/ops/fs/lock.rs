//! Per-file mutation locks (Pi's `withFileMutationQueue`), process-wide,
//! granted in the order of the calls that ask (spec §1.4).
//!
//! In Pi every call of a parallel batch starts in source order and queues
//! for its file before its first `await`, so a `write` and then an `edit` of
//! one file always run in that order. Here a call's tool starts in its own
//! instance, on any worker, and reaches its lock after a time that varies:
//! the edit could queue first. So each call takes a [`Turn`] when it arrives
//! (in source order within a batch; in the order requests were read over MCP
//! and `serve`), and a call's first lock waits until every call with an
//! earlier turn has queued for its own first lock, or can no longer lock
//! anything (its tool has no `fs-write`, or it ended). The locks are FIFO,
//! so the queue order is the order of the turns, whatever the workers'
//! timing. A later lock of the same call is not ordered again.

use super::{ErrorCode, FsError, fs_error};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};

/// A held per-file mutation lock; dropping it lets the next waiter in.
pub struct MutationLock {
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

/// The process-wide table of per-file locks. Each key's mutex is FIFO, so
/// waiters are served in request order; entries vanish with their last user.
fn lock_table() -> &'static Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>> {
    static TABLE: std::sync::OnceLock<Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// The mutex of `key` in the process-wide table.
fn table_entry(key: String) -> Arc<tokio::sync::Mutex<()>> {
    let mut table = lock_table().lock().expect("lock table");
    table.retain(|_, m| m.strong_count() > 0);
    match table.get(&key).and_then(Weak::upgrade) {
        Some(m) => m,
        None => {
            let m = Arc::new(tokio::sync::Mutex::new(()));
            table.insert(key, Arc::downgrade(&m));
            m
        }
    }
}

/// Wait for the lock of `key`, giving up with `cancelled` if `cancel` fires.
///
/// This is the lock the `fs-write` interface hands to tools (Pi's
/// `withFileMutationQueue`). It is public so that an embedder that changes
/// workspace files itself can queue behind, and ahead of, the agent's edits:
/// take the key from [`FsWrite::lock_key`](super::FsWrite::lock_key) of the host's backend and hold the
/// returned lock across the read-modify-write. The table is per process.
pub async fn lock_file(
    key: String,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<MutationLock, FsError> {
    lock_file_in_turn(key, cancel, None).await
}

/// [`lock_file`] for a call keeping its turn in `turn`: its first lock
/// queues only after every earlier turn has queued or settled (see the
/// module docs).
pub(crate) async fn lock_file_in_turn(
    key: String,
    cancel: &tokio_util::sync::CancellationToken,
    turn: Option<&TurnSlot>,
) -> Result<MutationLock, FsError> {
    let cancelled = || fs_error(ErrorCode::Cancelled, "the call was cancelled");
    let turn = turn.and_then(TurnSlot::take);
    if let Some(turn) = &turn {
        tokio::select! {
            () = turn.earlier_settled() => {}
            _ = cancel.cancelled() => return Err(cancelled()),
        }
    }
    let mutex = table_entry(key);
    let mut acquire = std::pin::pin!(mutex.lock_owned());
    // Polled once, the acquisition has its place in the mutex's queue: only
    // then may the next turn queue behind it.
    if let std::task::Poll::Ready(guard) = futures::poll!(acquire.as_mut()) {
        return Ok(MutationLock { _guard: guard });
    }
    drop(turn);
    tokio::select! {
        guard = acquire => Ok(MutationLock { _guard: guard }),
        _ = cancel.cancelled() => Err(cancelled()),
    }
}

/// A host's order of arriving calls (see the module docs): the turns not
/// yet settled, and the lowest of them for waiters to watch.
pub(crate) struct MutationOrder {
    state: Mutex<OrderState>,
    lowest: tokio::sync::watch::Sender<u64>,
}

struct OrderState {
    next: u64,
    pending: BTreeSet<u64>,
}

impl Default for MutationOrder {
    fn default() -> Self {
        MutationOrder {
            state: Mutex::new(OrderState {
                next: 0,
                pending: BTreeSet::new(),
            }),
            lowest: tokio::sync::watch::Sender::new(u64::MAX),
        }
    }
}

impl MutationOrder {
    /// The next `n` turns, in order.
    pub(crate) fn take(self: &Arc<Self>, n: usize) -> Vec<Turn> {
        let first = {
            let mut state = self.state.lock().expect("mutation order lock");
            let first = state.next;
            let end = first + n as u64;
            state.next = end;
            state.pending.extend(first..end);
            self.publish(&state);
            first
        };
        (first..first + n as u64)
            .map(|ticket| Turn {
                order: self.clone(),
                ticket,
            })
            .collect()
    }

    fn settle(&self, ticket: u64) {
        let mut state = self.state.lock().expect("mutation order lock");
        state.pending.remove(&ticket);
        self.publish(&state);
    }

    /// Tell the waiters the lowest pending turn (under the state's lock, so
    /// that what they see never goes back).
    fn publish(&self, state: &OrderState) {
        let lowest = state.pending.first().copied().unwrap_or(u64::MAX);
        self.lowest
            .send_if_modified(|low| std::mem::replace(low, lowest) != lowest);
    }
}

/// A call's place in its host's [`MutationOrder`]; dropping it settles it
/// (the call will queue for no lock, or already has).
pub(crate) struct Turn {
    order: Arc<MutationOrder>,
    ticket: u64,
}

impl Turn {
    /// Every earlier turn has settled.
    async fn earlier_settled(&self) {
        let mut lowest = self.order.lowest.subscribe();
        // This turn is pending, so the lowest reaches it exactly when every
        // earlier one has settled.
        let _ = lowest.wait_for(|low| *low >= self.ticket).await;
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.order.settle(self.ticket);
    }
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Turn({})", self.ticket)
    }
}

/// Where a call keeps its turn until its first lock takes it or the call
/// settles it ([`Self::settle`]).
#[derive(Debug, Default)]
pub(crate) struct TurnSlot(Mutex<Option<Turn>>);

impl TurnSlot {
    pub(crate) fn new(turn: Option<Turn>) -> TurnSlot {
        TurnSlot(Mutex::new(turn))
    }

    pub(crate) fn take(&self) -> Option<Turn> {
        self.0.lock().expect("turn lock").take()
    }

    /// The call will lock nothing more in turn: later calls stop waiting
    /// for it.
    pub(crate) fn settle(&self) {
        drop(self.take());
    }

    /// While the call still holds its turn: a future that resolves when
    /// every earlier turn has settled, so that nothing the host orders can
    /// wait on another call before this one's first lock.
    pub(crate) fn first_in_line(&self) -> Option<impl Future<Output = ()> + Send + use<>> {
        let held = self.0.lock().expect("turn lock");
        let turn = held.as_ref()?;
        let mut lowest = turn.order.lowest.subscribe();
        let ticket = turn.ticket;
        Some(async move {
            let _ = lowest.wait_for(|low| *low >= ticket).await;
        })
    }

    /// Whether the call still holds an unsettled turn.
    #[cfg(test)]
    fn is_pending(&self) -> bool {
        self.0.lock().expect("turn lock").is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn locks_serialise_one_file_and_not_others() {
        let cancel = tokio_util::sync::CancellationToken::new();
        let a = lock_file("/k/a".into(), &cancel).await.unwrap();
        let _b = lock_file("/k/b".into(), &cancel).await.unwrap();
        let waiting = tokio::spawn(async move {
            let cancel = tokio_util::sync::CancellationToken::new();
            lock_file("/k/a".into(), &cancel).await.map(|_| ())
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(a);
        waiting.await.unwrap().unwrap();
        let held = lock_file("/k/c".into(), &cancel).await.unwrap();
        let cancelled = tokio_util::sync::CancellationToken::new();
        cancelled.cancel();
        let err = lock_file("/k/c".into(), &cancelled).await.err().unwrap();
        assert_eq!(err.code, ErrorCode::Cancelled);
        drop(held);
    }

    /// Later turns reach their locks first, in reverse: the locks are still
    /// granted in turn order. A turn that settles without locking, or whose
    /// call is cancelled while it waits, holds up nobody.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn first_locks_are_granted_in_turn_order_whatever_the_timing() {
        let order = Arc::new(MutationOrder::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut turns = order.take(5);
        let silent = turns.remove(2); // a call that never locks
        let tasks: Vec<_> = turns
            .into_iter()
            .enumerate()
            .rev()
            .map(|(i, turn)| {
                let log = log.clone();
                let task = tokio::spawn(async move {
                    let slot = TurnSlot::new(Some(turn));
                    let cancel = tokio_util::sync::CancellationToken::new();
                    let lock = lock_file_in_turn("/k/ordered".into(), &cancel, Some(&slot))
                        .await
                        .unwrap();
                    log.lock().unwrap().push(i);
                    tokio::task::yield_now().await;
                    drop(lock);
                });
                (i, task)
            })
            .collect();
        // Every later call is waiting for the first; none has the lock.
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        drop(silent);
        for (_, task) in tasks {
            task.await.unwrap();
        }
        assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3]);

        // Cancelled while waiting for an earlier turn: gives up, settles.
        let mut turns = order.take(2);
        let second = TurnSlot::new(turns.pop());
        let cancel = tokio_util::sync::CancellationToken::new();
        cancel.cancel();
        let err = lock_file_in_turn("/k/x".into(), &cancel, Some(&second))
            .await
            .err()
            .unwrap();
        assert_eq!(err.code, ErrorCode::Cancelled);
        assert!(!second.is_pending());
        let first = TurnSlot::new(turns.pop());
        let never = tokio_util::sync::CancellationToken::new();
        drop(
            lock_file_in_turn("/k/x".into(), &never, Some(&first))
                .await
                .unwrap(),
        );
        assert_eq!(*order.lowest.borrow(), u64::MAX, "every turn settled");
    }
}

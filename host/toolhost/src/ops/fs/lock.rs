//! Per-file mutation locks (Pi's `withFileMutationQueue`), process-wide.

use super::{ErrorCode, FsError, fs_error};
use std::collections::HashMap;
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
    let mutex = {
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
    };
    tokio::select! {
        guard = mutex.lock_owned() => Ok(MutationLock { _guard: guard }),
        _ = cancel.cancelled() => Err(fs_error(ErrorCode::Cancelled, "the call was cancelled")),
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
}

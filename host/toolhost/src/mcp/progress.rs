//! A call's progress as `notifications/progress`: bounded while a client reads slowly,
//! with a heartbeat through a silent command.

use super::*;

/// The longest a call with a progress token goes without a progress
/// notification: one without a message is sent after this much silence.
pub const HEARTBEAT: Duration = Duration::from_secs(12);

/// Updates of one call that may wait for a slow client at once, and their
/// bytes; past either, the newest waiting one is replaced by the next.
pub(super) const QUEUED_UPDATES: usize = 16;
pub(super) const QUEUED_UPDATE_BYTES: usize = 8 << 20;

/// A call's updates waiting to be sent: bounded, so a client that reads
/// slowly gets the first and the latest of them, and the host's memory does
/// not grow with every update a tool sends.
#[derive(Default)]
pub(super) struct UpdateQueue {
    texts: std::sync::Mutex<std::collections::VecDeque<String>>,
    ready: tokio::sync::Notify,
}

impl UpdateQueue {
    pub(super) fn push(&self, text: String) {
        let mut texts = self.texts.lock().expect("update queue lock");
        let bytes: usize = texts.iter().map(String::len).sum();
        let full = texts.len() >= QUEUED_UPDATES || bytes + text.len() > QUEUED_UPDATE_BYTES;
        match texts.back_mut() {
            Some(last) if full => *last = text,
            _ => texts.push_back(text),
        }
        drop(texts);
        self.ready.notify_one();
    }

    pub(super) fn pop(&self) -> Option<String> {
        self.texts.lock().expect("update queue lock").pop_front()
    }
}

/// Forwards a call's updates as `notifications/progress`.
pub(super) struct Progress {
    pub(super) queue: Arc<UpdateQueue>,
    done: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Progress {
    pub(super) fn start(token: ProgressToken, peer: Peer<RoleServer>) -> Progress {
        let queue = Arc::new(UpdateQueue::default());
        let pending = queue.clone();
        let done = CancellationToken::new();
        let finished = done.clone();
        let task = tokio::spawn(async move {
            let mut n = 0.0;
            loop {
                let text = match pending.pop() {
                    Some(text) => Some(text),
                    None => {
                        tokio::select! {
                            biased;
                            () = pending.ready.notified() => continue,
                            () = finished.cancelled() => match pending.pop() {
                                Some(text) => Some(text),
                                None => return,
                            },
                            // A call that says nothing for a while still
                            // runs: clients that time a call out unless
                            // progress comes (Pi's resets on progress) keep
                            // waiting.
                            () = tokio::time::sleep(HEARTBEAT) => None,
                        }
                    }
                };
                // MCP wants progress to grow with every notification.
                n += 1.0;
                let param = ProgressNotificationParam::new(token.clone(), n);
                let param = match text {
                    Some(text) => param.with_message(text),
                    None => param,
                };
                if peer.notify_progress(param).await.is_err() {
                    return;
                }
            }
        });
        Progress { queue, done, task }
    }

    /// Send what is queued, then stop: called once the batch has returned,
    /// when no update can follow (the pipeline ignores updates after a call
    /// settles), so the notifications all precede the response. Ending on a
    /// signal rather than on the channel closing keeps a sender clone held
    /// anywhere from delaying the response.
    pub(super) async fn finish(self) {
        self.done.cancel();
        let _ = self.task.await;
    }
}

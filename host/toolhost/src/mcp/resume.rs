//! Resumable response streams (SEP-1699) of the handshake sessions: a call
//! outlives a dropped connection, a proxy's idle timeout, and the server
//! closing its stream on purpose.
//!
//! rmcp gives each `POST` of a session a stream of its own, whose events
//! carry ids (`INDEX/STREAM`, a priming event first). Here every such
//! stream is **recorded**: one task reads it to its end whatever happens to
//! the client's connection, keeping its events (bounded), and the client
//! reads a **follower** of the record. A `GET` with `Last-Event-ID` naming
//! a recorded stream gets a new follower from the event after it, live
//! until the response.
//!
//! * **Polling.** A follower of a client on 2025-11-25 or later ends after
//!   [`Streams::poll_after`] while the call runs (the revision says clients
//!   resume such streams): no connection is held open for the length of a
//!   long call, so no proxy's idle timeout cuts it. Every follower begins
//!   with a priming event (the id to resume from and the retry hint), so a
//!   client counts each poll as progress.
//! * **A client that went away.** The call is cancelled (as MCP asks of a
//!   client that vanished) only when no follower has been attached for
//!   [`RESUME_GRACE`]: a dropped connection that the client resumes is not
//!   a cancellation.
//! * **Bounds.** At most [`MAX_EVENT_BYTES`] of events per stream (the
//!   oldest dropped first: a resume from before them is refused) and
//!   [`MAX_STREAMS`] streams; a finished stream is kept [`KEEP_FINISHED`]
//!   for a client that resumes late, within [`MAX_FINISHED_BYTES`] for all.

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a call whose client went away waits for it to resume before
/// it is cancelled.
pub const RESUME_GRACE: Duration = Duration::from_secs(10);
/// The events kept of one stream.
pub const MAX_EVENT_BYTES: usize = 16 << 20;
/// Recorded streams kept at once; past it the oldest finished one goes.
pub const MAX_STREAMS: usize = 4096;
/// How long a finished stream stays resumable.
pub const KEEP_FINISHED: Duration = Duration::from_secs(60);
/// The events of finished streams kept at once; past it the oldest go
/// first (a busy server keeps less than [`KEEP_FINISHED`] of them).
pub const MAX_FINISHED_BYTES: usize = 64 << 20;
/// The retry hint of the priming events sent here.
pub const RETRY: Duration = Duration::from_millis(500);

/// Cancelled when the client of a request went away: its response was
/// dropped (the route's guard) or, for a recorded stream, it did not resume
/// within [`RESUME_GRACE`].
#[derive(Clone, Default)]
pub(super) struct ClientGone {
    pub token: CancellationToken,
    /// Set when a record takes over: the route's guard then does nothing.
    recorded: Arc<AtomicBool>,
}

impl ClientGone {
    /// What the route holds while the response body lives: dropping it
    /// cancels the call, unless its stream is recorded.
    pub fn guard(&self) -> GoneGuard {
        GoneGuard(self.clone())
    }
}

pub(super) struct GoneGuard(ClientGone);

impl Drop for GoneGuard {
    fn drop(&mut self) {
        if !self.0.recorded.load(Ordering::Acquire) {
            self.0.token.cancel();
        }
    }
}

/// The `ClientGone` of a request, and whether its client resumes streams
/// (2025-11-25 or later), from the HTTP request rmcp put in its extensions.
fn facts(message: &ClientJsonRpcMessage) -> (Option<ClientGone>, bool) {
    let ClientJsonRpcMessage::Request(request) = message else {
        return (None, false);
    };
    let Some(parts) = request.request.extensions().get::<http::request::Parts>() else {
        return (None, false);
    };
    let gone = parts.extensions.get::<ClientGone>().cloned();
    let resumes = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= "2025-11-25");
    (gone, resumes)
}

/// One recorded stream.
struct Record {
    state: Mutex<RecordState>,
    changed: tokio::sync::Notify,
}

#[derive(Default)]
struct RecordState {
    /// Events by their index (the first part of their id), oldest first,
    /// each with its size as sent.
    events: VecDeque<(usize, usize, ServerSseMessage)>,
    bytes: usize,
    finished: Option<Instant>,
    /// Followers reading now, and what cancels the call when none comes
    /// back in time.
    followers: usize,
    detached: u64,
    gone: Option<ClientGone>,
    /// Whether followers end after the poll interval.
    polls: bool,
}

impl Record {
    fn state(&self) -> std::sync::MutexGuard<'_, RecordState> {
        self.state.lock().expect("record lock")
    }

    fn push(&self, index: usize, event: ServerSseMessage) {
        // Sized once, as it is kept (a priming event has no message).
        let size = event
            .message
            .as_ref()
            .map_or(16, |m| serde_json::to_string(&**m).map_or(0, |s| s.len()));
        let mut state = self.state();
        state.events.push_back((index, size, event));
        state.bytes += size;
        while state.bytes > MAX_EVENT_BYTES && state.events.len() > 1 {
            if let Some((_, dropped, _)) = state.events.pop_front() {
                state.bytes -= dropped;
            }
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// The stream ended: what it holds.
    fn finish(&self) -> usize {
        let mut state = self.state();
        state.finished = Some(Instant::now());
        let bytes = state.bytes;
        drop(state);
        self.changed.notify_waiters();
        bytes
    }

    /// A follower begins reading.
    fn attach(self: &Arc<Self>) -> Attached {
        self.state().followers += 1;
        Attached(self.clone())
    }
}

/// A follower attached to its record; when the last one goes while the call
/// runs, the call is cancelled unless one comes back within the grace.
struct Attached(Arc<Record>);

impl Drop for Attached {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.followers -= 1;
        if state.followers > 0 || state.finished.is_some() {
            return;
        }
        state.detached += 1;
        let (generation, record) = (state.detached, self.0.clone());
        drop(state);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                tokio::time::sleep(RESUME_GRACE).await;
                let state = record.state();
                if state.followers == 0
                    && state.finished.is_none()
                    && state.detached == generation
                    && let Some(gone) = &state.gone
                {
                    gone.token.cancel();
                }
            });
        }
    }
}

/// A recorded stream's key: its session, and its stream id.
type Key = (SessionId, u64);

/// The recorded streams, and the finished ones in the order they finished
/// (the order they go in).
#[derive(Default)]
struct Table {
    records: HashMap<Key, Arc<Record>>,
    finished: VecDeque<(Instant, Key, usize)>,
    finished_bytes: usize,
}

impl Table {
    /// Let the oldest finished streams go while they are past
    /// [`KEEP_FINISHED`], hold more than [`MAX_FINISHED_BYTES`], or the
    /// table is full.
    fn evict(&mut self) {
        while let Some((at, _, _)) = self.finished.front() {
            let expired = at.elapsed() >= KEEP_FINISHED;
            let over = self.finished_bytes > MAX_FINISHED_BYTES;
            if !expired && !over && self.records.len() < MAX_STREAMS {
                return;
            }
            if let Some((_, key, bytes)) = self.finished.pop_front() {
                self.finished_bytes -= bytes;
                self.records.remove(&key);
            }
        }
    }
}

/// The recorded streams of a server's sessions.
pub struct Streams {
    table: Mutex<Table>,
    /// How long a follower of a client that resumes stays open while the
    /// call runs; `None`: until the response.
    pub poll_after: Option<Duration>,
}

impl Streams {
    pub fn new(poll_after: Option<Duration>) -> Streams {
        Streams {
            table: Mutex::default(),
            poll_after,
        }
    }

    /// Record the stream answering `message` in `session`, and the client's
    /// follower of it.
    pub(super) fn record<S>(
        self: &Arc<Self>,
        session: SessionId,
        message: &ClientJsonRpcMessage,
        stream: S,
    ) -> Follower
    where
        S: Stream<Item = ServerSseMessage> + Send + 'static,
    {
        let (gone, polls) = facts(message);
        if let Some(gone) = &gone {
            gone.recorded.store(true, Ordering::Release);
        }
        let record = Arc::new(Record {
            state: Mutex::new(RecordState {
                gone,
                polls,
                ..RecordState::default()
            }),
            changed: tokio::sync::Notify::new(),
        });
        let follower = self.follow(&record, None);
        let streams = Arc::downgrade(self);
        let recording = record.clone();
        tokio::spawn(async move {
            let mut stream = Box::pin(stream);
            let mut key = None;
            while let Some(event) = stream.next().await {
                let id = event.event_id.as_deref().and_then(parse_id);
                if let (None, Some((_, stream_id)), Some(streams)) = (&key, id, streams.upgrade()) {
                    key = Some((session.clone(), stream_id));
                    streams.keep((session.clone(), stream_id), recording.clone());
                }
                let index = id.map_or(0, |(index, _)| index);
                recording.push(index, event);
            }
            let bytes = recording.finish();
            if let (Some(key), Some(streams)) = (key, streams.upgrade()) {
                let mut table = streams.table();
                table.finished.push_back((Instant::now(), key, bytes));
                table.finished_bytes += bytes;
                table.evict();
            }
        });
        follower
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().expect("recorded streams lock")
    }

    fn keep(&self, key: Key, record: Arc<Record>) {
        let mut table = self.table();
        table.evict();
        table.records.insert(key, record);
    }

    /// A follower of the stream `last_event_id` names in `session`, from
    /// the event after it; `None` when it is not recorded here (or no
    /// longer holds that event).
    pub(super) fn resume(&self, session: &SessionId, last_event_id: &str) -> Option<Follower> {
        let (index, stream_id) = parse_id(last_event_id)?;
        let record = {
            let mut table = self.table();
            table.evict();
            table.records.get(&(session.clone(), stream_id)).cloned()?
        };
        let oldest = record.state().events.front().map(|(i, _, _)| *i)?;
        if index + 1 < oldest {
            return None;
        }
        Some(self.follow(&record, Some((index, last_event_id.to_string()))))
    }

    /// The sessions' records go with them.
    pub(super) fn forget(&self, session: &SessionId) {
        let mut table = self.table();
        table.records.retain(|(s, _), _| s != session);
        table.finished.retain(|(_, (s, _), _)| s != session);
        table.finished_bytes = table.finished.iter().map(|(_, _, bytes)| bytes).sum();
    }

    /// A follower of `record` after the event `after` (index and id), or
    /// from its beginning.
    fn follow(&self, record: &Arc<Record>, after: Option<(usize, String)>) -> Follower {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let attached = record.attach();
        let poll_after = self.poll_after;
        tokio::spawn(async move {
            let _attached = attached;
            let record = _attached.0.clone();
            let close_at = {
                let state = record.state();
                state
                    .polls
                    .then_some(poll_after)
                    .flatten()
                    .map(|p| Instant::now() + p)
            };
            // A resumed stream begins by priming: the id to come back to,
            // and how soon.
            let mut next = match after {
                Some((index, id)) => {
                    if tx.send(ServerSseMessage::priming(id, RETRY)).await.is_err() {
                        return;
                    }
                    index + 1
                }
                None => 0,
            };
            loop {
                let notified = record.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let (event, finished) = {
                    let state = record.state();
                    let event = state
                        .events
                        .iter()
                        .find(|(i, _, _)| *i >= next)
                        .map(|(i, _, e)| (*i, e.clone()));
                    (event, state.finished.is_some())
                };
                if let Some((index, event)) = event {
                    next = index + 1;
                    if tx.send(event).await.is_err() {
                        return;
                    }
                    continue;
                }
                if finished {
                    return;
                }
                match close_at {
                    Some(at) => {
                        tokio::select! {
                            () = &mut notified => {}
                            // The server closes the stream; the client
                            // resumes it (polling).
                            () = tokio::time::sleep_until(at.into()) => return,
                        }
                    }
                    None => notified.await,
                }
            }
        });
        Follower(rx)
    }
}

/// `INDEX/STREAM`, rmcp's event ids.
fn parse_id(id: &str) -> Option<(usize, u64)> {
    let (index, stream) = id.split_once('/')?;
    Some((index.parse().ok()?, stream.parse().ok()?))
}

/// What a client reads of a recorded stream.
pub(super) struct Follower(tokio::sync::mpsc::Receiver<ServerSseMessage>);

impl Stream for Follower {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, n: u64) -> ServerSseMessage {
        let message: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": n}}),
        )
        .unwrap();
        ServerSseMessage::new(id, message)
    }

    #[tokio::test]
    async fn a_resumed_stream_goes_on_after_the_last_event_seen_until_the_end() {
        let streams = Arc::new(Streams::new(None));
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let session: SessionId = Arc::from("s");
        let message: ClientJsonRpcMessage = serde_json::from_value(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .unwrap();
        let mut first = streams.record(session.clone(), &message, Follower(rx));
        tx.send(ServerSseMessage::priming("0/7", RETRY))
            .await
            .unwrap();
        tx.send(event("1/7", 1)).await.unwrap();
        assert_eq!(first.next().await.unwrap().event_id.as_deref(), Some("0/7"));
        assert_eq!(first.next().await.unwrap().event_id.as_deref(), Some("1/7"));
        // The client's connection drops; the call goes on.
        drop(first);
        tx.send(event("2/7", 2)).await.unwrap();
        tx.send(event("3/7", 3)).await.unwrap();
        drop(tx);
        let mut resumed = loop {
            if let Some(f) = streams.resume(&session, "1/7") {
                break f;
            }
            tokio::task::yield_now().await;
        };
        let mut ids = Vec::new();
        while let Some(e) = resumed.next().await {
            ids.push(e.event_id.unwrap());
        }
        assert_eq!(
            ids,
            ["1/7", "2/7", "3/7"],
            "a priming event, then what came after"
        );
        assert!(streams.resume(&session, "1/8").is_none(), "another stream");
        assert!(
            streams.resume(&Arc::from("t"), "1/7").is_none(),
            "another session"
        );
    }
}

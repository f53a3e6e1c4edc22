//! The MCP sessions of `toolhost mcp --http`, bounded in count and in idle
//! time.
//!
//! A client on a handshake revision (2025-11-25 and older) opens a session
//! with `initialize`, and the server keeps its state (about 80 KiB: a task,
//! channels, the handler's clone) until the client ends it with `DELETE`.
//! A client that never does, or one that opens sessions in a loop, would
//! keep every one of them: 4,000 sessions in a row were all kept. So:
//!
//! * **Count.** At most [`SessionBounds::max`] sessions at once; an
//!   `initialize` past it is refused (503, naming the bound and how to raise
//!   it) and creates nothing, while the open sessions keep working.
//! * **Idle time.** A session with no request running, no stream open and
//!   no request for [`SessionBounds::idle`] is closed; its client's next
//!   request gets `404 Session not found` and, as MCP says, it initializes
//!   again. A running call or an open stream (the `GET` stream a client holds
//!   for notifications) is activity: a long call is never cut short, and a
//!   connected client that is merely quiet keeps its session.
//!
//! rmcp's own idle timer counts only messages, so it would end a session in
//! the middle of a long call that sends no progress; it is turned off, and
//! [`BoundedSessions`] tracks activity around rmcp's [`LocalSessionManager`]
//! instead. Revision 2026-07-28 has no sessions: its requests are answered
//! statelessly and never reach this manager.
//!
//! Each request's response stream is recorded ([`super::resume`]): a client
//! whose connection dropped, or whose stream the server closed after
//! [`SessionBounds::poll_after`], resumes it with `Last-Event-ID`.

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, ServerSseMessage, SessionId, SessionManager,
};
use std::cell::Cell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How many MCP sessions a server keeps, and for how long without activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionBounds {
    /// Sessions open at once; an `initialize` past it is refused.
    pub max: usize,
    /// Time without a request, a running call or an open stream after which
    /// a session is closed.
    pub idle: Duration,
    /// How long a response stream of a client that resumes streams
    /// (2025-11-25 or later) stays open while its call runs before the
    /// server closes it and the client resumes it (SEP-1699 polling);
    /// `None`: open until the response.
    pub poll_after: Option<Duration>,
}

impl SessionBounds {
    /// 256 sessions: as many as the listener serves connections at once, so
    /// every connected client can hold one; at about 80 KiB each, at most
    /// some 20 MiB.
    pub const DEFAULT_MAX: usize = 256;
    /// Ten minutes: longer than a person's usual pause between two turns of
    /// a conversation (a client holding its notification stream open is
    /// never idle anyway), short enough that the slots of clients that
    /// vanished come back within minutes. The count, not this, bounds memory.
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(600);
    /// Five seconds: well inside any proxy's idle timeout, and a reconnect
    /// costs a client one request per interval of a long call.
    pub const DEFAULT_POLL_AFTER: Duration = Duration::from_secs(5);
}

impl Default for SessionBounds {
    fn default() -> SessionBounds {
        SessionBounds {
            max: SessionBounds::DEFAULT_MAX,
            idle: SessionBounds::DEFAULT_IDLE,
            poll_after: Some(SessionBounds::DEFAULT_POLL_AFTER),
        }
    }
}

/// Why the manager could not do what a request asked of a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError<E: std::error::Error + 'static> {
    #[error("this server already keeps {0} MCP sessions, its limit")]
    Full(usize),
    #[error("MCP session {0} is not open (closed, or idle too long)")]
    NotOpen(SessionId),
    #[error(transparent)]
    Manager(E),
}

tokio::task_local! {
    /// Set by [`BoundedSessions::create_session`] when it refuses, so that
    /// the route serving the request (the same task) answers 503 with the
    /// bound instead of rmcp's generic 500.
    pub(super) static REFUSED: Cell<bool>;
}

/// The sessions open, and those being created (counted against the bound
/// before they exist, so sessions created at once cannot pass it together).
#[derive(Default)]
struct Table {
    open: HashMap<SessionId, Activity>,
    creating: usize,
}

/// What is known of one open session.
struct Activity {
    /// Requests and streams of the session open now.
    running: usize,
    /// When the last of them ended, or the session began.
    since: Instant,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            running: 0,
            since: Instant::now(),
        }
    }
}

struct State {
    bounds: SessionBounds,
    table: Mutex<Table>,
}

impl State {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().expect("session table lock")
    }
}

/// What is told the id of a session closed.
pub type OnClose = Arc<dyn Fn(&str) + Send + Sync>;

/// A [`SessionManager`] that bounds the sessions of `inner` (see the module
/// docs). Every session `inner` holds is in the table here, from its
/// creation to its close.
pub struct BoundedSessions<M = LocalSessionManager> {
    inner: M,
    state: Arc<State>,
    /// The recorded response streams, for resumption.
    streams: Arc<super::resume::Streams>,
    /// Told the id of every session closed, whoever closed it.
    closed: Option<OnClose>,
}

impl BoundedSessions<LocalSessionManager> {
    /// rmcp's in-memory sessions, within `bounds`.
    pub fn local(bounds: SessionBounds) -> BoundedSessions<LocalSessionManager> {
        let mut inner = LocalSessionManager::default();
        // Idle time is judged here, by activity (see the module docs).
        inner.session_config.keep_alive = None;
        BoundedSessions::new(inner, bounds)
    }
}

impl<M: SessionManager> BoundedSessions<M> {
    pub fn new(inner: M, bounds: SessionBounds) -> BoundedSessions<M> {
        BoundedSessions {
            inner,
            state: Arc::new(State {
                bounds,
                table: Mutex::default(),
            }),
            streams: Arc::new(super::resume::Streams::new(bounds.poll_after)),
            closed: None,
        }
    }

    /// Tell `closed` the id of every session closed (by its client, or for
    /// being idle).
    pub fn on_close(mut self, closed: OnClose) -> Self {
        self.closed = Some(closed);
        self
    }

    fn tell_closed(&self, id: &SessionId) {
        self.streams.forget(id);
        if let Some(closed) = &self.closed {
            closed(id);
        }
    }

    pub fn bounds(&self) -> SessionBounds {
        self.state.bounds
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        self.state.table().open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Close the sessions idle past the bound, looking every quarter of the
    /// idle time (at most every 30 s), until `shutdown` or until `sessions`
    /// is dropped.
    pub fn reap_idle(sessions: &Arc<Self>, shutdown: CancellationToken) {
        let every = (sessions.state.bounds.idle / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(30));
        let weak: Weak<Self> = Arc::downgrade(sessions);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = shutdown.cancelled() => return,
                }
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                for id in sessions.take_idle() {
                    // Out of the table already: no request can start in it.
                    let _ = sessions.inner.close_session(&id).await;
                    sessions.tell_closed(&id);
                }
            }
        });
    }

    /// Remove the sessions idle past the bound from the table and return
    /// their ids; under the table's lock, so no request can begin in a
    /// session being removed.
    fn take_idle(&self) -> Vec<SessionId> {
        let idle = self.state.bounds.idle;
        let mut table = self.state.table();
        let expired: Vec<SessionId> = table
            .open
            .iter()
            .filter(|(_, a)| a.running == 0 && a.since.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            table.open.remove(id);
        }
        expired
    }

    /// `work`, a call to the inner manager, with session `id` busy while
    /// it runs; what it gave, and the session's hold for what goes on.
    async fn busy<T>(
        &self,
        id: &SessionId,
        work: impl Future<Output = Result<T, M::Error>>,
    ) -> Result<(T, Running), SessionError<M::Error>> {
        let running = self.begin(id)?;
        let done = work.await.map_err(SessionError::Manager)?;
        Ok((done, running))
    }

    /// A request or stream of session `id` begins; it ends when the guard
    /// is dropped. Refused when the session is not (or no longer) open.
    fn begin(&self, id: &SessionId) -> Result<Running, SessionError<M::Error>> {
        let mut table = self.state.table();
        let activity = table
            .open
            .get_mut(id)
            .ok_or_else(|| SessionError::NotOpen(id.clone()))?;
        activity.running += 1;
        Ok(Running {
            state: Arc::downgrade(&self.state),
            id: id.clone(),
        })
    }

    /// Count a place for a new session against the bound, or refuse.
    fn reserve(&self) -> Result<Reservation, SessionError<M::Error>> {
        let max = self.state.bounds.max;
        let mut table = self.state.table();
        if table.open.len() + table.creating >= max {
            let _ = REFUSED.try_with(|refused| refused.set(true));
            return Err(SessionError::Full(max));
        }
        table.creating += 1;
        Ok(Reservation {
            state: self.state.clone(),
            filled: false,
        })
    }
}

/// A place counted for a session being created: given back when dropped
/// unfilled (the creation failed, or its request went away).
struct Reservation {
    state: Arc<State>,
    filled: bool,
}

impl Reservation {
    fn fill(mut self, id: SessionId) {
        let mut table = self.state.table();
        table.creating -= 1;
        table.open.insert(id, Activity::new());
        self.filled = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.filled {
            self.state.table().creating -= 1;
        }
    }
}

/// One running request or open stream of a session.
struct Running {
    state: Weak<State>,
    id: SessionId,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(state) = self.state.upgrade() else {
            return;
        };
        if let Some(activity) = state.table().open.get_mut(&self.id) {
            activity.running -= 1;
            activity.since = Instant::now();
        }
    }
}

/// A session's response stream, counted as activity until it ends or its
/// client goes away (the stream is dropped either way).
struct Tracked<S> {
    stream: Pin<Box<S>>,
    _running: Running,
}

impl<S: Stream> Stream for Tracked<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.stream.as_mut().poll_next(cx)
    }
}

impl<M: SessionManager> SessionManager for BoundedSessions<M> {
    type Error = SessionError<M::Error>;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let place = self.reserve()?;
        let (id, transport) = self
            .inner
            .create_session()
            .await
            .map_err(SessionError::Manager)?;
        place.fill(id.clone());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let work = self.inner.initialize_session(id, message);
        Ok(self.busy(id, work).await?.0)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.state.table().open.contains_key(id) {
            return Ok(false);
        }
        self.inner
            .has_session(id)
            .await
            .map_err(SessionError::Manager)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.state.table().open.remove(id);
        let closed = self.inner.close_session(id).await;
        self.tell_closed(id);
        closed.map_err(SessionError::Manager)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let request = message.clone();
        let (stream, running) = self.busy(id, self.inner.create_stream(id, message)).await?;
        // Read to its end by the record, whatever becomes of the client's
        // connection; the session is busy as long as it runs.
        let tracked = Tracked {
            stream: Box::pin(stream),
            _running: running,
        };
        Ok(self.streams.record(id.clone(), &request, tracked))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        // A notification is activity for as long as it takes to deliver.
        self.busy(id, self.inner.accept_message(id, message))
            .await?;
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let (stream, running) = self
            .busy(id, self.inner.create_standalone_stream(id))
            .await?;
        Ok(Tracked {
            stream: Box::pin(stream),
            _running: running,
        })
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let running = self.begin(id)?;
        if let Some(follower) = self.streams.resume(id, &last_event_id) {
            return Ok(Tracked {
                stream: Box::pin(futures::future::Either::Left(follower)),
                _running: running,
            });
        }
        let stream = self
            .inner
            .resume(id, last_event_id)
            .await
            .map_err(SessionError::Manager)?;
        Ok(Tracked {
            stream: Box::pin(futures::future::Either::Right(stream)),
            _running: running,
        })
    }

    // `restore_session` keeps the trait's default (not supported): sessions
    // live in this process only, and a restore would go around the bound.

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(max: usize, idle: Duration) -> SessionBounds {
        SessionBounds {
            max,
            idle,
            poll_after: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sessions_created_at_once_never_pass_the_bound() {
        let sessions = Arc::new(BoundedSessions::local(bounds(4, Duration::from_secs(600))));
        let tries: Vec<_> = (0..32)
            .map(|_| {
                let sessions = sessions.clone();
                tokio::spawn(async move {
                    match sessions.create_session().await {
                        Ok(_) => true,
                        Err(SessionError::Full(4)) => false,
                        Err(e) => panic!("creating a session: {e}"),
                    }
                })
            })
            .collect();
        let mut created = 0;
        for t in tries {
            created += usize::from(t.await.unwrap());
        }
        assert_eq!((created, sessions.len()), (4, 4));
    }

    #[tokio::test]
    async fn a_session_with_a_request_running_is_not_idle() {
        let sessions = BoundedSessions::local(bounds(2, Duration::ZERO));
        let (a, _) = sessions.create_session().await.unwrap();
        let (b, _) = sessions.create_session().await.unwrap();
        let running = sessions.begin(&a).unwrap();
        assert_eq!(sessions.take_idle(), vec![b.clone()]);
        drop(running);
        assert_eq!(sessions.take_idle(), vec![a]);
        assert!(sessions.is_empty());
        assert!(matches!(sessions.begin(&b), Err(SessionError::NotOpen(_))));
        // Their places are free again.
        sessions.create_session().await.unwrap();
        sessions.create_session().await.unwrap();
        assert!(matches!(
            sessions.create_session().await,
            Err(SessionError::Full(2))
        ));
    }
}

//! Resources watched for their clients: `resources/subscribe` and a 2026-07-28
//! `subscriptions/listen` stream's `resourceSubscriptions`, each file looked at every
//! [`WATCH_INTERVAL`] by its contents, a change told whoever wrote it.

use super::McpServer;
use super::{refused, resources_off};
use rmcp::ErrorData as McpError;
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a subscribed resource is looked at.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// Most resources one session may watch at once.
pub const MAX_SUBSCRIPTIONS: usize = 256;

impl McpServer {
    /// Whether `uri` names a resource a client may watch.
    pub(super) fn watchable(&self, uri: &str) -> Result<(), McpError> {
        let host = self.served();
        if host.offers().resource(uri).is_some() {
            return Ok(());
        }
        let Some(files) = host.files() else {
            return Err(resources_off(uri));
        };
        files.path_of(uri).map(|_| ()).map_err(|r| refused(&r))
    }

    /// `resources/subscribe` of a handshake session: `uri` is watched until
    /// the session unsubscribes or goes away.
    pub(super) async fn watch_resource(
        &self,
        session: String,
        uri: String,
        peer: Peer<RoleServer>,
    ) -> Result<(), McpError> {
        self.watchable(&uri)?;
        let stop = CancellationToken::new();
        {
            let mut watched = self
                .shared
                .subscriptions
                .0
                .lock()
                .expect("subscriptions lock");
            let key = (session.clone(), uri.clone());
            if watched.contains_key(&key) {
                return Ok(());
            }
            let of_session = watched.keys().filter(|(s, _)| *s == session).count();
            if of_session >= MAX_SUBSCRIPTIONS {
                return Err(McpError::invalid_params(
                    format!(
                        "Subscribing to {uri} refused: this session watches {MAX_SUBSCRIPTIONS} \
                         resources already; unsubscribe from one first"
                    ),
                    Some(json!({ "uri": uri })),
                ));
            }
            watched.insert(key, stop.clone());
        }
        // How it is now, before the client hears that it is watched: a
        // change made right after is not missed.
        let mut watcher = Watcher::new(self.clone(), vec![uri.clone()]).await;
        let shared = std::sync::Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            loop {
                let changed = tokio::select! {
                    () = stop.cancelled() => break,
                    changed = watcher.tick() => changed,
                };
                if peer.is_transport_closed() {
                    break;
                }
                for uri in changed {
                    let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                    if peer.notify_resource_updated(param).await.is_err() {
                        break;
                    }
                }
            }
            if let Some(shared) = shared.upgrade() {
                shared
                    .subscriptions
                    .0
                    .lock()
                    .expect("subscriptions lock")
                    .remove(&(session, uri));
            }
        });
        Ok(())
    }

    pub(super) fn unwatch_resource(&self, session: &str, uri: &str) {
        let key = (session.to_string(), uri.to_string());
        let stop = self
            .shared
            .subscriptions
            .0
            .lock()
            .expect("subscriptions lock")
            .remove(&key);
        if let Some(stop) = stop {
            stop.cancel();
        }
    }

    /// The session `id` closed: nothing of it is watched any more.
    pub(super) fn forget_session(&self, session: &str) {
        let mut watched = self
            .shared
            .subscriptions
            .0
            .lock()
            .expect("subscriptions lock");
        watched.retain(|(s, _), stop| {
            if s == session {
                stop.cancel();
            }
            s != session
        });
    }

    /// Of the URIs a `subscriptions/listen` stream asks to watch, those it
    /// may watch (the acknowledgement tells the client which).
    pub(super) fn watchable_of(&self, uris: &[String]) -> Vec<String> {
        uris.iter()
            .filter(|uri| self.watchable(uri).is_ok())
            .take(MAX_SUBSCRIPTIONS)
            .cloned()
            .collect()
    }
}

/// The resources watched for each session: (session, URI) → its watcher's
/// stop.
#[derive(Default)]
pub(super) struct Subscriptions(Mutex<HashMap<(String, String), CancellationToken>>);

/// Looks at some resources every [`WATCH_INTERVAL`] and tells which
/// changed: their size, time or bytes (so an edit within the clock's
/// resolution still counts), or whether they exist.
pub(super) struct Watcher {
    server: McpServer,
    stamps: Vec<(String, Option<Stamp>)>,
}

pub(super) type Stamp = (u64, Option<i64>, blake3::Hash);

impl Watcher {
    /// Watch `uris` from how they are now.
    pub(super) async fn new(server: McpServer, uris: Vec<String>) -> Watcher {
        let mut stamps = Vec::new();
        for uri in uris {
            let stamp = server.stamp(&uri).await;
            stamps.push((uri, stamp));
        }
        Watcher { server, stamps }
    }

    /// Watch `uris` from how they were when the stream accepting them was
    /// acknowledged ([`McpServer::note_baseline`]), else from now.
    pub(super) async fn from_baseline(server: McpServer, uris: Vec<String>) -> Watcher {
        let noted = {
            let mut baselines = server.shared.baselines.lock().expect("baselines lock");
            let at = baselines.iter().position(|(noted, _)| *noted == uris);
            at.and_then(|at| baselines.remove(at))
                .map(|(_, stamps)| stamps)
        };
        match noted {
            Some(stamps) => Watcher { server, stamps },
            None => Watcher::new(server, uris).await,
        }
    }

    /// After one [`WATCH_INTERVAL`], the URIs that changed since the last
    /// look.
    pub(super) async fn tick(&mut self) -> Vec<String> {
        tokio::time::sleep(WATCH_INTERVAL).await;
        let mut changed = Vec::new();
        for (uri, stamp) in &mut self.stamps {
            let now = self.server.stamp(uri).await;
            if now != *stamp {
                *stamp = now;
                changed.push(uri.clone());
            }
        }
        changed
    }
}

/// The stamps of the resources of recently acknowledged listen streams.
pub(super) type Baselines =
    Mutex<std::collections::VecDeque<(Vec<String>, Vec<(String, Option<Stamp>)>)>>;

/// Baselines kept for streams whose `listen` has not started yet.
pub(super) const BASELINES: usize = 64;

impl McpServer {
    /// What tells a change of `uri` (an offered resource never changes).
    pub(super) async fn stamp(&self, uri: &str) -> Option<Stamp> {
        let (server, uri) = (self.clone(), uri.to_string());
        tokio::task::spawn_blocking(move || server.stamp_now(&uri))
            .await
            .ok()
            .flatten()
    }

    pub(super) fn stamp_now(&self, uri: &str) -> Option<Stamp> {
        let host = self.served();
        if host.offers().resource(uri).is_some() {
            return None;
        }
        host.files()?.stamp(uri)
    }

    /// Note how `uris` are as a listen stream that watches them is
    /// acknowledged: rmcp sends the acknowledgement before the stream's
    /// task starts, and a change the client makes right after it must not
    /// be taken for the state to compare with.
    pub(super) fn note_baseline(&self, uris: &[String]) {
        let stamps = uris
            .iter()
            .map(|uri| (uri.clone(), self.stamp_now(uri)))
            .collect();
        let mut baselines = self.shared.baselines.lock().expect("baselines lock");
        if baselines.len() >= BASELINES {
            baselines.pop_front();
        }
        baselines.push_back((uris.to_vec(), stamps));
    }
}

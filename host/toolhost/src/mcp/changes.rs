//! What the server follows while it runs: the host's changes and the extension files
//! (reloaded with [`super::Reload`]), told to every client as `list_changed`, and the
//! ends of session processes.

use super::*;

impl McpServer {
    /// The `subscriptions/listen` stream of `context` (see `ServerHandler::listen`).
    pub(super) async fn listen_for_changes(
        &self,
        context: SubscriptionContext,
    ) -> Result<(), McpError> {
        let mut generations = self.generations();
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let mut watcher = watching::Watcher::from_baseline(self.clone(), uris).await;
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = generations.changed() => {
                    if changed.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
                changed = watcher.tick() => {
                    for uri in changed {
                        if context.sink().notify_resource_updated(uri).await.is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }

    /// Start the one task that follows the host's changes and the extension
    /// files (once per server, on the runtime of its first client).
    pub(super) fn start_watching(&self) {
        self.shared.watching.get_or_init(|| {
            // Subscribed now, not when the task first runs: a change made
            // before that (a loaded machine may run it late) is not missed.
            let changes = self.host().changes();
            tokio::spawn(self.clone().downgrade().watch_changes(changes))
        });
    }

    pub(super) fn downgrade(self) -> WeakServer {
        WeakServer(Arc::downgrade(&self.shared))
    }

    /// A receiver marked changed whenever the tool list changed.
    pub(super) fn generations(&self) -> watch::Receiver<u64> {
        self.shared.generation.subscribe()
    }
}

/// The watcher's handle on the server: it must not keep it alive.
pub(super) struct WeakServer(std::sync::Weak<Shared>);

impl WeakServer {
    pub(super) fn get(&self) -> Option<McpServer> {
        self.0.upgrade().map(|shared| McpServer { shared })
    }

    /// Bump the generation whenever the active tools change and, with
    /// [`Reload`], when the extension files change and reloading them
    /// changes the tool list.
    pub(super) async fn watch_changes(self, mut changes: watch::Receiver<u64>) {
        let Some(server) = self.get() else { return };
        let mut watcher = server
            .shared
            .reload
            .as_ref()
            .map(|r| Watcher::new(r.watch.clone(), r.interval));
        drop(server);
        loop {
            let reloaded = tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The host went away without a replacement: nothing more to watch.
                        return;
                    }
                    false
                }
                () = async {
                    match watcher.as_mut() {
                        Some(w) => w.changed().await,
                        None => std::future::pending().await,
                    }
                } => true,
            };
            let Some(server) = self.get() else { return };
            if reloaded {
                let Some(reload) = server.shared.reload.clone() else {
                    continue;
                };
                let before = server.listing();
                match (reload.factory)().await {
                    Ok(host) => {
                        for d in host.diagnostics() {
                            server.log_line(&format!("warning: {d}"));
                        }
                        changes = host.changes();
                        let served = Served::of(host, &server.shared.log);
                        *server.shared.host.write().expect("host lock") = served;
                    }
                    Err(e) => {
                        server.log_line(&format!(
                            "reloading the tools failed, keeping the old ones: {}",
                            e.chain()
                        ));
                        continue;
                    }
                }
                // Same definitions: the new components serve the next calls,
                // and clients need not list again.
                if server.listing() == before {
                    continue;
                }
                server.log_line("the tools changed; notifying the clients");
            }
            server.shared.generation.send_modify(|g| *g += 1);
        }
    }
}

/// Send `notifications/tools/list_changed` to one handshake session for
/// every change, until it goes away.
/// Tell the session `key`'s client each end of its processes, as a log
/// message (`notice`, logger `toolhost`) if it asked for such messages;
/// until its processes are gone or the server is.
#[allow(deprecated)]
pub(super) async fn tell_exits(
    shared: std::sync::Weak<Shared>,
    key: String,
    peer: Peer<RoleServer>,
    mut exits: tokio::sync::broadcast::Receiver<crate::ops::process::session::ProcessInfo>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let level = rmcp::model::LoggingLevel::Notice;
    loop {
        let info = match exits.recv().await {
            Ok(info) => info,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if !shared.log_levels.wants(&key, level) {
            continue;
        }
        let params = rmcp::model::LoggingMessageNotificationParam::new(level, json!(info.ended()))
            .with_logger("toolhost");
        if peer.notify_logging_message(params).await.is_err() {
            return;
        }
    }
}

pub(super) async fn notify_session(mut generations: watch::Receiver<u64>, peer: Peer<RoleServer>) {
    while generations.changed().await.is_ok() {
        if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
            return;
        }
    }
}

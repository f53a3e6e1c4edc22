//! A tool's log messages to the client: the level each session asked for
//! (`logging/setLevel`), and the messages sent in order ([`ToolLogs`]).

use super::*;

/// The `logging/setLevel` of each recent session (by the key its askers
/// have; the most recent [`SESSIONS`] kept). A session that set none is sent
/// no log message. (Logging is deprecated from 2026-07-28 on, SEP-2577; the
/// 2025-11-25 revision has it.)
#[derive(Default)]
#[allow(deprecated)]
pub(in crate::mcp) struct LogLevels(PerSession<rmcp::model::LoggingLevel>);

/// A level's severity, least first.
#[allow(deprecated)]
pub(in crate::mcp) fn severity(level: rmcp::model::LoggingLevel) -> u8 {
    use rmcp::model::LoggingLevel as L;
    match level {
        L::Debug => 0,
        L::Info => 1,
        L::Notice => 2,
        L::Warning => 3,
        L::Error => 4,
        L::Critical => 5,
        L::Alert => 6,
        L::Emergency => 7,
    }
}

#[allow(deprecated)]
impl LogLevels {
    pub(in crate::mcp) fn set(
        &self,
        context: &RequestContext<RoleServer>,
        level: rmcp::model::LoggingLevel,
    ) {
        self.0.set(session_key(context), level);
    }

    /// The least severe level the client of `context` wants: the
    /// request's own (`_meta`, 2026-07-28), else its session's
    /// `logging/setLevel`; none when it asked for no messages.
    pub(in crate::mcp) fn wanted(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<rmcp::model::LoggingLevel> {
        context
            .meta
            .log_level()
            .or_else(|| self.0.get(&session_key(context)))
    }

    /// Whether the session `key` asked for messages as severe as `level`.
    pub(in crate::mcp) fn wants(&self, key: &str, level: rmcp::model::LoggingLevel) -> bool {
        self.0
            .get(key)
            .is_some_and(|wanted| severity(level) >= severity(wanted))
    }

    /// Send `text` at `level` to the session of `context`, if it asked for
    /// messages that severe.
    pub(in crate::mcp) async fn send(
        &self,
        context: &RequestContext<RoleServer>,
        level: rmcp::model::LoggingLevel,
        text: &str,
    ) {
        if self
            .wanted(context)
            .is_some_and(|wanted| severity(level) >= severity(wanted))
        {
            let params = rmcp::model::LoggingMessageNotificationParam::new(level, json!(text))
                .with_logger("toolhost");
            let _ = context.peer.notify_logging_message(params).await;
        }
    }
}

/// Where a tool's log messages go: their level, logger and text.
#[allow(deprecated)]
pub(in crate::mcp) type LogSender =
    tokio::sync::mpsc::UnboundedSender<(rmcp::model::LoggingLevel, String, String)>;

/// A tool's log messages on their way to the client: one task sends them
/// in order, those at or above the level it wants.
#[allow(deprecated)]
pub(in crate::mcp) struct ToolLogs {
    sender: LogSender,
    done: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

#[allow(deprecated)]
impl ToolLogs {
    pub(in crate::mcp) fn start(
        peer: Peer<RoleServer>,
        wanted: rmcp::model::LoggingLevel,
    ) -> ToolLogs {
        let (sender, mut receiver) =
            tokio::sync::mpsc::unbounded_channel::<(rmcp::model::LoggingLevel, String, String)>();
        let done = CancellationToken::new();
        let finished = done.clone();
        let task = tokio::spawn(async move {
            loop {
                let next = tokio::select! {
                    biased;
                    next = receiver.recv() => next,
                    () = finished.cancelled() => receiver.try_recv().ok(),
                };
                let Some((level, logger, text)) = next else {
                    return;
                };
                if severity(level) < severity(wanted) {
                    continue;
                }
                let params = rmcp::model::LoggingMessageNotificationParam::new(level, json!(text))
                    .with_logger(logger);
                if peer.notify_logging_message(params).await.is_err() {
                    return;
                }
            }
        });
        ToolLogs { sender, done, task }
    }

    /// A sender of the tool's messages: its level, its logger, its text.
    pub(in crate::mcp) fn sender(&self) -> LogSender {
        self.sender.clone()
    }

    /// Send what is queued, then stop (before the call's response).
    pub(in crate::mcp) async fn finish(self) {
        self.done.cancel();
        let _ = self.task.await;
    }
}

//! The audit lines of a session's processes: their ends, and what the git
//! guard undid of what they changed (`crate::ops::process::session` tells
//! them through its `ProcessRecord`).

use super::{AuditLog, Entry, Outcome, timestamp};
use crate::ops::process::ExitStatus;
use crate::ops::process::session::{ProcessInfo, State};
use std::sync::Arc;
use std::time::SystemTime;

/// A session's process ends in the audit log, with the session's id.
#[derive(Clone)]
pub(crate) struct ProcessAudit {
    pub log: Arc<AuditLog>,
    pub session: Option<String>,
}

impl crate::ops::process::session::ProcessRecord for ProcessAudit {
    /// What the git guard undid of what the processes `ids` changed.
    fn reverted(&self, ids: &[u32], reverted: &[crate::ops::protect::guard::Reverted]) {
        if reverted.is_empty() {
            return;
        }
        let used = crate::ops::usage::Used {
            reverted: reverted.iter().map(|r| r.sentence()).collect(),
            ..Default::default()
        };
        let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
        self.log.record(&Entry {
            time: timestamp(SystemTime::now()),
            session: self.session.clone(),
            tool_call_id: format!("process-{}", ids.join(",")),
            parent_tool_call_id: None,
            tool: "session-process".into(),
            component: None,
            arguments: serde_json::json!({"running": ids}),
            used,
            outcome: Outcome::Ok,
            error: None,
            duration_ms: 0.0,
        });
    }

    /// One line for the end of `info` (its start, writes and stop are in the
    /// lines of the calls that made them).
    fn ended(&self, info: &ProcessInfo) {
        let (outcome, error) = match &info.state {
            State::Exited(ExitStatus::Code(0)) => (Outcome::Ok, None),
            State::Exited(ExitStatus::Code(code)) => {
                (Outcome::Error, Some(format!("exited with code {code}")))
            }
            State::Exited(ExitStatus::Signal(signal)) => {
                (Outcome::Error, Some(format!("killed by {signal}")))
            }
            State::Exited(ExitStatus::LimitExceeded(text)) => (Outcome::Error, Some(text.clone())),
            State::Exited(ExitStatus::Cancelled | ExitStatus::TimedOut(_)) | State::Running => {
                (Outcome::Cancelled, Some("stopped".to_string()))
            }
        };
        self.log.record(&Entry {
            time: timestamp(info.started),
            session: self.session.clone(),
            tool_call_id: format!("process-{}", info.id),
            parent_tool_call_id: None,
            tool: "session-process".into(),
            component: None,
            arguments: serde_json::json!({"id": info.id, "command": info.command}),
            used: Default::default(),
            outcome,
            error,
            duration_ms: info.age.as_secs_f64() * 1000.0,
        });
    }
}

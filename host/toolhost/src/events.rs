//! Events of a batch, in Pi's names and order (spec §2.3), and where they go.

use crate::message::{PartialResult, ToolResult, ToolResultMessage};
use serde::Serialize;
use serde_json::Value;

/// One event of a batch. On the wire: `{"type":"tool_execution_start",…}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    /// A call begins; `args` are the arguments the model sent.
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    /// A running call reported progress.
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: PartialResult,
    },
    /// A running call's log message (a tool of `toolhost:tool@0.3.0`
    /// imports `logging`). Not a Pi event; MCP clients get it as
    /// `notifications/message`.
    ToolExecutionLog {
        tool_call_id: String,
        tool_name: String,
        level: crate::ops::client::LogLevel,
        #[serde(skip_serializing_if = "Option::is_none")]
        logger: Option<String>,
        message: String,
    },
    /// A call finished (in parallel mode: in completion order).
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResult,
        is_error: bool,
    },
    /// A result message is appended (in source order).
    MessageStart {
        message: ToolResultMessage,
    },
    MessageEnd {
        message: ToolResultMessage,
    },
    /// A hook component failed on `event` (`tool_result`); the result was
    /// left as it was. Not a Pi event: Pi reports these in its interface.
    ExtensionError {
        extension: String,
        event: String,
        tool_call_id: String,
        error: String,
    },
}

/// Receives the events of a batch as they happen. Called from the tasks that
/// run the calls, so implementations must be cheap and thread-safe.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}

impl<F: Fn(Event) + Send + Sync> EventSink for F {
    fn emit(&self, event: Event) {
        self(event)
    }
}

impl EventSink for tokio::sync::mpsc::UnboundedSender<Event> {
    fn emit(&self, event: Event) {
        // A receiver that went away no longer wants events.
        let _ = self.send(event);
    }
}

/// Discards every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: Event) {}
}

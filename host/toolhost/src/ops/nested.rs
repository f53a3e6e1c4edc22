//! The `call-tools` Operations: a tool calls other tools through the host
//! (Pi 1.x's `ctx.executeTool`). The Operations only name what a call
//! needs; the pipeline that runs a nested call is the host's
//! (`crate::call`), lent to a call that may make them.

use crate::message::ToolResult;
use std::future::Future;
use std::pin::Pin;

/// A nested call's outcome, whatever it was: an unknown, ungranted,
/// invalid or blocked call is an error result like any other.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NestedResult {
    /// `{parent id}/{n}`.
    pub tool_call_id: String,
    pub result: ToolResult,
    pub is_error: bool,
}

/// What a call that may call tools can ask of the host.
pub trait NestedCalls: Send + Sync {
    /// The tools it may call now, in the active set's order.
    fn callable(&self) -> Vec<String>;
    /// Run tool `name` with `arguments` (JSON text) through the pipeline.
    fn execute(
        &self,
        name: String,
        arguments: String,
    ) -> Pin<Box<dyn Future<Output = NestedResult> + Send + '_>>;
}

//! Before/after hooks around every executed call (spec §2.6), for embedders.
//!
//! Hooks run in registration order. A before hook may block the call (with a
//! reason, and ask the loop to terminate) or rewrite its validated arguments,
//! which then run without re-validation. An after hook may replace the
//! result's content, details, error flag, usage or terminate flag, each
//! wholesale. A failing before hook blocks the call with its message (fail
//! closed); a failing after hook turns the result into an error with its
//! message, as Pi does.

use crate::message::{AssistantMessage, ContentBlock, ToolCall, ToolResult};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a before hook sees.
#[derive(Clone, Debug)]
pub struct BeforeToolCallContext {
    pub assistant_message: Arc<AssistantMessage>,
    /// The call as the model sent it.
    pub tool_call: ToolCall,
    /// The validated, coerced arguments; changes here are what executes.
    pub args: Value,
    pub cancel: CancellationToken,
}

/// A before hook's verdict; `None` from the hook lets the call run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BeforeToolCallResult {
    pub block: bool,
    /// The error text of a blocked call (default `Tool execution was blocked`).
    pub reason: Option<String>,
    /// With `block`: ask the loop to stop after this batch.
    pub terminate: bool,
}

/// What an after hook sees.
#[derive(Clone, Debug)]
pub struct AfterToolCallContext {
    pub assistant_message: Arc<AssistantMessage>,
    pub tool_call: ToolCall,
    pub args: Value,
    pub result: ToolResult,
    pub is_error: bool,
    pub cancel: CancellationToken,
}

/// Replacements an after hook asks for; `None` keeps the current value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterToolCallResult {
    pub content: Option<Vec<ContentBlock>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
    pub usage: Option<Value>,
    pub terminate: Option<bool>,
}

/// Hooks an embedder registers on a [`crate::HostBuilder`]. Both methods
/// default to doing nothing. An `Err` is the hook throwing.
pub trait ToolHooks: Send + Sync {
    fn before_tool_call<'a>(
        &'a self,
        _ctx: &'a mut BeforeToolCallContext,
    ) -> BoxFuture<'a, Result<Option<BeforeToolCallResult>, String>> {
        Box::pin(async { Ok(None) })
    }

    fn after_tool_call<'a>(
        &'a self,
        _ctx: &'a AfterToolCallContext,
    ) -> BoxFuture<'a, Result<Option<AfterToolCallResult>, String>> {
        Box::pin(async { Ok(None) })
    }
}

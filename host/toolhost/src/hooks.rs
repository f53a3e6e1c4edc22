//! Before/after hooks around every executed call (spec §2.6): the embedder's
//! Rust hooks ([`ToolHooks`]), then hook components in load order.
//!
//! Hooks run in registration order. A before hook may block the call (with a
//! reason, and ask the loop to terminate) or rewrite its validated arguments,
//! which then run without re-validation. An after hook may replace the
//! result's content, details, error flag, usage or terminate flag, each
//! wholesale. A failing before hook blocks the call with its message (fail
//! closed); a failing after hook turns the result into an error with its
//! message, as Pi does.

use crate::component::{CallSignals, Sandbox, content_from_wit};
use crate::message::{AssistantMessage, ContentBlock, ToolCall, ToolResult};
use crate::wit::v0_1::hook_world::hook;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
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

/// A hook component (an extension exporting `toolhost:tool/hook`). Each event
/// runs in a fresh sandboxed instance under the extension's grants and limits.
/// Its `tool_call` failures block the call (fail closed); its `tool_result`
/// failures leave the result as it was and are reported (spec §7.5).
pub(crate) struct ComponentHook {
    pub name: String,
    sandbox: Arc<Sandbox>,
}

/// What a hook component decided about a call.
pub(crate) enum CallVerdict {
    Continue,
    Block { reason: String, terminate: bool },
}

impl ComponentHook {
    pub(crate) fn new(name: &str, sandbox: Arc<Sandbox>) -> ComponentHook {
        ComponentHook {
            name: name.to_string(),
            sandbox,
        }
    }

    fn subject(&self) -> String {
        format!("Hook {}", self.name)
    }

    /// `tool_call`: may block, or rewrite `args` in place.
    pub(crate) async fn tool_call(
        &self,
        call: &ToolCall,
        args: &mut Value,
        cancel: &CancellationToken,
    ) -> CallVerdict {
        let block = |reason: String| CallVerdict::Block {
            reason,
            terminate: false,
        };
        let signals = CallSignals::new(cancel.clone(), Duration::ZERO);
        let mut instance = match self.sandbox.instantiate(signals).await {
            Ok(instance) => instance,
            Err(failure) => return block(failure.message(&self.subject())),
        };
        let event = hook::ToolCallEvent {
            tool_name: call.name.clone(),
            tool_call_id: call.id.clone(),
            input: args.to_string(),
        };
        let verdict = match instance.on_tool_call(event).await {
            Err(failure) => return block(failure.message(&self.subject())),
            Ok(Err(thrown)) => return block(thrown),
            Ok(Ok(None)) => return CallVerdict::Continue,
            Ok(Ok(Some(verdict))) => verdict,
        };
        if let Some(input) = verdict.input {
            match serde_json::from_str(&input) {
                Ok(value) => *args = value,
                Err(e) => {
                    return block(format!(
                        "{} returned arguments that are not valid JSON: {e}",
                        self.subject()
                    ));
                }
            }
        }
        if verdict.block {
            CallVerdict::Block {
                reason: verdict
                    .reason
                    .unwrap_or_else(|| "Tool execution was blocked".to_string()),
                terminate: verdict.terminate,
            }
        } else {
            CallVerdict::Continue
        }
    }

    /// `tool_result`: may patch the result; `Err` is the failure to report
    /// (the result is then unchanged).
    pub(crate) async fn tool_result(
        &self,
        call: &ToolCall,
        args: &Value,
        result: &mut ToolResult,
        is_error: &mut bool,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let signals = CallSignals::new(cancel.clone(), Duration::ZERO);
        let mut instance = self
            .sandbox
            .instantiate(signals)
            .await
            .map_err(|f| f.message(&self.subject()))?;
        let event = hook::ToolResultEvent {
            tool_name: call.name.clone(),
            tool_call_id: call.id.clone(),
            input: args.to_string(),
            content: result.content.iter().map(content_to_wit).collect(),
            details: result.details.as_ref().map(Value::to_string),
            is_error: *is_error,
        };
        let patch = match instance.on_tool_result(event, &self.subject()).await {
            Err(failure) => return Err(failure.message(&self.subject())),
            Ok(Err(thrown)) => return Err(thrown),
            Ok(Ok(None)) => return Ok(()),
            Ok(Ok(Some(patch))) => patch,
        };
        let details = patch
            .details
            .as_deref()
            .map(serde_json::from_str::<Value>)
            .transpose()
            .map_err(|e| {
                format!(
                    "{} returned details that are not valid JSON: {e}",
                    self.subject()
                )
            })?;
        if let Some(content) = patch.content {
            result.content = content.into_iter().map(content_from_wit).collect();
        }
        if let Some(details) = details {
            result.details = Some(details);
        }
        if let Some(flag) = patch.is_error {
            *is_error = flag;
        }
        Ok(())
    }
}

fn content_to_wit(block: &ContentBlock) -> crate::wit::v0_1::types::ContentBlock {
    use crate::wit::v0_1::types;
    match block {
        ContentBlock::Text { text } => types::ContentBlock::Text(text.clone()),
        ContentBlock::Image { data, mime_type } => types::ContentBlock::Image(types::Image {
            data: data.clone(),
            mime_type: mime_type.clone(),
        }),
    }
}

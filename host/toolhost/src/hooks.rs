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

use crate::component::{CallSignals, Sandbox};
use crate::message::{AssistantMessage, ContentBlock, ToolCall, ToolResult};
use crate::wit;
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

/// What a [`ToolHooks::before_tool_call`] answers, to come.
pub type BeforeAnswer<'a> = BoxFuture<'a, Result<Option<BeforeToolCallResult>, String>>;

/// What a [`ToolHooks::after_tool_call`] answers, to come.
pub type AfterAnswer<'a> = BoxFuture<'a, Result<Option<AfterToolCallResult>, String>>;

/// Hooks an embedder registers on a [`crate::HostBuilder`]. Both methods
/// default to doing nothing. An `Err` is the hook throwing.
pub trait ToolHooks: Send + Sync {
    fn before_tool_call<'a>(&'a self, _ctx: &'a mut BeforeToolCallContext) -> BeforeAnswer<'a> {
        Box::pin(async { Ok(None) })
    }

    fn after_tool_call<'a>(&'a self, _ctx: &'a AfterToolCallContext) -> AfterAnswer<'a> {
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

/// One hook of a session, run by one loop each way (`call.rs`): the
/// embedder's [`ToolHooks`] first, in the order added, then the hook
/// components in load order.
pub(crate) enum Hook {
    Embedder(Arc<dyn ToolHooks>),
    Component(ComponentHook),
}

/// What one after hook made of a result.
pub(crate) enum AfterOutcome {
    /// Replacements to apply (`None`: none).
    Patch(Option<AfterToolCallResult>),
    /// The embedder's hook threw: the result becomes an error with this text.
    Throw(String),
    /// A hook component failed: the result stays, the failure is reported.
    Report { extension: String, error: String },
}

impl Hook {
    /// The before hook: a verdict, or `Err` (the hook threw: it blocks the
    /// call, fail closed). A hook component's own failure blocks the call too.
    pub(crate) async fn before(
        &self,
        ctx: &mut BeforeToolCallContext,
    ) -> Result<Option<BeforeToolCallResult>, String> {
        match self {
            Hook::Embedder(hook) => hook.before_tool_call(ctx).await,
            Hook::Component(hook) => Ok(hook.tool_call(ctx).await),
        }
    }

    pub(crate) async fn after(&self, ctx: &AfterToolCallContext) -> AfterOutcome {
        match self {
            Hook::Embedder(hook) => match hook.after_tool_call(ctx).await {
                Ok(patch) => AfterOutcome::Patch(patch),
                Err(thrown) => AfterOutcome::Throw(thrown),
            },
            Hook::Component(hook) => match hook.tool_result(ctx).await {
                Ok(patch) => AfterOutcome::Patch(patch),
                Err(error) => AfterOutcome::Report {
                    extension: hook.name.clone(),
                    error,
                },
            },
        }
    }
}

impl AfterToolCallResult {
    /// Apply the replacements to `result` and its error flag.
    pub(crate) fn apply(self, result: &mut ToolResult, is_error: &mut bool) {
        if let Some(content) = self.content {
            result.content = content;
        }
        if let Some(details) = self.details {
            result.details = Some(details);
        }
        if let Some(usage) = self.usage {
            result.usage = Some(usage);
        }
        if let Some(terminate) = self.terminate {
            result.terminate = terminate;
        }
        if let Some(flag) = self.is_error {
            *is_error = flag;
        }
    }
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

    /// `tool_call`: may block, or rewrite the arguments in place; failing,
    /// it blocks the call.
    async fn tool_call(&self, ctx: &mut BeforeToolCallContext) -> Option<BeforeToolCallResult> {
        let block = |reason: String| {
            Some(BeforeToolCallResult {
                block: true,
                reason: Some(reason),
                terminate: false,
            })
        };
        let (call, args) = (&ctx.tool_call, &mut ctx.args);
        let signals = CallSignals::new(ctx.cancel.clone(), Duration::ZERO);
        let mut instance = match self.sandbox.instantiate(signals).await {
            Ok(instance) => instance,
            Err(failure) => return block(failure.message(&self.subject())),
        };
        let event = wit::ToolCallEvent {
            tool_name: call.name.clone(),
            tool_call_id: call.id.clone(),
            input: args.to_string(),
        };
        let verdict = match instance.on_tool_call(event).await {
            Err(failure) => return block(failure.message(&self.subject())),
            Ok(Err(thrown)) => return block(thrown),
            Ok(Ok(None)) => return None,
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
        verdict.block.then_some(BeforeToolCallResult {
            block: true,
            reason: verdict.reason,
            terminate: verdict.terminate,
        })
    }

    /// `tool_result`: may patch the result's content, details and error flag;
    /// `Err` is the failure to report (the result is then unchanged).
    async fn tool_result(
        &self,
        ctx: &AfterToolCallContext,
    ) -> Result<Option<AfterToolCallResult>, String> {
        let (call, args, result) = (&ctx.tool_call, &ctx.args, &ctx.result);
        let signals = CallSignals::new(ctx.cancel.clone(), Duration::ZERO);
        let mut instance = self
            .sandbox
            .instantiate(signals)
            .await
            .map_err(|f| f.message(&self.subject()))?;
        let event = wit::ToolResultEvent {
            tool_name: call.name.clone(),
            tool_call_id: call.id.clone(),
            input: args.to_string(),
            content: result.content.clone(),
            details: result.details.as_ref().map(Value::to_string),
            is_error: ctx.is_error,
        };
        let patch = match instance.on_tool_result(event, &self.subject()).await {
            Err(failure) => return Err(failure.message(&self.subject())),
            Ok(Err(thrown)) => return Err(thrown),
            Ok(Ok(None)) => return Ok(None),
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
        Ok(Some(AfterToolCallResult {
            content: patch.content,
            details,
            is_error: patch.is_error,
            usage: None,
            terminate: None,
        }))
    }
}

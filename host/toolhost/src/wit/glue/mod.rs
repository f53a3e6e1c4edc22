//! The glue between a version's bindings and the host, written once and
//! compiled in each version module (`v0_1`, `v0_2`, …, through `#[path]`):
//! `super` here is that version's module, with its bindings. The versions
//! share these interfaces' shapes, so one text serves every one of them;
//! the fields a version adds are taken by the version module itself
//! (`output_schema`, `structured_content`), and so are its content blocks
//! (`content_from_wit`, `content_to_wit`) and its own interfaces
//! (`link_own`).
//!
//! Each Operation's glue is a narrow view of the call's state
//! ([`OpsCtx`]) that converts arguments, calls the Operation's backend trait
//! and converts the result back (`fs_ops`, `process_ops`, `search_ops`,
//! `tools_ops`); this file links them from the table of interfaces, serves
//! the call's own interfaces (progress, cancellation), and calls the
//! component's exports in the host's types.

// Compiled once per version, like this module.
#[allow(clippy::duplicate_mod)]
mod fs_ops;
#[allow(clippy::duplicate_mod)]
mod process_ops;
#[allow(clippy::duplicate_mod)]
mod search_ops;
#[allow(clippy::duplicate_mod)]
mod tools_ops;

use super::hook_world::{HookComponent, HookComponentIndices, hook};
use super::{
    ToolComponent, ToolComponentIndices, cancellation, fs_read, fs_types, fs_write, process,
    progress, search, tools, types,
};
use crate::ops::Capabilities;
use crate::store::CallState;
use crate::wit::interfaces::{Serving, in_version, interfaces};
use crate::wit::{self, HasOps, OpsCtx, OpsView, StoreFuture};
use std::sync::Arc;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Instance, InstancePre, Linker};

fn ops_of<S: OpsView>(state: &mut S) -> OpsCtx<'_> {
    state.ops()
}

/// Link the call's own interfaces and every Operation `caps` grants (and
/// the filesystem types, which every component may import).
pub(super) fn link(linker: &mut Linker<CallState>, caps: &Capabilities) -> wasmtime::Result<()> {
    types::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s)?;
    progress::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s)?;
    cancellation::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s)?;
    for interface in interfaces() {
        if !in_version(interface.name, super::VERSION) || !interface.granted(caps) {
            continue;
        }
        if matches!(interface.serving, Serving::Call) {
            if !matches!(interface.name, "types" | "progress" | "cancellation") {
                super::link_own(interface.name, linker)?;
            }
            continue;
        }
        let view = ops_of::<CallState>;
        match interface.name {
            "fs-types" => fs_types::add_to_linker::<_, HasOps>(linker, view)?,
            "fs-read" => fs_read::add_to_linker::<_, HasOps>(linker, view)?,
            "fs-write" => fs_write::add_to_linker::<_, HasOps>(linker, view)?,
            "process" => process::add_to_linker::<_, HasOps>(linker, view)?,
            "search" => search::add_to_linker::<_, HasOps>(linker, view)?,
            "tools" => tools::add_to_linker::<_, HasOps>(linker, view)?,
            other => super::link_own(other, linker)?,
        }
    }
    Ok(())
}

impl types::Host for CallState {}

impl progress::Host for CallState {
    fn update(&mut self, partial: types::PartialResult) -> wasmtime::Result<()> {
        let content = partial
            .content
            .into_iter()
            .map(super::content_from_wit)
            .collect();
        self.signals.update(content, partial.details);
        Ok(())
    }
}

impl cancellation::Host for CallState {
    fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.signals.cancel.is_cancelled())
    }
}

// ---------------------------------------------------------------------------
// The exports
// ---------------------------------------------------------------------------

struct Exports {
    tool: Option<ToolComponentIndices>,
    hook: Option<HookComponentIndices>,
}

/// The exports of `pre`: its tools when `tool`, its hooks when `hook`.
pub(super) fn exports(
    pre: &InstancePre<CallState>,
    tool: bool,
    hook: bool,
) -> Result<Arc<dyn wit::Exports>, (&'static str, wasmtime::Error)> {
    let contract = &super::CONTRACT;
    let tool = tool.then(|| ToolComponentIndices::new(pre)).transpose();
    let hook = hook.then(|| HookComponentIndices::new(pre)).transpose();
    Ok(Arc::new(Exports {
        tool: tool.map_err(|e| (contract.tool_export, e))?,
        hook: hook.map_err(|e| (contract.hook_export, e))?,
    }))
}

impl wit::Exports for Exports {
    fn provides_tools(&self) -> bool {
        self.tool.is_some()
    }

    fn provides_hooks(&self) -> bool {
        self.hook.is_some()
    }

    fn load(
        &self,
        store: &mut Store<CallState>,
        instance: &Instance,
    ) -> wasmtime::Result<wit::Guests> {
        let mut tool: Option<Arc<dyn wit::ToolGuest>> = None;
        if let Some(indices) = &self.tool {
            tool = Some(Arc::new(Tool(indices.load(&mut *store, instance)?)));
        }
        let mut hook: Option<Arc<dyn wit::HookGuest>> = None;
        if let Some(indices) = &self.hook {
            hook = Some(Arc::new(Hook(indices.load(&mut *store, instance)?)));
        }
        Ok((tool, hook))
    }
}

struct Tool(ToolComponent);

impl wit::ToolGuest for Tool {
    fn definitions<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
    ) -> StoreFuture<'a, Vec<wit::ToolDecl>> {
        Box::pin(async move {
            let defs = self.0.toolhost_tool_tool().call_definitions(store).await?;
            Ok(defs.into_iter().map(definition_from_wit).collect())
        })
    }

    fn prepare_arguments<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        name: String,
        arguments: String,
    ) -> StoreFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            self.0
                .toolhost_tool_tool()
                .call_prepare_arguments(store, &name, &arguments)
                .await
        })
    }

    fn execute<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        name: String,
        context: wit::CallContext,
        arguments: String,
    ) -> StoreFuture<'a, Result<wit::GuestResult, String>> {
        let context = types::CallContext {
            tool_call_id: context.tool_call_id,
            cwd: context.cwd,
            home: context.home,
            roots: context.roots,
            session_id: context.session_id,
        };
        Box::pin(async move {
            let out = self
                .0
                .toolhost_tool_tool()
                .call_execute(store, &name, &context, &arguments)
                .await?;
            Ok(out.map(result_from_wit))
        })
    }
}

struct Hook(HookComponent);

impl wit::HookGuest for Hook {
    fn on_tool_call<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        event: wit::ToolCallEvent,
    ) -> StoreFuture<'a, Result<Option<wit::ToolCallVerdict>, String>> {
        let event = hook::ToolCallEvent {
            tool_name: event.tool_name,
            tool_call_id: event.tool_call_id,
            input: event.input,
        };
        Box::pin(async move {
            let hook = self.0.toolhost_tool_hook();
            let verdict = hook.call_on_tool_call(store, &event).await?;
            Ok(verdict.map(|v| v.map(verdict_from_wit)))
        })
    }

    fn on_tool_result<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        event: wit::ToolResultEvent,
    ) -> StoreFuture<'a, Result<Option<wit::ToolResultPatch>, String>> {
        let event = hook::ToolResultEvent {
            tool_name: event.tool_name,
            tool_call_id: event.tool_call_id,
            input: event.input,
            content: event
                .content
                .into_iter()
                .map(super::content_to_wit)
                .collect(),
            details: event.details,
            is_error: event.is_error,
        };
        Box::pin(async move {
            let hook = self.0.toolhost_tool_hook();
            let patch = hook.call_on_tool_result(store, &event).await?;
            Ok(patch.map(|p| p.map(patch_from_wit)))
        })
    }
}

/// A `tool_call` hook's verdict in the host's types.
fn verdict_from_wit(v: hook::ToolCallVerdict) -> wit::ToolCallVerdict {
    wit::ToolCallVerdict {
        block: v.block,
        reason: v.reason,
        terminate: v.terminate,
        input: v.input,
    }
}

/// A `tool_result` hook's patch in the host's types.
fn patch_from_wit(p: hook::ToolResultPatch) -> wit::ToolResultPatch {
    wit::ToolResultPatch {
        content: p
            .content
            .map(|content| content.into_iter().map(super::content_from_wit).collect()),
        details: p.details,
        is_error: p.is_error,
    }
}

/// A declared tool in the host's types.
fn definition_from_wit(mut d: types::ToolDefinition) -> wit::ToolDecl {
    wit::ToolDecl {
        output_schema: super::output_schema(&mut d),
        name: d.name,
        label: d.label,
        description: d.description,
        parameters: d.parameters,
        prompt_snippet: d.prompt_snippet,
        prompt_guidelines: d.prompt_guidelines,
        sequential: matches!(d.execution_mode, types::ExecutionMode::Sequential),
    }
}

/// A tool's result in the host's types.
fn result_from_wit(mut r: types::ToolResult) -> wit::GuestResult {
    wit::GuestResult {
        is_error: super::is_error(&r),
        structured_content: super::structured_content(&mut r),
        content: r.content.into_iter().map(super::content_from_wit).collect(),
        details: r.details,
        terminate: r.terminate,
        added_tool_names: r.added_tool_names,
    }
}

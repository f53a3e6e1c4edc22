//! What differs between versions of the package, as a trait each version
//! implements ([`Version`]), and everything written once on top of it: the
//! linking of a version's interfaces, and the calls of its exports in the
//! host's types.
//!
//! Between 0.1.0 and 0.4.0 only the records of `types` changed: a tool
//! definition gained an output schema, a result structured content and
//! `is-error`, a content block audio and embedded resources. Everything
//! built of them (`progress`'s partial result, the `tool` and `hook`
//! exports' functions) has one shape with the block or the record as a
//! parameter, so it is written here once, generic over the version, with
//! wasmtime's typed functions; the imports every version shares are served
//! by `glue`.

use super::{
    CallContext, Contract, Exports, GuestResult, Guests, HookGuest, ResultEvent, ResultPatch,
    StoreFuture, ToolCallEvent, ToolCallVerdict, ToolDecl, ToolGuest, ToolResultEvent,
    ToolResultPatch, glue,
};
use crate::message::ContentBlock;
use crate::ops::Capabilities;
use crate::store::CallState;
use crate::wit::interfaces::{in_version, interfaces};
use std::marker::PhantomData;
use std::sync::Arc;
use wasmtime::component::{
    ComponentExportIndex, ComponentType, Instance, InstancePre, Lift, Linker, Lower, TypedFunc,
};
use wasmtime::{AsContextMut, Store, StoreContextMut};

/// One version of the `toolhost:tool` package: what a new version must
/// provide. Its bindings come from its own WIT file; their records that
/// have the newest's shape may be the newest's types (`glue::Block`, …).
pub(crate) trait Version: Send + Sync + 'static {
    /// `0.2.0`: the package's version, as an import's or export's name has it.
    const VERSION: &'static str;
    /// `tool-definition`.
    type Definition: WitDefinition;
    /// `tool-result`.
    type Result: WitResult;
    /// `content-block`.
    type Block: WitBlock;
}

/// A version's `content-block`, to and from the host's.
pub(crate) trait WitBlock: ComponentType + Lift + Lower + Send + Sync + 'static {
    fn into_host(self) -> ContentBlock;
    /// For a hook that sees a result: a block the version cannot carry is
    /// the line that describes it.
    fn from_host(block: ContentBlock) -> Self;
}

/// A version's `tool-definition`, in the host's types.
pub(crate) trait WitDefinition: ComponentType + Lift + Send + Sync + 'static {
    fn into_host(self) -> ToolDecl;
}

/// A version's `tool-result`, in the host's types.
pub(crate) trait WitResult: ComponentType + Lift + Send + Sync + 'static {
    fn into_host(self) -> GuestResult;
}

impl Contract {
    /// How the host serves version `V`.
    pub(crate) const fn of<V: Version>() -> Contract {
        Contract {
            version: V::VERSION,
            link: link::<V>,
            exports: exports::<V>,
        }
    }
}

// ---------------------------------------------------------------------------
// The imports
// ---------------------------------------------------------------------------

/// `progress`'s record, whose blocks are the version's.
#[derive(ComponentType, Lift)]
#[component(record)]
struct PartialResult<B> {
    content: Vec<B>,
    details: Option<String>,
}

/// Link the interfaces every component of version `V` may import (types,
/// progress, cancellation, and what its version always links) and the
/// Operations `caps` grants.
fn link<V: Version>(linker: &mut Linker<CallState>, caps: &Capabilities) -> wasmtime::Result<()> {
    for interface in interfaces() {
        if !in_version(interface.name, V::VERSION) || !interface.granted(caps) {
            continue;
        }
        match interface.name {
            // Records only: nothing to serve, but the instance must exist.
            "types" => {
                linker.instance(&format!("toolhost:tool/types@{}", V::VERSION))?;
            }
            "progress" => {
                let name = format!("toolhost:tool/progress@{}", V::VERSION);
                linker.instance(&name)?.func_wrap(
                    "update",
                    |mut store: StoreContextMut<'_, CallState>,
                     (partial,): (PartialResult<V::Block>,)| {
                        let content = partial.content.into_iter().map(V::Block::into_host);
                        let signals = &store.data_mut().signals;
                        signals.update(content.collect(), partial.details);
                        Ok(())
                    },
                )?;
            }
            name => glue::link(name, V::VERSION, linker)?,
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The exports
// ---------------------------------------------------------------------------

type Answer<T> = (Result<T, String>,);
type DefinitionsFn<V> = TypedFunc<(), (Vec<<V as Version>::Definition>,)>;
type PrepareFn = TypedFunc<(String, String), Answer<Option<String>>>;
type ExecuteFn<V> = TypedFunc<(String, CallContext, String), Answer<<V as Version>::Result>>;
type OnCallFn = TypedFunc<(ToolCallEvent,), Answer<Option<ToolCallVerdict>>>;
type OnResultFn<V> = TypedFunc<
    (ResultEvent<<V as Version>::Block>,),
    Answer<Option<ResultPatch<<V as Version>::Block>>>,
>;

/// Where a function of an export is, once its type has been checked.
fn function<P, R>(
    pre: &InstancePre<CallState>,
    export: &ComponentExportIndex,
    name: &str,
) -> wasmtime::Result<ComponentExportIndex>
where
    P: wasmtime::component::ComponentNamedList + Lower,
    R: wasmtime::component::ComponentNamedList + Lift,
{
    use wasmtime::component::types::ComponentItem;
    let (item, index) = pre
        .component()
        .get_export(Some(export), name)
        .ok_or_else(|| wasmtime::format_err!("no export `{name}` found"))?;
    match item {
        // What the functions `bindgen!` generates check, before any call.
        ComponentItem::ComponentFunc(func) => func
            .typecheck::<P, R>(&pre.instance_type())
            .map_err(|e| e.context(format!("type-checking export func `{name}`")))?,
        _ => wasmtime::bail!("export `{name}` is not a function"),
    }
    Ok(index)
}

/// The instance an export names, `toolhost:tool/tool@0.2.0`.
fn export_instance(
    pre: &InstancePre<CallState>,
    name: &str,
) -> wasmtime::Result<ComponentExportIndex> {
    pre.component()
        .get_export_index(None, name)
        .ok_or_else(|| wasmtime::format_err!("no export `{name}` found"))
}

/// An export's index in a component.
type Index = ComponentExportIndex;

struct ToolIndices {
    definitions: Index,
    prepare: Index,
    execute: Index,
}

impl ToolIndices {
    /// Its functions in the instance `tool` of `pre`.
    fn new<V: Version>(pre: &InstancePre<CallState>, tool: Index) -> wasmtime::Result<Self> {
        Ok(ToolIndices {
            definitions: function::<(), (Vec<V::Definition>,)>(pre, &tool, "definitions")?,
            prepare: function::<(String, String), Answer<Option<String>>>(
                pre,
                &tool,
                "prepare-arguments",
            )?,
            execute: function::<(String, CallContext, String), Answer<V::Result>>(
                pre, &tool, "execute",
            )?,
        })
    }
}

struct HookIndices {
    on_call: Index,
    on_result: Index,
}

impl HookIndices {
    fn new<V: Version>(pre: &InstancePre<CallState>, hook: Index) -> wasmtime::Result<Self> {
        Ok(HookIndices {
            on_call: function::<(ToolCallEvent,), Answer<Option<ToolCallVerdict>>>(
                pre,
                &hook,
                "on-tool-call",
            )?,
            on_result: function::<(ResultEvent<V::Block>,), Answer<Option<ResultPatch<V::Block>>>>(
                pre,
                &hook,
                "on-tool-result",
            )?,
        })
    }
}

struct VersionExports<V> {
    tool: Option<ToolIndices>,
    hook: Option<HookIndices>,
    version: PhantomData<fn() -> V>,
}

/// The exports of `pre`: its tools when `tool`, its hooks when `hook`; an
/// error names the export that has the wrong shape.
fn exports<V: Version>(
    pre: &InstancePre<CallState>,
    tool: bool,
    hook: bool,
) -> Result<Arc<dyn Exports>, (String, wasmtime::Error)> {
    let contract = Contract::of::<V>();
    let (tool_export, hook_export) = (contract.tool_export(), contract.hook_export());
    let tools = tool.then(|| ToolIndices::new::<V>(pre, export_instance(pre, &tool_export)?));
    let hooks = hook.then(|| HookIndices::new::<V>(pre, export_instance(pre, &hook_export)?));
    Ok(Arc::new(VersionExports::<V> {
        tool: tools.transpose().map_err(|e| (tool_export, e))?,
        hook: hooks.transpose().map_err(|e| (hook_export, e))?,
        version: PhantomData,
    }))
}

impl<V: Version> Exports for VersionExports<V> {
    fn provides_tools(&self) -> bool {
        self.tool.is_some()
    }

    fn provides_hooks(&self) -> bool {
        self.hook.is_some()
    }

    fn load(&self, store: &mut Store<CallState>, instance: &Instance) -> wasmtime::Result<Guests> {
        let mut store = store.as_context_mut();
        let mut tool: Option<Arc<dyn ToolGuest>> = None;
        if let Some(at) = &self.tool {
            tool = Some(Arc::new(Tool::<V> {
                definitions: instance.get_typed_func(&mut store, at.definitions)?,
                prepare: instance.get_typed_func(&mut store, at.prepare)?,
                execute: instance.get_typed_func(&mut store, at.execute)?,
            }));
        }
        let mut hook: Option<Arc<dyn HookGuest>> = None;
        if let Some(at) = &self.hook {
            hook = Some(Arc::new(Hook::<V> {
                on_call: instance.get_typed_func(&mut store, at.on_call)?,
                on_result: instance.get_typed_func(&mut store, at.on_result)?,
            }));
        }
        Ok((tool, hook))
    }
}

/// The `tool` export of one instance.
struct Tool<V: Version> {
    definitions: DefinitionsFn<V>,
    prepare: PrepareFn,
    execute: ExecuteFn<V>,
}

impl<V: Version> ToolGuest for Tool<V> {
    fn definitions<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
    ) -> StoreFuture<'a, Vec<ToolDecl>> {
        Box::pin(async move {
            let (defs,) = self.definitions.call_async(store, ()).await?;
            Ok(defs.into_iter().map(WitDefinition::into_host).collect())
        })
    }

    fn prepare_arguments<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        name: String,
        arguments: String,
    ) -> StoreFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            let (out,) = self.prepare.call_async(store, (name, arguments)).await?;
            Ok(out)
        })
    }

    fn execute<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        call: (String, CallContext, String),
    ) -> StoreFuture<'a, Result<GuestResult, String>> {
        Box::pin(async move {
            let (out,) = self.execute.call_async(store, call).await?;
            Ok(out.map(WitResult::into_host))
        })
    }
}

/// The `hook` export of one instance.
struct Hook<V: Version> {
    on_call: OnCallFn,
    on_result: OnResultFn<V>,
}

impl<V: Version> HookGuest for Hook<V> {
    fn on_tool_call<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        event: ToolCallEvent,
    ) -> StoreFuture<'a, Result<Option<ToolCallVerdict>, String>> {
        Box::pin(async move { Ok(self.on_call.call_async(store, (event,)).await?.0) })
    }

    fn on_tool_result<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        event: ToolResultEvent,
    ) -> StoreFuture<'a, Result<Option<ToolResultPatch>, String>> {
        let event = event.map_blocks(V::Block::from_host);
        Box::pin(async move {
            let (patch,) = self.on_result.call_async(store, (event,)).await?;
            Ok(patch.map(|p| p.map(|p| p.map_blocks(V::Block::into_host))))
        })
    }
}

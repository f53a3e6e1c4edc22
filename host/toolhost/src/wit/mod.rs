//! The WIT layer: the `toolhost:tool` contract at the edge of the host.
//!
//! One module per released version of the package (`v0_1` for
//! `toolhost:tool@0.1.0`, … `v0_4` for `0.4.0`) implements [`Version`]:
//! the records that differ between versions, generated from its frozen WIT
//! file. Everything else is written once: the glue of every imported
//! interface on the newest bindings (`glue/`, which older bindings take
//! through `bindgen!`'s `with:`), and the linking and the calls of the
//! exports, generic over the version (`version.rs`). The host loads every
//! version: a component is served the one it exports ([`Contract`]).
//!
//! The Operations (`crate::ops`) have plain Rust types and backend traits;
//! the glue serves them to a component through a narrow view of the call's
//! state ([`OpsCtx`]), as wasmtime's WASI crate does. What a component
//! exports is called through the version-neutral [`ToolGuest`] and
//! [`HookGuest`], in the host's own types (below), so nothing above this
//! layer knows which version it runs.
//!
//! [`interfaces`] is the one table of the granted interfaces: name,
//! wording, whether a set of capabilities grants it, the `toolhost.toml`
//! line that would, and how it is linked. Import checking, stubbing for
//! inspection and linking all read it.

mod ctx;
pub mod glue;
pub mod interfaces;
mod v0_1;
mod v0_2;
mod v0_3;
mod v0_4;
mod version;

pub(crate) use ctx::HasOps;
pub use ctx::{OpsCtx, OpsView};
pub(crate) use version::{Version, WitBlock, WitDefinition, WitResult};

use crate::message::ContentBlock;
use crate::ops::Capabilities;
use crate::store::CallState;
use std::sync::Arc;
use wasmtime::Store;
use wasmtime::component::{Component, ComponentType, Instance, InstancePre, Lift, Linker, Lower};

/// One version of the package, as the host serves it ([`Contract::of`] a
/// [`Version`]).
pub(crate) struct Contract {
    /// `0.2.0`.
    pub version: &'static str,
    /// Link the interfaces every component of this version may import
    /// (types, progress, cancellation) and the Operations `caps` grants.
    pub link: fn(&mut Linker<CallState>, &Capabilities) -> wasmtime::Result<()>,
    /// Find the exports of an instantiable component.
    pub exports: FindExports,
}

impl Contract {
    /// `toolhost:tool/tool@0.2.0`.
    pub fn tool_export(&self) -> String {
        format!("toolhost:tool/tool@{}", self.version)
    }

    /// `toolhost:tool/hook@0.2.0`.
    pub fn hook_export(&self) -> String {
        format!("toolhost:tool/hook@{}", self.version)
    }
}

/// How a version finds a linked component's exports: its tools when `tool`,
/// its hooks when `hook`; an error names the export that has the wrong shape.
pub(crate) type FindExports = fn(
    &InstancePre<CallState>,
    tool: bool,
    hook: bool,
) -> Result<Arc<dyn Exports>, (String, wasmtime::Error)>;

/// One instance's exports: its tools, its hooks.
pub(crate) type Guests = (Option<Arc<dyn ToolGuest>>, Option<Arc<dyn HookGuest>>);

/// Every version of the package the host loads, oldest first.
pub(crate) const CONTRACTS: &[&Contract] = &[
    &Contract::of::<v0_1::V0_1>(),
    &Contract::of::<v0_2::V0_2>(),
    &Contract::of::<v0_3::V0_3>(),
    &Contract::of::<v0_4::V0_4>(),
];

/// The versions the host loads, for messages: `toolhost:tool@0.1.0, @0.2.0 and @0.3.0`.
pub fn versions_text() -> String {
    let versions: Vec<String> = CONTRACTS
        .iter()
        .map(|c| format!("@{}", c.version))
        .collect();
    let (last, rest) = versions.split_last().expect("a version");
    if rest.is_empty() {
        return format!("toolhost:tool{last}");
    }
    format!("toolhost:tool{} and {last}", rest.join(", "))
}

/// The version a component is built for, read from what it exports.
pub(crate) fn contract_of(component: &Component) -> Result<&'static Contract, String> {
    contract_of_exports(&export_names(component))
}

/// The names `component` exports.
pub(crate) fn export_names(component: &Component) -> Vec<String> {
    let ty = component.component_type();
    let exports = ty.exports(component.engine());
    exports.map(|(name, _)| name.to_string()).collect()
}

/// The names `component` imports.
pub(crate) fn import_names(component: &Component) -> Vec<String> {
    let ty = component.component_type();
    let imports = ty.imports(component.engine());
    imports.map(|(name, _)| name.to_string()).collect()
}

/// [`contract_of`] a component that exports `exports`.
pub(crate) fn contract_of_exports(exports: &[String]) -> Result<&'static Contract, String> {
    let exported = |name: &str| exports.iter().any(|e| e == name);
    if let Some(contract) = CONTRACTS
        .iter()
        .rev()
        .find(|c| exported(&c.tool_export()) || exported(&c.hook_export()))
    {
        return Ok(contract);
    }
    let other = exports
        .iter()
        .find(|e| e.starts_with("toolhost:tool/"))
        .map(|e| format!(" (it exports {e}: built for another version of the package?)"))
        .unwrap_or_default();
    let found = match exports {
        [] => "nothing".to_string(),
        some if some.len() > 5 => format!("{}, …", some[..5].join(", ")),
        some => some.join(", "),
    };
    let newest = newest();
    Err(format!(
        "exports neither {} nor {}{other}; it exports {found}. A tool exports the `tool` \
         interface of one of {} (`toolhost ext new NAME --lang rust|js|python|c` makes a project \
         that does)",
        newest.tool_export(),
        newest.hook_export(),
        versions_text()
    ))
}

/// The newest version: what the SDK and `toolhost ext new` build.
pub(crate) fn newest() -> &'static Contract {
    CONTRACTS[CONTRACTS.len() - 1]
}

/// A linked component's exports, ready to be found in each instance.
pub(crate) trait Exports: Send + Sync {
    fn provides_tools(&self) -> bool;
    fn provides_hooks(&self) -> bool;
    /// The exports of one instance.
    fn load(&self, store: &mut Store<CallState>, instance: &Instance) -> wasmtime::Result<Guests>;
}

/// A future running on a call's store.
pub(crate) type StoreFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = wasmtime::Result<T>> + Send + 'a>>;

/// The `tool` export of one instance, in the host's types. Each call takes
/// the instance's handle into the future it returns.
pub(crate) trait ToolGuest: Send + Sync {
    fn definitions<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
    ) -> StoreFuture<'a, Vec<ToolDecl>>;
    fn prepare_arguments<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        name: String,
        arguments: String,
    ) -> StoreFuture<'a, Result<Option<String>, String>>;
    /// Run the tool: the export's arguments (the tool's name, the call's
    /// context, its arguments as JSON).
    fn execute<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        call: (String, CallContext, String),
    ) -> StoreFuture<'a, Result<GuestResult, String>>;
}

/// The `hook` export of one instance, in the host's types.
pub(crate) trait HookGuest: Send + Sync {
    fn on_tool_call<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        event: ToolCallEvent,
    ) -> StoreFuture<'a, Result<Option<ToolCallVerdict>, String>>;
    fn on_tool_result<'a>(
        self: Arc<Self>,
        store: &'a mut Store<CallState>,
        event: ToolResultEvent,
    ) -> StoreFuture<'a, Result<Option<ToolResultPatch>, String>>;
}

// ---------------------------------------------------------------------------
// The records a component exchanges, in the host's types. JSON arrives and
// leaves as text: the host weighs a guest's text before it parses any.
// ---------------------------------------------------------------------------

/// A tool as a component declares it, before the loader checks it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ToolDecl {
    pub name: String,
    pub label: String,
    pub description: String,
    pub parameters: String,
    pub prompt_snippet: Option<String>,
    pub prompt_guidelines: Vec<String>,
    /// Its calls make their batch run in order (`execution-mode`).
    pub sequential: bool,
    /// Since 0.2.0.
    pub output_schema: Option<String>,
}

/// Facts about the call being executed (`call-context`, one shape in every
/// version).
#[derive(Clone, Debug, ComponentType, Lower, serde::Serialize, serde::Deserialize)]
#[component(record)]
pub(crate) struct CallContext {
    #[component(name = "tool-call-id")]
    pub tool_call_id: String,
    pub cwd: String,
    pub home: Option<String>,
    pub roots: Vec<String>,
    #[component(name = "session-id")]
    pub session_id: Option<String>,
}

/// A tool's result as the component returned it.
#[derive(Clone, Debug)]
pub(crate) struct GuestResult {
    pub content: Vec<ContentBlock>,
    pub details: Option<String>,
    pub terminate: bool,
    pub added_tool_names: Vec<String>,
    /// Since 0.2.0.
    pub structured_content: Option<String>,
    /// A returned error (since 0.4.0): the call failed, its details kept.
    pub is_error: bool,
}

/// What a hook sees before a call (`tool-call-event`, one shape in every
/// version).
#[derive(Clone, Debug, ComponentType, Lower)]
#[component(record)]
pub(crate) struct ToolCallEvent {
    #[component(name = "tool-name")]
    pub tool_name: String,
    #[component(name = "tool-call-id")]
    pub tool_call_id: String,
    pub input: String,
}

/// What a hook decides before a call (`tool-call-verdict`, one shape in
/// every version).
#[derive(Clone, Debug, ComponentType, Lift)]
#[component(record)]
pub(crate) struct ToolCallVerdict {
    pub block: bool,
    pub reason: Option<String>,
    pub terminate: bool,
    pub input: Option<String>,
}

/// What a hook sees after a call: `tool-result-event` with a version's
/// blocks `B`, or the host's.
#[derive(Clone, Debug, ComponentType, Lower)]
#[component(record)]
pub(crate) struct ResultEvent<B> {
    #[component(name = "tool-name")]
    pub tool_name: String,
    #[component(name = "tool-call-id")]
    pub tool_call_id: String,
    pub input: String,
    pub content: Vec<B>,
    pub details: Option<String>,
    #[component(name = "is-error")]
    pub is_error: bool,
}

/// What a hook changes after a call: `tool-result-patch` with a version's
/// blocks `B`, or the host's.
#[derive(Clone, Debug, ComponentType, Lift)]
#[component(record)]
pub(crate) struct ResultPatch<B> {
    pub content: Option<Vec<B>>,
    pub details: Option<String>,
    #[component(name = "is-error")]
    pub is_error: Option<bool>,
}

/// [`ResultEvent`] in the host's blocks.
pub(crate) type ToolResultEvent = ResultEvent<ContentBlock>;
/// [`ResultPatch`] in the host's blocks.
pub(crate) type ToolResultPatch = ResultPatch<ContentBlock>;

impl<B> ResultEvent<B> {
    /// The same event with each block made by `f`.
    pub(crate) fn map_blocks<C>(self, f: impl FnMut(B) -> C) -> ResultEvent<C> {
        ResultEvent {
            tool_name: self.tool_name,
            tool_call_id: self.tool_call_id,
            input: self.input,
            content: self.content.into_iter().map(f).collect(),
            details: self.details,
            is_error: self.is_error,
        }
    }
}

impl<B> ResultPatch<B> {
    /// The same patch with each block made by `f`.
    pub(crate) fn map_blocks<C>(self, f: impl FnMut(B) -> C) -> ResultPatch<C> {
        ResultPatch {
            content: self.content.map(|c| c.into_iter().map(f).collect()),
            details: self.details,
            is_error: self.is_error,
        }
    }
}

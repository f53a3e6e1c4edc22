//! Loading a component: compile (or take from the cache), check its imports
//! against its grants, instantiate it once to read its definitions, and check
//! each definition before it reaches the registry.

use crate::component::{CallSignals, Capabilities, Deferred, Limits, Sandbox};
use crate::engine::Runtime;
use crate::error::Error;
use crate::message::valid_tool_name;
use crate::profile::PiProfile;
use crate::registry::{ExecutionMode, RegisteredTool, ToolDefinition, ToolSource};
use crate::validate::ArgumentSchema;
use crate::validate::OutputSchema;
use crate::wit::ToolDecl;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Most tools one component may define: as many as the strictest provider
/// accepts in one request (OpenAI: 128), so no honest component needs more.
/// Each definition costs the host a schema check and compilation at load, in
/// the host and outside any guest deadline, and the model a share of every
/// request: without this bound, a component declaring 100,000 tools held the
/// host's start for minutes.
pub const MAX_TOOLS_PER_COMPONENT: usize = 128;

/// Largest definitions list of one component, in bytes of its texts (names,
/// labels, descriptions, schemas, prompt lines), checked before any schema is
/// parsed: a schema of megabytes costs seconds to compile and is sent to the
/// model with every request.
pub const MAX_DEFINITIONS_BYTES: usize = 1 << 20;

/// Refuse a definitions list too long or too large to be honest, before
/// anything in it is parsed.
fn check_definitions_size(definitions: &[ToolDecl]) -> Result<(), String> {
    if definitions.len() > MAX_TOOLS_PER_COMPONENT {
        return Err(format!(
            "defines {} tools, more than the {MAX_TOOLS_PER_COMPONENT} a component may define",
            definitions.len()
        ));
    }
    let bytes: usize = definitions
        .iter()
        .map(|d| {
            d.name.len()
                + d.label.len()
                + d.description.len()
                + d.parameters.len()
                + d.prompt_snippet.as_ref().map_or(0, String::len)
                + d.prompt_guidelines.iter().map(String::len).sum::<usize>()
                + d.output_schema.as_ref().map_or(0, String::len)
        })
        .sum();
    if bytes > MAX_DEFINITIONS_BYTES {
        return Err(format!(
            "its definitions take {bytes} bytes, more than the {MAX_DEFINITIONS_BYTES} a \
             component may declare"
        ));
    }
    Ok(())
}

/// A component's code, as the loader receives it.
pub(crate) enum Code<'a> {
    Bytes(&'a [u8]),
    /// A component file whose digest is known (the spec's `hash`) without
    /// its bytes: read only when the compile cache lacks its code.
    Unread(&'a std::fs::File),
}

/// A component to load and what it is allowed.
pub(crate) struct ComponentSpec<'a> {
    pub code: Code<'a>,
    /// Its machine code, compiled when toolhost was built (built-ins).
    pub precompiled: Option<&'static [u8]>,
    /// Content hash (blake3, hex): the compile cache key.
    pub hash: String,
    /// Names the component in messages (a path, or `built-in read`).
    pub origin: String,
    pub source: ToolSource,
    pub caps: Capabilities,
    pub limits: Limits,
    /// The Pi profile its calls are told (`host-info`).
    pub pi: PiProfile,
    /// The name its grants are written under, for refusals that say how to
    /// grant what is missing (`None` for built-ins).
    pub grant_name: Option<String>,
    /// Its hooks may run (they see and may rewrite every call).
    pub hooks: bool,
    /// Its tools may take a built-in's name.
    pub replace_builtin: bool,
    /// Its tools are named `{namespace}__{name}` (the grant's `namespace`).
    pub namespace: Option<String>,
}

/// What a loaded component provides.
pub(crate) struct Loaded {
    pub tools: Vec<RegisteredTool>,
    /// Set when the component exports hooks.
    pub hooks: Option<Arc<Sandbox>>,
    /// Its tools may replace built-ins of the same name.
    pub replace_builtin: bool,
}

/// A component compiled and linked, its grants checked, its definitions not
/// yet read: what [`prepare`] does without awaiting anything, so that many
/// components are prepared on several threads at once.
pub(crate) struct Prepared {
    sandbox: Arc<Sandbox>,
    hash: String,
    origin: String,
    source: ToolSource,
    replace_builtin: bool,
    namespace: Option<String>,
    /// Its definitions, when its summary gave them.
    definitions: Option<Vec<ToolDecl>>,
    /// The names it imports and exports, when its summary is to be noted
    /// once its definitions are read.
    summarise: Option<(Vec<String>, Vec<String>)>,
}

/// What loading a component found that a later load may take as it is: the
/// names it imports and exports and the definitions it declared. Noted in
/// the compile cache (under the cache's key, for this version of toolhost
/// and this engine) only for an extension whose definitions can depend on
/// nothing but its own bytes ([`self_contained`]). A later start then checks
/// its imports against its grants from the names, takes its definitions,
/// and neither loads nor instantiates it: its code is loaded and linked at
/// its first call. Deserializing a component's compiled metadata, linking
/// it and instantiating it were most of what each extension added to a
/// start.
#[derive(serde::Serialize, serde::Deserialize)]
struct Summary {
    imports: Vec<String>,
    exports: Vec<String>,
    definitions: Vec<ToolDecl>,
}

/// Whether a component importing `imports`, given `caps`, reaches nothing
/// outside itself while it declares its tools: no capability (an Operation,
/// or `wasi:http`), not the host's Pi profile (`host-info`), no directory,
/// no environment variable; only WASI's
/// clocks and random numbers, which no honest definitions depend on. Such a
/// component declares the same tools at every load.
fn self_contained(imports: &[String], caps: &Capabilities) -> bool {
    use crate::wit::interfaces::{Import, classify};
    let reaches = |name: &String| match classify(name) {
        // The host's Pi profile may change what it declares.
        Import::Known { interface, .. } => {
            interface.is_capability() || interface.name == "host-info"
        }
        Import::Wasi(_) => true,
        // WASI itself is linked deny-by-default; any other import is
        // refused by the import check.
        Import::Foreign | Import::OtherVersion { .. } | Import::Unknown => false,
    };
    caps.wasi.preopens.is_empty() && caps.wasi.env.is_empty() && !imports.iter().any(reaches)
}

/// The summary noted for an extension's component, if there is one and it
/// still applies under `spec`'s grants.
fn summary_of(runtime: &Runtime, spec: &ComponentSpec<'_>) -> Option<(Summary, PathBuf)> {
    let ToolSource::Extension { path } = &spec.source else {
        return None;
    };
    let body = runtime.summary(&spec.hash)?;
    let summary: Summary = serde_json::from_slice(&body).ok()?;
    self_contained(&summary.imports, &spec.caps).then(|| (summary, path.clone()))
}

/// Compile (or take from the cache) and link `spec`'s component, refusing
/// hooks it was not granted; or, when its summary was noted, check its
/// imports from the summary and leave the loading to its first call.
pub(crate) fn prepare(runtime: &Arc<Runtime>, spec: ComponentSpec<'_>) -> Result<Prepared, Error> {
    let summary = match spec.precompiled {
        None => summary_of(runtime, &spec),
        Some(_) => None,
    };
    let (sandbox, definitions, summarise) = match summary {
        Some((summary, path)) => {
            let deferred = Deferred {
                hash: spec.hash.clone(),
                path,
                grant_name: spec.grant_name.clone(),
            };
            let sandbox = Sandbox::deferred(
                runtime.clone(),
                &summary.imports,
                &summary.exports,
                deferred,
                spec.caps,
                spec.limits,
                &spec.origin,
            )?;
            (sandbox, Some(summary.definitions), None)
        }
        None => {
            let compiled = compile(
                runtime,
                spec.code,
                spec.precompiled,
                &spec.hash,
                &spec.origin,
            )?;
            let summarise = match spec.source {
                ToolSource::Extension { .. } if spec.precompiled.is_none() => {
                    let imports = crate::wit::import_names(&compiled.component);
                    self_contained(&imports, &spec.caps)
                        .then(|| (imports, crate::wit::export_names(&compiled.component)))
                }
                _ => None,
            };
            let sandbox = Sandbox::new(
                runtime.clone(),
                &compiled,
                spec.caps,
                spec.limits,
                &spec.origin,
                spec.grant_name.as_deref(),
            )?;
            (sandbox, None, summarise)
        }
    };
    let sandbox = sandbox.speaking(spec.pi);
    refuse_ungranted_hooks(
        &sandbox,
        spec.hooks,
        &spec.origin,
        spec.grant_name.as_deref(),
    )?;
    Ok(Prepared {
        sandbox: Arc::new(sandbox),
        hash: spec.hash,
        origin: spec.origin,
        source: spec.source,
        replace_builtin: spec.replace_builtin,
        namespace: spec.namespace,
        definitions,
        summarise,
    })
}

/// The compiled code of a component: the built-ins' as built, else the
/// cache's or Cranelift's now. A file left unread is read only when the
/// cache lacks its code, and must still hash to its digest.
fn compile(
    runtime: &Runtime,
    code: Code<'_>,
    precompiled: Option<&'static [u8]>,
    hash: &str,
    origin: &str,
) -> Result<crate::engine::Compiled, Error> {
    match (code, precompiled) {
        (Code::Bytes(bytes), Some(code)) => runtime.load_precompiled(bytes, code, hash, origin),
        (Code::Bytes(bytes), None) => runtime.load_compiled(bytes, hash, origin),
        (Code::Unread(file), _) => runtime.load_unread(hash, origin, || {
            crate::files::read_open(file, crate::files::MAX_COMPONENT_BYTES)
        }),
    }
}

/// A hook sees and may rewrite every call of every tool: a capability like
/// any import, refused unless granted.
fn refuse_ungranted_hooks(
    sandbox: &Sandbox,
    granted: bool,
    origin: &str,
    grant_name: Option<&str>,
) -> Result<(), Error> {
    if !sandbox.provides_hooks() || granted {
        return Ok(());
    }
    let hint = grant_name
        .map(|ext| {
            format!(
                "; grant it in toolhost.toml: {}",
                crate::wit::interfaces::grant_line(ext, "hooks")
            )
        })
        .unwrap_or_default();
    Err(Error::load(
        origin,
        format!(
            "exports {} (sees and may rewrite every call of every tool), which is not \
             granted to it{hint}",
            sandbox.hook_export()
        ),
    ))
}

/// Read a prepared component's definitions and check each.
pub(crate) async fn finish(prepared: Prepared) -> Result<Loaded, Error> {
    let Prepared {
        sandbox,
        hash,
        origin,
        source,
        replace_builtin,
        namespace,
        definitions,
        summarise,
    } = prepared;
    let fail = |reason: String| Error::load(&origin, reason);
    let hooks = sandbox.provides_hooks().then(|| sandbox.clone());
    let mut definitions = match definitions {
        Some(definitions) => {
            check_definitions_size(&definitions).map_err(fail)?;
            definitions
        }
        None if !sandbox.provides_tools() => Vec::new(),
        None => read_definitions(&sandbox).await.map_err(fail)?,
    };
    if let Some((imports, exports)) = summarise {
        let summary = Summary {
            imports,
            exports,
            definitions,
        };
        if let Ok(body) = serde_json::to_vec(&summary) {
            sandbox.runtime().note_summary(&hash, &body);
        }
        definitions = summary.definitions;
    }
    if !sandbox.provides_tools() {
        return Ok(Loaded {
            tools: Vec::new(),
            hooks,
            replace_builtin,
        });
    }
    if definitions.is_empty() {
        return Err(fail("defines no tools".into()));
    }
    let digest: std::sync::Arc<str> = crate::files::Digest::from_hex(&hash).as_str().into();
    let mut tools: Vec<RegisteredTool> = Vec::new();
    for def in definitions {
        let name = def.name.clone();
        let (mut definition, schema, output) = check_definition(def)
            .map_err(|reason| fail(format!("tool {name:?} has an invalid definition: {reason}")))?;
        if tools.iter().any(|t| t.guest_name == definition.name) {
            return Err(fail(format!("defines tool {name} twice")));
        }
        if let Some(namespace) = &namespace {
            definition.name = namespaced(namespace, &name).map_err(fail)?;
        }
        tools.push(RegisteredTool {
            guest_name: name,
            definition,
            schema,
            output,
            sandbox: sandbox.clone(),
            source: source.clone(),
            digest: digest.clone(),
        });
    }
    Ok(Loaded {
        tools,
        hooks,
        replace_builtin,
    })
}

/// What a component is, without running any tool: its capability requests
/// (imports) and its tools' definitions.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    pub path: String,
    /// The version of the `toolhost:tool` package it is built for (`0.2.0`).
    pub package_version: String,
    /// The `toolhost:tool` Operations it imports (its capability request).
    pub capabilities: Vec<String>,
    /// Other interfaces it imports (WASI is linked deny-by-default).
    pub other_imports: Vec<String>,
    pub tools: Vec<ToolDefinition>,
    /// Whether it exports hooks (`toolhost:tool/hook`).
    pub hooks: bool,
    /// Definitions the host would refuse, with the reason.
    pub problems: Vec<String>,
}

/// Read a component's imports and definitions, granting it nothing.
pub async fn inspect(runtime: &Arc<Runtime>, path: &std::path::Path) -> Result<Inspection, Error> {
    let origin = path.display().to_string();
    let bytes = crate::files::read_regular(path, crate::files::MAX_COMPONENT_BYTES)
        .and_then(|b| b.ok_or_else(|| "cannot be read: No such file or directory".to_string()))
        .map_err(|reason| Error::load(&origin, reason))?;
    inspect_bytes(runtime, &bytes, &origin).await
}

/// [`inspect`] of a component's bytes (`origin` names it in messages):
/// what is shown is exactly what was read.
pub async fn inspect_bytes(
    runtime: &Arc<Runtime>,
    bytes: &[u8],
    origin: &str,
) -> Result<Inspection, Error> {
    let origin = origin.to_string();
    let fail = |reason: String| Error::load(&origin, reason);
    let hash = blake3::hash(bytes).to_hex().to_string();
    let component = runtime.load_component(bytes, &hash, &origin)?;
    // What no grant could make load (an import of another version, or
    // that the host does not provide) is refused here, naming it, rather
    // than failing the link below.
    let imports = crate::wit::import_names(&component);
    crate::component::check_import_kinds(&imports, &crate::wit::export_names(&component), &origin)?;
    let mut capabilities = Vec::new();
    let mut other_imports = Vec::new();
    for name in imports {
        use crate::wit::interfaces::{Import, classify};
        match classify(&name) {
            Import::Known { interface, .. } if !interface.is_capability() => {}
            // `wasi:http` is one capability however many of its interfaces
            // a component imports.
            Import::Known { interface, .. } | Import::Wasi(interface) => {
                if !capabilities.iter().any(|c| c == interface.name) {
                    capabilities.push(interface.name.to_string());
                }
            }
            // Refused above.
            Import::OtherVersion { .. } | Import::Unknown => {}
            Import::Foreign => other_imports.push(name),
        }
    }
    let sandbox = Sandbox::for_inspection(runtime.clone(), &component, &origin)?;
    if !sandbox.provides_tools() {
        return Ok(Inspection {
            path: origin,
            package_version: sandbox.package_version().to_string(),
            capabilities,
            other_imports,
            tools: Vec::new(),
            hooks: sandbox.provides_hooks(),
            problems: Vec::new(),
        });
    }
    let definitions = read_definitions(&sandbox).await.map_err(fail)?;
    let mut tools = Vec::new();
    let mut problems = Vec::new();
    for def in definitions {
        let name = def.name.clone();
        match check_definition(def) {
            Ok((definition, ..)) => tools.push(definition),
            Err(reason) => problems.push(format!("tool {name:?}: {reason}")),
        }
    }
    Ok(Inspection {
        path: origin,
        package_version: sandbox.package_version().to_string(),
        capabilities,
        other_imports,
        tools,
        hooks: sandbox.provides_hooks(),
        problems,
    })
}

/// Instantiate the component once and ask it for its tools, refusing a list
/// too long or too large before anything in it is parsed.
async fn read_definitions(sandbox: &Sandbox) -> Result<Vec<ToolDecl>, String> {
    // Never cancelled: reading ends by result, trap or deadline.
    let signals = CallSignals::new(CancellationToken::new(), Duration::ZERO);
    let mut instance = sandbox
        .instantiate(signals)
        .await
        .map_err(|e| format!("instantiating failed: {}", e.message("the component")))?;
    let definitions = instance.definitions().await.map_err(|e| {
        format!(
            "reading its definitions failed: {}",
            e.message("the component")
        )
    })?;
    check_definitions_size(&definitions)?;
    Ok(definitions)
}

/// The name a tool `name` has in `namespace`: `{namespace}__{name}`, as
/// Pi 1.x names an MCP server's tools (`mcp__docs__search`). It must still
/// be a name the model providers accept.
pub(crate) fn namespaced(namespace: &str, name: &str) -> Result<String, String> {
    let full = format!("{namespace}__{name}");
    if namespace.is_empty() || !valid_tool_name(&full) {
        return Err(format!(
            "namespace {namespace:?} makes tool {name} {full:?}, which is not 1 to 64 \
             characters of letters, digits, '_' or '-'"
        ));
    }
    Ok(full)
}

/// A declared tool checked: its definition, its argument schema and its
/// output schema (when it declares one), compiled.
fn check_definition(
    def: ToolDecl,
) -> Result<(ToolDefinition, ArgumentSchema, Option<OutputSchema>), String> {
    if !valid_tool_name(&def.name) {
        return Err("the name must be 1 to 64 characters of letters, digits, '_' or '-'".into());
    }
    if def.description.trim().is_empty() {
        return Err("the description is empty".into());
    }
    let parameters: serde_json::Value = serde_json::from_str(&def.parameters)
        .map_err(|e| format!("parameters are not valid JSON: {e}"))?;
    let schema = ArgumentSchema::compile(&parameters)
        .map_err(|e| format!("parameters are not a usable JSON Schema: {e}"))?;
    let (output_schema, output) = match def.output_schema.as_deref() {
        None => (None, None),
        Some(text) => {
            let schema: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("the output schema is not valid JSON: {e}"))?;
            let compiled = OutputSchema::compile(&schema)?;
            (Some(schema), Some(compiled))
        }
    };
    let label = if def.label.trim().is_empty() {
        def.name.clone()
    } else {
        def.label
    };
    Ok((
        ToolDefinition {
            name: def.name,
            label,
            description: def.description,
            parameters,
            prompt_snippet: def.prompt_snippet.filter(|s| !s.trim().is_empty()),
            prompt_guidelines: def.prompt_guidelines,
            execution_mode: if def.sequential {
                ExecutionMode::Sequential
            } else {
                ExecutionMode::Parallel
            },
            output_schema,
        },
        schema,
        output,
    ))
}

#[cfg(test)]
mod tests {
    use super::valid_tool_name;

    #[test]
    fn names() {
        let long = "x".repeat(65);
        assert!(["read", "my_tool-2"].iter().all(|n| valid_tool_name(n)));
        assert!(!["", "has space", &long].iter().any(|n| valid_tool_name(n)));
    }
}

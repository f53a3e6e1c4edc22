//! [`Host`]: the tools of one workspace, and the entry point for batches.

use crate::bindings::types;
use crate::builtin::{self, DEFAULT_ACTIVE_TOOLS};
use crate::engine::Runtime;
use crate::error::Error;
use crate::events::EventSink;
use crate::hooks::ToolHooks;
use crate::loader::{self, ComponentSpec};
use crate::message::AssistantMessage;
use crate::ops::fs::{FsRead, FsWrite, LocalFs};
use crate::pipeline::BatchContext;
use crate::registry::{Diagnostic, RegisteredTool, Registry, ToolDefinition, ToolInfo, ToolSource};
use crate::sandbox::{Capabilities, Limits};
use crate::schedule::{self, BatchOutcome};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Configures and loads a [`Host`].
///
/// Defaults: the workspace is the current directory; built-in tools may read
/// the workspace and nothing else; extensions get no capabilities; the active
/// tools are Pi's defaults (`read`, `bash`, `edit`, `write`, those that exist)
/// plus every extension tool; a cancelled call gets one second to stop by
/// itself before it is stopped.
#[must_use]
pub struct HostBuilder {
    workspace: Option<PathBuf>,
    extensions: Vec<PathBuf>,
    active: Option<Vec<String>>,
    all_active: bool,
    hooks: Vec<Arc<dyn ToolHooks>>,
    runtime: Option<Arc<Runtime>>,
    builtin_limits: Limits,
    extension_limits: Limits,
    session_id: Option<String>,
    cancel_grace: Duration,
    sequential: bool,
    fs: Option<(Arc<dyn FsRead>, Arc<dyn FsWrite>)>,
}

impl Default for HostBuilder {
    fn default() -> Self {
        HostBuilder {
            workspace: None,
            extensions: Vec::new(),
            active: None,
            all_active: false,
            hooks: Vec::new(),
            runtime: None,
            // Built-ins decode large images and hold large files: they get
            // the pool's whole memory size.
            builtin_limits: Limits {
                memory_bytes: 1 << 30,
                ..Limits::default()
            },
            extension_limits: Limits::default(),
            session_id: None,
            cancel_grace: Duration::from_secs(1),
            sequential: false,
            fs: None,
        }
    }
}

impl HostBuilder {
    /// The directory the tools work in (and, by default, may read).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Load a tool component from this `.wasm` file (no capabilities granted).
    pub fn extension(mut self, path: impl Into<PathBuf>) -> Self {
        self.extensions.push(path.into());
        self
    }

    /// The tools the model may call; unknown names are ignored.
    pub fn active_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.active = Some(names.into_iter().map(Into::into).collect());
        self.all_active = false;
        self
    }

    /// Make every loaded tool active.
    pub fn all_tools_active(mut self) -> Self {
        self.all_active = true;
        self.active = None;
        self
    }

    /// Add before/after hooks; they run in the order added.
    pub fn hooks(mut self, hooks: Arc<dyn ToolHooks>) -> Self {
        self.hooks.push(hooks);
        self
    }

    /// Use this runtime instead of the process-wide one.
    pub fn runtime(mut self, runtime: Arc<Runtime>) -> Self {
        self.runtime = Some(runtime);
        self
    }

    pub fn builtin_limits(mut self, limits: Limits) -> Self {
        self.builtin_limits = limits;
        self
    }

    pub fn extension_limits(mut self, limits: Limits) -> Self {
        self.extension_limits = limits;
        self
    }

    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// How long a cancelled call may run on before it is stopped.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Run every batch sequentially (Pi's `toolExecution: "sequential"`).
    pub fn sequential(mut self, sequential: bool) -> Self {
        self.sequential = sequential;
        self
    }

    /// Serve the built-ins' file access from this backend instead of the disk
    /// (for example [`crate::ops::fs::MemoryFs`]).
    pub fn fs_backend<B: FsRead + FsWrite + 'static>(mut self, backend: Arc<B>) -> Self {
        self.fs = Some((backend.clone(), backend));
        self
    }

    /// Load the built-in tools and the extensions.
    ///
    /// A broken extension does not fail the build: it is reported in
    /// [`Host::diagnostics`] and the others still load.
    pub async fn build(self) -> Result<Host, Error> {
        let workspace_arg = self.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        let workspace_error = |reason: String| Error::Workspace {
            path: workspace_arg.display().to_string(),
            reason,
        };
        let workspace = workspace_arg
            .canonicalize()
            .map_err(|e| workspace_error(e.to_string()))?;
        if !workspace.is_dir() {
            return Err(workspace_error("not a directory".into()));
        }
        let runtime = match self.runtime {
            Some(rt) => rt,
            None => Runtime::shared()?,
        };
        let (fs_read, fs_write): (Arc<dyn FsRead>, Arc<dyn FsWrite>) = match self.fs {
            Some(fs) => fs,
            None => {
                let local = Arc::new(
                    LocalFs::new(std::slice::from_ref(&workspace))
                        .map_err(|e| workspace_error(format!("cannot open it: {e}")))?,
                );
                (local.clone(), local)
            }
        };

        let mut registry = Registry::default();
        let mut diagnostics = Vec::new();
        for component in builtin::BUILTIN_COMPONENTS {
            let tools = loader::load(
                &runtime,
                ComponentSpec {
                    bytes: component.bytes,
                    hash: component.hash.to_string(),
                    origin: format!("built-in {}", component.name),
                    source: ToolSource::Builtin,
                    caps: builtin::capabilities(component.name, &fs_read, &fs_write),
                    limits: self.builtin_limits,
                },
            )
            .await?;
            add_all(&mut registry, tools, &mut diagnostics);
        }
        for path in &self.extensions {
            match load_extension(&runtime, path, self.extension_limits).await {
                Ok(tools) => add_all(&mut registry, tools, &mut diagnostics),
                Err(e) => diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: match e {
                        Error::Load { reason, .. } => reason,
                        other => other.to_string(),
                    },
                }),
            }
        }

        let active: Vec<String> = if self.all_active {
            registry.names()
        } else if let Some(names) = self.active {
            names
        } else {
            DEFAULT_ACTIVE_TOOLS
                .iter()
                .map(|s| s.to_string())
                .chain(registry.extension_names())
                .collect()
        };
        registry.set_active(&active);

        Ok(Host {
            inner: Arc::new(HostInner {
                workspace,
                registry: RwLock::new(registry),
                hooks: self.hooks,
                diagnostics,
                session_id: self.session_id,
                home: std::env::var("HOME").ok().filter(|h| !h.is_empty()),
                cancel_grace: self.cancel_grace,
                sequential: self.sequential,
                changes: tokio::sync::watch::Sender::new(0),
            }),
        })
    }
}

fn add_all(registry: &mut Registry, tools: Vec<RegisteredTool>, diagnostics: &mut Vec<Diagnostic>) {
    for tool in tools {
        diagnostics.extend(registry.add(tool));
    }
}

async fn load_extension(
    runtime: &Arc<Runtime>,
    path: &Path,
    limits: Limits,
) -> Result<Vec<RegisteredTool>, Error> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Load {
        path: origin.clone(),
        reason: format!("cannot be read: {e}"),
    })?;
    let hash = blake3::hash(&bytes).to_hex().to_string();
    loader::load(
        runtime,
        ComponentSpec {
            bytes: &bytes,
            hash,
            origin,
            source: ToolSource::Extension {
                path: path.to_path_buf(),
            },
            caps: Capabilities::default(),
            limits,
        },
    )
    .await
}

/// The state every batch of a host shares.
pub(crate) struct HostInner {
    pub workspace: PathBuf,
    pub registry: RwLock<Registry>,
    pub hooks: Vec<Arc<dyn ToolHooks>>,
    pub diagnostics: Vec<Diagnostic>,
    pub session_id: Option<String>,
    pub home: Option<String>,
    pub cancel_grace: Duration,
    pub sequential: bool,
    /// Bumped whenever the tools a model may call change (see [`Host::changes`]).
    pub changes: tokio::sync::watch::Sender<u64>,
}

impl HostInner {
    /// What a tool learns about the call it runs.
    pub(crate) fn call_context(
        &self,
        tool_call_id: &str,
        tool: &RegisteredTool,
    ) -> types::CallContext {
        types::CallContext {
            tool_call_id: tool_call_id.to_string(),
            cwd: self.workspace.to_string_lossy().into_owned(),
            home: self.home.clone(),
            roots: tool.sandbox.fs_roots(),
            session_id: self.session_id.clone(),
        }
    }
}

/// The tools of one workspace. Cheap to clone; safe to share across tasks.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("workspace", &self.inner.workspace)
            .field("active", &self.active_tools())
            .finish()
    }
}

impl Host {
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The workspace's real path: the cwd tools see.
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// Every loaded tool, in registry order, with its source and state.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.inner.registry.read().expect("registry lock").infos()
    }

    /// The definitions of the active tools, in active-set order (what a
    /// provider request should carry).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let registry = self.inner.registry.read().expect("registry lock");
        registry
            .active()
            .iter()
            .filter_map(|name| registry.get(name).map(|t| t.definition.clone()))
            .collect()
    }

    /// The active tools with their source, in active-set order.
    pub fn active_tool_infos(&self) -> Vec<ToolInfo> {
        let registry = self.inner.registry.read().expect("registry lock");
        let infos = registry.infos();
        registry
            .active()
            .iter()
            .filter_map(|name| infos.iter().find(|t| &t.definition.name == name).cloned())
            .collect()
    }

    pub fn active_tools(&self) -> Vec<String> {
        self.inner
            .registry
            .read()
            .expect("registry lock")
            .active()
            .to_vec()
    }

    /// Replace the active set; unknown names are dropped (spec §3.1). Returns
    /// the new active set. Takes effect for the next batch.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) -> Vec<String> {
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
        let mut registry = self.inner.registry.write().expect("registry lock");
        let before = registry.active().to_vec();
        registry.set_active(&names);
        let after = registry.active().to_vec();
        if after != before {
            self.inner
                .changes
                .send_modify(|generation| *generation += 1);
        }
        after
    }

    /// A receiver that is marked changed whenever the active tools change
    /// (their set, order or definitions). Servers use it to tell their
    /// clients to list the tools again (MCP's `notifications/tools/list_changed`).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Problems found while loading: broken extensions, name collisions.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.inner.diagnostics
    }

    /// Execute the tool calls of one assistant message as a batch, streaming
    /// its events to `sink`. Cancelling `cancel` aborts the batch: every call
    /// still gets a result message.
    pub async fn run_batch(
        &self,
        message: &AssistantMessage,
        cancel: CancellationToken,
        sink: Arc<dyn EventSink>,
    ) -> BatchOutcome {
        let ctx = Arc::new(BatchContext {
            host: self.inner.clone(),
            message: Arc::new(message.clone()),
            cancel,
            sink,
        });
        schedule::run(ctx).await
    }
}

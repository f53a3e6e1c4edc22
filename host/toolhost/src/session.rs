//! A session: what the layers that run calls read and never write — the
//! tools (the registry with its active set), the hooks, and the settings of
//! every call. The host builds it; [`crate::batch`] and [`crate::call`] are
//! handed it, and reach nothing above it.
//!
//! The active set is the one thing that changes while a session lives. It
//! has one writer, [`ActiveTools`], which both the host
//! ([`crate::Host::set_active_tools`]) and a tool granted `tools` (through
//! [`crate::ops::tools`]) go through, and which announces every change to
//! the front ends ([`crate::Host::changes`]).

use crate::audit::AuditLog;
use crate::hooks::Hook;
use crate::permissions::{Asker, Rules};
use crate::registry::{RegisteredTool, Registry};
use crate::wit::CallContext;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The tools, hooks and call settings batches read.
pub(crate) struct Session {
    /// The one writer of the registry's active set, and the registry's
    /// only holder: read it through [`Session::registry`].
    pub tools: Arc<ActiveTools>,
    /// The embedder's hooks in the order added, then the hook components in
    /// load order.
    pub hooks: Vec<Hook>,
    pub settings: CallSettings,
    /// Where every call's line goes, if the host keeps an audit log.
    pub audit_log: Option<Arc<AuditLog>>,
    /// The order in which calls arrived, which their file mutations keep.
    pub mutations: Arc<crate::ops::fs::MutationOrder>,
    /// The permission rules, and where an "always" answer is written.
    pub permissions: Arc<Rules>,
    /// The paths no tool writes, and no question asks about.
    pub protected: Arc<crate::ops::fs::ProtectedPaths>,
    pub always_file: Option<PathBuf>,
    /// The embedder's person to ask ([`crate::HostBuilder::ask`]), for
    /// batches whose front end brings none.
    pub asker: Option<Arc<Asker>>,
    /// The person's client where the front end lends none
    /// ([`crate::HostBuilder::client`]).
    pub client: Option<Arc<dyn crate::ops::client::Client>>,
    /// The processes of the host's own session: of every front end that
    /// keeps none of its own (`serve`, `run`, MCP on stdio, a library host).
    pub processes: Arc<crate::ops::process::session::SessionProcesses>,
    /// Where its calls are recorded, or replayed from ([`crate::tape`]).
    pub deck: Option<Arc<crate::tape::Deck>>,
}

/// What every call of a session runs with.
#[derive(Clone, Debug)]
pub(crate) struct CallSettings {
    /// The workspace's real path: the cwd tools see.
    pub workspace: PathBuf,
    /// The host's `$HOME`, for tools that expand `~`.
    pub home: Option<String>,
    pub session_id: Option<String>,
    /// How long a cancelled call may run on before it is stopped.
    pub cancel_grace: Duration,
    /// Every batch runs sequentially (Pi's `toolExecution: "sequential"`).
    pub sequential: bool,
    /// Whose texts the model gets: the validator's messages follow it.
    pub pi: crate::profile::PiProfile,
}

/// The one writer of the active tool set: every change, whoever asks for
/// it, is announced to every front end watching [`Self::changes`] (MCP's
/// `list_changed` on each session and subscription stream).
pub(crate) struct ActiveTools {
    registry: Arc<RwLock<Registry>>,
    changes: tokio::sync::watch::Sender<u64>,
}

impl ActiveTools {
    pub(crate) fn new(registry: Arc<RwLock<Registry>>) -> ActiveTools {
        ActiveTools {
            registry,
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The active set now (shared, not copied).
    pub(crate) fn current(&self) -> Arc<Vec<String>> {
        self.registry.read().expect("registry lock").active_shared()
    }

    /// Replace the active set (unknown names are dropped, spec §3.1) and
    /// announce it if it changed; the new set.
    pub(crate) fn set(&self, names: &[String]) -> Vec<String> {
        let mut registry = self.registry.write().expect("registry lock");
        let before = registry.active().to_vec();
        registry.set_active(names);
        let after = registry.active().to_vec();
        drop(registry);
        if after != before {
            self.changes.send_modify(|generation| *generation += 1);
        }
        after
    }

    /// The registry whose active set this writes.
    pub(crate) fn registry(&self) -> &Arc<RwLock<Registry>> {
        &self.registry
    }

    /// Marked changed at every change of the active set.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// The `tools` Operations write through the one writer.
impl crate::ops::tools::ToolSetBackend for ActiveTools {
    fn active(&self) -> Vec<String> {
        self.current().to_vec()
    }

    fn all(&self) -> Vec<String> {
        self.registry.read().expect("registry lock").names()
    }

    fn set_active(&self, names: &[String]) {
        self.set(names);
    }
}

impl Session {
    /// The tools, to read; the active set changes only through
    /// [`Session::tools`].
    pub(crate) fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.tools.registry.read().expect("registry lock")
    }

    /// What a tool learns about the call it runs.
    pub(crate) fn call_context(&self, tool_call_id: &str, tool: &RegisteredTool) -> CallContext {
        let settings = &self.settings;
        CallContext {
            tool_call_id: tool_call_id.to_string(),
            cwd: settings.workspace.to_string_lossy().into_owned(),
            home: settings.home.clone(),
            roots: tool.sandbox.fs_roots(),
            session_id: settings.session_id.clone(),
        }
    }
}

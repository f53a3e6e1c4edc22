//! A session: what the layers that run calls read and never write — the
//! tools (the registry with its active set), the hooks, and the settings of
//! every call. The host builds it; [`crate::batch`] and [`crate::call`] are
//! handed it, and reach nothing above it.
//!
//! The active set is the one thing that changes while a session lives, and
//! only through the host ([`crate::Host::set_active_tools`]) or a tool
//! granted `tools` (through [`crate::ops::tools`]).

use crate::audit::AuditLog;
use crate::hooks::Hook;
use crate::registry::{RegisteredTool, Registry};
use crate::wit::CallContext;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The tools, hooks and call settings batches read.
pub(crate) struct Session {
    pub registry: Arc<RwLock<Registry>>,
    /// The embedder's hooks in the order added, then the hook components in
    /// load order.
    pub hooks: Vec<Hook>,
    pub settings: CallSettings,
    /// Where every call's line goes, if the host keeps an audit log.
    pub audit_log: Option<Arc<AuditLog>>,
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
}

impl Session {
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

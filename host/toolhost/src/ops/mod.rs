//! Operations: the host services a tool imports, each a narrow interface with
//! swappable backends (local disk, in memory), as Pi's per-tool Operations.
//! Each module holds plain Rust types, a backend trait and its
//! implementations; the WIT glue that serves them to a component lives in
//! [`crate::wit`]. [`usage`] is what one call did with them.

pub mod client;
pub mod fs;
pub mod http_client;
pub mod nested;
pub mod process;
pub mod protect;
pub mod remote;
pub mod search;
pub mod tools;
pub mod usage;

use std::sync::Arc;

/// Host services granted to a component. `None` means not granted (and not linked).
#[derive(Clone, Debug, Default)]
pub struct Capabilities {
    pub fs_read: Option<Arc<dyn fs::FsRead>>,
    pub fs_write: Option<Arc<dyn fs::FsWrite>>,
    pub process: Option<Arc<process::ProcessPolicy>>,
    pub search: Option<Arc<dyn search::Search>>,
    pub tools: Option<tools::ToolSet>,
    /// `wasi:http` outgoing requests to the granted hosts.
    pub http: Option<Arc<http_client::HttpPolicy>>,
    /// What it may ask the person's client.
    pub client: Option<client::ClientGrant>,
    /// It may start processes of the session (under `process`'s policy).
    pub session_processes: bool,
    /// The tools it may call through the host (`call-tools`).
    pub call_tools: Option<Arc<[String]>>,
    /// The same directories and variables through WASI, for guests whose
    /// standard library reads files (Python's `open`, JavaScript's fs).
    pub wasi: WasiCapabilities,
    /// Watches what its calls change beneath the roots its programs and
    /// WASI files may write, where the Operations cannot check each write.
    pub guard: Option<Arc<protect::GitGuard>>,
    /// Its calls' `command` argument is a shell command line (the built-in
    /// shells): permission rules read it command by command.
    pub shell: bool,
}

/// What a component sees through WASI: only what it was granted.
#[derive(Clone, Debug, Default)]
pub struct WasiCapabilities {
    /// Directories preopened at their own absolute paths; `true` if writable.
    /// Each is the directory approved when the grant was resolved, whatever
    /// lies at its path by the time a call opens it.
    pub preopens: Vec<(fs::GrantedDir, bool)>,
    /// Environment variables the component may see.
    pub env: Vec<(String, String)>,
    /// The working directory its WASI runtime starts in.
    pub cwd: Option<String>,
}

//! Errors of the library API: outcomes a caller acts on.
//!
//! Failures of a single tool call never surface here: they become an error
//! result bound to that call. Problems that do not stop the host (a broken
//! extension, a name collision) are [`Diagnostic`]s.

use serde::Serialize;

/// What went wrong building or driving a [`crate::Host`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The workspace directory cannot be used.
    #[error("workspace {path}: {reason}")]
    Workspace { path: String, reason: String },
    /// A component could not be loaded; `path` names the file (or built-in).
    #[error("{path}: {reason}")]
    Load { path: String, reason: String },
    /// A policy file is malformed or unreadable.
    #[error("{path}: {reason}")]
    Policy { path: String, reason: String },
    /// The runtime could not be set up.
    #[error("{0}")]
    Runtime(String),
    /// Input to the host (an assistant message, arguments) is malformed.
    #[error("{0}")]
    InvalidInput(String),
}

/// A problem found while loading, named by file (or tool) and cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

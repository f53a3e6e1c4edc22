//! Errors of the library API: outcomes a caller acts on.
//!
//! Failures of a single tool call never surface here: they become an error
//! result bound to that call. Problems that do not stop the host (a broken
//! extension, a name collision) are [`Diagnostic`]s.

use serde::Serialize;

/// The cause of an [`Error`], kept as it came (an I/O error, a wasmtime
/// error) so that a caller can inspect it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong building or driving a [`crate::Host`].
///
/// Its `Display` is this level only (the object and what failed); the cause,
/// when there is one, is its [`source`](std::error::Error::source). Print
/// the whole chain with [`Error::chain`], or `{:#}` of an `anyhow::Error`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The workspace directory cannot be used.
    #[error("workspace {path}: {reason}")]
    Workspace {
        path: String,
        reason: String,
        #[source]
        source: Option<std::io::Error>,
    },
    /// A component could not be loaded; `path` names the file (or built-in).
    #[error("{path}: {reason}")]
    Load {
        path: String,
        reason: String,
        #[source]
        source: Option<BoxError>,
    },
    /// A policy file is malformed or unreadable.
    #[error("{path}: {reason}")]
    Policy { path: String, reason: String },
    /// The runtime could not be set up, or one of its steps failed.
    #[error("{what}")]
    Runtime {
        what: String,
        #[source]
        source: Option<BoxError>,
    },
    /// Input to the host (an assistant message, arguments) is malformed.
    #[error("{0}")]
    InvalidInput(String),
}

impl Error {
    /// A component that cannot be loaded, for a reason of our own wording.
    pub(crate) fn load(path: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Load {
            path: path.into(),
            reason: reason.into(),
            source: None,
        }
    }

    /// A component that cannot be loaded because `what` failed with `cause`.
    pub(crate) fn load_because(
        path: impl Into<String>,
        what: impl Into<String>,
        cause: impl Into<BoxError>,
    ) -> Error {
        Error::Load {
            path: path.into(),
            reason: what.into(),
            source: Some(cause.into()),
        }
    }

    /// A failure of the runtime, in our own words.
    pub(crate) fn runtime(what: impl Into<String>) -> Error {
        Error::Runtime {
            what: what.into(),
            source: None,
        }
    }

    /// A failure of the runtime: `what` failed with `cause`.
    pub(crate) fn runtime_because(what: impl Into<String>, cause: impl Into<BoxError>) -> Error {
        Error::Runtime {
            what: what.into(),
            source: Some(cause.into()),
        }
    }

    /// The workspace cannot be used: `what` failed with `cause`.
    pub(crate) fn workspace_because(
        path: impl Into<String>,
        what: impl Into<String>,
        cause: std::io::Error,
    ) -> Error {
        Error::Workspace {
            path: path.into(),
            reason: what.into(),
            source: Some(cause),
        }
    }

    /// This error and every cause below it, joined by `": "`.
    pub fn chain(&self) -> String {
        chain_from(self.to_string(), std::error::Error::source(self))
    }

    /// What went wrong without the object it names: for a [`Error::Load`],
    /// its reason and causes (what a diagnostic shows beside the path);
    /// otherwise the whole [`Error::chain`].
    pub fn reason(&self) -> String {
        match self {
            Error::Load { reason, .. } => {
                chain_from(reason.clone(), std::error::Error::source(self))
            }
            other => other.chain(),
        }
    }
}

/// `error` and every cause below it, joined by `": "`: the one line an
/// error of another crate is shown as.
pub(crate) fn chain_of(error: &dyn std::error::Error) -> String {
    chain_from(error.to_string(), error.source())
}

/// `first`, then each error of the chain from `source` on, joined by `": "`.
fn chain_from(first: String, mut source: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut text = first;
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wasmtime_cause_keeps_every_level_once() {
        let cause = wasmtime::Error::msg("type mismatch").context("instance export `execute`");
        let e = Error::load_because("x.wasm", "cannot be linked", cause);
        assert_eq!(e.to_string(), "x.wasm: cannot be linked");
        assert_eq!(
            e.chain(),
            "x.wasm: cannot be linked: instance export `execute`: type mismatch"
        );
        assert_eq!(
            e.reason(),
            "cannot be linked: instance export `execute`: type mismatch"
        );
        assert!(std::error::Error::source(&e).is_some());
        let plain = Error::load("x.wasm", "is a directory");
        assert_eq!(plain.reason(), "is a directory");
        assert!(std::error::Error::source(&plain).is_none());
    }
}

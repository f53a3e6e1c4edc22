//! The `client` Operation: a tool asks the person's client for something
//! only the client has: a form the person fills in (MCP's elicitation), a
//! completion from the client's model (sampling), the client's roots.
//!
//! The requests and answers are MCP's own JSON (`elicitation/create`,
//! `sampling/createMessage`, `roots/list` and their results): MCP is the
//! front end whose clients answer them, and a library user's [`Client`]
//! reads the same shapes. The WIT glue builds and checks them; a front end
//! only carries them.
//!
//! What a component may ask is its grant's (`client = ["elicitation",
//! "sampling", "roots"]`, [`ClientGrant`]); what the front end can answer is
//! its client's ([`ClientCaps`]). A component sees their intersection.

use futures::future::BoxFuture;
use serde_json::Value;
use std::fmt;

/// A kind of request to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientMethod {
    /// `elicitation/create`: a form for the person.
    Elicitation,
    /// `sampling/createMessage`: a completion of the client's model.
    Sampling,
    /// `roots/list`: the client's roots.
    Roots,
}

impl ClientMethod {
    pub const ALL: [ClientMethod; 3] = [
        ClientMethod::Elicitation,
        ClientMethod::Sampling,
        ClientMethod::Roots,
    ];

    /// Its name in a grant and in MCP's client capabilities.
    pub fn name(self) -> &'static str {
        match self {
            ClientMethod::Elicitation => "elicitation",
            ClientMethod::Sampling => "sampling",
            ClientMethod::Roots => "roots",
        }
    }

    /// The MCP method that asks it.
    pub fn method(self) -> &'static str {
        match self {
            ClientMethod::Elicitation => "elicitation/create",
            ClientMethod::Sampling => "sampling/createMessage",
            ClientMethod::Roots => "roots/list",
        }
    }

    pub fn named(name: &str) -> Option<ClientMethod> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl fmt::Display for ClientMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which kinds of request: what a grant names, or what a client declared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCaps {
    pub elicitation: bool,
    pub sampling: bool,
    pub roots: bool,
}

impl ClientCaps {
    pub fn has(&self, method: ClientMethod) -> bool {
        match method {
            ClientMethod::Elicitation => self.elicitation,
            ClientMethod::Sampling => self.sampling,
            ClientMethod::Roots => self.roots,
        }
    }

    pub fn and(self, other: ClientCaps) -> ClientCaps {
        ClientCaps {
            elicitation: self.elicitation && other.elicitation,
            sampling: self.sampling && other.sampling,
            roots: self.roots && other.roots,
        }
    }

    /// These kinds and `method` too.
    pub fn with(mut self, method: ClientMethod) -> ClientCaps {
        match method {
            ClientMethod::Elicitation => self.elicitation = true,
            ClientMethod::Sampling => self.sampling = true,
            ClientMethod::Roots => self.roots = true,
        }
        self
    }
}

/// What an extension's `client` grant lets it ask.
pub type ClientGrant = ClientCaps;

/// One request, under the key the tool chose for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientRequest {
    pub key: String,
    pub method: ClientMethod,
    /// The MCP request's `params`.
    pub params: Value,
}

impl ClientRequest {
    /// The request as a client is sent it: a form's message first names the
    /// tool that asks, so that no tool's form passes for toolhost's own
    /// permission question (which begins `toolhost: permission needed`).
    pub fn attributed(&self, tool: &str) -> ClientRequest {
        let mut request = self.clone();
        if request.method == ClientMethod::Elicitation {
            let message = request.params["message"].as_str().unwrap_or_default();
            request.params["message"] = serde_json::json!(format!("Tool {tool} asks:\n{message}"));
        }
        request
    }
}

/// Why a request got no answer.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientError {
    /// The client cannot answer this kind (it did not declare it, or the
    /// front end has none).
    NotSupported(ClientMethod),
    /// The call was cancelled, or (on MCP 2026-07-28) stopped to ask by an
    /// input-required result.
    Cancelled,
    /// The client answered with an error, or not at all.
    Failed(String),
}

/// The answers of a [`Client`] to a call's requests, to come.
pub type Answers<'a> = BoxFuture<'a, Result<Vec<Value>, ClientError>>;

/// The person's client, as a front end reaches it for one call.
pub trait Client: Send + Sync {
    /// What it declared it can answer.
    fn capabilities(&self) -> ClientCaps;

    /// The MCP results answering `requests`, in their order. Every request
    /// is of a kind [`Self::capabilities`] holds (the glue checks).
    fn request<'a>(&'a self, tool: &'a str, requests: &'a [ClientRequest]) -> Answers<'a>;
}

/// The client one call asks, with the name of the tool that asks (the
/// client is told it), how often it asked, and how long it waited.
pub(crate) struct CallClient {
    pub client: std::sync::Arc<dyn Client>,
    pub tool: String,
    /// `request`s so far ([`MAX_CLIENT_ASKS`]).
    pub asked: std::sync::atomic::AtomicU32,
    /// Microseconds spent waiting for answers: a person filling in a form
    /// does not use up the call's time limit (each wait has its own bound,
    /// [`crate::permissions::DEFAULT_WAIT`]).
    pub waited_us: std::sync::atomic::AtomicU64,
}

impl CallClient {
    pub(crate) fn new(client: std::sync::Arc<dyn Client>, tool: String) -> CallClient {
        CallClient {
            client,
            tool,
            asked: Default::default(),
            waited_us: Default::default(),
        }
    }

    pub(crate) fn waited(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.waited_us.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// A log message's level, least severe first (MCP's, from RFC 5424).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

/// Most log messages forwarded for one call; later ones are dropped.
pub const MAX_LOG_MESSAGES: u32 = 1000;
/// Longest log message forwarded (bytes; longer ones are cut at a
/// character boundary).
pub const MAX_LOG_BYTES: usize = 16 << 10;
/// Most `request`s one call may make: a tool that asks in a loop is
/// stopped, not the person's patience.
pub const MAX_CLIENT_ASKS: u32 = 64;
/// Most requests in one `request`.
pub const MAX_REQUESTS: usize = 16;
/// Largest request (its JSON), and largest answer passed back.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// Whether `key` may name a request: `^[A-Za-z0-9_.-]{1,64}$`.
pub fn valid_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

//! toolhost runs an LLM agent's tools as sandboxed WebAssembly components,
//! with the call pipeline of the Pi coding agent. The behaviour reproduced
//! is written down in `docs/spec.md`; comments cite its sections as `§N.N`.
//!
//! # Architecture: where a tool call goes
//!
//! The layers run one way, each calling only those below it
//! (`docs/architecture.md` follows one call through every module, from the
//! command line to the disk and back):
//!
//! * [`Host`] (`host`) builds a session from the configuration: the
//!   [`extensions`] found and trusted, under their grants (policy, trust,
//!   discovery), the built-in components embedded in the binary (`builtin`),
//!   each loaded by the `loader` into the `registry` with the active set
//!   the model may call. [`Host::batch`] runs an assistant message's
//!   calls, [`Host::call`] one call.
//! * The session (`session`) is what the layers below read: the registry,
//!   the hooks and the call settings. Nothing below reaches back to the host.
//! * `batch` is Pi's scheduler: the preflight in source order, parallel or
//!   sequential execution, the event order, terminate and abort.
//! * [`permissions`] holds the `[permissions]` rules and asking: what a
//!   call that needs more than it was granted, or that an `ask` rule
//!   names, gets from the rules or the person behind the front end.
//! * `call` is one call's pipeline: lookup → a fresh instance →
//!   `prepare-arguments` → `validate` (coercion + JSON Schema) → before
//!   `hooks` → execute → after hooks → result message.
//! * `component` is a loaded component template and its per-call
//!   instance: a fresh store, memory and time limits, cancellation, and only
//!   the host Operations ([`ops`]) its component was granted: files (within
//!   their roots, never a protected path), processes (in the process jail),
//!   search, the active tools.
//! * One shared wasmtime engine (`engine`) with a pooling allocator, epoch
//!   interruption and a compiled-code cache on disk (verified before use)
//!   serves every host.
//! * Everything the caller sees is a Pi-shaped `message` or `events`
//!   value; a failing call is an error result bound to its call id, never a
//!   host error.
//!
//! # Speaking to other programs
//!
//! * [`formats`] turns the active tools into each consumer's shape (OpenAI,
//!   Anthropic, MCP, toolhost's own) and builds Pi's system-prompt section
//!   from their snippets and guidelines.
//! * `serve` (feature `serve`, on by default) is a JSON-RPC 2.0 server (one
//!   object per line) for agent loops in any language: list tools, run
//!   batches with streamed events, cancel.
//! * `mcp` (feature `mcp`, on by default) is a Model Context Protocol server
//!   on the official Rust SDK; `watch` tells it when extension files change.
//! * [`http`] (feature `http`, on by default) is the HTTP listener both
//!   servers can run on, with the rules every request passes first (Host,
//!   Origin, bearer token, bounds).
//!
//! # Showing it to a person
//!
//! [`display`] escapes what a terminal would obey or hide (control
//! characters, bidi overrides, invisible characters) in the names,
//! descriptions, arguments and paths a person reads; every view of the
//! command line and its error lines print through it. Values returned by
//! the library, JSON and the model's texts stay as they are.

// The wings, highest first. A module may import its own wing and the wings
// below it, never one above: `scripts/module-cycles` reads this list (each
// `// wing:` line and the modules under it) and fails on an import against
// the order, at the level of folders and of files. Where a module goes is
// said by what it owns, not by who calls it.

// wing: frontend. The protocol servers and what only they use: the MCP
// server (its wire, sessions, resumable streams, features, the workspace's
// files as resources and the extensions' offers), JSON-RPC's
// `serve`, the HTTP listener both run on, the file watcher that reloads
// them, and the tool list in each consumer's shape. Imports every wing.
pub mod formats;
#[cfg(feature = "http")]
pub mod http_server;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "serve")]
pub mod serve;
#[cfg(feature = "mcp")]
pub mod watch;
pub mod workspace_service;

// wing: host. The session a front end drives: the builder that reads the
// configuration and loads the tools, and `Host`'s requests (one call or a
// batch). Imports pipeline and below.
mod host;

// wing: pipeline. Pi's pipeline around every call: the scheduler (`batch`),
// one call (`call`), its hooks, the session's settings the calls read, the
// events and the audit log. Imports supply and below.
pub mod audit;
mod batch;
mod call;
mod events;
mod hooks;
mod session;

// wing: supply. Where components come from and what they are granted: the
// built-ins compiled in, extensions discovered, trusted, installed from
// registries and signed, and the policy files that grant them. Imports
// sandbox and below.
mod builtin;
pub mod extensions;

// wing: sandbox. A component as the engine runs it: the shared engine and
// its compile cache, the loader and the registry of loaded tools, the
// per-call store and instance, and the WIT glue of every contract version.
// Imports policy and below.
mod component;
mod engine;
mod engine_config;
mod loader;
mod registry;
mod store;
pub mod tape;
mod wit;

// wing: policy. What a component may do: the capability table (each grant,
// its interface and its Operations) and the permission rules and asks.
// Imports ops and below.
mod capability;
pub mod permissions;

// wing: ops. The Operations: what a tool can do to the world (files,
// processes and their jail, search, HTTP, the client, nested calls, the
// protected paths), each behind a trait. Imports base only.
mod ops;

// wing: base. What everything shares and nothing here may extend: the
// messages, errors, JSON Schema validation, JSON-RPC messages as they
// arrive, what a terminal is shown, the host's own bounded file reads, the
// Pi profile, the `*` pattern. Imports nothing of the crate.
pub mod display;
mod error;
mod files;
pub mod jsonrpc;
mod message;
mod profile;
#[cfg(test)]
mod testing;
mod validate;
mod wildcard;

/// Remote workspaces: how toolhost reaches a workspace service
/// ([`Transport`](remote::Transport), [`Connection`](remote::Connection),
/// given to [`HostBuilder::remote_workspace`]) and what they say
/// (`wire`).
pub mod remote {
    pub use crate::ops::remote::{
        Connection, RemoteFs, RemoteSearch, RemoteToolhost, Runner, Transport, wire,
    };
}

/// For backend authors: the filesystem and search traits a host's built-in
/// tools may run on instead of the local disk (`BuiltinSettings::fs`), and
/// the in-memory filesystem the tests use.
pub mod backend {
    pub use crate::ops::fs;
    pub use crate::ops::search;
}

/// The person's client, as a front end lends it to a call: a tool of
/// `toolhost:tool@0.3.0` granted `client` may ask it for a form
/// (elicitation), a completion of its model (sampling) or its roots
/// ([`Request::client`]); and the levels of a tool's log messages.
pub mod client {
    pub use crate::ops::client::{
        Answers, Client, ClientCaps, ClientError, ClientMethod, ClientRequest, LogLevel,
        MAX_LOG_BYTES, MAX_LOG_MESSAGES,
    };
}

/// What this machine offers the confinement (`toolhost doctor`): the jail,
/// Landlock, and how resource limits are enforced.
pub mod doctor {
    pub use crate::ops::process::doctor::Layer;
    pub use crate::ops::process::jail::{Support, support as jail_support};
    pub use crate::ops::process::landlock;
    pub use crate::ops::process::limits::{Enforcement, enforcement};

    /// Every layer that confines what tools are granted, as each capability
    /// reports it, probed on this machine.
    pub fn layers() -> Vec<Layer> {
        crate::capability::doctor()
    }
}

/// The package's bindings and the git guard, for the benchmark suite's
/// baselines; not an API.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::ops::protect::GitGuard;
    pub use crate::wit::glue as bindings;
}

pub use batch::BatchOutcome;
pub use builtin::{DEFAULT_ACTIVE_TOOLS, DEFAULT_COMMAND_TIMEOUT};
pub use call::OPERATION_ABORTED;
pub use capability::GrantSpec;
pub use component::{Capabilities, Limits, MAX_PROGRESS_BYTES, MAX_PROGRESS_UPDATES};
pub use engine::{EPOCH_TICK, Runtime, RuntimeOptions, default_cache_dir};
pub use error::{BoxError, Error};
pub use events::{Event, EventSink, NoEvents};
pub use formats::ToolFormat;
pub use hooks::{
    AfterAnswer, AfterToolCallContext, AfterToolCallResult, BeforeAnswer, BeforeToolCallContext,
    BeforeToolCallResult, ToolHooks,
};
pub use host::{
    Batch, BuiltinSettings, CallRequest, ExtensionSettings, Host, HostBuilder, OneCall, Request,
    ServedWorkspace,
};
pub use loader::{Inspection, inspect};
pub use message::{
    AssistantMessage, ContentBlock, EmbeddedResource, PartialResult, StopReason, ToolCall,
    ToolResult, ToolResultMessage,
};
pub use ops::process::session::{ProcessInfo, SessionProcesses, State as ProcessState};
pub use ops::process::{Confinement, JailMode, ProcessLimits, ProcessPolicy};
pub use profile::PiProfile;
pub use registry::{Diagnostic, ExecutionMode, Exposure, ToolDefinition, ToolInfo, ToolSource};
pub use tokio_util::sync::CancellationToken;

/// The book's Rust example (docs/guide.md, "Use it"), compiled (not run)
/// with the tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide.md")]
mod guide {}

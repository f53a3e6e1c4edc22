//! toolhost's integration tests: one binary, real components, real files.
//! Each test has its own temporary workspace; the engine and its compile
//! cache are shared by the whole process.

mod audit;
mod author;
mod bash;
mod book;
mod cases;
mod cli;
mod client;
mod conformance;
mod edit;
mod examples;
mod extensions;
mod formats;
mod grants;
mod hooks;
mod hostile;
mod hostile_trust;
mod hostile_view;
mod http;
mod jail;
mod loopback;
mod mcp;
mod mcp_resources;
mod mcp_sessions;
mod mcp_wire;
mod nested;
mod order;
mod permissions;
mod pipeline;
mod protect;
mod read;
mod registry;
mod remote;
mod replay;
mod sandbox;
mod search;
mod serve;
mod serve_http;
mod session_processes;
mod support;
mod validation;
mod view;
mod write;

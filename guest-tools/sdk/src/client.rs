//! The person's client, through the host's `client` Operation (needs the
//! `client` grant, naming what may be asked: `client = ["elicitation",
//! "sampling", "roots"]`), and log messages for it ([`log`], no grant).
//!
//! On a client of MCP 2026-07-28 a call that asks is stopped where it asks
//! and run again from the start once the client answers; the same
//! [`request`] (the same keys) then returns at once. Ask before changing
//! anything, and ask for what one step needs in one [`request`].

pub use crate::bindings::toolhost::tool::client::{
    ClientCapabilities, ClientError, ElicitationAction, ElicitationRequest, ElicitationResponse,
    InputRequest, InputResponse, Role, Root, SamplingMessage, SamplingRequest, SamplingResponse,
    capabilities, request,
};
pub use crate::bindings::toolhost::tool::logging::Level;

/// Send a log message to the person's client (MCP's
/// `notifications/message`; a `tool_execution_log` event elsewhere).
pub fn log(level: Level, message: &str) {
    crate::bindings::toolhost::tool::logging::log(level, None, message);
}

/// A form for the person: `message`, and the JSON Schema of its fields.
pub fn elicitation(message: &str, schema: &serde_json::Value) -> InputRequest {
    InputRequest::Elicitation(ElicitationRequest {
        message: message.into(),
        requested_schema: schema.to_string(),
    })
}

/// One user message for the client's model, at most `max_tokens` back.
pub fn sampling(prompt: &str, max_tokens: u32) -> InputRequest {
    InputRequest::Sampling(SamplingRequest {
        messages: vec![SamplingMessage {
            role: Role::User,
            content: crate::Content::Text(prompt.into()).into_wit(),
        }],
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: Vec::new(),
    })
}

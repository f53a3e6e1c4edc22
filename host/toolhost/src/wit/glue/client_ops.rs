//! `logging` (since 0.3.0), served by the call's own state like
//! progress, and `client`, served from the call's client
//! ([`crate::ops::client`]). The glue builds MCP's requests from the
//! component's records and checks the client's answers before the
//! component sees them: the client is another party, and its answers are
//! data like any other input.

use super::{Block, client, logging};
use crate::message::ContentBlock;
use crate::ops::client::{
    ClientError, ClientMethod, ClientRequest, LogLevel, MAX_CLIENT_ASKS, MAX_REQUEST_BYTES,
    MAX_REQUESTS, valid_key,
};
use crate::ops::usage::Use;
use crate::permissions::DEFAULT_WAIT;
use crate::store::CallState;
use crate::tape::{Asked, taped};
use crate::wit::OpsCtx;
use crate::wit::WitBlock;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;

impl logging::Host for CallState {
    fn log(
        &mut self,
        level: logging::Level,
        logger: Option<String>,
        message: String,
    ) -> wasmtime::Result<()> {
        let level = match level {
            logging::Level::Debug => LogLevel::Debug,
            logging::Level::Info => LogLevel::Info,
            logging::Level::Notice => LogLevel::Notice,
            logging::Level::Warning => LogLevel::Warning,
            logging::Level::Error => LogLevel::Error,
            logging::Level::Critical => LogLevel::Critical,
            logging::Level::Alert => LogLevel::Alert,
            logging::Level::Emergency => LogLevel::Emergency,
        };
        self.signals.log(level, logger, message);
        Ok(())
    }
}

type Reply = wasmtime::Result<Result<Vec<client::InputResponse>, client::ClientError>>;

impl client::Host for OpsCtx<'_> {
    fn capabilities(&mut self) -> wasmtime::Result<client::ClientCapabilities> {
        let granted = self.caps.client.unwrap_or_default();
        let declared = self
            .client
            .map(|c| c.client.capabilities())
            .unwrap_or_default();
        let both = granted.and(declared);
        Ok(client::ClientCapabilities {
            elicitation: both.elicitation,
            sampling: both.sampling,
            roots: both.roots,
        })
    }

    async fn request(&mut self, requests: Vec<(String, client::InputRequest)>) -> Reply {
        let invalid = |why: String| Ok(Err(client::ClientError::InvalidInput(why)));
        if requests.is_empty() || requests.len() > MAX_REQUESTS {
            return invalid(format!(
                "a request asks 1 to {MAX_REQUESTS} things, not {}",
                requests.len()
            ));
        }
        let granted = self.caps.client.unwrap_or_default();
        let mut built = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            if !valid_key(&key) {
                return invalid(format!(
                    "the key {key:?} is not 1 to 64 of A-Z, a-z, 0-9, _, . and -"
                ));
            }
            if built.iter().any(|r: &ClientRequest| r.key == key) {
                return invalid(format!("the key {key:?} is used twice"));
            }
            let (method, params) = match request_params(request) {
                Ok(built) => built,
                Err(why) => return invalid(format!("{key}: {why}")),
            };
            if !granted.has(method) {
                self.usage
                    .note(Use::Denied, &format!("client {method} {key}: not granted"));
                return Ok(Err(client::ClientError::NotGranted(format!(
                    "asking the client for {method} is not granted; grant it in toolhost.toml: \
                     client = [\"{method}\"]"
                ))));
            }
            if params.to_string().len() > MAX_REQUEST_BYTES {
                return invalid(format!("{key}: larger than {MAX_REQUEST_BYTES} bytes"));
            }
            built.push(ClientRequest {
                key,
                method,
                params,
            });
        }
        // Asked on the call's tape: a replay is answered as the client
        // answered, and checks the answers as they were checked.
        let tape = self.on_tape(|_| Asked::Client {
            requests: built
                .iter()
                .map(|r| (r.key.clone(), r.method, r.params.clone()))
                .collect(),
        });
        let (cancel, call_client) = (self.cancel, self.client);
        let live = async {
            if cancel.is_cancelled() {
                return Err(ClientError::Cancelled);
            }
            let Some(call_client) = call_client else {
                return Err(ClientError::NotSupported(built[0].method));
            };
            if call_client.asked.fetch_add(1, Ordering::Relaxed) >= MAX_CLIENT_ASKS {
                return Err(ClientError::Failed(format!(
                    "this call asked the client {MAX_CLIENT_ASKS} times, the most one call may"
                )));
            }
            let started = std::time::Instant::now();
            let answers = tokio::select! {
                answers = call_client.client.request(&call_client.tool, &built) => answers,
                () = cancel.cancelled() => Err(ClientError::Cancelled),
                () = tokio::time::sleep(DEFAULT_WAIT) => Err(ClientError::Failed(format!(
                    "the client did not answer within {} s",
                    DEFAULT_WAIT.as_secs()
                ))),
            };
            let waited = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            call_client.waited_us.fetch_add(waited, Ordering::Relaxed);
            answers
        };
        let answers = match taped(tape, live).await? {
            Ok(answers) if answers.len() == built.len() => answers,
            Ok(_) => {
                let why = "the client answered another number of requests".to_string();
                return Ok(Err(client::ClientError::Failed(why)));
            }
            Err(ClientError::NotSupported(method)) => return Ok(Err(not_supported(method))),
            Err(ClientError::Cancelled) => return Ok(Err(client::ClientError::Cancelled)),
            Err(ClientError::Failed(why)) => {
                return Ok(Err(client::ClientError::Failed(why)));
            }
        };
        let mut responses = Vec::with_capacity(answers.len());
        for (request, answer) in built.iter().zip(answers) {
            let response = match response_of(request.method, answer) {
                Ok(response) => response,
                Err(why) => {
                    let why = format!("the client's answer to {}: {why}", request.key);
                    return Ok(Err(client::ClientError::Failed(why)));
                }
            };
            self.usage.note(
                Use::Client,
                &format!("{} {}: {}", request.method, request.key, outcome(&response)),
            );
            responses.push(response);
        }
        Ok(Ok(responses))
    }
}

fn not_supported(method: ClientMethod) -> client::ClientError {
    client::ClientError::NotSupported(format!(
        "the client cannot be asked for {method} (it did not declare it, or this front end has no client)"
    ))
}

/// What the audit line says of an answer.
fn outcome(response: &client::InputResponse) -> &'static str {
    match response {
        client::InputResponse::Elicitation(e) => match e.action {
            client::ElicitationAction::Accept => "accept",
            client::ElicitationAction::Decline => "decline",
            client::ElicitationAction::Cancel => "cancel",
        },
        client::InputResponse::Sampling(_) => "answered",
        client::InputResponse::Roots(_) => "answered",
    }
}

fn role_name(role: client::Role) -> &'static str {
    match role {
        client::Role::User => "user",
        client::Role::Assistant => "assistant",
    }
}

/// The MCP method and params of one request; an error says what is wrong
/// with it.
fn request_params(request: client::InputRequest) -> Result<(ClientMethod, Value), String> {
    match request {
        client::InputRequest::Elicitation(e) => {
            let schema: Value = serde_json::from_str(&e.requested_schema)
                .map_err(|err| format!("the requested schema is not JSON: {err}"))?;
            let flat = schema.get("type").and_then(Value::as_str) == Some("object")
                && schema.get("properties").is_some_and(Value::is_object);
            if !flat {
                return Err("the requested schema is not an object schema with properties".into());
            }
            Ok((
                ClientMethod::Elicitation,
                json!({"mode": "form", "message": e.message, "requestedSchema": schema}),
            ))
        }
        client::InputRequest::Sampling(s) => {
            let mut messages = Vec::with_capacity(s.messages.len());
            for m in s.messages {
                let content = Block::into_host(m.content);
                if matches!(content, ContentBlock::Resource { .. }) {
                    return Err("a sampling message cannot hold a resource".into());
                }
                messages.push(json!({"role": role_name(m.role), "content": content}));
            }
            let mut params = json!({"messages": messages, "maxTokens": s.max_tokens});
            if let Some(system) = s.system_prompt {
                params["systemPrompt"] = json!(system);
            }
            if let Some(t) = s.temperature {
                params["temperature"] = json!(t);
            }
            if !s.stop_sequences.is_empty() {
                params["stopSequences"] = json!(s.stop_sequences);
            }
            Ok((ClientMethod::Sampling, params))
        }
        client::InputRequest::Roots => Ok((ClientMethod::Roots, json!({}))),
    }
}

/// The component's record of the client's answer `result` to a request of
/// `method`; an error says how it does not fit.
fn response_of(method: ClientMethod, result: Value) -> Result<client::InputResponse, String> {
    if result.to_string().len() > MAX_REQUEST_BYTES {
        return Err(format!("larger than {MAX_REQUEST_BYTES} bytes"));
    }
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_string);
    match method {
        ClientMethod::Elicitation => {
            let action = match result.get("action").and_then(Value::as_str) {
                Some("accept") => client::ElicitationAction::Accept,
                Some("decline") => client::ElicitationAction::Decline,
                Some("cancel") => client::ElicitationAction::Cancel,
                _ => return Err("no action accept, decline or cancel".into()),
            };
            let content = match result.get("content") {
                Some(c) if c.is_object() => Some(c.to_string()),
                Some(Value::Null) | None => None,
                Some(_) => return Err("its content is not an object".into()),
            };
            Ok(client::InputResponse::Elicitation(
                client::ElicitationResponse { action, content },
            ))
        }
        ClientMethod::Sampling => {
            let role = match result.get("role").and_then(Value::as_str) {
                Some("user") => client::Role::User,
                Some("assistant") | None => client::Role::Assistant,
                Some(other) => return Err(format!("the role {other:?} is not user or assistant")),
            };
            // A single block, or (2025-11-25) a list of them: the first.
            let content = match result.get("content") {
                Some(Value::Array(blocks)) => blocks.first().cloned(),
                other => other.cloned(),
            }
            .ok_or("no content")?;
            let content: ContentBlock = serde_json::from_value(content)
                .map_err(|e| format!("its content is not a text, image or audio block: {e}"))?;
            Ok(client::InputResponse::Sampling(client::SamplingResponse {
                role,
                content: Block::from_host(content),
                model: text(&result, "model").unwrap_or_default(),
                stop_reason: text(&result, "stopReason"),
            }))
        }
        ClientMethod::Roots => {
            let roots = result
                .get("roots")
                .and_then(Value::as_array)
                .ok_or("no list of roots")?;
            let roots = roots
                .iter()
                .map(|r| {
                    Ok(client::Root {
                        uri: text(r, "uri").ok_or("a root without a uri")?,
                        name: text(r, "name"),
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(client::InputResponse::Roots(roots))
        }
    }
}

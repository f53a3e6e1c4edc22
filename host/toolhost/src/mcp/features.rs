//! What `toolhost mcp` serves beside tools: resources, prompts and
//! completions.
//!
//! * Resources: the workspace's files through the grant `read` holds
//!   ([`super::resources`]: listed as `find` walks, `.gitignore` honoured,
//!   hidden paths never named), the template `file:///{path}`, and what the
//!   extensions' manifests offer ([`super::offers`]). A URI that
//!   names nothing servable is `-32602` with the URI in `data` (SEP-2164).
//!   `resources/subscribe` (and a 2026-07-28 `subscriptions/listen` stream's
//!   `resourceSubscriptions`) watch a file by its contents and tell the
//!   client when it changed, whoever wrote it.
//! * Prompts: `toolhost`, the system-prompt text of the active tools (what
//!   `toolhost prompt` prints), one per active tool with a snippet or
//!   guidelines, and the extensions' prompts with their arguments, images
//!   and embedded resources (read through the resources' checks).
//! * Completions: a prompt argument's declared values, and workspace paths
//!   for the template's `{path}`, as a shell completes them.

use super::McpServer;
use super::offers::{self, ResourceSpec, Role};
use super::resources::{self, Contents};
use super::{not_found, refused, resources_off};
use crate::formats;
use rmcp::ErrorData as McpError;
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value, json};

/// The prompt of the whole system-prompt section.
const SYSTEM_PROMPT: &str = "toolhost";

/// A resource's contents as MCP's `ResourceContents`.
fn contents_json(contents: Contents) -> Value {
    match contents {
        Contents::Text {
            uri,
            mime_type,
            text,
        } => json!({ "uri": uri, "mimeType": mime_type, "text": text }),
        Contents::Blob {
            uri,
            mime_type,
            blob,
        } => json!({ "uri": uri, "mimeType": mime_type, "blob": blob }),
    }
}

/// An offered resource's contents at `uri`, its template's parts filled in.
fn offered_contents(spec: &ResourceSpec, uri: &str, values: &[(String, String)]) -> Value {
    let mut contents = json!({ "uri": uri });
    if let Some(mime) = &spec.mime_type {
        contents["mimeType"] = json!(mime);
    }
    match (&spec.text, &spec.blob) {
        (Some(text), _) => contents["text"] = json!(offers::substitute(text, values)),
        (None, Some(blob)) => contents["blob"] = json!(blob.trim()),
        (None, None) => {}
    }
    contents
}

fn listed_offer(spec: &ResourceSpec) -> Value {
    let mut entry = json!({
        "name": spec.name,
        "description": spec.description.clone().unwrap_or_else(|| spec.name.clone()),
    });
    if spec.is_template() {
        entry["uriTemplate"] = json!(spec.uri);
    } else {
        entry["uri"] = json!(spec.uri);
    }
    if let Some(title) = &spec.title {
        entry["title"] = json!(title);
    }
    if let Some(mime) = &spec.mime_type {
        entry["mimeType"] = json!(mime);
    }
    entry
}

impl McpServer {
    /// `resources/list`: the offered resources first, then the
    /// workspace's files a page at a time.
    pub(super) fn list_resources_page(&self, cursor: Option<&str>) -> Result<Value, McpError> {
        let host = self.served();
        let mut listed: Vec<Value> = Vec::new();
        if cursor.is_none() {
            listed.extend(
                host.offers()
                    .resources
                    .iter()
                    .filter(|r| !r.spec.is_template())
                    .map(|r| listed_offer(&r.spec)),
            );
        }
        let mut next = None;
        if let Some(files) = host.files() {
            let page = files
                .list(cursor)
                .map_err(|e| super::internal("listing the workspace's files", e))?;
            next = page.next_cursor;
            listed.extend(page.resources.into_iter().map(|file| {
                let mut entry = json!({
                    "uri": file.uri,
                    "name": file.name,
                    "description": format!("{} in the workspace", file.name),
                });
                if let Some(mime) = file.mime_type {
                    entry["mimeType"] = json!(mime);
                }
                entry
            }));
        }
        let mut result = json!({ "resources": listed, "resultType": "complete" });
        if let Some(next) = next {
            result["nextCursor"] = json!(next);
        }
        Ok(result)
    }

    /// `resources/templates/list`: `file:///{path}` and the offered
    /// templates.
    pub(super) fn list_templates(&self) -> Value {
        let host = self.served();
        let mut templates = Vec::new();
        if host.files().is_some() {
            templates.push(json!({
                "uriTemplate": resources::TEMPLATE,
                "name": "Workspace file",
                "description": format!(
                    "A file of the workspace ({}) by its absolute path; complete {{path}} to \
                     find one", host.workspace_shown().display()
                ),
            }));
        }
        templates.extend(
            host.offers()
                .resources
                .iter()
                .filter(|r| r.spec.is_template())
                .map(|r| listed_offer(&r.spec)),
        );
        json!({ "resourceTemplates": templates, "resultType": "complete" })
    }

    /// The contents of `uri` as `resources/read` returns them (an offered
    /// resource, else a workspace file).
    pub(super) async fn read_contents(&self, uri: &str) -> Result<Value, McpError> {
        let host = self.served();
        if let Some((spec, values)) = host.offers().resource(uri) {
            return Ok(offered_contents(spec, uri, &values));
        }
        let Some(files) = host.files() else {
            return Err(resources_off(uri));
        };
        // The file is read on a blocking thread: it may be large, or slow.
        let (files, owned) = (files.clone(), uri.to_string());
        let read = tokio::task::spawn_blocking(move || files.read(&owned))
            .await
            .map_err(|e| super::internal("reading the resource", e))?;
        read.map(contents_json).map_err(|r| refused(&r))
    }

    /// `prompts/list`.
    pub(super) fn list_prompts_all(&self) -> Value {
        let mut prompts = vec![json!({
            "name": SYSTEM_PROMPT,
            "title": "toolhost's tools",
            "description": "What each active tool does and how to use them: the system-prompt \
                            text `toolhost prompt` prints for them",
        })];
        let host = self.served();
        let definitions = host.definitions();
        for d in &definitions {
            if d.prompt_snippet.is_none() && d.prompt_guidelines.is_empty() {
                continue;
            }
            prompts.push(json!({
                "name": d.name,
                "title": d.label,
                "description": format!("How to use the {} tool", d.name),
            }));
        }
        let taken =
            |name: &str| name == SYSTEM_PROMPT || definitions.iter().any(|d| d.name == name);
        for offered in host
            .offers()
            .prompts
            .iter()
            .filter(|p| !taken(&p.spec.name))
        {
            let spec = &offered.spec;
            let mut prompt = json!({
                "name": spec.name,
                "description": spec.description.clone().unwrap_or_else(|| spec.name.clone()),
                "arguments": spec.arguments.iter().map(|a| {
                    let mut argument = json!({ "name": a.name, "required": a.required });
                    if let Some(d) = &a.description {
                        argument["description"] = json!(d);
                    }
                    argument
                }).collect::<Vec<_>>(),
            });
            if let Some(title) = &spec.title {
                prompt["title"] = json!(title);
            }
            prompts.push(prompt);
        }
        json!({ "prompts": prompts, "resultType": "complete" })
    }

    /// `prompts/get`: its result, or, for a prompt that asks the person
    /// first, the question (an input-required result of 2026-07-28; older
    /// sessions are asked live, through `asking`).
    pub(super) async fn get_prompt_messages(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        asking: PromptAsking<'_>,
    ) -> Result<Value, McpError> {
        let host = self.served();
        let definitions = host.definitions();
        let no_arguments = || -> Result<(), McpError> {
            match arguments.keys().next() {
                Some(unknown) => Err(McpError::invalid_params(
                    format!("Prompt {name} has no argument {unknown}"),
                    None,
                )),
                None => Ok(()),
            }
        };
        let text =
            |text: String| json!({ "role": "user", "content": { "type": "text", "text": text } });
        if name == SYSTEM_PROMPT {
            no_arguments()?;
            return Ok(json!({
                "description": "The system-prompt text of toolhost's active tools",
                "messages": [text(formats::system_prompt_section_as(&definitions, host.pi_profile()))],
                "resultType": "complete",
            }));
        }
        if let Some(d) = definitions.iter().find(|d| d.name == name) {
            no_arguments()?;
            let mut body = format!(
                "{}: {}",
                d.name,
                d.prompt_snippet.as_deref().unwrap_or(&d.description)
            );
            if !d.prompt_guidelines.is_empty() {
                body.push_str("\n\nGuidelines:");
                for g in &d.prompt_guidelines {
                    body.push_str(&format!("\n- {}", g.trim()));
                }
            }
            return Ok(json!({
                "description": format!("How to use the {} tool", d.name),
                "messages": [text(body)],
                "resultType": "complete",
            }));
        }
        let Some(spec) = host.offers().prompt(name) else {
            return Err(McpError::invalid_params(
                format!("Unknown prompt: {name}"),
                Some(json!({ "name": name })),
            ));
        };
        let mut values = spec
            .values(arguments)
            .map_err(|e| McpError::invalid_params(e, None))?;
        if let Some(ask) = &spec.ask {
            let answer = match asking {
                PromptAsking::Stateless { responses } => match responses.get(ASK_KEY) {
                    Some(answer) => answer.clone(),
                    None => {
                        return Ok(json!({
                            "resultType": "input_required",
                            "inputRequests": {
                                ASK_KEY: { "method": "elicitation/create", "params": ask.form() },
                            },
                        }));
                    }
                },
                PromptAsking::Live { peer: Some(peer) } => {
                    super::ask::elicit(peer, ask.form()).await.map_err(|e| {
                        McpError::internal_error(
                            format!("Prompt {name}: asking the person: {e}"),
                            None,
                        )
                    })?
                }
                PromptAsking::Live { peer: None } => {
                    return Err(super::missing_capability(json!({ "elicitation": {} })));
                }
            };
            let answered = ask
                .answers(&answer)
                .map_err(|e| McpError::invalid_params(format!("Prompt {name}: {e}"), None))?;
            values.extend(answered);
        }
        let mut messages = Vec::new();
        for message in &spec.messages {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            let content = if let Some(t) = &message.text {
                json!({ "type": "text", "text": offers::substitute(t, &values) })
            } else if let Some(image) = &message.image {
                json!({
                    "type": "image",
                    "data": image.trim(),
                    "mimeType": message.mime_type.clone().unwrap_or_default(),
                })
            } else if let Some(uri) = &message.resource {
                // Read as resources/read reads it: an argument cannot name
                // what a resource could not.
                let uri = offers::substitute(uri, &values);
                json!({ "type": "resource", "resource": self.read_contents(&uri).await? })
            } else {
                continue;
            };
            messages.push(json!({ "role": role, "content": content }));
        }
        let mut result = json!({ "messages": messages, "resultType": "complete" });
        if let Some(description) = &spec.description {
            result["description"] = json!(description);
        }
        Ok(result)
    }

    /// `completion/complete`: `reference` is the request's `ref`.
    pub(super) async fn complete_argument(
        &self,
        reference: &Value,
        argument: &str,
        typed: &str,
    ) -> Result<Value, McpError> {
        let host = self.served();
        let (values, total): (Vec<String>, usize) = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let name = reference["name"].as_str().unwrap_or_default();
                let known =
                    name == SYSTEM_PROMPT || host.definitions().iter().any(|d| d.name == name);
                match host.offers().prompt(name) {
                    Some(spec) => {
                        let Some(declared) = spec.arguments.iter().find(|a| a.name == argument)
                        else {
                            return Err(McpError::invalid_params(
                                format!("Prompt {name} has no argument {argument}"),
                                None,
                            ));
                        };
                        let lower = typed.to_lowercase();
                        let matching: Vec<String> = declared
                            .completions
                            .iter()
                            .filter(|v| v.to_lowercase().starts_with(&lower))
                            .cloned()
                            .collect();
                        let total = matching.len();
                        (
                            matching
                                .into_iter()
                                .take(resources::MAX_COMPLETIONS)
                                .collect(),
                            total,
                        )
                    }
                    None if known => {
                        return Err(McpError::invalid_params(
                            format!("Prompt {name} has no argument {argument}"),
                            None,
                        ));
                    }
                    None => {
                        return Err(McpError::invalid_params(
                            format!("Unknown prompt: {name}"),
                            None,
                        ));
                    }
                }
            }
            Some("ref/resource") => {
                let uri = reference["uri"].as_str().unwrap_or_default();
                match host.files() {
                    Some(files) if uri == resources::TEMPLATE && argument == "path" => {
                        let (files, typed) = (files.clone(), typed.to_string());
                        tokio::task::spawn_blocking(move || files.complete(&typed))
                            .await
                            .map_err(|e| super::internal("completing the path", e))?
                    }
                    // An offered template's parts have no declared values.
                    _ if host.offers().resources.iter().any(|r| r.spec.uri == uri) => {
                        (Vec::new(), 0)
                    }
                    _ => return Err(not_found(uri, "no such resource template")),
                }
            }
            _ => {
                return Err(McpError::invalid_params(
                    "completion/complete: ref must be ref/prompt or ref/resource",
                    None,
                ));
            }
        };
        Ok(json!({
            "completion": {
                "values": values,
                "total": total,
                "hasMore": total > values.len(),
            },
            "resultType": "complete",
        }))
    }
}

/// The key of a prompt's question in an input-required result.
const ASK_KEY: &str = "prompt_form";

/// How a prompt that asks the person gets the answer.
pub(super) enum PromptAsking<'a> {
    /// A 2026-07-28 request: the retry's `inputResponses` by key.
    Stateless { responses: &'a Map<String, Value> },
    /// A handshake session's client, when it declared elicitation.
    Live { peer: Option<&'a Peer<RoleServer>> },
}

//! Messages and results, shaped and named as Pi's (camelCase on the wire), so
//! an agent loop written against Pi's types reads them unchanged.

use serde::{Deserialize, Serialize};

/// Pi's text for a call that noticed the abort.
pub const OPERATION_ABORTED: &str = "Operation aborted";
use serde_json::Value;

/// One block of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        /// Base64 data.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Not one of Pi's: from a tool of `toolhost:tool@0.3.0` (MCP's audio
    /// content).
    Audio {
        /// Base64 data.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Not one of Pi's: from a tool of `toolhost:tool@0.3.0` (MCP's
    /// embedded resource).
    Resource {
        resource: EmbeddedResource,
    },
}

/// A resource carried in a result: MCP's `{uri, mimeType?, text | blob}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    pub uri: String,
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none", default)]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub text: Option<String>,
    /// Base64 data.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub blob: Option<String>,
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// A line saying what a block that is not text or an image holds, for
    /// those who read only text and images (a hook of an older contract, a
    /// terminal): `[audio: audio/wav, 1,024 bytes of base64]`.
    pub fn described(&self) -> Option<String> {
        match self {
            ContentBlock::Text { .. } | ContentBlock::Image { .. } => None,
            ContentBlock::Audio { data, mime_type } => Some(format!(
                "[audio: {mime_type}, {} bytes of base64]",
                data.len()
            )),
            ContentBlock::Resource { resource } => Some(format!(
                "[resource: {}{}]",
                resource.uri,
                resource
                    .mime_type
                    .as_ref()
                    .map(|m| format!(", {m}"))
                    .unwrap_or_default()
            )),
        }
    }

    /// The bytes a guest chose for it (texts, data, names), as the output
    /// limits weigh them.
    pub(crate) fn weight(&self) -> usize {
        match self {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Image { data, mime_type } | ContentBlock::Audio { data, mime_type } => {
                data.len() + mime_type.len()
            }
            ContentBlock::Resource { resource } => {
                let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
                resource.uri.len()
                    + len(&resource.mime_type)
                    + len(&resource.text)
                    + len(&resource.blob)
            }
        }
    }
}

/// A tool call as the model emitted it (`{"type":"toolCall","id",…}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

/// Whether `name` is a tool name as the model providers accept them:
/// `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Why the model stopped; decides whether tool calls run (spec §2.1, §2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    ToolUse,
    Stop,
    /// The output hit the token limit: every call fails unexecuted.
    Length,
    /// The provider failed: no call runs.
    Error,
    /// The request was aborted: no call runs.
    Aborted,
}

/// The assistant message whose tool calls form one batch.
#[derive(Clone, Debug, PartialEq)]
pub struct AssistantMessage {
    /// The message as received (kept whole, for events that carry it).
    pub raw: Value,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: StopReason,
}

impl AssistantMessage {
    /// Read an assistant message: `content` blocks of type `toolCall` are the
    /// batch, in order; other blocks (text, thinking) are kept but not run.
    pub fn from_json(raw: Value) -> Result<AssistantMessage, String> {
        let obj = raw
            .as_object()
            .ok_or("the assistant message must be a JSON object")?;
        if let Some(role) = obj.get("role").filter(|r| *r != "assistant") {
            return Err(format!("expected role \"assistant\", got {role}"));
        }
        let content = obj
            .get("content")
            .and_then(Value::as_array)
            .ok_or("the assistant message has no \"content\" array")?;
        let mut tool_calls = Vec::new();
        for (i, block) in content.iter().enumerate() {
            if block.get("type").and_then(Value::as_str) == Some("toolCall") {
                let call: ToolCall = serde_json::from_value(block.clone())
                    .map_err(|e| format!("content[{i}] is not a valid toolCall block: {e}"))?;
                tool_calls.push(call);
            }
        }
        let stop_reason = match obj.get("stopReason") {
            None => StopReason::ToolUse,
            Some(v) => {
                serde_json::from_value(v.clone()).map_err(|_| format!("unknown stopReason {v}"))?
            }
        };
        Ok(AssistantMessage {
            raw,
            tool_calls,
            stop_reason,
        })
    }

    /// A message holding exactly these calls.
    pub fn from_calls(tool_calls: Vec<ToolCall>) -> AssistantMessage {
        let content: Vec<Value> = tool_calls
            .iter()
            .map(|c| {
                serde_json::json!({"type": "toolCall", "id": c.id, "name": c.name, "arguments": c.arguments})
            })
            .collect();
        AssistantMessage {
            raw: serde_json::json!({"role": "assistant", "content": content, "stopReason": "toolUse"}),
            tool_calls,
            stop_reason: StopReason::ToolUse,
        }
    }
}

/// What a call produced (Pi's `AgentToolResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<ContentBlock>,
    /// Absent (`None`) is distinct from `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tool_names: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
    /// The result as a JSON object, checked against the tool's output
    /// schema (MCP's `structuredContent`; since `toolhost:tool@0.2.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

impl ToolResult {
    /// The text blocks joined by newlines (what a terminal shows).
    pub fn text(&self) -> String {
        text_of(&self.content)
    }

    /// The result the loop makes of a failure: one text block, details `{}`.
    pub fn error(message: impl Into<String>) -> ToolResult {
        ToolResult {
            content: vec![ContentBlock::text(message)],
            details: Some(Value::Object(Default::default())),
            ..Default::default()
        }
    }
}

/// A partial result sent while a call runs (`tool_execution_update`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialResult {
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl PartialResult {
    /// The text blocks joined by newlines (what a terminal shows).
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

/// The message appended to the conversation for one call (spec §2.8).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// Always `"toolResult"`.
    pub role: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tool_names: Vec<String>,
    /// The result as a JSON object, matching the tool's output schema
    /// (MCP's `structuredContent`; not part of Pi's message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
    /// Milliseconds since the Unix epoch.
    pub timestamp: u64,
}

impl ToolResultMessage {
    pub fn new(call: &ToolCall, result: &ToolResult, is_error: bool) -> ToolResultMessage {
        Self::from_result(call, result.clone(), is_error)
    }

    /// The message of a result the caller gives up (nothing is copied).
    pub(crate) fn from_result(call: &ToolCall, result: ToolResult, is_error: bool) -> Self {
        ToolResultMessage {
            role: "toolResult".to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: result.content,
            details: result.details,
            usage: result.usage,
            added_tool_names: result.added_tool_names,
            structured_content: result.structured_content,
            is_error,
            timestamp: now_ms(),
        }
    }

    /// The text blocks joined by newlines (what a terminal shows).
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

/// The text blocks of `content` joined by newlines.
pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

//! The tool author's API: [`Tool`], its [`Definition`], results and errors.

use crate::bindings::toolhost::tool::{cancellation, progress, types as wit};
use serde_json::Value;

/// Whether calls of a tool may run beside other calls of the same batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExecutionMode {
    #[default]
    Parallel,
    /// One sequential tool in a batch makes the whole batch run in order.
    Sequential,
}

/// What a tool tells the model and the host about itself: the WIT record
/// `tool-definition`, built with [`Definition::new`] and the setters below
/// (no second field list to keep in step with the WIT).
#[derive(Clone, Debug)]
pub struct Definition(wit::ToolDefinition);

impl Definition {
    /// `parameters` is the JSON Schema of the arguments object, as JSON text
    /// (kept byte for byte).
    pub fn new(
        name: impl Into<String>,
        label: impl Into<String>,
        description: impl Into<String>,
        parameters: impl Into<String>,
    ) -> Self {
        Definition(wit::ToolDefinition {
            name: name.into(),
            label: label.into(),
            description: description.into(),
            parameters: parameters.into(),
            prompt_snippet: None,
            prompt_guidelines: Vec::new(),
            execution_mode: wit::ExecutionMode::Parallel,
            output_schema: None,
        })
    }

    /// The JSON Schema of the tool's structured results, as JSON text (an
    /// object schema). With one, every result that is not an error must
    /// carry [`ToolOutput::structured`] content that matches it: the host
    /// checks, and turns a result that breaks it into an error.
    pub fn output_schema(mut self, schema: impl Into<String>) -> Self {
        self.0.output_schema = Some(schema.into());
        self
    }

    pub fn prompt_snippet(mut self, snippet: impl Into<String>) -> Self {
        self.0.prompt_snippet = Some(snippet.into());
        self
    }

    pub fn prompt_guideline(mut self, guideline: impl Into<String>) -> Self {
        self.0.prompt_guidelines.push(guideline.into());
        self
    }

    pub fn sequential(mut self) -> Self {
        self.0.execution_mode = wit::ExecutionMode::Sequential;
        self
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn description(&self) -> &str {
        &self.0.description
    }

    pub fn parameters(&self) -> &str {
        &self.0.parameters
    }

    pub fn snippet(&self) -> Option<&str> {
        self.0.prompt_snippet.as_deref()
    }

    pub fn guidelines(&self) -> &[String] {
        &self.0.prompt_guidelines
    }

    pub fn output(&self) -> Option<&str> {
        self.0.output_schema.as_deref()
    }

    pub fn execution_mode(&self) -> ExecutionMode {
        match self.0.execution_mode {
            wit::ExecutionMode::Parallel => ExecutionMode::Parallel,
            wit::ExecutionMode::Sequential => ExecutionMode::Sequential,
        }
    }

    pub(crate) fn into_wit(self) -> wit::ToolDefinition {
        self.0
    }
}

/// One block of a result.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    Text(String),
    /// Base64 data and its MIME type.
    Image {
        data: String,
        mime_type: String,
    },
    /// Base64 data and its MIME type (MCP clients play it; Pi's front ends
    /// show a line naming it).
    Audio {
        data: String,
        mime_type: String,
    },
    /// A resource carried in the result: its URI, MIME type and text.
    Resource {
        uri: String,
        mime_type: Option<String>,
        text: String,
    },
}

impl Content {
    pub(crate) fn into_wit(self) -> wit::ContentBlock {
        match self {
            Content::Text(t) => wit::ContentBlock::Text(t),
            Content::Image { data, mime_type } => {
                wit::ContentBlock::Image(wit::Image { data, mime_type })
            }
            Content::Audio { data, mime_type } => {
                wit::ContentBlock::Audio(wit::Audio { data, mime_type })
            }
            Content::Resource {
                uri,
                mime_type,
                text,
            } => wit::ContentBlock::Resource(wit::EmbeddedResource {
                uri,
                mime_type,
                contents: wit::ResourceContents::Text(text),
            }),
        }
    }
}

/// The value of a call that did not fail.
#[derive(Clone, Debug, Default)]
pub struct ToolOutput {
    pub content: Vec<Content>,
    /// Structured details for the agent (not shown to the model). `None` is absent.
    pub details: Option<Value>,
    /// Ask the agent loop to stop after this batch (only if every result agrees).
    pub terminate: bool,
    /// Tools this call made available.
    pub added_tool_names: Vec<String>,
    /// The result as a JSON object, for clients that read structured
    /// results (MCP's `structuredContent`); checked by the host against the
    /// definition's output schema. `content` should say the same in text.
    pub structured: Option<Value>,
    /// The call failed and this is its result (Pi 1.x's returned
    /// `isError`): unlike a [`ToolError`], it keeps its details and
    /// structured content.
    pub is_error: bool,
}

impl ToolOutput {
    /// A result with a single text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![Content::Text(text.into())],
            ..Default::default()
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The result's structured content (a JSON object).
    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = Some(structured);
        self
    }

    pub fn terminate(mut self) -> Self {
        self.terminate = true;
        self
    }

    /// The same result, as a returned error (see [`ToolOutput::is_error`]).
    pub fn error(mut self) -> Self {
        self.is_error = true;
        self
    }

    pub(crate) fn into_wit(self) -> wit::ToolResult {
        wit::ToolResult {
            content: self.content.into_iter().map(Content::into_wit).collect(),
            details: self.details.map(|d| d.to_string()),
            terminate: self.terminate,
            added_tool_names: self.added_tool_names,
            structured_content: self.structured.map(|s| s.to_string()),
            is_error: self.is_error,
        }
    }
}

/// A tool failure: its message becomes the text of the error result, exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError(String);

/// The text of a call that noticed cancellation (Pi's `Operation aborted`).
pub const OPERATION_ABORTED: &str = "Operation aborted";

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }

    /// The error for a call that noticed it was cancelled.
    pub fn aborted() -> Self {
        ToolError(OPERATION_ABORTED.to_string())
    }

    pub fn message(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_message(self) -> String {
        self.0
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError(message.to_string())
    }
}

/// Facts about the running call (the WIT record `call-context`: the call's
/// id, the workspace `cwd`, the user's `home`, the granted `roots`, the
/// `session_id`), and its progress and cancellation channels.
pub type Context = wit::CallContext;

impl Context {
    /// Whether the call was cancelled (Pi's `signal.aborted`).
    pub fn is_cancelled(&self) -> bool {
        cancellation::is_cancelled()
    }

    /// `Err(Operation aborted)` once the call is cancelled: `ctx.check_cancelled()?`.
    pub fn check_cancelled(&self) -> Result<(), ToolError> {
        if self.is_cancelled() {
            Err(ToolError::aborted())
        } else {
            Ok(())
        }
    }

    /// Send a progress update (Pi's `onUpdate`).
    pub fn update(&self, content: Vec<Content>, details: Option<Value>) {
        progress::update(&wit::PartialResult {
            content: content.into_iter().map(Content::into_wit).collect(),
            details: details.map(|d| d.to_string()),
        });
    }
}

/// A tool. Implementations are usually unit structs exported with
/// [`export_tools!`](crate::export_tools).
pub trait Tool: Sync {
    /// The definition the model sees. Called once when the host loads the component.
    fn definition(&self) -> Definition;

    /// Rewrite raw arguments before validation (compatibility shims for old
    /// argument shapes). `Ok(None)` keeps them as they are.
    fn prepare_arguments(&self, _args: Value) -> Result<Option<Value>, ToolError> {
        Ok(None)
    }

    /// Run the tool with validated arguments.
    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError>;
}

//! Every loaded tool and the active set the model may call.
//!
//! Order decides collisions (spec §3.1, §7.7): built-ins first; an extension
//! may replace a built-in (the host lets one only when its grant says
//! `replace-builtin = true`); among extensions the first to define a name
//! wins. Every collision is reported as a [`Diagnostic`], never silent.

use crate::component::Sandbox;
use crate::validate::{ArgumentSchema, OutputSchema};
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// Whether calls of a tool may run beside others in a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ExecutionMode {
    #[default]
    Parallel,
    Sequential,
}

/// A tool's definition as the model and the agent see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    pub label: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_snippet: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompt_guidelines: Vec<String>,
    pub execution_mode: ExecutionMode,
    /// JSON Schema of its structured results (since `toolhost:tool@0.2.0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// Where a tool comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ToolSource {
    Builtin,
    Extension { path: PathBuf },
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Builtin => f.write_str("built-in"),
            ToolSource::Extension { path } => write!(f, "{}", path.display()),
        }
    }
}

/// A registered tool with what it needs to run.
pub(crate) struct RegisteredTool {
    pub definition: ToolDefinition,
    pub schema: ArgumentSchema,
    /// Its output schema, compiled, when it declares one.
    pub output: Option<OutputSchema>,
    pub sandbox: Arc<Sandbox>,
    pub source: ToolSource,
    /// The digest of its component (`blake3:…`), for the audit log.
    pub digest: Arc<str>,
}

/// A tool as listed to people: its definition, origin and whether it is active.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    #[serde(flatten)]
    pub definition: ToolDefinition,
    pub source: ToolSource,
    pub active: bool,
}

pub use crate::error::Diagnostic;

#[derive(Default)]
pub(crate) struct Registry {
    tools: Vec<Arc<RegisteredTool>>,
    /// Replaced whole on every change: a copy taken before a call is the
    /// same `Arc` after it unless the set changed.
    active: Arc<Vec<String>>,
}

impl Registry {
    /// Add a tool, applying the collision rules; returns a diagnostic for a
    /// collision.
    pub(crate) fn add(&mut self, tool: RegisteredTool) -> Option<Diagnostic> {
        let name = tool.definition.name.clone();
        let Some(i) = self.tools.iter().position(|t| t.definition.name == name) else {
            self.tools.push(Arc::new(tool));
            return None;
        };
        let existing = &self.tools[i];
        match (&existing.source, &tool.source) {
            (ToolSource::Builtin, ToolSource::Extension { path }) => {
                let d = Diagnostic {
                    path: path.display().to_string(),
                    message: format!("tool {name} replaces the built-in {name}"),
                };
                self.tools[i] = Arc::new(tool);
                Some(d)
            }
            _ => Some(Diagnostic {
                path: tool.source.to_string(),
                message: format!(
                    "tool {name} is ignored: {} already provides it",
                    existing.source
                ),
            }),
        }
    }

    /// Whether `name` is a built-in tool's.
    pub(crate) fn is_builtin(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|t| t.source == ToolSource::Builtin)
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.tools
            .iter()
            .find(|t| t.definition.name == name)
            .cloned()
    }

    /// A tool the model may call now.
    pub(crate) fn get_active(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        if self.active.iter().any(|a| a == name) {
            self.get(name)
        } else {
            None
        }
    }

    pub(crate) fn active(&self) -> &[String] {
        &self.active
    }

    /// The active set, shared.
    pub(crate) fn active_shared(&self) -> Arc<Vec<String>> {
        self.active.clone()
    }

    /// Replace the active set: unknown names are dropped, order as given,
    /// duplicates once (spec §3.1).
    pub(crate) fn set_active(&mut self, names: &[String]) {
        let mut active: Vec<String> = Vec::new();
        for name in names {
            if self.get(name).is_some() && !active.contains(name) {
                active.push(name.clone());
            }
        }
        self.active = Arc::new(active);
    }

    pub(crate) fn infos(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|t| ToolInfo {
                definition: t.definition.clone(),
                source: t.source.clone(),
                active: self.active.contains(&t.definition.name),
            })
            .collect()
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| t.definition.name.clone())
            .collect()
    }

    /// Extension tool names (auto-activated when loaded, as in Pi).
    pub(crate) fn extension_names(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| matches!(t.source, ToolSource::Extension { .. }))
            .map(|t| t.definition.name.clone())
            .collect()
    }
}

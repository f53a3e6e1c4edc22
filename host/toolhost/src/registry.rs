//! Every loaded tool and the active set the model may call.
//!
//! Order decides collisions (spec §3.1, §7.7): built-ins first; an extension
//! may replace a built-in (the host lets one only when its grant says
//! `replace-builtin = true`); among extensions the first to define a name
//! wins. Every collision is reported as a [`Diagnostic`], never silent.

use crate::component::Sandbox;
use crate::validate::{ArgumentSchema, OutputSchema};
use crate::wildcard::Wildcard;
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

/// How the model and other tools reach a tool (Pi 1.x's `exposure`;
/// `[exposure]` in toolhost.toml, [`crate::HostBuilder::exposure`]).
/// "Callable" means by other tools, through `call-tools`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exposure {
    /// Declared to the model while active, callable while active.
    #[default]
    Direct,
    /// Declared to the model while active, never callable: for tools that
    /// orchestrate others.
    ModelOnly,
    /// Not active unless named explicitly (`--tools`, `active-tools`, a
    /// client's or tool's set); callable whenever loaded. Pi's `codemode`
    /// and `deferred`.
    #[serde(alias = "codemode", alias = "deferred")]
    Callable,
    /// Loaded but unreachable: never active, never callable.
    Hidden,
}

impl Exposure {
    fn is_direct(&self) -> bool {
        *self == Exposure::Direct
    }
}

/// Which exposure each tool has: rules by a tool's name or by a pattern
/// (`*` is any characters). A tool's own name wins; among patterns, the
/// longest that matches (the most specific); between equals, the later.
#[derive(Clone, Debug, Default)]
pub(crate) struct Exposures(Vec<ExposureRule>);

/// One rule: the name or pattern as written, compiled when it is a pattern.
#[derive(Clone, Debug)]
struct ExposureRule {
    written: String,
    pattern: Option<Wildcard>,
    exposure: Exposure,
}

impl Exposures {
    /// The rules, compiled; a pattern that cannot be read is returned with
    /// its reason instead of being applied.
    pub(crate) fn new(rules: Vec<(String, Exposure)>) -> (Exposures, Vec<(String, String)>) {
        let mut compiled = Vec::new();
        let mut refused = Vec::new();
        for (written, exposure) in rules {
            let pattern = match written.contains('*') {
                false => None,
                true => match Wildcard::new(&written) {
                    Ok(pattern) => Some(pattern),
                    Err(reason) => {
                        refused.push((written, reason));
                        continue;
                    }
                },
            };
            compiled.push(ExposureRule {
                written,
                pattern,
                exposure,
            });
        }
        (Exposures(compiled), refused)
    }

    pub(crate) fn of(&self, name: &str) -> Exposure {
        let exact = self
            .0
            .iter()
            .rev()
            .find(|r| r.pattern.is_none() && r.written == name);
        if let Some(rule) = exact {
            return rule.exposure;
        }
        // `max_by_key` keeps the last of equals: a later rule wins.
        self.0
            .iter()
            .filter(|r| r.pattern.as_ref().is_some_and(|p| p.is_match(name)))
            .max_by_key(|r| r.written.len())
            .map_or(Exposure::Direct, |r| r.exposure)
    }
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
    /// The name its component knows it by (`definition.name` without the
    /// namespace its grant gives it).
    pub guest_name: String,
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
    /// How it is reached, when not directly.
    #[serde(skip_serializing_if = "Exposure::is_direct")]
    pub exposure: Exposure,
}

pub use crate::error::Diagnostic;

#[derive(Default)]
pub(crate) struct Registry {
    tools: Vec<Arc<RegisteredTool>>,
    /// Replaced whole on every change: a copy taken before a call is the
    /// same `Arc` after it unless the set changed.
    active: Arc<Vec<String>>,
    exposures: Exposures,
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

    /// How the tool `name` is reached.
    pub(crate) fn exposure(&self, name: &str) -> Exposure {
        self.exposures.of(name)
    }

    /// The exposure rules; set before the first active set.
    pub(crate) fn set_exposures(&mut self, exposures: Exposures) {
        self.exposures = exposures;
    }

    /// A tool another tool may call now: active and not model-only, or
    /// callable whenever loaded; never a hidden one.
    pub(crate) fn get_callable(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.callable(name).then(|| self.get(name)).flatten()
    }

    fn callable(&self, name: &str) -> bool {
        match self.exposure(name) {
            Exposure::Direct => self.active.iter().any(|a| a == name),
            Exposure::Callable => self.get(name).is_some(),
            Exposure::ModelOnly | Exposure::Hidden => false,
        }
    }

    /// The tools other tools may call now: the active ones in order, then
    /// the callable ones that are not active.
    pub(crate) fn callable_names(&self) -> Vec<String> {
        let rest = self.tools.iter().map(|t| &t.definition.name);
        let mut names: Vec<String> = Vec::new();
        for name in self.active.iter().chain(rest) {
            if self.callable(name) && !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
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
    /// duplicates once (spec §3.1); a hidden tool is never active.
    pub(crate) fn set_active(&mut self, names: &[String]) {
        let mut active: Vec<String> = Vec::new();
        for name in names {
            let reachable = self.exposure(name) != Exposure::Hidden;
            if reachable && self.get(name).is_some() && !active.contains(name) {
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
                exposure: self.exposure(&t.definition.name),
            })
            .collect()
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| t.definition.name.clone())
            .collect()
    }

    /// The tools a session starts with when none are named: `defaults`
    /// that exist, then every extension tool (auto-activated when loaded,
    /// as in Pi); with `all`, every tool. Never one whose exposure keeps it
    /// inactive until it is named (callable, hidden).
    pub(crate) fn starting_names(&self, defaults: &[&str], all: bool) -> Vec<String> {
        let extensions = self
            .tools
            .iter()
            .filter(|t| all || matches!(t.source, ToolSource::Extension { .. }))
            .map(|t| t.definition.name.clone());
        let named = defaults.iter().map(|s| s.to_string()).filter(|_| !all);
        named
            .chain(extensions)
            .filter(|name| matches!(self.exposure(name), Exposure::Direct | Exposure::ModelOnly))
            .collect()
    }
}

#[cfg(test)]
mod exposure_tests {
    use super::{Exposure, Exposures};

    #[test]
    fn a_name_wins_then_the_longest_pattern_whatever_the_order() {
        let (rules, refused) = Exposures::new(vec![
            ("*".into(), Exposure::Hidden),
            ("jira__*".into(), Exposure::Callable),
            ("jira__get*".into(), Exposure::Direct),
            ("jira__get_issue".into(), Exposure::ModelOnly),
        ]);
        assert_eq!(rules.of("jira__get_issue"), Exposure::ModelOnly);
        assert_eq!(rules.of("jira__get_user"), Exposure::Direct);
        assert_eq!(rules.of("jira__delete"), Exposure::Callable);
        assert_eq!(rules.of("read"), Exposure::Hidden);
        assert!(refused.is_empty());
        assert_eq!(Exposures::default().of("read"), Exposure::Direct);
    }
}

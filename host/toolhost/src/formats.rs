//! The active tools as each consumer expects them: provider tool-calling
//! formats (OpenAI chat completions, Anthropic messages, MCP `tools/list`),
//! toolhost's own definitions, and the system-prompt section Pi builds from
//! prompt snippets and guidelines (spec §3.1).
//!
//! The CLI (`toolhost list --format`, `toolhost prompt`), `toolhost serve` and
//! `toolhost mcp` all call these functions, so the three surfaces cannot
//! disagree about a tool's shape.

use crate::profile::PiProfile;
use crate::registry::{ToolDefinition, ToolInfo, ToolSource};
use pi_compat::js::{is_whitespace as is_js_whitespace, trim as js_trim};
use serde_json::{Map, Value, json};

/// A tool-list format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolFormat {
    /// toolhost's (Pi's) definitions: name, label, description, parameters,
    /// prompt snippet and guidelines, execution mode.
    Json,
    /// OpenAI chat completions: `{"type":"function","function":{name, description, parameters}}`.
    Openai,
    /// Anthropic messages: `{name, description, input_schema}`.
    Anthropic,
    /// The result of MCP `tools/list`: `{"tools":[{name, title, description, inputSchema, outputSchema?, annotations?}]}`.
    Mcp,
}

impl ToolFormat {
    pub const ALL: [ToolFormat; 4] = [
        ToolFormat::Json,
        ToolFormat::Openai,
        ToolFormat::Anthropic,
        ToolFormat::Mcp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ToolFormat::Json => "json",
            ToolFormat::Openai => "openai",
            ToolFormat::Anthropic => "anthropic",
            ToolFormat::Mcp => "mcp",
        }
    }
}

impl std::fmt::Display for ToolFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ToolFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ToolFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("unknown tool format {s:?}: expected one of json, openai, anthropic, mcp")
            })
    }
}

/// `tools` (the active tools, in active-set order) in `format`: a JSON array,
/// or for MCP the `tools/list` result object.
pub fn tools_as(tools: &[ToolInfo], format: ToolFormat) -> Value {
    match format {
        ToolFormat::Json => Value::Array(
            tools
                .iter()
                .map(|t| serde_json::to_value(&t.definition).unwrap_or(Value::Null))
                .collect(),
        ),
        ToolFormat::Openai => {
            Value::Array(tools.iter().map(|t| openai_tool(&t.definition)).collect())
        }
        ToolFormat::Anthropic => Value::Array(
            tools
                .iter()
                .map(|t| anthropic_tool(&t.definition))
                .collect(),
        ),
        ToolFormat::Mcp => json!({ "tools": tools.iter().map(mcp_tool).collect::<Vec<_>>() }),
    }
}

/// One tool for OpenAI's chat-completions `tools` array.
pub fn openai_tool(definition: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.parameters,
        }
    })
}

/// One tool for Anthropic's messages `tools` array.
pub fn anthropic_tool(definition: &ToolDefinition) -> Value {
    json!({
        "name": definition.name,
        "description": definition.description,
        "input_schema": definition.parameters,
    })
}

/// One tool as MCP's `tools/list` lists it: the label is the title; the
/// built-ins carry behaviour hints.
pub fn mcp_tool(tool: &ToolInfo) -> Value {
    let d = &tool.definition;
    let mut object = Map::new();
    object.insert("name".into(), json!(d.name));
    object.insert("title".into(), json!(d.label));
    object.insert("description".into(), json!(d.description));
    object.insert("inputSchema".into(), d.parameters.clone());
    if let Some(output) = &d.output_schema {
        object.insert("outputSchema".into(), output.clone());
    }
    if let Some(annotations) = mcp_annotations(tool) {
        object.insert("annotations".into(), annotations);
    }
    Value::Object(object)
}

/// MCP behaviour hints. Only the built-ins get them: toolhost knows what its
/// own tools do, but an extension's hints would be a claim nobody checked,
/// and clients may auto-approve read-only tools. So an extension that
/// replaces `read` gets none either.
pub fn mcp_annotations(tool: &ToolInfo) -> Option<Value> {
    if tool.source != ToolSource::Builtin {
        return None;
    }
    match tool.definition.name.as_str() {
        "read" | "grep" | "find" | "ls" => Some(json!({ "readOnlyHint": true })),
        "write" | "edit" | "bash" | "powershell" => {
            Some(json!({ "readOnlyHint": false, "destructiveHint": true }))
        }
        _ => None,
    }
}

/// The tools-and-guidelines section of the system prompt, as Pi 0.85's
/// `buildSystemPrompt` writes it for the default prompt, for the active tools
/// in active-set order:
///
/// ```text
/// Available tools:
/// - read: Read file contents
/// …
///
/// In addition to the tools above, you may have access to other custom tools depending on the project.
///
/// Guidelines:
/// - Use read to examine files instead of cat or sed.
/// …
/// - Be concise in your responses
/// - Show file paths clearly when working with files
/// ```
///
/// As in Pi: a tool is listed only when it has a prompt snippet (collapsed to
/// one line); guidelines are each tool's, trimmed, in tool order, each given
/// once; bash (or powershell) without grep, find and ls adds a file-operations
/// guideline first; two general guidelines close the list. Pi's surrounding
/// text (its identity line, its documentation paths, the working directory)
/// belongs to the agent, not to the tools, and is not part of this section.
///
/// That is Pi 0.85's wording; [`system_prompt_section_as`] gives another
/// profile's.
pub fn system_prompt_section(active: &[ToolDefinition]) -> String {
    system_prompt_section_as(active, PiProfile::V0_85)
}

/// The system-prompt section in the words of the Pi `pi`: the same list and
/// guidelines, framed by the release. Pi 1.6 puts them in its `<tools>` and
/// `<rules>` sections:
///
/// ```text
/// <tools>
/// - read: Read file contents
/// …
///
/// Additional tools may be available.
/// </tools>
///
/// <rules>
/// - Use read to examine files instead of cat or sed.
/// …
/// </rules>
/// ```
pub fn system_prompt_section_as(active: &[ToolDefinition], pi: PiProfile) -> String {
    let names: Vec<&str> = active.iter().map(|d| d.name.as_str()).collect();
    let listed: Vec<String> = active
        .iter()
        .filter_map(|d| {
            let snippet = normalize_snippet(d.prompt_snippet.as_deref()?)?;
            Some(format!("- {}: {snippet}", d.name))
        })
        .collect();
    let tools_list = if listed.is_empty() {
        "(none)".to_string()
    } else {
        listed.join("\n")
    };

    let mut guidelines: Vec<String> = Vec::new();
    let mut add = |g: &str| {
        if !guidelines.iter().any(|x| x == g) {
            guidelines.push(g.to_string());
        }
    };
    let has = |n: &str| names.contains(&n);
    let (bash, powershell) = (has("bash"), has("powershell"));
    if (bash || powershell) && !has("grep") && !has("find") && !has("ls") {
        add(if bash && powershell {
            "Use bash or PowerShell for file operations like listing, searching, and finding files"
        } else if powershell {
            "Use PowerShell for file operations like listing, searching, and finding files"
        } else {
            "Use bash for file operations like ls, rg, find"
        });
    }
    for d in active {
        for g in &d.prompt_guidelines {
            let g = js_trim(g);
            if !g.is_empty() {
                add(g);
            }
        }
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    let guidelines: Vec<String> = guidelines.iter().map(|g| format!("- {g}")).collect();
    let guidelines = guidelines.join("\n");
    match pi {
        PiProfile::V0_85 => format!(
            "Available tools:\n{tools_list}\n\n\
             In addition to the tools above, you may have access to other custom tools depending on the project.\n\n\
             Guidelines:\n{guidelines}"
        ),
        PiProfile::V1_6 => format!(
            "<tools>\n{tools_list}\n\nAdditional tools may be available.\n</tools>\n\n\
             <rules>\n{guidelines}\n</rules>"
        ),
    }
}

/// Pi's `_normalizePromptSnippet`: line breaks and whitespace runs become one
/// space, then trimmed; an empty result means no snippet.
fn normalize_snippet(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if is_js_whitespace(c) {
            pending_space = true;
        } else {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.push(c);
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::ExecutionMode;

    fn def(name: &str, snippet: Option<&str>, guidelines: &[&str]) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            label: name.into(),
            description: format!("{name} things"),
            parameters: json!({"type": "object"}),
            prompt_snippet: snippet.map(Into::into),
            prompt_guidelines: guidelines.iter().map(|g| g.to_string()).collect(),
            execution_mode: ExecutionMode::Parallel,
            output_schema: None,
        }
    }

    #[test]
    fn the_section_lists_snippets_and_flattens_guidelines_as_pi_does() {
        let tools = [
            def(
                "read",
                Some("Read file contents"),
                &["Use read to examine files instead of cat or sed."],
            ),
            def(
                "bash",
                Some("Execute bash commands (ls, grep, find, etc.)"),
                &[],
            ),
            def(
                "quiet",
                None,
                &[
                    "  Quiet guideline  ",
                    "Use read to examine files instead of cat or sed.",
                ],
            ),
            def(
                "multi",
                Some("  Two\r\n  lines\u{A0}here "),
                &["", "Second tool guideline", "Second tool guideline"],
            ),
        ];
        assert_eq!(
            system_prompt_section(&tools),
            "Available tools:\n\
             - read: Read file contents\n\
             - bash: Execute bash commands (ls, grep, find, etc.)\n\
             - multi: Two lines here\n\
             \n\
             In addition to the tools above, you may have access to other custom tools depending on the project.\n\
             \n\
             Guidelines:\n\
             - Use bash for file operations like ls, rg, find\n\
             - Use read to examine files instead of cat or sed.\n\
             - Quiet guideline\n\
             - Second tool guideline\n\
             - Be concise in your responses\n\
             - Show file paths clearly when working with files"
        );
    }

    #[test]
    fn no_snippets_means_none_and_search_tools_drop_the_bash_guideline() {
        let tools = [def("bash", None, &[]), def("ls", None, &[])];
        assert_eq!(
            system_prompt_section(&tools),
            "Available tools:\n(none)\n\n\
             In addition to the tools above, you may have access to other custom tools depending on the project.\n\n\
             Guidelines:\n\
             - Be concise in your responses\n\
             - Show file paths clearly when working with files"
        );
        let ps = [def("powershell", Some("Execute PowerShell commands"), &[])];
        assert!(system_prompt_section(&ps).contains(
            "\n- Use PowerShell for file operations like listing, searching, and finding files\n"
        ));
        let both = [def("powershell", None, &[]), def("bash", None, &[])];
        assert!(system_prompt_section(&both).contains(
            "\n- Use bash or PowerShell for file operations like listing, searching, and finding files\n"
        ));
    }

    #[test]
    fn formats_carry_the_definition_under_each_providers_names() {
        let info = ToolInfo {
            definition: def("read", Some("Read file contents"), &[]),
            source: ToolSource::Builtin,
            active: true,
            exposure: Default::default(),
        };
        let tools = [info.clone()];
        assert_eq!(
            tools_as(&tools, ToolFormat::Openai),
            json!([{"type": "function", "function": {"name": "read", "description": "read things", "parameters": {"type": "object"}}}])
        );
        assert_eq!(
            tools_as(&tools, ToolFormat::Anthropic),
            json!([{"name": "read", "description": "read things", "input_schema": {"type": "object"}}])
        );
        assert_eq!(
            tools_as(&tools, ToolFormat::Mcp),
            json!({"tools": [{"name": "read", "title": "read", "description": "read things", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}]})
        );
        let replaced = ToolInfo {
            source: ToolSource::Extension {
                path: "x.wasm".into(),
            },
            ..info
        };
        assert_eq!(
            mcp_annotations(&replaced),
            None,
            "an extension's read is not vouched for"
        );
        // An output schema is MCP's outputSchema and toolhost's own
        // outputSchema; the providers' formats have no place for it.
        let mut typed = replaced.clone();
        typed.definition.output_schema = Some(json!({"type": "object"}));
        let typed = [typed];
        assert_eq!(
            tools_as(&typed, ToolFormat::Mcp)["tools"][0]["outputSchema"],
            json!({"type": "object"})
        );
        assert_eq!(
            tools_as(&typed, ToolFormat::Json)[0]["outputSchema"],
            json!({"type": "object"})
        );
        assert_eq!(
            tools_as(&typed, ToolFormat::Openai),
            tools_as(std::slice::from_ref(&replaced), ToolFormat::Openai)
        );
        assert_eq!("anthropic".parse(), Ok(ToolFormat::Anthropic));
        assert!(
            "gemini"
                .parse::<ToolFormat>()
                .unwrap_err()
                .contains("unknown tool format \"gemini\"")
        );
    }
}

//! `toolhost list`: the tools, as a table, as definitions or in a consumer's format.

use crate::*;

pub(crate) fn list(host: &Host, json: bool, format: Option<ToolFormat>) -> Result<ExitCode> {
    if let Some(format) = format {
        let tools = formats::tools_as(&host.active_tool_infos(), format);
        println!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(ExitCode::SUCCESS);
    }
    let tools = host.tools();
    if json {
        println!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", table(&tools).trim_end_matches('\n'));
    for tool in &tools {
        print_definition(&tool.definition)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A tool's definition as `list` and `ext inspect` show it: its name and
/// label, its description (its own lines, indented), its parameters as JSON,
/// its prompt lines. An extension chose every text, shown escaped.
pub(crate) fn print_definition(d: &toolhost::ToolDefinition) -> Result<()> {
    println!("\n{} ({})", escape(&d.name), escape(&d.label));
    println!("{}", indent(&escape_lines(&d.description)));
    let parameters = serde_json::to_string(&d.parameters)?;
    println!("  parameters: {}", escape(&parameters));
    if let Some(snippet) = &d.prompt_snippet {
        println!("  prompt snippet: {}", escape(snippet));
    }
    for g in &d.prompt_guidelines {
        println!("  guideline: {}", escape(g));
    }
    Ok(())
}

/// One line per tool: name, state, mode, source and parameter names
/// (`*` marks required ones), escaped before the columns are measured.
pub(crate) fn table(tools: &[ToolInfo]) -> String {
    let rows: Vec<[String; 5]> = tools
        .iter()
        .map(|t| {
            let d = &t.definition;
            [
                escape(&d.name).into_owned(),
                if t.active { "yes" } else { "no" }.to_string(),
                serde_json::to_value(d.execution_mode)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                escape(&t.source.to_string()).into_owned(),
                escape(&parameter_summary(&d.parameters)).into_owned(),
            ]
        })
        .collect();
    let header = ["NAME", "ACTIVE", "MODE", "SOURCE", "PARAMETERS"].map(str::to_string);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

pub(crate) fn parameter_summary(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| {
                    let ty = p["type"].as_str().unwrap_or("any");
                    let star = if required.contains(&name.as_str()) {
                        "*"
                    } else {
                        ""
                    };
                    format!("{name}{star}: {ty}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

//! The failure text and the "Received arguments" block (`JSON.stringify(value, null, 2)`).

use super::*;

/// The exact Pi text: `Validation failed for tool "{name}":\n  - {path}: {message}\n…\n\nReceived
/// arguments:\n{JSON.stringify(received, null, 2)}`. With no issues Pi prints
/// `Unknown validation error` in place of the list.
pub fn failure_text(tool_name: &str, issues: &[Issue], received: &Value) -> String {
    let lines = if issues.is_empty() {
        "Unknown validation error".to_owned()
    } else {
        issues
            .iter()
            .map(|issue| format!("  - {}: {}", issue.path, issue.message))
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "Validation failed for tool \"{tool_name}\":\n{lines}\n\nReceived arguments:\n{}",
        js_stringify_pretty(received)
    )
}

/// `JSON.stringify(value, null, 2)` byte-for-byte (2-space indent, JS number formatting:
/// 5.0 -> 5, 1e21 -> 1e+21, -0 -> 0; JS string escaping: \" \\ \b \f \n \r \t, other control
/// chars as \u00XX lowercase, non-ASCII and / NOT escaped; `{}` and `[]` for empty containers;
/// array-index keys first, as JavaScript orders an object's keys).
pub fn js_stringify_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(&mut out, value, 0);
    out
}

/// `JSON.stringify(value)` byte-for-byte: no whitespace, otherwise as [`js_stringify_pretty`].
pub(super) fn js_stringify(value: &Value) -> String {
    let mut out = String::new();
    write_compact(&mut out, value);
    out
}

fn write_compact(out: &mut String, value: &Value) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_compact(out, item);
            }
            out.push(']');
        }
        Value::Object(object) => {
            out.push('{');
            for (index, (key, item)) in js_entries(object).into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_js_string(out, key);
                out.push(':');
                write_compact(out, item);
            }
            out.push('}');
        }
        scalar => write_pretty(out, scalar, 0),
    }
}

pub(super) fn write_pretty(out: &mut String, value: &Value, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&js_number_string(js_number(number))),
        Value::String(text) => write_js_string(out, text),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                newline_indent(out, depth + 1);
                write_pretty(out, item, depth + 1);
            }
            newline_indent(out, depth);
            out.push(']');
        }
        Value::Object(object) if object.is_empty() => out.push_str("{}"),
        Value::Object(object) => {
            out.push('{');
            for (index, (key, item)) in js_entries(object).into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                newline_indent(out, depth + 1);
                write_js_string(out, key);
                out.push_str(": ");
                write_pretty(out, item, depth + 1);
            }
            newline_indent(out, depth);
            out.push('}');
        }
    }
}

pub(super) fn newline_indent(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// ECMAScript QuoteJSONString.
pub(super) fn write_js_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

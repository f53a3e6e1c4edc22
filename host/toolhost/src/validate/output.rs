//! A tool's output schema (since `toolhost:tool@0.2.0`, MCP's
//! `outputSchema`): compiled once when the tool is loaded, and checked
//! against every structured result it returns, so that a client reading
//! `structuredContent` gets what the schema promises or an error result
//! naming the violation.
//!
//! Unlike the arguments, nothing is coerced: a result is the tool's own
//! output and either matches its schema or is wrong.

use serde_json::Value;
use std::fmt;

/// How many violations an error result names.
const MAX_VIOLATIONS: usize = 3;

/// A tool's output schema, compiled (its text stays in the tool's
/// definition).
pub struct OutputSchema {
    validator: jsonschema::Validator,
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema").finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// Errors (naming the cause) if `schema` is not a valid JSON Schema, or
    /// not an object schema (MCP requires `"type": "object"` at the top).
    pub fn compile(schema: &Value) -> Result<OutputSchema, String> {
        super::check_object_schema("output", schema)?;
        let validator = jsonschema::options()
            .build(schema)
            .map_err(|e| format!("output schema cannot be compiled: {e}"))?;
        Ok(OutputSchema { validator })
    }

    /// Whether `value` matches: `Err` names the first violations, each with
    /// where it is (`/count: "three" is not of type "integer"`).
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let mut violations: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(MAX_VIOLATIONS + 1)
            .map(|error| format!("{}: {error}", super::instance_path(&error)))
            .collect();
        if violations.is_empty() {
            return Ok(());
        }
        if violations.len() > MAX_VIOLATIONS {
            violations.truncate(MAX_VIOLATIONS);
            violations.push("…".into());
        }
        Err(violations.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn counted() -> OutputSchema {
        OutputSchema::compile(&json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}, "word": {"type": "string"}},
            "required": ["count"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn a_matching_result_passes_and_each_violation_is_named_with_its_place() {
        let schema = counted();
        assert_eq!(schema.check(&json!({"count": 3, "word": "a"})), Ok(()));
        let err = schema.check(&json!({"count": "three"})).unwrap_err();
        assert_eq!(err, r#"/count: "three" is not of type "integer""#);
        let err = schema.check(&json!({"word": 1})).unwrap_err();
        assert!(
            err.contains(r#"/: "count" is a required property"#),
            "{err}"
        );
        assert!(err.contains(r#"/word: 1 is not of type "string""#), "{err}");
    }

    #[test]
    fn only_object_schemas_that_are_json_schemas_compile() {
        let err = OutputSchema::compile(&json!({"type": "string"})).unwrap_err();
        assert!(err.contains("must be an object schema"), "{err}");
        let err = OutputSchema::compile(&json!({"type": "object", "properties": 3})).unwrap_err();
        assert!(
            err.starts_with("output schema is not a valid JSON Schema (at /properties)"),
            "{err}"
        );
    }

    #[test]
    fn a_flood_of_violations_is_cut_to_the_first_few() {
        let schema = OutputSchema::compile(&json!({
            "type": "object",
            "additionalProperties": {"type": "string"}
        }))
        .unwrap();
        let value: Value = (0..10)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        let err = schema.check(&value).unwrap_err();
        assert_eq!(
            err.matches("is not of type").count(),
            MAX_VIOLATIONS,
            "{err}"
        );
        assert!(err.ends_with("; …"), "{err}");
    }
}

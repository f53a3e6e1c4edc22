//! What failed, as data ([`Failure`]), and the two tables of message templates that word it:
//! TypeBox 1.3.7's en_US texts (Pi 0.85) and pi-schema 1.6.0's (`dist/explain.js`, Pi 1.5+).

use super::text::js_stringify;
use super::*;

/// One failed keyword, with what the texts name. The walk decides where it is reported
/// (`RawIssue::instance_path`) and whether it is reported at all ([`Dialect`]).
#[derive(Debug, Clone)]
pub(super) enum Failure {
    /// The schema `false`.
    FalseSchema,
    /// `type`: the keyword as written (a name or a list) and the value's JavaScript type.
    Type {
        expected: Value,
        got: &'static str,
    },
    /// `required`: every missing name (TypeBox), or the one missing at this path (pi-schema).
    Required {
        missing: Vec<String>,
    },
    /// A key `additionalProperties` rejects (TypeBox: some key of the object).
    AdditionalProperty,
    /// A missing dependency of `property`: `names` is its whole list (TypeBox names it).
    Dependency {
        property: String,
        names: Vec<String>,
    },
    /// Property names `propertyNames` rejects (pi-schema: the one at this path).
    PropertyNames {
        invalid: Vec<String>,
    },
    MinProperties(f64),
    MaxProperties(f64),
    MinItems(f64),
    MaxItems(f64),
    MinLength(f64),
    MaxLength(f64),
    Pattern(String),
    Format(String),
    Minimum(f64),
    Maximum(f64),
    ExclusiveMinimum(f64),
    ExclusiveMaximum(f64),
    MultipleOf(f64),
    UniqueItems,
    /// `contains` with its bounds (`max` infinite when unbounded).
    Contains {
        min: f64,
        max: f64,
    },
    Const(Value),
    /// `enum`, or (pi-schema) a tagged union's tag that selects no branch.
    Enum(Vec<Value>),
    Not,
    Then,
    Else,
    /// No branch of an `anyOf` (`one_of: false`) or a `oneOf` passes.
    NoAlternative {
        one_of: bool,
    },
    /// Several branches of a `oneOf` pass.
    SeveralAlternatives,
    /// A failed value nothing explains (pi-schema's fallback).
    Invalid,
}

impl Failure {
    /// The message, from the table `texts` selects.
    pub fn message(&self, texts: Texts) -> String {
        match texts {
            Texts::TypeBox => self.typebox_text(),
            Texts::PiSchema => self.pi_schema_text(),
        }
    }

    /// TypeBox 1.3.7's en_US locale.
    fn typebox_text(&self) -> String {
        let count = |relation: &str, limit: f64, noun: &str| {
            format!(
                "must not have {relation} than {} {noun}",
                js_number_string(limit)
            )
        };
        let bound = |comparison: &str, limit: f64| {
            format!("must be {comparison} {}", js_number_string(limit))
        };
        match self {
            Failure::FalseSchema => "schema is false".to_owned(),
            Failure::Type { expected, .. } => match expected {
                Value::Array(types) => format!("must be either {}", type_names(types)),
                other => format!("must be {}", other.as_str().unwrap_or_default()),
            },
            Failure::Required { missing } => {
                format!("must have required properties {}", missing.join(", "))
            }
            Failure::AdditionalProperty => "must not have additional properties".to_owned(),
            Failure::Dependency { property, names } => format!(
                "must have properties {} when property {property} is present",
                names.join(", ")
            ),
            Failure::PropertyNames { invalid } => {
                format!("property names {} are invalid", invalid.join(", "))
            }
            Failure::MinProperties(limit) => count("fewer", *limit, "properties"),
            Failure::MaxProperties(limit) => count("more", *limit, "properties"),
            Failure::MinItems(limit) => count("fewer", *limit, "items"),
            Failure::MaxItems(limit) => count("more", *limit, "items"),
            Failure::MinLength(limit) => count("fewer", *limit, "characters"),
            Failure::MaxLength(limit) => count("more", *limit, "characters"),
            Failure::Pattern(pattern) => format!("must match pattern \"{pattern}\""),
            Failure::Format(format) => format!("must match format \"{format}\""),
            Failure::Minimum(limit) => bound(">=", *limit),
            Failure::Maximum(limit) => bound("<=", *limit),
            Failure::ExclusiveMinimum(limit) => bound(">", *limit),
            Failure::ExclusiveMaximum(limit) => bound("<", *limit),
            Failure::MultipleOf(divisor) => {
                format!("must be multiple of {}", js_number_string(*divisor))
            }
            Failure::UniqueItems => "must not have duplicate items".to_owned(),
            Failure::Contains { .. } => "must contain at least 1 valid item".to_owned(),
            Failure::Const(_) => "must be equal to constant".to_owned(),
            Failure::Enum(_) => "must be equal to one of the allowed values".to_owned(),
            Failure::Not => "must not be valid".to_owned(),
            Failure::Then => "must match \"then\" schema".to_owned(),
            Failure::Else => "must match \"else\" schema".to_owned(),
            Failure::NoAlternative { one_of: false } => "must match a schema in anyOf".to_owned(),
            Failure::NoAlternative { one_of: true } | Failure::SeveralAlternatives => {
                "must match exactly one schema in oneOf".to_owned()
            }
            Failure::Invalid => "invalid".to_owned(),
        }
    }

    /// pi-schema 1.6.0's `Explainer`.
    fn pi_schema_text(&self) -> String {
        let count = |relation: &str, limit: f64, noun: &str| {
            format!("expected {relation} {} {noun}", js_number_string(limit))
        };
        let bound = |comparison: &str, limit: f64| {
            format!("expected {comparison} {}", js_number_string(limit))
        };
        match self {
            Failure::FalseSchema => "no value is allowed here".to_owned(),
            Failure::Type { expected, got } => {
                let names = match expected {
                    Value::Array(types) => type_names(types),
                    other => other.as_str().unwrap_or_default().to_owned(),
                };
                format!("expected {names}, got {got}")
            }
            Failure::Required { .. } => "missing".to_owned(),
            Failure::AdditionalProperty => "unknown field".to_owned(),
            Failure::Dependency { property, .. } => format!("required when {property} is present"),
            Failure::PropertyNames { .. } => "invalid property name".to_owned(),
            Failure::MinProperties(limit) => count("at least", *limit, "properties"),
            Failure::MaxProperties(limit) => count("at most", *limit, "properties"),
            Failure::MinItems(limit) => count("at least", *limit, "items"),
            Failure::MaxItems(limit) => count("at most", *limit, "items"),
            Failure::MinLength(limit) => count("at least", *limit, "characters"),
            Failure::MaxLength(limit) => count("at most", *limit, "characters"),
            Failure::Pattern(pattern) => format!("expected to match {pattern}"),
            Failure::Format(format) => format!("expected format {format}"),
            Failure::Minimum(limit) => bound(">=", *limit),
            Failure::Maximum(limit) => bound("<=", *limit),
            Failure::ExclusiveMinimum(limit) => bound(">", *limit),
            Failure::ExclusiveMaximum(limit) => bound("<", *limit),
            Failure::MultipleOf(divisor) => {
                format!("expected a multiple of {}", js_number_string(*divisor))
            }
            Failure::UniqueItems => "expected unique items".to_owned(),
            Failure::Contains { min, max } => contains_text(*min, *max),
            Failure::Const(constant) => format!("expected {}", js_stringify(constant)),
            Failure::Enum(values) => format!("expected one of {}", list_values(values)),
            Failure::Not => "must not match the schema in not".to_owned(),
            // pi-schema reports the branch's own issues and no line of its own.
            Failure::Then | Failure::Else => "invalid".to_owned(),
            Failure::NoAlternative { .. } => "matches no alternative".to_owned(),
            Failure::SeveralAlternatives => "matches more than one alternative".to_owned(),
            Failure::Invalid => "invalid".to_owned(),
        }
    }
}

fn type_names(types: &[Value]) -> String {
    let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
    names.join(" or ")
}

/// pi-schema's `typeName`: the JavaScript type of a JSON value, `integer` for a whole number.
pub(super) fn js_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(number) if js_number(number).fract() == 0.0 => "integer",
        Value::Number(_) => "number",
    }
}

/// pi-schema lists at most this many of an enum's values.
const LISTED_VALUES: usize = 20;

/// pi-schema's `listValues`: the values as JSON, cut after [`LISTED_VALUES`] with how many more.
fn list_values(values: &[Value]) -> String {
    let listed = Value::Array(values.iter().take(LISTED_VALUES).cloned().collect());
    let listed = js_stringify(&listed);
    if values.len() <= LISTED_VALUES {
        return listed;
    }
    format!(
        "{}, ... and {} more]",
        &listed[..listed.len() - 1],
        values.len() - LISTED_VALUES
    )
}

/// pi-schema's `containsMessage`.
fn contains_text(min: f64, max: f64) -> String {
    let items = |n: f64| if n == 1.0 { "item" } else { "items" };
    let (min_text, max_text) = (js_number_string(min), js_number_string(max));
    if max == f64::INFINITY {
        format!("expected at least {min_text} matching {}", items(min))
    } else if min == 0.0 {
        format!("expected at most {max_text} matching {}", items(max))
    } else {
        format!("expected between {min_text} and {max_text} matching items")
    }
}

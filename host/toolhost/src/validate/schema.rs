//! Reading schemas: the TypeBox kind a node reads as, keyword accessors, issue
//! paths, and the regular expressions and formats compiled ahead of a walk.

use super::*;
pub(super) use pi_compat::js::percent_decode;

/// The TypeBox kind a (plain JSON) schema node is read as, for `Value.Convert`.
pub(super) enum Kind<'a> {
    Literal(&'a Value),
    Enum(&'a [Value]),
    Union(&'a [Value]),
    Types(&'a [Value]),
    Type(&'a str),
    Unknown,
}

/// `const` → Literal, `enum` → union of literals, `anyOf` → Union, `type` → that kind (a list of
/// types → a union of them). Anything else (`$ref`, `allOf`, `oneOf`, `not`, booleans) converts
/// nothing: TypeBox's `Value.Convert` resolves no `$ref` without a context and has no oneOf.
pub(super) fn kind_of(schema: &Value) -> Kind<'_> {
    let Value::Object(keywords) = schema else {
        return Kind::Unknown;
    };
    if let Some(constant) = keywords.get("const") {
        return Kind::Literal(constant);
    }
    if let Some(Value::Array(options)) = keywords.get("enum") {
        return Kind::Enum(options);
    }
    if let Some(Value::Array(members)) = keywords.get("anyOf") {
        return Kind::Union(members);
    }
    match keywords.get("type") {
        Some(Value::String(type_name)) => Kind::Type(type_name),
        Some(Value::Array(types)) => Kind::Types(types),
        _ => Kind::Unknown,
    }
}

/// `items` as a list (draft-07 tuple, TypeBox's `Tuple`), else `prefixItems` (2020-12).
pub(super) fn tuple_items(schema: &Value) -> Option<&[Value]> {
    match schema.get("items") {
        Some(Value::Array(items)) => Some(items),
        Some(_) => None,
        None => schema_list(schema.get("prefixItems")),
    }
}

/// TypeBox's `IsSchema`: an object or a boolean.
pub(super) fn is_schema(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Bool(_))
}

/// A keyword holding a list of schemas, when it is one.
pub(super) fn schema_list(keyword: Option<&Value>) -> Option<&[Value]> {
    match keyword {
        Some(Value::Array(list)) if list.iter().all(is_schema) => Some(list),
        _ => None,
    }
}

pub(super) fn string_list(keyword: Option<&Value>) -> Vec<&str> {
    match keyword {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Each value of `object` with the schema `keywords` give it: the described
/// properties in schema order, then (when `additionalProperties` is a
/// schema) every other key.
pub(super) fn each_property(
    keywords: &Map<String, Value>,
    object: &mut Map<String, Value>,
    mut visit: impl FnMut(&Value, &mut Value),
) {
    let properties = keywords.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for (key, property_schema) in properties {
            if let Some(slot) = object.get_mut(key) {
                visit(property_schema, slot);
            }
        }
    }
    if let Some(additional @ Value::Object(_)) = keywords.get("additionalProperties") {
        for (key, slot) in object.iter_mut() {
            if !properties.is_some_and(|properties| properties.contains_key(key)) {
                visit(additional, slot);
            }
        }
    }
}

pub(super) fn number_keyword(keywords: &Map<String, Value>, name: &str) -> Option<f64> {
    keywords.get(name).and_then(Value::as_f64)
}

/// Whether `value` has none of the types the `type` keyword names (a name or a list of names).
/// Unknown names accept anything, as in TypeBox (a schema that passed the meta-schema check
/// names none).
pub(super) fn fails_type(type_keyword: &Value, value: &Value) -> bool {
    match type_keyword {
        Value::String(type_name) => !matches_type_name(value, type_name),
        Value::Array(types) if types.iter().all(Value::is_string) => !types
            .iter()
            .filter_map(Value::as_str)
            .any(|name| matches_type_name(value, name)),
        _ => false,
    }
}

pub(super) fn matches_type_name(value: &Value, type_name: &str) -> bool {
    match type_name {
        "object" | "array" | "boolean" | "integer" | "number" | "null" | "string" => {
            matches_json_type(value, type_name)
        }
        // TypeBox's own names: JSON holds no bigint, function, symbol or undefined.
        "bigint" | "constructor" | "function" | "symbol" | "undefined" | "void" => false,
        _ => true,
    }
}

/// pi-ai's `matchesJsonType`; `integer` is `Number.isInteger`.
pub(super) fn matches_json_type(value: &Value, type_name: &str) -> bool {
    match type_name {
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// TypeBox builds instance paths by plain concatenation: keys are not JSON-pointer escaped.
pub(super) fn child_path(path: &str, key: &str) -> String {
    format!("{path}/{key}")
}

/// pi-ai's `formatValidationPath`: drop the leading `/`, turn the others into `.`; for a
/// `required` issue append the first missing name; an empty path is `root`.
pub(super) fn format_path(instance_path: &str, required_first: Option<&str>) -> String {
    let base = instance_path
        .strip_prefix('/')
        .unwrap_or(instance_path)
        .replace('/', ".");
    match required_first {
        // `if (requiredProperty)`: an empty name is falsy and falls through.
        Some(first) if !first.is_empty() => {
            if base.is_empty() {
                first.to_owned()
            } else {
                format!("{base}.{first}")
            }
        }
        _ if base.is_empty() => "root".to_owned(),
        _ => base,
    }
}

/// Precompiles the regular expressions and format checkers the walk may need. Values under
/// `const`, `enum`, `default` and `examples` are data, not schemas, and are skipped; a helper
/// that fails to compile is left out (the schema's own compilation reports a bad pattern).
pub(super) fn collect_regex_and_formats(
    node: &Value,
    patterns: &mut HashMap<String, jsonschema::Validator>,
    formats: &mut HashMap<String, jsonschema::Validator>,
) {
    match node {
        Value::Object(keywords) => {
            if let Some(Value::String(pattern)) = keywords.get("pattern") {
                add_pattern(pattern, patterns);
            }
            if let Some(Value::Object(pattern_properties)) = keywords.get("patternProperties") {
                for pattern in pattern_properties.keys() {
                    add_pattern(pattern, patterns);
                }
            }
            if let Some(Value::String(format)) = keywords.get("format")
                && TYPEBOX_FORMATS.contains(&format.as_str())
                && !formats.contains_key(format)
                && let Ok(validator) = jsonschema::options()
                    .should_validate_formats(true)
                    .build(&serde_json::json!({ "format": format }))
            {
                formats.insert(format.clone(), validator);
            }
            for (key, child) in keywords {
                if !matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                    collect_regex_and_formats(child, patterns, formats);
                }
            }
        }
        Value::Array(children) => {
            for child in children {
                collect_regex_and_formats(child, patterns, formats);
            }
        }
        _ => {}
    }
}

/// Keywords the walk alone decides, because TypeBox reads them differently from JSON Schema:
/// string lengths count TypeBox's graphemes (not code points), `multipleOf` has a 1e-10
/// tolerance, `uniqueItems` compares numbers by their bits (`0` and `-0` differ).
pub(super) const TYPEBOX_ONLY_KEYWORDS: &[&str] =
    &["minLength", "maxLength", "multipleOf", "uniqueItems"];

/// A copy of `schema` without [`TYPEBOX_ONLY_KEYWORDS`], for the backstop. Only schema
/// positions are visited, so a property that happens to be named `minLength` stays.
pub(super) fn strip_typebox_keywords(schema: &Value) -> Value {
    let Value::Object(keywords) = schema else {
        return schema.clone();
    };
    let mut stripped = Map::new();
    for (key, value) in keywords {
        if TYPEBOX_ONLY_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        let value = match (key.as_str(), value) {
            // A single subschema.
            (
                "additionalProperties"
                | "additionalItems"
                | "items"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties",
                Value::Object(_),
            ) => strip_typebox_keywords(value),
            // A list of subschemas.
            ("items" | "prefixItems" | "allOf" | "anyOf" | "oneOf", Value::Array(list)) => {
                Value::Array(list.iter().map(strip_typebox_keywords).collect())
            }
            // A map of names to subschemas (a `dependencies` entry may be a list of names,
            // which passes through unchanged).
            (
                "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
                | "dependencies",
                Value::Object(map),
            ) => Value::Object(
                map.iter()
                    .map(|(name, sub)| (name.clone(), strip_typebox_keywords(sub)))
                    .collect(),
            ),
            _ => value.clone(),
        };
        stripped.insert(key.clone(), value);
    }
    Value::Object(stripped)
}

pub(super) fn add_pattern(pattern: &str, patterns: &mut HashMap<String, jsonschema::Validator>) {
    if !patterns.contains_key(pattern)
        && let Ok(validator) = jsonschema::validator_for(&serde_json::json!({ "pattern": pattern }))
    {
        patterns.insert(pattern.to_owned(), validator);
    }
}

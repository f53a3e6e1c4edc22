//! Step 2: TypeBox `Value.Convert` (typebox 1.3.7 `value/convert`), and the
//! `Try*` conversions it shares with pi-ai's `coercePrimitiveByType` (step 3).

use super::*;

impl ArgumentSchema {
    /// `FromType`: converts `value` for the TypeBox kind that `schema` reads as.
    pub(super) fn convert(&self, schema: &Value, value: Value) -> Value {
        match kind_of(schema) {
            Kind::Literal(constant) => convert_literal(constant, value),
            Kind::Enum(options) => {
                // `FromEnum` evaluates the enum to a union of literals (`FromUnion`).
                if options.iter().any(|option| js_deep_equal(&value, option)) {
                    return value;
                }
                options
                    .iter()
                    .map(|option| convert_literal(option, value.clone()))
                    .find(|candidate| self.check(schema, candidate))
                    .unwrap_or(value)
            }
            Kind::Union(members) => {
                // `FromUnion`: unchanged if a member already accepts it; else the first member
                // conversion (of a clone) that the whole union accepts; else unchanged.
                if members.iter().any(|member| self.check(member, &value)) {
                    return value;
                }
                members
                    .iter()
                    .map(|member| self.convert(member, value.clone()))
                    .find(|candidate| self.check(schema, candidate))
                    .unwrap_or(value)
            }
            Kind::Types(types) => {
                // `"type": [a, b]` read as a union of the single types: a member accepts the
                // value exactly when the whole node does, so the checks go against the node.
                if self.check(schema, &value) {
                    return value;
                }
                types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|type_name| self.convert_as(type_name, schema, value.clone()))
                    .find(|candidate| self.check(schema, candidate))
                    .unwrap_or(value)
            }
            Kind::Type(type_name) => self.convert_as(type_name, schema, value),
            Kind::Unknown => value,
        }
    }

    pub(super) fn convert_as(&self, type_name: &str, schema: &Value, value: Value) -> Value {
        match type_name {
            // A number stays untouched (not re-encoded), so exact integers keep their form.
            "number" if value.is_number() => value,
            "number" => try_number(&value).map_or(value, number_value),
            "integer" => match &value {
                Value::Number(n) if js_number(n).fract() == 0.0 => value,
                // `Math.trunc` after the Number conversion: `"42.7"` → 42.
                _ => try_number(&value).map_or(value, |n| number_value(n.trunc())),
            },
            "boolean" => try_boolean(&value).map_or(value, Value::Bool),
            "string" => try_string(&value).map_or(value, Value::String),
            "null" => {
                if try_null(&value) {
                    Value::Null
                } else {
                    value
                }
            }
            "array" => match tuple_items(schema) {
                Some(items) => self.convert_tuple(items, value),
                None => self.convert_array(schema, value),
            },
            "object" => match value {
                Value::Object(mut object) => {
                    self.convert_object_in_place(schema, &mut object);
                    Value::Object(object)
                }
                // §7.3: a JSON-encoded object is parsed; any other string stays (and fails).
                Value::String(text) => match parse_json(&text) {
                    Some(Value::Object(mut object)) => {
                        self.convert_object_in_place(schema, &mut object);
                        Value::Object(object)
                    }
                    _ => Value::String(text),
                },
                other => other,
            },
            _ => value,
        }
    }

    /// `FromArray`: a non-array is wrapped (`"x"` → `["x"]`), then each item is converted.
    pub(super) fn convert_array(&self, schema: &Value, value: Value) -> Value {
        let items = match value {
            Value::Array(items) => items,
            // §7.3: a JSON-encoded array is parsed instead of wrapped.
            Value::String(text) => match parse_json(&text) {
                Some(Value::Array(items)) => items,
                _ => vec![Value::String(text)],
            },
            other => vec![other],
        };
        let Some(item_schema) = schema.get("items") else {
            return Value::Array(items);
        };
        Value::Array(
            items
                .into_iter()
                .map(|item| self.convert(item_schema, item))
                .collect(),
        )
    }

    /// `FromTuple`: no wrapping; the items present are converted position by position.
    pub(super) fn convert_tuple(&self, item_schemas: &[Value], value: Value) -> Value {
        let mut items = match value {
            Value::Array(items) => items,
            // §7.3 applies to tuples too: an array is expected.
            Value::String(text) => match parse_json(&text) {
                Some(Value::Array(items)) => items,
                _ => return Value::String(text),
            },
            other => return other,
        };
        for (item, item_schema) in items.iter_mut().zip(item_schemas) {
            *item = self.convert(item_schema, item.take());
        }
        Value::Array(items)
    }

    /// `FromObject`: each present property is converted in schema order, then the
    /// `additionalProperties` schema (when it is an object) converts the other keys.
    pub(super) fn convert_object_in_place(&self, schema: &Value, object: &mut Map<String, Value>) {
        if let Some(keywords) = schema.as_object() {
            each_property(keywords, object, |schema, slot| {
                *slot = self.convert(schema, slot.take());
            });
        }
    }
}

/// `FromLiteral`: equal values stay; otherwise the conversion for the literal's type is used
/// only when it yields exactly the literal.
pub(super) fn convert_literal(constant: &Value, value: Value) -> Value {
    if js_strict_equal(constant, &value) {
        return value;
    }
    match constant {
        Value::String(expected) => match try_string(&value) {
            Some(text) if text == *expected => Value::String(text),
            _ => value,
        },
        Value::Number(expected) => match try_number(&value) {
            Some(number) if number == js_number(expected) => number_value(number),
            _ => value,
        },
        Value::Bool(expected) => match try_boolean(&value) {
            Some(flag) if flag == *expected => Value::Bool(flag),
            _ => value,
        },
        // TypeBox has no null literal; `{"const": null}` reads as its Null type.
        Value::Null if try_null(&value) => Value::Null,
        _ => value,
    }
}

/// TypeBox `TryNumber`.
pub(super) fn try_number(value: &Value) -> Option<f64> {
    match value {
        Value::Bool(flag) => Some(if *flag { 1.0 } else { 0.0 }),
        Value::Number(number) => Some(js_number(number)),
        Value::Null => Some(0.0),
        Value::String(text) => {
            // `+value` when finite (so `""` → 0, `"0x10"` → 16, `"1e3"` → 1000) ...
            let number = js_string_to_number(text);
            if number.is_finite() {
                return Some(number);
            }
            // ... else `true`/`false` in any case ...
            match text.to_lowercase().as_str() {
                "false" => return Some(0.0),
                "true" => return Some(1.0),
                _ => {}
            }
            // ... else a BigInt-like string in the safe integer range (`"12n"` → 12).
            bigint_like(text)
                .filter(|n| n.abs() <= MAX_SAFE_INTEGER)
                .map(|n| n as f64)
        }
        _ => None,
    }
}

/// `Number.MAX_SAFE_INTEGER`.
pub(super) const MAX_SAFE_INTEGER: i128 = (1 << 53) - 1;

/// TypeBox's `TryBigInt` on a string: `-?(0|[1-9]\d*)n`, a decimal (its integer part), or an
/// integer. Values beyond `i128` are reported as `i128::MAX`, which is out of every safe range.
pub(super) fn bigint_like(text: &str) -> Option<i128> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let integer_part = if let Some(digits) = unsigned.strip_suffix('n') {
        digits
    } else if let Some((integer, fraction)) = unsigned.split_once('.') {
        if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        integer
    } else {
        unsigned
    };
    let canonical = integer_part == "0"
        || (integer_part.bytes().all(|b| b.is_ascii_digit())
            && !integer_part.is_empty()
            && !integer_part.starts_with('0'));
    if !canonical {
        return None;
    }
    let magnitude = integer_part.parse::<i128>().unwrap_or(i128::MAX);
    Some(if negative { -magnitude } else { magnitude })
}

/// TypeBox `TryBoolean`.
pub(super) fn try_boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(flag) => Some(*flag),
        Value::Number(number) => {
            let number = js_number(number);
            if number == 0.0 {
                Some(false)
            } else if number == 1.0 {
                Some(true)
            } else {
                None
            }
        }
        Value::Null => Some(false),
        Value::String(text) => match text.to_lowercase().as_str() {
            "false" | "0" => Some(false),
            "true" | "1" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

/// TypeBox `TryString`, minus `null` → `"null"` (§7.3: null never becomes text).
pub(super) fn try_string(value: &Value) -> Option<String> {
    match value {
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(js_number_string(js_number(number))),
        Value::String(text) => Some(text.clone()),
        _ => None,
    }
}

/// TypeBox `TryNull`: `false`, `0`, `null`, `""`, `"0"`, `"null"`/`"undefined"` in any case.
pub(super) fn try_null(value: &Value) -> bool {
    match value {
        Value::Bool(flag) => !flag,
        Value::Number(number) => js_number(number) == 0.0,
        Value::Null => true,
        Value::String(text) => {
            text.is_empty()
                || text == "0"
                || matches!(text.to_lowercase().as_str(), "null" | "undefined")
        }
        _ => false,
    }
}

/// pi-ai's `coercePrimitiveByType` (with §7.3: `null` is not turned into `""` for a string).
/// `Some` only when the rule changes the value, which is what "`candidate !== value`" tests.
pub(super) fn coerce_primitive(value: &Value, type_name: &str) -> Option<Value> {
    match (type_name, value) {
        ("number" | "integer", Value::Null) => Some(number_value(0.0)),
        ("number" | "integer", Value::Bool(flag)) => {
            Some(number_value(if *flag { 1.0 } else { 0.0 }))
        }
        ("number", Value::String(text)) if !js_trim(text).is_empty() => {
            let number = js_string_to_number(text);
            number.is_finite().then(|| number_value(number))
        }
        ("integer", Value::String(text)) if !js_trim(text).is_empty() => {
            let number = js_string_to_number(text);
            (number.is_finite() && number.fract() == 0.0).then(|| number_value(number))
        }
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        // Exactly these two spellings, unlike TypeBox.
        ("boolean", Value::String(text)) if text == "true" || text == "false" => {
            Some(Value::Bool(text == "true"))
        }
        ("boolean", Value::Number(number)) => match js_number(number) {
            1.0 => Some(Value::Bool(true)),
            0.0 => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Number(number)) => {
            Some(Value::String(js_number_string(js_number(number))))
        }
        ("string", Value::Bool(flag)) => Some(Value::String(flag.to_string())),
        ("null", Value::String(text)) if text.is_empty() => Some(Value::Null),
        ("null", Value::Number(number)) if js_number(number) == 0.0 => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        _ => None,
    }
}

/// §7.3: a string parsed as JSON where an array or object is expected.
pub(super) fn parse_json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

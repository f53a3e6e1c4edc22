//! Step 3: the AJV-style pass (pi-ai `coerceWithJsonSchema`).

use super::*;

impl ArgumentSchema {
    pub(super) fn coerce_json(&self, schema: &Value, value: Value) -> Value {
        let Value::Object(keywords) = schema else {
            return value;
        };
        let mut next = value;
        if let Some(Value::Array(members)) = keywords.get("allOf") {
            for member in members {
                next = self.coerce_json(member, next);
            }
        }
        if let Some(Value::Array(members)) = keywords.get("anyOf") {
            next = self.coerce_json_union(members, next);
        }
        if let Some(Value::Array(members)) = keywords.get("oneOf") {
            next = self.coerce_json_union(members, next);
        }
        let types: Vec<&str> = match keywords.get("type") {
            Some(Value::String(single)) => vec![single.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        // With several types, a value that already has one of them is kept as it is.
        let matches_member = types.len() > 1
            && types
                .iter()
                .any(|type_name| matches_json_type(&next, type_name));
        if !matches_member {
            // The first type whose rule changes the value wins.
            if let Some(coerced) = types
                .iter()
                .find_map(|type_name| coerce_primitive(&next, type_name))
            {
                next = coerced;
            }
        }
        if types.contains(&"object")
            && let Value::Object(object) = &mut next
        {
            each_property(keywords, object, |schema, slot| {
                *slot = self.coerce_json(schema, slot.take());
            });
        }
        if types.contains(&"array")
            && let Value::Array(items) = &mut next
        {
            match keywords.get("items") {
                Some(Value::Array(item_schemas)) => {
                    for (item, item_schema) in items.iter_mut().zip(item_schemas) {
                        *item = self.coerce_json(item_schema, item.take());
                    }
                }
                Some(item_schema @ Value::Object(_)) => {
                    for item in items.iter_mut() {
                        *item = self.coerce_json(item_schema, item.take());
                    }
                }
                _ => {}
            }
        }
        next
    }

    /// `anyOf`/`oneOf`: keep a value some branch accepts, else the first branch whose coercion
    /// of a clone that branch accepts, else leave it.
    pub(super) fn coerce_json_union(&self, members: &[Value], value: Value) -> Value {
        if members.iter().any(|member| self.check(member, &value)) {
            return value;
        }
        for member in members {
            let candidate = self.coerce_json(member, value.clone());
            if self.check(member, &candidate) {
                return candidate;
            }
        }
        value
    }
}

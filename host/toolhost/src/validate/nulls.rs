//! Step 1: optional-null removal (pi-ai `normalizeOptionalNulls`).

use super::*;

impl ArgumentSchema {
    pub(super) fn remove_optional_nulls(&self, value: &mut Value, schema: &Value) {
        match value {
            Value::Array(items) => match schema.get("items") {
                Some(Value::Array(tuple)) => {
                    for (item, item_schema) in items.iter_mut().zip(tuple) {
                        self.remove_optional_nulls(item, item_schema);
                    }
                }
                // JS tests `schema.items` for truthiness: `items: false` is skipped.
                Some(item_schema) if item_schema != &Value::Bool(false) => {
                    for item in items {
                        self.remove_optional_nulls(item, item_schema);
                    }
                }
                _ => {}
            },
            Value::Object(object) => {
                let Some(Value::Object(properties)) = schema.get("properties") else {
                    return;
                };
                let required = string_list(schema.get("required"));
                for (key, property_schema) in properties {
                    let Some(slot) = object.get_mut(key) else {
                        continue;
                    };
                    if slot.is_null()
                        && !required.contains(&key.as_str())
                        && !property_schema.get("$ref").is_some_and(Value::is_string)
                        && !self.check(property_schema, &Value::Null)
                    {
                        // `shift_remove` keeps the other keys in the order the model sent them.
                        object.shift_remove(key);
                    } else {
                        self.remove_optional_nulls(slot, property_schema);
                    }
                }
            }
            _ => {}
        }
    }
}

//! Step 4: TypeBox's error walk (typebox 1.3.7 `schema/engine`, `ErrorSchema`).

use super::*;

impl ArgumentSchema {
    /// Validates `value` against `schema`, appending TypeBox-ordered issues to `out`. Like
    /// TypeBox it does not stop at the first failure: every applicable keyword reports.
    pub(super) fn walk(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        if depth > MAX_SCHEMA_DEPTH || !walk_step() {
            return true;
        }
        let keywords = match schema {
            Value::Bool(true) => return true,
            Value::Bool(false) => {
                out.push(RawIssue::new(path, "schema is false"));
                return false;
            }
            Value::Object(keywords) => keywords,
            _ => return true,
        };
        let mut ok = true;
        if let Some(type_keyword) = keywords.get("type")
            && let Some(message) = type_mismatch(type_keyword, value)
        {
            out.push(RawIssue::new(path, message));
            ok = false;
        }
        // Each group of keywords applies only to values of its kind.
        ok &= match value {
            Value::Object(object) => self.walk_object(keywords, value, object, path, depth, out),
            Value::Array(items) => self.walk_array(keywords, items, path, depth, out),
            Value::String(text) => self.walk_string(keywords, text, path, out),
            Value::Number(number) => walk_number(keywords, js_number(number), path, out),
            _ => true,
        };
        if let Some(Value::String(reference)) = keywords.get("$ref")
            && let Some(target) = self.resolve_ref(reference)
        {
            ok &= self.walk(target, value, path, depth + 1, out);
        }
        if let Some(constant) = keywords.get("const")
            && !js_deep_equal(value, constant)
        {
            out.push(RawIssue::new(path, "must be equal to constant"));
            ok = false;
        }
        if let Some(Value::Array(options)) = keywords.get("enum")
            && !options.iter().any(|option| js_deep_equal(value, option))
        {
            out.push(RawIssue::new(
                path,
                "must be equal to one of the allowed values",
            ));
            ok = false;
        }
        if let Some(condition) = keywords.get("if").filter(|s| is_schema(s)) {
            ok &= self.walk_if(keywords, condition, value, path, depth, out);
        }
        if let Some(negated) = keywords.get("not").filter(|s| is_schema(s)) {
            let mut sink = Vec::new();
            if self.walk(negated, value, path, depth + 1, &mut sink) {
                out.push(RawIssue::new(path, "must not be valid"));
                ok = false;
            }
        }
        if let Some(members) = schema_list(keywords.get("allOf")) {
            // Every member runs in its own context; the failing members' issues are reported,
            // with no line of allOf's own.
            for member in members {
                let mut member_issues = Vec::new();
                if !self.walk(member, value, path, depth + 1, &mut member_issues) {
                    out.append(&mut member_issues);
                    ok = false;
                }
            }
        }
        if let Some(members) = schema_list(keywords.get("anyOf")) {
            let mut failed = Vec::new();
            let mut passed = false;
            for member in members {
                let mut member_issues = Vec::new();
                if self.walk(member, value, path, depth + 1, &mut member_issues) {
                    passed = true;
                } else {
                    failed.push(member_issues);
                }
            }
            if !passed {
                // Each member's issues, then the anyOf line (C184).
                out.extend(failed.into_iter().flatten());
                out.push(RawIssue::new(path, "must match a schema in anyOf"));
                ok = false;
            }
        }
        if let Some(members) = schema_list(keywords.get("oneOf")) {
            let mut failed = Vec::new();
            let mut passing = 0;
            for member in members {
                let mut member_issues = Vec::new();
                if self.walk(member, value, path, depth + 1, &mut member_issues) {
                    passing += 1;
                } else {
                    failed.push(member_issues);
                }
            }
            if passing != 1 {
                // Members' issues only when none passed; several passing is oneOf's line alone.
                if passing == 0 {
                    out.extend(failed.into_iter().flatten());
                }
                out.push(RawIssue::new(
                    path,
                    "must match exactly one schema in oneOf",
                ));
                ok = false;
            }
        }
        // Issues are only appended and only the first MAX_ISSUES are ever shown, so the rest can
        // go at once: kept, nested unions over a deep value would pile them up by the million.
        out.truncate(MAX_ISSUES);
        ok
    }

    /// TypeBox order inside an object: required, additionalProperties, dependencies,
    /// dependentRequired, patternProperties, properties, propertyNames, min/maxProperties.
    pub(super) fn walk_object(
        &self,
        keywords: &Map<String, Value>,
        value: &Value,
        object: &Map<String, Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        let properties = keywords
            .get("properties")
            .and_then(Value::as_object)
            .filter(|properties| properties.values().all(is_schema));
        let pattern_properties = keywords
            .get("patternProperties")
            .and_then(Value::as_object)
            .filter(|patterns| patterns.values().all(is_schema));

        if let Some(Value::Array(required)) = keywords.get("required")
            && required.iter().all(Value::is_string)
        {
            // One issue naming every missing property; Pi appends the first to the path.
            let missing: Vec<&str> = required
                .iter()
                .filter_map(Value::as_str)
                .filter(|name| !object.contains_key(*name))
                .collect();
            if let Some(first) = missing.first() {
                out.push(RawIssue {
                    instance_path: path.to_owned(),
                    message: format!("must have required properties {}", missing.join(", ")),
                    required_first: Some((*first).to_owned()),
                });
                ok = false;
            }
        }
        if let Some(additional) = keywords
            .get("additionalProperties")
            .filter(|s| is_schema(s))
        {
            // Inner issues of an additional property are dropped: only the summary line shows.
            let mut rejected = false;
            for (key, property) in js_entries(object) {
                let known = properties.is_some_and(|properties| properties.contains_key(key))
                    || pattern_properties.is_some_and(|patterns| {
                        patterns
                            .keys()
                            .any(|pattern| self.regex_matches(pattern, key))
                    });
                let mut sink = Vec::new();
                if !known
                    && !self.walk(
                        additional,
                        property,
                        &child_path(path, key),
                        depth + 1,
                        &mut sink,
                    )
                {
                    rejected = true;
                }
            }
            if rejected {
                out.push(RawIssue::new(path, "must not have additional properties"));
                ok = false;
            }
        }
        if let Some(Value::Object(dependencies)) = keywords.get("dependencies") {
            for (key, dependency) in dependencies {
                if !object.contains_key(key) {
                    continue;
                }
                match dependency {
                    Value::Array(names) => {
                        // `Array.every` stops at the first missing dependency.
                        if names
                            .iter()
                            .any(|name| name.as_str().is_some_and(|n| !object.contains_key(n)))
                        {
                            out.push(RawIssue::new(path, dependency_message(key, names)));
                            ok = false;
                        }
                    }
                    schema => ok &= self.walk(schema, value, path, depth + 1, out),
                }
            }
        }
        if let Some(Value::Object(dependent)) = keywords.get("dependentRequired") {
            for (key, names) in dependent {
                let (true, Value::Array(names)) = (object.contains_key(key), names) else {
                    continue;
                };
                // One issue per missing dependency, each naming the whole list.
                for name in names.iter().filter_map(Value::as_str) {
                    if !object.contains_key(name) {
                        out.push(RawIssue::new(path, dependency_message(key, names)));
                        ok = false;
                    }
                }
            }
        }
        if let Some(pattern_properties) = pattern_properties {
            for (pattern, property_schema) in pattern_properties {
                let matching = js_entries(object)
                    .into_iter()
                    .filter(|(key, _)| self.regex_matches(pattern, key))
                    .map(|(key, property)| (key, (property, property_schema)));
                ok &= self.walk_children(matching, path, depth, out);
            }
        }
        if let Some(properties) = properties {
            // Schema order, not the order of the arguments.
            let present = properties.iter().filter_map(|(key, property_schema)| {
                Some((key, (object.get(key)?, property_schema)))
            });
            ok &= self.walk_children(present, path, depth, out);
        }
        if let Some(names_schema) = keywords.get("propertyNames").filter(|s| is_schema(s)) {
            let invalid: Vec<&str> = js_entries(object)
                .into_iter()
                .map(|(key, _)| key.as_str())
                .filter(|key| {
                    let mut sink = Vec::new();
                    !self.walk(
                        names_schema,
                        &Value::String((*key).to_owned()),
                        &child_path(path, key),
                        depth + 1,
                        &mut sink,
                    )
                })
                .collect();
            if !invalid.is_empty() {
                out.push(RawIssue::new(
                    path,
                    format!("property names {} are invalid", invalid.join(", ")),
                ));
                ok = false;
            }
        }
        let count = object.len() as f64;
        ok &= check_count(keywords, "minProperties", count, "properties", path, out);
        ok &= check_count(keywords, "maxProperties", count, "properties", path, out);
        ok
    }

    /// TypeBox order inside an array: additionalItems, contains, items, maxItems, minItems,
    /// prefixItems, uniqueItems.
    pub(super) fn walk_array(
        &self,
        keywords: &Map<String, Value>,
        items: &[Value],
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        let prefix = schema_list(keywords.get("prefixItems"));
        if let Some(Value::Array(tuple)) = keywords.get("items")
            && let Some(additional) = keywords.get("additionalItems").filter(|s| is_schema(s))
        {
            // `Array.every`: only the first failing additional item reports.
            for (index, item) in items.iter().enumerate().skip(tuple.len()) {
                if !self.walk(
                    additional,
                    item,
                    &child_path(path, &index.to_string()),
                    depth + 1,
                    out,
                ) {
                    ok = false;
                    break;
                }
            }
        }
        // `minContains`/`maxContains` change what `contains` means; those are left to the
        // backstop rather than reported wrongly here.
        if let Some(contains) = keywords.get("contains").filter(|s| is_schema(s))
            && !keywords.contains_key("minContains")
            && !keywords.contains_key("maxContains")
            && !items.iter().any(|item| self.check(contains, item))
        {
            out.push(RawIssue::new(path, "must contain at least 1 valid item"));
            ok = false;
        }
        match keywords.get("items") {
            Some(Value::Array(tuple)) if tuple.iter().all(is_schema) => {
                ok &= self.walk_children(items.iter().zip(tuple).enumerate(), path, depth, out);
            }
            Some(item_schema) if is_schema(item_schema) => {
                let offset = prefix.map_or(0, <[Value]>::len);
                let rest = items.iter().map(|item| (item, item_schema));
                ok &= self.walk_children(rest.enumerate().skip(offset), path, depth, out);
            }
            _ => {}
        }
        let count = items.len() as f64;
        ok &= check_count(keywords, "maxItems", count, "items", path, out);
        ok &= check_count(keywords, "minItems", count, "items", path, out);
        if let Some(prefix) = prefix {
            ok &= self.walk_children(items.iter().zip(prefix).enumerate(), path, depth, out);
        }
        if keywords.get("uniqueItems") == Some(&Value::Bool(true)) && has_duplicates(items) {
            out.push(RawIssue::new(path, "must not have duplicate items"));
            ok = false;
        }
        ok
    }

    /// Walk every `(key, (value, schema))`, each at its key (a property name
    /// or an array index) below `path`; all of them report (no short cut).
    fn walk_children<'a, K: ToString>(
        &self,
        pairs: impl Iterator<Item = (K, (&'a Value, &'a Value))>,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        for (key, (value, schema)) in pairs {
            ok &= self.walk(
                schema,
                value,
                &child_path(path, &key.to_string()),
                depth + 1,
                out,
            );
        }
        ok
    }

    /// TypeBox order for strings: maxLength, minLength, format, pattern.
    pub(super) fn walk_string(
        &self,
        keywords: &Map<String, Value>,
        text: &str,
        path: &str,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        if number_keyword(keywords, "maxLength").is_some()
            || number_keyword(keywords, "minLength").is_some()
        {
            let length = grapheme_count(text) as f64;
            ok &= check_count(keywords, "maxLength", length, "characters", path, out);
            ok &= check_count(keywords, "minLength", length, "characters", path, out);
        }
        if let Some(Value::String(format)) = keywords.get("format")
            && let Some(validator) = self.formats.get(format)
            && !validator.is_valid(&Value::String(text.to_owned()))
        {
            out.push(RawIssue::new(
                path,
                format!("must match format \"{format}\""),
            ));
            ok = false;
        }
        if let Some(Value::String(pattern)) = keywords.get("pattern")
            && !self.regex_matches(pattern, text)
        {
            out.push(RawIssue::new(
                path,
                format!("must match pattern \"{pattern}\""),
            ));
            ok = false;
        }
        ok
    }

    /// `if`/`then`/`else`: the `if` and `then` issues stay inside; a failing `else` reports its
    /// own issues before the summary line (as TypeBox does).
    pub(super) fn walk_if(
        &self,
        keywords: &Map<String, Value>,
        condition: &Value,
        value: &Value,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let then_schema = keywords.get("then").filter(|s| is_schema(s));
        let else_schema = keywords.get("else").filter(|s| is_schema(s));
        let mut sink = Vec::new();
        if self.walk(condition, value, path, depth + 1, &mut sink) {
            let passed = then_schema.is_none_or(|then_schema| {
                self.walk(then_schema, value, path, depth + 1, &mut sink)
            });
            if !passed {
                out.push(RawIssue::new(path, "must match \"then\" schema"));
            }
            passed
        } else {
            let passed = else_schema
                .is_none_or(|else_schema| self.walk(else_schema, value, path, depth + 1, out));
            if !passed {
                out.push(RawIssue::new(path, "must match \"else\" schema"));
            }
            passed
        }
    }

    /// Unanchored search, like JavaScript's `RegExp.prototype.test`. A pattern that could not
    /// be compiled (so `compile` would have failed on it) does not reject anything.
    pub(super) fn regex_matches(&self, pattern: &str, text: &str) -> bool {
        self.patterns
            .get(pattern)
            .is_none_or(|validator| validator.is_valid(&Value::String(text.to_owned())))
    }

    /// Local references only (`#` and `#/json/pointer`); others are left to the backstop.
    pub(super) fn resolve_ref(&self, reference: &str) -> Option<&Value> {
        let fragment = reference.strip_prefix('#')?;
        if fragment.is_empty() {
            return Some(&self.schema);
        }
        if !fragment.starts_with('/') {
            return None;
        }
        self.schema.pointer(&percent_decode(fragment)?)
    }
}

/// Whether a number satisfies a limit.
pub(super) type Comparison = fn(f64, f64) -> bool;

/// TypeBox order for numbers: exclusiveMaximum, exclusiveMinimum, maximum, minimum, multipleOf.
pub(super) fn walk_number(
    keywords: &Map<String, Value>,
    number: f64,
    path: &str,
    out: &mut Vec<RawIssue>,
) -> bool {
    let mut ok = true;
    let comparisons: [(&str, &str, Comparison); 4] = [
        ("exclusiveMaximum", "<", |value, limit| value < limit),
        ("exclusiveMinimum", ">", |value, limit| value > limit),
        ("maximum", "<=", |value, limit| value <= limit),
        ("minimum", ">=", |value, limit| value >= limit),
    ];
    for (keyword, comparison, holds) in comparisons {
        if let Some(limit) = number_keyword(keywords, keyword)
            && !holds(number, limit)
        {
            out.push(RawIssue::new(
                path,
                format!("must be {comparison} {}", js_number_string(limit)),
            ));
            ok = false;
        }
    }
    if let Some(divisor) = number_keyword(keywords, "multipleOf")
        && !is_multiple_of(number, divisor)
    {
        out.push(RawIssue::new(
            path,
            format!("must be multiple of {}", js_number_string(divisor)),
        ));
        ok = false;
    }
    ok
}

/// One count keyword (`maxLength`, `minItems`, `maxProperties`, …): whether
/// `count` keeps it, with TypeBox's message (`must not have more than 3
/// items`) when it does not. A `max…` keyword bounds from above, a `min…` one
/// from below; a limit that is not a number (NaN) is never broken.
fn check_count(
    keywords: &Map<String, Value>,
    keyword: &str,
    count: f64,
    noun: &str,
    path: &str,
    out: &mut Vec<RawIssue>,
) -> bool {
    let Some(limit) = number_keyword(keywords, keyword) else {
        return true;
    };
    let (broken, relation) = if keyword.starts_with("max") {
        (count > limit, "more")
    } else {
        (count < limit, "fewer")
    };
    if broken {
        out.push(RawIssue::new(
            path,
            format!(
                "must not have {relation} than {} {noun}",
                js_number_string(limit)
            ),
        ));
    }
    !broken
}

/// TypeBox's `IsMultipleOf`: integers are multiples of any divisor whose reciprocal is an
/// integer; otherwise the remainder must be within 1e-10 of 0 or of the divisor.
pub(super) fn is_multiple_of(dividend: f64, divisor: f64) -> bool {
    if dividend.fract() == 0.0 && (1.0 / divisor) % 1.0 == 0.0 {
        return true;
    }
    let remainder = dividend % divisor;
    remainder
        .abs()
        .min((remainder - divisor).abs())
        .min((remainder + divisor).abs())
        < 1e-10
}

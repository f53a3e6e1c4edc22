//! Argument coercion and validation: Pi's `validateToolArguments` (`docs/spec.md` §2.5) with
//! toolhost's one documented coercion table (§7.3).
//!
//! A tool's parameter schema is compiled once into an [`ArgumentSchema`]. Every call then runs, on
//! a deep copy of the (prepared) arguments, in this order:
//!
//! 1. **Optional-null removal** ([`ArgumentSchema::coerce_and_validate`] step 1): a `null` under a
//!    key that is not `required`, whose property schema has no `$ref` and does not accept `null`,
//!    is deleted (recursively through `properties` and `items`).
//! 2. **TypeBox `Value.Convert`** rules, applied to every schema (Pi applies them only to schemas
//!    that still carry TypeBox's hidden kind marker; we read the plain keywords as TypeBox kinds:
//!    `type` → Number/Integer/Boolean/String/Null/Array/Object, `anyOf` → Union, `const` →
//!    Literal, `enum` → union of literals). As in Pi the converted *top-level* value is discarded:
//!    only the in-place changes below the top-level object survive.
//! 3. **The AJV-style pass** (pi-ai's `coerceWithJsonSchema`), which in Pi always runs because its
//!    TypeBox detection is broken (§5 item 1).
//! 4. **Validation** with TypeBox's error walk: TypeBox en_US messages in TypeBox order, at most
//!    eight of them (TypeBox's `maxErrors`). Keywords the walk does not implement are covered by a
//!    compiled `jsonschema` validator used as a backstop.
//!
//! §7.3 wins over Pi in two places: `null` given for a string schema is never turned into `"null"`
//! (step 2) or `""` (step 3), so it fails with `must be string`; and a string holding JSON is
//! parsed where an array or object is expected, when it parses to that type (otherwise Pi's
//! behaviour stays: an array wraps the string, an object leaves it alone).
//!
//! Accidents of Pi's code that no tool schema of ours should depend on are deliberately not
//! reproduced: TypeBox matching property names as regular expressions while converting (and
//! converting *declared* properties with the `additionalProperties` schema when there are several);
//! JavaScript's `in` seeing prototype keys (`required: ["toString"]`); a coerced non-object
//! top-level value being returned without validation; and union members with a `$ref` never
//! matching in the AJV-style pass (Pi compiles each member alone). References are resolved against
//! the tool's whole schema instead.
//!
//! JavaScript semantics leak into the model-visible results, so they are reproduced here:
//! `Number(string)`, `String(number)`, `String.prototype.trim`, `===` on numbers, the own-key
//! order of objects (array-index keys first) and `JSON.stringify(value, null, 2)` for the
//! "Received arguments" block ([`js_stringify_pretty`]).

use serde_json::{Map, Value};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

/// TypeBox's default `maxErrors`: Pi's failure text lists at most this many issues.
const MAX_ISSUES: usize = 8;

/// Nesting bound for the validation walk, which follows `$ref`: a reference cycle that never
/// descends into the value (`{"$ref": "#"}`) would otherwise recurse forever. Past the bound the
/// walk gives up on that branch and the `jsonschema` backstop has the last word.
const MAX_SCHEMA_DEPTH: usize = 256;

/// Steps (schema nodes visited) the walk may take to coerce and validate one call's arguments.
/// A tool's schema comes from its (possibly hostile) component, and its `$ref`s make it a graph
/// that the walk unfolds: two references back to the root under `anyOf` double the work at every
/// level, so without a bound one call could keep a host thread busy for ever — the walk runs in
/// the host, where no guest deadline applies. Honest arguments need a few steps per value node and
/// schema keyword (a model's arguments are at most some tens of thousands of nodes); past the bound
/// the call is refused with [`SCHEMA_TOO_COMPLEX`].
const MAX_WALK_STEPS: u64 = 1_000_000;

/// The issue of a call whose validation ran out of [`MAX_WALK_STEPS`].
pub const SCHEMA_TOO_COMPLEX: &str =
    "the tool's parameter schema is too complex to check these arguments";

thread_local! {
    /// Walk steps left for the validation running on this thread; `None` outside one. The walk
    /// is synchronous, so a thread runs one validation at a time.
    static WALK_BUDGET: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Run `f` under a fresh walk budget (or under the one already running on this thread), and
/// refuse its outcome if the budget ran out: the walk then returned early everywhere.
fn within_budget<T>(f: impl FnOnce() -> Result<T, Vec<Issue>>) -> Result<T, Vec<Issue>> {
    struct Outermost(bool);
    impl Drop for Outermost {
        fn drop(&mut self) {
            if self.0 {
                WALK_BUDGET.with(|budget| budget.set(None));
            }
        }
    }
    let outermost = Outermost(WALK_BUDGET.with(|budget| {
        let unset = budget.get().is_none();
        if unset {
            budget.set(Some(MAX_WALK_STEPS));
        }
        unset
    }));
    let outcome = f();
    let exhausted = budget_spent();
    drop(outermost);
    if exhausted {
        return Err(vec![Issue {
            path: format_path("", None),
            message: SCHEMA_TOO_COMPLEX.to_owned(),
        }]);
    }
    outcome
}

/// Whether the validation running on this thread has spent its walk budget.
fn budget_spent() -> bool {
    WALK_BUDGET.with(|budget| budget.get() == Some(0))
}

/// Take one walk step; `false` once the budget is spent.
fn walk_step() -> bool {
    WALK_BUDGET.with(|budget| match budget.get() {
        Some(0) => false,
        Some(left) => {
            budget.set(Some(left - 1));
            true
        }
        None => true,
    })
}

/// The formats TypeBox 1.3.7 registers; any other format passes, as in TypeBox.
const TYPEBOX_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "duration",
    "email",
    "hostname",
    "idn-email",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "iri-reference",
    "iri",
    "json-pointer-uri-fragment",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "uri-reference",
    "uri-template",
    "uri",
    "url",
    "uuid",
];

/// A tool's parameter schema, compiled once when the tool is loaded.
pub struct ArgumentSchema {
    schema: Value,
    /// Full validator, the backstop for keywords the TypeBox-style walk does not implement.
    backstop: jsonschema::Validator,
    /// `{"pattern": p}` validators for every `pattern` and `patternProperties` key, so that
    /// regular expressions follow `jsonschema`'s ECMA-262 dialect and are compiled only once.
    patterns: HashMap<String, jsonschema::Validator>,
    /// `{"format": f}` validators (format assertion on) for the TypeBox-known formats in use.
    formats: HashMap<String, jsonschema::Validator>,
}

impl fmt::Debug for ArgumentSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// One validation failure, in Pi's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// The formatted instance path: `edits.0.newText`, `path`, `root`.
    pub path: String,
    /// The TypeBox en_US message: `must be string`.
    pub message: String,
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// An issue as the walk produces it: TypeBox's raw instance path (keys joined with `/`, not
/// escaped), and for `required` the first missing name, which Pi appends to the path.
struct RawIssue {
    instance_path: String,
    message: String,
    required_first: Option<String>,
}

impl RawIssue {
    fn new(instance_path: &str, message: impl Into<String>) -> RawIssue {
        RawIssue {
            instance_path: instance_path.to_owned(),
            message: message.into(),
            required_first: None,
        }
    }

    fn into_issue(self) -> Issue {
        Issue {
            path: format_path(&self.instance_path, self.required_first.as_deref()),
            message: self.message,
        }
    }
}

impl ArgumentSchema {
    /// Errors (a readable message naming the cause) if `schema` is not a valid JSON Schema
    /// (meta-schema check via jsonschema) or is not an object schema (`"type":"object"` at top
    /// level).
    pub fn compile(schema: &Value) -> Result<ArgumentSchema, String> {
        if let Err(error) = jsonschema::meta::validate(schema) {
            let at = error.instance_path().as_str();
            let at = if at.is_empty() { "/" } else { at };
            return Err(format!(
                "parameter schema is not a valid JSON Schema (at {at}): {error}"
            ));
        }
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(
                "parameter schema must be an object schema (\"type\": \"object\" at the top level)"
                    .to_owned(),
            );
        }
        // The backstop must not reject what TypeBox accepts: formats are asserted by the walk
        // (so the backstop only annotates them), and the keywords whose TypeBox meaning differs
        // from JSON Schema's are removed from its copy of the schema.
        let backstop = jsonschema::options()
            .should_validate_formats(false)
            .build(&strip_typebox_keywords(schema))
            .map_err(|error| format!("parameter schema cannot be compiled: {error}"))?;
        let mut patterns = HashMap::new();
        let mut formats = HashMap::new();
        collect_regex_and_formats(schema, &mut patterns, &mut formats);
        Ok(ArgumentSchema {
            schema: schema.clone(),
            backstop,
            patterns,
            formats,
        })
    }

    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Spec §2.5 steps 1-4 with the §7.3 changes: returns the coerced deep copy, or the issues.
    pub fn coerce_and_validate(&self, args: &Value) -> Result<Value, Vec<Issue>> {
        within_budget(|| self.coerce_and_validate_unbounded(args))
    }

    fn coerce_and_validate_unbounded(&self, args: &Value) -> Result<Value, Vec<Issue>> {
        let mut args = args.clone();
        self.remove_optional_nulls(&mut args, &self.schema);
        // Pi ignores the value `Value.Convert` returns: only in-place changes inside the
        // top-level object survive, so nothing happens unless that object is there.
        if let (Kind::Type("object"), Value::Object(object)) = (kind_of(&self.schema), &mut args) {
            self.convert_object_in_place(&self.schema, object);
        }
        // The AJV-style pass turns no object into a non-object and no non-object into an object,
        // so with a top-level object schema only an object argument can change (and a
        // non-object result would have to validate against that schema to be kept).
        if args.is_object() {
            args = self.coerce_json(&self.schema, args);
        }
        self.validate_unbounded(&args).map(|()| args)
    }

    /// Step 4 alone: checks `value` against the schema, without coercion.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<Issue>> {
        within_budget(|| self.validate_unbounded(value))
    }

    fn validate_unbounded(&self, value: &Value) -> Result<(), Vec<Issue>> {
        let mut raw = Vec::new();
        if self.walk(&self.schema, value, "", 0, &mut raw) && raw.is_empty() {
            // A walk that ran out of steps passed everything unchecked; the backstop would
            // unfold the same references without any bound, so it is not asked.
            if budget_spent() {
                return Err(Vec::new());
            }
            if self.backstop.is_valid(value) {
                return Ok(());
            }
            // A keyword the walk does not implement failed: report jsonschema's own words.
            let issues = self
                .backstop
                .iter_errors(value)
                .take(MAX_ISSUES)
                .map(|error| {
                    let raw_path: String = error
                        .instance_path()
                        .segments()
                        .map(|segment| format!("/{segment}"))
                        .collect();
                    Issue {
                        path: format_path(&raw_path, None),
                        message: error.to_string(),
                    }
                })
                .collect();
            return Err(issues);
        }
        Err(raw
            .into_iter()
            .take(MAX_ISSUES)
            .map(RawIssue::into_issue)
            .collect())
    }

    /// True when `value` passes `schema` (a node of this tool's schema).
    fn check(&self, schema: &Value, value: &Value) -> bool {
        let mut sink = Vec::new();
        self.walk(schema, value, "", 0, &mut sink)
    }

    // ---------------------------------------------------------------------------------------
    // Step 1: optional-null removal (pi-ai `normalizeOptionalNulls`)
    // ---------------------------------------------------------------------------------------

    fn remove_optional_nulls(&self, value: &mut Value, schema: &Value) {
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

    // ---------------------------------------------------------------------------------------
    // Step 2: TypeBox `Value.Convert` (typebox 1.3.7 `value/convert`)
    // ---------------------------------------------------------------------------------------

    /// `FromType`: converts `value` for the TypeBox kind that `schema` reads as.
    fn convert(&self, schema: &Value, value: Value) -> Value {
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

    fn convert_as(&self, type_name: &str, schema: &Value, value: Value) -> Value {
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
    fn convert_array(&self, schema: &Value, value: Value) -> Value {
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
    fn convert_tuple(&self, item_schemas: &[Value], value: Value) -> Value {
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
    fn convert_object_in_place(&self, schema: &Value, object: &mut Map<String, Value>) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(properties) = properties {
            for (key, property_schema) in properties {
                if let Some(slot) = object.get_mut(key) {
                    *slot = self.convert(property_schema, slot.take());
                }
            }
        }
        if let Some(additional @ Value::Object(_)) = schema.get("additionalProperties") {
            for (key, slot) in object.iter_mut() {
                if properties.is_some_and(|properties| properties.contains_key(key)) {
                    continue;
                }
                *slot = self.convert(additional, slot.take());
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Step 3: the AJV-style pass (pi-ai `coerceWithJsonSchema`)
    // ---------------------------------------------------------------------------------------

    fn coerce_json(&self, schema: &Value, value: Value) -> Value {
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
            let properties = keywords.get("properties").and_then(Value::as_object);
            if let Some(properties) = properties {
                for (key, property_schema) in properties {
                    if let Some(slot) = object.get_mut(key) {
                        *slot = self.coerce_json(property_schema, slot.take());
                    }
                }
            }
            if let Some(additional @ Value::Object(_)) = keywords.get("additionalProperties") {
                for (key, slot) in object.iter_mut() {
                    if properties.is_some_and(|properties| properties.contains_key(key)) {
                        continue;
                    }
                    *slot = self.coerce_json(additional, slot.take());
                }
            }
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
    fn coerce_json_union(&self, members: &[Value], value: Value) -> Value {
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

    // ---------------------------------------------------------------------------------------
    // Step 4: TypeBox's error walk (typebox 1.3.7 `schema/engine`, `ErrorSchema`)
    // ---------------------------------------------------------------------------------------

    /// Validates `value` against `schema`, appending TypeBox-ordered issues to `out`. Like
    /// TypeBox it does not stop at the first failure: every applicable keyword reports.
    fn walk(
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
    fn walk_object(
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
                for (key, property) in js_entries(object) {
                    if self.regex_matches(pattern, key) {
                        ok &= self.walk(
                            property_schema,
                            property,
                            &child_path(path, key),
                            depth + 1,
                            out,
                        );
                    }
                }
            }
        }
        if let Some(properties) = properties {
            // Schema order, not the order of the arguments.
            for (key, property_schema) in properties {
                if let Some(property) = object.get(key) {
                    ok &= self.walk(
                        property_schema,
                        property,
                        &child_path(path, key),
                        depth + 1,
                        out,
                    );
                }
            }
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
        if let Some(limit) = number_keyword(keywords, "minProperties")
            && count < limit
        {
            out.push(RawIssue::new(
                path,
                format!(
                    "must not have fewer than {} properties",
                    js_number_string(limit)
                ),
            ));
            ok = false;
        }
        if let Some(limit) = number_keyword(keywords, "maxProperties")
            && count > limit
        {
            out.push(RawIssue::new(
                path,
                format!(
                    "must not have more than {} properties",
                    js_number_string(limit)
                ),
            ));
            ok = false;
        }
        ok
    }

    /// TypeBox order inside an array: additionalItems, contains, items, maxItems, minItems,
    /// prefixItems, uniqueItems.
    fn walk_array(
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
                for (index, (item, item_schema)) in items.iter().zip(tuple).enumerate() {
                    ok &= self.walk(
                        item_schema,
                        item,
                        &child_path(path, &index.to_string()),
                        depth + 1,
                        out,
                    );
                }
            }
            Some(item_schema) if is_schema(item_schema) => {
                let offset = prefix.map_or(0, <[Value]>::len);
                for (index, item) in items.iter().enumerate().skip(offset) {
                    ok &= self.walk(
                        item_schema,
                        item,
                        &child_path(path, &index.to_string()),
                        depth + 1,
                        out,
                    );
                }
            }
            _ => {}
        }
        let count = items.len() as f64;
        if let Some(limit) = number_keyword(keywords, "maxItems")
            && count > limit
        {
            out.push(RawIssue::new(
                path,
                format!("must not have more than {} items", js_number_string(limit)),
            ));
            ok = false;
        }
        if let Some(limit) = number_keyword(keywords, "minItems")
            && count < limit
        {
            out.push(RawIssue::new(
                path,
                format!("must not have fewer than {} items", js_number_string(limit)),
            ));
            ok = false;
        }
        if let Some(prefix) = prefix {
            for (index, (item, item_schema)) in items.iter().zip(prefix).enumerate() {
                ok &= self.walk(
                    item_schema,
                    item,
                    &child_path(path, &index.to_string()),
                    depth + 1,
                    out,
                );
            }
        }
        if keywords.get("uniqueItems") == Some(&Value::Bool(true)) && has_duplicates(items) {
            out.push(RawIssue::new(path, "must not have duplicate items"));
            ok = false;
        }
        ok
    }

    /// TypeBox order for strings: maxLength, minLength, format, pattern.
    fn walk_string(
        &self,
        keywords: &Map<String, Value>,
        text: &str,
        path: &str,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        let max = number_keyword(keywords, "maxLength");
        let min = number_keyword(keywords, "minLength");
        if max.is_some() || min.is_some() {
            let length = grapheme_count(text) as f64;
            if let Some(limit) = max
                && length > limit
            {
                out.push(RawIssue::new(
                    path,
                    format!(
                        "must not have more than {} characters",
                        js_number_string(limit)
                    ),
                ));
                ok = false;
            }
            if let Some(limit) = min
                && length < limit
            {
                out.push(RawIssue::new(
                    path,
                    format!(
                        "must not have fewer than {} characters",
                        js_number_string(limit)
                    ),
                ));
                ok = false;
            }
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
    fn walk_if(
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
    fn regex_matches(&self, pattern: &str, text: &str) -> bool {
        self.patterns
            .get(pattern)
            .is_none_or(|validator| validator.is_valid(&Value::String(text.to_owned())))
    }

    /// Local references only (`#` and `#/json/pointer`); others are left to the backstop.
    fn resolve_ref(&self, reference: &str) -> Option<&Value> {
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
type Comparison = fn(f64, f64) -> bool;

/// TypeBox order for numbers: exclusiveMaximum, exclusiveMinimum, maximum, minimum, multipleOf.
fn walk_number(
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

/// TypeBox's `IsMultipleOf`: integers are multiples of any divisor whose reciprocal is an
/// integer; otherwise the remainder must be within 1e-10 of 0 or of the divisor.
fn is_multiple_of(dividend: f64, divisor: f64) -> bool {
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

// -------------------------------------------------------------------------------------------
// Schema helpers
// -------------------------------------------------------------------------------------------

/// The TypeBox kind a (plain JSON) schema node is read as, for `Value.Convert`.
enum Kind<'a> {
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
fn kind_of(schema: &Value) -> Kind<'_> {
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
fn tuple_items(schema: &Value) -> Option<&[Value]> {
    match schema.get("items") {
        Some(Value::Array(items)) => Some(items),
        Some(_) => None,
        None => schema_list(schema.get("prefixItems")),
    }
}

/// TypeBox's `IsSchema`: an object or a boolean.
fn is_schema(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Bool(_))
}

/// A keyword holding a list of schemas, when it is one.
fn schema_list(keyword: Option<&Value>) -> Option<&[Value]> {
    match keyword {
        Some(Value::Array(list)) if list.iter().all(is_schema) => Some(list),
        _ => None,
    }
}

fn string_list(keyword: Option<&Value>) -> Vec<&str> {
    match keyword {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn number_keyword(keywords: &Map<String, Value>, name: &str) -> Option<f64> {
    keywords.get(name).and_then(Value::as_f64)
}

/// The `type` message when `value` has none of the named types: `must be string`, or for a
/// list `must be either string or null`. Unknown names accept anything, as in TypeBox.
fn type_mismatch(type_keyword: &Value, value: &Value) -> Option<String> {
    match type_keyword {
        Value::String(type_name) => {
            (!matches_type_name(value, type_name)).then(|| format!("must be {type_name}"))
        }
        Value::Array(types) if types.iter().all(Value::is_string) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            (!names.iter().any(|name| matches_type_name(value, name)))
                .then(|| format!("must be either {}", names.join(" or ")))
        }
        _ => None,
    }
}

fn matches_type_name(value: &Value, type_name: &str) -> bool {
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
fn matches_json_type(value: &Value, type_name: &str) -> bool {
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

fn dependency_message(property: &str, names: &[Value]) -> String {
    let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
    format!(
        "must have properties {} when property {property} is present",
        names.join(", ")
    )
}

/// TypeBox builds instance paths by plain concatenation: keys are not JSON-pointer escaped.
fn child_path(path: &str, key: &str) -> String {
    format!("{path}/{key}")
}

/// pi-ai's `formatValidationPath`: drop the leading `/`, turn the others into `.`; for a
/// `required` issue append the first missing name; an empty path is `root`.
fn format_path(instance_path: &str, required_first: Option<&str>) -> String {
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

/// Decodes `%XX` escapes of a URI fragment; `None` when they do not form UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            // Exactly two hex digits (`from_str_radix` alone would also take a sign).
            let hex = bytes.get(index + 1..index + 3)?;
            let digit = |b: u8| char::from(b).to_digit(16);
            decoded.push(u8::try_from(digit(hex[0])? * 16 + digit(hex[1])?).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// Precompiles the regular expressions and format checkers the walk may need. Values under
/// `const`, `enum`, `default` and `examples` are data, not schemas, and are skipped; a helper
/// that fails to compile is left out (the schema's own compilation reports a bad pattern).
fn collect_regex_and_formats(
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
const TYPEBOX_ONLY_KEYWORDS: &[&str] = &["minLength", "maxLength", "multipleOf", "uniqueItems"];

/// A copy of `schema` without [`TYPEBOX_ONLY_KEYWORDS`], for the backstop. Only schema
/// positions are visited, so a property that happens to be named `minLength` stays.
fn strip_typebox_keywords(schema: &Value) -> Value {
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

fn add_pattern(pattern: &str, patterns: &mut HashMap<String, jsonschema::Validator>) {
    if !patterns.contains_key(pattern)
        && let Ok(validator) = jsonschema::validator_for(&serde_json::json!({ "pattern": pattern }))
    {
        patterns.insert(pattern.to_owned(), validator);
    }
}

// -------------------------------------------------------------------------------------------
// TypeBox `Try*` conversions and pi-ai's `coercePrimitiveByType`
// -------------------------------------------------------------------------------------------

/// `FromLiteral`: equal values stay; otherwise the conversion for the literal's type is used
/// only when it yields exactly the literal.
fn convert_literal(constant: &Value, value: Value) -> Value {
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
fn try_number(value: &Value) -> Option<f64> {
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
const MAX_SAFE_INTEGER: i128 = (1 << 53) - 1;

/// TypeBox's `TryBigInt` on a string: `-?(0|[1-9]\d*)n`, a decimal (its integer part), or an
/// integer. Values beyond `i128` are reported as `i128::MAX`, which is out of every safe range.
fn bigint_like(text: &str) -> Option<i128> {
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
fn try_boolean(value: &Value) -> Option<bool> {
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
fn try_string(value: &Value) -> Option<String> {
    match value {
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(js_number_string(js_number(number))),
        Value::String(text) => Some(text.clone()),
        _ => None,
    }
}

/// TypeBox `TryNull`: `false`, `0`, `null`, `""`, `"0"`, `"null"`/`"undefined"` in any case.
fn try_null(value: &Value) -> bool {
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
fn coerce_primitive(value: &Value, type_name: &str) -> Option<Value> {
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
fn parse_json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

// -------------------------------------------------------------------------------------------
// JavaScript semantics
// -------------------------------------------------------------------------------------------

/// A JSON number as JavaScript holds it: every number is an IEEE double.
fn js_number(number: &serde_json::Number) -> f64 {
    number.as_f64().unwrap_or(f64::NAN)
}

/// A converted number as a JSON value: integral values become JSON integers (so a tool that
/// reads `offset` as `u64` gets one), `-0` becomes `0` (as `JSON.stringify` prints it).
fn number_value(number: f64) -> Value {
    if number.fract() == 0.0 {
        if number == 0.0 {
            return Value::from(0);
        }
        // Exactly representable in the target integer type (2^63 and 2^64 are not).
        if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&number) {
            return Value::from(number as i64);
        }
        if (0.0..18_446_744_073_709_551_616.0).contains(&number) {
            return Value::from(number as u64);
        }
    }
    serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)
}

/// `String(number)`: shortest round-trip digits, `1e+21` style exponents, `-0` → `"0"`.
fn js_number_string(number: f64) -> String {
    if number == 0.0 {
        return "0".to_owned();
    }
    ryu_js::Buffer::new().format(number).to_owned()
}

/// JavaScript's WhiteSpace and LineTerminator code points (what `trim` and `Number` strip).
/// Not Rust's `char::is_whitespace`: JS includes U+FEFF and excludes U+0085 and U+180E.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

pub(crate) fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_whitespace)
}

/// `Number(string)` (ECMAScript StringToNumber): trimmed; empty → 0; `0x`/`0o`/`0b` integers
/// (no sign); otherwise an optionally signed decimal literal or `Infinity`. Everything else is
/// NaN: no `inf`/`nan`/`_` as Rust's parser would accept, no trailing garbage (`"12abc"`).
fn js_string_to_number(text: &str) -> f64 {
    let trimmed = js_trim(text);
    if trimmed.is_empty() {
        return 0.0;
    }
    let bytes = trimmed.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return radix_integer(&trimmed[2..], radix);
        }
    }
    let (negative, unsigned) = match bytes[0] {
        b'-' => (true, &trimmed[1..]),
        b'+' => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let magnitude = if unsigned == "Infinity" {
        f64::INFINITY
    } else if is_decimal_literal(unsigned) {
        unsigned.parse::<f64>().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    };
    if negative { -magnitude } else { magnitude }
}

/// StrUnsignedDecimalLiteral without `Infinity`: `1`, `1.`, `.5`, `1.5e-3`, `2E+8`.
fn is_decimal_literal(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok =
        digits(integer) && digits(fraction) && !(integer.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|exponent| {
        let unsigned = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        !unsigned.is_empty() && digits(unsigned)
    });
    mantissa_ok && exponent_ok
}

/// A `0x`/`0o`/`0b` literal, rounded to the nearest double (ties to even) as JavaScript does,
/// however many digits it has.
fn radix_integer(digits: &str, radix: u32) -> f64 {
    if digits.is_empty() {
        return f64::NAN;
    }
    let bits_per_digit = radix.trailing_zeros() as usize;
    let mut bits = Vec::with_capacity(digits.len() * bits_per_digit);
    for c in digits.chars() {
        let Some(digit) = c.to_digit(radix) else {
            return f64::NAN;
        };
        for shift in (0..bits_per_digit).rev() {
            bits.push((digit >> shift) & 1 == 1);
        }
    }
    let first_one = bits.iter().position(|bit| *bit).unwrap_or(bits.len());
    let bits = &bits[first_one..];
    if bits.len() <= 53 {
        return bits
            .iter()
            .fold(0.0, |acc, bit| acc * 2.0 + f64::from(u8::from(*bit)));
    }
    let mut mantissa = bits[..53]
        .iter()
        .fold(0u64, |acc, bit| (acc << 1) | u64::from(*bit));
    let round = bits[53];
    let sticky = bits[54..].iter().any(|bit| *bit);
    if round && (sticky || mantissa & 1 == 1) {
        mantissa += 1;
    }
    let exponent = i32::try_from(bits.len() - 53).unwrap_or(i32::MAX);
    // Scaling by a power of two is exact until it overflows to Infinity.
    mantissa as f64 * 2f64.powi(exponent)
}

/// `===` between a literal and a value: numbers compare as doubles; objects are never equal
/// (they are distinct objects in JavaScript).
fn js_strict_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => js_number(a) == js_number(b),
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::String(a), Value::String(b)) => a == b,
        _ => false,
    }
}

/// TypeBox's `IsDeepEqual` (used by `const` and `enum`): `===` on primitives, same length and
/// element-wise for arrays, same key count and every key of `left` equal in `right` for objects.
fn js_deep_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| js_deep_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| js_deep_equal(x, y)))
        }
        _ => js_strict_equal(left, right),
    }
}

/// `uniqueItems` as TypeBox hashes values: key order does not matter, numbers compare by their
/// IEEE bits (so `0` and `-0` differ, `1` and `1.0` do not).
fn has_duplicates(items: &[Value]) -> bool {
    fn same(left: &Value, right: &Value) -> bool {
        match (left, right) {
            (Value::Number(a), Value::Number(b)) => {
                js_number(a).to_bits() == js_number(b).to_bits()
            }
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(key, x)| b.get(key).is_some_and(|y| same(x, y)))
            }
            _ => left == right,
        }
    }
    items
        .iter()
        .enumerate()
        .any(|(index, item)| items[..index].iter().any(|earlier| same(earlier, item)))
}

/// TypeBox's simplified grapheme count (`guard/string.mjs`), which `minLength`/`maxLength`
/// use: a code point plus following combining marks and variation selectors, joined across
/// ZWJ, with regional-indicator pairs (flags) as one.
fn grapheme_count(text: &str) -> usize {
    fn is_modifier(c: char) -> bool {
        matches!(
            c,
            '\u{0300}'..='\u{036F}'
                | '\u{1AB0}'..='\u{1AFF}'
                | '\u{1DC0}'..='\u{1DFF}'
                | '\u{FE20}'..='\u{FE2F}'
                | '\u{FE00}'..='\u{FE0F}'
        )
    }
    fn is_regional_indicator(c: char) -> bool {
        ('\u{1F1E6}'..='\u{1F1FF}').contains(&c)
    }
    let chars: Vec<char> = text.chars().collect();
    let skip_modifiers = |mut index: usize| {
        while index < chars.len() && is_modifier(chars[index]) {
            index += 1;
        }
        index
    };
    let mut count = 0;
    let mut index = 0;
    while index < chars.len() {
        let start = chars[index];
        index = skip_modifiers(index + 1);
        // A ZWJ joins the next code point, unless it is the string's last unit.
        while index + 1 < chars.len() && chars[index] == '\u{200D}' {
            index = skip_modifiers(index + 2);
        }
        if is_regional_indicator(start)
            && index < chars.len()
            && is_regional_indicator(chars[index])
        {
            index += 1;
        }
        count += 1;
    }
    count
}

/// ECMAScript "array index": the canonical decimal form of an integer below 2^32 - 1.
fn array_index(key: &str) -> Option<u32> {
    let canonical = key == "0"
        || (!key.is_empty()
            && key.len() <= 10
            && !key.starts_with('0')
            && key.bytes().all(|b| b.is_ascii_digit()));
    if !canonical {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|index| *index < u64::from(u32::MAX))
        .and_then(|index| u32::try_from(index).ok())
}

/// An object's entries in JavaScript's own-key order: array-index keys ascending, then the
/// other keys in insertion order. `JSON.stringify` and every key loop in TypeBox follow it.
fn js_entries(object: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(u32, (&String, &Value))> = Vec::new();
    let mut named = Vec::new();
    for entry in object {
        match array_index(entry.0) {
            Some(index) => indexed.push((index, entry)),
            None => named.push(entry),
        }
    }
    indexed.sort_by_key(|(index, _)| *index);
    indexed
        .into_iter()
        .map(|(_, entry)| entry)
        .chain(named)
        .collect()
}

// -------------------------------------------------------------------------------------------
// The failure text
// -------------------------------------------------------------------------------------------

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

fn write_pretty(out: &mut String, value: &Value, depth: usize) {
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

fn newline_indent(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// ECMAScript QuoteJSONString.
fn write_js_string(out: &mut String, text: &str) {
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

#[cfg(test)]
mod tests {
    //! Expected texts marked "Pi" were produced by Pi 0.85.0's own `validateToolArguments`
    //! (typebox 1.3.7) on a TypeBox-built copy of the schema; "§7.3" marks our deliberate changes.

    use super::*;
    use serde_json::json;

    fn read_schema() -> Value {
        json!({"type":"object","required":["path"],"properties":{
            "path":{"type":"string","description":"Path to the file to read (relative or absolute)"},
            "offset":{"type":"number","description":"Line number to start reading from (1-indexed)"},
            "limit":{"type":"number","description":"Maximum number of lines to read"}}})
    }

    /// The edit schema of spec §1.8.
    fn edit_schema() -> Value {
        json!({"type":"object","required":["path","edits"],"properties":{"path":{"type":"string","description":"Path to the file to edit (relative or absolute)"},"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{"oldText":{"type":"string","description":"Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},"newText":{"type":"string","description":"Replacement text for this targeted edit."}}},"description":"One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."}}})
    }

    /// `{"type":"object","properties":{name: property}}`, with `required: [name]` if asked.
    fn one(name: &str, property: Value, required: bool) -> Value {
        let mut schema = json!({"type":"object","properties":{name: property}});
        if required {
            schema["required"] = json!([name]);
        }
        schema
    }

    #[track_caller]
    fn compile(schema: &Value) -> ArgumentSchema {
        ArgumentSchema::compile(schema).expect("schema compiles")
    }

    #[track_caller]
    fn ok(schema: &Value, args: Value) -> Value {
        match compile(schema).coerce_and_validate(&args) {
            Ok(value) => value,
            Err(issues) => panic!("expected success, got {issues:?}"),
        }
    }

    /// The issues as `path: message` lines.
    #[track_caller]
    fn issues(schema: &Value, args: Value) -> Vec<String> {
        match compile(schema).coerce_and_validate(&args) {
            Ok(value) => panic!("expected failure, got {value}"),
            Err(issues) => issues.iter().map(Issue::to_string).collect(),
        }
    }

    /// Pi's whole failure text for tool `name`.
    #[track_caller]
    fn failure(name: &str, schema: &Value, args: Value) -> String {
        match compile(schema).coerce_and_validate(&args) {
            Ok(value) => panic!("expected failure, got {value}"),
            Err(issues) => failure_text(name, &issues, &args),
        }
    }

    // ---- spec cases ----------------------------------------------------------------------

    #[test]
    fn c031_read_missing_path() {
        assert_eq!(
            failure("read", &read_schema(), json!({})),
            "Validation failed for tool \"read\":\n  - path: must have required properties path\n\nReceived arguments:\n{}"
        );
    }

    #[test]
    fn c028_number_path_becomes_string() {
        assert_eq!(
            ok(&read_schema(), json!({"path":123})),
            json!({"path":"123"})
        );
    }

    #[test]
    fn read_offset_string_becomes_integer_number() {
        let args = ok(
            &read_schema(),
            json!({"path":"a","offset":"5","limit":" 7\n"}),
        );
        assert_eq!(args, json!({"path":"a","offset":5,"limit":7}));
        // Stored as JSON integers, so a tool reading `u64` gets them.
        assert_eq!(args["offset"].as_u64(), Some(5));
    }

    #[test]
    fn c178_optional_null_is_removed() {
        let args = ok(&read_schema(), json!({"path":"a","limit":null}));
        assert_eq!(args, json!({"path":"a"}));
        assert!(args.get("limit").is_none());
    }

    #[test]
    fn optional_null_removal_keeps_the_order_of_other_keys() {
        let args = ok(
            &read_schema(),
            json!({"limit":2,"offset":null,"path":"a","extra":null}),
        );
        let keys: Vec<&String> = args.as_object().unwrap().keys().collect();
        // `extra` has no schema: nothing says it may not be null, so it stays.
        assert_eq!(keys, ["limit", "path", "extra"]);
    }

    #[test]
    fn c073_edits_not_json_is_wrapped_and_fails_on_the_item() {
        assert_eq!(
            failure(
                "edit",
                &edit_schema(),
                json!({"path":"f.txt","edits":"not json"})
            ),
            "Validation failed for tool \"edit\":\n  - edits.0: must be object\n\nReceived arguments:\n{\n  \"path\": \"f.txt\",\n  \"edits\": \"not json\"\n}"
        );
    }

    #[test]
    fn c076_edit_missing_path() {
        assert_eq!(
            failure(
                "edit",
                &edit_schema(),
                json!({"edits":[{"oldText":"a","newText":"b"}]})
            ),
            "Validation failed for tool \"edit\":\n  - path: must have required properties path\n\nReceived arguments:\n{\n  \"edits\": [\n    {\n      \"oldText\": \"a\",\n      \"newText\": \"b\"\n    }\n  ]\n}"
        );
    }

    #[test]
    fn c121_grep_missing_pattern() {
        let grep = json!({"type":"object","required":["pattern"],"properties":{
            "pattern":{"type":"string"},"path":{"type":"string"},"limit":{"type":"number"}}});
        assert_eq!(
            failure("grep", &grep, json!({})),
            "Validation failed for tool \"grep\":\n  - pattern: must have required properties pattern\n\nReceived arguments:\n{}"
        );
    }

    #[test]
    fn nested_required_path_names_the_missing_property() {
        assert_eq!(
            issues(
                &edit_schema(),
                json!({"path":"f","edits":[{"oldText":"a","newText":"b"},{"oldText":"a"}]})
            ),
            ["edits.1.newText: must have required properties newText"]
        );
        // Pi: every missing name in one message, the first one on the path.
        assert_eq!(
            issues(&edit_schema(), json!({"path":"f","edits":[{}]})),
            ["edits.0.oldText: must have required properties oldText, newText"]
        );
    }

    #[test]
    fn c169_boolean_from_any_case_true() {
        let schema = one("b", json!({"type":"boolean"}), true);
        assert_eq!(ok(&schema, json!({"b":"TRUE"})), json!({"b":true}));
        assert_eq!(ok(&schema, json!({"b":"False"})), json!({"b":false}));
    }

    #[test]
    fn c172_null_for_a_string_is_an_error_not_text() {
        // §7.3: Pi turns this into "null" (TypeBox) or "" (plain JSON schema).
        let schema = one("s", json!({"type":"string"}), true);
        assert_eq!(
            failure("t", &schema, json!({"s":null})),
            "Validation failed for tool \"t\":\n  - s: must be string\n\nReceived arguments:\n{\n  \"s\": null\n}"
        );
        // Also under length/pattern/format keywords: the type error alone.
        let schema = one(
            "s",
            json!({"type":"string","maxLength":3,"format":"email"}),
            true,
        );
        assert_eq!(issues(&schema, json!({"s":null})), ["s: must be string"]);
    }

    #[test]
    fn c175_json_encoded_array_is_parsed() {
        // §7.3: Pi wraps it, `["[\"x\",\"y\"]"]`.
        let schema = one("a", json!({"type":"array","items":{"type":"string"}}), true);
        assert_eq!(
            ok(&schema, json!({"a":"[\"x\",\"y\"]"})),
            json!({"a":["x","y"]})
        );
        // The parsed items are converted like any others.
        assert_eq!(
            ok(&schema, json!({"a":"[1,true]"})),
            json!({"a":["1","true"]})
        );
    }

    #[test]
    fn a_string_that_is_not_a_json_array_is_wrapped() {
        let schema = one("a", json!({"type":"array","items":{"type":"string"}}), true);
        assert_eq!(ok(&schema, json!({"a":"one"})), json!({"a":["one"]}));
        // JSON, but not an array: wrapped as Pi does.
        assert_eq!(
            ok(&schema, json!({"a":"{\"k\":1}"})),
            json!({"a":["{\"k\":1}"]})
        );
        assert_eq!(ok(&schema, json!({"a":5})), json!({"a":["5"]}));
        let numbers = one("a", json!({"type":"array","items":{"type":"number"}}), true);
        assert_eq!(issues(&numbers, json!({"a":"x"})), ["a.0: must be number"]);
    }

    #[test]
    fn json_encoded_items_are_parsed_into_objects() {
        let args = ok(
            &edit_schema(),
            json!({"path":"f","edits":["{\"oldText\":\"a\",\"newText\":\"b\"}"]}),
        );
        assert_eq!(args["edits"], json!([{"oldText":"a","newText":"b"}]));
        let args = ok(
            &edit_schema(),
            json!({"path":"f","edits":"[{\"oldText\":\"a\",\"newText\":1}]"}),
        );
        assert_eq!(args["edits"], json!([{"oldText":"a","newText":"1"}]));
    }

    #[test]
    fn c181_number_from_boolean() {
        let schema = one("n", json!({"type":"number"}), true);
        assert_eq!(ok(&schema, json!({"n":true})), json!({"n":1}));
        assert_eq!(ok(&schema, json!({"n":false})), json!({"n":0}));
    }

    #[test]
    fn c184_failing_literal_union_lists_each_member() {
        let schema = one(
            "m",
            json!({"anyOf":[{"type":"string","const":"a"},{"type":"string","const":"b"}]}),
            true,
        );
        assert_eq!(
            failure("t", &schema, json!({"m":"c"})),
            "Validation failed for tool \"t\":\n  - m: must be equal to constant\n  - m: must be equal to constant\n  - m: must match a schema in anyOf\n\nReceived arguments:\n{\n  \"m\": \"c\"\n}"
        );
    }

    // ---- the TypeBox Convert table ---------------------------------------------------------

    #[test]
    fn integer_truncates_after_number_conversion() {
        let schema = one("n", json!({"type":"integer"}), true);
        assert_eq!(ok(&schema, json!({"n":"42.7"})), json!({"n":42}));
        assert_eq!(ok(&schema, json!({"n":"-42.7"})), json!({"n":-42}));
        assert_eq!(ok(&schema, json!({"n":"1e3"})), json!({"n":1000}));
        assert_eq!(ok(&schema, json!({"n":"-0"})), json!({"n":0}));
        assert_eq!(ok(&schema, json!({"n":"0x10"})), json!({"n":16}));
        // A fractional number given as a number is truncated too (TypeBox, Pi).
        assert_eq!(ok(&schema, json!({"n":2.9})), json!({"n":2}));
        assert_eq!(issues(&schema, json!({"n":"x"})), ["n: must be integer"]);
    }

    #[test]
    fn number_conversions_follow_javascript_number() {
        let schema = one("n", json!({"type":"number"}), true);
        for (given, expected) in [
            (json!(""), json!(0)),
            (json!("   "), json!(0)),
            (json!("0x10"), json!(16)),
            (json!("0o17"), json!(15)),
            (json!("0b101"), json!(5)),
            (json!("1e3"), json!(1000)),
            (json!(".5"), json!(0.5)),
            (json!("5."), json!(5)),
            (json!("\u{a0}5\u{feff}"), json!(5)),
            (json!("TRUE"), json!(1)),
            (json!("false"), json!(0)),
            (json!("12n"), json!(12)),
            (json!("-12n"), json!(-12)),
            (json!(null), json!(0)),
        ] {
            assert_eq!(
                ok(&schema, json!({ "n": given.clone() })),
                json!({ "n": expected }),
                "{given}"
            );
        }
        for given in [
            "12abc",
            "Infinity",
            "-Infinity",
            "inf",
            "nan",
            "NaN",
            "1_000",
            "-0x10",
            "0x",
            "\u{85}5",
            "9007199254740993n",
            "1.5n",
        ] {
            assert_eq!(
                issues(&schema, json!({ "n": given })),
                ["n: must be number"],
                "{given:?}"
            );
        }
    }

    #[test]
    fn required_null_number_becomes_zero() {
        // Only strings are exempt from null conversion (§7.3); Pi gives 0 here too.
        let schema = one("n", json!({"type":"number"}), true);
        assert_eq!(ok(&schema, json!({"n":null})), json!({"n":0}));
    }

    #[test]
    fn boolean_conversions() {
        let schema = one("b", json!({"type":"boolean"}), true);
        for (given, expected) in [
            (json!("1"), true),
            (json!("0"), false),
            (json!(1), true),
            (json!(0), false),
            (json!("true"), true),
            (json!("FALSE"), false),
            (json!(null), false),
        ] {
            assert_eq!(
                ok(&schema, json!({ "b": given.clone() })),
                json!({ "b": expected }),
                "{given}"
            );
        }
        for given in [json!(2), json!("yes"), json!(" true"), json!([])] {
            assert_eq!(
                issues(&schema, json!({ "b": given.clone() })),
                ["b: must be boolean"],
                "{given}"
            );
        }
    }

    #[test]
    fn string_conversions_use_javascript_formatting() {
        let schema = one("s", json!({"type":"string"}), true);
        for (given, expected) in [
            (json!(false), "false"),
            (json!(true), "true"),
            (json!(5), "5"),
            (json!(5.0), "5"),
            (json!(-0.0), "0"),
            (json!(0.1), "0.1"),
            (json!(1e21), "1e+21"),
            (json!(1e-7), "1e-7"),
            (json!(123456789012345680000.0), "123456789012345680000"),
            (json!(-1.5e-10), "-1.5e-10"),
        ] {
            assert_eq!(
                ok(&schema, json!({ "s": given.clone() })),
                json!({ "s": expected }),
                "{given}"
            );
        }
        assert_eq!(issues(&schema, json!({"s":[1]})), ["s: must be string"]);
        assert_eq!(issues(&schema, json!({"s":{}})), ["s: must be string"]);
    }

    #[test]
    fn null_conversions() {
        let schema = one("z", json!({"type":"null"}), true);
        for given in [
            json!(""),
            json!("0"),
            json!("null"),
            json!("NULL"),
            json!("Undefined"),
            json!(0),
            json!(false),
        ] {
            assert_eq!(
                ok(&schema, json!({ "z": given.clone() })),
                json!({ "z": null }),
                "{given}"
            );
        }
        assert_eq!(issues(&schema, json!({"z":"x"})), ["z: must be null"]);
    }

    #[test]
    fn object_from_json_string_only_when_it_is_an_object() {
        let schema = one(
            "o",
            json!({"type":"object","properties":{"k":{"type":"integer"}}}),
            true,
        );
        // §7.3: parsed, then its properties converted.
        assert_eq!(
            ok(&schema, json!({"o":"{\"k\":\"3\"}"})),
            json!({"o":{"k":3}})
        );
        // Pi's behaviour otherwise: left alone, so it fails.
        for given in ["[1]", "not json", "5", ""] {
            assert_eq!(
                issues(&schema, json!({ "o": given })),
                ["o: must be object"],
                "{given:?}"
            );
        }
        assert_eq!(issues(&schema, json!({"o":7})), ["o: must be object"]);
    }

    #[test]
    fn nested_objects_convert_in_place() {
        let schema = json!({"type":"object","properties":{"o":{"type":"object","properties":{
            "n":{"type":"integer"},"b":{"type":"boolean"},"s":{"type":"string"}}}}});
        assert_eq!(
            ok(
                &schema,
                json!({"o":{"n":"7.9","b":"false","s":12.5,"x":"keep"}})
            ),
            json!({"o":{"n":7,"b":false,"s":"12.5","x":"keep"}})
        );
    }

    #[test]
    fn additional_properties_schema_converts_the_other_keys() {
        let schema = json!({"type":"object","properties":{"a":{"type":"string"}},
            "additionalProperties":{"type":"integer"}});
        assert_eq!(
            ok(&schema, json!({"a":1,"b":"2.5","c":"7"})),
            json!({"a":"1","b":2,"c":7})
        );
    }

    #[test]
    fn unions_keep_valid_values_and_take_the_first_working_conversion() {
        let number_or_string = one(
            "p",
            json!({"anyOf":[{"type":"number"},{"type":"string"}]}),
            true,
        );
        assert_eq!(ok(&number_or_string, json!({"p":"5"})), json!({"p":"5"}));
        let boolean_or_number = one(
            "p",
            json!({"anyOf":[{"type":"boolean"},{"type":"number"}]}),
            true,
        );
        assert_eq!(ok(&boolean_or_number, json!({"p":"1"})), json!({"p":true}));
        assert_eq!(ok(&boolean_or_number, json!({"p":"5"})), json!({"p":5}));
        let number_or_null = one(
            "p",
            json!({"anyOf":[{"type":"number"},{"type":"null"}]}),
            true,
        );
        assert_eq!(ok(&number_or_null, json!({"p":"null"})), json!({"p":null}));
        assert_eq!(ok(&number_or_null, json!({"p":""})), json!({"p":0}));
        assert_eq!(
            issues(&number_or_null, json!({"p":"x"})),
            [
                "p: must be number",
                "p: must be null",
                "p: must match a schema in anyOf"
            ]
        );
        // A list of types reads as a union of them.
        let types = one("p", json!({"type":["integer","boolean"]}), true);
        assert_eq!(ok(&types, json!({"p":"true"})), json!({"p":1}));
        assert_eq!(ok(&types, json!({"p":false})), json!({"p":false}));
    }

    #[test]
    fn null_in_a_string_or_number_union_never_becomes_text() {
        // §7.3: the string member cannot take null, the number member's rule (null → 0) can.
        let schema = one(
            "p",
            json!({"anyOf":[{"type":"string"},{"type":"number"}]}),
            true,
        );
        assert_eq!(ok(&schema, json!({"p":null})), json!({"p":0}));
        let strings_only = one(
            "p",
            json!({"anyOf":[{"type":"string"},{"type":"string","minLength":9}]}),
            true,
        );
        assert_eq!(
            issues(&strings_only, json!({"p":null})),
            [
                "p: must be string",
                "p: must be string",
                "p: must match a schema in anyOf"
            ]
        );
    }

    #[test]
    fn union_of_objects_reports_each_member() {
        let schema = one(
            "p",
            json!({"anyOf":[
                {"type":"object","required":["a"],"properties":{"a":{"type":"string"}}},
                {"type":"object","required":["b"],"properties":{"b":{"type":"number"}}}]}),
            true,
        );
        assert_eq!(ok(&schema, json!({"p":{"b":"2"}})), json!({"p":{"b":2}}));
        assert_eq!(
            issues(&schema, json!({"p":{"c":1}})),
            [
                "p.a: must have required properties a",
                "p.b: must have required properties b",
                "p: must match a schema in anyOf"
            ]
        );
        // anyOf [object, null] given JSON text: the object member parses it (§7.3).
        let nullable = one(
            "p",
            json!({"anyOf":[{"type":"object","properties":{"k":{"type":"number"}}},{"type":"null"}]}),
            true,
        );
        assert_eq!(
            ok(&nullable, json!({"p":"{\"k\":\"1\"}"})),
            json!({"p":{"k":1}})
        );
    }

    #[test]
    fn literals_and_enums_convert_only_to_an_allowed_value() {
        let literals = one(
            "p",
            json!({"anyOf":[{"type":"number","const":1},{"type":"number","const":2}]}),
            true,
        );
        assert_eq!(ok(&literals, json!({"p":"2"})), json!({"p":2}));
        // Pi: each member's type and const issues, then the anyOf line.
        assert_eq!(
            issues(&literals, json!({"p":"3"})),
            [
                "p: must be number",
                "p: must be equal to constant",
                "p: must be number",
                "p: must be equal to constant",
                "p: must match a schema in anyOf"
            ]
        );
        let enumeration = one("p", json!({"enum":[1,2,3]}), true);
        assert_eq!(ok(&enumeration, json!({"p":"2"})), json!({"p":2}));
        let strings = one("p", json!({"type":"string","enum":["x","5"]}), true);
        assert_eq!(ok(&strings, json!({"p":5})), json!({"p":"5"}));
        assert_eq!(
            issues(&strings, json!({"p":"y"})),
            ["p: must be equal to one of the allowed values"]
        );
        let boolean = one("p", json!({"const":true}), true);
        assert_eq!(ok(&boolean, json!({"p":"TRUE"})), json!({"p":true}));
        assert_eq!(
            issues(&boolean, json!({"p":"no"})),
            ["p: must be equal to constant"]
        );
    }

    #[test]
    fn tuples_convert_by_position_without_wrapping() {
        let schema = json!({"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
            "required":["p"],"properties":{"p":{"type":"array",
            "items":[{"type":"number"},{"type":"boolean"}],"additionalItems":false,"minItems":2}}});
        assert_eq!(
            ok(&schema, json!({"p":["1","true"]})),
            json!({"p":[1,true]})
        );
        assert_eq!(
            ok(&schema, json!({"p":"[\"1\",0]"})),
            json!({"p":[1,false]})
        );
        assert_eq!(issues(&schema, json!({"p":"x"})), ["p: must be array"]);
        assert_eq!(
            issues(&schema, json!({"p":["a"]})),
            ["p.0: must be number", "p: must not have fewer than 2 items"]
        );
    }

    #[test]
    fn optional_null_removal_respects_required_nullable_and_ref() {
        let schema = json!({"type":"object","$defs":{"n":{"type":"number"}},"required":["r"],
            "properties":{"r":{"type":"number"},"n":{"type":["string","null"]},
            "ref":{"$ref":"#/$defs/n"},"o":{"type":"object","properties":{"x":{"type":"number"}}}}});
        let compiled = compile(&schema);
        // Required: kept (and then converted to 0 as a number); nullable: kept; `$ref`: kept
        // (and fails); nested optional: removed.
        assert_eq!(
            compiled
                .coerce_and_validate(&json!({"r":null,"n":null,"o":{"x":null}}))
                .unwrap(),
            json!({"r":0,"n":null,"o":{}})
        );
        assert_eq!(
            compiled
                .coerce_and_validate(&json!({"r":1,"ref":null}))
                .unwrap_err()
                .iter()
                .map(Issue::to_string)
                .collect::<Vec<_>>(),
            ["ref: must be number"]
        );
    }

    #[test]
    fn the_input_is_not_modified() {
        let args = json!({"path":123,"limit":null});
        let before = args.clone();
        compile(&read_schema()).coerce_and_validate(&args).unwrap();
        assert_eq!(args, before);
    }

    #[test]
    fn exact_integers_are_not_reencoded() {
        let schema = one("n", json!({"type":"integer"}), true);
        assert_eq!(
            ok(&schema, json!({"n":u64::MAX}))["n"].as_u64(),
            Some(u64::MAX)
        );
        let number = one("n", json!({"type":"number"}), true);
        assert_eq!(
            ok(&number, json!({"n":i64::MIN}))["n"].as_i64(),
            Some(i64::MIN)
        );
    }

    #[test]
    fn top_level_non_objects_fail_at_root() {
        for args in [json!(null), json!("{\"path\":\"a\"}"), json!([1]), json!(5)] {
            assert_eq!(
                issues(&read_schema(), args.clone()),
                ["root: must be object"],
                "{args}"
            );
        }
    }

    // ---- validation messages and order -----------------------------------------------------

    #[test]
    fn required_comes_first_then_properties_in_schema_order() {
        let schema = json!({"type":"object","required":["a","b","c"],"properties":{
            "a":{"type":"string"},"b":{"type":"string"},"c":{"type":"number"}}});
        assert_eq!(
            issues(&schema, json!({"c":"x","b":[]})),
            [
                "a: must have required properties a",
                "b: must be string",
                "c: must be number"
            ]
        );
    }

    #[test]
    fn at_most_eight_issues() {
        let properties: Map<String, Value> = "abcdefghij"
            .chars()
            .map(|c| (c.to_string(), json!({"type":"number"})))
            .collect();
        let schema = json!({"type":"object","properties":properties});
        let args: Map<String, Value> = "abcdefghij"
            .chars()
            .map(|c| (c.to_string(), json!("x")))
            .collect();
        let found = issues(&schema, Value::Object(args));
        assert_eq!(found.len(), 8);
        assert_eq!(found[7], "h: must be number");
    }

    #[test]
    fn additional_properties_false_reports_once_at_the_object() {
        let schema = json!({"type":"object","properties":{"a":{"type":"string"}},
            "additionalProperties":false});
        assert_eq!(
            issues(&schema, json!({"a":5.5,"z":1,"2":3})),
            ["root: must not have additional properties"]
        );
        let nested = one("o", schema, true);
        assert_eq!(
            issues(&nested, json!({"o":{"a":"x","z":1}})),
            ["o: must not have additional properties"]
        );
    }

    #[test]
    fn string_keywords_count_typebox_graphemes() {
        let schema = one(
            "s",
            json!({"type":"string","minLength":2,"maxLength":3}),
            true,
        );
        // Combining accents and flag pairs count once (jsonschema alone would say 4).
        assert_eq!(
            ok(&schema, json!({"s":"e\u{301}e\u{301}"}))["s"],
            "e\u{301}e\u{301}"
        );
        assert_eq!(ok(&schema, json!({"s":"🇩🇪🇫🇷"}))["s"], "🇩🇪🇫🇷");
        assert_eq!(ok(&schema, json!({"s":"👨‍👩‍👧x"}))["s"], "👨‍👩‍👧x");
        assert_eq!(
            issues(&schema, json!({"s":"abcd"})),
            ["s: must not have more than 3 characters"]
        );
        assert_eq!(
            issues(&schema, json!({"s":"a"})),
            ["s: must not have fewer than 2 characters"]
        );
    }

    #[test]
    fn pattern_and_format_messages() {
        let schema = json!({"type":"object","properties":{
            "p":{"type":"string","pattern":"^[a-z]+$"},
            "e":{"type":"string","format":"email"},
            "d":{"type":"string","format":"date"},
            "u":{"type":"string","format":"uint64"}}});
        assert_eq!(
            issues(
                &schema,
                json!({"p":"ABC","e":"nope","d":"2021-02-29","u":"x"})
            ),
            [
                "p: must match pattern \"^[a-z]+$\"",
                "e: must match format \"email\"",
                "d: must match format \"date\""
            ]
        );
        assert!(
            compile(&schema)
                .coerce_and_validate(&json!({"p":"abc","e":"a@b.co","d":"2020-02-29"}))
                .is_ok()
        );
    }

    #[test]
    fn number_keyword_messages_use_javascript_numbers() {
        let schema = one(
            "n",
            json!({"type":"number","minimum":1.5,"exclusiveMaximum":1e21,"multipleOf":0.5}),
            true,
        );
        assert_eq!(issues(&schema, json!({"n":1})), ["n: must be >= 1.5"]);
        assert_eq!(issues(&schema, json!({"n":2e21})), ["n: must be < 1e+21"]);
        assert_eq!(
            issues(&schema, json!({"n":1.75})),
            ["n: must be multiple of 0.5"]
        );
        // TypeBox's tolerance: 0.3 is a multiple of 0.1 (IEEE remainder notwithstanding).
        let tenths = one("n", json!({"type":"number","multipleOf":0.1}), true);
        assert_eq!(ok(&tenths, json!({"n":0.3})), json!({"n":0.3}));
    }

    #[test]
    fn array_keyword_messages() {
        let schema = one(
            "a",
            json!({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3,"uniqueItems":true}),
            true,
        );
        assert_eq!(
            issues(&schema, json!({"a":[1,1.0]})),
            ["a: must not have duplicate items"]
        );
        assert_eq!(
            issues(&schema, json!({"a":[1,2,3,4]})),
            ["a: must not have more than 3 items"]
        );
        // 1.5 is truncated to an integer first; "x" cannot be.
        assert_eq!(
            issues(&schema, json!({"a":[1.5]})),
            ["a: must not have fewer than 2 items"]
        );
        assert_eq!(
            issues(&schema, json!({"a":["x"]})),
            [
                "a.0: must be integer",
                "a: must not have fewer than 2 items"
            ]
        );
    }

    #[test]
    fn combinator_messages() {
        let schema = json!({"type":"object","properties":{
            "one":{"oneOf":[{"type":"number"},{"type":"integer"}]},
            "none":{"oneOf":[{"type":"string"},{"type":"number"}]},
            "not":{"not":{"type":"string"}},
            "all":{"allOf":[{"type":"string","minLength":3},{"pattern":"^a"}]},
            "cond":{"if":{"type":"string"},"then":{"minLength":3},"else":{"minimum":5}},
            "never":false}});
        assert_eq!(
            issues(
                &schema,
                json!({"one":2,"none":[],"not":"x","all":"bb","cond":2,"never":1})
            ),
            [
                "one: must match exactly one schema in oneOf",
                "none: must be string",
                "none: must be number",
                "none: must match exactly one schema in oneOf",
                "not: must not be valid",
                "all: must not have fewer than 3 characters",
                "all: must match pattern \"^a\"",
                "cond: must be >= 5",
            ]
        );
        assert_eq!(
            issues(&schema, json!({"cond":"ab","never":0})),
            ["cond: must match \"then\" schema", "never: schema is false"]
        );
    }

    #[test]
    fn references_resolve_locally() {
        let schema = json!({"type":"object","$defs":{"pos":{"type":"integer","minimum":1}},
            "properties":{"p":{"$ref":"#/$defs/pos"},"child":{"$ref":"#"}}});
        assert_eq!(
            issues(&schema, json!({"p":0,"child":{"p":0.5}})),
            [
                "p: must be >= 1",
                "child.p: must be integer",
                "child.p: must be >= 1"
            ]
        );
    }

    #[test]
    fn references_may_be_percent_encoded() {
        let schema = json!({"type":"object","$defs":{"a b":{"type":"number"}},
            "properties":{"p":{"$ref":"#/$defs/a%20b"}}});
        assert_eq!(issues(&schema, json!({"p":"x"})), ["p: must be number"]);
        assert_eq!(percent_decode("/a%2Fb%c3%a9"), Some("/a/bé".to_owned()));
        assert_eq!(percent_decode("/%+1"), None);
        assert_eq!(percent_decode("/%4"), None);
    }

    #[test]
    fn paths_are_raw_keys_joined_with_dots() {
        let schema = json!({"type":"object","required":["a/b"],"properties":{
            "a/b":{"type":"number"},"":{"type":"number"},"x":{"type":"array","items":{"type":"string"}}}});
        assert_eq!(
            issues(&schema, json!({})),
            ["a/b: must have required properties a/b"]
        );
        assert_eq!(
            issues(&schema, json!({"a/b":"q","":"z","x":[1,[]]})),
            [
                "a.b: must be number",
                "root: must be number",
                "x.1: must be string"
            ]
        );
        // An empty required name is falsy in JS: the plain path is used.
        let empty = json!({"type":"object","required":[""],"properties":{"":{"type":"number"}}});
        assert_eq!(
            issues(&empty, json!({})),
            ["root: must have required properties "]
        );
    }

    #[test]
    fn unimplemented_keywords_fall_back_to_jsonschema() {
        let schema = json!({"type":"object","properties":{"a":{"type":"number"}},
            "unevaluatedProperties":false});
        let compiled = compile(&schema);
        assert!(compiled.coerce_and_validate(&json!({"a":1})).is_ok());
        let found = compiled
            .coerce_and_validate(&json!({"a":1,"b":2}))
            .unwrap_err();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "root");
        assert!(found[0].message.contains("'b'"), "{}", found[0].message);
    }

    #[test]
    fn validate_alone_does_not_coerce() {
        let compiled = compile(&read_schema());
        assert!(compiled.validate(&json!({"path":"a","offset":5})).is_ok());
        assert_eq!(
            compiled.validate(&json!({"path":1})).unwrap_err(),
            [Issue {
                path: "path".into(),
                message: "must be string".into()
            }]
        );
    }

    // ---- compile -------------------------------------------------------------------------

    #[test]
    fn compile_rejects_invalid_and_non_object_schemas() {
        let invalid =
            ArgumentSchema::compile(&json!({"type":"object","properties":{"a":{"type":"strin"}}}))
                .unwrap_err();
        assert!(invalid.contains("not a valid JSON Schema"), "{invalid}");
        assert!(invalid.contains("/properties/a/type"), "{invalid}");
        for schema in [
            json!({"type":"string"}),
            json!({}),
            json!(true),
            json!({"type":["object"]}),
        ] {
            let error = ArgumentSchema::compile(&schema).unwrap_err();
            assert!(error.contains("object schema"), "{schema}: {error}");
        }
        // A list for `items` is draft-07 only.
        assert!(
            ArgumentSchema::compile(
                &json!({"type":"object","properties":{"t":{"type":"array","items":[{}]}}})
            )
            .is_err()
        );
        assert!(
            ArgumentSchema::compile(
                &json!({"$schema":"https://example.com/unknown","type":"object"})
            )
            .is_err()
        );
    }

    #[test]
    fn compile_accepts_schemars_style_schemas() {
        let schema = json!({"$schema":"https://json-schema.org/draft/2020-12/schema",
            "title":"Args","type":"object","required":["n"],"properties":{
            "n":{"type":"integer","format":"uint64","minimum":0},
            "mode":{"anyOf":[{"$ref":"#/$defs/Mode"},{"type":"null"}]}},
            "$defs":{"Mode":{"type":"string","enum":["fast","slow"]}}});
        let compiled = compile(&schema);
        assert_eq!(compiled.schema(), &schema);
        assert_eq!(
            compiled
                .coerce_and_validate(&json!({"n":"3","mode":"fast"}))
                .unwrap(),
            json!({"n":3,"mode":"fast"})
        );
        assert_eq!(
            compiled
                .coerce_and_validate(&json!({"n":-1,"mode":"x"}))
                .unwrap_err()
                .iter()
                .map(Issue::to_string)
                .collect::<Vec<_>>(),
            [
                "n: must be >= 0",
                "mode: must be equal to one of the allowed values",
                "mode: must be null",
                "mode: must match a schema in anyOf"
            ]
        );
    }

    #[test]
    fn compiled_schemas_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ArgumentSchema>();
    }

    // ---- JavaScript helpers ----------------------------------------------------------------

    #[test]
    fn javascript_number_parsing() {
        let cases: &[(&str, f64)] = &[
            ("", 0.0),
            (" \t\n", 0.0),
            ("42", 42.0),
            ("+5", 5.0),
            ("-5", -5.0),
            ("1e3", 1000.0),
            ("1E-3", 0.001),
            (".5", 0.5),
            ("5.", 5.0),
            ("0X1F", 31.0),
            ("0o17", 15.0),
            ("0b101", 5.0),
            ("Infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("1e400", f64::INFINITY),
            ("\u{2028}7\u{3000}", 7.0),
            // 2^53 + 1 rounds to even, 2^53 + 3 rounds up.
            ("0x20000000000001", 9007199254740992.0),
            ("0x20000000000003", 9007199254740996.0),
        ];
        for (text, expected) in cases {
            assert_eq!(js_string_to_number(text), *expected, "{text:?}");
        }
        assert!(js_string_to_number("-0").is_sign_negative());
        for text in [
            "12abc", "inf", "infinity", "nan", "1_0", "-0x1", "0x", "0xg", "e5", "1e", ".", "+",
            "\u{85}1", "0b2",
        ] {
            assert!(js_string_to_number(text).is_nan(), "{text:?}");
        }
    }

    #[test]
    fn javascript_number_formatting() {
        for (number, expected) in [
            (5.0, "5"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-1.5, "-1.5"),
        ] {
            assert_eq!(js_number_string(number), expected);
        }
    }

    #[test]
    fn stringify_nested_and_empty_containers() {
        let value = json!({"a":{},"b":[],"c":[1,{"d":null,"e":[true,false]}],"f":{"g":[[]]}});
        assert_eq!(
            js_stringify_pretty(&value),
            "{\n  \"a\": {},\n  \"b\": [],\n  \"c\": [\n    1,\n    {\n      \"d\": null,\n      \"e\": [\n        true,\n        false\n      ]\n    }\n  ],\n  \"f\": {\n    \"g\": [\n      []\n    ]\n  }\n}"
        );
        assert_eq!(js_stringify_pretty(&json!({})), "{}");
        assert_eq!(js_stringify_pretty(&json!([])), "[]");
        assert_eq!(js_stringify_pretty(&json!("x")), "\"x\"");
        assert_eq!(js_stringify_pretty(&json!(null)), "null");
    }

    #[test]
    fn stringify_numbers_like_javascript() {
        assert_eq!(
            js_stringify_pretty(&json!([5.0, -0.0, 1e21, 1e-7, 0.5, 123, u64::MAX])),
            "[\n  5,\n  0,\n  1e+21,\n  1e-7,\n  0.5,\n  123,\n  18446744073709552000\n]"
        );
    }

    #[test]
    fn stringify_escapes_like_javascript() {
        assert_eq!(
            js_stringify_pretty(&json!(
                "q\"b\\s/\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}é😀\u{2028}"
            )),
            "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}é😀\u{2028}\""
        );
        assert_eq!(
            js_stringify_pretty(&json!({"k\n\u{1b}":1})),
            "{\n  \"k\\n\\u001b\": 1\n}"
        );
    }

    #[test]
    fn stringify_puts_array_index_keys_first() {
        let value: Value = serde_json::from_str(
            r#"{"b":1,"10":2,"a":3,"2":4,"01":5,"4294967295":6,"4294967294":7}"#,
        )
        .unwrap();
        assert_eq!(
            js_stringify_pretty(&value),
            "{\n  \"2\": 4,\n  \"10\": 2,\n  \"4294967294\": 7,\n  \"b\": 1,\n  \"a\": 3,\n  \"01\": 5,\n  \"4294967295\": 6\n}"
        );
    }

    #[test]
    fn failure_text_without_issues_says_unknown() {
        assert_eq!(
            failure_text("t", &[], &json!({"a":1})),
            "Validation failed for tool \"t\":\nUnknown validation error\n\nReceived arguments:\n{\n  \"a\": 1\n}"
        );
    }

    #[test]
    fn schemas_whose_references_explode_are_refused_within_the_walk_budget() {
        // Two references back to the root at every level: 2^depth work without the budget.
        let doubling = json!({"type":"object","anyOf":[{"$ref":"#"},{"$ref":"#"}]});
        assert_eq!(
            issues(&doubling, json!({"a": 1})),
            [format!("root: {SCHEMA_TOO_COMPLEX}")]
        );
        // Exponential through the value too: each level tries both members on a deep array.
        let branching = json!({"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},
            "$defs":{"x":{"anyOf":[
                {"type":"array","items":{"$ref":"#/$defs/x"}},
                {"type":"array","items":{"$ref":"#/$defs/x"}}]}}});
        let mut deep = json!("leaf");
        for _ in 0..60 {
            deep = json!([deep]);
        }
        assert_eq!(
            issues(&branching, json!({ "a": deep })),
            [format!("root: {SCHEMA_TOO_COMPLEX}")]
        );
        // The budget is per call: honest recursive schemas still validate afterwards.
        let tree =
            json!({"type":"object","properties":{"child":{"$ref":"#"},"n":{"type":"number"}}});
        ok(&tree, json!({"child": {"child": {"n": 1}}}));
        assert_eq!(
            issues(&tree, json!({"child": {"n": "x"}})),
            ["child.n: must be number"]
        );
    }

    #[test]
    fn grapheme_count_follows_typebox() {
        assert_eq!(grapheme_count(""), 0);
        assert_eq!(grapheme_count("abc"), 3);
        assert_eq!(grapheme_count("e\u{301}"), 1);
        assert_eq!(grapheme_count("👍🏽"), 2); // skin tones are not modifiers in TypeBox
        assert_eq!(grapheme_count("👨‍👩‍👧"), 1);
        assert_eq!(grapheme_count("🇩🇪🇫🇷🇮"), 3);
        assert_eq!(grapheme_count("a\u{200d}"), 2); // a trailing ZWJ joins nothing
        assert_eq!(grapheme_count("x\u{fe0f}"), 1);
    }
}

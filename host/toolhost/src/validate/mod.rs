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
//! 4. **Validation** with one error walk in the dialect of the caller's Pi profile
//!    ([`dialect`]): for Pi 0.85 TypeBox's (en_US messages in TypeBox order, at most eight of
//!    them, TypeBox's `maxErrors`), for Pi 1.5+ pi-schema's (its messages and its choice of
//!    errors: one per missing property, the best branch of a union, every error listed). The walk
//!    reports what failed as data ([`messages::Failure`]); the dialect's switches decide which
//!    failures are reported where, and its table of templates words them. Keywords the walk
//!    does not implement are covered by a compiled `jsonschema` validator used as a backstop.
//!
//! Coercion (steps 1-3) is the same for every profile: Pi 1.6's own coercion gives the same
//! results on the schemas we care about.
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
//! "Received arguments" block (`text::js_stringify_pretty`).

use serde_json::{Map, Value};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use crate::profile::PiProfile;

mod coerce;
mod convert;
mod dialect;
mod js;
mod messages;
mod nulls;
mod output;
mod schema;
#[cfg(test)]
mod tests;
mod text;
mod walk;

use convert::*;
use dialect::*;
use js::*;
use messages::*;
use schema::*;

pub use output::OutputSchema;
pub use text::failure_text;

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

/// The issue of a call whose validation ran out of its walk steps.
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

/// An issue as the walk produces it: the instance path in the dialect's form
/// ([`Dialect::child`]) and what failed there.
struct RawIssue {
    instance_path: String,
    failure: Failure,
}

impl RawIssue {
    fn new(instance_path: &str, failure: Failure) -> RawIssue {
        RawIssue {
            instance_path: instance_path.to_owned(),
            failure,
        }
    }

    /// The issue in the words and path form of `dialect`.
    fn into_issue(self, dialect: &Dialect) -> Issue {
        Issue {
            path: dialect.show_path(&self.instance_path, &self.failure),
            message: self.failure.message(dialect.texts),
        }
    }
}

/// Refuse a tool's `what` schema (`parameter`, `output`) that is not a valid JSON Schema
/// (meta-schema check via jsonschema), or not an object schema (`"type":"object"` at the top
/// level), naming where and why.
pub(crate) fn check_object_schema(what: &str, schema: &Value) -> Result<(), String> {
    if let Err(error) = jsonschema::meta::validate(schema) {
        let at = instance_path(&error);
        return Err(format!(
            "{what} schema is not a valid JSON Schema (at {at}): {error}"
        ));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!(
            "{what} schema must be an object schema (\"type\": \"object\" at the top level)"
        ));
    }
    Ok(())
}

/// Where in its instance a jsonschema error is, `/` for the root.
pub(crate) fn instance_path(error: &jsonschema::ValidationError<'_>) -> String {
    let at = error.instance_path().as_str();
    if at.is_empty() { "/" } else { at }.to_string()
}

impl ArgumentSchema {
    /// Errors (a readable message naming the cause) if `schema` is not a valid JSON Schema
    /// (meta-schema check via jsonschema) or is not an object schema (`"type":"object"` at top
    /// level).
    pub fn compile(schema: &Value) -> Result<ArgumentSchema, String> {
        check_object_schema("parameter", schema)?;
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

    #[cfg(test)]
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Spec §2.5 steps 1-4 with the §7.3 changes, as Pi 0.85: returns the coerced deep copy, or
    /// the issues.
    #[cfg(test)]
    pub fn coerce_and_validate(&self, args: &Value) -> Result<Value, Vec<Issue>> {
        self.coerce_and_validate_as(args, PiProfile::V0_85)
    }

    /// Spec §2.5 steps 1-4 with the §7.3 changes: the coerced deep copy, or the issues in the
    /// words of `pi` (its dialect); the coercion is the same for every profile.
    pub fn coerce_and_validate_as(&self, args: &Value, pi: PiProfile) -> Result<Value, Vec<Issue>> {
        within_budget(|| self.coerce_and_validate_unbounded(args, Dialect::of(pi)))
    }

    fn coerce_and_validate_unbounded(
        &self,
        args: &Value,
        dialect: &Dialect,
    ) -> Result<Value, Vec<Issue>> {
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
        self.validate_unbounded(&args, dialect).map(|()| args)
    }

    /// Step 4 alone: checks `value` against the schema, without coercion.
    #[cfg(test)]
    pub fn validate(&self, value: &Value) -> Result<(), Vec<Issue>> {
        self.validate_as(value, PiProfile::V0_85)
    }

    /// Step 4 alone, with the issues `pi` reports.
    #[cfg(test)]
    pub fn validate_as(&self, value: &Value, pi: PiProfile) -> Result<(), Vec<Issue>> {
        within_budget(|| self.validate_unbounded(value, Dialect::of(pi)))
    }

    fn validate_unbounded(&self, value: &Value, dialect: &Dialect) -> Result<(), Vec<Issue>> {
        let mut raw = Vec::new();
        let passed = self.walk(dialect, &self.schema, value, "", 0, &mut raw);
        if passed && raw.is_empty() {
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
                .take(dialect.max_issues.unwrap_or(usize::MAX))
                .map(|error| {
                    let raw_path = error
                        .instance_path()
                        .segments()
                        .fold(String::new(), |path, segment| {
                            dialect.child(&path, &segment.to_string())
                        });
                    Issue {
                        path: dialect.show_path(&raw_path, &Failure::Invalid),
                        message: error.to_string(),
                    }
                })
                .collect();
            return Err(issues);
        }
        if !passed && raw.is_empty() && dialect.invalid_when_unexplained && !budget_spent() {
            raw.push(RawIssue::new("", Failure::Invalid));
        }
        Err(raw
            .into_iter()
            .take(dialect.max_issues.unwrap_or(usize::MAX))
            .map(|issue| issue.into_issue(dialect))
            .collect())
    }

    /// True when `value` passes `schema` (a node of this tool's schema), as the coercion asks
    /// it: with TypeBox's reading of the keywords, whatever the profile.
    fn check(&self, schema: &Value, value: &Value) -> bool {
        self.check_as(&TYPEBOX, schema, value)
    }

    /// True when `value` passes `schema` read the way of `dialect`.
    fn check_as(&self, dialect: &Dialect, schema: &Value, value: &Value) -> bool {
        let mut sink = Vec::new();
        self.walk(dialect, schema, value, "", 0, &mut sink)
    }
}

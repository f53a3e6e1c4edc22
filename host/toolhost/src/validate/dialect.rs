//! The two validation dialects toolhost reproduces, as data: which keywords the one walk visits
//! and in which order, which errors it reports where two validators disagree, how it reads a
//! keyword whose meaning differs, and which table of texts renders the issues.
//!
//! - [`TYPEBOX`]: TypeBox 1.3.7's error walk, as Pi 0.85's `validateToolArguments` ran it.
//! - [`PI_SCHEMA`]: `@earendil-works/pi-schema` 1.6.0's `Explainer` (`dist/explain.js`), as
//!   pi-ai 1.6's `validateToolArguments` runs it (draft 2020-12, every format checked).

use super::walk::is_multiple_of;
use super::*;
use crate::profile::PiProfile;

/// A validation dialect: the switches the walk reads. No dialect has code of its own.
pub(super) struct Dialect {
    /// The table of message templates ([`Failure::message`]).
    pub texts: Texts,
    /// The keyword groups of a schema node, in the order the walk visits them.
    pub node: &'static [NodeStep],
    pub object: &'static [ObjectStep],
    pub array: &'static [ArrayStep],
    pub string: &'static [StringStep],
    pub number: &'static [NumberStep],
    /// A failed `type` ends the node: no other keyword of it reports (pi-schema).
    pub type_ends_node: bool,
    /// Where a missing required property is reported. (Where a key that `additionalProperties`
    /// or `propertyNames` rejects, or a missing dependency, is reported follows from the object
    /// steps: TypeBox's passes of their own report at the object, pi-schema's at the key.)
    pub required: PerKey,
    /// What a failed `anyOf` / `oneOf` reports.
    pub unions: Unions,
    /// A failed `then`/`else` adds a line of its own after its issues (TypeBox).
    pub conditional_summary: bool,
    /// `contains` honours `minContains`/`maxContains` (draft 2020-12 in pi-schema); without
    /// it, schemas using them are left to the backstop.
    pub contains_bounds: bool,
    /// What `minLength`/`maxLength` count.
    pub length: LengthUnit,
    /// How `multipleOf` decides.
    pub multiple_of: MultipleOf,
    /// `uniqueItems` compares numbers by their bits (TypeBox: `0` and `-0` differ) instead of
    /// JavaScript's `===` (pi-schema).
    pub unique_by_bits: bool,
    /// Keys are visited in JavaScript's own-key order (array-index keys first) rather than the
    /// schema's order, for `properties`.
    pub properties_in_js_order: bool,
    /// How an instance path is built and shown.
    pub paths: Paths,
    /// At most this many issues are shown.
    pub max_issues: Option<usize>,
    /// A failed value whose walk explains nothing is reported as `root: invalid` (pi-schema's
    /// `errors()` never returns an empty list); TypeBox leaves the list empty.
    pub invalid_when_unexplained: bool,
}

/// Which template table renders a [`Failure`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Texts {
    TypeBox,
    PiSchema,
}

/// Where a missing required key of an object is reported.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum PerKey {
    /// One issue at the object, naming every such key.
    Summary,
    /// One issue per key, at the key's own path.
    AtKey,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Unions {
    /// Every failing member's issues, then the union's own line (TypeBox). For `oneOf` with
    /// several passing members, only the line.
    MembersThenSummary,
    /// The issues of one branch: the one a tag (a `const` property telling the branches apart)
    /// selects, else the one declaring most of an object's keys, else the one whose first issue
    /// is deepest; the union's own line only when several `oneOf` branches pass (pi-schema).
    BestBranch,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LengthUnit {
    /// TypeBox's simplified graphemes ([`grapheme_count`]).
    Graphemes,
    /// Unicode code points (JSON Schema's definition).
    CodePoints,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum MultipleOf {
    /// TypeBox: a remainder within 1e-10 ([`is_multiple_of`]).
    Tolerance,
    /// pi-schema: exact on the shortest decimal forms ([`is_exact_multiple`]).
    ExactDecimal,
}

/// How instance paths are written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Paths {
    /// TypeBox: keys joined with `/` unescaped; pi-ai 0.85 turns every `/` into `.` and appends
    /// a `required` issue's first missing name.
    TypeBox,
    /// A JSON pointer (`~0`, `~1` escapes); pi-ai 1.6 splits it at `/`, unescapes the segments
    /// and joins them with `.`.
    Pointer,
}

/// A group of keywords of one schema node.
#[derive(Clone, Copy)]
pub(super) enum NodeStep {
    Type,
    /// The keywords of the value's own kind (object, array, string or number).
    Kind,
    Ref,
    Const,
    Enum,
    If,
    Not,
    AllOf,
    AnyOf,
    OneOf,
}

#[derive(Clone, Copy)]
pub(super) enum ObjectStep {
    Required,
    /// `additionalProperties` over every key, reported once at the object and without the
    /// rejected values' own issues (TypeBox).
    Additional,
    /// `dependencies`, alone: a list reports once at the object, naming the whole list
    /// (TypeBox).
    Dependencies,
    /// `dependentRequired`, alone: each missing name reports at the object, naming the whole
    /// list (TypeBox).
    DependentRequired,
    /// `dependentRequired` and `dependencies` merged into one map, `dependencies` winning; each
    /// missing name reports at its own key (pi-schema).
    AllDependencies,
    DependentSchemas,
    PatternProperties,
    Properties,
    /// `propertyNames` over every key, reported once at the object naming the rejected keys
    /// (TypeBox).
    PropertyNames,
    /// Every key of the value in turn: its `patternProperties`, `additionalProperties` and
    /// `propertyNames`, each reported at the key (pi-schema).
    EachKey,
    MinProperties,
    MaxProperties,
}

#[derive(Clone, Copy)]
pub(super) enum ArrayStep {
    /// A tuple's `additionalItems`, up to the first failing item (TypeBox).
    AdditionalItems,
    Contains,
    /// `items` (a tuple's positions, or every item after `prefixItems`).
    Items,
    PrefixItems,
    /// Every item in turn with the schema its position gets: the tuple's (`items` list or
    /// `prefixItems`), else the rest's (`additionalItems` or `items`) (pi-schema).
    Elements,
    MinItems,
    MaxItems,
    UniqueItems,
}

#[derive(Clone, Copy)]
pub(super) enum StringStep {
    MinLength,
    MaxLength,
    Pattern,
    Format,
}

#[derive(Clone, Copy)]
pub(super) enum NumberStep {
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
    MultipleOf,
}

/// TypeBox 1.3.7 (`schema/engine`, `ErrorSchema`), Pi 0.85.
pub(super) const TYPEBOX: Dialect = Dialect {
    texts: Texts::TypeBox,
    node: &[
        NodeStep::Type,
        NodeStep::Kind,
        NodeStep::Ref,
        NodeStep::Const,
        NodeStep::Enum,
        NodeStep::If,
        NodeStep::Not,
        NodeStep::AllOf,
        NodeStep::AnyOf,
        NodeStep::OneOf,
    ],
    object: &[
        ObjectStep::Required,
        ObjectStep::Additional,
        ObjectStep::Dependencies,
        ObjectStep::DependentRequired,
        ObjectStep::PatternProperties,
        ObjectStep::Properties,
        ObjectStep::PropertyNames,
        ObjectStep::MinProperties,
        ObjectStep::MaxProperties,
    ],
    array: &[
        ArrayStep::AdditionalItems,
        ArrayStep::Contains,
        ArrayStep::Items,
        ArrayStep::MaxItems,
        ArrayStep::MinItems,
        ArrayStep::PrefixItems,
        ArrayStep::UniqueItems,
    ],
    string: &[
        StringStep::MaxLength,
        StringStep::MinLength,
        StringStep::Format,
        StringStep::Pattern,
    ],
    number: &[
        NumberStep::ExclusiveMaximum,
        NumberStep::ExclusiveMinimum,
        NumberStep::Maximum,
        NumberStep::Minimum,
        NumberStep::MultipleOf,
    ],
    type_ends_node: false,
    required: PerKey::Summary,
    unions: Unions::MembersThenSummary,
    conditional_summary: true,
    contains_bounds: false,
    length: LengthUnit::Graphemes,
    multiple_of: MultipleOf::Tolerance,
    unique_by_bits: true,
    properties_in_js_order: false,
    paths: Paths::TypeBox,
    max_issues: Some(MAX_ISSUES),
    invalid_when_unexplained: false,
};

/// pi-schema 1.6.0's `Explainer`, Pi 1.5 and later. pi-ai lists every error.
pub(super) const PI_SCHEMA: Dialect = Dialect {
    texts: Texts::PiSchema,
    node: &[
        NodeStep::Type,
        NodeStep::Enum,
        NodeStep::Const,
        NodeStep::Kind,
        NodeStep::AllOf,
        NodeStep::AnyOf,
        NodeStep::OneOf,
        NodeStep::Not,
        NodeStep::If,
        NodeStep::Ref,
    ],
    object: &[
        ObjectStep::Required,
        ObjectStep::Properties,
        ObjectStep::EachKey,
        ObjectStep::MinProperties,
        ObjectStep::MaxProperties,
        ObjectStep::AllDependencies,
        ObjectStep::DependentSchemas,
    ],
    array: &[
        ArrayStep::Elements,
        ArrayStep::MinItems,
        ArrayStep::MaxItems,
        ArrayStep::UniqueItems,
        ArrayStep::Contains,
    ],
    string: &[
        StringStep::MinLength,
        StringStep::MaxLength,
        StringStep::Pattern,
        StringStep::Format,
    ],
    number: &[
        NumberStep::Minimum,
        NumberStep::Maximum,
        NumberStep::ExclusiveMinimum,
        NumberStep::ExclusiveMaximum,
        NumberStep::MultipleOf,
    ],
    type_ends_node: true,
    required: PerKey::AtKey,
    unions: Unions::BestBranch,
    conditional_summary: false,
    contains_bounds: true,
    length: LengthUnit::CodePoints,
    multiple_of: MultipleOf::ExactDecimal,
    unique_by_bits: false,
    properties_in_js_order: true,
    paths: Paths::Pointer,
    max_issues: None,
    invalid_when_unexplained: true,
};

impl Dialect {
    /// The dialect of a Pi release.
    pub fn of(pi: PiProfile) -> &'static Dialect {
        if pi.since_1_5() { &PI_SCHEMA } else { &TYPEBOX }
    }

    /// The instance path of `key` (a property name or an array index) below `path`.
    pub fn child(&self, path: &str, key: &str) -> String {
        match self.paths {
            Paths::TypeBox => child_path(path, key),
            Paths::Pointer => format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")),
        }
    }

    /// The path the model sees for an issue at `instance_path`.
    pub fn show_path(&self, instance_path: &str, failure: &Failure) -> String {
        match self.paths {
            Paths::TypeBox => {
                let first = match failure {
                    Failure::Required { missing } => missing.first().map(String::as_str),
                    _ => None,
                };
                format_path(instance_path, first)
            }
            // pi-ai's `formatValidationPath`.
            Paths::Pointer if instance_path.is_empty() => "root".to_owned(),
            Paths::Pointer => instance_path[1..]
                .split('/')
                .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
                .collect::<Vec<_>>()
                .join("."),
        }
    }

    /// The length of `text` as `minLength`/`maxLength` count it.
    pub fn length_of(&self, text: &str) -> f64 {
        match self.length {
            LengthUnit::Graphemes => grapheme_count(text) as f64,
            LengthUnit::CodePoints => text.chars().count() as f64,
        }
    }

    pub fn is_multiple(&self, number: f64, divisor: f64) -> bool {
        match self.multiple_of {
            MultipleOf::Tolerance => is_multiple_of(number, divisor),
            MultipleOf::ExactDecimal => is_exact_multiple(number, divisor),
        }
    }

    pub fn has_duplicates(&self, items: &[Value]) -> bool {
        if self.unique_by_bits {
            has_duplicates(items)
        } else {
            items.iter().enumerate().any(|(index, item)| {
                items[..index]
                    .iter()
                    .any(|earlier| js_deep_equal(earlier, item))
            })
        }
    }
}

/// pi-schema's `isMultiple` for JSON numbers: a whole quotient is a multiple; otherwise the
/// shortest decimal forms (`Number.prototype.toString`) of both decide exactly, so that
/// `0.0075` is a multiple of `0.0001` although `0.0075 / 0.0001` is `74.99999999999999`.
pub(super) fn is_exact_multiple(number: f64, divisor: f64) -> bool {
    let quotient = number / divisor;
    if quotient.is_finite() && quotient.fract() == 0.0 {
        return true;
    }
    if !quotient.is_finite() {
        return number % divisor == 0.0;
    }
    let (Some((number_digits, number_exponent)), Some((divisor_digits, divisor_exponent))) =
        (decimal(number), decimal(divisor))
    else {
        return false;
    };
    if divisor_digits == 0 {
        return false;
    }
    if number_exponent >= divisor_exponent {
        // digits * 10^k mod divisor, by modular exponentiation (every factor below 2^64).
        let modulus = u128::from(divisor_digits);
        let mut power = 1u128;
        let mut base = 10u128 % modulus;
        let mut k = number_exponent - divisor_exponent;
        while k > 0 {
            if k & 1 == 1 {
                power = power * base % modulus;
            }
            base = base * base % modulus;
            k >>= 1;
        }
        (u128::from(number_digits) % modulus * power).is_multiple_of(modulus)
    } else {
        // digits mod (divisor * 10^k): a divisor above the digits leaves them whole.
        let k = divisor_exponent - number_exponent;
        let scaled = 10u128
            .checked_pow(u32::try_from(k).unwrap_or(u32::MAX))
            .and_then(|scale| scale.checked_mul(u128::from(divisor_digits)));
        match scaled {
            Some(modulus) => u128::from(number_digits).is_multiple_of(modulus),
            None => number_digits == 0,
        }
    }
}

/// pi-schema's `decimal`: `|x|` as digits and a power of ten, read from JavaScript's shortest
/// form of it (`1.5e-7` → 15, -8).
fn decimal(x: f64) -> Option<(u64, i64)> {
    let text = js_number_string(x.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let fraction = mantissa
        .find('.')
        .map_or(0, |point| mantissa.len() - point - 1);
    let digits = mantissa.replace('.', "").parse().ok()?;
    let exponent: i64 = exponent.parse().ok()?;
    Some((digits, exponent - fraction as i64))
}

//! JavaScript's semantics over JSON values: a number as a double, `===`, deep
//! equality, TypeBox's grapheme count and the own-key order of objects. The
//! scalar semantics (`Number(string)`, `String(number)`, `trim`) are
//! `pi_compat::js`, shared with the guests.

use super::*;
pub(super) use pi_compat::js::{
    json_number as number_value, number as js_number_string,
    string_to_number as js_string_to_number, trim as js_trim,
};

/// A JSON number as JavaScript holds it: every number is an IEEE double.
pub(super) fn js_number(number: &serde_json::Number) -> f64 {
    number.as_f64().unwrap_or(f64::NAN)
}

/// `===` between a literal and a value: numbers compare as doubles; objects are never equal
/// (they are distinct objects in JavaScript).
pub(super) fn js_strict_equal(left: &Value, right: &Value) -> bool {
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
pub(super) fn js_deep_equal(left: &Value, right: &Value) -> bool {
    equal_by(left, right, js_strict_equal)
}

/// `uniqueItems` as TypeBox hashes values: key order does not matter, numbers compare by their
/// IEEE bits (so `0` and `-0` differ, `1` and `1.0` do not).
pub(super) fn has_duplicates(items: &[Value]) -> bool {
    fn same(left: &Value, right: &Value) -> bool {
        match (left, right) {
            (Value::Number(a), Value::Number(b)) => {
                js_number(a).to_bits() == js_number(b).to_bits()
            }
            _ => left == right,
        }
    }
    items.iter().enumerate().any(|(index, item)| {
        items[..index]
            .iter()
            .any(|earlier| equal_by(earlier, item, same))
    })
}

/// Arrays element-wise, objects key by key whatever their order, and
/// everything else by `leaf`.
fn equal_by(left: &Value, right: &Value, leaf: fn(&Value, &Value) -> bool) -> bool {
    match (left, right) {
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal_by(x, y, leaf))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| equal_by(x, y, leaf)))
        }
        _ => leaf(left, right),
    }
}

/// TypeBox's simplified grapheme count (`guard/string.mjs`), which `minLength`/`maxLength`
/// use: a code point plus following combining marks and variation selectors, joined across
/// ZWJ, with regional-indicator pairs (flags) as one.
pub(super) fn grapheme_count(text: &str) -> usize {
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
pub(super) fn array_index(key: &str) -> Option<u32> {
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
pub(super) fn js_entries(object: &Map<String, Value>) -> Vec<(&String, &Value)> {
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

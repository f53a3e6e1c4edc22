//! JavaScript's semantics for numbers, whitespace and URI escapes.

use serde_json::Value;

/// JavaScript's WhiteSpace and LineTerminator code points (what `trim`,
/// `trimEnd` and `Number` strip). Not Rust's `char::is_whitespace`: JavaScript
/// includes U+FEFF and excludes U+0085 and U+180E.
pub fn is_whitespace(c: char) -> bool {
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

/// `String.prototype.trim`.
pub fn trim(text: &str) -> &str {
    text.trim_matches(is_whitespace)
}

/// `String(number)`: shortest round-trip digits, `1e+21` style exponents,
/// `-0` → `"0"`, `NaN`, `Infinity`.
pub fn number(n: f64) -> String {
    if n == 0.0 {
        return "0".to_owned();
    }
    ryu_js::Buffer::new().format(n).to_owned()
}

/// A number as a JSON value that `JSON.stringify` would write the same way:
/// integral values become JSON integers (so a reader of `u64` gets one), `-0`
/// becomes `0`.
pub fn json_number(n: f64) -> Value {
    if n.fract() == 0.0 {
        if n == 0.0 {
            return Value::from(0);
        }
        // Exactly representable in the target integer type (2^63 and 2^64 are not).
        if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
            return Value::from(n as i64);
        }
        if (0.0..18_446_744_073_709_551_616.0).contains(&n) {
            return Value::from(n as u64);
        }
    }
    serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// `Number(string)` (ECMAScript StringToNumber): trimmed; empty → 0; `0x`/`0o`/`0b` integers
/// (no sign); otherwise an optionally signed decimal literal or `Infinity`. Everything else is
/// NaN: no `inf`/`nan`/`_` as Rust's parser would accept, no trailing garbage (`"12abc"`).
pub fn string_to_number(text: &str) -> f64 {
    let trimmed = trim(text);
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

/// `decodeURIComponent`'s `%XX` decoding: `None` when an escape is not two hex
/// digits or the bytes are not UTF-8 (where JavaScript throws `URIError`).
pub fn percent_decode(text: &str) -> Option<String> {
    String::from_utf8(percent_decode_bytes(text)?).ok()
}

/// The bytes `%XX` escapes stand for, the rest as it is: `None` when an
/// escape is not exactly two hex digits.
pub fn percent_decode_bytes(text: &str) -> Option<Vec<u8>> {
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
    Some(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(string_to_number(text), *expected, "{text:?}");
        }
        assert!(string_to_number("-0").is_sign_negative());
        for text in [
            "12abc", "inf", "infinity", "nan", "1_0", "-0x1", "0x", "0xg", "e5", "1e", ".", "+",
            "\u{85}1", "0b2",
        ] {
            assert!(string_to_number(text).is_nan(), "{text:?}");
        }
    }

    #[test]
    fn javascript_number_formatting() {
        for (n, expected) in [
            (5.0, "5"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-1.5, "-1.5"),
        ] {
            assert_eq!(number(n), expected);
        }
    }

    #[test]
    fn whitespace_and_trim_follow_javascript() {
        assert_eq!(trim("\u{FEFF}\u{3000} a \u{2028}"), "a");
        assert_eq!(trim("\u{85}a"), "\u{85}a");
        assert!(!is_whitespace('\u{180E}'));
    }

    #[test]
    fn json_numbers_are_integers_where_javascript_prints_no_fraction() {
        assert_eq!(json_number(2.0).to_string(), "2");
        assert_eq!(json_number(-0.0).to_string(), "0");
        assert_eq!(json_number(2.5).to_string(), "2.5");
        // Past 2^53 an integral double still prints as its digits.
        assert_eq!(
            json_number(2f64.powi(60)).to_string(),
            "1152921504606846976"
        );
        assert_eq!(json_number(f64::NAN), Value::Null);
    }

    #[test]
    fn percent_escapes_decode_strictly() {
        assert_eq!(percent_decode("/a%2Fb%c3%a9"), Some("/a/bé".to_owned()));
        assert_eq!(percent_decode("/%+1"), None);
        assert_eq!(percent_decode("/%4"), None);
        assert_eq!(percent_decode("/%ff"), None);
    }
}

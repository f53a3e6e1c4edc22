//! JavaScript's number semantics, for texts and details Pi builds from numbers.

use serde_json::Value;

/// `String(n)` in JavaScript: `1`, `0.5`, `1e+21`, `NaN`, `Infinity`.
pub fn number(n: f64) -> String {
    ryu_js::Buffer::new().format(n).to_string()
}

/// A number as `JSON.stringify` writes it: integral values without a fraction.
pub fn json_number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_javascript() {
        assert_eq!(number(1.0), "1");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(-6.0), "-6");
        assert_eq!(number(1e21), "1e+21");
        assert_eq!(json_number(2.0).to_string(), "2");
        assert_eq!(json_number(2.5).to_string(), "2.5");
    }
}

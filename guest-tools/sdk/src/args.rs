//! Reading a tool's arguments. The host validated and coerced them against
//! the tool's schema before `execute` runs, so these only pick values out;
//! an absent optional argument reads as absent.

use serde_json::Value;

/// The string argument `key`; `""` when absent.
pub fn string<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The number argument `key`, when given.
pub fn number(args: &Value, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

/// Whether the boolean argument `key` is `true`.
pub fn flag(args: &Value, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool) == Some(true)
}

/// Pi's `path || "."`: the `path` argument, or the working directory when
/// it is absent or empty.
pub fn path_or_cwd(args: &Value) -> &str {
    match string(args, "path") {
        "" => ".",
        path => path,
    }
}

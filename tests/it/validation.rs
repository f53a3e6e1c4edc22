//! Coercion and validation through a real component (spec §2.5 with §7.3).

use crate::support::*;
use serde_json::json;

#[test]
fn coercion_table_applies_before_validation() {
    let ws = Workspace::new();
    let host = host(&ws);
    let cases = [
        (json!({"value": 5}), "echoed: {\"value\":\"5\"}"),
        (json!({"value": false}), "echoed: {\"value\":\"false\"}"),
        (
            json!({"value": "v", "count": "42.7"}),
            "echoed: {\"value\":\"v\",\"count\":42}",
        ),
        (
            json!({"value": "v", "flag": "TRUE"}),
            "echoed: {\"value\":\"v\",\"flag\":true}",
        ),
        (
            json!({"value": "v", "flag": "1"}),
            "echoed: {\"value\":\"v\",\"flag\":true}",
        ),
        (
            json!({"value": "v", "ratio": true}),
            "echoed: {\"value\":\"v\",\"ratio\":1}",
        ),
        (
            json!({"value": "v", "ratio": ""}),
            "echoed: {\"value\":\"v\",\"ratio\":0}",
        ),
        (
            json!({"value": "v", "ratio": null}),
            "echoed: {\"value\":\"v\"}",
        ),
        (
            json!({"value": "v", "tags": "one"}),
            "echoed: {\"value\":\"v\",\"tags\":[\"one\"]}",
        ),
        // §7.3: a JSON-encoded array or object is parsed.
        (
            json!({"value": "v", "tags": "[\"x\",\"y\"]"}),
            "echoed: {\"value\":\"v\",\"tags\":[\"x\",\"y\"]}",
        ),
        (
            json!({"value": "v", "opts": "{\"deep\":true}"}),
            "echoed: {\"value\":\"v\",\"opts\":{\"deep\":true}}",
        ),
    ];
    for (args, want) in cases {
        let r = call(&host, "echo", args.clone());
        assert_eq!((r.text().as_str(), r.is_error), (want, false), "{args}");
    }
}

#[test]
fn validation_errors_have_pis_text() {
    let ws = Workspace::new();
    let host = host(&ws);
    let cases = [
        // §7.3: null for a required string is an error, not "null".
        (json!({"value": null}), "  - value: must be string"),
        (
            json!({"value": "v", "ratio": "12abc"}),
            "  - ratio: must be number",
        ),
        (
            json!({"value": "v", "opts": "not json"}),
            "  - opts: must be object",
        ),
        (
            json!({"value": "v", "mode": "c"}),
            "  - mode: must be equal to constant\n  - mode: must be equal to constant\n  - mode: must match a schema in anyOf",
        ),
    ];
    for (args, lines) in cases {
        let r = call(&host, "echo", args.clone());
        let pretty = serde_json::to_string_pretty(&args).unwrap();
        let want = format!(
            "Validation failed for tool \"echo\":\n{lines}\n\nReceived arguments:\n{pretty}"
        );
        assert_eq!((r.text(), r.is_error), (want, true), "{args}");
    }
}

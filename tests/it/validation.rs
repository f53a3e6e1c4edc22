//! Coercion and validation through a real component (spec §2.5 with §7.3).

use crate::support::*;
use serde_json::json;

#[test]
fn coercion_table_applies_before_validation() {
    let ws = Workspace::new();
    let host = host(&ws);
    // What `echo` echoes after "echoed: ".
    let cases = [
        (json!({"value": 5}), r#"{"value":"5"}"#),
        (json!({"value": false}), r#"{"value":"false"}"#),
        (
            json!({"value": "v", "count": "42.7"}),
            r#"{"value":"v","count":42}"#,
        ),
        (
            json!({"value": "v", "flag": "TRUE"}),
            r#"{"value":"v","flag":true}"#,
        ),
        (
            json!({"value": "v", "flag": "1"}),
            r#"{"value":"v","flag":true}"#,
        ),
        (
            json!({"value": "v", "ratio": true}),
            r#"{"value":"v","ratio":1}"#,
        ),
        (
            json!({"value": "v", "ratio": ""}),
            r#"{"value":"v","ratio":0}"#,
        ),
        (json!({"value": "v", "ratio": null}), r#"{"value":"v"}"#),
        (
            json!({"value": "v", "tags": "one"}),
            r#"{"value":"v","tags":["one"]}"#,
        ),
        // §7.3: a JSON-encoded array or object is parsed.
        (
            json!({"value": "v", "tags": "[\"x\",\"y\"]"}),
            r#"{"value":"v","tags":["x","y"]}"#,
        ),
        (
            json!({"value": "v", "opts": "{\"deep\":true}"}),
            r#"{"value":"v","opts":{"deep":true}}"#,
        ),
    ];
    for (args, echoed) in cases {
        let r = call(&host, "echo", args.clone());
        let want = format!("echoed: {echoed}");
        assert_eq!((r.text(), r.is_error), (want, false), "{args}");
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

//! The spec's shared cases (`fixtures/pi-cases-shared.json`, spec §4) for the
//! tools that exist, each run as `toolhost call NAME ARGS --json` in a fresh
//! workspace and compared with Pi's recorded result (text, isError, details),
//! or with the §7 decision that replaces it.

use crate::support::*;
use serde_json::{Value, json};

/// Tools whose cases must pass today; the others arrive with their issue.
const TOOLS: &[&str] = &["read", "ls"];

fn cases() -> Vec<Value> {
    let path = format!("{}/pi-cases-shared.json", toolhost_tests::FIXTURES);
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all["cases"].as_array().unwrap().clone()
}

/// Replace `<CWD>` with the workspace path in every string.
fn place(v: &Value, cwd: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("<CWD>", cwd)),
        Value::Array(a) => Value::Array(a.iter().map(|x| place(x, cwd)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), place(x, cwd))).collect())
        }
        other => other.clone(),
    }
}

/// Expected results that §7 changes, by case id.
fn deviation(id: &str, expected: &mut Value) {
    if id == "C016" {
        // §7.24: the long-line hint single-quotes the path.
        expected["content"][0]["text"] = json!(
            "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' 'long.txt' | head -c 51200]"
        );
    }
}

fn check_text(id: &str, got: &str, want: &Value) {
    if let Some(text) = want.get("text").and_then(Value::as_str) {
        assert_eq!(got, text, "{id}: text");
        return;
    }
    // Long texts are recorded as length, head and tail.
    let len = want["textLength"].as_u64().unwrap() as usize;
    assert_eq!(got.chars().count(), len, "{id}: text length");
    assert!(
        got.starts_with(want["head"].as_str().unwrap()),
        "{id}: text head"
    );
    assert!(
        got.ends_with(want["tail"].as_str().unwrap()),
        "{id}: text tail"
    );
}

#[test]
fn shared_cases_for_existing_tools_match_pi() {
    let cases: Vec<Value> = cases()
        .into_iter()
        .filter(|c| TOOLS.contains(&c["tool"].as_str().unwrap()))
        .collect();
    assert_eq!(cases.len(), 14, "read and ls cases in the fixture");
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let ws = Workspace::new();
        for (name, file) in case["files"].as_object().unwrap() {
            ws.write(name, file["utf8"].as_str().unwrap());
        }
        for link in case["symlinks"].as_array().unwrap() {
            let target = link["target"].as_str().unwrap().replace("<CWD>", ws.str());
            ws.symlink(link["link"].as_str().unwrap(), target);
        }
        let host = host(&ws);
        let result = call(
            &host,
            case["tool"].as_str().unwrap(),
            case["arguments"].clone(),
        );
        let mut expected = place(&case["pi"], ws.str());
        deviation(id, &mut expected);

        assert_eq!(
            result.is_error,
            expected["isError"].as_bool().unwrap(),
            "{id}: isError"
        );
        let want_content = expected["content"].as_array().unwrap();
        assert_eq!(result.content.len(), want_content.len(), "{id}: blocks");
        check_text(id, &result.text(), &want_content[0]);
        assert_eq!(
            result.details,
            expected.get("details").cloned(),
            "{id}: details"
        );
    }
}

//! Expected texts marked "Pi" were produced by Pi 0.85.0's own `validateToolArguments`
//! (typebox 1.3.7) on a TypeBox-built copy of the schema; "§7.3" marks our deliberate changes.

use super::text::js_stringify_pretty;
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
    let number_or_string = json!({"anyOf":[{"type":"number"},{"type":"string"}]});
    let boolean_or_number = json!({"anyOf":[{"type":"boolean"},{"type":"number"}]});
    let number_or_null = json!({"anyOf":[{"type":"number"},{"type":"null"}]});
    // A list of types reads as a union of them.
    let types = json!({"type":["integer","boolean"]});
    // (the union, a value given, what it becomes)
    let cases = [
        (&number_or_string, json!("5"), json!("5")),
        (&boolean_or_number, json!("1"), json!(true)),
        (&boolean_or_number, json!("5"), json!(5)),
        (&number_or_null, json!("null"), json!(null)),
        (&number_or_null, json!(""), json!(0)),
        (&types, json!("true"), json!(1)),
        (&types, json!(false), json!(false)),
    ];
    for (union, given, becomes) in cases {
        let schema = one("p", union.clone(), true);
        let got = ok(&schema, json!({ "p": given }));
        assert_eq!(got, json!({ "p": becomes }), "{union} given {given}");
    }
    assert_eq!(
        issues(&one("p", number_or_null, true), json!({"p":"x"})),
        [
            "p: must be number",
            "p: must be null",
            "p: must match a schema in anyOf"
        ]
    );
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
        ArgumentSchema::compile(&json!({"$schema":"https://example.com/unknown","type":"object"}))
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
    let value: Value =
        serde_json::from_str(r#"{"b":1,"10":2,"a":3,"2":4,"01":5,"4294967295":6,"4294967294":7}"#)
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
    let tree = json!({"type":"object","properties":{"child":{"$ref":"#"},"n":{"type":"number"}}});
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

// ---- Pi 1.6: pi-schema's issues --------------------------------------------------------
//
// The expected lines below were produced by running pi-schema 1.6.0 itself (the
// `@earendil-works/pi-schema` that Pi 1.6.0 installs) under Node: `compile(schema, {formats,
// coerce: true, unresolvedRefs: "reject"})` as pi-ai 1.6's `validateToolArguments` calls it,
// then `validate(value)` (no coercion: these cases test the walk), each error printed as
// `formatValidationPath(path): message`.

/// `(name, schema, value, pi-schema 1.6.0's lines)`; `(valid)` where pi-schema accepts the value.
const PI_SCHEMA_CASES: &[(&str, &str, &str, &[&str])] = &[
    (
        "type_string_object",
        r##"{"type":"object","properties":{"x":{"type":"string"}}}"##,
        r##"{"x":{"a":1}}"##,
        &[r##"x: expected string, got object"##],
    ),
    (
        "type_string_array",
        r##"{"type":"object","properties":{"x":{"type":"string"}}}"##,
        r##"{"x":[1]}"##,
        &[r##"x: expected string, got array"##],
    ),
    (
        "type_string_integer",
        r##"{"type":"object","properties":{"x":{"type":"string"}}}"##,
        r##"{"x":5}"##,
        &[r##"x: expected string, got integer"##],
    ),
    (
        "type_string_number",
        r##"{"type":"object","properties":{"x":{"type":"string"}}}"##,
        r##"{"x":5.5}"##,
        &[r##"x: expected string, got number"##],
    ),
    (
        "type_string_null",
        r##"{"type":"object","properties":{"x":{"type":"string"}}}"##,
        r##"{"x":null}"##,
        &[r##"x: expected string, got null"##],
    ),
    (
        "type_string_boolean",
        r##"{"type":"object","properties":{"x":{"type":"string"}}}"##,
        r##"{"x":true}"##,
        &[r##"x: expected string, got boolean"##],
    ),
    (
        "type_integer_number",
        r##"{"type":"object","properties":{"x":{"type":"integer"}}}"##,
        r##"{"x":1.5}"##,
        &[r##"x: expected integer, got number"##],
    ),
    (
        "type_integer_whole_float",
        r##"{"type":"object","properties":{"x":{"type":"integer"}}}"##,
        r##"{"x":"1"}"##,
        &[r##"x: expected integer, got string"##],
    ),
    (
        "type_number_string",
        r##"{"type":"object","properties":{"x":{"type":"number"}}}"##,
        r##"{"x":"1"}"##,
        &[r##"x: expected number, got string"##],
    ),
    (
        "type_null_integer",
        r##"{"type":"object","properties":{"x":{"type":"null"}}}"##,
        r##"{"x":0}"##,
        &[r##"x: expected null, got integer"##],
    ),
    (
        "type_array_object",
        r##"{"type":"object","properties":{"x":{"type":"array"}}}"##,
        r##"{"x":{}}"##,
        &[r##"x: expected array, got object"##],
    ),
    (
        "type_boolean_string",
        r##"{"type":"object","properties":{"x":{"type":"boolean"}}}"##,
        r##"{"x":"true"}"##,
        &[r##"x: expected boolean, got string"##],
    ),
    (
        "type_list",
        r##"{"type":"object","properties":{"x":{"type":["string","null"]}}}"##,
        r##"{"x":5}"##,
        &[r##"x: expected string or null, got integer"##],
    ),
    (
        "type_stops_other_keywords",
        r##"{"type":"object","properties":{"x":{"type":"string","minLength":3,"enum":["abc"]}}}"##,
        r##"{"x":5}"##,
        &[r##"x: expected string, got integer"##],
    ),
    (
        "root_not_object",
        r##"{"type":"object"}"##,
        r##"5"##,
        &[r##"root: expected object, got integer"##],
    ),
    (
        "root_array",
        r##"{"type":"object"}"##,
        r##"[]"##,
        &[r##"root: expected object, got array"##],
    ),
    (
        "required_each",
        r##"{"type":"object","properties":{"a":{"type":"string"}},"required":["b","a","c"]}"##,
        r##"{}"##,
        &[r##"b: missing"##, r##"a: missing"##, r##"c: missing"##],
    ),
    (
        "required_nested",
        r##"{"type":"object","properties":{"o":{"type":"object","properties":{"p":{}},"required":["p","q"]}}}"##,
        r##"{"o":{}}"##,
        &[r##"o.p: missing"##, r##"o.q: missing"##],
    ),
    (
        "required_then_properties",
        r##"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["c"]}"##,
        r##"{"b":"x","a":1}"##,
        &[
            r##"c: missing"##,
            r##"a: expected string, got integer"##,
            r##"b: expected number, got string"##,
        ],
    ),
    (
        "many_issues_no_cap",
        r##"{"type":"object","properties":{},"required":["a","b","c","d","e","f","g","h","i","j"]}"##,
        r##"{}"##,
        &[
            r##"a: missing"##,
            r##"b: missing"##,
            r##"c: missing"##,
            r##"d: missing"##,
            r##"e: missing"##,
            r##"f: missing"##,
            r##"g: missing"##,
            r##"h: missing"##,
            r##"i: missing"##,
            r##"j: missing"##,
        ],
    ),
    (
        "additional_false",
        r##"{"type":"object","properties":{"a":{}},"additionalProperties":false}"##,
        r##"{"z":1,"a":1,"y":2,"1":3}"##,
        &[
            r##"1: unknown field"##,
            r##"z: unknown field"##,
            r##"y: unknown field"##,
        ],
    ),
    (
        "additional_schema",
        r##"{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"}}"##,
        r##"{"z":1,"a":1,"y":"ok","w":true}"##,
        &[
            r##"z: expected string, got integer"##,
            r##"w: expected string, got boolean"##,
        ],
    ),
    (
        "pattern_properties",
        r##"{"type":"object","properties":{},"patternProperties":{"^n_":{"type":"number"},"_x$":{"type":"string"}},"additionalProperties":false}"##,
        r##"{"n_a":"s","n_x":1,"b":1,"c_x":2}"##,
        &[
            r##"n_a: expected number, got string"##,
            r##"n_x: expected string, got integer"##,
            r##"b: unknown field"##,
            r##"c_x: expected string, got integer"##,
        ],
    ),
    (
        "enum_strings",
        r##"{"type":"object","properties":{"x":{"enum":["a","b"]}}}"##,
        r##"{"x":"c"}"##,
        &[r##"x: expected one of ["a","b"]"##],
    ),
    (
        "enum_mixed",
        r##"{"type":"object","properties":{"x":{"enum":["a",1,null,true,{"k":[1,2]},[3],1.5]}}}"##,
        r##"{"x":"c"}"##,
        &[r##"x: expected one of ["a",1,null,true,{"k":[1,2]},[3],1.5]"##],
    ),
    (
        "enum_long",
        r##"{"type":"object","properties":{"x":{"enum":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24]}}}"##,
        r##"{"x":99}"##,
        &[
            r##"x: expected one of [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19, ... and 5 more]"##,
        ],
    ),
    (
        "enum_exactly_20",
        r##"{"type":"object","properties":{"x":{"enum":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]}}}"##,
        r##"{"x":99}"##,
        &[r##"x: expected one of [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]"##],
    ),
    (
        "enum_21",
        r##"{"type":"object","properties":{"x":{"enum":["v0","v1","v2","v3","v4","v5","v6","v7","v8","v9","v10","v11","v12","v13","v14","v15","v16","v17","v18","v19","v20"]}}}"##,
        r##"{"x":99}"##,
        &[
            r##"x: expected one of ["v0","v1","v2","v3","v4","v5","v6","v7","v8","v9","v10","v11","v12","v13","v14","v15","v16","v17","v18","v19", ... and 1 more]"##,
        ],
    ),
    (
        "const_string",
        r##"{"type":"object","properties":{"x":{"const":"a\"b"}}}"##,
        r##"{"x":"c"}"##,
        &[r##"x: expected "a\"b""##],
    ),
    (
        "const_object",
        r##"{"type":"object","properties":{"x":{"const":{"b":1,"a":[1,"x"],"2":null}}}}"##,
        r##"{"x":{}}"##,
        &[r##"x: expected {"2":null,"b":1,"a":[1,"x"]}"##],
    ),
    (
        "const_number",
        r##"{"type":"object","properties":{"x":{"const":1e+21}}}"##,
        r##"{"x":1}"##,
        &[r##"x: expected 1e+21"##],
    ),
    (
        "const_and_enum",
        r##"{"type":"object","properties":{"x":{"const":"a","enum":["b"]}}}"##,
        r##"{"x":"c"}"##,
        &[r##"x: expected one of ["b"]"##, r##"x: expected "a""##],
    ),
    (
        "min_length",
        r##"{"type":"object","properties":{"x":{"type":"string","minLength":3}}}"##,
        r##"{"x":"😀😀"}"##,
        &[r##"x: expected at least 3 characters"##],
    ),
    (
        "max_length",
        r##"{"type":"object","properties":{"x":{"type":"string","maxLength":2}}}"##,
        r##"{"x":"éé"}"##,
        &[r##"x: expected at most 2 characters"##],
    ),
    (
        "string_all",
        r##"{"type":"object","properties":{"x":{"type":"string","minLength":5,"maxLength":1,"pattern":"^a+$","format":"email"}}}"##,
        r##"{"x":"bb"}"##,
        &[
            r##"x: expected at least 5 characters"##,
            r##"x: expected at most 1 characters"##,
            r##"x: expected to match ^a+$"##,
            r##"x: expected format email"##,
        ],
    ),
    (
        "pattern",
        r##"{"type":"object","properties":{"x":{"type":"string","pattern":"^[a-z]+\\d$"}}}"##,
        r##"{"x":"A1"}"##,
        &[r##"x: expected to match ^[a-z]+\d$"##],
    ),
    (
        "format_email",
        r##"{"type":"object","properties":{"x":{"type":"string","format":"email"}}}"##,
        r##"{"x":"nope"}"##,
        &[r##"x: expected format email"##],
    ),
    (
        "format_date_time",
        r##"{"type":"object","properties":{"x":{"type":"string","format":"date-time"}}}"##,
        r##"{"x":"2020-13-01"}"##,
        &[r##"x: expected format date-time"##],
    ),
    (
        "format_uuid",
        r##"{"type":"object","properties":{"x":{"format":"uuid"}}}"##,
        r##"{"x":"nope"}"##,
        &[r##"x: expected format uuid"##],
    ),
    (
        "format_unknown_passes_other_fails",
        r##"{"type":"object","properties":{"x":{"format":"foo","minLength":9}}}"##,
        r##"{"x":"nope"}"##,
        &[r##"x: expected at least 9 characters"##],
    ),
    (
        "number_all",
        r##"{"type":"object","properties":{"x":{"type":"number","minimum":10,"maximum":1,"exclusiveMinimum":10,"exclusiveMaximum":1,"multipleOf":4}}}"##,
        r##"{"x":5}"##,
        &[
            r##"x: expected >= 10"##,
            r##"x: expected <= 1"##,
            r##"x: expected > 10"##,
            r##"x: expected < 1"##,
            r##"x: expected a multiple of 4"##,
        ],
    ),
    (
        "minimum",
        r##"{"type":"object","properties":{"x":{"minimum":1.5}}}"##,
        r##"{"x":1}"##,
        &[r##"x: expected >= 1.5"##],
    ),
    (
        "maximum",
        r##"{"type":"object","properties":{"x":{"maximum":-0.5}}}"##,
        r##"{"x":0}"##,
        &[r##"x: expected <= -0.5"##],
    ),
    (
        "exclusive_minimum",
        r##"{"type":"object","properties":{"x":{"exclusiveMinimum":1}}}"##,
        r##"{"x":1}"##,
        &[r##"x: expected > 1"##],
    ),
    (
        "exclusive_maximum",
        r##"{"type":"object","properties":{"x":{"exclusiveMaximum":1e+21}}}"##,
        r##"{"x":1e+22}"##,
        &[r##"x: expected < 1e+21"##],
    ),
    (
        "multiple_of",
        r##"{"type":"object","properties":{"x":{"multipleOf":0.01}}}"##,
        r##"{"x":0.075}"##,
        &[r##"x: expected a multiple of 0.01"##],
    ),
    (
        "multiple_of_decimal_ok_then_fail",
        r##"{"type":"object","properties":{"x":{"multipleOf":0.0001},"y":{"multipleOf":0.1},"z":{"multipleOf":3}}}"##,
        r##"{"x":0.0075,"y":0.3,"z":1e-07}"##,
        &[r##"z: expected a multiple of 3"##],
    ),
    (
        "multiple_of_tiny",
        r##"{"type":"object","properties":{"x":{"multipleOf":1e-10}}}"##,
        r##"{"x":1.00000000001}"##,
        &[r##"x: expected a multiple of 1e-10"##],
    ),
    (
        "integer_with_minimum",
        r##"{"type":"object","properties":{"x":{"type":"integer","minimum":0}}}"##,
        r##"{"x":-1}"##,
        &[r##"x: expected >= 0"##],
    ),
    (
        "min_items",
        r##"{"type":"object","properties":{"x":{"type":"array","minItems":2}}}"##,
        r##"{"x":[1]}"##,
        &[r##"x: expected at least 2 items"##],
    ),
    (
        "max_items",
        r##"{"type":"object","properties":{"x":{"type":"array","maxItems":1,"items":{"type":"string"}}}}"##,
        r##"{"x":[1,"a",2]}"##,
        &[
            r##"x.0: expected string, got integer"##,
            r##"x.2: expected string, got integer"##,
            r##"x: expected at most 1 items"##,
        ],
    ),
    (
        "unique_items",
        r##"{"type":"object","properties":{"x":{"uniqueItems":true}}}"##,
        r##"{"x":[1,{"a":1,"b":2},{"b":2,"a":1}]}"##,
        &[r##"x: expected unique items"##],
    ),
    (
        "unique_items_zero",
        r##"{"type":"object","properties":{"x":{"uniqueItems":true}}}"##,
        r##"{"x":[0,-0.0]}"##,
        &[r##"x: expected unique items"##],
    ),
    (
        "unique_items_numbers",
        r##"{"type":"object","properties":{"x":{"uniqueItems":true}}}"##,
        r##"{"x":[1,1.0]}"##,
        &[r##"x: expected unique items"##],
    ),
    (
        "array_all",
        r##"{"type":"object","properties":{"x":{"type":"array","minItems":5,"maxItems":1,"uniqueItems":true,"contains":{"type":"string"},"items":{"type":"integer"}}}}"##,
        r##"{"x":[1,1,2.5]}"##,
        &[
            r##"x.2: expected integer, got number"##,
            r##"x: expected at least 5 items"##,
            r##"x: expected at most 1 items"##,
            r##"x: expected unique items"##,
            r##"x: expected at least 1 matching item"##,
        ],
    ),
    (
        "min_properties",
        r##"{"type":"object","properties":{"o":{"type":"object","minProperties":2}}}"##,
        r##"{"o":{"a":1}}"##,
        &[r##"o: expected at least 2 properties"##],
    ),
    (
        "max_properties",
        r##"{"type":"object","properties":{"o":{"type":"object","maxProperties":1}}}"##,
        r##"{"o":{"a":1,"b":2}}"##,
        &[r##"o: expected at most 1 properties"##],
    ),
    (
        "dependent_required",
        r##"{"type":"object","properties":{},"dependentRequired":{"a":["b","c"],"z":["y"]}}"##,
        r##"{"a":1,"c":1}"##,
        &[r##"b: required when a is present"##],
    ),
    (
        "dependencies_list",
        r##"{"type":"object","properties":{},"dependencies":{"a":["b","c"]}}"##,
        r##"{"a":1}"##,
        &[
            r##"b: required when a is present"##,
            r##"c: required when a is present"##,
        ],
    ),
    (
        "dependencies_schema",
        r##"{"type":"object","properties":{},"dependencies":{"a":{"required":["q"]}}}"##,
        r##"{"a":1}"##,
        &[r##"q: missing"##],
    ),
    (
        "dependencies_and_dependent_required",
        r##"{"type":"object","properties":{},"dependencies":{"b":["x"],"a":["y"]},"dependentRequired":{"a":["z"]}}"##,
        r##"{"a":1,"b":1}"##,
        &[
            r##"y: required when a is present"##,
            r##"x: required when b is present"##,
        ],
    ),
    (
        "dependent_schemas",
        r##"{"type":"object","properties":{},"dependentSchemas":{"a":{"properties":{"b":{"type":"string"}}}}}"##,
        r##"{"a":1,"b":1}"##,
        &[r##"b: expected string, got integer"##],
    ),
    (
        "property_names",
        r##"{"type":"object","properties":{},"propertyNames":{"pattern":"^[a-z]+$"}}"##,
        r##"{"A":1,"b":2,"C":3}"##,
        &[
            r##"A: invalid property name"##,
            r##"C: invalid property name"##,
        ],
    ),
    (
        "property_names_max_length",
        r##"{"type":"object","properties":{},"propertyNames":{"maxLength":2}}"##,
        r##"{"abc":1,"ab":2}"##,
        &[r##"abc: invalid property name"##],
    ),
    (
        "contains",
        r##"{"type":"object","properties":{"x":{"type":"array","contains":{"type":"string"}}}}"##,
        r##"{"x":[1,2]}"##,
        &[r##"x: expected at least 1 matching item"##],
    ),
    (
        "contains_empty",
        r##"{"type":"object","properties":{"x":{"contains":{"type":"string"}}}}"##,
        r##"{"x":[]}"##,
        &[r##"x: expected at least 1 matching item"##],
    ),
    (
        "min_contains",
        r##"{"type":"object","properties":{"x":{"contains":{"type":"string"},"minContains":2}}}"##,
        r##"{"x":["a",1]}"##,
        &[r##"x: expected at least 2 matching items"##],
    ),
    (
        "max_contains",
        r##"{"type":"object","properties":{"x":{"contains":{"type":"string"},"maxContains":1}}}"##,
        r##"{"x":["a","b"]}"##,
        &[r##"x: expected between 1 and 1 matching items"##],
    ),
    (
        "max_contains_2",
        r##"{"type":"object","properties":{"x":{"contains":{"type":"string"},"maxContains":2}}}"##,
        r##"{"x":["a","b","c"]}"##,
        &[r##"x: expected between 1 and 2 matching items"##],
    ),
    (
        "min_max_contains",
        r##"{"type":"object","properties":{"x":{"contains":{"type":"string"},"minContains":2,"maxContains":3}}}"##,
        r##"{"x":["a"]}"##,
        &[r##"x: expected between 2 and 3 matching items"##],
    ),
    (
        "min_contains_zero",
        r##"{"type":"object","properties":{"x":{"contains":{"type":"string"},"minContains":0,"maxContains":1}}}"##,
        r##"{"x":["a","b"]}"##,
        &[r##"x: expected at most 1 matching item"##],
    ),
    (
        "not",
        r##"{"type":"object","properties":{"x":{"not":{"type":"string"}}}}"##,
        r##"{"x":"s"}"##,
        &[r##"x: must not match the schema in not"##],
    ),
    (
        "any_of_scalars",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"number"}]}}}"##,
        r##"{"x":true}"##,
        &[r##"x: expected string, got boolean"##],
    ),
    (
        "any_of_deepest_first_error",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]}}}"##,
        r##"{"x":[1,2]}"##,
        &[
            r##"x.0: expected string, got integer"##,
            r##"x.1: expected string, got integer"##,
        ],
    ),
    (
        "any_of_objects_declared",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"},"c":{"type":"number"}},"required":["b"]}]}}}"##,
        r##"{"x":{"b":1,"c":"x"}}"##,
        &[
            r##"x.b: expected string, got integer"##,
            r##"x.c: expected number, got string"##,
        ],
    ),
    (
        "any_of_objects_tie",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}}}"##,
        r##"{"x":{}}"##,
        &[r##"x.a: missing"##],
    ),
    (
        "any_of_tagged",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"object","properties":{"kind":{"const":"a"},"n":{"type":"number"}},"required":["kind","n"]},{"type":"object","properties":{"kind":{"const":"b"},"s":{"type":"string"}},"required":["kind","s"]}]}}}"##,
        r##"{"x":{"kind":"b","s":1}}"##,
        &[r##"x.s: expected string, got integer"##],
    ),
    (
        "any_of_tagged_unknown_tag",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]}]}}}"##,
        r##"{"x":{"kind":"c"}}"##,
        &[r##"x.kind: expected one of ["a","b"]"##],
    ),
    (
        "any_of_tagged_not_object",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"object","properties":{"kind":{"const":1}}},{"type":"object","properties":{"kind":{"const":2}}}]}}}"##,
        r##"{"x":"s"}"##,
        &[r##"x: expected object, got string"##],
    ),
    (
        "any_of_literals",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"const":"a"},{"const":"b"}]}}}"##,
        r##"{"x":"c"}"##,
        &[r##"x: expected "a""##],
    ),
    (
        "any_of_nested_ref",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"$ref":"#/$defs/A"},{"$ref":"#/$defs/B"}]}},"$defs":{"A":{"type":"object","properties":{"t":{"const":"a"},"v":{"type":"number"}}},"B":{"type":"object","properties":{"t":{"const":"b"},"v":{"type":"string"}}}}}"##,
        r##"{"x":{"t":"a","v":"s"}}"##,
        &[r##"x.v: expected number, got string"##],
    ),
    (
        "one_of_none",
        r##"{"type":"object","properties":{"x":{"oneOf":[{"type":"string"},{"type":"number"}]}}}"##,
        r##"{"x":null}"##,
        &[r##"x: expected string, got null"##],
    ),
    (
        "one_of_many",
        r##"{"type":"object","properties":{"x":{"oneOf":[{"type":"number"},{"type":"integer"}]}}}"##,
        r##"{"x":1}"##,
        &[r##"x: matches more than one alternative"##],
    ),
    (
        "any_of_with_other_keywords",
        r##"{"type":"object","properties":{"x":{"type":"string","minLength":3,"anyOf":[{"pattern":"^a"},{"pattern":"^b"}]}}}"##,
        r##"{"x":"c"}"##,
        &[
            r##"x: expected at least 3 characters"##,
            r##"x: expected to match ^a"##,
        ],
    ),
    (
        "false_schema",
        r##"{"type":"object","properties":{"x":false}}"##,
        r##"{"x":1}"##,
        &[r##"x: no value is allowed here"##],
    ),
    (
        "false_items",
        r##"{"type":"object","properties":{"x":{"items":false}}}"##,
        r##"{"x":[1,2]}"##,
        &[
            r##"x.0: no value is allowed here"##,
            r##"x.1: no value is allowed here"##,
        ],
    ),
    (
        "all_of",
        r##"{"type":"object","properties":{"x":{"allOf":[{"type":"string"},{"minLength":2},{"maxLength":5}]}}}"##,
        r##"{"x":"a"}"##,
        &[r##"x: expected at least 2 characters"##],
    ),
    (
        "if_then",
        r##"{"type":"object","properties":{"x":{"if":{"type":"string"},"then":{"minLength":3},"else":{"minimum":5}}}}"##,
        r##"{"x":"a"}"##,
        &[r##"x: expected at least 3 characters"##],
    ),
    (
        "if_else",
        r##"{"type":"object","properties":{"x":{"if":{"type":"string"},"then":{"minLength":3},"else":{"minimum":5}}}}"##,
        r##"{"x":1}"##,
        &[r##"x: expected >= 5"##],
    ),
    (
        "ref",
        r##"{"type":"object","properties":{"x":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"number","minimum":3}}}"##,
        r##"{"x":1}"##,
        &[r##"x: expected >= 3"##],
    ),
    (
        "ref_with_siblings",
        r##"{"type":"object","properties":{"x":{"$ref":"#/$defs/N","maximum":0}},"$defs":{"N":{"type":"number","minimum":3}}}"##,
        r##"{"x":1}"##,
        &[r##"x: expected <= 0"##, r##"x: expected >= 3"##],
    ),
    (
        "keys_with_slash_and_tilde",
        r##"{"type":"object","properties":{"a/b":{"type":"object","properties":{"c~d":{"type":"string"}}},"e.f":{"type":"string"}},"required":["m/n","o~p"]}"##,
        r##"{"a/b":{"c~d":1},"e.f":2}"##,
        &[
            r##"m/n: missing"##,
            r##"o~p: missing"##,
            r##"a/b.c~d: expected string, got integer"##,
            r##"e.f: expected string, got integer"##,
        ],
    ),
    (
        "additional_false_slash",
        r##"{"type":"object","properties":{},"additionalProperties":false}"##,
        r##"{"x/y~z":1}"##,
        &[r##"x/y~z: unknown field"##],
    ),
    (
        "items_tuple",
        r##"{"type":"object","properties":{"x":{"prefixItems":[{"type":"string"},{"type":"number"}],"items":{"type":"boolean"}}}}"##,
        r##"{"x":[1,"a",3]}"##,
        &[
            r##"x.0: expected string, got integer"##,
            r##"x.1: expected number, got string"##,
            r##"x.2: expected boolean, got integer"##,
        ],
    ),
    (
        "nested_array_paths",
        r##"{"type":"object","properties":{"x":{"type":"array","items":{"type":"array","items":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}}}}"##,
        r##"{"x":[[{"n":1},{}],[{"n":"s"}]]}"##,
        &[
            r##"x.0.1.n: missing"##,
            r##"x.1.0.n: expected number, got string"##,
        ],
    ),
    (
        "object_keys_order",
        r##"{"type":"object","properties":{"b":{"type":"string"},"2":{"type":"string"},"a":{"type":"string"}}}"##,
        r##"{"a":1,"b":1,"2":1}"##,
        &[
            r##"2: expected string, got integer"##,
            r##"b: expected string, got integer"##,
            r##"a: expected string, got integer"##,
        ],
    ),
    (
        "properties_then_additional_order",
        r##"{"type":"object","properties":{"a":{"type":"string"}},"required":["r"],"additionalProperties":false,"minProperties":9}"##,
        r##"{"z":1,"a":1}"##,
        &[
            r##"r: missing"##,
            r##"a: expected string, got integer"##,
            r##"z: unknown field"##,
            r##"root: expected at least 9 properties"##,
        ],
    ),
    (
        "nullable_anyof",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"null"}]}}}"##,
        r##"{"x":1}"##,
        &[r##"x: expected string, got integer"##],
    ),
    (
        "number_message_formats",
        r##"{"type":"object","properties":{"x":{"minimum":1e+21},"y":{"maximum":1e-07},"z":{"minimum":0.1}}}"##,
        r##"{"x":1,"y":1,"z":0}"##,
        &[
            r##"x: expected >= 1e+21"##,
            r##"y: expected <= 1e-7"##,
            r##"z: expected >= 0.1"##,
        ],
    ),
    (
        "one_of_tagged_two_match",
        r##"{"type":"object","properties":{"x":{"oneOf":[{"type":"object","properties":{"k":{"const":1}}},{"type":"object","properties":{"k":{"const":2}}}]}}}"##,
        r##"{"x":{}}"##,
        &[r##"x: matches more than one alternative"##],
    ),
    (
        "nested_unions",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"anyOf":[{"type":"array","items":{"type":"number"}},{"type":"object","required":["a"]}]}]}}}"##,
        r##"{"x":[1,"b"]}"##,
        &[r##"x.1: expected number, got string"##],
    ),
    (
        "any_of_with_false",
        r##"{"type":"object","properties":{"x":{"anyOf":[false,{"type":"string"}]}}}"##,
        r##"{"x":1}"##,
        &[r##"x: no value is allowed here"##],
    ),
    (
        "any_of_all_false",
        r##"{"type":"object","properties":{"x":{"anyOf":[false,false]}}}"##,
        r##"{"x":1}"##,
        &[r##"x: no value is allowed here"##],
    ),
    (
        "enum_objects",
        r##"{"type":"object","properties":{"x":{"enum":[{"a":1,"b":[1]},{"b":2}]}}}"##,
        r##"{"x":{"b":[1],"a":2}}"##,
        &[r##"x: expected one of [{"a":1,"b":[1]},{"b":2}]"##],
    ),
    (
        "empty_key",
        r##"{"type":"object","properties":{"":{"type":"string"}},"required":["","~"]}"##,
        r##"{"":1}"##,
        &[r##"~: missing"##, r##": expected string, got integer"##],
    ),
    (
        "tilde_one_key",
        r##"{"type":"object","properties":{},"additionalProperties":false}"##,
        r##"{"a~1b":1}"##,
        &[r##"a~1b: unknown field"##],
    ),
    (
        "recursive_ref",
        r##"{"type":"object","properties":{"t":{"$ref":"#/$defs/T"}},"$defs":{"T":{"type":"object","properties":{"v":{"type":"number"},"kids":{"type":"array","items":{"$ref":"#/$defs/T"}}},"required":["v"]}}}"##,
        r##"{"t":{"v":1,"kids":[{"v":"x"},{"kids":[{}]}]}}"##,
        &[
            r##"t.kids.0.v: expected number, got string"##,
            r##"t.kids.1.v: missing"##,
            r##"t.kids.1.kids.0.v: missing"##,
        ],
    ),
    (
        "additional_schema_with_pattern",
        r##"{"type":"object","properties":{},"patternProperties":{"^a":{"type":"string"}},"additionalProperties":{"type":"number"},"propertyNames":{"maxLength":2}}"##,
        r##"{"abc":1,"b":"s","ab":"ok"}"##,
        &[
            r##"abc: expected string, got integer"##,
            r##"abc: invalid property name"##,
            r##"b: expected number, got string"##,
        ],
    ),
    (
        "deps_missing_and_present_key_absent",
        r##"{"type":"object","properties":{},"dependentRequired":{"q":["r"]}}"##,
        r##"{"r":1,"z":1}"##,
        &[r##"(valid)"##],
    ),
    (
        "if_no_else",
        r##"{"type":"object","properties":{"x":{"if":{"type":"string"},"then":{"minLength":3}}}}"##,
        r##"{"x":1}"##,
        &[r##"(valid)"##],
    ),
    (
        "contains_nested_errors",
        r##"{"type":"object","properties":{"x":{"contains":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}}"##,
        r##"{"x":[{"a":1},{}]}"##,
        &[r##"x: expected at least 1 matching item"##],
    ),
    (
        "const_null",
        r##"{"type":"object","properties":{"x":{"const":null}}}"##,
        r##"{"x":0}"##,
        &[r##"x: expected null"##],
    ),
    (
        "const_false_vs_0",
        r##"{"type":"object","properties":{"x":{"enum":[false,0,""]}}}"##,
        r##"{"x":null}"##,
        &[r##"x: expected one of [false,0,""]"##],
    ),
    (
        "type_integer_list",
        r##"{"type":"object","properties":{"x":{"type":["integer","boolean"]}}}"##,
        r##"{"x":2.5}"##,
        &[r##"x: expected integer or boolean, got number"##],
    ),
    (
        "string_newline_const",
        r##"{"type":"object","properties":{"x":{"const":"a\nb\u0001 é"}}}"##,
        r##"{"x":"c"}"##,
        &[r##"x: expected "a\nb\u0001 é""##],
    ),
    (
        "one_of_best_by_depth",
        r##"{"type":"object","properties":{"x":{"oneOf":[{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}},{"type":"object","required":["z"]}]}}}"##,
        r##"{"x":{"a":{"b":1}}}"##,
        &[r##"x.a.b: expected string, got integer"##],
    ),
    (
        "union_declared_ties_depth",
        r##"{"type":"object","properties":{"x":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["q"]},{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}]}}}"##,
        r##"{"x":{"a":{"b":1}}}"##,
        &[r##"x.a.b: expected string, got integer"##],
    ),
    (
        "all_of_required_and_additional",
        r##"{"type":"object","properties":{"x":{"allOf":[{"type":"object","properties":{"a":{}},"required":["a"]},{"additionalProperties":false}]}}}"##,
        r##"{"x":{"b":1}}"##,
        &[r##"x.a: missing"##, r##"x.b: unknown field"##],
    ),
    (
        "min_length_surrogates",
        r##"{"type":"object","properties":{"x":{"maxLength":1}}}"##,
        r##"{"x":"😀"}"##,
        &[r##"(valid)"##],
    ),
    (
        "unique_items_objects_order",
        r##"{"type":"object","properties":{"x":{"uniqueItems":true}}}"##,
        r##"{"x":[[1,2],[2,1],{"a":null},{"a":null}]}"##,
        &[r##"x: expected unique items"##],
    ),
];

#[test]
fn pi_1_6_reports_pi_schemas_issues() {
    let mut wrong = Vec::new();
    for (name, schema, value, expected) in PI_SCHEMA_CASES {
        let schema: Value = serde_json::from_str(schema).expect("case schema is JSON");
        let value: Value = serde_json::from_str(value).expect("case value is JSON");
        let found: Vec<String> = match compile(&schema).validate_as(&value, PiProfile::V1_6) {
            Ok(()) => vec!["(valid)".to_owned()],
            Err(issues) => issues.iter().map(Issue::to_string).collect(),
        };
        if found != *expected {
            wrong.push(format!(
                "{name}:\n  expected {expected:?}\n  found    {found:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn pi_1_6_accepts_what_pi_schema_accepts() {
    // Valid for pi-schema 1.6.0 (checked the same way), some of them failing for TypeBox.
    let cases = [
        // A union whose tag is missing matches both untagged-required branches.
        (
            json!({"type":"object","properties":{"x":{"anyOf":[
                {"type":"object","properties":{"kind":{"const":"a"}}},
                {"type":"object","properties":{"kind":{"const":"b"}}}]}}}),
            json!({"x":{}}),
        ),
        // multipleOf is exact on decimals: 0.0075 / 0.0001 is 74.99999999999999.
        (
            one("x", json!({"multipleOf":0.0001}), true),
            json!({"x":0.0075}),
        ),
        (one("x", json!({"multipleOf":0.1}), true), json!({"x":0.3})),
        // Lengths count code points: two combining accents are four.
        (
            one("x", json!({"type":"string","minLength":4}), true),
            json!({"x":"e\u{301}e\u{301}"}),
        ),
        // `minContains: 0` makes an empty array fine.
        (
            one(
                "x",
                json!({"contains":{"type":"string"},"minContains":0}),
                true,
            ),
            json!({"x":[]}),
        ),
    ];
    for (schema, value) in cases {
        assert_eq!(
            compile(&schema).validate_as(&value, PiProfile::V1_6),
            Ok(()),
            "{schema} {value}"
        );
    }
}

#[test]
fn pi_1_6_multiple_of_is_exact_on_decimal_forms() {
    // pi-schema 1.6.0's `isMultiple` on the same pairs, run under Node.
    let cases = [
        (0.0075, 0.0001, true),
        (0.3, 0.1, true),
        (4.0, 2.0, true),
        // The quotient is infinite: `%` decides.
        (1e300, 1e-300, false),
        // The quotient underflows to 0, a whole number.
        (1e-300, 1e300, true),
        (1e-7, 3.0, false),
        (1.00000000001, 1e-10, false),
        (0.075, 0.01, false),
    ];
    for (number, divisor, multiple) in cases {
        assert_eq!(
            dialect::is_exact_multiple(number, divisor),
            multiple,
            "{number} / {divisor}"
        );
    }
}

/// The recorded Pi 1.6 cases that fail validation, with the built-ins' schemas recorded beside
/// them.
const PI_1_6_VALIDATION_CASES: [&str; 14] = [
    "C031", "C073", "C076", "C121", "P033", "P034", "P039", "P052", "P054", "P058", "P059", "P060",
    "P061", "P064",
];

#[test]
fn pi_1_6_recorded_validation_failures_are_reproduced() {
    let cases: Value =
        serde_json::from_str(include_str!("../../../../tests/fixtures/pi-1.6/cases.json"))
            .expect("cases.json is JSON");
    let tools: Value =
        serde_json::from_str(include_str!("../../../../tests/fixtures/pi-1.6/tools.json"))
            .expect("tools.json is JSON");
    let cases = cases["cases"].as_array().expect("a list of cases");
    for id in PI_1_6_VALIDATION_CASES {
        let case = cases
            .iter()
            .find(|case| case["id"] == id)
            .unwrap_or_else(|| panic!("{id} is recorded"));
        let tool = case["tool"].as_str().expect("a tool name");
        let schema = compile(&tools["tools"][tool]["definition"]["parameters"]);
        let arguments = &case["arguments"];
        let issues = schema
            .coerce_and_validate_as(arguments, PiProfile::V1_6)
            .expect_err(id);
        assert_eq!(
            failure_text(tool, &issues, arguments),
            case["pi"]["content"][0]["text"].as_str().expect("a text"),
            "{id}"
        );
        // Pi 0.85 words the same failure its own way.
        let old = schema.coerce_and_validate(arguments).expect_err(id);
        assert_ne!(old, issues, "{id}");
    }
}

#[test]
fn pi_1_6_built_in_schemas_report_every_issue() {
    // From pi-schema 1.6.0 (as above) on the recorded schemas of edit and grep.
    let tools: Value =
        serde_json::from_str(include_str!("../../../../tests/fixtures/pi-1.6/tools.json"))
            .expect("tools.json is JSON");
    let schema_of = |tool: &str| compile(&tools["tools"][tool]["definition"]["parameters"]);
    let lines = |schema: &ArgumentSchema, value: Value| -> Vec<String> {
        let issues = schema
            .validate_as(&value, PiProfile::V1_6)
            .expect_err("fails");
        issues.iter().map(Issue::to_string).collect()
    };
    assert_eq!(
        lines(
            &schema_of("edit"),
            json!({"path":1,"edits":[{"oldText":1},5,{"newText":"x","oldText":"y"},{}]})
        ),
        [
            "path: expected string, got integer",
            "edits.0.newText: missing",
            "edits.0.oldText: expected string, got integer",
            "edits.1: expected object, got integer",
            "edits.3.oldText: missing",
            "edits.3.newText: missing"
        ]
    );
    assert_eq!(
        lines(
            &schema_of("grep"),
            json!({"ignoreCase":"yes","context":"2","limit":null})
        ),
        [
            "pattern: missing",
            "ignoreCase: expected boolean, got string",
            "context: expected number, got string",
            "limit: expected number, got null"
        ]
    );
}

#[test]
fn both_profiles_share_the_coercion() {
    let schema = compile(&read_schema());
    let args = json!({"path":123,"offset":"5","limit":null});
    assert_eq!(
        schema.coerce_and_validate_as(&args, PiProfile::V1_6),
        schema.coerce_and_validate(&args)
    );
    assert_eq!(
        schema.coerce_and_validate_as(&args, PiProfile::V0_85),
        Ok(json!({"path":"123","offset":5}))
    );
}

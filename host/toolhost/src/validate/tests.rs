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
    let cases = json!([
        ["", 0],
        ["   ", 0],
        ["0x10", 16],
        ["0o17", 15],
        ["0b101", 5],
        ["1e3", 1000],
        [".5", 0.5],
        ["5.", 5],
        ["\u{a0}5\u{feff}", 5],
        ["TRUE", 1],
        ["false", 0],
        ["12n", 12],
        ["-12n", -12],
        [null, 0]
    ]);
    for case in cases.as_array().unwrap() {
        let (given, expected) = (&case[0], &case[1]);
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

/// `{name, schema, value, expected}`: each case's schema and value as JSON
/// text (kept as written: `1.0` is not `1`), and pi-schema 1.6.0's lines;
/// `(valid)` where pi-schema accepts the value.
const PI_SCHEMA_CASES: &str = include_str!("pi-schema-cases.json");

#[derive(serde::Deserialize)]
struct PiSchemaCase {
    name: String,
    schema: String,
    value: String,
    expected: Vec<String>,
}

#[test]
fn pi_1_6_reports_pi_schemas_issues() {
    let mut wrong = Vec::new();
    let cases: Vec<PiSchemaCase> = serde_json::from_str(PI_SCHEMA_CASES).expect("the cases");
    for PiSchemaCase {
        name,
        schema,
        value,
        expected,
    } in &cases
    {
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

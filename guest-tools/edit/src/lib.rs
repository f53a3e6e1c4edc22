//! The built-in `edit` tool (spec §1.8 with §1.4, §7.1, §7.2, §7.8–§7.10).
//!
//! Imports `fs-read` and `fs-write`. A call resolves its path, takes the
//! file's mutation lock (Pi's `withFileMutationQueue`, §1.4) and holds it
//! across read, match and write, so parallel edits of one file (through any
//! alias) all land while edits of other files run beside it. The write is
//! atomic (a temporary file renamed over the old one).
//!
//! The work itself is split by concern:
//! * [`text`]: BOM and line endings, in and out (§7.8);
//! * [`apply`]: exact, fuzzy ([`fuzzy`]) and indentation-tolerant
//!   ([`indent`]) matching of every edit against the original, then the
//!   replacements (§7.9);
//! * [`help`]: what a failed match adds after Pi's sentence (§7.10);
//! * [`diff`]: the `diff` and `patch` details, as Pi and jsdiff 8 make them.

mod apply;
mod diff;
mod fuzzy;
mod help;
mod indent;
mod text;

use apply::{Edit, Failure};
use text::Source;
use toolhost_sdk::args;
use toolhost_sdk::fs::{self, EntryKind, ErrorCode, FsError};
use toolhost_sdk::path::resolve_to_cwd;
use toolhost_sdk::pi::{self, Profile};
use toolhost_sdk::serde_json::{self, Map, Value, json};
use toolhost_sdk::{Context, Definition, Tool, ToolError, ToolOutput};

const SCHEMA: &str = r#"{"type":"object","required":["path","edits"],"properties":{"path":{"type":"string","description":"Path to the file to edit (relative or absolute)"},"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{"oldText":{"type":"string","description":"Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},"newText":{"type":"string","description":"Replacement text for this targeted edit."}}},"description":"One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."}}}"#;

const DESCRIPTION: &str = "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.";

/// Pi 0.85's guidelines.
const GUIDELINES_0_85: &[&str] = &[
    "Use edit for precise changes (edits[].oldText must match exactly)",
    "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls",
    "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
    "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
];

/// Pi 1.6's guidelines (docs/pi-1.6.md §3.4); the rest of the definition is unchanged.
const GUIDELINES_1_6: &[&str] = &[
    "Use edit for targeted changes. Batch changes to one file in a single call.",
    "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.",
];

fn guidelines(profile: Profile) -> &'static [&'static str] {
    match profile {
        Profile::V0_85 => GUIDELINES_0_85,
        Profile::V1_6 => GUIDELINES_1_6,
    }
}

/// Lines of context in the details' diffs.
const CONTEXT_LINES: usize = 4;

struct EditTool;

fn definition(profile: Profile) -> Definition {
    guidelines(profile).iter().fold(
        Definition::new("edit", "edit", DESCRIPTION, SCHEMA).prompt_snippet(
            "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
        ),
        |d, g| d.prompt_guideline(*g),
    )
}

impl Tool for EditTool {
    fn definition(&self) -> Definition {
        definition(pi::profile())
    }

    fn prepare_arguments(&self, args: Value) -> Result<Option<Value>, ToolError> {
        Ok(prepare(args))
    }

    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let raw = args::string(&args, "path");
        let edits = edits_of(&args)?;
        let abs = resolve_to_cwd(raw, &ctx.cwd, ctx.home.as_deref());

        // Held until this function returns: read, match and write happen
        // with no other mutation of this file in between.
        let _lock = fs::lock(&abs).map_err(|e| match e.code {
            // Pi keys its queue on the resolved path then, and its access
            // check reports the code.
            ErrorCode::NotFound | ErrorCode::NotADirectory => cannot_edit(&e, &abs, raw, ctx),
            _ => fail(&e, "realpath", &abs, raw, ctx),
        })?;
        ctx.check_cancelled()?;

        // Pi's `access(R_OK | W_OK)`: a read-only file is refused here.
        fs::access(&abs).map_err(|e| cannot_edit(&e, &abs, raw, ctx))?;
        let meta = fs::stat(&abs).map_err(|e| cannot_edit(&e, &abs, raw, ctx))?;
        ctx.check_cancelled()?;
        if meta.kind == EntryKind::Directory {
            // What Node's readFile says of a directory.
            return Err(ToolError::new(
                "EISDIR: illegal operation on a directory, read",
            ));
        }
        // The size is only a hint (the file may change); a huge one must not
        // reserve memory up front.
        let mut bytes = Vec::with_capacity(meta.size.min(fs::MAX_READ_CHUNK) as usize);
        fs::for_each_chunk(&abs, |chunk| {
            bytes.extend_from_slice(chunk);
            true
        })
        .map_err(|e| fail(&e, "open", &abs, raw, ctx))?;
        ctx.check_cancelled()?;

        let src = Source::decode(&bytes);
        drop(bytes);
        let chunks = apply::apply(&src, &edits).map_err(|f| failure_text(f, raw, &src, &edits))?;
        ctx.check_cancelled()?;

        fs::write_file(&abs, &src.encode(&chunks)).map_err(|e| fail(&e, "open", &abs, raw, ctx))?;
        // Pi looks once more after the write settles.
        ctx.check_cancelled()?;

        let new_lf = src.lf_text(&chunks);
        let parts = diff::diff_lines(&src.lf, &new_lf);
        let (display, first_changed) = diff::display_of(&src.lf, &new_lf, &parts, CONTEXT_LINES);
        let mut details = Map::new();
        details.insert("diff".into(), Value::String(display));
        details.insert(
            "patch".into(),
            Value::String(diff::patch_of(raw, &parts, CONTEXT_LINES)),
        );
        if let Some(line) = first_changed {
            details.insert("firstChangedLine".into(), json!(line));
        }
        Ok(ToolOutput::text(format!(
            "Successfully replaced {} block(s) in {raw}.",
            edits.len()
        ))
        .with_details(Value::Object(details)))
    }
}

toolhost_sdk::export_tools!(EditTool);

/// Pi's `prepareArguments` for legacy argument shapes (spec §1.8): `edits`
/// as JSON text or as one object, and top-level `oldText`/`newText` appended
/// as one more edit. `None` when nothing changes. (Unlike Pi, the caller's
/// stored arguments are never touched, spec §7.4.)
fn prepare(args: Value) -> Option<Value> {
    let Value::Object(mut obj) = args else {
        return None;
    };
    let mut changed = false;
    match obj.get("edits") {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(parsed @ Value::Array(_)) => {
                obj.insert("edits".into(), parsed);
                changed = true;
            }
            Ok(parsed) if is_pair(&parsed) => {
                obj.insert("edits".into(), Value::Array(vec![parsed]));
                changed = true;
            }
            _ => {}
        },
        Some(single) if is_pair(single) => {
            let single = single.clone();
            obj.insert("edits".into(), Value::Array(vec![single]));
            changed = true;
        }
        _ => {}
    }
    if let (Some(Value::String(old)), Some(Value::String(new))) =
        (obj.get("oldText"), obj.get("newText"))
    {
        let legacy = json!({ "oldText": old, "newText": new });
        let mut edits = match obj.get("edits") {
            Some(Value::Array(list)) => list.clone(),
            _ => Vec::new(),
        };
        edits.push(legacy);
        obj.shift_remove("oldText");
        obj.shift_remove("newText");
        // An existing `edits` key keeps its place; a new one goes last, as
        // with JavaScript's `{...rest, edits}`.
        obj.insert("edits".into(), Value::Array(edits));
        changed = true;
    }
    changed.then_some(Value::Object(obj))
}

/// `{oldText: string, newText: string}`.
fn is_pair(v: &Value) -> bool {
    v.get("oldText").is_some_and(Value::is_string) && v.get("newText").is_some_and(Value::is_string)
}

/// The validated edits, read as LF text.
fn edits_of(args: &Value) -> Result<Vec<Edit>, ToolError> {
    let list = args["edits"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if list.is_empty() {
        return Err(ToolError::new(
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ));
    }
    list.iter()
        .enumerate()
        .map(
            |(i, e)| match (e["oldText"].as_str(), e["newText"].as_str()) {
                (Some(old), Some(new)) => Ok(Edit {
                    old: text::to_lf(old),
                    new: text::to_lf(new),
                }),
                // Only reachable when a hook rewrote validated arguments.
                _ => Err(ToolError::new(format!(
                    "Edit tool input is invalid. edits[{i}] must have string oldText and newText."
                ))),
            },
        )
        .collect()
}

/// A failed filesystem operation, as Node (or the sandbox) would say it.
fn fail(err: &FsError, op: &str, abs: &str, raw: &str, ctx: &Context) -> ToolError {
    ToolError::new(fs::error_text(err, op, abs, raw, ctx))
}

/// Pi's text when the file cannot be accessed: the error code when there is
/// one, else the error itself.
fn cannot_edit(err: &FsError, abs: &str, raw: &str, ctx: &Context) -> ToolError {
    match err.code {
        ErrorCode::OutsideRoots | ErrorCode::Protected | ErrorCode::Cancelled => {
            fail(err, "access", abs, raw, ctx)
        }
        ErrorCode::Other => ToolError::new(format!(
            "Could not edit file: {raw}. Error: {}.",
            err.message
        )),
        code => ToolError::new(format!(
            "Could not edit file: {raw}. Error code: {}.",
            fs::node_code(code).0
        )),
    }
}

/// Pi's error texts for edits that cannot be applied; a match that failed
/// gets the §7.10 help after Pi's sentence.
fn failure_text(failure: Failure, path: &str, src: &Source, edits: &[Edit]) -> ToolError {
    let single = edits.len() == 1;
    let text = match failure {
        Failure::EmptyOldText { .. } if single => format!("oldText must not be empty in {path}."),
        Failure::EmptyOldText { index } => {
            format!("edits[{index}].oldText must not be empty in {path}.")
        }
        Failure::NotFound { index } => {
            let sentence = if single {
                format!(
                    "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                )
            } else {
                format!(
                    "Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines."
                )
            };
            sentence + &help::not_found(path, &src.lf, &edits[index].old)
        }
        Failure::Duplicate { index: _, count } if single => format!(
            "Found {count} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        ),
        Failure::Duplicate { index, count } => format!(
            "Found {count} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        ),
        Failure::Overlap { first, second } => format!(
            "edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or target disjoint regions."
        ),
        Failure::NoChange if single => format!(
            "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        ),
        Failure::NoChange => {
            format!("No changes made to {path}. The replacements produced identical content.")
        }
    };
    ToolError::new(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_is_pis_to_the_byte() {
        let d = definition(Profile::V0_85);
        let schema: Value = serde_json::from_str(d.parameters()).unwrap();
        assert_eq!(schema["required"], json!(["path", "edits"]));
        assert_eq!(d.guidelines().len(), 4);
        assert_eq!(d.name(), "edit");
        let d = definition(Profile::V1_6);
        assert_eq!(d.parameters(), SCHEMA);
        assert_eq!(
            d.guidelines()[0],
            "Use edit for targeted changes. Batch changes to one file in a single call."
        );
        assert_eq!(d.guidelines().len(), 2);
    }

    #[test]
    fn prepare_rewrites_the_legacy_shapes() {
        let p = |v: Value| prepare(v);
        // edits as JSON text: an array, or one object.
        assert_eq!(
            p(json!({"path":"f","edits":"[{\"oldText\":\"a\",\"newText\":\"b\"}]"})),
            Some(json!({"path":"f","edits":[{"oldText":"a","newText":"b"}]}))
        );
        assert_eq!(
            p(json!({"path":"f","edits":"{\"oldText\":\"a\",\"newText\":\"b\"}"})),
            Some(json!({"path":"f","edits":[{"oldText":"a","newText":"b"}]}))
        );
        // edits as one object.
        assert_eq!(
            p(json!({"path":"f","edits":{"oldText":"a","newText":"b"}})),
            Some(json!({"path":"f","edits":[{"oldText":"a","newText":"b"}]}))
        );
        // Legacy top-level fields go after the edits, and the keys keep
        // their order (edits stays where it was).
        let out = p(
            json!({"edits":[{"oldText":"a","newText":"A"}],"path":"f","oldText":"c","newText":"C"}),
        )
        .unwrap();
        assert_eq!(
            out.to_string(),
            r#"{"edits":[{"oldText":"a","newText":"A"},{"oldText":"c","newText":"C"}],"path":"f"}"#
        );
        assert_eq!(
            p(json!({"oldText":"c","newText":"C","path":"f"}))
                .unwrap()
                .to_string(),
            r#"{"path":"f","edits":[{"oldText":"c","newText":"C"}]}"#
        );
        // A string that is not JSON is dropped when legacy fields replace it.
        assert_eq!(
            p(json!({"path":"f","edits":"nope","oldText":"c","newText":"C"})),
            Some(json!({"path":"f","edits":[{"oldText":"c","newText":"C"}]}))
        );
    }

    #[test]
    fn prepare_leaves_other_shapes_alone() {
        for v in [
            json!(null),
            json!("text"),
            json!([1, 2]),
            json!({"path":"f","edits":"not json"}),
            json!({"path":"f","edits":"42"}),
            json!({"path":"f","edits":{"oldText":"a"}}),
            json!({"path":"f","edits":[],"oldText":"c","newText":1}),
        ] {
            assert_eq!(prepare(v.clone()), None, "{v}");
        }
    }

    #[test]
    fn failure_texts_are_pis() {
        let src = Source::decode(b"abc");
        let one = [Edit {
            old: "zzz".into(),
            new: "y".into(),
        }];
        let text = failure_text(Failure::NotFound { index: 0 }, "f.txt", &src, &one);
        let first = text.message().lines().next().unwrap();
        assert_eq!(
            first,
            "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
        );
        let two = [one[0].clone(), one[0].clone()];
        assert_eq!(
            failure_text(
                Failure::Duplicate { index: 1, count: 2 },
                "f.txt",
                &src,
                &two
            )
            .message(),
            "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."
        );
        assert_eq!(
            failure_text(Failure::EmptyOldText { index: 0 }, "f.txt", &src, &one).message(),
            "oldText must not be empty in f.txt."
        );
        assert_eq!(
            failure_text(Failure::NoChange, "f.txt", &src, &two).message(),
            "No changes made to f.txt. The replacements produced identical content."
        );
    }

    /// Edits run through Pi 0.85.0's own pipeline (see
    /// `tests/gen-pi-vectors.mjs`): written bytes, diff, patch and first
    /// changed line, or the error, must be the same here. Where a match
    /// fails, Pi's sentence is the first line and §7.10's help follows.
    #[test]
    fn agrees_with_pi_on_recorded_edits() {
        let cases: Value = serde_json::from_str(include_str!("../tests/pi-vectors.json")).unwrap();
        let cases = cases.as_array().unwrap();
        assert_eq!(cases.len(), 300);
        for (i, case) in cases.iter().enumerate() {
            let file = case["file"].as_str().unwrap();
            let edits: Vec<Edit> = case["edits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| Edit {
                    old: text::to_lf(e[0].as_str().unwrap()),
                    new: text::to_lf(e[1].as_str().unwrap()),
                })
                .collect();
            let src = Source::decode(file.as_bytes());
            let pi = &case["pi"];
            match apply::apply(&src, &edits) {
                Ok(chunks) => {
                    assert!(
                        pi.get("error").is_none(),
                        "case {i}: Pi failed with {}",
                        pi["error"]
                    );
                    let new_lf = src.lf_text(&chunks);
                    let (display, first) = diff::display(&src.lf, &new_lf, 4);
                    let written = String::from_utf8(src.encode(&chunks)).unwrap();
                    assert_eq!(written, pi["written"], "case {i}: written");
                    assert_eq!(display, pi["diff"], "case {i}: diff");
                    assert_eq!(
                        diff::patch("f.txt", &src.lf, &new_lf, 4),
                        pi["patch"],
                        "case {i}: patch"
                    );
                    assert_eq!(
                        first,
                        pi["firstChangedLine"].as_u64().map(|n| n as usize),
                        "case {i}"
                    );
                }
                Err(failure) => {
                    let not_found = matches!(failure, Failure::NotFound { .. });
                    let text = failure_text(failure, "f.txt", &src, &edits)
                        .message()
                        .to_string();
                    let want = pi["error"]
                        .as_str()
                        .unwrap_or_else(|| panic!("case {i}: Pi succeeded, here: {text}"));
                    if not_found {
                        let mut lines = text.lines();
                        assert_eq!(lines.next(), Some(want), "case {i}");
                        assert!(
                            lines
                                .next()
                                .unwrap()
                                .starts_with("Fuzzy matching was tried too"),
                            "case {i}"
                        );
                    } else {
                        assert_eq!(text, want, "case {i}");
                    }
                }
            }
        }
    }
}

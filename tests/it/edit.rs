//! Tests of the `edit` built-in(s); see the spec's §1 and §7 decisions.
//!
//! The shared cases pin Pi's texts and details; the tests below pin the §7
//! decisions (8: line endings, 9: matching, 10: the not-found help), the
//! mutation lock (§1.4: a hundred parallel edits of one file all land, edits
//! of different files run side by side), the legacy argument shapes and the
//! filesystem errors.

use crate::support::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost::backend::fs::{FsWrite, LocalFs, MutationLock, lock_file};
use toolhost::{AssistantMessage, CancellationToken, Event, EventSink, Host, ToolResultMessage};

#[test]
fn edit_cases_match_pi() {
    crate::cases::run_cases("edit", 12);
}

fn edit(host: &toolhost::Host, path: &str, pairs: &[(&str, &str)]) -> ToolResultMessage {
    let edits: Vec<Value> = pairs
        .iter()
        .map(|(o, n)| json!({"oldText": o, "newText": n}))
        .collect();
    call(host, "edit", json!({"path": path, "edits": edits}))
}

/// A host on a fresh workspace holding `path` with `text`.
fn with_file(path: &str, text: &str) -> (Workspace, Host) {
    let ws = Workspace::new();
    ws.write(path, text);
    let host = host(&ws);
    (ws, host)
}

/// [`with_file`], then `edit` of `path` with `pairs`: the workspace, the
/// host and the result.
fn edited(path: &str, text: &str, pairs: &[(&str, &str)]) -> (Workspace, Host, ToolResultMessage) {
    let (ws, host) = with_file(path, text);
    let r = edit(&host, path, pairs);
    (ws, host, r)
}

#[track_caller]
fn read(ws: &Workspace, rel: &str) -> String {
    String::from_utf8(std::fs::read(ws.path.join(rel)).unwrap()).unwrap()
}

#[track_caller]
fn ok(r: &ToolResultMessage) {
    assert!(!r.is_error, "unexpected error: {}", r.text());
}

#[test]
fn decision_8_untouched_lines_keep_their_own_endings() {
    let (ws, host, r) = edited(
        "f.txt",
        "one\r\ntwo\nthree\r\nfour\rfive\n",
        &[("three\n", "3\nTHREE\n")],
    );
    ok(&r);
    // Pi would write every break as CRLF (the first line's ending) and read
    // the lone CR as a break (spec §5 bug 10). The edited line takes its own
    // line's ending; the others keep theirs; the lone CR stays a character.
    assert_eq!(read(&ws, "f.txt"), "one\r\ntwo\n3\r\nTHREE\r\nfour\rfive\n");
    // The details describe the LF text, with the lone CR inside its line.
    let details = r.details.unwrap();
    assert_eq!(
        details["patch"],
        "--- f.txt\n+++ f.txt\n@@ -1,4 +1,5 @@\n one\n two\n-three\n+3\n+THREE\n four\rfive\n"
    );
    assert_eq!(details["firstChangedLine"], 3);

    // A lone CR is not a line break: text across it must name the CR.
    let r = edit(&host, "f.txt", &[("four\nfive", "x")]);
    assert!(r.is_error);
    assert!(
        r.text()
            .starts_with("Could not find the exact text in f.txt.")
    );
    ok(&edit(&host, "f.txt", &[("four\rfive", "4 5")]));
    assert_eq!(read(&ws, "f.txt"), "one\r\ntwo\n3\r\nTHREE\r\n4 5\n");
}

#[test]
fn decision_9_exact_matches_are_unique_on_their_own_text() {
    // "x  " normalises to "x" too, so Pi counts two occurrences (bug 12).
    let (ws, host, r) = edited("f.txt", "x\nx  \n", &[("x\n", "y\n")]);
    ok(&r);
    assert_eq!(read(&ws, "f.txt"), "y\nx  \n");
    // Two exact occurrences are still two.
    ws.write("g.txt", "a\na\n");
    let r = edit(&host, "g.txt", &[("a", "b")]);
    assert_eq!(
        r.text(),
        "Found 2 occurrences of the text in g.txt. The text must be unique. Please provide more context to make it unique."
    );
}

#[test]
fn decision_9_fuzzy_matching_tolerates_indentation() {
    // The model wrote spaces where the file has tabs (bug 11).
    let (ws, host, r) = edited(
        "f.rs",
        "fn main() {\n\tif ready {\n\t\tgo();\n\t}\n}\n",
        &[(
            "    if ready {\n        go();\n    }\n",
            "    if ready {\n        go();\n        stop();\n    }\n",
        )],
    );
    ok(&r);
    assert_eq!(r.text(), "Successfully replaced 1 block(s) in f.rs.");
    // The replacement follows the file's indentation.
    assert_eq!(
        read(&ws, "f.rs"),
        "fn main() {\n\tif ready {\n\t\tgo();\n\t\tstop();\n\t}\n}\n"
    );
    assert_eq!(r.details.unwrap()["firstChangedLine"], 4);

    // Only when it is unique: two regions that differ only in indentation
    // from the oldText are reported as occurrences, and nothing is written.
    ws.write("g.py", "if a:\n\tx = 1\nif b:\n\tx = 1\n");
    let r = edit(&host, "g.py", &[("  x = 1\n", "  x = 2\n")]);
    assert_eq!(
        r.text(),
        "Found 2 occurrences of the text in g.py. The text must be unique. Please provide more context to make it unique."
    );
    assert_eq!(read(&ws, "g.py"), "if a:\n\tx = 1\nif b:\n\tx = 1\n");
}

#[test]
fn decision_10_a_failed_match_says_what_was_tried_and_shows_the_closest_region() {
    let file = "fn main() {\n    let total = compute(1, 2);\n    println!(\"{}\", total);\n}\n";
    let (ws, host, r) = edited(
        "f.rs",
        file,
        &[(
            "    let total = compute(1, 3);\n    println!(\"{}\", total);",
            "x",
        )],
    );
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        "Could not find the exact text in f.rs. The old text must match exactly including all whitespace and newlines.\n\
         Fuzzy matching was tried too (ignoring trailing whitespace, indentation and Unicode quote, dash and space variants) and found nothing.\n\
         The closest region of f.rs (lines 1-4):\n\
         1: fn main() {\n\
         2:     let total = compute(1, 2);\n\
         3:     println!(\"{}\", total);\n\
         4: }"
    );
    assert_eq!(r.details, Some(json!({})));
    assert_eq!(read(&ws, "f.rs"), file, "nothing is written");

    // With several edits the first line names the edit, as Pi does.
    let r = edit(
        &host,
        "f.rs",
        &[("fn main", "fn start"), ("compute(9", "x")],
    );
    let text = r.text();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "Could not find edits[1] in f.rs. The oldText must match exactly including all whitespace and newlines."
    );
    assert!(
        lines.any(|l| l == "2:     let total = compute(1, 2);"),
        "{text}"
    );
    assert_eq!(read(&ws, "f.rs"), file, "all or nothing");
}

#[test]
fn a_hundred_parallel_edits_of_one_file_all_land() {
    let ws = Workspace::new();
    let host = host(&ws);
    let n = 100;
    let original: String = (0..n).map(|i| format!("item-{i:03}\n")).collect();
    ws.write("f.txt", &original);
    let calls = (0..n)
        .map(|i| {
            tool_call(
                &format!("c{i}"),
                "edit",
                json!({"path": "f.txt", "edits": [{"oldText": format!("item-{i:03}\n"), "newText": format!("ITEM-{i:03}\n")}]}),
            )
        })
        .collect();
    let (outcome, events) = run(
        &host,
        &AssistantMessage::from_calls(calls),
        CancellationToken::new(),
    );
    assert_eq!(outcome.results.len(), n);
    for r in &outcome.results {
        assert_eq!(r.text(), "Successfully replaced 1 block(s) in f.txt.");
    }
    // One batch in parallel mode: every start comes before the first end.
    let lines = events.lines();
    let first_end = lines.iter().position(|l| l.starts_with("end")).unwrap();
    assert_eq!(first_end, n, "all {n} calls start before any ends");
    // No update was lost: each call saw the file as the one before left it.
    assert_eq!(read(&ws, "f.txt"), original.to_uppercase());
}

/// Records the order of end events and, when call `release_on` ends, drops
/// a held lock, noting whether it was still held then and what the locked
/// file held at that moment.
struct ReleaseOnEnd {
    release_on: &'static str,
    held: Mutex<Option<MutationLock>>,
    locked_file: std::path::PathBuf,
    released_by_event: Mutex<bool>,
    locked_file_then: Mutex<Option<String>>,
    order: Mutex<Vec<String>>,
}

impl EventSink for ReleaseOnEnd {
    fn emit(&self, event: Event) {
        if let Event::ToolExecutionEnd { tool_call_id, .. } = &event {
            self.order.lock().unwrap().push(tool_call_id.clone());
            if tool_call_id == self.release_on {
                *self.locked_file_then.lock().unwrap() =
                    std::fs::read_to_string(&self.locked_file).ok();
                let lock = self.held.lock().unwrap().take();
                *self.released_by_event.lock().unwrap() = lock.is_some();
            }
        }
    }
}

#[test]
fn edits_of_different_files_run_side_by_side_and_aliases_share_a_lock() {
    let ws = Workspace::new();
    let host = host(&ws);
    ws.write("a.txt", "alpha\n");
    ws.write("b.txt", "beta\n");
    ws.symlink("alias.txt", ws.path.join("a.txt"));

    // Hold a.txt's mutation lock from outside, as an embedder would.
    let backend = LocalFs::new(std::slice::from_ref(&ws.path)).unwrap();
    let key = backend
        .lock_key(ws.path.join("a.txt").to_str().unwrap())
        .unwrap();
    let held = block(lock_file(key, &CancellationToken::new())).unwrap();
    let sink = Arc::new(ReleaseOnEnd {
        release_on: "c2",
        held: Mutex::new(Some(held)),
        locked_file: ws.path.join("a.txt"),
        released_by_event: Mutex::new(false),
        locked_file_then: Mutex::new(None),
        order: Mutex::new(Vec::new()),
    });
    // If the calls were serialised, c1 (first in the batch) would wait for
    // the lock forever and c2 would never end to release it. So that such a
    // bug fails the test instead of hanging it, the lock is also released
    // after a minute; the assertions below then fail.
    let fallback = sink.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(60));
        fallback.held.lock().unwrap().take();
    });

    let batch = AssistantMessage::from_calls(vec![
        // Through the symlink: the same file, so the same lock.
        tool_call(
            "c1",
            "edit",
            json!({"path": "alias.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}),
        ),
        tool_call(
            "c2",
            "edit",
            json!({"path": "b.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}),
        ),
    ]);
    let outcome = block(host.batch(&batch).events(sink.clone()).into_future());
    for r in &outcome.results {
        ok(r);
    }
    // c2 finished while a.txt was still locked, so it did not wait for c1;
    // c1 finished only after the lock was let go, so it waited for it.
    assert!(
        *sink.released_by_event.lock().unwrap(),
        "the lock was still held when c2 ended"
    );
    assert_eq!(*sink.order.lock().unwrap(), ["c2", "c1"]);
    assert_eq!(
        sink.locked_file_then.lock().unwrap().as_deref(),
        Some("alpha\n"),
        "nothing wrote a.txt while its lock was held elsewhere"
    );
    assert_eq!(read(&ws, "a.txt"), "ALPHA\n");
    assert_eq!(read(&ws, "b.txt"), "BETA\n");
    assert!(
        std::fs::symlink_metadata(ws.path.join("alias.txt"))
            .unwrap()
            .is_symlink(),
        "the edit went through the link, which stays a link"
    );
}

#[test]
fn legacy_argument_shapes_are_prepared_and_events_keep_what_the_model_sent() {
    let (ws, host) = with_file("f.txt", "one two three four\n");
    let shapes = [
        json!({"path": "f.txt", "oldText": "one", "newText": "1"}),
        json!({"path": "f.txt", "edits": "[{\"oldText\":\"two\",\"newText\":\"2\"}]"}),
        json!({"path": "f.txt", "edits": "{\"oldText\":\"three\",\"newText\":\"3\"}"}),
        json!({"path": "f.txt", "edits": {"oldText": "four", "newText": "4"}}),
    ];
    for (i, args) in shapes.iter().enumerate() {
        let (outcome, events) = run_one(&host, "edit", args.clone());
        assert_eq!(
            outcome.results[0].text(),
            "Successfully replaced 1 block(s) in f.txt.",
            "shape {i}"
        );
        // §7.4: the start event shows the arguments as sent.
        let events = events.events.lock().unwrap();
        let Event::ToolExecutionStart { args: shown, .. } = &events[0] else {
            panic!("the first event is the start")
        };
        assert_eq!(shown, args, "shape {i}");
    }
    assert_eq!(read(&ws, "f.txt"), "1 2 3 4\n");
}

#[test]
fn multiple_edits_apply_against_the_original_and_report_all_blocks() {
    let (ws, host, r) = edited("f.txt", "a\nb\nc\n", &[("c", "b"), ("b", "a"), ("a", "c")]);
    ok(&r);
    assert_eq!(r.text(), "Successfully replaced 3 block(s) in f.txt.");
    assert_eq!(read(&ws, "f.txt"), "c\na\nb\n");
    assert_eq!(
        r.details.unwrap(),
        // jsdiff sees a rotation: one line added in front, one removed at the end.
        json!({"diff": "+1 c\n 1 a\n 2 b\n-3 c", "patch": "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n+c\n a\n b\n-c\n", "firstChangedLine": 1})
    );
    let r = edit(&host, "f.txt", &[("c\na", "x"), ("a\nb", "y")]);
    assert_eq!(
        r.text(),
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."
    );
}

#[test]
fn bom_is_kept_and_not_matched() {
    let (ws, _host, r) = edited("f.txt", "\u{FEFF}first\r\nsecond\r\n", &[("first", "1st")]);
    ok(&r);
    assert_eq!(read(&ws, "f.txt"), "\u{FEFF}1st\r\nsecond\r\n");
}

#[test]
fn filesystem_errors_keep_pis_texts() {
    let ws = Workspace::new();
    let host = host(&ws);
    std::fs::create_dir(ws.path.join("dir")).unwrap();
    ws.write("f.txt", "abc");
    // A link whose target is outside the workspace is refused like a path.
    let elsewhere = Workspace::new();
    elsewhere.write("secret.txt", "a");
    ws.symlink("out.txt", elsewhere.path.join("secret.txt"));
    let cases = [
        (
            "nope.txt",
            "Could not edit file: nope.txt. Error code: ENOENT.",
        ),
        (
            "missing/f.txt",
            "Could not edit file: missing/f.txt. Error code: ENOENT.",
        ),
        (
            "f.txt/x",
            "Could not edit file: f.txt/x. Error code: ENOTDIR.",
        ),
        ("dir", "EISDIR: illegal operation on a directory, read"),
        ("../x.txt", "Path is outside the workspace: ../x.txt"),
        ("out.txt", "Path is outside the workspace: out.txt"),
    ];
    for (path, want) in cases {
        let r = edit(&host, path, &[("a", "b")]);
        assert!(r.is_error, "{path}");
        assert_eq!(r.text(), want);
    }
    assert_eq!(read(&elsewhere, "secret.txt"), "a");
    let r = call(&host, "edit", json!({"path": "f.txt", "edits": []}));
    assert_eq!(
        r.text(),
        "Edit tool input is invalid. edits must contain at least one replacement."
    );
}

#[test]
fn a_cancelled_edit_writes_nothing() {
    let (ws, host) = with_file("f.txt", "abc");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let batch = AssistantMessage::from_calls(vec![tool_call(
        "c1",
        "edit",
        json!({"path": "f.txt", "edits": [{"oldText": "b", "newText": "x"}]}),
    )]);
    let (outcome, _) = run(&host, &batch, cancel);
    assert_eq!(outcome.results[0].text(), "Operation aborted");
    assert_eq!(read(&ws, "f.txt"), "abc");
}

/// Cancels the batch when call `on` ends.
struct CancelOnEnd {
    on: &'static str,
    cancel: CancellationToken,
}

impl EventSink for CancelOnEnd {
    fn emit(&self, event: Event) {
        if let Event::ToolExecutionEnd { tool_call_id, .. } = &event
            && tool_call_id == self.on
        {
            self.cancel.cancel();
        }
    }
}

#[test]
fn an_edit_waiting_for_its_files_lock_is_cancelled_as_aborted() {
    let ws = Workspace::new();
    let host = host(&ws);
    ws.write("a.txt", "alpha\n");
    let backend = LocalFs::new(std::slice::from_ref(&ws.path)).unwrap();
    let key = backend
        .lock_key(ws.path.join("a.txt").to_str().unwrap())
        .unwrap();
    // Held for the whole batch: c1 cannot get past it, only be cancelled.
    let held = block(lock_file(key, &CancellationToken::new())).unwrap();
    let cancel = CancellationToken::new();
    let sink = Arc::new(CancelOnEnd {
        on: "c2",
        cancel: cancel.clone(),
    });
    let batch = AssistantMessage::from_calls(vec![
        tool_call(
            "c1",
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}),
        ),
        tool_call("c2", "fast", json!({})),
    ]);
    let outcome = block(host.batch(&batch).cancel(cancel).events(sink).into_future());
    drop(held);
    assert_eq!(outcome.results[0].text(), "Operation aborted");
    assert!(outcome.results[0].is_error);
    assert_eq!(outcome.results[1].text(), "fast done");
    assert_eq!(read(&ws, "a.txt"), "alpha\n");
}

/// `toolhost call TOOL ARGS` as a user whose writes the file permissions
/// decide: `nobody` when the tests run as root (root may write any file),
/// else the user running them. Returns whether it succeeded, and its output.
fn call_unprivileged(ws: &Workspace, tool: &str, args: Value) -> (bool, String) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let home = tempfile::tempdir().unwrap();
    for dir in [&ws.path, &home.path().to_path_buf()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mut cmd = std::process::Command::new(toolhost_bin());
    cmd.arg("--workspace")
        .arg(&ws.path)
        .args(["call", tool, &args.to_string()])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("TOOLHOST_CACHE_DIR", home.path().join("cache"));
    // The workspace was created by this process: its owner is who we are.
    if std::fs::metadata(&ws.path).unwrap().uid() == 0 {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_read_only_file_is_refused_by_edit_and_write_as_in_pi() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    let ro = ws.write("ro.txt", "keep me\n");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let rw = ws.write("rw.txt", "change me\n");
    std::fs::set_permissions(&rw, std::fs::Permissions::from_mode(0o666)).unwrap();
    let edit = |path: &str| json!({"path": path, "edits": [{"oldText": "me", "newText": "you"}]});

    // Pi's edit checks access(R_OK | W_OK) before anything else.
    assert_eq!(
        call_unprivileged(&ws, "edit", edit("ro.txt")),
        (
            false,
            "Could not edit file: ro.txt. Error code: EACCES.\n".to_string()
        )
    );
    // Pi's write opens the file and fails; the rename must not replace it.
    let (ok, text) = call_unprivileged(&ws, "write", json!({"path": "ro.txt", "content": "x"}));
    assert_eq!(
        (ok, text),
        (
            false,
            format!("EACCES: permission denied, open '{}'\n", ro.display())
        )
    );
    assert_eq!(read(&ws, "ro.txt"), "keep me\n");
    let mode = std::fs::metadata(&ro).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o444);

    // The same user may edit and write a file it may write.
    let (ok, text) = call_unprivileged(&ws, "edit", edit("rw.txt"));
    assert!(ok, "{text}");
    assert_eq!(read(&ws, "rw.txt"), "change you\n");
    let (ok, text) = call_unprivileged(&ws, "write", json!({"path": "rw.txt", "content": "x"}));
    assert!(ok, "{text}");
    assert_eq!(read(&ws, "rw.txt"), "x");
}

//! Containment: crashes, deadlines, memory, stack, path escapes and
//! ungranted imports each end in a specific error, and the host keeps serving.

use crate::support::*;
use serde_json::{Value, json};
use toolhost::Host;

fn limited(ws: &Workspace, secs: u64, mib: usize) -> Host {
    built(builder(ws).extensions(|e| e.limits(limits(secs, mib))))
}

/// Calling `name` with `args` fails with exactly `text`.
#[track_caller]
fn assert_fails(host: &Host, name: &str, args: Value, text: &str) {
    let r = call(host, name, args);
    assert_eq!((r.text().as_str(), r.is_error), (text, true), "{name}");
}

#[test]
fn a_panicking_guest_is_an_error_result_and_the_next_call_works() {
    let ws = Workspace::new();
    let host = host(&ws);
    let r = call(&host, "crash", json!({}));
    assert!(r.is_error);
    let text = r.text();
    // The trap, then the guest's own panic message from its stderr.
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("Tool crash crashed: wasm `unreachable` instruction executed")
    );
    assert!(
        lines
            .next()
            .unwrap()
            .contains("panicked at testkit/src/lib.rs"),
        "{text}"
    );
    assert_eq!(lines.next(), Some("testkit crash requested"));
    assert_eq!(lines.next(), None, "no backtrace hint: {text}");
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
}

#[test]
fn a_guest_spinning_or_blocked_in_a_host_call_is_stopped_at_its_deadline() {
    let ws = Workspace::new();
    let host = limited(&ws, 1, 64);
    for (tool, args) in [("spin", json!({})), ("sleepy", json!({"ms": 60000}))] {
        let stopped = format!("Tool {tool} timed out after 1 seconds and was stopped");
        assert_fails(&host, tool, args, &stopped);
        assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
    }
}

#[test]
fn memory_growth_past_the_limit_is_stopped() {
    let ws = Workspace::new();
    let host = limited(&ws, 30, 32);
    assert_fails(
        &host,
        "hog",
        json!({"mb": 200}),
        "Tool hog exceeded its memory limit of 32 MiB and was stopped",
    );
    assert_eq!(call(&host, "hog", json!({"mb": 4})).text(), "held 4 MiB");
}

#[test]
fn deep_recursion_overflows_the_stack_into_a_trap() {
    let ws = Workspace::new();
    let host = host(&ws);
    // Recursion on the wasm call stack hits wasmtime's stack limit.
    assert_fails(
        &host,
        "recurse",
        json!({"depth": 100000000}),
        "Tool recurse crashed: call stack exhausted",
    );
    // Recursion with frames in linear memory runs off the guest's own stack.
    assert_fails(
        &host,
        "recurse",
        json!({"depth": 100000000, "frames": true}),
        "Tool recurse crashed: out of bounds memory access",
    );
    assert_eq!(
        call(&host, "recurse", json!({"depth": 10})).text(),
        "depth 10"
    );
}

#[test]
fn reads_cannot_leave_the_workspace() {
    let outside = Workspace::new();
    let secret = outside.write("secret.txt", "top secret");
    let ws = Workspace::new();
    ws.write("inside.txt", "fine");
    ws.symlink("link-out", &secret);
    let name = outside.name();
    ws.symlink("rel-out", format!("../{name}/secret.txt"));
    std::fs::create_dir(ws.path.join("dir")).unwrap();
    ws.symlink("dir/up", "..");
    ws.symlink("dir/out", "../..");
    let host = host(&ws);
    let dotdot = format!("../{name}/secret.txt");
    let through_dir = format!("dir/out/{name}/secret.txt");
    let absolute = secret.to_str().unwrap().to_string();
    for raw in [
        dotdot.as_str(),
        absolute.as_str(),
        "link-out",
        "rel-out",
        through_dir.as_str(),
        "/etc/passwd",
        "~/.bashrc",
    ] {
        let r = call(&host, "read", json!({"path": raw}));
        assert!(r.is_error, "{raw} must be refused");
        assert_eq!(
            r.text(),
            format!("Path is outside the workspace: {raw}"),
            "{raw}"
        );
        assert!(!r.text().contains("top secret"));
    }
    for raw in [dotdot.as_str(), "link-out"] {
        let r = call(&host, "ls", json!({"path": raw}));
        assert!(r.is_error);
        assert_eq!(r.text(), format!("Path is outside the workspace: {raw}"));
    }
    // Links that stay inside work, absolute or relative.
    ws.symlink("abs-in", ws.path.join("inside.txt"));
    assert_eq!(
        call(&host, "read", json!({"path": "abs-in"})).text(),
        "fine"
    );
    assert_eq!(
        call(&host, "read", json!({"path": "dir/up/inside.txt"})).text(),
        "fine"
    );
    let abs = ws.path.join("inside.txt");
    assert_eq!(
        call(&host, "read", json!({"path": abs.to_str().unwrap()})).text(),
        "fine"
    );
}

#[test]
fn a_component_importing_an_ungranted_capability_is_refused_at_load() {
    let ws = Workspace::new();
    let host = built(builder(&ws).extensions(|e| e.load(toolhost_tests::FSPROBE)));
    let diagnostics: Vec<String> = host.diagnostics().iter().map(|d| d.to_string()).collect();
    assert_eq!(
        diagnostics,
        [format!(
            "{}: imports toolhost:tool/fs-read@0.4.0 (read files), which is not granted to it; \
             grant it in toolhost.toml: [extensions.fsprobe] fs-read = [\"<directory>\"]",
            toolhost_tests::FSPROBE
        )]
    );
    assert!(host.tools().iter().all(|t| t.definition.name != "probe"));
    assert_eq!(
        call(&host, "fast", json!({})).text(),
        "fast done",
        "the other extension loads"
    );
}

#[test]
fn a_broken_extension_file_is_reported_and_the_rest_loads() {
    let ws = Workspace::new();
    let junk = ws.write("junk.wasm", "not wasm at all");
    let missing = ws.path.join("missing.wasm");
    let host = built(builder(&ws).extensions(|e| e.load(&junk).load(&missing)));
    let d = host.diagnostics();
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(d[0].path, junk.display().to_string());
    assert!(
        d[0].message
            .starts_with("not WebAssembly: it begins with 6e 6f 74 20 where a component"),
        "{}",
        d[0].message
    );
    assert!(
        d[1].message.starts_with("cannot be read:"),
        "{}",
        d[1].message
    );
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
}

#[test]
fn name_collisions_are_reported_and_the_first_extension_wins() {
    let ws = Workspace::new();
    // The same component under another name: every tool name collides.
    let copy = ws.write("copy.wasm", std::fs::read(toolhost_tests::TESTKIT).unwrap());
    let host = built(builder(&ws).extensions(|e| e.load(&copy)));
    let d = host.diagnostics();
    assert!(!d.is_empty());
    assert_eq!(d[0].path, copy.display().to_string());
    assert_eq!(
        d[0].message,
        format!(
            "tool echo is ignored: {} already provides it",
            toolhost_tests::TESTKIT
        )
    );
    let echo = host
        .tools()
        .into_iter()
        .find(|t| t.definition.name == "echo")
        .unwrap();
    assert_eq!(
        echo.source,
        toolhost::ToolSource::Extension {
            path: toolhost_tests::TESTKIT.into()
        }
    );
}

#[test]
fn the_built_ins_run_unchanged_on_an_in_memory_filesystem() {
    use toolhost::backend::fs::MemoryNode;
    // The workspace directory must exist on disk; the tools never touch it.
    let ws = Workspace::new();
    let root = ws.str();
    let memory = memory_fs(&ws, &[("notes/today.txt", "one\ntwo\nthree"), ("B.md", "")]);
    memory.insert(
        &format!("{root}/link"),
        MemoryNode::Symlink(format!("{root}/notes")),
    );
    memory.insert(
        &format!("{root}/escape"),
        MemoryNode::Symlink("/etc".into()),
    );
    let host = memory_host(&ws, memory);
    let r = call(
        &host,
        "read",
        json!({"path": "link/today.txt", "offset": 2}),
    );
    assert_eq!((r.text().as_str(), r.is_error), ("two\nthree", false));
    assert_eq!(call(&host, "ls", json!({})).text(), "B.md\nlink/\nnotes/");
    assert_fails(
        &host,
        "ls",
        json!({"path": "escape"}),
        "Path is outside the workspace: escape",
    );
    // Nothing was written to the real directory.
    assert_eq!(std::fs::read_dir(&ws.path).unwrap().count(), 0);
}

//! The `write` built-in: Pi's cases, and the §7.11 decision (atomic, keeps
//! permissions), confinement and the mutation lock.

use crate::support::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use toolhost::{AssistantMessage, CancellationToken};

#[test]
fn write_cases_match_pi() {
    crate::cases::run_cases("write", 3);
}

#[test]
fn writes_create_parents_and_keep_permissions() {
    let ws = Workspace::new();
    let script = ws.write("bin/run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let host = host(&ws);
    let r = call(
        &host,
        "write",
        json!({"path": "bin/run.sh", "content": "#!/bin/sh\necho new\n"}),
    );
    assert_eq!(
        (r.text().as_str(), r.is_error),
        ("Successfully wrote to bin/run.sh", false)
    );
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho new\n"
    );
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750, "§7.11: the file keeps its permissions");

    let r = write_ok(&host, "deep/er/new.txt", "x");
    assert_eq!(ws.read("deep/er/new.txt"), "x");
    assert_eq!(r.details, None);
}

#[test]
fn writing_a_directory_is_pis_eisdir() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path.join("d")).unwrap();
    let host = host(&ws);
    let r = call(&host, "write", json!({"path": "d", "content": "x"}));
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        format!(
            "EISDIR: illegal operation on a directory, open '{}/d'",
            ws.str()
        )
    );
}

#[test]
fn writes_cannot_leave_the_workspace() {
    let outside = Workspace::new();
    let ws = Workspace::new();
    ws.symlink("out", &outside.path);
    let host = host(&ws);
    let escape = format!("{}/x.txt", outside.str());
    for raw in [
        "../x.txt",
        "out/x.txt",
        escape.as_str(),
        "/tmp/toolhost-write-escape.txt",
    ] {
        let r = call(&host, "write", json!({"path": raw, "content": "pwned"}));
        assert!(r.is_error, "{raw}");
        assert_eq!(r.text(), format!("Path is outside the workspace: {raw}"));
    }
    assert_eq!(std::fs::read_dir(&outside.path).unwrap().count(), 0);
    assert!(!std::path::Path::new("/tmp/toolhost-write-escape.txt").exists());
}

#[test]
fn writes_through_a_symlink_change_its_target() {
    let ws = Workspace::new();
    ws.write("real.txt", "old");
    ws.symlink("alias.txt", ws.path.join("real.txt"));
    let host = host(&ws);
    write_ok(&host, "alias.txt", "new");
    assert_eq!(ws.read("real.txt"), "new");
    let link = std::fs::symlink_metadata(ws.path.join("alias.txt")).unwrap();
    assert!(
        link.file_type().is_symlink(),
        "the link itself stays a link"
    );
}

#[test]
fn parallel_writes_to_one_file_leave_one_whole_content() {
    let ws = Workspace::new();
    let host = host(&ws);
    let contents: Vec<String> = (0..20)
        .map(|i| format!("writer {i}\n").repeat(5000))
        .collect();
    let calls = contents
        .iter()
        .enumerate()
        .map(|(i, c)| {
            tool_call(
                &format!("w{i}"),
                "write",
                json!({"path": "same.txt", "content": c}),
            )
        })
        .collect();
    let (outcome, _) = run(
        &host,
        &AssistantMessage::from_calls(calls),
        CancellationToken::new(),
    );
    assert!(outcome.results.iter().all(|r| !r.is_error));
    let last = ws.read("same.txt");
    assert!(
        contents.contains(&last),
        "the file holds exactly one writer's content"
    );
    let leftovers: Vec<Value> = std::fs::read_dir(&ws.path)
        .unwrap()
        .map(|e| json!(e.unwrap().file_name().to_string_lossy()))
        .collect();
    assert_eq!(leftovers, [json!("same.txt")], "no temporary files remain");
}

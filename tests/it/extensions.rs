//! Extensions: discovery, grants from policy files (and their trust), WASI
//! preopens and environment under the same grants, the `tools` Operations,
//! and the `ext` and `trust` commands. Each grant has a deny test. (What a
//! planted file cannot do is in `hostile.rs`.)

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;

/// The probe extension reading `path`: its text and whether it is an error.
fn probe(ws: &Workspace, path: &str) -> (String, bool) {
    call_text(ws, "probe", json!({ "path": path }))
}

/// What a call of the probe gets when the probe did not load.
fn probe_not_loaded() -> (String, bool) {
    ("Tool probe not found".into(), true)
}

/// Copy `component` to `rel` in the extensions directory `dir`.
fn drop_in(dir: &Path, rel: &str, component: &str) {
    let dest = dir.join(rel);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(component, dest).unwrap();
}

#[test]
fn a_component_dropped_into_the_workspace_loads_once_trusted() {
    let ws = Workspace::new();
    drop_in(&ws.extensions(), "kit.wasm", toolhost_tests::TESTKIT);
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(ext[0]["refused"], "untrusted: run toolhost trust to review");
    assert_eq!(
        call_text(&ws, "fast", json!({})),
        ("Tool fast not found".into(), true)
    );
    trust_workspace(&ws);
    let tools = json_out(&toolhost(&ws, &["list", "--json"], None));
    let slow = named(&tools, "slow");
    assert_eq!(slow["active"], true, "extension tools are activated");
    assert_eq!(slow["source"]["kind"], "extension");
    assert_eq!(
        call_text(&ws, "fast", json!({})),
        ("fast done".into(), false)
    );
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(ext[0]["name"], "kit");
    assert_eq!(ext[0]["origin"], "workspace");
    assert_eq!(ext[0]["tools"].as_array().unwrap().len(), 17);
}

/// The fs-read probe with a manifest, in the extensions directory `dir`.
fn probe_with_manifest(dir: &Path) {
    drop_in(dir, "probe/fsprobe.wasm", toolhost_tests::FSPROBE);
    std::fs::write(
        dir.join("probe/extension.toml"),
        "component = \"fsprobe.wasm\"\ndescription = \"Reads files\"\n[capabilities]\nfs-read = [\"docs\"]\n",
    )
    .unwrap();
}

#[test]
fn fs_read_is_refused_until_granted_then_confined_to_the_grant() {
    let ws = Workspace::new();
    ws.write("docs/a.txt", "inside the grant");
    ws.write("secret.txt", "outside the grant");
    probe_with_manifest(&ws.user_extensions());

    // Not granted: refused at load, with the way to grant it.
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(ext[0]["name"], "probe");
    assert_eq!(ext[0]["requested"]["fs-read"], json!(["docs"]));
    assert_eq!(
        ext[0]["refused"],
        "imports toolhost:tool/fs-read@0.4.0 (read files), which is not granted to it; grant it in toolhost.toml: [extensions.probe] fs-read = [\"<directory>\"]"
    );
    assert_eq!(probe(&ws, "x"), probe_not_loaded());

    // Granted: it reads inside the grant, and nowhere else.
    user_policy(&ws, "[extensions.probe]\nfs-read = [\"docs\"]\n");
    let inside = format!("{}/docs/a.txt", ws.str());
    assert_eq!(probe(&ws, &inside), ("inside the grant".into(), false));
    let outside = format!("{}/secret.txt", ws.str());
    let (text, is_error) = probe(&ws, &outside);
    assert!(is_error);
    assert!(text.contains("outside the granted roots"), "{text}");

    // Revoked: refused again.
    user_policy(&ws, "");
    assert_eq!(probe(&ws, &inside), probe_not_loaded());
}

#[test]
fn a_workspace_policy_applies_only_once_trusted_and_unchanged() {
    let ws = Workspace::new();
    ws.write("docs/a.txt", "hello");
    probe_with_manifest(&ws.extensions());
    ws.write(
        "toolhost.toml",
        "[extensions.probe]\nfs-read = [\"docs\"]\n",
    );
    let inside = format!("{}/docs/a.txt", ws.str());
    let out = toolhost(
        &ws,
        &["call", "probe", &json!({"path": inside}).to_string()],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("toolhost.toml: not applied: untrusted: run toolhost trust to review"),
        "{stderr}"
    );

    // Without a terminal, `trust` shows what it would trust and asks for --yes.
    let out = toolhost(&ws, &["trust"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("toolhost trust --yes"));
    trust_workspace(&ws);
    assert_eq!(probe(&ws, &inside), ("hello".into(), false));

    // The file changes (as an agent might change it): untrusted again.
    ws.write(
        "toolhost.toml",
        "[extensions.probe]\nfs-read = [\"docs\", \"/\"]\n",
    );
    assert_eq!(probe(&ws, &inside), probe_not_loaded());
}

#[test]
fn granted_directories_are_preopened_through_wasi_with_the_same_permissions() {
    let ws = Workspace::new();
    ws.write("docs/a.txt", "via std::fs");
    ws.write("secret.txt", "no");
    std::fs::create_dir(ws.path.join("out")).unwrap();
    let ext = &ws.copy_in("kit.wasm", toolhost_tests::TESTKIT);
    let call = |args: Value| {
        let out = toolhost(
            &ws,
            &[
                "--extension",
                ext,
                "call",
                "wasi_file",
                &args.to_string(),
                "--json",
            ],
            None,
        );
        let msg = json_out(&out);
        (
            msg["content"][0]["text"].as_str().unwrap().to_string(),
            msg["isError"].as_bool().unwrap(),
        )
    };
    let docs = format!("{}/docs/a.txt", ws.str());
    let out_file = format!("{}/out/new.txt", ws.str());
    // Nothing granted: no file is reachable.
    assert!(call(json!({"path": docs})).1);

    user_policy(
        &ws,
        "[extensions.kit]\nfs-read = [\"docs\"]\nfs-write = [\"out\"]\n",
    );
    assert_eq!(call(json!({"path": docs})), ("via std::fs".into(), false));
    assert!(
        call(json!({"path": format!("{}/secret.txt", ws.str())})).1,
        "outside the grants"
    );
    assert!(
        call(json!({"path": format!("{}/docs/b.txt", ws.str()), "content": "x"})).1,
        "docs is read-only"
    );
    assert!(!ws.path.join("docs/b.txt").exists());
    assert_eq!(
        call(json!({"path": out_file, "content": "made"})),
        ("written".into(), false)
    );
    assert_eq!(ws.read("out/new.txt"), "made");
}

#[test]
fn environment_variables_are_invisible_unless_granted() {
    let ws = Workspace::new();
    let kit = ws.copy_in("kit.wasm", toolhost_tests::TESTKIT);
    let getenv = |name: &str| {
        let out = toolhost_with_env(
            &ws,
            &[
                "--extension",
                &kit,
                "call",
                "getenv",
                &json!({"name": name}).to_string(),
            ],
            None,
            &[("TOOLHOST_TEST_SECRET", "s3cret")],
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(getenv("TOOLHOST_TEST_SECRET"), "(unset)\n");
    assert_eq!(getenv("HOME"), "(unset)\n");
    user_policy(&ws, "[extensions.kit]\nenv = [\"TOOLHOST_TEST_SECRET\"]\n");
    assert_eq!(getenv("TOOLHOST_TEST_SECRET"), "s3cret\n");
    assert_eq!(getenv("HOME"), "(unset)\n", "only the granted variable");
}

#[test]
fn the_tools_grant_lets_a_tool_activate_others_and_reports_them() {
    let ws = Workspace::new();
    let ext = &ws.copy_in("toolset.wasm", toolhost_tests::TOOLSET);
    let args = json!({"names": ["ls"]}).to_string();
    // Without the grant the component is refused.
    let out = toolhost(&ws, &["--extension", ext, "call", "activate", &args], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[extensions.toolset] tools = true"));

    user_policy(&ws, "[extensions.toolset]\ntools = true\n");
    // One `activate` call through `toolhost run`: its result message.
    let activate = |arguments: Value| {
        let batch = json!({"role": "assistant", "content": [
            {"type": "toolCall", "id": "c1", "name": "activate", "arguments": arguments},
        ]});
        let out = toolhost(
            &ws,
            &["--extension", ext, "run", "-"],
            Some(&batch.to_string()),
        );
        let last = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .map(str::to_string);
        let end: Value = serde_json::from_str(&last.unwrap()).unwrap();
        end["toolResults"][0].clone()
    };
    let result = activate(json!({"names": ["ls", "nope"]}));
    assert_eq!(
        result["content"][0]["text"],
        "active: read, bash, edit, write, activate, ls"
    );
    assert_eq!(
        result["addedToolNames"],
        json!(["ls"]),
        "unknown names are ignored"
    );

    // Replacing the set removes a tool: nothing counts as added.
    let result = activate(json!({"names": ["ls"], "replace": true}));
    assert_eq!(result.get("addedToolNames"), None);
}

#[test]
fn ext_inspect_shows_tools_and_requested_capabilities_without_granting() {
    let ws = Workspace::new();
    let inspection = json_ok(&toolhost(
        &ws,
        &["ext", "inspect", toolhost_tests::FSPROBE, "--json"],
        None,
    ));
    assert_eq!(inspection["capabilities"], json!(["fs-read"]));
    assert_eq!(inspection["tools"][0]["name"], "probe");
    assert_eq!(
        inspection["tools"][0]["parameters"],
        json!({"type":"object","required":["path"],"properties":{"path":{"type":"string"}}})
    );
    let out = toolhost(&ws, &["ext", "inspect", toolhost_tests::FSPROBE], None);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("  requests: fs-read\n"), "{text}");
    let missing = toolhost(&ws, &["ext", "inspect", "/nonexistent.wasm"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent.wasm: cannot be read"));
}

#[test]
fn a_malformed_policy_stops_the_host_with_the_file_and_cause() {
    let ws = Workspace::new();
    user_policy(&ws, "[extensions.kit]\nfs-reed = [\"docs\"]\n");
    let out = toolhost(&ws, &["list"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&ws.user_config().join("toolhost.toml").display().to_string()),
        "{err}"
    );
    assert!(err.contains("fs-reed"), "{err}");
    assert!(Path::new(&ws.user_config()).exists());
}

#[test]
fn process_grants_name_the_programs_an_extension_may_run() {
    let ws = Workspace::new();
    ws.write("hello.txt", "hi");
    let ext = &ws.copy_in("runprobe.wasm", toolhost_tests::RUNPROBE);
    let run = |args: Value| {
        let out = toolhost(
            &ws,
            &["--extension", ext, "call", "run", &args.to_string()],
            None,
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
            out.status.code(),
        )
    };
    // Not granted: refused at load.
    let (_, stderr, code) = run(json!({"program": "cat", "args": ["hello.txt"]}));
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("[extensions.runprobe] process = [\"<program>\"]"),
        "{stderr}"
    );

    // Granted cat (and the workspace as its directory): cat runs, ls does not.
    user_policy(
        &ws,
        "[extensions.runprobe]\nprocess = [\"cat\"]\nfs-read = [\".\"]\n",
    );
    assert_eq!(
        run(json!({"program": "cat", "args": ["hello.txt"]})).0,
        "exit 0: hi\n"
    );
    let (stdout, _, code) = run(json!({"program": "ls"}));
    assert_eq!(code, Some(1));
    assert!(stdout.contains("ls"), "{stdout}");
}

#[test]
fn a_search_grant_covers_only_the_granted_directories() {
    let ws = Workspace::new();
    ws.write("docs/a.md", "needle");
    ws.write("private/b.md", "needle");
    let ext = &ws.copy_in("searchprobe.wasm", toolhost_tests::SEARCHPROBE);
    let seek = |root: &str| {
        let args = json!({"pattern": "needle", "root": format!("{}/{root}", ws.str())});
        let out = toolhost(
            &ws,
            &["--extension", ext, "call", "seek", &args.to_string()],
            None,
        );
        (String::from_utf8(out.stdout).unwrap(), out.status.code())
    };
    assert_eq!(seek("docs").1, Some(1), "not granted: refused");
    user_policy(
        &ws,
        "[extensions.searchprobe]\nsearch = true\nfs-read = [\"docs\"]\n",
    );
    assert_eq!(seek("docs"), ("a.md\n".to_string(), Some(0)));
    let (out, code) = seek("private");
    assert_eq!(code, Some(1));
    assert!(out.contains("OutsideRoots"), "{out}");
}

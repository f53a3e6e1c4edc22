//! A grant means what the user approved: each test is an attack by the
//! agent's own tools on a path a grant names (a granted directory replaced
//! by a symbolic link, an ancestor moved away and linked elsewhere, a
//! `[shell] read-write` directory or an `extension-paths` entry swapped, a
//! program planted where a granted name is looked up), through the real
//! host and its jail, then what the host gives on its next start, or on the
//! next call of a host that kept running. Each asserts the refusal with its
//! message and that the secret behind the link stayed out of reach.

use crate::support::*;
use serde_json::{Value, json};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Fail, saying how to get the jail, where it cannot run: the attacks are
/// made by bash in the jail, as an agent makes them.
#[track_caller]
fn require_jail() {
    if let toolhost::doctor::Support::Unavailable { reason } = toolhost::doctor::jail_support() {
        panic!("the process jail cannot run here ({reason}); scripts/setup installs bubblewrap");
    }
}

/// A private key's worth of secret, in a directory outside the workspace
/// (a stand-in for `$HOME`): its real path.
fn secret_home(tmp: &tempfile::TempDir, secret: &str) -> PathBuf {
    let home = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), secret).unwrap();
    home
}

/// The jail required; a fresh workspace, and a directory outside it by its
/// real path (there while the guard lives).
fn jailed_workspace_and_outside() -> (Workspace, tempfile::TempDir, PathBuf) {
    require_jail();
    let (guard, outside) = outside_dir();
    (Workspace::new(), guard, outside)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `toolhost --require-jail call bash COMMAND` on `ws`: the agent's bash, in
/// the jail; it must succeed.
#[track_caller]
fn agent_bash(ws: &Workspace, command: &str) {
    let args = jailed_bash_args(command);
    let out = toolhost(ws, &args.each_ref().map(String::as_str), None);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "bash {command}: {stdout}{stderr}");
}

/// `toolhost call TOOL ARGS --json` on a new start: the result's text, and
/// what the host said on stderr.
#[track_caller]
fn call_cli(ws: &Workspace, tool: &str, args: Value) -> (String, String) {
    let out = toolhost(ws, &["call", tool, &args.to_string(), "--json"], None);
    let (_, stderr) = text(&out);
    let msg = json_out(&out);
    (
        msg["content"][0]["text"].as_str().unwrap().to_string(),
        stderr,
    )
}

/// `toolhost ext add FILE ARGS…`, as the user installs an extension.
#[track_caller]
fn ext_add(ws: &Workspace, file: &Path, args: &[&str]) {
    let mut all = vec!["ext", "add", file.to_str().unwrap()];
    all.extend(args);
    let out = toolhost(ws, &all, None);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "ext add: {stdout}{stderr}");
}

/// The refusal of a grant whose path leads through `link` (as shown) to
/// `target`, a symbolic link inside the workspace.
fn refused(grant: &str, link: &str, target: &Path, instead: &str) -> String {
    format!(
        "{grant} is refused: {link} is a symbolic link (to {}) inside the workspace, which \
         tools can change; {instead}",
        target.display()
    )
}

#[test]
fn grants_a_directory_bash_replaced_with_a_symlink_to_home_is_refused_on_the_next_start() {
    require_jail();
    let ws = Workspace::new();
    let tmp = tempfile::tempdir().unwrap();
    let secret = "-----BEGIN OPENSSH PRIVATE KEY----- th-secret-41c9";
    let home = secret_home(&tmp, secret);
    ws.write("docs/readme.txt", "approved words here\n");
    let wordcount = crate::examples::example("wordcount");
    ext_add(&ws, &wordcount, &["--fs-read", "docs"]);
    ext_add(
        &ws,
        Path::new(toolhost_tests::FSPROBE),
        &["--fs-read", "docs"],
    );
    // As approved: both read the workspace's docs.
    assert_eq!(
        call_cli(
            &ws,
            "probe",
            json!({"path": ws.path.join("docs/readme.txt")})
        )
        .0,
        "approved words here\n"
    );
    assert!(
        call_cli(&ws, "wc", json!({"path": "docs"}))
            .0
            .contains("docs/readme.txt")
    );

    // The agent's bash swaps the directory for a link to the home.
    agent_bash(
        &ws,
        &format!("mv docs docs.orig && ln -s {} docs", home.display()),
    );

    // On the next start the key stays out of reach, by the granted name or
    // where it now leads ...
    let keys = [
        ws.path.join("docs/.ssh/id_ed25519"),
        home.join(".ssh/id_ed25519"),
    ];
    let mut results = Vec::new();
    for key in &keys {
        results.push(call_cli(&ws, "probe", json!({ "path": key })).0);
        results.push(call_cli(&ws, "wc", json!({ "path": key })).0);
    }
    for result in &results {
        assert!(!result.contains(secret), "the key leaked: {result}");
        assert!(
            !result.starts_with("lines"),
            "the key was counted: {result}"
        );
    }
    assert_eq!(
        results,
        ["Tool probe not found", "Tool wc not found"].repeat(2)
    );
    // ... because the grants are refused, each named with why; the rest of
    // the host loads.
    let (_, stderr) = call_cli(&ws, "probe", json!({ "path": keys[0] }));
    for ext in ["fsprobe", "wordcount"] {
        let grant = format!("fs-read grant docs of extension {ext}");
        let message = refused(&grant, "docs", &home, "grant its target instead");
        assert!(stderr.contains(&message), "{ext}: {stderr}");
    }
    assert_eq!(
        call_cli(&ws, "read", json!({"path": "docs.orig/readme.txt"})).0,
        "approved words here\n"
    );
}

#[test]
fn grants_a_directory_whose_parent_bash_moved_and_linked_elsewhere_is_refused() {
    let (ws, _guard, elsewhere) = jailed_workspace_and_outside();
    let secret = "th-secret-notes-8d02";
    std::fs::create_dir_all(elsewhere.join("today")).unwrap();
    std::fs::write(elsewhere.join("today/plan.txt"), secret).unwrap();
    let plan = ws.write("notes/today/plan.txt", "approved plan\n");
    ext_add(
        &ws,
        Path::new(toolhost_tests::FSPROBE),
        &["--fs-read", "notes/today"],
    );
    assert_eq!(
        call_cli(&ws, "probe", json!({"path": plan})).0,
        "approved plan\n"
    );

    // The granted directory is untouched; its parent is moved away and a
    // link put where it was.
    agent_bash(
        &ws,
        &format!("mv notes notes.orig && ln -s {} notes", elsewhere.display()),
    );

    for path in [plan, elsewhere.join("today/plan.txt")] {
        let (probe, _) = call_cli(&ws, "probe", json!({ "path": path }));
        assert!(
            !probe.contains(secret),
            "read through the moved parent: {probe}"
        );
    }
    let (_, stderr) = call_cli(&ws, "probe", json!({ "path": "/" }));
    let grant = "fs-read grant notes/today of extension fsprobe";
    let message = refused(grant, "notes", &elsewhere, "grant its target instead");
    assert!(stderr.contains(&message), "{stderr}");
}

#[test]
fn grants_a_running_host_keeps_the_directory_approved_when_bash_swaps_it_between_calls() {
    let (ws, _guard, outside) = jailed_workspace_and_outside();
    let secret = "th-secret-running-5e7a";
    std::fs::write(outside.join("key.txt"), secret).unwrap();
    std::fs::create_dir_all(outside.join("sink")).unwrap();
    ws.write("docs/key.txt", "approved\n");
    ws.write("work/.keep", "");
    ws.write("out/.keep", "");
    let fsprobe = ws.copy_in("fsprobe.wasm", toolhost_tests::FSPROBE);
    let runprobe = ws.copy_in("runprobe.wasm", toolhost_tests::RUNPROBE);
    let grant = |read: &[&str], write: &[&str], process: &[&str]| toolhost::GrantSpec {
        fs_read: read.iter().map(|s| s.to_string()).collect(),
        fs_write: write.iter().map(|s| s.to_string()).collect(),
        process: process.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    // One host for the whole session, as an MCP server is.
    let host = built(
        builder(&ws)
            .jail(toolhost::JailMode::Required)
            .extensions(|e| {
                e.load(&fsprobe)
                    .grant("fsprobe", grant(&["docs"], &[], &[]))
                    .load(&runprobe)
                    .grant("runprobe", grant(&["docs", "work"], &[], &["cat"]))
                    .grant("testkit", grant(&["docs"], &["out"], &[]))
            }),
    );
    assert!(host.diagnostics().is_empty(), "{:?}", host.diagnostics());
    let key = format!("{}/docs/key.txt", ws.str());
    let cwd = format!("{}/work", ws.str());
    // Through the fs-read Operation, WASI files, and a granted program.
    let reads = |host: &toolhost::Host| {
        [
            call(host, "probe", json!({ "path": key })).text(),
            call(host, "wasi_file", json!({ "path": key })).text(),
            call(
                host,
                "run",
                json!({"program": "cat", "args": [key], "cwd": cwd}),
            )
            .text(),
        ]
    };
    assert_eq!(
        reads(&host),
        ["approved\n", "approved\n", "exit 0: approved\n"]
    );

    // Between two calls the agent's bash swaps both directories for links.
    let swap = format!(
        "mv docs docs.orig && ln -s {o} docs && mv out out.orig && ln -s {o}/sink out",
        o = outside.display()
    );
    let r = call(&host, "bash", json!({ "command": swap }));
    assert!(!r.is_error, "{}", r.text());

    let [probe, wasi, run] = reads(&host);
    for read in [&probe, &wasi, &run] {
        assert!(!read.contains(secret), "the secret leaked: {read}");
    }
    assert_eq!(
        probe, "approved\n",
        "the fs-read Operation kept the directory"
    );
    assert_eq!(wasi, "approved\n", "the WASI preopen kept the directory");
    assert_eq!(
        run,
        format!(
            "cat is not started: the granted directory {}/docs is no longer the one approved \
             when toolhost started (it is now a symbolic link to {}); restore it, or restart \
             toolhost to resolve the grant again",
            ws.str(),
            outside.display()
        )
    );
    // A write through WASI lands in the directory approved, not behind the link.
    let written = call(
        &host,
        "wasi_file",
        json!({"path": format!("{}/out/planted.txt", ws.str()), "content": "x"}),
    );
    assert_eq!(written.text(), "written");
    assert!(ws.path.join("out.orig/planted.txt").is_file());
    assert!(!outside.join("sink/planted.txt").exists());

    // Put back, the program runs again: nothing the call did stops the next.
    let r = call(
        &host,
        "bash",
        json!({"command": "rm docs && mv docs.orig docs"}),
    );
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(reads(&host)[2], "exit 0: approved\n");
}

#[test]
fn grants_a_shell_read_write_directory_swapped_for_a_symlink_is_refused_and_named() {
    let (ws, _guard, outside) = jailed_workspace_and_outside();
    ws.write("cache/.keep", "");
    let policy = "[shell]\nread-write = [\"cache\"]\n";
    // Where the jail cannot run (Landlock alone), bash can move the granted
    // directory itself; it puts a link to elsewhere in its place.
    let host = built(granted(&ws, policy).jail(toolhost::JailMode::Off));
    assert!(host.diagnostics().is_empty(), "{:?}", host.diagnostics());
    let swap = format!("mv cache cache.orig && ln -s {} cache", outside.display());
    let r = call(&host, "bash", json!({ "command": swap }));
    assert!(!r.is_error, "{}", r.text());
    drop(host);

    let host = built(granted(&ws, policy).jail(toolhost::JailMode::Required));
    let r = call(
        &host,
        "bash",
        json!({"command": format!("echo pwned > cache/x; echo pwned > {}/y", outside.display())}),
    );
    assert!(r.is_error, "{}", r.text());
    assert!(
        std::fs::read_dir(&outside).unwrap().next().is_none(),
        "bash wrote behind the link"
    );
    let message = refused(
        "[shell] read-write grant",
        "cache",
        &outside,
        "grant its target instead",
    );
    assert!(
        host.diagnostics()
            .iter()
            .any(|d| d.path == format!("{}/cache", ws.str()) && d.message == message),
        "{:?}",
        host.diagnostics()
    );
    // The rest of the shell works.
    assert_eq!(
        call(&host, "bash", json!({"command": "echo ok"})).text(),
        "ok\n"
    );
}

#[test]
fn grants_an_extension_path_swapped_for_a_symlink_loads_nothing_from_behind_it() {
    let (ws, _guard, elsewhere) = jailed_workspace_and_outside();
    // A component the user never approved, wherever the agent found one.
    std::fs::copy(toolhost_tests::FSPROBE, elsewhere.join("probe.wasm")).unwrap();
    ws.write("tools/.keep", "");
    user_policy(
        &ws,
        &format!(
            "extension-paths = [\"{}/tools\"]\n[extensions.probe]\nfs-read = [\".\"]\n",
            ws.str()
        ),
    );
    agent_bash(
        &ws,
        &format!("rm -r tools && ln -s {} tools", elsewhere.display()),
    );

    let out = toolhost(&ws, &["list", "--json"], None);
    let (_, stderr) = text(&out);
    let tools = json_out(&out);
    assert!(
        !strings_at(&tools, "/name").contains(&"probe"),
        "loaded from behind the link: {tools}"
    );
    let message = refused(
        "extension-paths entry",
        "tools",
        &elsewhere,
        "name its target instead",
    );
    assert!(
        stderr.contains(&format!("{}/tools: {message}", ws.str())),
        "{stderr}"
    );
}

#[test]
fn grants_a_program_bash_planted_on_path_or_named_inside_the_workspace_never_runs() {
    let (ws, _guard, tmpdir) = jailed_workspace_and_outside();
    let uid = std::fs::metadata(&ws.path).unwrap().uid();
    // The host's temp directory (its commands' TMPDIR) under this TMPDIR.
    let host_temp = tmpdir.join(format!("toolhost-{uid}"));
    ws.write("docs/a.txt", "the real cat\n");
    ws.write("out/.keep", "");
    std::fs::create_dir_all(ws.user_extensions()).unwrap();
    std::fs::copy(
        toolhost_tests::RUNPROBE,
        ws.user_extensions().join("runprobe.wasm"),
    )
    .unwrap();
    let tool = format!("{}/bin/tool", ws.str());
    user_policy(
        &ws,
        &format!(
            "[extensions.runprobe]\nprocess = [\"git\", \"cat\", \"{tool}\"]\n\
             fs-read = [\".\"]\nfs-write = [\"out\"]\n"
        ),
    );
    // A user whose PATH starts in the workspace and the temp directory.
    let path = format!(
        "{}/bin:{}/bin:{}",
        ws.str(),
        host_temp.display(),
        std::env::var("PATH").unwrap()
    );
    let env = [
        ("PATH", path.as_str()),
        ("TMPDIR", tmpdir.to_str().unwrap()),
    ];
    let cli = |args: &[&str]| {
        let out = toolhost_with_env(&ws, args, None, &env);
        let (stdout, stderr) = text(&out);
        (stdout, stderr, out)
    };
    let planted_script = |name: &str| {
        format!(
            "#!/bin/sh\necho PLANTED\n: > {}/out/planted-{name}\n",
            ws.str()
        )
    };
    // The agent's bash plants one program of each name, each leaving a mark.
    let planted = |name: &str| {
        format!(
            "printf '#!/bin/sh\\necho PLANTED\\n: > {}/out/planted-{name}\\n'",
            ws.str()
        )
    };
    let plant = format!(
        "mkdir -p bin && {git} > bin/git && {tool} > bin/tool && chmod +x bin/git bin/tool",
        git = planted("git"),
        tool = planted("tool"),
    );
    let (stdout, stderr, out) = cli(&[
        "--require-jail",
        "call",
        "bash",
        &json!({ "command": plant }).to_string(),
    ]);
    assert!(out.status.success(), "{stdout}{stderr}");
    // In the jail the host's temp directory is read-only (each command
    // writes in one of its own, removed after it)...
    let (stdout, stderr, _) = cli(&[
        "--require-jail",
        "call",
        "bash",
        &json!({ "command": "mkdir \"$TMPDIR/../bin\" && echo MADE" }).to_string(),
    ]);
    assert!(!stdout.contains("MADE"), "{stdout}{stderr}");
    // ...but where the jail cannot run, bash could plant there: placed
    // here as that bash would.
    std::fs::create_dir_all(host_temp.join("bin")).unwrap();
    std::fs::write(host_temp.join("bin/cat"), planted_script("cat")).unwrap();
    std::fs::set_permissions(
        host_temp.join("bin/cat"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    let run = |args: Value| {
        let (_, stderr, out) = cli(&["call", "run", &args.to_string(), "--json"]);
        let msg = json_out(&out);
        (
            msg["content"][0]["text"].as_str().unwrap().to_string(),
            stderr,
        )
    };
    let (git, stderr) = run(json!({"program": "git", "args": ["--version"], "cwd": ws.str()}));
    assert!(git.starts_with("exit 0: git version "), "{git}");
    assert!(
        stderr.contains(&format!(
            "process grant git of extension runprobe: {}/bin/git (first on PATH) lies inside \
             the workspace, which tools can change: it never runs;",
            ws.str()
        )),
        "{stderr}"
    );
    let a = format!("{}/docs/a.txt", ws.str());
    let (cat, _) = run(json!({"program": "cat", "args": [a], "cwd": ws.str()}));
    assert_eq!(cat, "exit 0: the real cat\n");
    let (named, stderr) = run(json!({"program": tool, "cwd": ws.str()}));
    assert!(!named.contains("PLANTED"), "{named}");
    assert_eq!(
        named,
        format!("{tool} is not a program this tool may run (allowed: git, cat)")
    );
    assert!(
        stderr.contains(&format!(
            "process grant {tool} of extension runprobe is refused: bin/tool lies inside the \
             workspace, which tools can change"
        )),
        "{stderr}"
    );
    for name in ["git", "cat", "tool"] {
        assert!(
            !ws.path.join(format!("out/planted-{name}")).exists(),
            "the planted {name} ran"
        );
    }
}

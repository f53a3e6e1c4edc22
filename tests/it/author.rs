//! The extension author's loop, as an author runs it in a terminal, in each
//! of the four languages: `ext new` makes a project from its template, `ext
//! build` builds it with the language's own tools (offline: from what
//! `scripts/setup` installed, `toolhost ext toolchain --install`), `ext
//! test` runs its cases and, once recorded, replays them against the new
//! build, `ext add` installs it, and a call answers. Then what an author
//! gets wrong: a change that breaks a case, an import the grant does not
//! cover, a missing toolchain; and `ext dev` rebuilding on a change.

use crate::support::*;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A folder for projects, and the CLI run in one of them with the
/// workspace's configuration home (where `ext add` installs).
struct Author {
    ws: Workspace,
    projects: tempfile::TempDir,
}

impl Author {
    fn new() -> Author {
        Author {
            ws: Workspace::new(),
            projects: tempfile::tempdir().unwrap(),
        }
    }

    fn project(&self, name: &str) -> PathBuf {
        self.projects.path().join(name)
    }

    /// `toolhost ARGS…` in `dir`, offline: a Rust project resolves its
    /// crates from what is already on this machine.
    fn run(&self, dir: &Path, args: &[&str]) -> Output {
        let mut cmd = self.ws.cli();
        cmd.current_dir(dir)
            .args(args)
            .env("CARGO_NET_OFFLINE", "true")
            // Each test's Rust project is new; its dependencies build once.
            .env("CARGO_TARGET_DIR", toolhost_tests::EXT_PROJECTS_TARGET);
        cmd.output().unwrap()
    }

    /// [`Author::run`], which must succeed; its stdout.
    #[track_caller]
    fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args);
        assert!(
            out.status.success(),
            "toolhost {args:?} in {}: {}\nstdout:\n{}\nstderr:\n{}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `ext new NAME --lang LANGUAGE` here; the project's folder.
    fn new_project(&self, name: &str, language: &str) -> PathBuf {
        self.ok(
            self.projects.path(),
            &["ext", "new", name, "--lang", language],
        );
        self.project(name)
    }
}

/// The whole loop in `language`, offline, from a fresh project to an
/// answered call.
fn the_loop(language: &str) {
    let author = Author::new();
    let name = format!("count-{language}");
    let tool = name.replace('-', "_");
    let project = author.new_project(&name, language);
    for file in [
        "extension.toml",
        "README.md",
        "tests/cases.toml",
        "wit/world.wit",
        "wit/deps/toolhost/tool.wit",
    ] {
        assert!(project.join(file).is_file(), "ext new made no {file}");
    }

    let built = author.ok(&project, &["ext", "build"]);
    assert_has(&built, &format!("built dist/{name}.wasm"));
    assert_has(&built, &format!("tools: {tool}"));
    assert_has(&built, "requests: fs-read");
    assert_has(&built, "granted by extension.toml: fs-read=[\".\"]");

    let tested = author.ok(&project, &["ext", "test", "--no-build"]);
    assert_has(&tested, "ok    counts the lines and bytes of a file");
    assert_has(&tested, "ok    a missing file is an error that names it");
    assert_has(&tested, "2 cases passed, 0 failed");

    let recorded = author.ok(&project, &["ext", "test", "--no-build", "--rerecord"]);
    assert_has(&recorded, "recorded 2 calls in tests/recordings/cases.rec");
    let replayed = author.ok(&project, &["ext", "test", "--no-build"]);
    assert_has(
        &replayed,
        &format!("call case-1 ({tool}): the same questions, the same result"),
    );
    assert_has(
        &replayed,
        &format!("call case-2 ({tool}): the same questions, the same result"),
    );

    let added = author.ok(&project, &["ext", "add"]);
    assert_has(
        &added,
        &format!("granting {name} what its extension.toml asks: fs-read=[\".\"]"),
    );
    let policy = std::fs::read_to_string(author.ws.user_config().join("toolhost.toml")).unwrap();
    assert_has(&policy, &format!("[extensions.{name}]"));

    author.ws.write("notes/todo.txt", "a\nb\nc\nd");
    let out = author
        .ws
        .cli()
        .args(["call", &tool, r#"{"path":"notes/todo.txt"}"#])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "notes/todo.txt: 4 lines, 7 bytes\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
}

#[test]
fn a_rust_extension_from_new_to_an_answered_call() {
    the_loop("rust");
}

#[test]
fn a_javascript_extension_from_new_to_an_answered_call() {
    the_loop("js");
}

#[test]
fn a_python_extension_from_new_to_an_answered_call() {
    the_loop("python");
}

#[test]
fn a_c_extension_from_new_to_an_answered_call() {
    the_loop("c");
}

/// Replace `from` with `to` in the project's file `rel`.
#[track_caller]
fn edit(project: &Path, rel: &str, from: &str, to: &str) {
    let path = project.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} has no {from:?}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

#[test]
fn a_change_that_breaks_a_case_fails_the_test_and_the_replay_names_it() {
    let author = Author::new();
    let project = author.new_project("count", "c");
    author.ok(&project, &["ext", "test", "--rerecord"]);
    edit(
        &project,
        "src/tool.c",
        "%s: %llu lines, %llu bytes",
        "%s has %llu lines, %llu bytes",
    );
    let out = author.run(&project, &["ext", "test"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_has(&stdout, "FAIL  counts the lines and bytes of a file");
    assert_has(
        &stdout,
        "  expected a result:\n    notes.txt: 3 lines, 14 bytes\n  got a result:\n    notes.txt has 3 lines, 14 bytes",
    );
    assert_has(&stdout, "1 cases passed, 1 failed");
    assert_has(
        &stdout,
        "call case-1 (count): the same questions, another result:",
    );
    assert_has(
        &stdout,
        "  - notes.txt: 3 lines, 14 bytes\n  + notes.txt has 3 lines, 14 bytes",
    );
    assert_has(
        &stdout,
        "call case-2 (count): the same questions, the same result",
    );
    // A recording keeps only what passes.
    let out = author.run(&project, &["ext", "test", "--no-build", "--rerecord"]);
    assert_eq!(out.status.code(), Some(1));
    assert_has(
        &out.stdout,
        "nothing recorded: a recording keeps what passes",
    );
    assert!(!project.join("tests/recordings/cases.rec").exists());
}

/// A JavaScript project `name` whose world imports `interface` too
/// (componentize-qjs imports every interface of the world it is given).
fn importing(author: &Author, name: &str, interface: &str) -> PathBuf {
    let project = author.new_project(name, "js");
    let export = "    export toolhost:tool/tool@0.4.0;";
    edit(
        &project,
        "wit/world.wit",
        export,
        &format!("    import {interface};\n{export}"),
    );
    project
}

#[test]
fn an_import_the_grant_does_not_cover_is_named_with_the_line_that_grants_it() {
    let author = Author::new();
    let project = importing(&author, "runner", "toolhost:tool/process@0.4.0");
    let out = author.run(&project, &["ext", "build"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_has(&out.stdout, "requests: fs-read, process");
    assert_has(
        &stderr,
        "runner imports what extension.toml does not grant, so it would be refused at load",
    );
    assert_has(&stderr, "\n  process = [\"<program>\"]\n");
    // Granted, it builds clean.
    edit(
        &project,
        "extension.toml",
        "fs-read = [\".\"]",
        "fs-read = [\".\"]\nprocess = [\"git\"]",
    );
    author.ok(&project, &["ext", "build"]);
}

#[test]
fn a_missing_toolchain_is_named_with_its_install_step() {
    let author = Author::new();
    let empty = tempfile::tempdir().unwrap();
    let run = |dir: &Path, args: &[&str]| {
        author
            .ws
            .cli()
            .current_dir(dir)
            .args(args)
            .env("TOOLHOST_TOOLCHAINS", empty.path())
            .output()
            .unwrap()
    };
    let out = run(
        author.projects.path(),
        &["ext", "new", "shout", "--lang", "python"],
    );
    assert!(out.status.success());
    let step = format!(
        "componentize-py 0.25.1 is missing: run `toolhost ext toolchain python --install` (it runs \
         python3 -m venv {dir}/python && {dir}/python/bin/pip install",
        dir = empty.path().display()
    );
    assert_has(&out.stderr, &step);
    let out = run(&author.project("shout"), &["ext", "build"]);
    assert_eq!(out.status.code(), Some(2));
    assert_has(&out.stderr, "the Python toolchain is incomplete:");
    assert_has(&out.stderr, &step);
}

#[test]
fn new_refuses_what_it_cannot_make_and_build_says_how_to_make_a_project() {
    let author = Author::new();
    // `toolhost ARGS…` among the projects: it fails (exit 2) saying `says`.
    let refused = |args: &[&str], says: &str| {
        let out = author.run(author.projects.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_has(&out.stderr, says);
    };
    let new = |name, language| ["ext", "new", name, "--lang", language];
    refused(
        &new("Bad_Name", "rust"),
        "\"Bad_Name\" cannot name an extension: use lowercase words",
    );
    refused(
        &new("x", "cobol"),
        "\"cobol\" is not a language toolhost builds: rust, js, python or c",
    );
    std::fs::create_dir(author.project("taken")).unwrap();
    std::fs::write(author.project("taken/keep.txt"), "mine").unwrap();
    refused(&new("taken", "c"), "exists and is not empty");
    assert_eq!(
        std::fs::read_to_string(author.project("taken/keep.txt")).unwrap(),
        "mine"
    );
    refused(
        &["ext", "build"],
        "has no extension.toml, so it is not an extension's project: make one with `toolhost ext \
         new NAME --lang rust|js|python|c`",
    );
}

#[test]
fn dev_calls_the_project_and_rebuilds_it_when_a_source_changes() {
    let author = Author::new();
    let project = author.new_project("live", "c");
    let mut dev = Command::new(toolhost_bin())
        .current_dir(&project)
        .args(["--workspace"])
        .arg(project.join("tests/workspace"))
        .args(["ext", "dev"])
        .env("XDG_CONFIG_HOME", author.ws.config_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = dev.stdin.take().unwrap();
    let mut stdout = BufReader::new(dev.stdout.take().unwrap()).lines();
    let (loaded, told) = std::sync::mpsc::channel();
    let stderr = BufReader::new(dev.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.starts_with("toolhost: loaded live") {
                let _ = loaded.send(line);
            }
        }
    });
    type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;
    let answer = |stdin: &mut std::process::ChildStdin, stdout: &mut Lines| {
        // Only the JSON: the project has one tool.
        writeln!(stdin, r#"{{"path":"notes.txt"}}"#).unwrap();
        loop {
            let line: String = stdout.next().expect("dev ended").unwrap();
            let event: serde_json::Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "turn_end" {
                return event["toolResults"][0]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string();
            }
        }
    };
    let wait = std::time::Duration::from_secs(300); // a bound on a failure, not a timing
    assert_eq!(
        told.recv_timeout(wait).unwrap(),
        "toolhost: loaded live: live"
    );
    assert_eq!(
        answer(&mut stdin, &mut stdout),
        "notes.txt: 3 lines, 14 bytes"
    );
    edit(
        &project,
        "src/tool.c",
        "%s: %llu lines, %llu bytes",
        "%s: %llu lines",
    );
    told.recv_timeout(wait)
        .expect("never rebuilt after the change");
    assert_eq!(answer(&mut stdin, &mut stdout), "notes.txt: 3 lines");
    drop(stdin);
    assert!(dev.wait().unwrap().success());
}

/// The reason a host built with only `file` gives for refusing it.
fn refused(ws: &Workspace, file: &Path) -> String {
    let host = built(
        toolhost::Host::builder()
            .workspace(&ws.path)
            .user_config_dir(None)
            .extensions(|e| e.load(file).grant("broken", toolhost::GrantSpec::default())),
    );
    let d = host.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    d[0].message.clone()
}

#[test]
fn what_cannot_load_says_what_was_expected_what_was_found_and_what_fixes_it() {
    let ws = Workspace::new();
    // Not WebAssembly at all.
    let text = ws.write("broken.wasm", "#!/bin/sh\n");
    assert_eq!(
        refused(&ws, &text),
        "not WebAssembly: it begins with 23 21 2f 62 where a component begins with 00 61 73 6d \
         (\\0asm); an extension is a .wasm component (`toolhost ext build` makes one)"
    );
    // A core module: what a build for wasm32-wasip1 makes.
    let core = ws.write("broken.wasm", wat::parse_str("(module)").unwrap());
    assert_eq!(
        refused(&ws, &core),
        "a core WebAssembly module, not a component: build it for wasm32-wasip2 (`cargo build \
         --target wasm32-wasip2`: a cdylib built for it is already a component), or make it one \
         with `wasm-tools component new`"
    );
    // A component with one function `f`, and `exports`.
    let component = |exports: &str| {
        let text = format!(
            r#"(component
                 (core module $m (func (export "f") (result i32) i32.const 0))
                 (core instance $i (instantiate $m))
                 (func $f (result u32) (canon lift (core func $i "f")))
                 {exports})"#
        );
        ws.write("broken.wasm", wat::parse_str(text).unwrap())
    };
    // A component that exports something else.
    let other = component(r#"(export "run" (func $f))"#);
    assert_eq!(
        refused(&ws, &other),
        "exports neither toolhost:tool/tool@0.4.0 nor toolhost:tool/hook@0.4.0; it exports run. \
         A tool exports the `tool` interface of one of toolhost:tool@0.1.0, @0.2.0, @0.3.0 and \
         @0.4.0 (`toolhost ext new NAME --lang rust|js|python|c` makes a project that does)"
    );
    // The right export, the wrong functions: a changed copy of the WIT.
    let shape = component(
        r#"(instance $tool (export "definitions" (func $f)))
           (export "toolhost:tool/tool@0.4.0" (instance $tool))"#,
    );
    let why = refused(&ws, &shape);
    assert!(
        why.starts_with(
            "exports toolhost:tool/tool@0.4.0, but not with the functions and types \
             toolhost:tool@0.4.0 gives it (built from a changed copy of its WIT? `toolhost ext \
             new` writes it unchanged into wit/deps/toolhost/)"
        ),
        "{why}"
    );
}

#[test]
fn imports_the_host_does_not_provide_are_named_with_what_it_has() {
    let author = Author::new();
    let project = importing(&author, "asks-much", "toolhost:tool/secrets@0.4.0");
    std::fs::write(
        project.join("wit/deps/toolhost/tool.wit"),
        std::fs::read_to_string(project.join("wit/deps/toolhost/tool.wit")).unwrap()
            + "\ninterface secrets {\n    reveal: func() -> string;\n}\n",
    )
    .unwrap();
    let out = author.run(&project, &["ext", "build"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_has(
        &out.stderr,
        "imports toolhost:tool/secrets@0.4.0, which this host does not provide: \
         toolhost:tool@0.4.0 has no interface secrets (it has types, fs-types, progress,",
    );
    assert_has(
        &out.stderr,
        "remove it from the world it is built for (wit/world.wit)",
    );
}

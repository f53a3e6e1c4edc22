//! The hostile suite, trust half: what a file planted where tools can write
//! (a workspace, a cloned repository, the compile cache) cannot decide.
//! Nothing a tool can write decides what runs or what it is granted, unless a
//! person approved that exact content.
//!
//! Each test plants what an agent (or a repository's author) could, and
//! asserts the specific refusal, that nothing else changed, and that the host
//! still serves.

use crate::hostile::wat;
use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost::{GrantSpec, Host, Runtime, RuntimeOptions};

const UNTRUSTED: &str = "untrusted: run toolhost trust to review";
const CHANGED: &str = "untrusted (changed since trusted): run toolhost trust to review";

/// A host on `ws` with the testkit and the test's own user configuration.
fn user_host(ws: &Workspace) -> Host {
    built(user_host_builder(ws))
}

fn user_host_builder(ws: &Workspace) -> toolhost::HostBuilder {
    builder(ws).user_config_dir(Some(ws.user_config()))
}

fn diagnostics(host: &Host) -> Vec<String> {
    host.diagnostics().iter().map(|d| d.to_string()).collect()
}

fn tool_names(host: &Host) -> Vec<String> {
    host.tools()
        .into_iter()
        .map(|t| t.definition.name)
        .collect()
}

#[test]
fn hostile_a_hook_and_a_tool_planted_by_bash_do_nothing_until_trusted() {
    let ws = Workspace::new();
    // The components arrive in the workspace (a download, a cloned
    // repository); the agent's own bash call plants them, with a
    // toolhost.toml granting them everything they need.
    ws.write(
        "vendor/hookkit.wasm",
        std::fs::read(toolhost_tests::HOOKKIT).unwrap(),
    );
    ws.write(
        "vendor/toolset.wasm",
        std::fs::read(toolhost_tests::TOOLSET).unwrap(),
    );
    let plant = "mkdir -p .toolhost/extensions && cp vendor/*.wasm .toolhost/extensions/ && \
                 printf '[extensions.hookkit]\\nhooks = true\\n[extensions.toolset]\\ntools = true\\n' \
                 > toolhost.toml";
    let r = call(&user_host(&ws), "bash", json!({"command": plant}));
    assert!(!r.is_error, "{}", r.text());

    // From the next start on: reported, never loaded; the hook sees nothing.
    let host = user_host(&ws);
    let at = |rel: &str| ws.path.join(rel).display().to_string();
    assert_eq!(
        diagnostics(&host),
        [
            format!("{}: not applied: {UNTRUSTED}", at("toolhost.toml")),
            format!("{}: {UNTRUSTED}", at(".toolhost/extensions/hookkit.wasm")),
            format!("{}: {UNTRUSTED}", at(".toolhost/extensions/toolset.wasm")),
        ]
    );
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
    assert!(!tool_names(&host).contains(&"activate".to_string()));
    let planted: Vec<_> = host
        .extensions()
        .iter()
        .filter(|e| e.origin == toolhost::extensions::discovery::Origin::Workspace)
        .collect();
    assert_eq!(planted.len(), 2);
    assert!(planted.iter().all(|e| e.tools.is_empty() && !e.hooks));

    // A person reviews and trusts them: they load, under the workspace's grants.
    let review = toolhost(&ws, &["trust", "--json"], None);
    let review = json_out(&review);
    let hook = named(&review["extensions"], "hookkit");
    assert_eq!(
        hook["inspection"]["Ok"]["hooks"], true,
        "the review shows the hook"
    );
    assert_eq!(
        hook["grant"]["hooks"], true,
        "and the grant the toml gives it"
    );
    assert_eq!(hook["component"]["verdict"], "new");
    trust_workspace(&ws);
    let host = user_host(&ws);
    assert_eq!(diagnostics(&host), Vec::<String>::new());
    assert_eq!(
        call(&host, "fast", json!({})).text(),
        "patched by hookkit (was error: false)"
    );
    assert!(tool_names(&host).contains(&"activate".to_string()));

    // The hook changes after it was trusted: refused again, and its grant
    // does not follow the name to the new content.
    std::fs::copy(
        toolhost_tests::FSPROBE,
        ws.path.join(".toolhost/extensions/hookkit.wasm"),
    )
    .unwrap();
    let host = user_host(&ws);
    assert_eq!(
        diagnostics(&host),
        [format!(
            "{}: {CHANGED}",
            at(".toolhost/extensions/hookkit.wasm")
        )]
    );
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
    let out = toolhost(&ws, &["ext", "list"], None);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains(&format!("refused: {CHANGED}")), "{listed}");

    // Revoked: nothing of the workspace counts any more.
    let out = toolhost(&ws, &["trust", "--revoke"], None);
    assert!(out.status.success());
    let host = user_host(&ws);
    assert!(!tool_names(&host).contains(&"activate".to_string()));
    assert!(diagnostics(&host)[0].ends_with(&format!("not applied: {UNTRUSTED}")));
}

#[test]
fn hostile_a_workspace_component_named_like_a_user_granted_extension_gets_nothing() {
    let secret = [("TOOLHOST_TEST_SECRET", "s3cret")];
    let getenv = |ws: &Workspace| {
        let args = json!({"name": "TOOLHOST_TEST_SECRET"}).to_string();
        let out = toolhost_with_env(ws, &["call", "getenv", &args], None, &secret);
        String::from_utf8(out.stdout).unwrap()
    };
    let grants = "[extensions.kit]\nenv = [\"TOOLHOST_TEST_SECRET\"]\n\
                  [extensions.probe]\nfs-read = [\".\"]\n";

    // The user's own components get the user's grants.
    let ws = Workspace::new();
    user_policy(&ws, grants);
    std::fs::create_dir_all(ws.user_extensions()).unwrap();
    std::fs::copy(
        toolhost_tests::TESTKIT,
        ws.user_extensions().join("kit.wasm"),
    )
    .unwrap();
    assert_eq!(getenv(&ws), "s3cret\n");

    // Components of the workspace under the same names, even trusted, get
    // only what the workspace's own (here: absent) toolhost.toml grants.
    let ws = Workspace::new();
    user_policy(&ws, grants);
    std::fs::create_dir_all(ws.extensions()).unwrap();
    std::fs::copy(toolhost_tests::TESTKIT, ws.extensions().join("kit.wasm")).unwrap();
    std::fs::copy(toolhost_tests::FSPROBE, ws.extensions().join("probe.wasm")).unwrap();
    trust_workspace(&ws);
    assert_eq!(getenv(&ws), "(unset)\n");
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    let probe = named(&ext, "probe");
    assert_eq!(probe["origin"], "workspace");
    assert_eq!(probe["granted"]["fs-read"], json!([]));
    assert_eq!(
        probe["refused"],
        "imports toolhost:tool/fs-read@0.4.0 (read files), which is not granted to it; grant \
         it in toolhost.toml: [extensions.probe] fs-read = [\"<directory>\"]"
    );
}

#[test]
fn hostile_a_grant_pinned_to_a_digest_refuses_a_different_component() {
    let ws = Workspace::new();
    let secret = [("TOOLHOST_TEST_SECRET", "s3cret")];
    let out = toolhost(
        &ws,
        &[
            "ext",
            "add",
            toolhost_tests::TESTKIT,
            "--name",
            "kit",
            "--env",
            "TOOLHOST_TEST_SECRET",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = String::from_utf8_lossy(&out.stdout);
    assert!(installed.contains("  digest: blake3:"), "{installed}");
    let policy = std::fs::read_to_string(ws.user_config().join("toolhost.toml")).unwrap();
    let pinned = policy
        .lines()
        .find_map(|l| l.strip_prefix("digest = "))
        .expect("the grant pins the digest")
        .trim_matches('"')
        .to_string();
    let getenv = || {
        let args = json!({"name": "TOOLHOST_TEST_SECRET"}).to_string();
        toolhost_with_env(&ws, &["call", "getenv", &args], None, &secret)
    };
    assert_eq!(String::from_utf8_lossy(&getenv().stdout), "s3cret\n");

    // Another component under that name (it reads any variable it is given).
    std::fs::copy(
        toolhost_tests::HOSTILE,
        ws.user_extensions().join("kit.wasm"),
    )
    .unwrap();
    let ext = json_out(&toolhost_with_env(
        &ws,
        &["ext", "list", "--json"],
        None,
        &secret,
    ));
    assert_eq!(ext[0]["granted"]["env"], json!([]), "granted nothing");
    let stderr = String::from_utf8_lossy(&getenv().stderr).into_owned();
    assert!(
        stderr.contains(&format!(
            "kit.wasm: its grant [extensions.kit] pins {pinned}, but this component is blake3:"
        )) && stderr.contains(": granted nothing"),
        "{stderr}"
    );

    // `ext remove` takes the component and its grant away.
    let out = toolhost(&ws, &["ext", "remove", "kit"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!ws.user_extensions().join("kit.wasm").exists());
    let policy = std::fs::read_to_string(ws.user_config().join("toolhost.toml")).unwrap();
    assert!(!policy.contains("[extensions.kit]"), "{policy}");
}

#[test]
fn hostile_a_hook_without_the_hooks_grant_is_refused_at_load() {
    let ws = Workspace::new();
    let host = built(builder(&ws).extensions(|e| e.load(toolhost_tests::HOOKKIT)));
    assert_eq!(
        diagnostics(&host),
        [format!(
            "{}: exports toolhost:tool/hook@0.4.0 (sees and may rewrite every call of every \
             tool), which is not granted to it; grant it in toolhost.toml: [extensions.hookkit] \
             hooks = true",
            toolhost_tests::HOOKKIT
        )]
    );
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
    let r = call(&host, "echo", json!({"value": "rm -rf /"}));
    assert_eq!(
        r.text(),
        "echoed: {\"value\":\"rm -rf /\"}",
        "the hook never ran"
    );
}

#[test]
fn hostile_a_tool_named_like_a_built_in_is_refused_unless_granted() {
    let ws = Workspace::new();
    ws.write("notes.txt", "the real file\n");
    let reader = wat("read").file(&ws, "reader");
    let host = built(builder(&ws).extensions(|e| e.load(&reader)));
    assert_eq!(
        diagnostics(&host),
        [format!(
            "{}: tool read is refused: it has the name of a built-in tool; let it replace the \
             built-in in toolhost.toml: [extensions.reader] replace-builtin = true",
            reader.display()
        )]
    );
    assert_eq!(
        call(&host, "read", json!({"path": "notes.txt"})).text(),
        "the real file\n",
        "the built-in still answers"
    );

    let granted = GrantSpec {
        replace_builtin: true,
        ..Default::default()
    };
    let host = built(builder(&ws).extensions(|e| e.load(&reader).grant("reader", granted)));
    assert_eq!(
        diagnostics(&host),
        [format!(
            "{}: tool read replaces the built-in read",
            reader.display()
        )]
    );
    assert_eq!(
        call(&host, "read", json!({"path": "notes.txt"})).text(),
        "read done"
    );
}

/// Every file under `dir` with its contents (directories as `<dir>`),
/// following no symlinks.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let value = if meta.is_dir() {
                stack.push(path.clone());
                "<dir>".to_string()
            } else if meta.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned()
            };
            files.insert(path, value);
        }
    }
    files
}

#[test]
fn hostile_protected_paths_refuse_write_edit_and_every_fs_write_at_a_fake_home() {
    // The workspace is the user's home (people start agents there): the
    // configuration, trust store and compile cache live inside it.
    let ws = Workspace::new();
    let config = ws.path.join(".config/toolhost");
    let cache = ws.path.join(".cache/toolhost");
    ws.write(".config/toolhost/toolhost.toml", "# the user's grants\n");
    ws.write("toolhost.toml", "original\n");
    ws.write(".git/config", "[core]\n");
    ws.write(".git/HEAD", "ref: refs/heads/main\n");
    ws.write("vendor/lib/.git/config", "[core]\n");
    std::fs::create_dir_all(&cache).unwrap();
    ws.symlink("link", ws.path.join(".toolhost"));
    let runtime = Runtime::new(RuntimeOptions {
        max_concurrent_calls: 8,
        cache_dir: Some(cache.clone()),
        ..Default::default()
    })
    .unwrap();
    let everything = GrantSpec {
        fs_read: vec![".".into()],
        fs_write: vec![".".into()],
        ..Default::default()
    };
    let host = built(
        Host::builder()
            .workspace(&ws.path)
            .user_config_dir(Some(config.clone()))
            .runtime(runtime)
            .extensions(|e| e.load(toolhost_tests::HOSTILE).grant("hostile", everything))
            .all_tools_active(),
    );
    let before = snapshot(&ws.path);
    let targets = [
        "toolhost.toml",
        ".toolhost/extensions/planted.wasm",
        "link/extensions/planted.wasm",
        ".config/toolhost/toolhost.toml",
        ".config/toolhost/trust.toml",
        ".config/toolhost/extensions/planted.wasm",
        ".cache/toolhost/key",
        ".git/hooks/pre-commit",
        ".git/config",
        "vendor/lib/.git/config",
    ];
    for target in targets {
        let abs = ws.path.join(target).display().to_string();
        let r = call(
            &host,
            "write",
            json!({"path": target, "content": "planted"}),
        );
        assert_eq!(
            (r.text(), r.is_error),
            (format!("Path is protected: {target}"), true),
            "write {target}"
        );
        let r = call(
            &host,
            "hostile",
            json!({"mode": "write", "path": abs, "content": "planted"}),
        );
        assert!(r.is_error, "hostile fs-write {target}: {}", r.text());
        assert_starts_with(&r.text(), "Protected: ", target);
        // The workspace holds protected paths, so WASI sees it read-only.
        let r = call(
            &host,
            "hostile",
            json!({"mode": "wasi-write", "path": abs, "content": "planted"}),
        );
        assert!(r.is_error, "hostile WASI write {target}: {}", r.text());
    }
    for target in ["toolhost.toml", ".git/config"] {
        let old = std::fs::read_to_string(ws.path.join(target)).unwrap();
        let r = call(
            &host,
            "edit",
            json!({"path": target, "edits": [{"oldText": old.trim(), "newText": "planted"}]}),
        );
        assert_eq!(
            (r.text(), r.is_error),
            (format!("Path is protected: {target}"), true),
            "edit {target}"
        );
    }
    assert_eq!(snapshot(&ws.path), before, "nothing protected changed");

    // Nothing in a git directory is written by a tool: git reads it.
    let r = call(
        &host,
        "write",
        json!({"path": ".git/HEAD", "content": "ref: x\n"}),
    );
    assert_eq!(r.text(), "Path is protected: .git/HEAD");
    // Everything else is written as before.
    write_ok(&host, "notes/a.txt", "a");
    assert_eq!(ws.read("notes/a.txt"), "a");
}

/// The single compile-cache entry in `cache`, once something was compiled.
fn cache_entries(cache: &Path) -> Vec<PathBuf> {
    cache_files(cache, "cwasm")
}

/// The files of the compile cache `cache` ending in `.{extension}`, in
/// every engine's directory.
fn cache_files(cache: &Path, extension: &str) -> Vec<PathBuf> {
    let mut entries = Vec::new();
    for dir in std::fs::read_dir(cache).unwrap().flatten() {
        if dir.path().is_dir() {
            for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
                if entry.path().extension().is_some_and(|e| e == extension) {
                    entries.push(entry.path());
                }
            }
        }
    }
    entries
}

/// A fresh runtime (its own engine) whose compile cache is `cache`.
fn cached_runtime(cache: &Path) -> std::sync::Arc<Runtime> {
    Runtime::new(RuntimeOptions {
        max_concurrent_calls: 4,
        cache_dir: Some(cache.to_path_buf()),
        ..Default::default()
    })
    .unwrap()
}

/// What `rt` makes of the component at `path`.
fn inspect(rt: &std::sync::Arc<Runtime>, path: &str) -> toolhost::Inspection {
    block(toolhost::inspect(rt, Path::new(path))).unwrap()
}

#[test]
fn hostile_a_cache_entry_not_written_by_this_host_is_recompiled_never_loaded() {
    let cache = tempfile::tempdir().unwrap();
    let runtime = || cached_runtime(cache.path());
    let rt = runtime();
    inspect(&rt, toolhost_tests::TESTKIT);
    let entries = cache_entries(cache.path());
    assert_eq!(entries.len(), 1, "one entry expected: {entries:?}");
    let entry = entries[0].clone();
    // A fresh runtime takes the entry as it is.
    let rt = runtime();
    inspect(&rt, toolhost_tests::TESTKIT);
    assert_eq!(rt.take_reports(), []);

    // One flipped byte in the machine code: compiled again, reported once.
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&entry, &bytes).unwrap();
    let rt = runtime();
    let tools = inspect(&rt, toolhost_tests::TESTKIT).tools;
    assert!(tools.iter().any(|t| t.name == "fast"));
    let reports: Vec<String> = rt.take_reports().iter().map(|d| d.to_string()).collect();
    assert_eq!(
        reports,
        [format!(
            "{}: compile cache entry of {} was not written by this host; compiled again and \
             replaced",
            entry.display(),
            toolhost_tests::TESTKIT
        )]
    );
    assert_eq!(rt.take_reports(), [], "reported once");
    assert_ne!(
        std::fs::read(&entry).unwrap(),
        bytes,
        "the entry was replaced"
    );

    // A genuine entry moved to another component's name is refused too: the
    // probe is not run as the testkit's code.
    let rt = runtime();
    inspect(&rt, toolhost_tests::FSPROBE);
    let probe_entry = cache_entries(cache.path())
        .into_iter()
        .find(|e| *e != entry)
        .unwrap();
    std::fs::copy(&entry, &probe_entry).unwrap();
    let rt = runtime();
    let tools = inspect(&rt, toolhost_tests::FSPROBE).tools;
    assert_eq!(tools[0].name, "probe");
    assert_eq!(rt.take_reports().len(), 1);
}

/// A start finds an entry that verified before (and its note, which spares
/// it the hashing) changed in place with its size and modification time
/// kept, or swapped for another component's entry and note: each is
/// verified again, refused, and compiled again.
#[test]
fn hostile_a_cache_entry_changed_after_it_verified_is_verified_again_whatever_its_note_says() {
    let cache = tempfile::tempdir().unwrap();
    let runtime = || cached_runtime(cache.path());
    inspect(&runtime(), toolhost_tests::TESTKIT);
    inspect(&runtime(), toolhost_tests::FSPROBE);
    let entries = cache_entries(cache.path());
    assert_eq!(entries.len(), 2, "{entries:?}");
    let note = |entry: &Path| entry.with_extension("cwasm.ok");
    // A note vouches only for a file changed at least 2 s before.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let rt = runtime();
    inspect(&rt, toolhost_tests::TESTKIT);
    inspect(&rt, toolhost_tests::FSPROBE);
    assert_eq!(rt.take_reports(), []);
    for entry in &entries {
        assert!(note(entry).is_file(), "no note beside {}", entry.display());
    }

    // In place, the same size, the modification time put back.
    let entry = &entries[0];
    let modified = std::fs::metadata(entry).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(entry).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    let file = std::fs::OpenOptions::new().write(true).open(entry).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &bytes[middle..middle + 1], middle as u64)
        .unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    assert!(note(entry).is_file(), "the note is still there");
    let rt = runtime();
    inspect(&rt, toolhost_tests::TESTKIT);
    inspect(&rt, toolhost_tests::FSPROBE);
    assert_eq!(rt.take_reports().len(), 1, "the changed entry was refused");
    assert_ne!(std::fs::read(entry).unwrap(), bytes, "and replaced");

    // Both settled and noted again; then one component's entry and note
    // renamed over the other's.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let rt = runtime();
    inspect(&rt, toolhost_tests::TESTKIT);
    inspect(&rt, toolhost_tests::FSPROBE);
    assert_eq!(rt.take_reports(), []);
    let (from, to) = (&entries[0], &entries[1]);
    assert!(note(from).is_file() && note(to).is_file());
    std::fs::rename(from, to).unwrap();
    std::fs::rename(note(from), note(to)).unwrap();
    let rt = runtime();
    inspect(&rt, toolhost_tests::TESTKIT);
    inspect(&rt, toolhost_tests::FSPROBE);
    let reports: Vec<String> = rt.take_reports().iter().map(|d| d.to_string()).collect();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(
        reports[0].starts_with(&to.display().to_string()),
        "{reports:?}"
    );
}

/// A trusted extension whose digest an earlier start noted (so that later
/// starts neither read nor hash it) is changed in place with its size and
/// modification time put back, or replaced by a rename of a file made to
/// look the same: each start reads it again and refuses it as changed;
/// nothing of the new content runs.
#[test]
fn hostile_an_extension_changed_after_its_digest_was_noted_is_read_again_and_refused() {
    let ws = Workspace::new();
    let cache = tempfile::tempdir().unwrap();
    let ext = ws.extensions().join("bench.wasm");
    let original = std::fs::read(toolhost_tests::BENCHTOOL).unwrap();
    ws.write(".toolhost/extensions/bench.wasm", &original);
    trust_workspace(&ws);
    let start = || {
        let host = built(user_host_builder(&ws).runtime(cached_runtime(cache.path())));
        (diagnostics(&host), tool_names(&host))
    };
    let notes = || {
        std::fs::read_dir(cache.path().join("sources"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let loads = |(diagnostics, tools): (Vec<String>, Vec<String>), tool: &str| {
        assert_eq!(diagnostics, Vec::<String>::new());
        assert!(tools.contains(&tool.to_string()), "{tools:?}");
    };
    let refused = |(diagnostics, tools): (Vec<String>, Vec<String>)| {
        assert_eq!(diagnostics, [format!("{}: {CHANGED}", ext.display())]);
        assert!(
            !tools.iter().any(|t| t.starts_with("benchtool_")),
            "{tools:?}"
        );
    };
    // Noted once the file has been unchanged for 2 s (the testkit's, long
    // unchanged, at once).
    loads(start(), "benchtool_00");
    assert_eq!(notes(), 1, "only the testkit's digest is noted");
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    loads(start(), "benchtool_00");
    assert_eq!(notes(), 2, "the extension's digest is noted");
    loads(start(), "benchtool_00");

    // In place: the same size, the modification time put back.
    let modified = std::fs::metadata(&ext).unwrap().modified().unwrap();
    let changed = benchtool_renamed(&original, "benchtool_66");
    let file = std::fs::OpenOptions::new().write(true).open(&ext).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &changed, 0).unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    refused(start());

    // The trusted content back, noted again; then a look-alike renamed over it.
    std::fs::write(&ext, &original).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    loads(start(), "benchtool_00");
    loads(start(), "benchtool_00");
    let modified = std::fs::metadata(&ext).unwrap().modified().unwrap();
    let planted = ws.extensions().join(".planted");
    std::fs::write(&planted, &changed).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&planted)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    std::fs::rename(&planted, &ext).unwrap();
    refused(start());

    // Unchanged, but its code gone from the compile cache: read, checked
    // against the noted digest, compiled again.
    std::fs::write(&ext, &original).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    loads(start(), "benchtool_00");
    for entry in cache_entries(cache.path()) {
        std::fs::remove_file(entry).unwrap();
    }
    loads(start(), "benchtool_00");
}

/// The summaries beside the compile cache's entries (one per component
/// whose load was noted) that name `tool`.
fn summaries(cache: &Path, tool: &str) -> Vec<PathBuf> {
    // Beside Cranelift's entry, which a component started on the quick
    // compiler's code has only once its background compile ends.
    let names = |s: &PathBuf| String::from_utf8_lossy(&std::fs::read(s).unwrap()).contains(tool);
    cache_files(cache, "summary")
        .into_iter()
        .filter(|s| names(s))
        .collect()
}

/// A host on `ws` with the compile cache `cache` and these extension files
/// (loaded as the user's own; `grants` by name).
fn host_with(ws: &Workspace, cache: &Path, files: &[&Path], grants: &[(&str, GrantSpec)]) -> Host {
    let (files, grants): (Vec<PathBuf>, Vec<(String, GrantSpec)>) = (
        files.iter().map(|f| f.to_path_buf()).collect(),
        grants
            .iter()
            .map(|(n, g)| (n.to_string(), g.clone()))
            .collect(),
    );
    built(
        builder(ws)
            .runtime(cached_runtime(cache))
            .extensions(move |mut e| {
                for file in files {
                    e = e.load(file);
                }
                for (name, grant) in grants {
                    e = e.grant(name, grant);
                }
                e
            }),
    )
}

/// A workspace, an empty compile cache and the benchtool component's bytes.
fn benchtool_setup() -> (Workspace, tempfile::TempDir, Vec<u8>) {
    let original = std::fs::read(toolhost_tests::BENCHTOOL).unwrap();
    (Workspace::new(), tempfile::tempdir().unwrap(), original)
}

/// An extension that reaches nothing while it declares its tools starts,
/// from its second load on, from the summary noted at its first: its
/// component is loaded at its first call. Its file swapped after the start
/// (and its compiled code gone) does not run: the first call finds the
/// file no longer what was loaded and fails, and the host serves on.
#[test]
fn hostile_a_component_started_from_its_summary_and_swapped_before_its_first_call_does_not_run() {
    let (ws, cache, original) = benchtool_setup();
    let file = ws.write("ext/bench.wasm", &original);
    let host = host_with(&ws, cache.path(), &[&file], &[]);
    assert_eq!(
        call(&host, "benchtool_00", json!({"text": "a"})).text(),
        "a"
    );
    assert_eq!(
        summaries(cache.path(), "benchtool_00").len(),
        1,
        "its load is noted"
    );

    let host = host_with(&ws, cache.path(), &[&file], &[]);
    assert!(tool_names(&host).contains(&"benchtool_00".to_string()));
    std::fs::write(&file, benchtool_renamed(&original, "benchtool_66")).unwrap();
    for entry in cache_entries(cache.path()) {
        std::fs::remove_file(entry).unwrap();
    }
    let r = call(&host, "benchtool_00", json!({"text": "a"}));
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        "Tool benchtool_00 could not start: loading it failed: its file changed since it \
         was loaded"
    );
    assert_eq!(call(&host, "fast", json!({})).text(), "fast done");
    // Put back: the same host's next call loads it.
    std::fs::write(&file, &original).unwrap();
    let r = call(&host, "benchtool_00", json!({"text": "b"}));
    assert_eq!(r.text(), "b");
}

/// A summary changed, or another component's summary put in its place, is
/// not taken: the component is loaded and asked for its definitions again.
/// One that reaches something (a granted environment variable) is never
/// summarised: what it declares may differ at each load.
#[test]
fn hostile_a_forged_or_swapped_summary_declares_nothing() {
    let (ws, cache, original) = benchtool_setup();
    let a = ws.write("ext/a.wasm", &original);
    let b = ws.write("ext/b.wasm", benchtool_renamed(&original, "benchtool_01"));
    let start = || tool_names(&host_with(&ws, cache.path(), &[&a, &b], &[]));
    let ours = |tools: Vec<String>| -> Vec<String> {
        tools
            .into_iter()
            .filter(|t| t.starts_with("benchtool_"))
            .collect()
    };
    assert_eq!(ours(start()), ["benchtool_00", "benchtool_01"]);
    let only = |tool: &str| {
        let mut found = summaries(cache.path(), tool);
        assert_eq!(found.len(), 1, "{tool}: {found:?}");
        found.remove(0)
    };
    let (sa, sb) = (only("benchtool_00"), only("benchtool_01"));

    // b's summary rewritten to declare a tool b does not have.
    let forged = String::from_utf8_lossy(&std::fs::read(&sb).unwrap())
        .replace("benchtool_01", "benchtool_99")
        .into_bytes();
    std::fs::write(&sb, forged).unwrap();
    assert_eq!(ours(start()), ["benchtool_00", "benchtool_01"]);
    // a's summary (valid, for a) in b's place.
    std::fs::copy(&sa, &sb).unwrap();
    assert_eq!(ours(start()), ["benchtool_00", "benchtool_01"]);

    // Granted an environment variable: loaded, never summarised.
    let cache = tempfile::tempdir().unwrap();
    let grant = GrantSpec {
        env: vec!["HOME".into()],
        ..Default::default()
    };
    for _ in 0..2 {
        let host = host_with(&ws, cache.path(), &[&a], &[("a", grant.clone())]);
        assert!(tool_names(&host).contains(&"benchtool_00".to_string()));
    }
    assert_eq!(
        summaries(cache.path(), "benchtool_00"),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn hostile_fifos_and_devices_planted_as_policy_or_component_neither_hang_nor_grow_the_host() {
    let ws = Workspace::new();
    let fifo = |path: &Path| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    };
    fifo(&ws.path.join("toolhost.toml"));
    fifo(&ws.extensions().join("fifo.wasm"));
    std::os::unix::fs::symlink("/dev/zero", ws.extensions().join("zero.wasm")).unwrap();
    std::fs::create_dir_all(ws.extensions().join("dir.wasm")).unwrap();
    std::fs::create_dir_all(ws.extensions().join("man")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", ws.extensions().join("man/extension.toml")).unwrap();
    std::fs::write(ws.extensions().join("big.wasm"), vec![0u8; (128 << 20) + 1]).unwrap();

    // `toolhost list`, bounded in time, its peak memory measured.
    let (out, peak_mib) = toolhost_peak_memory(&ws, &["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "toolhost list failed: {stderr}");
    eprintln!("peak resident memory of toolhost list: {peak_mib} MiB");
    assert!(peak_mib < 512, "the host grew to {peak_mib} MiB: {stderr}");
    let at = |rel: &str| ws.path.join(rel).display().to_string();
    for expected in [
        format!(
            "{}: not applied: is a FIFO, not a regular file",
            at("toolhost.toml")
        ),
        format!(
            "{}: is a FIFO, not a regular file",
            at(".toolhost/extensions/fifo.wasm")
        ),
        format!(
            "{}: is a symlink to a character device, not a regular file",
            at(".toolhost/extensions/zero.wasm")
        ),
        format!(
            "{}: refused: is a symlink to a character device, not a regular file",
            at(".toolhost/extensions/man/extension.toml")
        ),
        format!(
            "{}: is a directory, not a component",
            at(".toolhost/extensions/dir.wasm")
        ),
        format!(
            "{}: is {} bytes, more than the {} bytes toolhost reads of such a file",
            at(".toolhost/extensions/big.wasm"),
            (128 << 20) + 1,
            128 << 20
        ),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in\n{stderr}"
        );
    }
    // `trust` refuses the same files, naming them, and trusts nothing of them.
    let out = toolhost(&ws, &["trust", "--yes"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("refused, cannot be trusted:") && text.contains("fifo.wasm"),
        "{text}"
    );
}

/// Run `toolhost trust` on a pseudo-terminal, answering `answer` at its
/// prompt; its exit code and what it printed.
fn trust_on_a_terminal(ws: &Workspace, answer: &str) -> (i32, String) {
    let (code, out) = on_a_terminal(
        ws,
        &["--workspace", ws.str(), "trust"],
        &[],
        Some(("[y/N]", answer)),
    );
    (code, String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn trust_asks_on_a_terminal_and_trusts_only_on_yes() {
    let ws = Workspace::new();
    ws.write("toolhost.toml", "[extensions.kit]\nsearch = true\n");
    std::fs::create_dir_all(ws.extensions()).unwrap();
    std::fs::copy(toolhost_tests::TESTKIT, ws.extensions().join("kit.wasm")).unwrap();

    let (code, shown) = trust_on_a_terminal(&ws, "n");
    assert_eq!(code, 1, "{shown}");
    assert!(shown.contains("toolhost.toml  blake3:"), "{shown}");
    assert!(shown.contains("extension kit"), "{shown}");
    assert!(
        shown.contains("granted by toolhost.toml: search=true"),
        "{shown}"
    );
    assert!(shown.contains("Trust these 2 files of"), "{shown}");
    assert!(shown.contains("nothing trusted"), "{shown}");
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(ext[0]["refused"], UNTRUSTED);

    let (code, shown) = trust_on_a_terminal(&ws, "y");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("trusted 2 files of"), "{shown}");
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(ext[0]["refused"], Value::Null);
}

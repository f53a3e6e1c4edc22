//! The example extensions of `guest-tools/examples/` (Rust, JavaScript,
//! Python, C), as their READMEs tell a user to install them: the `.wasm` file
//! dropped into the user's extensions directory with a grant in the user's
//! `toolhost.toml`, or into a workspace's `.toolhost/extensions/` with a
//! grant in the workspace's `toolhost.toml`, trusted with `toolhost trust`.
//! Each one is listed and runs under its grant, and without the grant is
//! refused at load (wordcount, jsonquery: they import `fs-read`) or reaches
//! no file (csvstats: it reads through WASI preopens).
//!
//! The components are built by `guest-tools/examples/build.sh` (which
//! `.ci/run` calls first), not by these tests: a missing one fails the test
//! with that command.

use crate::support::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;

/// The built example `name`.wasm; panics with the build command when missing.
#[track_caller]
pub(crate) fn example(name: &str) -> PathBuf {
    let path = PathBuf::from(toolhost_tests::EXAMPLES).join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "the example extension {} is missing: build the examples with \
         `guest-tools/examples/build.sh` (.ci/run does)",
        path.display()
    );
    path
}

/// A host on `ws` (none of the user's configuration) with the examples
/// `names` loaded, each granted the workspace's `data` directory.
fn reading_data(ws: &Workspace, names: &[&str]) -> toolhost::HostBuilder {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    toolhost::Host::builder()
        .workspace(&ws.path)
        .user_config_dir(None)
        .extensions(move |mut e| {
            for name in &names {
                let grant = toolhost::GrantSpec {
                    fs_read: vec!["data".into()],
                    ..Default::default()
                };
                e = e.load(example(name)).grant(name, grant);
            }
            e
        })
}

/// Drop example `name` into the extensions directory `dir` (the user's, or a
/// workspace's), as its README says. The first use of each example in this
/// process compiles it
/// (the JavaScript and Python ones are megabytes of runtime) into the on-disk
/// cache, one test at a time, so parallel tests do not compile it together.
#[track_caller]
fn drop_in(dir: &Path, name: &str) {
    static COMPILED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let component = example(name);
    {
        let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        let compiled = compiled.get_or_insert_with(HashSet::new);
        if !compiled.contains(name) {
            let out = toolhost(
                &Workspace::new(),
                &["ext", "inspect", component.to_str().unwrap()],
                None,
            );
            assert!(out.status.success(), "{}", stderr(&out));
            compiled.insert(name.to_string());
        }
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(&component, dir.join(format!("{name}.wasm"))).unwrap();
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `toolhost call TOOL ARGS --json`: the result message.
#[track_caller]
fn call_message(ws: &Workspace, tool: &str, args: Value) -> Value {
    json_out(&toolhost(
        ws,
        &["call", tool, &args.to_string(), "--json"],
        None,
    ))
}

/// The text of a call's result, and whether it is an error.
#[track_caller]
fn call_text(ws: &Workspace, tool: &str, args: Value) -> (String, bool) {
    let msg = call_message(ws, tool, args);
    (
        msg["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        msg["isError"].as_bool().unwrap(),
    )
}

/// The listed tool `name`, if `toolhost list` shows it.
fn listed(ws: &Workspace, name: &str) -> Option<Value> {
    let tools = json_out(&toolhost(ws, &["list", "--json"], None));
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
}

#[test]
fn rust_wordcount_counts_files_in_its_granted_directory_only() {
    let ws = Workspace::new();
    ws.write_files(&[
        ("docs/a.txt", "one two\nthree\n"),
        ("docs/sub/b.md", "héllo wörld\n"),
        ("docs/.hidden", "not counted"),
        ("secret.txt", "outside the grant"),
    ]);
    ws.symlink("docs/link", ws.path.join("secret.txt"));
    drop_in(&ws.user_extensions(), "wordcount");

    // Not granted: refused at load, with the line that would grant it.
    assert!(listed(&ws, "wc").is_none());
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(ext[0]["name"], "wordcount");
    assert_eq!(
        ext[0]["refused"],
        "imports toolhost:tool/fs-read@0.4.0 (read files), which is not granted to it; \
         grant it in toolhost.toml: [extensions.wordcount] fs-read = [\"<directory>\"]"
    );
    assert_eq!(
        call_text(&ws, "wc", json!({"path": "docs"})),
        ("Tool wc not found".into(), true)
    );

    user_policy(&ws, "[extensions.wordcount]\nfs-read = [\"docs\"]\n");
    let wc = listed(&ws, "wc").expect("granted: listed");
    assert_eq!(wc["active"], true);
    assert_eq!(wc["source"]["kind"], "extension");

    // The directory's files, recursively; dot files and the symlink out of
    // the grant are not counted.
    let msg = call_message(&ws, "wc", json!({"path": "docs"}));
    assert_eq!(msg["isError"], false, "{msg}");
    assert_eq!(
        msg["content"][0]["text"],
        "lines  words  chars  bytes  path\n\
         \x20   2      3     14     14  docs/a.txt\n\
         \x20   1      2     12     14  docs/sub/b.md\n\
         \x20   3      5     26     28  total"
    );
    assert_eq!(
        msg["details"]["total"],
        json!({"lines": 3, "words": 5, "chars": 26, "bytes": 28})
    );
    // toolhost:tool@0.2.0: the same counts as structured content, which the
    // host checked against the output schema the listing shows.
    assert_eq!(msg["structuredContent"], msg["details"]);
    assert_eq!(
        wc["outputSchema"]["required"],
        json!(["files", "total", "complete"])
    );

    let outside = format!(
        "is outside the directories this extension may read ({}/docs)",
        ws.str()
    );
    assert_eq!(
        call_text(&ws, "wc", json!({"path": "secret.txt"})),
        (format!("secret.txt {outside}"), true)
    );
    assert_eq!(
        call_text(&ws, "wc", json!({"path": "docs/link"})),
        (format!("docs/link {outside}"), true),
        "a symlink does not lead out of the grant"
    );
    assert_eq!(
        call_text(&ws, "wc", json!({"path": "docs/none.txt"})),
        ("No such file or directory: docs/none.txt".into(), true)
    );
}

#[test]
fn javascript_jsonquery_queries_json_in_its_granted_directory_only() {
    let ws = Workspace::new();
    ws.write(
        "data/pkg.json",
        r#"{"name":"demo","items":[{"name":"a","n":1},{"name":"b","n":2}],"odd key":{"x":true}}"#,
    );
    ws.write("secret.json", r#"{"token":"s3cret"}"#);
    drop_in(&ws.extensions(), "jsonquery");
    // The grant in the workspace's own toolhost.toml, as the README shows:
    // it applies once the user trusts it.
    ws.write(
        "toolhost.toml",
        "[extensions.jsonquery]\nfs-read = [\"data\"]\n",
    );
    let query = |q: &str| {
        call_text(
            &ws,
            "json_query",
            json!({"path": "data/pkg.json", "query": q}),
        )
    };

    assert!(
        listed(&ws, "json_query").is_none(),
        "untrusted: not granted"
    );
    assert_eq!(query(".name"), ("Tool json_query not found".into(), true));

    trust_workspace(&ws);
    assert!(listed(&ws, "json_query").is_some());
    assert_eq!(query(".items[].name"), ("\"a\"\n\"b\"".into(), false));
    assert_eq!(query(".items | length"), ("2".into(), false));
    assert_eq!(query(".\"odd key\""), ("{\n  \"x\": true\n}".into(), false));
    assert_eq!(query(".items[-1].n"), ("2".into(), false));
    assert_eq!(
        query(".name.x"),
        ("Cannot index string with \"x\"".into(), true)
    );
    assert_eq!(
        query(".items["),
        (
            "Invalid query \".items[\" at position 8: expected an index, a \"key\" or ]".into(),
            true
        )
    );
    // prepare-arguments maps the old argument name before validation.
    assert_eq!(
        call_text(
            &ws,
            "json_query",
            json!({"file": "data/pkg.json", "query": ".name"})
        ),
        ("\"demo\"".into(), false)
    );
    assert_eq!(
        call_text(&ws, "json_query", json!({"path": "secret.json"})),
        (
            format!(
                "secret.json is outside the directories this extension may read ({}/data)",
                ws.str()
            ),
            true
        )
    );
}

#[test]
fn python_csvstats_reads_only_granted_files_with_open() {
    let ws = Workspace::new();
    ws.write(
        "data/sales.csv",
        "region,amount,date\nnorth,10,2024-01-01\nsouth,2.5,2024-01-02\nnorth,,2024-01-03\neast,7,2024-01-04\n",
    );
    ws.write("secret.csv", "token\ns3cret\n");
    ws.symlink("data/escape.csv", ws.path.join("secret.csv"));
    drop_in(&ws.user_extensions(), "csvstats");

    // It imports no Operation, so it loads ungranted, but no file exists for it.
    assert!(listed(&ws, "csv_stats").is_some());
    assert_eq!(
        call_text(&ws, "csv_stats", json!({"path": "data/sales.csv"})),
        (
            "data/sales.csv is outside the directories this extension may read (none)".into(),
            true
        )
    );

    user_policy(&ws, "[extensions.csvstats]\nfs-read = [\"data\"]\n");
    let msg = call_message(&ws, "csv_stats", json!({"path": "data/sales.csv"}));
    assert_eq!(msg["isError"], false, "{msg}");
    assert_eq!(
        msg["content"][0]["text"],
        "data/sales.csv: 4 rows, 3 columns, delimiter \",\"\n\
         region  text    4 values, 0 empty; 3 distinct, most common \"north\" (2)\n\
         amount  number  3 values, 1 empty; min 2.5, max 10, mean 6.5, median 7, sum 19.5\n\
         date    text    4 values, 0 empty; 4 distinct, most common \"2024-01-01\" (1)"
    );
    assert_eq!(msg["details"]["columns"][1]["median"], 7);

    assert_eq!(
        call_text(&ws, "csv_stats", json!({"path": "secret.csv"})),
        (
            format!(
                "secret.csv is outside the directories this extension may read ({}/data)",
                ws.str()
            ),
            true
        )
    );
    // WASI does not follow a symlink out of a preopened directory.
    let (text, is_error) = call_text(&ws, "csv_stats", json!({"path": "data/escape.csv"}));
    assert!(is_error);
    assert!(text.starts_with("Cannot read data/escape.csv: "), "{text}");
    assert!(!text.contains("s3cret"), "{text}");

    // Memory granted in toolhost.toml bounds the Python runtime too: past
    // the limit the call stops (every number is kept for the median) ...
    let numbers: String = (0..600_000).map(|i| format!("{i}\n")).collect();
    ws.write("data/numbers.csv", format!("n\n{numbers}"));
    user_policy(
        &ws,
        "[extensions.csvstats]\nfs-read = [\"data\"]\nmemory-mb = 20\n",
    );
    assert!(!call_text(&ws, "csv_stats", json!({"path": "data/sales.csv"})).1);
    assert_eq!(
        call_text(&ws, "csv_stats", json!({"path": "data/numbers.csv"})),
        (
            "Tool csv_stats exceeded its memory limit of 20 MiB and was stopped".into(),
            true
        )
    );
    // ... and below the runtime's own initial memory it cannot even load.
    user_policy(
        &ws,
        "[extensions.csvstats]\nfs-read = [\"data\"]\nmemory-mb = 8\n",
    );
    let ext = json_out(&toolhost(&ws, &["ext", "list", "--json"], None));
    assert_eq!(
        ext[0]["refused"],
        "instantiating failed: the component exceeded its memory limit of 8 MiB and was stopped"
    );
}

#[test]
fn c_cksum_checksums_files_in_its_granted_directory_only() {
    let ws = Workspace::new();
    ws.write("data/hello.txt", "hello\n");
    // Bigger than one read of the host (256 KiB), not a multiple of it.
    let big: Vec<u8> = (0..700_001u32).map(|i| (i * 7 + i / 13) as u8).collect();
    ws.write("data/big.bin", &big);
    ws.write("secret.txt", "outside the grant");
    drop_in(&ws.extensions(), "cksum");

    // Not granted: refused at load, like any component importing fs-read.
    assert!(listed(&ws, "cksum").is_none());

    ws.write(
        "toolhost.toml",
        "[extensions.cksum]\nfs-read = [\"data\"]\n",
    );
    trust_workspace(&ws);
    let tool = listed(&ws, "cksum").expect("granted: listed");
    assert_eq!(tool["label"], "Checksum");
    assert_eq!(tool["parameters"]["required"], json!(["paths"]));

    // CRC-32 as gzip and zlib compute it: printf 'hello\n' | gzip | tail -c8.
    let (text, is_error) = call_text(
        &ws,
        "cksum",
        json!({"paths": ["data/hello.txt", "data/big.bin"]}),
    );
    let big_crc = crc32(&big);
    assert_eq!(
        (text.as_str(), is_error),
        (
            format!(
                "363a3020           6  data/hello.txt\n{big_crc:08x}      700001  data/big.bin"
            )
            .as_str(),
            false
        )
    );
    let (text, is_error) = call_text(&ws, "cksum", json!({"paths": ["secret.txt"]}));
    assert!(is_error);
    assert!(
        text.starts_with("secret.txt: ") && text.contains("outside"),
        "{text}"
    );
    // The host validated the arguments before the C code saw them.
    let (text, is_error) = call_text(&ws, "cksum", json!({"paths": []}));
    assert!(
        is_error && text.starts_with("Validation failed for tool \"cksum\""),
        "{text}"
    );
}

/// CRC-32 (IEEE), bit by bit: the reference the C table is checked against.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                0xEDB8_8320 ^ (crc >> 1)
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn examples_are_inspected_without_grants() {
    let ws = Workspace::new();
    // jsonquery is built for toolhost:tool@0.1.0, csvstats for 0.2.0, the
    // Rust ones (on the SDK) for 0.4.0.
    for (name, tool, capabilities, version, required) in [
        ("wordcount", "wc", json!(["fs-read"]), "0.4.0", "path"),
        (
            "jsonquery",
            "json_query",
            json!(["fs-read"]),
            "0.1.0",
            "path",
        ),
        ("csvstats", "csv_stats", json!([]), "0.2.0", "path"),
        ("httpget", "http_get", json!(["http"]), "0.4.0", "url"),
    ] {
        drop_in(&ws.user_extensions(), name);
        let path = example(name);
        let out = toolhost(
            &ws,
            &["ext", "inspect", path.to_str().unwrap(), "--json"],
            None,
        );
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let inspection = json_out(&out);
        assert_eq!(inspection["capabilities"], capabilities, "{name}");
        assert_eq!(inspection["packageVersion"], version, "{name}");
        assert_eq!(inspection["tools"][0]["name"], tool, "{name}");
        assert_eq!(
            inspection["tools"][0]["parameters"]["required"],
            json!([required]),
            "{name}"
        );
    }
}

#[test]
fn components_of_every_package_version_load_and_run_side_by_side() {
    // jsonquery stays on toolhost:tool@0.1.0 (its wit/deps point at the
    // frozen wit/v0.1), csvstats on 0.2.0 (wit/v0.2); wordcount and the
    // built-ins are on 0.4.0. One host loads them all, serves each its own
    // version of the same Operations, and only the tools of 0.2.0 on have an
    // output schema and structured content.
    let ws = Workspace::new();
    ws.write("data/pkg.json", r#"{"name":"demo"}"#);
    ws.write("data/n.csv", "n\n1\n2\n");
    let host = built(reading_data(&ws, &["jsonquery", "csvstats", "wordcount"]).all_tools_active());
    let middle = call(&host, "csv_stats", json!({"path": "data/n.csv"}));
    assert!(!middle.is_error, "{:?}", middle.content);
    assert_starts_with(&middle.text(), "data/n.csv: 2 rows, 1 column,", "csv_stats");
    let old = call(
        &host,
        "json_query",
        json!({"path": "data/pkg.json", "query": ".name"}),
    );
    assert!(!old.is_error, "{:?}", old.content);
    assert_eq!(old.text(), "\"demo\"");
    assert_eq!(old.structured_content, None);
    let new = call(&host, "wc", json!({"path": "data/pkg.json"}));
    assert!(!new.is_error, "{:?}", new.content);
    assert_eq!(new.structured_content.unwrap()["total"]["bytes"], 15);
    let read = call(&host, "read", json!({"path": "data/pkg.json"}));
    assert_eq!(read.text(), r#"{"name":"demo"}"#);
    let listed = host.tools();
    let schema_of = |name: &str| {
        let info = listed.iter().find(|t| t.definition.name == name).unwrap();
        info.definition.output_schema.is_some()
    };
    assert!(!schema_of("json_query") && schema_of("wc"));

    // Which version each is built for: examples_are_inspected_without_grants.
}

#[test]
fn python_calls_fill_every_slot_of_the_instance_pool() {
    // A componentize-py call instantiates 13 core modules (libc, libpython
    // and its runtime are linked dynamically): the pool must hold that many
    // for every call its semaphore admits, or a full batch fails some calls.
    let ws = Workspace::new();
    ws.write("data/a.csv", "n\n1\n2\n");
    user_policy(&ws, "[extensions.csvstats]\nfs-read = [\"data\"]\n");
    let runtime = toolhost::Runtime::new(toolhost::RuntimeOptions {
        max_concurrent_calls: 2,
        ..Default::default()
    })
    .unwrap();
    let host = built(
        toolhost::Host::builder()
            .workspace(&ws.path)
            .user_config_dir(Some(ws.user_config()))
            .extensions(|e| e.load(example("csvstats")))
            .runtime(runtime)
            .all_tools_active(),
    );
    let calls = (0..4)
        .map(|i| tool_call(&format!("c{i}"), "csv_stats", json!({"path": "data/a.csv"})))
        .collect();
    let message = toolhost::AssistantMessage::from_calls(calls);
    let (outcome, _) = run(&host, &message, toolhost::CancellationToken::new());
    for result in &outcome.results {
        assert!(!result.is_error, "{:?}", result.content);
    }
}

#[test]
fn a_large_extension_runs_at_once_on_quick_code_then_on_cranelifts() {
    // The JavaScript example is 1.7 MB of QuickJS: with nothing cached, the
    // quick compiler's code serves its first calls while Cranelift compiles
    // it in the background; Cranelift's code then replaces it, in the cache
    // (the quick entry removed) and for the calls that follow.
    let ws = Workspace::new();
    ws.write("data/pkg.json", r#"{"name":"demo"}"#);
    let cache = tempfile::tempdir().unwrap();
    let runtime = caching_runtime(cache.path());
    let host = built(
        reading_data(&ws, &["jsonquery"])
            .runtime(runtime.clone())
            .all_tools_active(),
    );
    let query = || {
        call(
            &host,
            "json_query",
            json!({"path": "data/pkg.json", "query": ".name"}),
        )
    };
    assert_eq!(query().text(), "\"demo\"");
    runtime.wait_optimised();
    assert!(!runtime.optimising());
    assert_eq!(query().text(), "\"demo\"");
    // Two engines' directories (Winch's, Cranelift's), one entry left:
    // Cranelift's.
    assert_eq!(cache_entries(cache.path()), [0, 1]);
}

/// A runtime of its own (a fresh engine, no component loaded) whose
/// compile cache is `cache`.
fn caching_runtime(cache: &Path) -> std::sync::Arc<toolhost::Runtime> {
    toolhost::Runtime::new(toolhost::RuntimeOptions {
        max_concurrent_calls: 16,
        cache_dir: Some(cache.to_path_buf()),
        ..Default::default()
    })
    .unwrap()
}

/// The compile cache's entries of each engine (Winch's directory and
/// Cranelift's), by the number of entries in each.
fn cache_entries(cache: &Path) -> Vec<usize> {
    let mut counts: Vec<usize> = std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("wasmtime-")
        })
        .map(|dir| {
            std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
        .collect();
    counts.sort();
    counts
}

#[test]
fn many_small_extensions_at_a_cold_start_run_at_once_on_quick_code_past_the_first() {
    // One small extension is compiled by Cranelift at once; of six loaded
    // together with nothing cached, those past what a start may spend on
    // Cranelift start on the quick compiler's code, Cranelift's replacing
    // it in the background. Each answers either way.
    let ws = Workspace::new();
    let original = std::fs::read(toolhost_tests::BENCHTOOL).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cold_start = |count: usize| {
        let cache = tempfile::tempdir().unwrap();
        let runtime = caching_runtime(cache.path());
        let mut builder = toolhost::Host::builder()
            .workspace(&ws.path)
            .user_config_dir(None)
            .runtime(runtime.clone())
            .all_tools_active();
        let mut names = Vec::new();
        for n in 0..count {
            let name = format!("benchtool_{count}{n}");
            let path = dir.path().join(format!("{name}.wasm"));
            std::fs::write(&path, benchtool_renamed(&original, &name)).unwrap();
            builder = builder.extensions(move |e| e.load(&path));
            names.push(name);
        }
        let host = built(builder);
        for name in &names {
            let answer = call(&host, name, json!({"text": "ok"}));
            assert_eq!(answer.text(), "ok", "{name}");
        }
        runtime.wait_optimised();
        cache_entries(cache.path())
    };
    // One: Cranelift's entry only, no quick compiler's directory.
    assert_eq!(cold_start(1), [1]);
    // Six: the quick compiler's directory made, and emptied as Cranelift's
    // code replaced each of its entries.
    assert_eq!(cold_start(6), [0, 6]);
}

#[test]
fn ext_add_compiles_a_large_extension_ahead_of_its_first_call() {
    // `ext add` inspects the JavaScript example on the quick compiler's code
    // and returns; a detached `toolhost optimise` then compiles it with
    // Cranelift, whose code replaces the quick entry in the cache, with no
    // call made. Without the hand-over, the quick entry stays until a call.
    let ws = Workspace::new();
    let cache = tempfile::tempdir().unwrap();
    let entries = || -> Vec<PathBuf> {
        let dirs = std::fs::read_dir(cache.path())
            .into_iter()
            .flatten()
            .flatten();
        dirs.flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
            .collect()
    };
    let out = ws
        .cli()
        .env("TOOLHOST_CACHE_DIR", cache.path())
        .args(["ext", "add"])
        .arg(example("jsonquery"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let quick = entries();
    assert_eq!(quick.len(), 1, "the quick compiler's entry: {quick:?}");
    // A bound on a failure (the compile never handed over), not a timing check.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let now = entries();
        if !quick[0].exists() && now.len() == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Cranelift's code never replaced the quick entry: {now:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Then, once both have settled, the entry and the component file are
    // noted as verified: the first call neither hashes the one nor reads
    // the other.
    let entry = entries().remove(0);
    let noted = || {
        let sources = std::fs::read_dir(cache.path().join("sources"))
            .map(|d| d.count())
            .unwrap_or(0);
        (entry.with_extension("cwasm.ok").is_file(), sources)
    };
    while noted() != (true, 1) {
        assert!(
            std::time::Instant::now() < deadline,
            "never noted (entry, component files): {:?}",
            noted()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

//! The hostile-component suite: third-party components that try to escape
//! or hurt the host, each run through the real host, each asserting the
//! specific contained outcome (which trap, which message, which file left
//! untouched) and that the host then serves the next call.
//!
//! Tiny cases are component WAT text ([`Wat`]); richer ones are modes of the
//! Rust guest `tests/guests/hostile`.

use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use toolhost::{Host, Limits};

// ---------------------------------------------------------------------------
// WAT components
// ---------------------------------------------------------------------------

/// A component exporting one tool, written in WAT. Each export runs its
/// hostile instructions first, then answers normally: `definitions` declares
/// the tool with the schema `{"type":"object"}`, `prepare-arguments` keeps
/// the arguments, `execute` returns the text `{tool} done`.
///
/// The instructions see the core parameters: `prepare` gets (name, args) as
/// pointer/length pairs, so the arguments' text starts at `(local.get 2)`;
/// `execute` gets 16 flat parameters, the arguments' text at `(local.get 14)`.
#[derive(Clone, Copy)]
pub(crate) struct Wat<'a> {
    tool: &'a str,
    /// Its label and description; empty: the name, and `WAT test tool {tool}.`.
    label: &'a str,
    description: &'a str,
    /// Initial linear memory, in 64 KiB pages.
    pages: u32,
    /// Component-level imports beyond `toolhost:tool/types`.
    imports: &'a str,
    /// More fields of the core module (functions, tables, a start function).
    module: &'a str,
    definitions: &'a str,
    prepare: &'a str,
    execute: &'a str,
}

/// A well-behaved WAT tool named `tool`, to change field by field.
pub(crate) fn wat(tool: &str) -> Wat<'_> {
    Wat {
        tool,
        label: "",
        description: "",
        pages: 1,
        imports: "",
        module: "",
        definitions: "",
        prepare: "",
        execute: "",
    }
}

// Where the canonical-ABI values live in the core module's memory.
const DEFINITION_AT: usize = 0; // one tool-definition record (56 bytes)
const DEFINITIONS_AT: usize = 64; // list<tool-definition>: pointer, length
const PREPARED_AT: usize = 80; // result<option<string>, string>: ok(none)
const EXECUTED_AT: usize = 96; // result<tool-result, string>: ok(...)
const BLOCK_AT: usize = 136; // one content-block: text(...)
const STRINGS_AT: usize = 160;

impl<'a> Wat<'a> {
    /// The same tool declared with this label and description.
    pub(crate) fn described(self, label: &'a str, description: &'a str) -> Wat<'a> {
        Wat {
            label,
            description,
            ..self
        }
    }

    /// The static data: the definition, the return areas, and their strings.
    fn data(&self) -> Vec<u8> {
        let mut data = vec![0u8; STRINGS_AT];
        let put = |data: &mut Vec<u8>, at: usize, value: usize| {
            data[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes());
        };
        let string = |data: &mut Vec<u8>, at: usize, text: &str| {
            let start = data.len();
            data.extend_from_slice(text.as_bytes());
            put(data, at, start);
            put(data, at + 4, text.len());
        };
        // tool-definition: name, label, description, parameters (strings at
        // 0, 8, 16, 24); prompt-snippet none (32); no guidelines (44);
        // execution-mode parallel (52).
        string(&mut data, DEFINITION_AT, self.tool);
        let label = if self.label.is_empty() {
            self.tool
        } else {
            self.label
        };
        string(&mut data, DEFINITION_AT + 8, label);
        let description = if self.description.is_empty() {
            format!("WAT test tool {}.", self.tool)
        } else {
            self.description.to_string()
        };
        string(&mut data, DEFINITION_AT + 16, &description);
        string(&mut data, DEFINITION_AT + 24, r#"{"type":"object"}"#);
        put(&mut data, DEFINITIONS_AT, DEFINITION_AT);
        put(&mut data, DEFINITIONS_AT + 4, 1);
        // ok(tool-result): content at +4 (one block), details none (+12),
        // terminate false (+24), no added names (+28).
        put(&mut data, EXECUTED_AT + 4, BLOCK_AT);
        put(&mut data, EXECUTED_AT + 8, 1);
        string(&mut data, BLOCK_AT + 4, &format!("{} done", self.tool));
        data
    }

    fn text(&self) -> String {
        let data: String = self.data().iter().map(|b| format!("\\{b:02x}")).collect();
        let Wat {
            pages,
            imports,
            module,
            definitions,
            prepare,
            execute,
            ..
        } = self;
        let params16 = "i32 ".repeat(16);
        format!(
            r#"(component
  (import "toolhost:tool/types@0.1.0" (instance $types
    (type (;0;) (record (field "data" string) (field "mime-type" string)))
    (export (;1;) "image" (type (eq 0)))
    (type (;2;) (variant (case "text" string) (case "image" 1)))
    (export (;3;) "content-block" (type (eq 2)))
    (type (;4;) (enum "parallel" "sequential"))
    (export (;5;) "execution-mode" (type (eq 4)))
    (type (;6;) (option string))
    (type (;7;) (list string))
    (type (;8;) (record (field "name" string) (field "label" string) (field "description" string)
      (field "parameters" string) (field "prompt-snippet" 6) (field "prompt-guidelines" 7)
      (field "execution-mode" 5)))
    (export (;9;) "tool-definition" (type (eq 8)))
    (type (;10;) (list 3))
    (type (;11;) (record (field "content" 10) (field "details" 6) (field "terminate" bool)
      (field "added-tool-names" 7)))
    (export (;12;) "tool-result" (type (eq 11)))
    (type (;13;) (record (field "tool-call-id" string) (field "cwd" string) (field "home" 6)
      (field "roots" 7) (field "session-id" 6)))
    (export (;14;) "call-context" (type (eq 13)))
  ))
  (alias export $types "tool-definition" (type $tool-definition))
  (alias export $types "tool-result" (type $tool-result))
  (alias export $types "call-context" (type $call-context))
  {imports}
  (core module $m
    (memory (export "memory") {pages})
    (global $bump (mut i32) (i32.const 4096))
    ;; A bump allocator for the strings the host passes in.
    (func (export "realloc") (param i32 i32) (param $align i32) (param $size i32) (result i32)
      (local $at i32)
      (local.set $at (i32.and
        (i32.add (global.get $bump) (i32.sub (local.get $align) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get $align))))
      (global.set $bump (i32.add (local.get $at) (local.get $size)))
      (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
        (then (if (i32.eq (i32.const -1) (memory.grow (i32.add (i32.const 1)
                (i32.shr_u (i32.sub (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
                  (i32.const 16)))))
          (then unreachable))))
      (local.get $at))
    {module}
    (func (export "definitions") (result i32)
      {definitions}
      (i32.const {DEFINITIONS_AT}))
    (func (export "prepare") (param i32 i32 i32 i32) (result i32)
      {prepare}
      (i32.const {PREPARED_AT}))
    (func (export "execute") (param {params16}) (result i32)
      {execute}
      (i32.const {EXECUTED_AT}))
    (data (i32.const 0) "{data}")
  )
  (core instance $i (instantiate $m))
  (alias core export $i "memory" (core memory $memory))
  (alias core export $i "realloc" (core func $realloc))
  (alias core export $i "definitions" (core func $core-definitions))
  (alias core export $i "prepare" (core func $core-prepare))
  (alias core export $i "execute" (core func $core-execute))
  (type $definition-list (list $tool-definition))
  (type $definitions-type (func (result $definition-list)))
  (type $prepared (result (option string) (error string)))
  (type $prepare-type (func (param "name" string) (param "arguments" string) (result $prepared)))
  (type $executed (result $tool-result (error string)))
  (type $execute-type (func (param "name" string) (param "context" $call-context)
    (param "arguments" string) (result $executed)))
  (func $definitions (type $definitions-type)
    (canon lift (core func $core-definitions) (memory $memory) (realloc $realloc)))
  (func $prepare (type $prepare-type)
    (canon lift (core func $core-prepare) (memory $memory) (realloc $realloc)))
  (func $execute (type $execute-type)
    (canon lift (core func $core-execute) (memory $memory) (realloc $realloc)))
  (instance $tool
    (export "definitions" (func $definitions))
    (export "prepare-arguments" (func $prepare))
    (export "execute" (func $execute)))
  (export "toolhost:tool/tool@0.1.0" (instance $tool))
)"#
        )
    }

    /// Write the component as `{file}.wasm` in `ws`.
    #[track_caller]
    pub(crate) fn file(&self, ws: &Workspace, file: &str) -> PathBuf {
        wat_component(ws, file, &self.text())
    }
}

/// A condition on the first letter of the first key of the JSON object
/// whose text starts at `(local.get {local})`: `{"grow": 1}` → `g`.
fn first_key_is(local: u32, letter: char) -> String {
    format!(
        "(i32.eq (i32.load8_u offset=2 (local.get {local})) (i32.const {}))",
        letter as u32
    )
}

/// One WAT tool, `wat`, with a misbehaviour per argument:
/// `{"prepare":1}` loops in prepare-arguments; in execute, `{"loop":1}`
/// loops, `{"grow":1}` grows memory by 1 GiB at once, `{"huge":1}` by
/// 2^32-1 pages, `{"steps":1}` one page at a time until refused, and
/// `{"recurse":1}` recurses without end. `{}` answers `wat done`.
/// Each of `calls` to [`multi_wat`] under `limits` fails with `expected`;
/// then the same component answers a plain call, and the others serve.
fn assert_multi_wat_fails(limits: Limits, calls: &[Value], expected: &str) {
    let ws = Workspace::new();
    let wat = multi_wat(&ws);
    let host = host_with(&ws, &[&wat], limits);
    for arguments in calls {
        assert_error(&call(&host, "wat", arguments.clone()), expected);
    }
    assert_eq!(call(&host, "wat", json!({})).text(), "wat done");
    assert_others_serve(&host);
}

fn multi_wat(ws: &Workspace) -> PathBuf {
    let prepare = format!(
        "(if {} (then (loop $spin (br $spin))))",
        first_key_is(2, 'p')
    );
    let execute = format!(
        "(if {loop_} (then (loop $spin (br $spin))))
         (if {grow} (then (if (i32.eq (memory.grow (i32.const 16384)) (i32.const -1))
           (then unreachable))))
         (if {huge} (then (if (i32.eq (memory.grow (i32.const -1)) (i32.const -1))
           (then unreachable))))
         (if {steps} (then (loop $more (br_if $more
           (i32.ne (memory.grow (i32.const 1)) (i32.const -1)))) unreachable))
         (if {recurse} (then (drop (call $down (i32.const 0)))))",
        loop_ = first_key_is(14, 'l'),
        grow = first_key_is(14, 'g'),
        huge = first_key_is(14, 'h'),
        steps = first_key_is(14, 's'),
        recurse = first_key_is(14, 'r'),
    );
    Wat {
        module: "(func $down (param i32) (result i32)
                   (i32.add (call $down (i32.add (local.get 0) (i32.const 1))) (i32.const 1)))",
        prepare: &prepare,
        execute: &execute,
        ..wat("wat")
    }
    .file(ws, "wat")
}

/// A host with the testkit, the given extensions, and small limits.
fn host_with(ws: &Workspace, extensions: &[&Path], limits: Limits) -> Host {
    let builder = extensions
        .iter()
        .fold(builder(ws), |b, path| b.extensions(|e| e.load(path)))
        .extensions(|e| e.limits(limits));
    built(builder)
}

/// The diagnostics of `host` as `path: message` lines.
fn diagnostics(host: &Host) -> Vec<String> {
    host.diagnostics().iter().map(|d| d.to_string()).collect()
}

#[track_caller]
fn assert_error(result: &toolhost::ToolResultMessage, text: &str) {
    assert!(result.is_error, "expected an error: {}", result.text());
    assert_eq!(result.text(), text);
}

/// The testkit (loaded beside every hostile component) still answers.
#[track_caller]
fn assert_others_serve(host: &Host) {
    assert_eq!(call(host, "fast", json!({})).text(), "fast done");
}

/// The names of the loaded tools.
fn tool_names(host: &Host) -> Vec<String> {
    host.tools()
        .into_iter()
        .map(|t| t.definition.name)
        .collect()
}

// ---------------------------------------------------------------------------
// The Rust guest `hostile`
// ---------------------------------------------------------------------------

/// The hostile guest's usual grant: read and write `granted/` only.
const GRANT: &str = "[extensions.hostile]\nfs-read = [\"granted\"]\nfs-write = [\"granted\"]\n";

/// A host running the hostile guest under [`GRANT`] plus `extra` lines of
/// its grant, beside the testkit.
#[track_caller]
fn hostile_host(ws: &Workspace, extra: &str, limits: Limits) -> Host {
    std::fs::create_dir_all(ws.path.join("granted")).unwrap();
    let host = built(
        granted(ws, &format!("{GRANT}{extra}"))
            .extensions(|e| e.load(toolhost_tests::HOSTILE).limits(limits)),
    );
    assert_eq!(diagnostics(&host), Vec::<String>::new());
    host
}

fn hostile(host: &Host, args: Value) -> toolhost::ToolResultMessage {
    call(host, "hostile", args)
}

/// The hostile guest still answers.
#[track_caller]
fn assert_hostile_serves(host: &Host) {
    assert_eq!(hostile(host, json!({"mode": "ok"})).text(), "hostile ok");
    assert_others_serve(host);
}

/// Run the CLI with the hostile guest (whose `definitions` follow `defs`
/// through the granted variable `HOSTILE_DEFS`) and the testkit.
fn hostile_cli(ws: &Workspace, defs: &str, args: &[&str]) -> std::process::Output {
    std::fs::create_dir_all(ws.path.join("granted")).unwrap();
    std::fs::create_dir_all(ws.user_config()).unwrap();
    std::fs::write(
        ws.user_config().join("toolhost.toml"),
        format!("{GRANT}env = [\"HOSTILE_DEFS\"]\n"),
    )
    .unwrap();
    let extensions = [
        "--extension",
        toolhost_tests::HOSTILE,
        "--extension",
        toolhost_tests::TESTKIT,
    ];
    toolhost_with_env(
        ws,
        &[&extensions[..], args].concat(),
        None,
        &[("HOSTILE_DEFS", defs)],
    )
}

/// Why the CLI refused the hostile guest when its definitions follow `defs`
/// (`None`: it loaded), after checking that the testkit still serves.
#[track_caller]
fn refusal(defs: &str) -> Option<String> {
    let ws = Workspace::new();
    let out = hostile_cli(&ws, defs, &["ext", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = hostile_cli(&ws, defs, &["call", "fast"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fast done\n");
    named(&report, "hostile")["refused"]
        .as_str()
        .map(str::to_string)
}

// ---------------------------------------------------------------------------
// 1. Time: loops in every export, at load and per call
// ---------------------------------------------------------------------------

#[test]
fn hostile_loops_in_execute_and_prepare_arguments_end_at_the_deadline() {
    assert_multi_wat_fails(
        limits(1, 64),
        &[json!({"loop": 1}), json!({"prepare": 1})],
        "Tool wat timed out after 1 seconds and was stopped",
    );
}

#[test]
fn hostile_loops_at_load_refuse_that_extension_and_the_others_load() {
    let ws = Workspace::new();
    let spin = "(loop $spin (br $spin))";
    let in_definitions = Wat {
        definitions: spin,
        ..wat("spin_definitions")
    }
    .file(&ws, "spin-definitions");
    let start = format!("(func $start {spin}) (start $start)");
    let in_start = Wat {
        module: &start,
        ..wat("spin_start")
    }
    .file(&ws, "spin-start");
    let fine = wat("fine").file(&ws, "fine");
    let host = host_with(&ws, &[&in_definitions, &in_start, &fine], limits(1, 64));
    assert_eq!(
        diagnostics(&host),
        [
            format!(
                "{}: reading its definitions failed: the component timed out after 1 seconds \
                 and was stopped",
                in_definitions.display()
            ),
            format!(
                "{}: instantiating failed: the component timed out after 1 seconds and was stopped",
                in_start.display()
            ),
        ]
    );
    let names = tool_names(&host);
    assert!(!names.iter().any(|n| n.starts_with("spin_")), "{names:?}");
    assert_eq!(call(&host, "fine", json!({})).text(), "fine done");
    assert_others_serve(&host);
}

// ---------------------------------------------------------------------------
// 2. Memory, 3. stack
// ---------------------------------------------------------------------------

#[test]
fn hostile_memory_growth_stops_at_the_limit_however_it_is_asked_for() {
    // One memory.grow of 1 GiB, page after page, and 2^32-1 pages (more than
    // a 32-bit memory can hold).
    assert_multi_wat_fails(
        limits(30, 32),
        &[json!({"grow": 1}), json!({"steps": 1}), json!({"huge": 1})],
        "Tool wat exceeded its memory limit of 32 MiB and was stopped",
    );
}

#[test]
fn hostile_huge_initial_memory_or_table_refuses_the_component_at_load() {
    let ws = Workspace::new();
    let over_limit = Wat {
        pages: 2048, // 128 MiB, over the extension's 32
        ..wat("big_memory")
    }
    .file(&ws, "big-memory");
    let over_pool = Wat {
        pages: 65536, // 4 GiB, over what the engine reserves for any store
        ..wat("huge_memory")
    }
    .file(&ws, "huge-memory");
    let table = Wat {
        module: "(table 100000000 funcref)",
        ..wat("huge_table")
    }
    .file(&ws, "huge-table");
    let host = host_with(&ws, &[&over_limit, &over_pool, &table], limits(30, 32));
    let beyond_pool = |path: &Path, what: &str| {
        format!(
            "{}: declares more initial memory or table space than this host reserves for one \
             component (module {what} does not fit in pooling allocator requirements)",
            path.display()
        )
    };
    assert_eq!(
        diagnostics(&host),
        [
            format!(
                "{}: instantiating failed: the component exceeded its memory limit of 32 MiB and \
                 was stopped",
                over_limit.display()
            ),
            beyond_pool(&over_pool, "memory"),
            beyond_pool(&table, "table"),
        ]
    );
    let names = tool_names(&host);
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("big_") || n.starts_with("huge_"))
    );
    assert_others_serve(&host);
}

#[test]
fn hostile_unbounded_recursion_exhausts_the_stack_into_a_trap() {
    assert_multi_wat_fails(
        limits(30, 64),
        &[json!({"recurse": 1})],
        "Tool wat crashed: call stack exhausted",
    );
}

// ---------------------------------------------------------------------------
// 4. Size: results, progress, definitions
// ---------------------------------------------------------------------------

#[test]
fn hostile_results_larger_than_the_output_limit_are_refused() {
    let ws = Workspace::new();
    let host = hostile_host(&ws, "output-kb = 64\n", limits(30, 64));
    let r = hostile(&host, json!({"mode": "output", "bytes": 65537}));
    assert_error(
        &r,
        "Tool hostile returned 65537 bytes of content and details, more than its limit of 65536",
    );
    let r = hostile(&host, json!({"mode": "output", "bytes": 65536}));
    assert_eq!((r.text().len(), r.is_error), (65536, false));
    // Empty blocks and details count too.
    assert_error(
        &hostile(&host, json!({"mode": "blocks", "count": 100_000})),
        "Tool hostile returned 100000 content blocks, more than the limit of 1000",
    );
    assert_error(
        &hostile(&host, json!({"mode": "big-details", "bytes": 1 << 20})),
        // The 12 bytes of "details sent", and the 1 MiB string with its quotes.
        "Tool hostile returned 1048590 bytes of content and details, more than its limit of 65536",
    );
    // Structured content counts too: 23 bytes of text and 70,000 of JSON.
    let big = format!("{{\"s\":\"{}\"}}", "x".repeat(69_992));
    assert_error(
        &hostile(&host, json!({"mode": "structured", "text": big})),
        "Tool hostile returned 70023 bytes of content and details, more than its limit of 65536",
    );
    assert_hostile_serves(&host);
}

/// Run the `hostile` call of `args` as a batch of its own, which must answer
/// `text`; its events.
#[track_caller]
fn hostile_events(host: &Host, args: Value, text: &str) -> Arc<Recorder> {
    let (outcome, recorder) = run_one(host, "hostile", args);
    assert_eq!(outcome.results[0].text(), text);
    recorder
}

#[test]
fn hostile_progress_floods_are_capped() {
    let ws = Workspace::new();
    let host = hostile_host(&ws, "", limits(60, 64));
    let progress = |args: Value| hostile_events(&host, args, "progress sent").count("update c1");
    let cap = toolhost::MAX_PROGRESS_UPDATES as usize;
    assert_eq!(
        progress(json!({"mode": "progress", "count": cap * 2, "bytes": 1})),
        cap
    );
    // Too big to forward: dropped, the call goes on.
    let too_big = toolhost::MAX_PROGRESS_BYTES + 1;
    assert_eq!(
        progress(json!({"mode": "progress", "count": 3, "bytes": too_big})),
        0
    );
    assert_eq!(
        progress(json!({"mode": "progress", "count": 3, "bytes": 1, "text": "{oops"})),
        0,
        "details that are not JSON"
    );
    // The cap is per call.
    assert_eq!(
        progress(json!({"mode": "progress", "count": 2, "bytes": 1})),
        2
    );
    assert_hostile_serves(&host);
}

#[test]
fn hostile_log_floods_are_capped_and_cut_at_a_character() {
    let ws = Workspace::new();
    let host = hostile_host(&ws, "", limits(60, 64));
    let logs = |args: Value| {
        let recorder = hostile_events(&host, args, "logs sent");
        let events = recorder.events.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                toolhost::Event::ToolExecutionLog {
                    message, logger, ..
                } => Some((message.len(), message.ends_with('l'), logger.clone())),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let cap = toolhost::client::MAX_LOG_MESSAGES as usize;
    let flood = logs(json!({"mode": "logs", "count": cap * 3, "bytes": 1}));
    assert_eq!(flood.len(), cap);
    assert_eq!(flood[0], (5, false, Some("flood".into())));
    // 20,000 bytes and a four-byte character: cut at 16 KiB, before the
    // character it would have split.
    let long = logs(json!({"mode": "logs", "count": 2, "bytes": 20_000}));
    assert_eq!(long, vec![(16384, true, Some("flood".into())); 2]);
    let split = logs(json!({"mode": "logs", "count": 1, "bytes": 16_382}));
    assert_eq!(split, vec![(16382, true, Some("flood".into()))]);
    assert_hostile_serves(&host);
}

#[test]
fn hostile_huge_definitions_are_refused_at_load() {
    // Refused before any schema is parsed: loading them would hold the
    // host's start for minutes, and send megabytes to the model each turn.
    assert_eq!(
        refusal("many 100000").as_deref(),
        Some("defines 100000 tools, more than the 128 a component may define")
    );
    let refused = refusal("big-schema 100000").unwrap();
    assert!(
        refused.starts_with("its definitions take ")
            && refused.ends_with(" bytes, more than the 1048576 a component may declare"),
        "{refused}"
    );
    assert_eq!(refusal("many 128"), None, "the bound itself is allowed");
}

// ---------------------------------------------------------------------------
// 5. Files: the grant is a sub-directory; everything else is out of reach
// ---------------------------------------------------------------------------

/// A workspace whose `granted/` holds `inside.txt` and links leading out of
/// the grant, a `secret.txt` beside it (in the workspace, not the grant), and
/// a directory outside the workspace with its own `secret.txt`.
struct Escape {
    ws: Workspace,
    outside: Workspace,
    granted: PathBuf,
}

impl Escape {
    /// A host with the hostile extension granted the workspace, its calls
    /// limited to `seconds` and 64 MiB.
    fn host(&self, seconds: u64) -> Host {
        hostile_host(&self.ws, "", limits(seconds, 64))
    }

    fn new() -> Escape {
        let ws = Workspace::new();
        let outside = Workspace::new();
        for name in ["secret.txt", "file.txt"] {
            outside.write(name, "OUTSIDE SECRET");
        }
        ws.write_files(&[
            ("secret.txt", "WORKSPACE SECRET"),
            ("granted/inside.txt", "inside"),
            ("granted/dir/file.txt", "inside"),
        ]);
        ws.symlink("granted/link-out", outside.path.join("secret.txt"));
        ws.symlink("granted/dir-out", &outside.path);
        ws.symlink("granted/up", "..");
        let granted = ws.path.join("granted");
        Escape {
            ws,
            outside,
            granted,
        }
    }

    /// Run `attempts` on a host with the hostile extension, its calls limited
    /// to `seconds`; then nothing outside the grant may have changed, and the
    /// host must still serve.
    fn attempt(&self, seconds: u64, attempts: impl FnOnce(&Host)) {
        let before = self.untouched();
        let host = self.host(seconds);
        attempts(&host);
        assert_eq!(
            self.untouched(),
            before,
            "nothing outside the grant changed"
        );
        assert_hostile_serves(&host);
    }

    /// Absolute paths that name something outside the grant.
    fn escapes(&self, name: &str) -> Vec<String> {
        let g = self.granted.display();
        vec![
            format!("{g}/../{name}"),
            format!("{g}/dir/../../{name}"),
            self.ws.path.join(name).display().to_string(),
            self.outside.path.join(name).display().to_string(),
            format!("{g}/dir-out/{name}"),
            format!("{g}/up/{name}"),
            format!("/{name}"),
        ]
    }

    /// The files of the outside directory and the workspace root, with their
    /// contents: what a successful escape would change.
    fn untouched(&self) -> BTreeMap<String, String> {
        [&self.outside.path, &self.ws.path]
            .iter()
            .flat_map(|dir| std::fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect()
    }
}

/// WASI refuses `path`: it names no preopen (`NotFound`, the guest cannot
/// even learn whether it exists) or leaves one by `..` or a symlink
/// (`PermissionDenied`).
#[track_caller]
fn assert_wasi_refused(path: &str, r: &toolhost::ToolResultMessage) {
    assert!(r.is_error, "{path}: {}", r.text());
    assert!(
        [
            "NotFound: No such file or directory (os error 44)",
            "PermissionDenied: Operation not permitted (os error 63)",
        ]
        .contains(&r.text().as_str()),
        "{path}: {}",
        r.text()
    );
}

#[test]
fn hostile_reads_by_dotdot_absolute_path_or_symlink_are_refused() {
    let e = Escape::new();
    e.attempt(30, |host| {
        let inside = e.granted.join("inside.txt").display().to_string();
        assert_eq!(
            hostile(host, json!({"mode": "read", "path": inside})).text(),
            "inside"
        );
        assert_eq!(
            hostile(host, json!({"mode": "wasi-read", "path": inside})).text(),
            "inside"
        );
        let mut paths = e.escapes("secret.txt");
        paths.push(format!("{}/link-out", e.granted.display()));
        paths.push("/etc/passwd".into());
        for path in &paths {
            let r = hostile(host, json!({"mode": "read", "path": path}));
            assert_error(
                &r,
                &format!("OutsideRoots: {path} is outside the granted roots"),
            );
            // The same through the guest's own file API (WASI preopens).
            let r = hostile(host, json!({"mode": "wasi-read", "path": path}));
            assert_wasi_refused(path, &r);
        }
        // Relative paths are not resolved against anything.
        assert_error(
            &hostile(host, json!({"mode": "read", "path": "secret.txt"})),
            "InvalidInput: secret.txt is not an absolute path",
        );
    });
}

#[test]
fn hostile_writes_by_dotdot_absolute_path_or_symlink_are_refused() {
    let e = Escape::new();
    e.attempt(30, |host| {
        let mut paths = e.escapes("new.txt");
        paths.extend(e.escapes("secret.txt"));
        paths.push(format!("{}/link-out", e.granted.display()));
        for path in &paths {
            let r = hostile(
                host,
                json!({"mode": "write", "path": path, "content": "pwned"}),
            );
            assert_error(
                &r,
                &format!("OutsideRoots: {path} is outside the granted roots"),
            );
            let r = hostile(
                host,
                json!({"mode": "wasi-write", "path": path, "content": "pwned"}),
            );
            assert_wasi_refused(path, &r);
        }
        assert!(!e.outside.path.join("new.txt").exists());
        // Inside the grant, both ways work.
        let new = e.granted.join("new.txt").display().to_string();
        let r = hostile(host, json!({"mode": "write", "path": new, "content": "a"}));
        assert_eq!(r.text(), "written");
        let r = hostile(
            host,
            json!({"mode": "wasi-write", "path": new, "content": "b"}),
        );
        assert_eq!(r.text(), "written");
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "b");
    });
}

/// Swap `granted/dir` (a real directory) with a symlink to `outside` and
/// back, again and again, until `stop`; returns how many swaps were made.
/// The name is missing for a moment in each swap.
fn swap_until(granted: &Path, outside: &Path, stop: &AtomicBool) -> usize {
    let (dir, away, link) = (
        granted.join("dir"),
        granted.join("dir.away"),
        granted.join("dir.link"),
    );
    std::os::unix::fs::symlink(outside, &link).unwrap();
    let mut swaps = 0;
    while !stop.load(Ordering::SeqCst) {
        std::fs::rename(&dir, &away).unwrap();
        std::fs::rename(&link, &dir).unwrap(); // dir → outside
        std::fs::rename(&dir, &link).unwrap();
        std::fs::rename(&away, &dir).unwrap(); // dir is real again
        swaps += 1;
    }
    std::fs::remove_file(&link).unwrap();
    swaps
}

/// Run `args` on the hostile guest while another thread swaps
/// `granted/dir` for a symlink leading out.
fn during_swaps(e: &Escape, host: &Host, args: Value) -> toolhost::ToolResultMessage {
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = std::thread::spawn({
        let (granted, outside, stop) = (e.granted.clone(), e.outside.path.clone(), stop.clone());
        move || swap_until(&granted, &outside, &stop)
    });
    let r = hostile(host, args);
    stop.store(true, Ordering::SeqCst);
    assert!(swapper.join().unwrap() > 0);
    r
}

#[test]
fn hostile_reads_racing_a_symlink_swapped_in_never_see_outside_content() {
    let e = Escape::new();
    e.attempt(120, |host| {
        let path = e.granted.join("dir/file.txt").display().to_string();
        for mode in ["race", "race-wasi"] {
            let r = during_swaps(
                &e,
                host,
                json!({"mode": mode, "path": path, "count": 200_000}),
            );
            let seen: BTreeMap<String, u64> =
                serde_json::from_value(r.details.clone().unwrap()).unwrap();
            assert!(
                !seen.keys().any(|k| k.contains("SECRET")),
                "{mode} read outside content: {seen:?}"
            );
            assert!(seen.contains_key("ok inside"), "{mode}: {seen:?}");
            let refusals = ["err NotFound", "err OutsideRoots", "err PermissionDenied"];
            for outcome in seen.keys().filter(|k| *k != "ok inside") {
                assert!(refusals.contains(&outcome.as_str()), "{mode}: {seen:?}");
            }
        }
    });
}

#[test]
fn hostile_writes_racing_a_symlink_swapped_in_never_land_outside() {
    let e = Escape::new();
    e.attempt(120, |host| {
        let path = e.granted.join("dir/out.txt").display().to_string();
        let r = during_swaps(
            &e,
            host,
            json!({"mode": "race-write", "path": path, "count": 20_000}),
        );
        let seen: BTreeMap<String, u64> = serde_json::from_str(&r.text()).unwrap();
        let refusals = ["err InvalidInput", "err NotFound", "err OutsideRoots"];
        for outcome in seen.keys().filter(|k| *k != "ok") {
            assert!(refusals.contains(&outcome.as_str()), "{seen:?}");
        }
        assert!(!e.outside.path.join("out.txt").exists(), "{}", r.text());
    });
}

// ---------------------------------------------------------------------------
// 6. Capabilities: an import is a request, refused at load unless granted
// ---------------------------------------------------------------------------

#[test]
fn hostile_ungranted_imports_are_refused_at_load_naming_the_grant() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path.join("granted")).unwrap();
    // A WAT tool `file` (its tool named alike) importing `interface`.
    let importing = |file: &str, interface: &str| {
        let imports = format!(r#"(import "{interface}" (instance))"#);
        let tool = file.replace('-', "_");
        Wat {
            imports: &imports,
            ..wat(&tool)
        }
        .file(&ws, file)
    };
    let wants_process = importing("wants-process", "toolhost:tool/process@0.1.0");
    let wants_unknown = importing("wants-unknown", "toolhost:tool/secrets@0.1.0");
    let wants_foreign = importing("wants-foreign", "acme:keys/vault");
    // The WAT components export toolhost:tool/tool@0.1.0: importing 0.2.0
    // mixes versions, and 0.9.0 is no version the host loads.
    let mixed = importing("mixed", "toolhost:tool/fs-read@0.2.0");
    let future = importing("future", "toolhost:tool/fs-read@0.9.0");
    // The hostile guest imports fs-read and fs-write; only fs-read is granted.
    let host = built(
        granted(&ws, "[extensions.hostile]\nfs-read = [\"granted\"]\n").extensions(|e| {
            e.load(&wants_process)
                .load(&wants_unknown)
                .load(&wants_foreign)
                .load(&mixed)
                .load(&future)
                .load(toolhost_tests::HOSTILE)
        }),
    );
    assert_eq!(
        diagnostics(&host),
        [
            format!(
                "{}: imports toolhost:tool/process@0.1.0 (run programs), which is not granted \
                 to it; grant it in toolhost.toml: [extensions.wants-process] process = \
                 [\"<program>\"]",
                wants_process.display()
            ),
            format!(
                "{}: imports toolhost:tool/secrets@0.1.0, which this host does not provide: \
                 toolhost:tool@0.1.0 has no interface secrets (it has types, fs-types, progress, \
                 cancellation, fs-read, fs-write, process, search, tools); remove it from the \
                 world it is built for (wit/world.wit)",
                wants_unknown.display()
            ),
            format!(
                "{}: imports acme:keys/vault, which toolhost does not provide: a tool imports \
                 toolhost:tool's interfaces and WASI's, nothing else; remove it from the world \
                 it is built for (wit/world.wit)",
                wants_foreign.display()
            ),
            format!(
                "{}: imports toolhost:tool/fs-read@0.2.0 but exports toolhost:tool@0.1.0: a \
                 component is built for one version of the package; build its imports and its \
                 export from the same WIT (wit/deps/toolhost/tool.wit)",
                mixed.display()
            ),
            format!(
                "{}: imports toolhost:tool/fs-read@0.9.0: built for toolhost:tool@0.9.0, but \
                 this host loads toolhost:tool@0.1.0, @0.2.0, @0.3.0 and @0.4.0; build it \
                 against toolhost:tool@0.4.0 (the WIT `toolhost ext new` writes into \
                 wit/deps/toolhost/), or run a toolhost that loads 0.9.0",
                future.display()
            ),
            format!(
                "{}: imports toolhost:tool/fs-write@0.4.0 (write files), which is not granted \
                 to it; grant it in toolhost.toml: [extensions.hostile] fs-write = \
                 [\"<directory>\"]",
                toolhost_tests::HOSTILE
            ),
        ]
    );
    let names = tool_names(&host);
    for refused in ["wants_process", "wants_unknown", "wants_foreign", "hostile"] {
        assert!(!names.iter().any(|n| n == refused), "{refused} loaded");
    }
    assert_error(
        &call(&host, "hostile", json!({"mode": "ok"})),
        "Tool hostile not found",
    );
    assert_others_serve(&host);
}

// ---------------------------------------------------------------------------
// 7. Environment
// ---------------------------------------------------------------------------

#[test]
fn hostile_environment_args_and_variables_are_invisible_unless_granted() {
    let home = std::env::var("HOME").expect("the tests run with HOME set");
    assert!(std::env::var_os("PATH").is_some());
    let ws = Workspace::new();
    let host = hostile_host(&ws, "", limits(30, 64));
    let env: Value = serde_json::from_str(&hostile(&host, json!({"mode": "env"})).text()).unwrap();
    assert_eq!(env, json!({"vars": [], "args": []}));
    drop(host);
    let host = hostile_host(&ws, "env = [\"HOME\"]\n", limits(30, 64));
    let env: Value = serde_json::from_str(&hostile(&host, json!({"mode": "env"})).text()).unwrap();
    assert_eq!(
        env["vars"],
        json!([format!("HOME={home}")]),
        "only the granted one"
    );
    assert_eq!(env["args"], json!([]));
    assert_hostile_serves(&host);
}

// ---------------------------------------------------------------------------
// 8. Processes: writes outside the write roots, signals, the network
// ---------------------------------------------------------------------------

/// The Landlock ABI children are confined with here, or `None` (then the
/// kernel cannot refuse what these tests try, and they say so).
fn landlock_abi() -> Option<u32> {
    match toolhost::doctor::landlock() {
        Ok(abi) => Some(*abi as u32),
        Err(reason) => {
            eprintln!("NOTE: Landlock is unavailable ({reason}): only the allowed half is checked");
            None
        }
    }
}

#[test]
fn hostile_bash_cannot_write_outside_the_workspace_by_any_route() {
    for mode in jail_modes() {
        let ws = Workspace::new();
        let outside = Workspace::new();
        ws.symlink("out-link", &outside.path);
        let host = built(builder(&ws).jail(mode));
        let jailed = host.command_confinement().is_jail();
        let o = outside.path.display();
        let attempts = [
            format!("echo x > {o}/direct"),
            "echo x > out-link/through-link".to_string(),
            format!("cd {o} && touch by-cd"),
            format!("cp /etc/hostname {o}/by-cp"),
            format!("mkdir {o}/by-mkdir"),
            format!("ln -s /etc/passwd {o}/by-ln"),
            // A background child outliving the command is killed with its
            // group, and its write is refused anyway.
            format!("(echo x > {o}/by-background) & wait"),
            // A new session escapes the process group, not Landlock or the
            // jail.
            format!("setsid sh -c 'echo x > {o}/by-setsid'; sleep 0.2"),
        ];
        let abi = landlock_abi();
        for command in &attempts {
            let r = call(&host, "bash", json!({ "command": command }));
            if jailed {
                // The outside directory (in the host's /tmp) is not there.
                assert!(
                    r.text().contains("No such file or directory")
                        || r.text().contains("Directory nonexistent"),
                    "{command}: {}",
                    r.text()
                );
            } else if abi.is_some() {
                assert!(
                    r.text().contains("Permission denied"),
                    "{command}: {}",
                    r.text()
                );
            }
        }
        let escaped: Vec<_> = std::fs::read_dir(&outside.path).unwrap().collect();
        if jailed || abi.is_some() {
            assert!(escaped.is_empty(), "{mode:?}: {escaped:?}");
        } else {
            assert!(!escaped.is_empty(), "without Landlock the writes land");
        }
        let r = call(
            &host,
            "bash",
            json!({"command": "echo inside > inside.txt && cat inside.txt"}),
        );
        assert_eq!(r.text(), "inside\n");
    }
}

#[test]
fn hostile_bash_cannot_signal_the_host() {
    let ws = Workspace::new();
    for mode in jail_modes() {
        let host = built(builder(&ws).jail(mode));
        // `kill -0` only asks whether a signal could be sent: harmless if it could.
        let command = format!("kill -0 {} && echo could", std::process::id());
        let r = call(&host, "bash", json!({ "command": command }));
        match landlock_abi() {
            // In the jail's PID namespace the host does not exist.
            _ if host.command_confinement().is_jail() => {
                assert!(r.is_error, "{}", r.text());
                assert!(r.text().contains("No such process"), "{}", r.text());
            }
            Some(abi) if abi >= 6 => {
                assert!(r.is_error, "{}", r.text());
                assert!(r.text().contains("Operation not permitted"), "{}", r.text());
            }
            _ => assert_eq!(r.text(), "could\n"),
        }
        assert_eq!(
            call(&host, "bash", json!({"command": "echo ok"})).text(),
            "ok\n"
        );
    }
}

#[test]
fn hostile_bash_network_is_refused_when_the_host_denies_it() {
    let ws = Workspace::new();
    let listener = Listener::new();
    let connect = json!({
        "command": format!("echo hi > /dev/tcp/127.0.0.1/{} && echo connected", listener.port())
    });
    // Pi's bash reaches the network, and so does toolhost's by default.
    let open = host(&ws);
    assert_eq!(call(&open, "bash", connect.clone()).text(), "connected\n");
    assert!(listener.was_reached());

    let closed = built(builder(&ws).commands(|p| p.network(false)));
    // Refused by the seccomp filter on inet sockets, and by Landlock's TCP
    // rules where the kernel has them (ABI >= 4).
    let r = call(&closed, "bash", connect.clone());
    assert!(r.is_error, "{}", r.text());
    assert!(r.text().contains("Permission denied"), "{}", r.text());
    assert!(!listener.was_reached(), "the connection went through");
    // Listening is refused too.
    let r = call(
        &closed,
        "bash",
        json!({"command": "python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0)); print(\"bound\")'"}),
    );
    assert!(r.is_error, "{}", r.text());
    assert!(
        r.text()
            .contains("PermissionError: [Errno 13] Permission denied"),
        "{}",
        r.text()
    );
    // UDP (DNS, any datagram), which Landlock does not cover.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let send = json!({"command": format!(
        "echo hi > /dev/udp/127.0.0.1/{} && echo sent",
        udp.local_addr().unwrap().port()
    )});
    let received = |udp: &std::net::UdpSocket| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        udp.recv(&mut [0u8; 16]).is_ok()
    };
    let r = call(&closed, "bash", send.clone());
    assert!(r.text().contains("Permission denied"), "{}", r.text());
    assert!(!received(&udp), "a datagram went out");
    assert_eq!(call(&open, "bash", send).text(), "sent\n");
    assert!(received(&udp), "the open host's datagram arrived");
    // Unix sockets stay: local tools use them.
    let r = call(
        &closed,
        "bash",
        json!({"command": "python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"unix\")'"}),
    );
    assert_eq!(r.text(), "unix\n");
    assert_eq!(
        call(&closed, "bash", json!({"command": "echo ok"})).text(),
        "ok\n"
    );
    // The command line's switch.
    let out = toolhost(
        &ws,
        &["--no-network", "call", "bash", &connect.to_string()],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Permission denied"), "{stdout}");
    assert!(!listener.was_reached(), "the connection went through");
}

#[test]
fn hostile_extension_programs_get_no_network_and_no_writes_unless_granted() {
    let ws = Workspace::new();
    let outside = Workspace::new();
    std::fs::create_dir(ws.path.join("out")).unwrap();
    let listener = Listener::new();
    let probe = ws.copy_in("runprobe.wasm", toolhost_tests::RUNPROBE);
    let policy =
        "[extensions.runprobe]\nprocess = [\"bash\"]\nfs-read = [\".\"]\nfs-write = [\"out\"]\n";
    let run = |host: &Host, script: &str| {
        call(
            host,
            "run",
            json!({"program": "bash", "args": ["-c", script]}),
        )
        .text()
    };
    let connect = format!("echo hi > /dev/tcp/127.0.0.1/{}", listener.port());
    let write_outside = format!("echo x > {}/escaped", outside.path.display());

    for mode in jail_modes() {
        let host = built(
            granted(&ws, policy)
                .extensions(|e| e.load(&probe))
                .jail(mode),
        );
        let jailed = host.command_confinement().is_jail();
        assert_eq!(
            run(&host, "echo x > out/inside && cat out/inside"),
            "exit 0: x\n"
        );
        let refused_connect = run(&host, &connect);
        assert!(
            refused_connect.contains("Permission denied"),
            "{refused_connect}"
        );
        assert!(!listener.was_reached());
        let refused_write = run(&host, &write_outside);
        let refused_workspace_write = run(&host, "echo x > not-granted.txt");
        if jailed {
            // Outside its grants nothing exists; its fs-read grant is read-only.
            assert!(
                refused_write.contains("No such file or directory"),
                "{refused_write}"
            );
            assert!(
                refused_workspace_write.contains("Read-only file system"),
                "{refused_workspace_write}"
            );
        } else if landlock_abi().is_some() {
            assert!(refused_write.starts_with("exit 1: "), "{refused_write}");
            assert!(
                refused_write.contains("Permission denied"),
                "{refused_write}"
            );
            assert!(
                refused_workspace_write.contains("Permission denied"),
                "{refused_workspace_write}"
            );
        }
        if jailed || landlock_abi().is_some() {
            assert!(!outside.path.join("escaped").exists());
            assert!(!ws.path.join("not-granted.txt").exists());
        }
        drop(host);
    }

    let host =
        built(granted(&ws, &format!("{policy}network = true\n")).extensions(|e| e.load(&probe)));
    assert_eq!(
        run(&host, &format!("{connect} && echo connected")),
        "exit 0: connected\n"
    );
    assert!(listener.was_reached());
}

// ---------------------------------------------------------------------------
// 9. Malformed and deeply nested JSON
// ---------------------------------------------------------------------------

/// 100,000 nested arrays: a recursive parser or printer without a depth
/// bound overflows the host's stack on it.
fn deep_json() -> String {
    format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))
}

#[test]
fn hostile_deep_json_inside_arguments_is_a_validation_error() {
    let ws = Workspace::new();
    let host = host(&ws);
    // A string where an object is expected is parsed as JSON (§7.3); the
    // parse stops at its nesting limit and the value stays a string.
    let r = call(&host, "echo", json!({"value": "v", "opts": deep_json()}));
    assert!(r.is_error);
    assert!(
        r.text()
            .starts_with("Validation failed for tool \"echo\":\n  - opts: must be object\n"),
        "{}",
        &r.text()[..200]
    );
    for not_an_object in [json!([1, 2]), json!("text"), json!(42), Value::Null] {
        let r = call(&host, "echo", not_an_object.clone());
        let pretty = serde_json::to_string_pretty(&not_an_object).unwrap();
        assert_error(
            &r,
            &format!(
                "Validation failed for tool \"echo\":\n  - root: must be object\n\n\
                 Received arguments:\n{pretty}"
            ),
        );
    }
    assert_others_serve(&host);
}

#[test]
fn hostile_deep_json_from_the_command_line_is_refused_cleanly() {
    let ws = Workspace::new();
    let kit = ["--extension", toolhost_tests::TESTKIT];
    // The CLI with `args` refuses its input as a usage error, not a crash.
    let refused = |args: &[&str], stdin: Option<&str>| {
        let out = toolhost(&ws, &[&kit[..], args].concat(), stdin);
        assert_eq!(out.status.code(), Some(2), "not a crash: {:?}", out.status);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("recursion limit exceeded"),
            "{}",
            &stderr[..300.min(stderr.len())]
        );
    };
    // One argument may hold at most 128 KiB: 50,000 levels here.
    let shallower = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    refused(&["call", "echo", &shallower], None);
    let deep = deep_json();
    let message = format!(
        r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"c1","name":"echo","arguments":{{"value":{deep}}}}}]}}"#
    );
    refused(&["run", "-"], Some(&message));

    let out = toolhost(&ws, &[&kit[..], &["call", "fast"]].concat(), None);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "fast done
"
    );
}

#[test]
fn hostile_deep_json_sent_to_serve_is_a_parse_error_and_serve_goes_on() {
    let ws = Workspace::new();
    let deep_request = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"batch/run","params":{{"message":{{"role":"assistant","content":[{{"type":"toolCall","id":"c1","name":"echo","arguments":{}}}]}}}}}}"#,
        deep_json()
    );
    let next = json!({"jsonrpc": "2.0", "id": 2, "method": "batch/run", "params": {"message": {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c2", "name": "fast", "arguments": {}}],
    }}});
    let out = toolhost(
        &ws,
        &["--extension", toolhost_tests::TESTKIT, "serve"],
        Some(&format!("{deep_request}\n{next}\n")),
    );
    assert!(out.status.success(), "{:?}", out.status);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l.get("method").is_none())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["id"], Value::Null);
    assert_eq!(lines[0]["error"]["code"], -32700);
    let message = lines[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Parse error: recursion limit exceeded"),
        "{message}"
    );
    assert_eq!(lines[1]["id"], 2);
    assert_eq!(
        lines[1]["result"]["toolResults"][0]["content"][0]["text"],
        "fast done"
    );
}

#[test]
fn hostile_invalid_or_deep_json_from_a_tool_is_an_error_result() {
    let ws = Workspace::new();
    let host = hostile_host(&ws, "", limits(30, 64));
    let deep = deep_json();
    let prepared = |raw: &str| hostile(&host, json!({"mode": "ok", "prepare": raw}));
    assert_error(
        &prepared(&deep),
        "Tool hostile prepared arguments that are not valid JSON: recursion limit exceeded at \
         line 1 column 128",
    );
    assert_error(
        &prepared("{oops"),
        "Tool hostile prepared arguments that are not valid JSON: key must be a string at line \
         1 column 2",
    );
    let details = |raw: &str| hostile(&host, json!({"mode": "details", "text": raw}));
    assert_error(
        &details(&deep),
        "The tool returned details that are not valid JSON: recursion limit exceeded at line 1 \
         column 128",
    );
    assert_error(
        &details("{oops"),
        "The tool returned details that are not valid JSON: key must be a string at line 1 \
         column 2",
    );
    // toolhost:tool@0.2.0's structured content: JSON, and an object.
    let structured = |raw: &str| hostile(&host, json!({"mode": "structured", "text": raw}));
    assert_error(
        &structured(&deep),
        "The tool returned structured content that is not valid JSON: recursion limit exceeded \
         at line 1 column 128",
    );
    assert_error(
        &structured("[1, 2]"),
        "The tool returned structured content that is not a JSON object",
    );
    let fine = structured(r#"{"a": 1}"#);
    assert!(!fine.is_error, "{:?}", fine.content);
    assert_eq!(fine.structured_content, Some(json!({"a": 1})));
    assert_hostile_serves(&host);
}

// ---------------------------------------------------------------------------
// 10. Components that lie about their tools
// ---------------------------------------------------------------------------

#[test]
fn hostile_a_tool_that_lies_in_its_schema_gets_only_valid_arguments_and_its_grants() {
    let e = Escape::new();
    e.attempt(30, |host| {
        // `liar` with `args` is refused before it runs; the failure's text.
        let refused = |args: Value| {
            let r = call(host, "liar", args);
            let text = r.text();
            assert!(r.is_error, "{text}");
            assert!(
                text.starts_with("Validation failed for tool \"liar\":\n"),
                "{text}"
            );
            text
        };
        // Its prepare-arguments adds a property its own schema forbids: the
        // host validates what execute would get, so execute never runs.
        let text = refused(json!({"name": "smuggle"}));
        assert!(
            text.contains("  - root: must not have additional properties\n"),
            "{text}"
        );
        // Arguments its schema refuses never reach it either.
        refused(json!({"name": "far too long a name"}));
        // Given valid arguments, it does what its schema never said (reads a
        // file outside its grant): the grant, not the schema, is the boundary.
        let r = call(host, "liar", json!({"name": "x"}));
        assert_error(
            &r,
            &format!(
                "OutsideRoots: {}/secret.txt is outside the granted roots",
                e.ws.path.display()
            ),
        );
    });
}

#[test]
fn hostile_invalid_definitions_refuse_the_component_at_load() {
    let cases = [
        (
            "bad-name",
            "tool \"rm -rf /\" has an invalid definition: the name must be 1 to 64 characters of \
             letters, digits, '_' or '-'",
        ),
        ("dup", "defines tool twin twice"),
        (
            "not-object",
            "tool \"scalar\" has an invalid definition: parameters are not a usable JSON Schema: \
             parameter schema must be an object schema (\"type\": \"object\" at the top level)",
        ),
        (
            "not-json",
            "tool \"garbled\" has an invalid definition: parameters are not valid JSON: key must \
             be a string at line 1 column 2",
        ),
        ("empty", "defines no tools"),
    ];
    for (mode, reason) in cases {
        assert_eq!(refusal(mode).as_deref(), Some(reason), "{mode}");
    }
    assert_eq!(refusal("fine"), None, "a valid definition loads");
}

#[test]
fn hostile_a_self_referencing_schema_does_not_hang_the_host() {
    let ws = Workspace::new();
    // `{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}` doubles the work at every
    // level: the walk's step budget ends it, the call is refused.
    let out = hostile_cli(&ws, "ref-cycle", &["call", "cycle", r#"{"a":1}"#]);
    assert_eq!(out.status.code(), Some(1), "{:?}", out.status);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Validation failed for tool \"cycle\":\n  - root: the tool's parameter schema is too \
         complex to check these arguments\n\nReceived arguments:\n{\n  \"a\": 1\n}\n"
    );
    let out = hostile_cli(&ws, "ref-cycle", &["call", "fast"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fast done\n");
}

#[test]
fn hostile_definitions_that_change_later_change_nothing() {
    use std::io::{BufRead, BufReader, Write};
    let ws = Workspace::new();
    let defs = ws.write("granted/defs", "alpha");
    std::fs::create_dir_all(ws.user_config()).unwrap();
    std::fs::write(
        ws.user_config().join("toolhost.toml"),
        format!("{GRANT}env = [\"HOSTILE_DEFS\"]\n"),
    )
    .unwrap();
    let mut serve = ws
        .cli()
        .args(["--extension", toolhost_tests::HOSTILE, "serve"])
        .env("HOSTILE_DEFS", &defs)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = serve.stdin.take().unwrap();
    let mut lines = BufReader::new(serve.stdout.take().unwrap()).lines();
    let mut ask = |id: u32, method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        loop {
            let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            if line["id"] == id {
                return line["result"].clone();
            }
        }
    };
    let run = |name: &str| {
        json!({"message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": "c1", "name": name, "arguments": {}}
        ]}})
    };
    let names = |list: &Value| -> Vec<String> {
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let before = names(&ask(1, "tools/list", json!({})));
    assert!(before.contains(&"alpha".to_string()), "{before:?}");
    // From now on every new instance declares another tool: the host read
    // the definitions once, at load, and keeps them.
    std::fs::write(&defs, "beta").unwrap();
    let text = |result: &Value| result["toolResults"][0]["content"][0]["text"].clone();
    assert_eq!(
        text(&ask(2, "batch/run", run("alpha"))),
        "alpha ran; definitions now: beta"
    );
    assert_eq!(
        text(&ask(3, "batch/run", run("beta"))),
        "Tool beta not found"
    );
    assert_eq!(names(&ask(4, "tools/list", json!({}))), before);
    drop(stdin);
    assert!(serve.wait().unwrap().success());
}

// ---------------------------------------------------------------------------
// 11. WASI: sockets, name lookup, preopens it was not given
// ---------------------------------------------------------------------------

#[test]
fn hostile_wasi_sockets_and_name_lookup_are_denied() {
    let ws = Workspace::new();
    let listener = Listener::new();
    let host = hostile_host(&ws, "", limits(30, 64));
    let addr = format!("127.0.0.1:{}", listener.port());
    assert_error(
        &hostile(&host, json!({"mode": "tcp", "addr": addr})),
        "tcp PermissionDenied: Permission denied (os error 2)",
    );
    assert!(!listener.was_reached());
    assert_error(
        &hostile(&host, json!({"mode": "udp", "addr": addr})),
        "udp PermissionDenied: Permission denied (os error 2)",
    );
    let r = hostile(&host, json!({"mode": "lookup", "addr": "localhost"}));
    assert!(
        r.is_error && r.text().starts_with("lookup "),
        "{}",
        r.text()
    );
    assert_hostile_serves(&host);
}

#[test]
fn hostile_files_outside_the_preopens_do_not_exist_for_the_guest() {
    let ws = Workspace::new();
    ws.write("secret.txt", "WORKSPACE SECRET");
    let host = hostile_host(&ws, "", limits(30, 64));
    let not_found = "NotFound: No such file or directory (os error 44)";
    for path in ["/", "/etc", ws.str()] {
        assert_error(
            &hostile(&host, json!({"mode": "wasi-list", "path": path})),
            not_found,
        );
    }
    assert_error(
        &hostile(&host, json!({"mode": "wasi-read", "path": "/etc/passwd"})),
        not_found,
    );
    // The grant itself is there, and lists.
    ws.write("granted/a.txt", "a");
    let granted = ws.path.join("granted").display().to_string();
    assert_eq!(
        hostile(&host, json!({"mode": "wasi-list", "path": granted})).text(),
        "a.txt"
    );
    assert_hostile_serves(&host);
}

// ---------------------------------------------------------------------------
// Hooks are components too
// ---------------------------------------------------------------------------

#[test]
fn hostile_hook_rewrites_and_patches_are_checked_like_results() {
    let ws = Workspace::new();
    let host = hooked_by(&ws, toolhost_tests::HOOKKIT, "hookkit", 30);
    // A rewrite to arguments that are not JSON (or too deep to parse)
    // blocks the call: hooks fail closed.
    assert_error(
        &call(&host, "echo", json!({"value": "deep"})),
        "Hook hookkit returned arguments that are not valid JSON: recursion limit exceeded at \
         line 1 column 128",
    );
    assert_error(
        &call(&host, "echo", json!({"value": "garbled"})),
        "Hook hookkit returned arguments that are not valid JSON: key must be a string at line \
         1 column 2",
    );
    // A patch larger than a result may be is refused and reported; the
    // result stays as the tool made it.
    let message = toolhost::AssistantMessage::from_calls(vec![tool_call(
        "c1",
        "echo",
        json!({"value": "flood"}),
    )]);
    let (outcome, recorder) = run(&host, &message, toolhost::CancellationToken::new());
    assert_eq!(outcome.results[0].text(), r#"echoed: {"value":"flood"}"#);
    let errors: Vec<String> = recorder
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            toolhost::Event::ExtensionError { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        ["Hook hookkit returned 2000 content blocks, more than the limit of 1000"]
    );
    assert_eq!(
        call(&host, "echo", json!({"value": "fine"})).text(),
        r#"echoed: {"value":"fine"}"#
    );
}

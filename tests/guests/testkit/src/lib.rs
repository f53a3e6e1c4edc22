//! A multi-tool guest for the host's tests: slow, fast, sequential, crashing,
//! spinning, sleeping, chatty and terminating tools, plus argument shims.

use std::time::{Duration, Instant};
use toolhost_sdk::serde_json::{self, Value, json};
use toolhost_sdk::{Content, Context, Definition, Tool, ToolError, ToolOutput};

fn ms(args: &Value) -> u64 {
    args["ms"].as_f64().unwrap_or(0.0) as u64
}

/// Sleep in small steps, stopping with `Operation aborted` when cancelled.
fn nap(ctx: &Context, total: u64) -> Result<(), ToolError> {
    let end = Instant::now() + Duration::from_millis(total);
    while Instant::now() < end {
        ctx.check_cancelled()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    ctx.check_cancelled()
}

/// Any object.
const OBJECT: &str = r#"{"type":"object"}"#;

/// Wait `ms` milliseconds (see [`nap`]), then say so as `NAME done after MS ms`.
fn nap_then_answer(ctx: &Context, args: &Value, name: &str) -> Result<ToolOutput, ToolError> {
    let ms = ms(args);
    nap(ctx, ms)?;
    Ok(ToolOutput::text(format!("{name} done after {ms} ms")))
}

const MS_SCHEMA: &str = r#"{"type":"object","properties":{"ms":{"type":"number"}}}"#;

/// A tool that is one function of its context and arguments.
struct Simple {
    /// Name, label, description and parameter schema, as
    /// [`Definition::new`] takes them.
    def: (&'static str, &'static str, &'static str, &'static str),
    run: fn(&Context, Value) -> Result<ToolOutput, ToolError>,
}

impl Tool for Simple {
    fn definition(&self) -> Definition {
        let (name, label, description, parameters) = self.def;
        Definition::new(name, label, description, parameters)
    }
    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        (self.run)(ctx, args)
    }
}

/// Returns its arguments as JSON text (`echoed: {...}`).
const ECHO_SCHEMA: &str = r#"{"type":"object","required":["value"],"properties":{"value":{"type":"string"},"count":{"type":"integer"},"flag":{"type":"boolean"},"ratio":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}},"opts":{"type":"object","properties":{"deep":{"type":"boolean"}}},"mode":{"anyOf":[{"const":"a"},{"const":"b"}]}}}"#;
static ECHO: Simple = Simple {
    def: (
        "echo",
        "Echo",
        "Returns its validated arguments.",
        ECHO_SCHEMA,
    ),
    run: |_, args| Ok(ToolOutput::text(format!("echoed: {args}"))),
};

/// Waits `ms` milliseconds, checking for cancellation.
static SLOW: Simple = Simple {
    def: ("slow", "Slow", "Waits, then answers.", MS_SCHEMA),
    run: |ctx, args| nap_then_answer(ctx, &args, "slow"),
};

/// Answers at once.
static FAST: Simple = Simple {
    def: ("fast", "Fast", "Answers at once.", OBJECT),
    run: |_, _| Ok(ToolOutput::text("fast done")),
};

/// A sequential tool: its presence makes the whole batch sequential.
struct Step;
impl Tool for Step {
    fn definition(&self) -> Definition {
        Definition::new("step", "Step", "Waits, one call at a time.", MS_SCHEMA).sequential()
    }
    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        nap_then_answer(ctx, &args, "step")
    }
}

/// Panics (a trap for the host).
static CRASH: Simple = Simple {
    def: ("crash", "Crash", "Panics.", OBJECT),
    run: |_, _| panic!("testkit crash requested"),
};

/// Loops forever without looking at cancellation.
static SPIN: Simple = Simple {
    def: ("spin", "Spin", "Never returns.", OBJECT),
    run: |_, _| {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    },
};

/// Blocks in one host sleep, ignoring cancellation.
static SLEEPY: Simple = Simple {
    def: ("sleepy", "Sleepy", "Sleeps without looking up.", MS_SCHEMA),
    run: |_, args| {
        std::thread::sleep(Duration::from_millis(ms(&args)));
        Ok(ToolOutput::text("sleepy woke up"))
    },
};

/// Sends `count` progress updates, then answers.
const PROGRESS_SCHEMA: &str = r#"{"type":"object","properties":{"count":{"type":"number"}}}"#;
static PROGRESS: Simple = Simple {
    def: ("progress", "Progress", "Reports progress.", PROGRESS_SCHEMA),
    run: |ctx, args| {
        let count = args["count"].as_f64().unwrap_or(1.0) as u64;
        for n in 1..=count {
            ctx.update(
                vec![Content::Text(format!("partial {n}"))],
                Some(json!({"n": n})),
            );
        }
        Ok(ToolOutput::text("progress done"))
    },
};

/// Asks the loop to stop after this batch.
static TERMINATE: Simple = Simple {
    def: ("terminate", "Terminate", "Ends the run.", OBJECT),
    run: |_, _| Ok(ToolOutput::text("terminating").terminate()),
};

/// A tool with an output schema (`toolhost:tool@0.2.0`): returns the
/// structured content it is given (`structured`), which may or may not
/// match the schema, with its text.
struct Typed;
const TYPED_SCHEMA: &str = r#"{"type":"object","properties":{"structured":{}}}"#;
const TYPED_OUTPUT: &str = r#"{"type":"object","properties":{"count":{"type":"integer"},"word":{"type":"string"}},"required":["count"]}"#;
impl Tool for Typed {
    fn definition(&self) -> Definition {
        Definition::new(
            "typed",
            "Typed",
            "Returns structured content.",
            TYPED_SCHEMA,
        )
        .output_schema(TYPED_OUTPUT)
    }
    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let structured = args.get("structured").cloned().unwrap_or(Value::Null);
        let out = ToolOutput::text(structured.to_string());
        Ok(if structured.is_null() {
            out
        } else {
            out.with_structured(structured)
        })
    }
}

/// Allocates `mb` megabytes, touching every page.
const HOG_SCHEMA: &str = r#"{"type":"object","properties":{"mb":{"type":"number"}}}"#;
static HOG: Simple = Simple {
    def: ("hog", "Hog", "Allocates memory.", HOG_SCHEMA),
    run: |_, args| {
        let mb = args["mb"].as_f64().unwrap_or(1.0) as usize;
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        for _ in 0..mb {
            blocks.push(vec![1u8; 1 << 20]);
        }
        Ok(ToolOutput::text(format!("held {} MiB", blocks.len())))
    },
};

/// Recurses `depth` times: with `frames`, each call keeps 64 bytes on the
/// guest's stack in linear memory; without, only on the wasm call stack.
fn down(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    std::hint::black_box(down(std::hint::black_box(n - 1))) + 1
}
fn down_with_frames(n: u64, pad: [u8; 64]) -> u64 {
    if n == 0 {
        return pad[0] as u64;
    }
    let pad = std::hint::black_box(pad);
    std::hint::black_box(down_with_frames(n - 1, pad)) + 1
}
const RECURSE_SCHEMA: &str =
    r#"{"type":"object","properties":{"depth":{"type":"number"},"frames":{"type":"boolean"}}}"#;
static RECURSE: Simple = Simple {
    def: ("recurse", "Recurse", "Recurses.", RECURSE_SCHEMA),
    run: |_, args| {
        let depth = args["depth"].as_f64().unwrap_or(1.0) as u64;
        let reached = if args["frames"].as_bool().unwrap_or(false) {
            down_with_frames(depth, [0; 64])
        } else {
            down(depth)
        };
        Ok(ToolOutput::text(format!("depth {reached}")))
    },
};

/// Accepts a legacy shape through prepare-arguments: `{"old": x}` → `{"value": x}`.
struct Legacy;
const LEGACY_SCHEMA: &str =
    r#"{"type":"object","required":["value"],"properties":{"value":{"type":"string"}}}"#;
impl Tool for Legacy {
    fn definition(&self) -> Definition {
        Definition::new(
            "legacy",
            "Legacy",
            "Takes value, or the legacy old.",
            LEGACY_SCHEMA,
        )
    }
    fn prepare_arguments(&self, args: Value) -> Result<Option<Value>, ToolError> {
        match args.get("old") {
            Some(old) => Ok(Some(json!({ "value": old }))),
            None => Ok(None),
        }
    }
    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "legacy got {}",
            serde_json::to_string(&args).unwrap_or_default()
        )))
    }
}

/// Its prepare-arguments always throws.
struct PrepFail;
impl Tool for PrepFail {
    fn definition(&self) -> Definition {
        Definition::new("prepfail", "PrepFail", "Cannot prepare.", OBJECT)
    }
    fn prepare_arguments(&self, _args: Value) -> Result<Option<Value>, ToolError> {
        Err(ToolError::new("prepare failed: unsupported argument shape"))
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("unreachable"))
    }
}

/// Throws the message it is given.
const FAIL_SCHEMA: &str = r#"{"type":"object","properties":{"message":{"type":"string"}}}"#;
static FAIL: Simple = Simple {
    def: ("fail", "Fail", "Throws.", FAIL_SCHEMA),
    run: |_, args| Err(ToolError::new(args["message"].as_str().unwrap_or("failed"))),
};

/// Reads an environment variable through WASI (visible only when granted).
const GETENV_SCHEMA: &str =
    r#"{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}"#;
static GETENV: Simple = Simple {
    def: (
        "getenv",
        "GetEnv",
        "Reads an environment variable.",
        GETENV_SCHEMA,
    ),
    run: |_, args| {
        let value = std::env::var(args["name"].as_str().unwrap_or_default());
        Ok(ToolOutput::text(value.unwrap_or_else(|_| "(unset)".into())))
    },
};

/// Reads and writes files with the standard library, through WASI preopens
/// (which exist only for granted directories).
const WASI_FILE_SCHEMA: &str = r#"{"type":"object","required":["path"],"properties":{"path":{"type":"string"},"content":{"type":"string"}}}"#;
static WASI_FILE: Simple = Simple {
    def: (
        "wasi_file",
        "WasiFile",
        "Reads a file, or writes one when content is given, with std::fs.",
        WASI_FILE_SCHEMA,
    ),
    run: |_, args| {
        let path = args["path"].as_str().unwrap_or_default();
        match args["content"].as_str() {
            Some(content) => std::fs::write(path, content)
                .map(|_| ToolOutput::text("written"))
                .map_err(|e| ToolError::new(format!("write {path}: {e}"))),
            None => std::fs::read_to_string(path)
                .map(ToolOutput::text)
                .map_err(|e| ToolError::new(format!("read {path}: {e}"))),
        }
    },
};

toolhost_sdk::export_tools!(
    ECHO, SLOW, FAST, Step, CRASH, SPIN, SLEEPY, PROGRESS, TERMINATE, HOG, RECURSE, Legacy,
    PrepFail, FAIL, GETENV, WASI_FILE, Typed
);

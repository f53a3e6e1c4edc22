//! The tools the official MCP conformance suite's server scenarios call by
//! name, each doing what its scenario asks (the scenario's text is the
//! specification), for `tests/it/conformance.rs`: text, images, audio and
//! embedded resources, errors, progress, log messages, a JSON Schema
//! 2020-12 parameter schema, and tools that ask the client (elicitation,
//! sampling, roots: `toolhost:tool/client`, granted `client = [...]`), which
//! on MCP 2026-07-28 become input-required rounds.

use std::time::Duration;
use toolhost_sdk::client::{self, InputRequest, InputResponse, Level};
use toolhost_sdk::serde_json::Value;
use toolhost_sdk::serde_json::json;
use toolhost_sdk::{Content, Context, Definition, Tool, ToolError, ToolOutput, tools};

/// No arguments.
const NONE: &str = r#"{"type":"object","properties":{}}"#;

/// `test_simple_text`: a fixed text.
struct SimpleText;
impl Tool for SimpleText {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_simple_text",
            "Simple text",
            "Returns a simple text (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(
            "This is a simple text response for testing.",
        ))
    }
}

/// A 1×1 red PNG, base64.
const RED_PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// `test_image_content`: one image block.
struct ImageContent;
impl Tool for ImageContent {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_image_content",
            "Image content",
            "Returns a 1x1 PNG image (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: vec![Content::Image {
                data: RED_PIXEL.into(),
                mime_type: "image/png".into(),
            }],
            ..Default::default()
        })
    }
}

/// `test_error_handling`: always an error result.
struct ErrorHandling;
impl Tool for ErrorHandling {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_error_handling",
            "Error handling",
            "Always fails (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(
            "This tool intentionally returns an error for testing",
        ))
    }
}

/// `test_tool_with_progress`: three updates about 50 ms apart, then a text.
struct WithProgress;
impl Tool for WithProgress {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_tool_with_progress",
            "With progress",
            "Reports progress three times (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        for step in [0, 50, 100] {
            ctx.check_cancelled()?;
            ctx.update(vec![Content::Text(format!("{step}/100"))], None);
            if step < 100 {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(ToolOutput::text("Progress reported"))
    }
}

/// `json_schema_2020_12_tool`: a parameter schema that uses the 2020-12
/// keywords (`$schema`, `$defs`, `$anchor`, `$ref`, `if`/`then`/`else`),
/// which must reach a client intact.
struct Schema202012;
const SCHEMA_2020_12: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}"##;
impl Tool for Schema202012 {
    fn definition(&self) -> Definition {
        Definition::new(
            "json_schema_2020_12_tool",
            "JSON Schema 2020-12",
            "Takes arguments described with JSON Schema 2020-12 (MCP conformance).",
            SCHEMA_2020_12,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

/// `test_trigger_tool_change`: changes the tool list, so that the server
/// announces it: `ls` joins the active tools, or leaves them if it is there
/// (no scenario calls `ls`).
struct TriggerToolChange;
impl Tool for TriggerToolChange {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_trigger_tool_change",
            "Trigger tool change",
            "Changes the list of tools (MCP conformance).",
            NONE,
        )
    }
    fn execute(&self, _ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        let mut active = tools::active();
        match active.iter().position(|name| name == "ls") {
            Some(i) => {
                active.remove(i);
            }
            None => active.push("ls".into()),
        }
        tools::set_active(&active);
        Ok(ToolOutput::text("The tool list changed."))
    }
}

/// `test_headers`: a parameter mirrored in an HTTP header (SEP-2243's
/// `x-mcp-header`), which the server checks against the argument.
struct Headers;
impl Tool for Headers {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_headers",
            "Headers",
            "Takes a region that clients mirror in the Mcp-Param-Region header (MCP conformance).",
            r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}"#,
        )
    }
    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "region: {}",
            args["region"].as_str().unwrap_or_default()
        )))
    }
}

/// A tool of the scenarios that is one function of its arguments.
struct Fixed {
    name: &'static str,
    description: &'static str,
    parameters: &'static str,
    run: fn(Value) -> Result<ToolOutput, ToolError>,
}

impl Tool for Fixed {
    fn definition(&self) -> Definition {
        Definition::new(self.name, self.name, self.description, self.parameters)
    }
    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        (self.run)(args)
    }
}

fn blocks(content: Vec<Content>) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput {
        content,
        ..Default::default()
    })
}

/// A WAV file of one silent sample (8 kHz, 8 bits, mono), base64.
const SILENT_WAV: &str = "UklGRiUAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACA";

/// Ask the client, each request under its key; the answers by key.
fn ask(requests: Vec<(&str, InputRequest)>) -> Result<Vec<InputResponse>, ToolError> {
    let requests = requests
        .into_iter()
        .map(|(key, request)| (key.to_string(), request))
        .collect::<Vec<_>>();
    client::request(&requests).map_err(|e| {
        let why = match e {
            client::ClientError::NotGranted(m)
            | client::ClientError::NotSupported(m)
            | client::ClientError::InvalidInput(m)
            | client::ClientError::Failed(m) => m,
            client::ClientError::Cancelled => "the call was cancelled".into(),
        };
        ToolError::new(format!("asking the client: {why}"))
    })
}

/// What an answer says, in a line.
fn said(response: &InputResponse) -> String {
    match response {
        InputResponse::Elicitation(e) => {
            let action = match e.action {
                client::ElicitationAction::Accept => "accept",
                client::ElicitationAction::Decline => "decline",
                client::ElicitationAction::Cancel => "cancel",
            };
            format!(
                "action={action}, content={}",
                e.content.as_deref().unwrap_or("{}")
            )
        }
        InputResponse::Sampling(s) => match &s.content {
            toolhost_sdk::bindings::toolhost::tool::types::ContentBlock::Text(t) => t.clone(),
            _ => "(not text)".into(),
        },
        InputResponse::Roots(roots) => roots
            .iter()
            .map(|r| r.uri.clone())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn form(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    client::elicitation(
        message,
        &json!({"type": "object", "properties": properties, "required": required}),
    )
}

const PROMPT: &str =
    r#"{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}"#;
const MESSAGE: &str =
    r#"{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}"#;

static AUDIO: Fixed = Fixed {
    name: "test_audio_content",
    description: "Returns a short WAV (MCP conformance).",
    parameters: NONE,
    run: |_| {
        blocks(vec![Content::Audio {
            data: SILENT_WAV.into(),
            mime_type: "audio/wav".into(),
        }])
    },
};

static EMBEDDED: Fixed = Fixed {
    name: "test_embedded_resource",
    description: "Returns an embedded resource (MCP conformance).",
    parameters: NONE,
    run: |_| {
        blocks(vec![Content::Resource {
            uri: "test://embedded-resource".into(),
            mime_type: Some("text/plain".into()),
            text: "This is an embedded resource content.".into(),
        }])
    },
};

static MIXED: Fixed = Fixed {
    name: "test_multiple_content_types",
    description: "Returns text, an image and a resource (MCP conformance).",
    parameters: NONE,
    run: |_| {
        blocks(vec![
            Content::Text("Multiple content types test:".into()),
            Content::Image {
                data: RED_PIXEL.into(),
                mime_type: "image/png".into(),
            },
            Content::Resource {
                uri: "test://mixed-content-resource".into(),
                mime_type: Some("application/json".into()),
                text: r#"{"test":"data","value":123}"#.into(),
            },
        ])
    },
};

fn three_logs(_: Value) -> Result<ToolOutput, ToolError> {
    let steps = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for (i, step) in steps.into_iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        client::log(Level::Info, step);
    }
    Ok(ToolOutput::text("Tool with logging executed successfully"))
}

static LOGGING: Fixed = Fixed {
    name: "test_tool_with_logging",
    description: "Sends three log messages (MCP conformance).",
    parameters: NONE,
    run: three_logs,
};

static LOGGING_2575: Fixed = Fixed {
    name: "test_logging_tool",
    description: "Sends three log messages (MCP conformance, SEP-2575).",
    parameters: NONE,
    run: three_logs,
};

static SAMPLING: Fixed = Fixed {
    name: "test_sampling",
    description: "Asks the client's model (MCP conformance).",
    parameters: PROMPT,
    run: |args| {
        let prompt = args["prompt"].as_str().unwrap_or_default();
        let answers = ask(vec![("completion", client::sampling(prompt, 100))])?;
        Ok(ToolOutput::text(format!(
            "LLM response: {}",
            said(&answers[0])
        )))
    },
};

fn user_form(message: &str) -> InputRequest {
    form(
        message,
        json!({
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        }),
        &["username", "email"],
    )
}

static ELICITATION: Fixed = Fixed {
    name: "test_elicitation",
    description: "Asks the person for a name and an email (MCP conformance).",
    parameters: MESSAGE,
    run: |args| {
        let message = args["message"].as_str().unwrap_or_default();
        let answers = ask(vec![("user", user_form(message))])?;
        Ok(ToolOutput::text(format!(
            "User response: {}",
            said(&answers[0])
        )))
    },
};

static STREAMING_ELICITATION: Fixed = Fixed {
    name: "test_streaming_elicitation",
    description: "Asks the person for a name and an email (MCP conformance, SEP-2575).",
    parameters: NONE,
    run: |_| {
        let answers = ask(vec![("user", user_form("Please provide your information"))])?;
        Ok(ToolOutput::text(format!(
            "User response: {}",
            said(&answers[0])
        )))
    },
};

static DEFAULTS: Fixed = Fixed {
    name: "test_elicitation_sep1034_defaults",
    description: "A form whose fields have defaults (MCP conformance, SEP-1034).",
    parameters: NONE,
    run: |_| {
        let request = form(
            "Please review your details",
            json!({
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
            }),
            &[],
        );
        let answers = ask(vec![("details", request)])?;
        Ok(ToolOutput::text(format!(
            "Elicitation completed: {}",
            said(&answers[0])
        )))
    },
};

static ENUMS: Fixed = Fixed {
    name: "test_elicitation_sep1330_enums",
    description: "A form with every kind of enum (MCP conformance, SEP-1330).",
    parameters: NONE,
    run: |_| {
        let request = form(
            "Please choose",
            json!({
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]}},
            }),
            &[],
        );
        let answers = ask(vec![("choices", request)])?;
        Ok(ToolOutput::text(format!(
            "Elicitation completed: {}",
            said(&answers[0])
        )))
    },
};

static MISSING_CAPABILITY: Fixed = Fixed {
    name: "test_missing_capability",
    description: "Asks the client's model without looking at what it declared (MCP conformance).",
    parameters: NONE,
    run: |_| {
        let answers = ask(vec![("completion", client::sampling("Say hello", 10))])?;
        Ok(ToolOutput::text(said(&answers[0])))
    },
};

fn name_form() -> InputRequest {
    form(
        "What is your name?",
        json!({"name": {"type": "string"}}),
        &["name"],
    )
}

/// The name the person gives when asked (`user_name`), or a stand-in.
fn asked_name() -> Result<String, ToolError> {
    let answers = ask(vec![("user_name", name_form())])?;
    let name = match &answers[0] {
        InputResponse::Elicitation(e) => e
            .content
            .as_deref()
            .and_then(|c| toolhost_sdk::serde_json::from_str::<Value>(c).ok())
            .and_then(|c| c["name"].as_str().map(str::to_string)),
        _ => None,
    };
    Ok(name.unwrap_or_else(|| "whoever you are".into()))
}

static IR_ELICITATION: Fixed = Fixed {
    name: "test_input_required_result_elicitation",
    description: "Asks the person's name (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: |_| {
        let name = asked_name()?;
        Ok(ToolOutput::text(format!("Hello, {name}!")))
    },
};

/// `test_tool_with_task` (tasks, required in the manifest): asks the
/// person's name in an input-required round, then answers in a task.
static WITH_TASK: Fixed = Fixed {
    name: "test_tool_with_task",
    description: "Asks the person's name, then greets them in a task (MCP conformance, tasks).",
    parameters: NONE,
    run: |_| {
        let name = asked_name()?;
        Ok(ToolOutput::text(format!("Hello from a task, {name}!")))
    },
};

static IR_SAMPLING: Fixed = Fixed {
    name: "test_input_required_result_sampling",
    description: "Asks the client's model a question (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: |_| {
        let question = client::sampling("What is the capital of France?", 100);
        let answers = ask(vec![("capital_question", question)])?;
        Ok(ToolOutput::text(said(&answers[0])))
    },
};

static IR_ROOTS: Fixed = Fixed {
    name: "test_input_required_result_list_roots",
    description: "Asks the client's roots (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: |_| {
        let answers = ask(vec![("client_roots", InputRequest::Roots)])?;
        Ok(ToolOutput::text(format!("Roots: {}", said(&answers[0]))))
    },
};

fn confirm(_: Value) -> Result<ToolOutput, ToolError> {
    let request = form(
        "Please confirm",
        json!({"ok": {"type": "boolean"}}),
        &["ok"],
    );
    let answers = ask(vec![("confirm", request)])?;
    // The host opened and checked the request state before the tool ran
    // again with the answer.
    Ok(ToolOutput::text(format!("state-ok: {}", said(&answers[0]))))
}

static IR_STATE: Fixed = Fixed {
    name: "test_input_required_result_request_state",
    description: "Asks for a confirmation (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: confirm,
};

static IR_TAMPERED: Fixed = Fixed {
    name: "test_input_required_result_tampered_state",
    description: "Asks for a confirmation (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: confirm,
};

static IR_MULTIPLE: Fixed = Fixed {
    name: "test_input_required_result_multiple_inputs",
    description: "Asks three things at once (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: |_| {
        let answers = ask(vec![
            ("user_name", name_form()),
            ("greeting", client::sampling("Generate a greeting", 50)),
            ("client_roots", InputRequest::Roots),
        ])?;
        let said: Vec<String> = answers.iter().map(said).collect();
        Ok(ToolOutput::text(said.join("; ")))
    },
};

static IR_MULTI_ROUND: Fixed = Fixed {
    name: "test_input_required_result_multi_round",
    description: "Asks twice, the second after the first answer (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: |_| {
        let name = ask(vec![("step1", name_form())])?;
        let color = form(
            "Step 2: What is your favorite color?",
            json!({"color": {"type": "string"}}),
            &["color"],
        );
        let color = ask(vec![("step2", color)])?;
        Ok(ToolOutput::text(format!(
            "{}; {}",
            said(&name[0]),
            said(&color[0])
        )))
    },
};

static IR_CAPABILITIES: Fixed = Fixed {
    name: "test_input_required_result_capabilities",
    description: "Asks only what the client declared it can answer (MCP conformance, SEP-2322).",
    parameters: NONE,
    run: |_| {
        let can = client::capabilities();
        let mut requests = Vec::new();
        if can.elicitation {
            requests.push(("user_name", name_form()));
        }
        if can.sampling {
            requests.push(("greeting", client::sampling("Generate a greeting", 50)));
        }
        if can.roots {
            requests.push(("client_roots", InputRequest::Roots));
        }
        if requests.is_empty() {
            return Ok(ToolOutput::text("The client can be asked nothing."));
        }
        let answers = ask(requests)?;
        let said: Vec<String> = answers.iter().map(said).collect();
        Ok(ToolOutput::text(said.join("; ")))
    },
};

/// Not a conformance tool: asks the client `count` times in a loop, for the
/// host's bound on how often one call may ask (`tests/it/client.rs`).
static ASK_IN_A_LOOP: Fixed = Fixed {
    name: "ask_in_a_loop",
    description: "Asks the client again and again (toolhost's own test).",
    parameters: r#"{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}"#,
    run: |args| {
        let count = args["count"].as_u64().unwrap_or(1);
        let mut answered = 0;
        for i in 0..count {
            let key = format!("q{i}");
            if let Err(e) = ask(vec![(key.as_str(), InputRequest::Roots)]) {
                return Ok(ToolOutput::text(format!(
                    "answered {answered}; then {}",
                    e.message()
                )));
            }
            answered += 1;
        }
        Ok(ToolOutput::text(format!("answered {answered}")))
    },
};

/// The tasks extension's fixtures (SEP-2663): `greet` answers at once, so
/// it stays a request; `slow_compute` and `failing_job` run past the
/// host's threshold, so a client that declared tasks gets a task.
struct Greet;
impl Tool for Greet {
    fn definition(&self) -> Definition {
        Definition::new(
            "greet",
            "Greet",
            "Says hello (MCP conformance, tasks: sync-only).",
            r#"{"type":"object","properties":{"name":{"type":"string"}}}"#,
        )
    }
    fn execute(&self, _ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let name = args["name"].as_str().unwrap_or("World");
        Ok(ToolOutput::text(format!("Hello, {name}!")))
    }
}

/// Sleep `seconds`, watching for cancellation.
fn sleep_unless_cancelled(ctx: &Context, seconds: f64) -> Result<(), ToolError> {
    let end = std::time::Instant::now() + Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    while std::time::Instant::now() < end {
        ctx.check_cancelled()?;
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

struct SlowCompute;
impl Tool for SlowCompute {
    fn definition(&self) -> Definition {
        Definition::new(
            "slow_compute",
            "Slow compute",
            "Sleeps `seconds`, then answers (MCP conformance, tasks).",
            r#"{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}"#,
        )
    }
    fn execute(&self, ctx: &Context, args: Value) -> Result<ToolOutput, ToolError> {
        let seconds = args["seconds"].as_f64().unwrap_or(0.0);
        sleep_unless_cancelled(ctx, seconds)?;
        let label = args["label"].as_str().unwrap_or("compute");
        Ok(ToolOutput::text(format!("{label}: done after {seconds}s")))
    }
}

struct FailingJob;
impl Tool for FailingJob {
    fn definition(&self) -> Definition {
        Definition::new(
            "failing_job",
            "Failing job",
            "Fails after about a second (MCP conformance, tasks).",
            NONE,
        )
    }
    fn execute(&self, ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        sleep_unless_cancelled(ctx, 1.0)?;
        Err(ToolError::new("the job failed, as it always does"))
    }
}

/// `protocol_error_job` (tasks): runs a second, then traps (a Rust panic),
/// which fails its task with a protocol error instead of completing it.
struct ProtocolErrorJob;
impl Tool for ProtocolErrorJob {
    fn definition(&self) -> Definition {
        Definition::new(
            "protocol_error_job",
            "Protocol error job",
            "Crashes after about a second (MCP conformance, tasks).",
            NONE,
        )
    }
    fn execute(&self, ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        sleep_unless_cancelled(ctx, 1.0)?;
        panic!("protocol_error_job crashes, as it always does")
    }
}

/// `test_reconnection` (SEP-1699): runs longer than the server keeps a
/// response stream open (`--sse-poll`, 5 s by default), so its result
/// reaches the client on the stream it resumes with `Last-Event-ID`.
struct Reconnection;
impl Tool for Reconnection {
    fn definition(&self) -> Definition {
        Definition::new(
            "test_reconnection",
            "Reconnection",
            "Answers after 7 seconds, past the server's stream poll (MCP conformance, SEP-1699).",
            NONE,
        )
    }
    fn execute(&self, ctx: &Context, _args: Value) -> Result<ToolOutput, ToolError> {
        sleep_unless_cancelled(ctx, 7.0)?;
        Ok(ToolOutput::text(
            "Reconnection test completed: the call outlived its first stream.",
        ))
    }
}

/// `confirm_delete` (tasks, SEP-2322 in a task): asks the person to confirm
/// deleting `filename`, then says what it did.
static CONFIRM_DELETE: Fixed = Fixed {
    name: "confirm_delete",
    description: "Asks the person to confirm a deletion, then answers (MCP conformance, tasks).",
    parameters: r#"{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}"#,
    run: |args| {
        let file = args["filename"].as_str().unwrap_or_default();
        let question = form(
            &format!("Delete {file}?"),
            json!({"confirm": {"type": "boolean"}}),
            &["confirm"],
        );
        let answers = ask(vec![("confirm", question)])?;
        Ok(ToolOutput::text(format!(
            "confirm_delete {file}: {}",
            said(&answers[0])
        )))
    },
};

/// `multi_input` (tasks): two questions at once, answered separately.
static MULTI_INPUT: Fixed = Fixed {
    name: "multi_input",
    description: "Asks the person two questions at once (MCP conformance, tasks).",
    parameters: NONE,
    run: |_| {
        let question = |n: u32| {
            form(
                &format!("Question {n}"),
                json!({"name": {"type": "string"}, "confirm": {"type": "boolean"}}),
                &["name"],
            )
        };
        let answers = ask(vec![("first", question(1)), ("second", question(2))])?;
        Ok(ToolOutput::text(format!(
            "multi_input: {} | {}",
            said(&answers[0]),
            said(&answers[1])
        )))
    },
};

toolhost_sdk::export_tools!(
    ASK_IN_A_LOOP,
    AUDIO,
    EMBEDDED,
    MIXED,
    LOGGING,
    LOGGING_2575,
    SAMPLING,
    ELICITATION,
    STREAMING_ELICITATION,
    DEFAULTS,
    ENUMS,
    MISSING_CAPABILITY,
    IR_ELICITATION,
    IR_SAMPLING,
    IR_ROOTS,
    IR_STATE,
    IR_TAMPERED,
    IR_MULTIPLE,
    IR_MULTI_ROUND,
    IR_CAPABILITIES,
    Headers,
    SimpleText,
    ImageContent,
    ErrorHandling,
    WithProgress,
    Schema202012,
    TriggerToolChange,
    Greet,
    SlowCompute,
    FailingJob,
    ProtocolErrorJob,
    WITH_TASK,
    Reconnection,
    CONFIRM_DELETE,
    MULTI_INPUT
);

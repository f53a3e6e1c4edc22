//! `toolhost`: list, call and run sandboxed agent tools from a terminal, and
//! serve them to other programs (`serve`: JSON-RPC; `mcp`: Model Context
//! Protocol).
//!
//! Parsing, printing and exit codes only; the work is the library's.
//! Exit codes: 0 success, 1 the tool reported an error, 2 usage or host error.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost::{
    AssistantMessage, CancellationToken, ContentBlock, Event, Host, HostBuilder, NoEvents,
    ToolCall, ToolFormat, ToolInfo, formats,
};

/// `println!` that ends the program quietly when the reader went away
/// (`toolhost list | head`), as Unix tools do, instead of panicking.
macro_rules! println {
    () => {
        println!("")
    };
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            $crate::stdout_failed(e);
        }
    }};
}

/// A failed write to stdout: a closed pipe is a normal end; anything else is
/// reported and exits 2.
fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("toolhost: writing to stdout: {e}");
    std::process::exit(2);
}

#[derive(Parser)]
#[command(
    name = "toolhost",
    version,
    about = "Run an LLM agent's tools as sandboxed WebAssembly components"
)]
struct Cli {
    /// Directory the tools work in and may read (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Load a tool component from this .wasm file (repeatable; granted nothing).
    #[arg(long = "extension", global = true, value_name = "FILE")]
    extensions: Vec<PathBuf>,
    /// Comma-separated tools the model may call (default: read, bash, edit,
    /// write that exist, plus every extension tool).
    #[arg(
        long,
        global = true,
        value_delimiter = ',',
        value_name = "NAMES",
        conflicts_with = "all_tools"
    )]
    tools: Option<Vec<String>>,
    /// Make every loaded tool active.
    #[arg(long, global = true)]
    all_tools: bool,
    /// Refuse shell commands the network: IPv4 and IPv6 sockets of every
    /// kind (Pi's bash has the network).
    #[arg(long, global = true)]
    no_network: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the loaded tools: a table, every tool's definition and state with
    /// --json, or the active tools as a provider's API expects them with --format.
    List {
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// json (toolhost's definitions), openai, anthropic or mcp (a tools/list result).
        #[arg(long, value_name = "FORMAT", value_parser = parse_format)]
        format: Option<ToolFormat>,
    },
    /// Print the system-prompt section for the active tools, as Pi builds it
    /// from their prompt snippets and guidelines.
    Prompt,
    /// Call one tool (active or not) through the full pipeline and print its result.
    Call {
        /// The tool's name.
        name: String,
        /// Arguments as a JSON object.
        #[arg(default_value = "{}")]
        args: String,
        /// Print the ToolResultMessage as JSON instead of its text.
        #[arg(long)]
        json: bool,
    },
    /// Run the tool calls of an assistant message (a file, or - for stdin):
    /// events as JSON lines, then a turn_end line with the result messages.
    Run {
        #[arg(value_name = "FILE")]
        file: String,
    },
    /// Extensions: what was discovered, granted and refused; what a component asks for.
    Ext {
        #[command(subcommand)]
        command: ExtCommand,
    },
    /// Trust the workspace's toolhost.toml as it is now, so its grants apply.
    Trust,
    /// Serve JSON-RPC 2.0 on stdin/stdout, one object per line (see docs/protocol.md).
    Serve,
    /// Serve the active tools as a Model Context Protocol server on stdin/stdout.
    /// The tools are reloaded when .toolhost/extensions/ or an --extension file changes.
    Mcp,
}

#[derive(Subcommand)]
enum ExtCommand {
    /// Every discovered extension: origin, grants, tools or why it was refused.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A component's tools, schemas and requested capabilities (granting it nothing).
    Inspect {
        #[arg(value_name = "FILE.wasm")]
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

fn parse_format(s: &str) -> Result<ToolFormat, String> {
    s.parse()
}

/// How often `mcp` looks at the extension files.
const RELOAD_INTERVAL: Duration = Duration::from_millis(300);

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolhost: starting the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("toolhost: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The host the global options describe (built again when `mcp` reloads).
#[derive(Clone)]
struct HostOptions {
    workspace: Option<PathBuf>,
    extensions: Vec<PathBuf>,
    tools: Option<Vec<String>>,
    all_tools: bool,
    no_network: bool,
}

impl HostOptions {
    fn builder(&self) -> HostBuilder {
        let mut builder = Host::builder();
        if let Some(dir) = &self.workspace {
            builder = builder.workspace(dir);
        }
        for ext in &self.extensions {
            builder = builder.extension(ext);
        }
        if let Some(tools) = &self.tools {
            builder = builder.active_tools(tools.iter().map(|t| t.trim().to_string()));
        }
        if self.all_tools {
            builder = builder.all_tools_active();
        }
        builder.command_network(!self.no_network)
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    // Commands that do not need the tools loaded.
    match &cli.command {
        Command::Ext {
            command: ExtCommand::Inspect { file, json },
        } => return inspect(file, *json).await,
        Command::Trust => return trust(cli.workspace.as_deref()),
        _ => {}
    }
    let options = HostOptions {
        workspace: cli.workspace,
        extensions: cli.extensions,
        tools: cli.tools,
        all_tools: cli.all_tools,
        no_network: cli.no_network,
    };
    let host = options
        .builder()
        .build()
        .await
        .context("loading the tools")?;
    for d in host.diagnostics() {
        eprintln!("toolhost: warning: {d}");
    }
    if let toolhost::Confinement::Unconfined { .. } = host.command_confinement() {
        eprintln!(
            "toolhost: warning: shell commands: {}",
            host.command_confinement()
        );
    }
    match cli.command {
        Command::List { json, format } => list(&host, json, format),
        Command::Prompt => {
            println!("{}", formats::system_prompt_section(&host.definitions()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { name, args, json } => call(&host, name, &args, json).await,
        Command::Run { file } => run_batch(&host, &file).await,
        Command::Serve => {
            let stdin = tokio::io::BufReader::new(tokio::io::stdin());
            toolhost::serve::serve(host, stdin, tokio::io::stdout())
                .await
                .context("serving JSON-RPC on stdio")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp => mcp(host, options).await,
        Command::Ext {
            command: ExtCommand::List { json },
        } => ext_list(&host, json),
        Command::Ext { .. } | Command::Trust => unreachable!("handled before loading"),
    }
}

fn trust(workspace: Option<&std::path::Path>) -> Result<ExitCode> {
    let workspace = workspace
        .unwrap_or(std::path::Path::new("."))
        .canonicalize()
        .context("locating the workspace")?;
    let config = toolhost::policy::default_user_config_dir()
        .context("no user configuration directory (set HOME or XDG_CONFIG_HOME)")?;
    let path = toolhost::policy::trust_workspace(&workspace, &config)?;
    println!(
        "trusted {} (its grants now apply; any change needs `toolhost trust` again)",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

async fn inspect(file: &std::path::Path, json: bool) -> Result<ExitCode> {
    let runtime = toolhost::Runtime::shared()?;
    let inspection = toolhost::inspect(&runtime, file).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&inspection)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", inspection.path);
    let caps = if inspection.capabilities.is_empty() {
        "none".to_string()
    } else {
        inspection.capabilities.join(", ")
    };
    println!("  requests: {caps}");
    for tool in &inspection.tools {
        println!("\n{} ({})", tool.name, tool.label);
        println!("{}", indent(&tool.description));
        println!("  parameters: {}", serde_json::to_string(&tool.parameters)?);
    }
    for problem in &inspection.problems {
        println!("\nproblem: {problem}");
    }
    Ok(ExitCode::SUCCESS)
}

fn ext_list(host: &Host, json: bool) -> Result<ExitCode> {
    let reports = host.extensions();
    if json {
        println!("{}", serde_json::to_string_pretty(reports)?);
        return Ok(ExitCode::SUCCESS);
    }
    if reports.is_empty() {
        println!("no extensions found (looked in .toolhost/extensions/ and the user's config)");
    }
    for r in reports {
        println!("{} ({:?}) {}", r.name, r.origin, r.component.display());
        let granted = serde_json::to_value(&r.granted)?;
        println!("  granted: {}", summary(&granted));
        if let Some(requested) = &r.requested {
            println!(
                "  requested: {}",
                summary(&serde_json::to_value(requested)?)
            );
        }
        match &r.refused {
            Some(reason) => println!("  refused: {reason}"),
            None => println!("  tools: {}", r.tools.join(", ")),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The non-empty fields of a grant, `key=value` each, or `nothing`.
fn summary(grant: &Value) -> String {
    let parts: Vec<String> = grant
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(_, v)| match v {
                    Value::Null | Value::Bool(false) => false,
                    Value::Array(a) => !a.is_empty(),
                    _ => true,
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect()
        })
        .unwrap_or_default();
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join(" ")
    }
}

async fn mcp(host: Host, options: HostOptions) -> Result<ExitCode> {
    let mut watch = vec![host.workspace().join(".toolhost").join("extensions")];
    watch.extend(options.extensions.iter().cloned());
    let factory: toolhost::mcp::HostFactory = Arc::new(move || {
        let builder = options.builder();
        Box::pin(builder.build())
    });
    toolhost::mcp::McpServer::new(host)
        .log(Arc::new(|line| eprintln!("toolhost mcp: {line}")))
        .reload(toolhost::mcp::Reload {
            factory,
            watch,
            interval: RELOAD_INTERVAL,
        })
        .serve_stdio()
        .await
        .context("serving MCP on stdio")?;
    Ok(ExitCode::SUCCESS)
}

fn list(host: &Host, json: bool, format: Option<ToolFormat>) -> Result<ExitCode> {
    if let Some(format) = format {
        let tools = formats::tools_as(&host.active_tool_infos(), format);
        println!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(ExitCode::SUCCESS);
    }
    let tools = host.tools();
    if json {
        println!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", table(&tools).trim_end_matches('\n'));
    for tool in &tools {
        let d = &tool.definition;
        println!("\n{} ({})", d.name, d.label);
        println!("{}", indent(&d.description));
        println!("  parameters: {}", serde_json::to_string(&d.parameters)?);
        if let Some(snippet) = &d.prompt_snippet {
            println!("  prompt snippet: {snippet}");
        }
        for g in &d.prompt_guidelines {
            println!("  guideline: {g}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per tool: name, state, mode, source and parameter names
/// (`*` marks required ones).
fn table(tools: &[ToolInfo]) -> String {
    let rows: Vec<[String; 5]> = tools
        .iter()
        .map(|t| {
            let d = &t.definition;
            [
                d.name.clone(),
                if t.active { "yes" } else { "no" }.to_string(),
                serde_json::to_value(d.execution_mode)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                t.source.to_string(),
                parameter_summary(&d.parameters),
            ]
        })
        .collect();
    let header = ["NAME", "ACTIVE", "MODE", "SOURCE", "PARAMETERS"].map(str::to_string);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn parameter_summary(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| {
                    let ty = p["type"].as_str().unwrap_or("any");
                    let star = if required.contains(&name.as_str()) {
                        "*"
                    } else {
                        ""
                    };
                    format!("{name}{star}: {ty}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn call(host: &Host, name: String, args: &str, json: bool) -> Result<ExitCode> {
    let arguments: Value = serde_json::from_str(args)
        .with_context(|| format!("the arguments of {name} are not valid JSON: {args}"))?;
    // `call` names its tool explicitly: make it callable for this run.
    let mut active = host.active_tools();
    active.push(name.clone());
    host.set_active_tools(&active);
    let message = AssistantMessage::from_calls(vec![ToolCall {
        id: "call_1".into(),
        name,
        arguments,
    }]);
    let outcome = host
        .run_batch(&message, cancel_on_ctrl_c(), Arc::new(NoEvents))
        .await;
    let result = outcome
        .results
        .into_iter()
        .next()
        .context("the batch returned no result")?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?;
    } else {
        for block in &result.content {
            match block {
                ContentBlock::Text { text } => writeln!(out, "{text}")?,
                ContentBlock::Image { data, mime_type } => {
                    writeln!(out, "[image {mime_type}, {} bytes of base64]", data.len())?
                }
            }
        }
    }
    Ok(if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn run_batch(host: &Host, file: &str) -> Result<ExitCode> {
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the assistant message from stdin")?;
        s
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?
    };
    let raw: Value =
        serde_json::from_str(&text).with_context(|| format!("{file} is not valid JSON"))?;
    let message = match AssistantMessage::from_json(raw) {
        Ok(m) => m,
        Err(e) => bail!("{file}: {e}"),
    };
    let sink =
        Arc::new(|event: Event| print_line(&serde_json::to_value(&event).unwrap_or_default()));
    let outcome = host.run_batch(&message, cancel_on_ctrl_c(), sink).await;
    print_line(&json!({
        "type": "turn_end",
        "message": message.raw,
        "toolResults": outcome.results,
        "terminate": outcome.terminate,
    }));
    Ok(ExitCode::SUCCESS)
}

/// One JSON value per line, written whole even when calls finish at once.
fn print_line(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// A token cancelled by the first Ctrl-C (the batch then ends with every
/// call's result; a second Ctrl-C kills the process).
fn cancel_on_ctrl_c() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("toolhost: cancelling (Ctrl-C again to quit)");
            t.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    token
}

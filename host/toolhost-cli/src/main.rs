//! `toolhost`: list, call and run sandboxed agent tools from a terminal, and
//! serve them to other programs (`serve`: JSON-RPC; `mcp`: Model Context
//! Protocol).
//!
//! Parsing, printing and exit codes only; the work is the library's.
//! Exit codes: 0 success, 1 the tool reported an error, 2 usage or host error.

/// mimalloc, not glibc's malloc: a call's memory is often freed on another
/// thread than the one that allocated it (tokio moves tasks between workers),
/// and glibc makes that free wait on the allocating thread's arena lock.
/// Measured (`scripts/bench paths batch`): 2,001 reads in a batch 78 → 50 µs
/// a call; 64 reads in parallel against sequential 1.13× → 1.46×.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost::display::{Form, Terminal, escape, escape_lines, escape_path};
use toolhost::{
    AssistantMessage, CancellationToken, ContentBlock, Event, Host, HostBuilder, ToolCall,
    ToolFormat, ToolInfo, ToolResultMessage, formats,
};

/// `println!` through the terminal writer (`toolhost::display::Terminal`):
/// on a terminal, whatever a line carries from a tool, a file, an extension
/// or the model is escaped, so no view can forget to; to a pipe, the bytes
/// as they are. It ends the program quietly when the reader went away
/// (`toolhost list | head`), as Unix tools do, instead of panicking.
macro_rules! println {
    () => {
        println!("")
    };
    ($($arg:tt)*) => {{
        if let Err(e) = toolhost::display::Terminal::stdout().line_fmt(format_args!($($arg)*)) {
            $crate::stdout_failed(e);
        }
    }};
}

/// `eprintln!` through the terminal writer, as `println!` above.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        let _ = toolhost::display::Terminal::stderr().line_fmt(format_args!($($arg)*));
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

// After the `println!` above, which they use too.
mod ask;
mod audit;
mod view;

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
    /// Refuse to run programs where the process jail (bubblewrap) cannot
    /// run, instead of running them under Landlock and seccomp alone.
    #[arg(long, global = true)]
    require_jail: bool,
    /// Append a JSON line per call to this file: the tool, its component,
    /// its arguments (secrets redacted), what it read, wrote, ran and
    /// contacted, how it ended (default: `audit` in the user's toolhost.toml).
    #[arg(long, global = true, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// The release of Pi whose texts and result shapes the model gets:
    /// 0.85 or 1.6 (default: `pi` in toolhost.toml, else 0.85).
    #[arg(long, global = true, value_name = "VERSION")]
    pi: Option<toolhost::PiProfile>,
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
    /// on a terminal, each call as it starts, runs and ends; otherwise (or
    /// with --json) events as JSON lines, then a turn_end line with the
    /// result messages.
    Run {
        #[arg(value_name = "FILE")]
        file: String,
        /// JSON lines even on a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Extensions: what was discovered, granted and refused; what a component asks for.
    Ext {
        #[command(subcommand)]
        command: ExtCommand,
    },
    /// Review what the workspace contributes (its toolhost.toml and every
    /// component and manifest under .toolhost/) and trust exactly that content:
    /// only trusted files decide what runs and what it is granted.
    Trust {
        /// Trust without asking (for scripts; review the list first).
        #[arg(long, conflicts_with = "revoke")]
        yes: bool,
        /// Forget this workspace: none of its files is trusted any more.
        #[arg(long)]
        revoke: bool,
        /// Print the review as JSON; trust nothing unless --yes is given too.
        #[arg(long)]
        json: bool,
    },
    /// Serve JSON-RPC 2.0 on stdin/stdout, one object per line, or over HTTP
    /// at /rpc with --http (see docs/protocol.md).
    Serve {
        #[command(flatten)]
        http: HttpArgs,
    },
    /// How the programs tools start are confined on this machine: each layer
    /// (jail, Landlock, seccomp, limits, network), on or off, what it means,
    /// and how to turn on what is off. Exit 1 when a layer is off.
    Doctor {
        #[arg(long)]
        json: bool,
    },
    /// Print the audit log readably (or as JSON lines with --json), filtered
    /// by tool, outcome and time.
    Audit(audit::Query),
    /// Finish compiling what the last command loaded with the quick compiler
    /// (started by toolhost itself, detached, when a short command ends
    /// while Cranelift still works in the background).
    #[command(hide = true)]
    Optimise,
    /// Serve the active tools as a Model Context Protocol server on stdin/stdout,
    /// or as Streamable HTTP at /mcp with --http.
    /// The tools are reloaded when .toolhost/extensions/ or an --extension file changes.
    Mcp {
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        sessions: SessionArgs,
    },
}

/// The bounds of `mcp --http`'s sessions (clients on the handshake
/// revisions; 2026-07-28 clients have none).
#[derive(clap::Args, Clone)]
struct SessionArgs {
    /// Most MCP sessions kept at once; past it, an `initialize` gets 503
    /// and the open sessions keep working.
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = toolhost::mcp::SessionBounds::DEFAULT_MAX as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions: u64,
    /// Seconds a session may go without a request, a running call or an
    /// open stream before it is closed.
    #[arg(long, value_name = "SECONDS", requires = "http",
          default_value_t = toolhost::mcp::SessionBounds::DEFAULT_IDLE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    session_idle: u64,
    /// Seconds a response stream stays open while its call runs before the
    /// server closes it and the client resumes it with Last-Event-ID
    /// (clients of 2025-11-25 and later; SEP-1699 polling); 0: open until
    /// the response.
    #[arg(long, value_name = "SECONDS", requires = "http",
          default_value_t = toolhost::mcp::SessionBounds::DEFAULT_POLL_AFTER.as_secs())]
    sse_poll: u64,
}

impl SessionArgs {
    fn bounds(&self) -> toolhost::mcp::SessionBounds {
        toolhost::mcp::SessionBounds {
            max: usize::try_from(self.max_sessions).unwrap_or(usize::MAX),
            idle: Duration::from_secs(self.session_idle),
            poll_after: (self.sse_poll > 0).then(|| Duration::from_secs(self.sse_poll)),
        }
    }
}

/// Serving over HTTP instead of stdio (`serve`, `mcp`).
#[derive(clap::Args, Clone)]
struct HttpArgs {
    /// Listen for HTTP on this address (e.g. 127.0.0.1:8765; port 0 picks
    /// one). Every request needs a bearer token, on loopback too.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Require `Authorization: Bearer <token>` with the token in this file
    /// (keep it where tools' commands cannot read it). Without it, a token
    /// is generated and printed once on stderr.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Serve without a token, on loopback only: every local process can
    /// then use the tools, among them the commands an agent runs in another
    /// workspace.
    #[arg(long, requires = "http", conflicts_with = "token_file")]
    no_auth: bool,
    /// Also accept this Host name (DNS-rebinding check; `name` for any port,
    /// `name:port`, or `*`). Repeatable.
    #[arg(long = "allow-host", value_name = "NAME", requires = "http")]
    allow_hosts: Vec<String>,
    /// Accept requests carrying this Origin (`http://app.example:8080`,
    /// `http://localhost:*`); any other Origin is refused. Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// Most requests that run tools at once; more wait their turn.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "http")]
    max_requests: usize,
}

impl HttpArgs {
    /// The listener's options, reading or generating the token.
    fn options(
        &self,
        what: &str,
        addr: std::net::SocketAddr,
    ) -> Result<toolhost::http_server::HttpOptions> {
        let mut options = toolhost::http_server::HttpOptions::new(addr);
        options.max_requests = self.max_requests;
        options.allowed_hosts = self.allow_hosts.clone();
        options.allowed_origins = self.allow_origins.clone();
        options.no_auth = self.no_auth;
        if let Some(file) = &self.token_file {
            let token = std::fs::read_to_string(file)
                .with_context(|| format!("reading the token file {}", file.display()))?;
            options.token = Some(token.trim().to_string());
        } else if !self.no_auth {
            // Only in this process and on the person's stderr: never in a
            // file a tool's command could read.
            let token = toolhost::http_server::generate_token().context("generating a token")?;
            eprintln!(
                "toolhost {what}: requests need `Authorization: Bearer {token}` (generated for \
                 this run and shown once: give it to your client; --token-file FILE to choose \
                 one, --no-auth to serve loopback without)"
            );
            options.token = Some(token);
        }
        options.check().map_err(anyhow::Error::msg)?;
        Ok(options)
    }
}

/// Serve `route` over HTTP until the process is interrupted.
async fn serve_http(
    what: &str,
    args: &HttpArgs,
    addr: std::net::SocketAddr,
    route: impl FnOnce(usize, CancellationToken) -> toolhost::http_server::Route,
) -> Result<ExitCode> {
    let options = args.options(what, addr)?;
    let shutdown = CancellationToken::new();
    let route = route(options.max_body_bytes, shutdown.clone());
    let path = route.path;
    let listener = toolhost::http_server::HttpListener::bind(options, vec![route])
        .await
        .with_context(|| format!("listening on {addr}"))?;
    // Tests and scripts read the address (the port, for port 0) from here:
    // one write, so that a reader never sees the line cut short
    // (`eprintln!` writes each formatted piece by itself).
    let line = format!(
        "toolhost {what}: listening on http://{}{path}\n",
        listener.local_addr()
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    #[cfg(unix)]
    {
        let stop = shutdown.clone();
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::spawn(async move {
                term.recv().await;
                stop.cancel();
            });
        }
    }
    listener
        .run(shutdown)
        .await
        .with_context(|| format!("serving {what} over HTTP"))?;
    Ok(ExitCode::SUCCESS)
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
    /// Install a component for every workspace (into the user's extensions
    /// directory) and write its grant, pinned to its digest, into the user's
    /// toolhost.toml. From a registry, `oci://REGISTRY/REPOSITORY[:TAG][@sha256:…]`:
    /// pulled, checked, and its signature checked before anything is written.
    Add {
        #[arg(value_name = "FILE.wasm|oci://…")]
        file: String,
        /// The name it is installed and granted under (default: the file's
        /// stem, or the repository's last part).
        #[arg(long)]
        name: Option<String>,
        /// It loads only with a signature by this cosign public key (written
        /// into its grant as `key`).
        #[arg(long, value_name = "FILE.pub")]
        key: Option<PathBuf>,
        /// It loads only with a keyless signature of IDENTITY@ISSUER
        /// (written into its grant as `signed-by`).
        #[arg(long = "signed-by", value_name = "IDENTITY@ISSUER")]
        signed_by: Option<String>,
        #[command(flatten)]
        grant: GrantArgs,
    },
    /// Pull a newer component of extensions installed from a registry,
    /// check it (signatures included) and show what it requests; install it
    /// only with --yes.
    Update {
        /// The extensions (default: every one with a source).
        #[arg(value_name = "NAME")]
        names: Vec<String>,
        /// Install what is newer (its digest pinned in the same grant).
        #[arg(long)]
        yes: bool,
    },
    /// Push a built component to a registry (builds nothing); with --sign,
    /// sign its digest as cosign does.
    Publish {
        #[arg(value_name = "FILE.wasm")]
        file: PathBuf,
        #[arg(value_name = "oci://REGISTRY/REPOSITORY:TAG")]
        reference: String,
        /// A cosign private key (its password in COSIGN_PASSWORD when it is
        /// encrypted).
        #[arg(long, value_name = "FILE.key")]
        sign: Option<PathBuf>,
    },
    /// Attach a Sigstore bundle (a keyless signature made elsewhere, such as
    /// by cosign in CI) to a component in a registry, named by digest.
    Attach {
        #[arg(value_name = "oci://REGISTRY/REPOSITORY@sha256:DIGEST")]
        reference: String,
        #[arg(value_name = "BUNDLE.json")]
        bundle: PathBuf,
    },
    /// Make a signing key pair, PREFIX.key (encrypted with COSIGN_PASSWORD,
    /// as cosign writes it) and PREFIX.pub.
    Keygen {
        #[arg(value_name = "PREFIX", default_value = "cosign")]
        prefix: PathBuf,
    },
    /// Remove an installed extension and its grant.
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
    },
}

/// Capabilities `ext add` grants (each as in toolhost.toml).
#[derive(clap::Args)]
struct GrantArgs {
    /// A directory it may read (repeatable; relative to the workspace).
    #[arg(long = "fs-read", value_name = "DIR")]
    fs_read: Vec<String>,
    /// A directory it may write (repeatable).
    #[arg(long = "fs-write", value_name = "DIR")]
    fs_write: Vec<String>,
    /// A program it may run (repeatable).
    #[arg(long = "process", value_name = "PROGRAM")]
    process: Vec<String>,
    /// Its programs may use the network.
    #[arg(long)]
    network: bool,
    /// An environment variable it may see (repeatable).
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// Native search over its fs-read directories.
    #[arg(long)]
    search: bool,
    /// A host its wasi:http requests may reach (repeatable;
    /// `[http://|https://]host[:port]`, https only without a scheme).
    #[arg(long = "http", value_name = "HOST")]
    http: Vec<String>,
    /// It may read and change the active tools (`tools = true`).
    #[arg(long)]
    change_tools: bool,
    /// Its hooks may run (they see and may rewrite every call).
    #[arg(long)]
    hooks: bool,
    /// Its tools may replace built-ins of the same name.
    #[arg(long)]
    replace_builtin: bool,
    /// What it may ask the person's client: elicitation, sampling or roots
    /// (repeatable).
    #[arg(long = "client", value_name = "KIND")]
    client: Vec<String>,
    /// A secret its HTTP requests carry and it never sees (repeatable):
    /// `NAME=env:VARIABLE` or `NAME=file:PATH` (mode 0600), sent as
    /// `Authorization: Bearer …` to every host of its http grant (narrow
    /// the hosts, or change the header, in toolhost.toml).
    #[arg(long = "secret", value_name = "NAME=SOURCE")]
    secret: Vec<String>,
}

impl GrantArgs {
    fn grant(self) -> Result<toolhost::extensions::policy::GrantSpec> {
        let mut secrets = std::collections::BTreeMap::new();
        for arg in &self.secret {
            let Some((name, from)) = arg.split_once('=') else {
                bail!("--secret {arg}: expected NAME=SOURCE (env:VARIABLE or file:PATH)");
            };
            let spec = toolhost::extensions::policy::SecretSpec {
                from: from.to_string(),
                ..Default::default()
            };
            secrets.insert(name.to_string(), spec);
        }
        Ok(toolhost::extensions::policy::GrantSpec {
            client: self.client,
            secrets,
            fs_read: self.fs_read,
            fs_write: self.fs_write,
            process: self.process,
            network: toolhost::extensions::policy::ShellNetwork::All(self.network),
            env: self.env,
            search: self.search,
            http: self.http,
            tools: self.change_tools,
            hooks: self.hooks,
            replace_builtin: self.replace_builtin,
            ..Default::default()
        })
    }
}

fn parse_format(s: &str) -> Result<ToolFormat, String> {
    s.parse()
}

/// How often `mcp` looks at the extension files.
const RELOAD_INTERVAL: Duration = Duration::from_millis(300);

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(
        cli.command,
        Command::Optimise | Command::Doctor { .. } | Command::Audit(_)
    ) {
        // The engine and its instance pool (a quarter of a start) are made
        // while the async runtime starts and the configuration is read.
        std::thread::spawn(|| toolhost::Runtime::shared().is_ok());
    }
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
            // The chain names paths and reasons a workspace file or a
            // component chose: one escaped line.
            eprintln!("toolhost: {}", escape(&format!("{e:#}")));
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
    require_jail: bool,
    audit: Option<PathBuf>,
    pi: Option<toolhost::PiProfile>,
}

impl HostOptions {
    fn builder(&self) -> HostBuilder {
        let mut builder = Host::builder();
        if let Some(dir) = &self.workspace {
            builder = builder.workspace(dir);
        }
        for ext in &self.extensions {
            builder = builder.extensions(|e| e.load(ext));
        }
        if let Some(tools) = &self.tools {
            builder = builder.active_tools(tools.iter().map(|t| t.trim().to_string()));
        }
        if self.all_tools {
            builder = builder.all_tools_active();
        }
        if let Some(file) = &self.audit {
            builder = builder.audit_log(file);
        }
        if let Some(pi) = self.pi {
            builder = builder.pi_profile(pi);
        }
        builder
            .commands(|p| p.network(!self.no_network))
            .jail(if self.require_jail {
                toolhost::JailMode::Required
            } else {
                toolhost::JailMode::Auto
            })
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    // Commands that do not need the tools loaded.
    match cli.command {
        Command::Ext { command } if !matches!(command, ExtCommand::List { .. }) => {
            return ext(command).await;
        }
        Command::Trust { yes, revoke, json } => {
            return trust(cli.workspace.as_deref(), yes, revoke, json).await;
        }
        Command::Doctor { json } => return doctor(json),
        Command::Audit(query) => {
            return audit::run(query, cli.audit.as_deref(), cli.workspace.as_deref());
        }
        _ => {}
    }
    let options = HostOptions {
        workspace: cli.workspace,
        extensions: cli.extensions,
        tools: cli.tools,
        all_tools: cli.all_tools,
        no_network: cli.no_network,
        require_jail: cli.require_jail,
        audit: cli.audit,
        pi: cli.pi,
    };
    let mut builder = options.builder();
    let optimiser = match cli.command {
        Command::Optimise => Some(optimising_runtime()?),
        _ => None,
    };
    if let Some(runtime) = &optimiser {
        builder = builder.runtime(runtime.clone());
    }
    // `run` and `call` ask the person at the terminal, if there is one;
    // `serve` and `mcp` ask through their clients.
    let terminal = matches!(cli.command, Command::Call { .. } | Command::Run { .. })
        .then(ask::Terminal::open)
        .flatten();
    if let Some(terminal) = &terminal {
        builder = builder.ask(terminal.clone()).client(terminal.clone());
    }
    let host = builder.build().await.context("loading the tools")?;
    for d in host.diagnostics() {
        eprintln!("toolhost: warning: {}", escape(&d.to_string()));
    }
    // Said once per run, naming what is not contained.
    let runs_programs = matches!(
        cli.command,
        Command::Call { .. } | Command::Run { .. } | Command::Serve { .. } | Command::Mcp { .. }
    );
    if runs_programs && !host.command_confinement().is_jail() {
        eprintln!(
            "toolhost: warning: programs run without the process jail: {} (toolhost doctor \
             says how to turn it on)",
            escape(&host.command_confinement().to_string())
        );
    }
    let short = !matches!(
        cli.command,
        Command::Serve { .. } | Command::Mcp { .. } | Command::Optimise
    );
    let code = match cli.command {
        Command::Optimise => {
            if let Some(runtime) = &optimiser {
                runtime.wait_optimised();
            }
            note_verified(&options).await;
            Ok(ExitCode::SUCCESS)
        }
        Command::List { json, format } => list(&host, json, format),
        Command::Prompt => {
            println!(
                "{}",
                formats::system_prompt_section_as(&host.definitions(), host.pi_profile())
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { name, args, json } => call(&host, name, &args, json).await,
        Command::Run { file, json } => run_batch(&host, &file, json, terminal.as_deref()).await,
        Command::Serve { http } if http.http.is_some() => {
            let addr = http.http.expect("checked");
            serve_http("serve", &http, addr, |max_body, _| {
                toolhost::serve::http_route(host, max_body)
            })
            .await
        }
        Command::Serve { .. } => {
            let stdin = tokio::io::BufReader::new(tokio::io::stdin());
            toolhost::serve::serve(host, stdin, tokio::io::stdout())
                .await
                .context("serving JSON-RPC on stdio")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { http, sessions } => mcp(host, options.clone(), http, sessions).await,
        Command::Ext {
            command: ExtCommand::List { json },
        } => ext_list(&host, json),
        Command::Ext { .. }
        | Command::Trust { .. }
        | Command::Doctor { .. }
        | Command::Audit(_) => {
            unreachable!("handled before loading")
        }
    };
    if short {
        hand_over_compiles(options.workspace.as_deref(), &options.extensions);
    }
    code
}

/// The end of `toolhost optimise`, which readies the first call: once what
/// it compiled (and the component files it read) have been unchanged long
/// enough for a note to vouch for them, load everything again on a fresh
/// runtime, which verifies each and notes it, so that the first call
/// neither hashes the compiled code nor reads the component again (see
/// `Runtime::NOTES_AFTER`); and probe the process jail, whose answer is
/// remembered, so that the first call does not probe either.
async fn note_verified(options: &HostOptions) {
    tokio::time::sleep(toolhost::Runtime::NOTES_AFTER + Duration::from_millis(100)).await;
    let fresh = toolhost::Runtime::new(toolhost::RuntimeOptions::default());
    if let Ok(runtime) = fresh
        && let Ok(host) = options.builder().runtime(runtime).build().await
    {
        host.command_confinement();
    }
}

/// The runtime of `toolhost optimise`: one that waits for another process's
/// compile of a component (the command that handed the work over may not
/// have exited yet) instead of leaving it the work.
fn optimising_runtime() -> Result<Arc<toolhost::Runtime>> {
    let options = toolhost::RuntimeOptions {
        wait_for_other_compiles: true,
        ..Default::default()
    };
    toolhost::Runtime::new(options).context("starting the wasm runtime")
}

/// When this command ends while Cranelift still compiles a component that
/// was loaded with the quick compiler's code, a detached `toolhost optimise`
/// with the same workspace and extensions finishes it, so the next start
/// finds the optimised code in the cache instead of starting over. `ext add`
/// and `trust` end this way too: the component they inspected is compiled
/// ahead of its first call.
fn hand_over_compiles(workspace: Option<&std::path::Path>, extensions: &[PathBuf]) {
    let optimising = toolhost::Runtime::shared().is_ok_and(|rt| rt.optimising());
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    if !optimising {
        return;
    }
    let mut command = std::process::Command::new(exe);
    if let Some(dir) = workspace {
        command.arg("--workspace").arg(dir);
    }
    for ext in extensions {
        command.arg("--extension").arg(ext);
    }
    command
        .arg("optimise")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Its own process group: a Ctrl-C meant for this command does not stop it.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let _ = command.spawn();
}

fn doctor(json: bool) -> Result<ExitCode> {
    let layers = toolhost::doctor::layers();
    if json {
        println!("{}", serde_json::to_string_pretty(&layers)?);
    } else {
        println!("{}", doctor_text(&layers));
    }
    Ok(if layers.iter().all(|l| l.on) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The layers as a person reads them: each with its state, what it means
/// and how to turn it on. Their texts name what was found on this machine
/// (paths of programs and cgroups), shown escaped.
fn doctor_text(layers: &[toolhost::doctor::Layer]) -> String {
    let mut out = String::from("How programs started by tools are confined on this machine:\n");
    for layer in layers {
        let state = if layer.on { "on " } else { "OFF" };
        out.push_str(&format!(
            "\n{:<9} {state}  {}\n",
            escape(layer.name),
            escape(&layer.state)
        ));
        out.push_str(&indent(&wrap(&escape(&layer.means), 76)));
        out.push('\n');
        if let Some(fix) = &layer.fix {
            let fix = escape(fix);
            out.push_str(&indent(&wrap(&format!("to turn it on: {fix}"), 76)));
            out.push('\n');
        }
    }
    out.trim_end().to_string()
}

/// `text` broken into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// The user's configuration directory, or why there is none.
fn user_config_dir() -> Result<PathBuf> {
    toolhost::extensions::policy::default_user_config_dir()
        .context("no user configuration directory (set HOME or XDG_CONFIG_HOME)")
}

async fn trust(
    workspace: Option<&std::path::Path>,
    yes: bool,
    revoke: bool,
    json: bool,
) -> Result<ExitCode> {
    use toolhost::extensions::review;
    let workspace = workspace
        .unwrap_or(std::path::Path::new("."))
        .canonicalize()
        .context("locating the workspace")?;
    let config = user_config_dir()?;
    if revoke {
        if review::revoke(&workspace, &config)? {
            println!(
                "{} is no longer trusted: its toolhost.toml and components are refused",
                escape_path(&workspace)
            );
        } else {
            println!("{} was not trusted", escape_path(&workspace));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = toolhost::Runtime::shared()?;
    let review = review::review(&runtime, &workspace, &config).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&review)?);
        if !yes {
            return Ok(ExitCode::SUCCESS);
        }
    } else {
        print_review(&review);
    }
    if review.files().is_empty() {
        if !json {
            println!("\nnothing to trust: no toolhost.toml and no .toolhost/extensions/ here");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if review.all_trusted() && !yes {
        if !json {
            println!("\nall of it is trusted already");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !yes {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            bail!(
                "not trusting without asking: review the list above, then run \
                 `toolhost trust --yes` to trust exactly these files"
            );
        }
        eprint!(
            "\nTrust these {} files of {}? [y/N] ",
            review.files().len(),
            escape_path(&workspace)
        );
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing trusted");
            return Ok(ExitCode::from(1));
        }
    }
    let store = review::approve(&review, &config)?;
    // Its components' first calls find Cranelift's code, compiled meanwhile.
    hand_over_compiles(Some(&workspace), &[]);
    if !json {
        println!(
            "trusted {} files of {} (recorded in {}); any change needs `toolhost trust` again",
            review.files().len(),
            escape_path(&workspace),
            escape_path(&store)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A review as a person reads it: each file with its digest and state, each
/// component's tools, hooks, requests and the grants the toml gives it.
/// Every name, path and text in it comes from the workspace, escaped.
fn print_review(review: &toolhost::extensions::review::Review) {
    use toolhost::extensions::review::ReviewedFile;
    let shown = |f: &ReviewedFile| {
        let path = escape_path(f.path.strip_prefix(&review.workspace).unwrap_or(&f.path));
        let state = match f.verdict {
            toolhost::extensions::trust::Verdict::Trusted => "trusted",
            toolhost::extensions::trust::Verdict::Untrusted => "new",
            toolhost::extensions::trust::Verdict::Changed => "CHANGED since trusted",
        };
        format!("{path}  {}  ({state})", f.digest)
    };
    println!("workspace {}", escape_path(&review.workspace));
    if let Some(policy) = &review.policy {
        println!("\n{}", shown(policy));
    }
    for ext in &review.extensions {
        println!("\nextension {}", escape(&ext.name));
        println!("  component {}", shown(&ext.component));
        if let Some(manifest) = &ext.manifest {
            println!("  manifest  {}", shown(manifest));
        }
        match &ext.inspection {
            Ok(i) => print_component(i),
            Err(reason) => println!("  cannot be inspected: {}", escape(reason)),
        }
        let granted = ext
            .grant
            .as_ref()
            .map(|g| summary(&serde_json::to_value(g).unwrap_or_default()))
            .unwrap_or_else(|| "nothing".into());
        println!("  granted by toolhost.toml: {granted}");
        // A workspace's file declares no secret: what it writes is ignored.
        for name in ext.grant.iter().flat_map(|g| g.secrets.keys()) {
            println!(
                "  secret {}: declared here and ignored (only the user's toolhost.toml declares secrets)",
                escape(name)
            );
        }
    }
    for problem in &review.problems {
        println!(
            "\nrefused, cannot be trusted: {}",
            escape(&problem.to_string())
        );
    }
}

/// A component's tools, whether it has hooks, and what it requests (hooks
/// being a request too), as `trust` and `ext add` show them.
fn print_component(i: &toolhost::Inspection) {
    let list = |items: Vec<&str>, none: &str| {
        if items.is_empty() {
            none.to_string()
        } else {
            escape(&items.join(", ")).into_owned()
        }
    };
    println!(
        "  tools: {}",
        list(i.tools.iter().map(|t| t.name.as_str()).collect(), "none")
    );
    if i.hooks {
        println!("  hooks: yes (sees and may rewrite every call)");
    }
    let mut requests: Vec<&str> = i.capabilities.iter().map(String::as_str).collect();
    if i.hooks {
        requests.push("hooks");
    }
    println!("  requests: {}", list(requests, "nothing"));
}

/// `toolhost ext …`, but `list`, which loads the tools first.
async fn ext(command: ExtCommand) -> Result<ExitCode> {
    match command {
        ExtCommand::Inspect { file, json } => inspect(&file, json).await,
        ExtCommand::Add {
            file,
            name,
            key,
            signed_by,
            grant,
        } => {
            let mut grant = grant.grant()?;
            grant.key = key
                .map(|k| {
                    std::fs::canonicalize(&k)
                        .map(|k| k.display().to_string())
                        .with_context(|| format!("the key {}", k.display()))
                })
                .transpose()?;
            grant.signed_by = signed_by;
            ext_add(&file, name.as_deref(), grant).await
        }
        ExtCommand::Update { names, yes } => ext_update(&names, yes).await,
        ExtCommand::Publish {
            file,
            reference,
            sign,
        } => ext_publish(&file, &reference, sign.as_deref()).await,
        ExtCommand::Attach { reference, bundle } => ext_attach(&reference, &bundle).await,
        ExtCommand::Keygen { prefix } => ext_keygen(&prefix),
        ExtCommand::Remove { name } => ext_remove(&name),
        ExtCommand::List { .. } => unreachable!("`ext list` loads the tools first"),
    }
}

async fn ext_add(
    file: &str,
    name: Option<&str>,
    grant: toolhost::extensions::policy::GrantSpec,
) -> Result<ExitCode> {
    use toolhost::extensions::install;
    let config = user_config_dir()?;
    let runtime = toolhost::Runtime::shared()?;
    let from_registry = file.starts_with(toolhost::extensions::oci::SCHEME);
    let installed = if from_registry {
        install::add_from_registry(&runtime, &config, file, name, grant).await?
    } else {
        install::add(&runtime, &config, std::path::Path::new(file), name, grant).await?
    };
    // Its first call finds Cranelift's code, compiled meanwhile.
    hand_over_compiles(None, std::slice::from_ref(&installed.path));
    let i = &installed.inspection;
    println!(
        "installed {} as {}",
        escape(file),
        escape_path(&installed.path)
    );
    println!("  digest: {}", installed.digest);
    if let Some(source) = &installed.grant.source {
        let signed = match (&installed.grant.key, &installed.grant.signed_by) {
            (Some(key), _) => format!("signature by {key} checked"),
            (None, Some(by)) => format!("signature of {by} checked"),
            (None, None) => "no signature policy".to_string(),
        };
        println!("  from {} ({signed})", escape(source));
    }
    print_component(i);
    println!(
        "  granted in {}: {}",
        escape_path(&installed.policy),
        summary(&serde_json::to_value(&installed.grant)?)
    );
    for line in secret_lines(&installed.grant) {
        println!("  {line}");
    }
    if !installed.ungranted.is_empty() {
        println!("  not granted (it is refused at load until these are):");
        for line in &installed.ungranted {
            println!("    {}", escape(line));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn ext_update(names: &[String], yes: bool) -> Result<ExitCode> {
    use toolhost::extensions::install::{self, Update};
    let config = user_config_dir()?;
    let runtime = toolhost::Runtime::shared()?;
    let names = if names.is_empty() {
        install::from_registries(&config)?
    } else {
        names.to_vec()
    };
    let mut waiting = false;
    for name in &names {
        match install::update(&runtime, &config, name, yes).await? {
            Update::Pinned { source } => {
                println!(
                    "{}: pinned by digest ({}); nothing to update",
                    escape(name),
                    escape(&source)
                )
            }
            Update::Current { source, digest } => {
                println!(
                    "{}: up to date ({} is {digest})",
                    escape(name),
                    escape(&source)
                )
            }
            Update::Newer {
                source,
                from,
                to,
                requested: (before, now),
                ungranted,
                applied,
            } => {
                let list = |l: &[String]| {
                    if l.is_empty() {
                        "none".to_string()
                    } else {
                        escape(&l.join(", ")).into_owned()
                    }
                };
                println!(
                    "{}: {} moved from {from} to {to}",
                    escape(name),
                    escape(&source)
                );
                println!("  requests: {} (was {})", list(&now), list(&before));
                for line in &ungranted {
                    println!("  not granted: {}", escape(line));
                }
                if applied {
                    println!("  installed, its digest pinned in its grant");
                } else {
                    println!(
                        "  not installed: run `toolhost ext update {} --yes` to install it",
                        escape(name)
                    );
                    waiting = true;
                }
            }
        }
    }
    Ok(if waiting {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

async fn ext_publish(
    file: &std::path::Path,
    reference: &str,
    key: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let runtime = toolhost::Runtime::shared()?;
    let password = std::env::var(toolhost::extensions::signature::PASSWORD_VARIABLE).ok();
    let published =
        toolhost::extensions::install::publish(&runtime, file, reference, key, password.as_deref())
            .await?;
    println!(
        "pushed {} to {}",
        escape_path(file),
        escape(&published.reference)
    );
    println!("  digest: {}", published.digest);
    if published.signed {
        println!(
            "  signed with {}",
            escape_path(key.expect("signed with a key"))
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn ext_attach(reference: &str, bundle: &std::path::Path) -> Result<ExitCode> {
    use toolhost::extensions::{keyless, oci::OciRef};
    let r = OciRef::parse(reference).map_err(anyhow::Error::msg)?;
    let bytes = std::fs::read(bundle).with_context(|| format!("reading {}", bundle.display()))?;
    let referrer = keyless::attach(&r, &bytes)
        .await
        .map_err(anyhow::Error::msg)?;
    println!("attached {} to {}", escape_path(bundle), escape(reference));
    println!("  as the referrer {referrer}");
    Ok(ExitCode::SUCCESS)
}

fn ext_keygen(prefix: &std::path::Path) -> Result<ExitCode> {
    use toolhost::extensions::signature::{PASSWORD_VARIABLE, generate};
    let password = std::env::var(PASSWORD_VARIABLE).map_err(|_| {
        anyhow::anyhow!("set {PASSWORD_VARIABLE} to the password that seals the private key")
    })?;
    let (private, public) = generate(prefix, &password).map_err(anyhow::Error::msg)?;
    println!("private key (keep it secret): {}", escape_path(&private));
    println!(
        "public key (give it to your users): {}",
        escape_path(&public)
    );
    Ok(ExitCode::SUCCESS)
}

fn ext_remove(name: &str) -> Result<ExitCode> {
    let config = user_config_dir()?;
    let removed = toolhost::extensions::install::remove(&config, name)?;
    for file in &removed.files {
        println!("removed {}", escape_path(file));
    }
    if removed.grant {
        println!("removed the grant [extensions.{}]", escape(name));
    }
    Ok(ExitCode::SUCCESS)
}

async fn inspect(file: &std::path::Path, json: bool) -> Result<ExitCode> {
    let runtime = toolhost::Runtime::shared()?;
    let inspection = toolhost::inspect(&runtime, file).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&inspection)?);
        return Ok(ExitCode::SUCCESS);
    }
    // Everything below is the component's own choice but the word `none`.
    println!("{}", escape(&inspection.path));
    let caps = if inspection.capabilities.is_empty() {
        "none".to_string()
    } else {
        escape(&inspection.capabilities.join(", ")).into_owned()
    };
    println!("  requests: {caps}");
    // Where the secrets the user's toolhost.toml declares for an extension
    // of this name would go (it inspects a file; the grant is by name).
    for line in user_secret_lines(file) {
        println!("  {line}");
    }
    for tool in &inspection.tools {
        print_definition(tool)?;
    }
    for problem in &inspection.problems {
        println!("\nproblem: {}", escape(problem));
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
        println!(
            "{} ({:?}) {}",
            escape(&r.name),
            r.origin,
            escape_path(&r.component)
        );
        if let Some(digest) = &r.digest {
            println!("  digest: {digest}");
        }
        let granted = serde_json::to_value(&r.granted)?;
        println!("  granted: {}", summary(&granted));
        for line in secret_lines(&r.granted) {
            println!("  {line}");
        }
        if let Some(requested) = &r.requested {
            println!(
                "  requested: {}",
                summary(&serde_json::to_value(requested)?)
            );
        }
        if !r.always.is_empty() {
            println!("  always allowed: {}", escape(&r.always.join(", ")));
        }
        match &r.refused {
            Some(reason) => println!("  refused: {}", escape(reason)),
            None => println!("  tools: {}", escape(&r.tools.join(", "))),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The secret lines of the user's grant to an extension named like `file`
/// (its stem); none when there is no such grant or file.
fn user_secret_lines(file: &std::path::Path) -> Vec<String> {
    let (Some(name), Ok(dir)) = (file.file_stem().and_then(|s| s.to_str()), user_config_dir())
    else {
        return Vec::new();
    };
    let path = dir.join(toolhost::extensions::policy::POLICY_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    toolhost::extensions::policy::parse_text(&text, &path, &dir)
        .ok()
        .and_then(|policy| policy.grants.get(name).map(secret_lines))
        .unwrap_or_default()
        .into_iter()
        .map(|line| format!("{line} (granted in {})", escape_path(&path)))
        .collect()
}

/// A line per secret of `grant`: its name, where it is read, the hosts it
/// goes to and how (never a value: the grant holds none).
fn secret_lines(grant: &toolhost::extensions::policy::GrantSpec) -> Vec<String> {
    grant
        .secrets
        .iter()
        .map(|(name, s)| {
            let shown = format!(
                "secret {name} (from {}) goes to {} in {}",
                s.from,
                s.hosts_text(),
                s.header_name()
            );
            escape(&shown).into_owned()
        })
        .collect()
}

/// The non-empty fields of a grant, `key=value` each, or `nothing`; escaped
/// (JSON leaves bidi and invisible characters in its strings as they are).
fn summary(grant: &Value) -> String {
    let parts: Vec<String> = grant
        .as_object()
        .map(|o| {
            o.iter()
                // Secrets have lines of their own (`secret_lines`).
                .filter(|(k, v)| match v {
                    _ if *k == "secrets" => false,
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
        escape(&parts.join(" ")).into_owned()
    }
}

async fn mcp(
    host: Host,
    options: HostOptions,
    http: HttpArgs,
    sessions: SessionArgs,
) -> Result<ExitCode> {
    // Everything that decides what loads: a reload applies the same trust
    // rules as the first load.
    let mut watch = vec![
        host.workspace().join(".toolhost").join("extensions"),
        host.workspace()
            .join(toolhost::extensions::policy::POLICY_FILE),
    ];
    if let Some(config) = toolhost::extensions::policy::default_user_config_dir() {
        watch.push(config.join(toolhost::extensions::policy::POLICY_FILE));
        watch.push(config.join(toolhost::extensions::trust::TRUST_FILE));
        watch.push(config.join("extensions"));
    }
    watch.extend(options.extensions.iter().cloned());
    let factory: toolhost::mcp::HostFactory = Arc::new(move || {
        let builder = options.builder();
        Box::pin(builder.build())
    });
    let server = toolhost::mcp::McpServer::new(host)
        .log(Arc::new(|line| eprintln!("toolhost mcp: {}", escape(line))))
        .reload(toolhost::mcp::Reload {
            factory,
            watch,
            interval: RELOAD_INTERVAL,
        });
    if let Some(addr) = http.http {
        return serve_http("mcp", &http, addr, |max_body, shutdown| {
            server.http_route(max_body, sessions.bounds(), shutdown)
        })
        .await;
    }
    server.serve_stdio().await.context("serving MCP on stdio")?;
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
        print_definition(&tool.definition)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A tool's definition as `list` and `ext inspect` show it: its name and
/// label, its description (its own lines, indented), its parameters as JSON,
/// its prompt lines. An extension chose every text, shown escaped.
fn print_definition(d: &toolhost::ToolDefinition) -> Result<()> {
    println!("\n{} ({})", escape(&d.name), escape(&d.label));
    println!("{}", indent(&escape_lines(&d.description)));
    let parameters = serde_json::to_string(&d.parameters)?;
    println!("  parameters: {}", escape(&parameters));
    if let Some(snippet) = &d.prompt_snippet {
        println!("  prompt snippet: {}", escape(snippet));
    }
    for g in &d.prompt_guidelines {
        println!("  guideline: {}", escape(g));
    }
    Ok(())
}

/// One line per tool: name, state, mode, source and parameter names
/// (`*` marks required ones), escaped before the columns are measured.
fn table(tools: &[ToolInfo]) -> String {
    let rows: Vec<[String; 5]> = tools
        .iter()
        .map(|t| {
            let d = &t.definition;
            [
                escape(&d.name).into_owned(),
                if t.active { "yes" } else { "no" }.to_string(),
                serde_json::to_value(d.execution_mode)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                escape(&t.source.to_string()).into_owned(),
                escape(&parameter_summary(&d.parameters)).into_owned(),
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
    // `call` names its tool explicitly: active or not, it runs.
    let result = host
        .call(ToolCall {
            id: "call_1".into(),
            name,
            arguments,
        })
        .cancel(cancel_on_ctrl_c())
        .await;
    // What the tool returned, a file's text among it, reaches a person's
    // terminal only through the terminal writer; to a pipe it is kept as is.
    let mut out = Terminal::new(std::io::stdout().lock(), Terminal::stdout().is_terminal());
    if json {
        out.line(Form::Json, &serde_json::to_string_pretty(&result)?)?;
    } else {
        for block in &result.content {
            match block {
                ContentBlock::Text { text } => out.line(Form::Text, text)?,
                ContentBlock::Image { data, mime_type } => out.line(
                    Form::Text,
                    &format!(
                        "[image {}, {} bytes of base64]",
                        escape(mime_type),
                        data.len()
                    ),
                )?,
                other => out.line(Form::Text, &escape(&other.described().unwrap_or_default()))?,
            }
        }
    }
    Ok(if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn run_batch(
    host: &Host,
    file: &str,
    json: bool,
    terminal: Option<&ask::Terminal>,
) -> Result<ExitCode> {
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
    use std::io::IsTerminal;
    if !json && std::io::stdout().is_terminal() {
        let view = Arc::new(view::View::new());
        if let Some(terminal) = terminal {
            let quiet = view.clone();
            terminal.while_asking(move |on| quiet.hush(on));
        }
        let shown = view.clone();
        let sink = Arc::new(move |event: Event| shown.event(&event));
        let ends = ProcessEnds::tell(host, |info| println!("{}", info.ended()));
        host.run_batch(&message, cancel_on_ctrl_c(), sink).await;
        view.finish();
        ends.finish(host).await;
        return Ok(ExitCode::SUCCESS);
    }
    let out = Lines::stdout();
    let lines = out.clone();
    let sink = Arc::new(move |event: Event| lines.send_event(&event));
    let told = out.clone();
    let ends = ProcessEnds::tell(host, move |info| {
        let mut line = info.to_json();
        line["type"] = "process_exit".into();
        told.send_with(|buf| serde_json::to_writer(buf, &line).is_ok());
    });
    let outcome = host.run_batch(&message, cancel_on_ctrl_c(), sink).await;
    out.send_turn_end(&message.raw, &outcome.results, outcome.terminate);
    ends.finish(host).await;
    out.finish();
    Ok(ExitCode::SUCCESS)
}

/// The ends of a run's session processes, told as they come: a run is one
/// session, so those still running when its batch is done are stopped, and
/// their ends told too, before it exits.
struct ProcessEnds {
    teller: tokio::task::JoinHandle<()>,
    /// The processes whose end was told.
    told: Arc<std::sync::Mutex<std::collections::HashSet<u32>>>,
}

impl ProcessEnds {
    fn tell(host: &Host, tell: impl Fn(&toolhost::ProcessInfo) + Send + 'static) -> ProcessEnds {
        let mut exits = host.session_processes().exits();
        let told = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
        let counted = told.clone();
        let teller = tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match exits.recv().await {
                    Ok(info) => {
                        tell(&info);
                        counted.lock().expect("told lock").insert(info.id);
                    }
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                }
            }
        });
        ProcessEnds { teller, told }
    }

    /// Stop what still runs and tell its end (waiting at most a few
    /// seconds for it).
    async fn finish(self, host: &Host) {
        let processes = host.session_processes();
        // Every one the run started, the ended ones' news perhaps still on
        // its way.
        let all: Vec<u32> = processes.list().iter().map(|p| p.id).collect();
        processes.end(std::time::Duration::from_secs(10)).await;
        for _ in 0..500 {
            if all
                .iter()
                .all(|id| self.told.lock().expect("told lock").contains(id))
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.teller.abort();
    }
}

/// JSON lines to stdout from any thread, each written whole and in the
/// order sent. A sender serialises on its own thread and appends to one
/// shared buffer; one writer thread takes the buffer and writes it. The
/// writer is woken only when the buffer was empty, and then lets
/// [`COALESCE`] pass before it takes what has come, so a batch's events
/// cost a wake-up and a write per burst, not per event (2,001 `read` calls:
/// 8,000 events): the calls' threads never wait for stdout, and a reader
/// still sees each line within a fraction of a millisecond.
#[derive(Clone)]
struct Lines {
    shared: Arc<LinesShared>,
    writer: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
    /// Each result message as serialised for its `message_start`, by call
    /// id in the order sent: its `message_end` and the `turn_end` repeat
    /// those bytes instead of serialising the content three more times.
    messages: Arc<std::sync::Mutex<SentMessages>>,
}

/// Result messages' bytes by call id, in the order sent (ids may repeat).
type SentMessages = std::collections::HashMap<String, Vec<Arc<[u8]>>>;

struct LinesShared {
    pending: std::sync::Mutex<Pending>,
    ready: std::sync::Condvar,
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    ended: bool,
}

/// How long the writer lets lines gather after the first of a burst.
const COALESCE: Duration = Duration::from_micros(200);

impl Lines {
    fn stdout() -> Lines {
        let shared = Arc::new(LinesShared {
            pending: std::sync::Mutex::new(Pending::default()),
            ready: std::sync::Condvar::new(),
        });
        let theirs = shared.clone();
        let writer = std::thread::spawn(move || {
            // JSON lines: on a terminal, the same JSON with nothing in it a
            // terminal obeys (`toolhost::display::escape_json`).
            let terminal = Terminal::stdout().is_terminal();
            let mut out = Terminal::new(std::io::stdout().lock(), terminal);
            let mut spare = Vec::new();
            loop {
                let mut pending = theirs.pending.lock().expect("lines lock");
                while pending.bytes.is_empty() && !pending.ended {
                    pending = theirs.ready.wait(pending).expect("lines lock");
                }
                if !pending.ended {
                    drop(pending);
                    std::thread::sleep(COALESCE);
                    pending = theirs.pending.lock().expect("lines lock");
                }
                std::mem::swap(&mut pending.bytes, &mut spare);
                let ended = pending.ended;
                drop(pending);
                if let Err(e) = out
                    .write_bytes(Form::Json, &spare)
                    .and_then(|()| out.flush())
                {
                    stdout_failed(e);
                }
                spare.clear();
                // `finish` comes after the last line, and the swap took
                // everything sent before it.
                if ended {
                    return;
                }
            }
        });
        Lines {
            shared,
            writer: Arc::new(std::sync::Mutex::new(Some(writer))),
            messages: Arc::default(),
        }
    }

    fn send(&self, value: &impl serde::Serialize) {
        self.send_with(|line| serde_json::to_writer(line, value).is_ok());
    }

    /// One event, as `send` would write it; a result message's bytes are
    /// made once (Pi sends each message's `message_end` right after its
    /// `message_start`, so an id's last bytes are that message's).
    fn send_event(&self, event: &Event) {
        let (kind, message) = match event {
            Event::MessageStart { message } => ("message_start", message),
            Event::MessageEnd { message } => ("message_end", message),
            other => return self.send(other),
        };
        let mut messages = self.messages.lock().expect("messages lock");
        let sent = messages.entry(message.tool_call_id.clone()).or_default();
        let bytes = match (kind, sent.last()) {
            ("message_end", Some(bytes)) => bytes.clone(),
            _ => match serde_json::to_vec(message) {
                Ok(bytes) => {
                    sent.push(bytes.into());
                    sent[sent.len() - 1].clone()
                }
                Err(_) => return,
            },
        };
        drop(messages);
        self.send_with(|line| {
            line.extend_from_slice(b"{\"type\":\"");
            line.extend_from_slice(kind.as_bytes());
            line.extend_from_slice(b"\",\"message\":");
            line.extend_from_slice(&bytes);
            line.push(b'}');
            true
        });
    }

    /// `{"type":"turn_end","message":…,"toolResults":[…],"terminate":…}`,
    /// the results' bytes those of their `message_start`.
    fn send_turn_end(&self, message: &Value, results: &[ToolResultMessage], terminate: bool) {
        let sent = std::mem::take(&mut *self.messages.lock().expect("messages lock"));
        let mut taken: std::collections::HashMap<&str, usize> = Default::default();
        self.send_with(|line| {
            line.extend_from_slice(b"{\"type\":\"turn_end\",\"message\":");
            if serde_json::to_writer(&mut *line, message).is_err() {
                return false;
            }
            line.extend_from_slice(b",\"toolResults\":[");
            for (i, result) in results.iter().enumerate() {
                if i > 0 {
                    line.push(b',');
                }
                let nth = taken.entry(result.tool_call_id.as_str()).or_default();
                match sent.get(&result.tool_call_id).and_then(|b| b.get(*nth)) {
                    Some(bytes) => line.extend_from_slice(bytes),
                    None => {
                        if serde_json::to_writer(&mut *line, result).is_err() {
                            return false;
                        }
                    }
                }
                *nth += 1;
            }
            line.extend_from_slice(b"],\"terminate\":");
            line.extend_from_slice(if terminate { b"true" } else { b"false" });
            line.push(b'}');
            true
        });
    }

    /// Append the line `write` makes (unless it fails) and wake the writer.
    fn send_with(&self, write: impl FnOnce(&mut Vec<u8>) -> bool) {
        thread_local! {
            static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        LINE.with_borrow_mut(|line| {
            line.clear();
            if !write(&mut *line) {
                return;
            }
            line.push(b'\n');
            let mut pending = self.shared.pending.lock().expect("lines lock");
            let was_empty = pending.bytes.is_empty();
            pending.bytes.extend_from_slice(line);
            drop(pending);
            if was_empty {
                self.shared.ready.notify_one();
            }
        });
    }

    /// Write every line sent so far, then stop the writer.
    fn finish(self) {
        self.shared.pending.lock().expect("lines lock").ended = true;
        self.shared.ready.notify_one();
        if let Some(writer) = self.writer.lock().expect("writer lock").take() {
            let _ = writer.join();
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost::doctor::Layer;

    /// `doctor` shows what it found on this machine (program and cgroup
    /// paths, a probe's first line) escaped. Nothing a tool can write
    /// reaches those values, so the layers are forged here.
    #[test]
    fn doctor_shows_what_it_found_escaped() {
        let layers = [
            Layer {
                name: "jail",
                on: true,
                state: "/opt/x\x1b[1A\x1b[2K/bwrap (bubblewrap 0.8.0)".into(),
                means: "own user\u{202e}, PID\rnamespaces".into(),
                fix: None,
            },
            Layer {
                name: "limits",
                on: false,
                state: "cgroup v2 under /sys/fs/cgroup/a\u{9b}2Kb".into(),
                means: "one\ntwo".into(),
                fix: Some("run it \x1b]0;owned\x07 here".into()),
            },
        ];
        let text = doctor_text(&layers);
        for shown in [
            "jail      on   /opt/x\\x1b[1A\\x1b[2K/bwrap (bubblewrap 0.8.0)",
            "  own user\\u{202e}, PID\\x0dnamespaces",
            "limits    OFF  cgroup v2 under /sys/fs/cgroup/a\\u{9b}2Kb",
            "  one\\x0atwo",
            "  to turn it on: run it \\x1b]0;owned\\x07 here",
        ] {
            assert!(text.lines().any(|l| l == shown), "{shown:?} in\n{text}");
        }
        assert!(
            !text.contains(|c| c != '\n' && toolhost::display::needs_escape(c)),
            "{text:?}"
        );
    }
}

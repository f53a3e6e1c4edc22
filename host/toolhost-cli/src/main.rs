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
mod args;
mod ask;
mod audit;
mod commands;
mod view;

use args::*;
use commands::call::call;
use commands::doctor::doctor;
use commands::ext::{ext, ext_list};
use commands::list::list;
use commands::replay::replay;
use commands::run::run_batch;
use commands::serve::{mcp, serve_http};
use commands::trust::trust;
use commands::workspace::workspace;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(
        cli.command,
        Command::Optimise | Command::Doctor { .. } | Command::Audit(_) | Command::Workspace { .. }
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

/// The transport of the remote workspace the options name, if they name
/// one: `--workspace-exec`, or a `--workspace` URL.
fn remote_transport(cli: &Cli) -> Result<Option<toolhost::remote::Transport>> {
    use toolhost::remote::{RemoteToolhost, Transport};
    if let Some(command) = &cli.workspace_exec {
        let transport = Transport::exec(command)
            .map_err(|e| anyhow::anyhow!("--workspace-exec {command:?}: {e}"))?;
        return Ok(Some(transport));
    }
    let Some(url) = cli
        .workspace
        .as_ref()
        .and_then(|w| w.to_str())
        .filter(|w| Transport::is_url(w))
    else {
        return Ok(None);
    };
    let toolhost = match &cli.remote_toolhost {
        Some(path) => RemoteToolhost::At(path.clone()),
        None => RemoteToolhost::Copy(
            std::env::current_exe().context("finding this toolhost to copy it over")?,
        ),
    };
    let transport =
        Transport::parse(url, toolhost).map_err(|e| anyhow::anyhow!("--workspace {e}"))?;
    Ok(Some(transport))
}

/// A remote workspace's service, greeted (once for every build).
pub(crate) type Remote = Arc<toolhost::remote::Connection>;

/// Reach and greet the service of `transport` (on the blocking pool: it
/// waits on the transport's login).
async fn open_remote(transport: toolhost::remote::Transport) -> Result<Remote> {
    tokio::task::spawn_blocking(move || toolhost::remote::Connection::open(&transport))
        .await?
        .map_err(anyhow::Error::msg)
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
    /// The remote workspace's service, opened once for every build.
    remote: Option<Remote>,
    /// Where the calls are recorded (one file for every build).
    record: Option<toolhost::tape::RecordTo>,
}

impl HostOptions {
    fn builder(&self) -> HostBuilder {
        let mut builder = Host::builder();
        if let Some(dir) = self.workspace.as_ref().filter(|_| self.remote.is_none()) {
            builder = builder.workspace(dir);
        }
        if let Some(connection) = &self.remote {
            builder = builder.remote_workspace(connection.clone());
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
        if let Some(to) = &self.record {
            builder = builder.record(to.clone());
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
            return ext(command, cli.workspace.as_deref()).await;
        }
        Command::Trust { yes, revoke, json } => {
            return trust(cli.workspace.as_deref(), yes, revoke, json).await;
        }
        Command::Doctor { json } => {
            let remote = match remote_transport(&cli)? {
                Some(transport) => Some(open_remote(transport).await?),
                None => None,
            };
            return doctor(json, remote);
        }
        Command::Workspace { command } => return workspace(command, cli.no_network).await,
        Command::Audit(query) => {
            return audit::run(query, cli.audit.as_deref(), cli.workspace.as_deref());
        }
        Command::Replay {
            files,
            call,
            check,
            components,
        } => {
            let how = commands::replay::How {
                only: call,
                check,
                components,
                extensions: cli.extensions,
            };
            return replay(&files, &how).await;
        }
        _ => {}
    }
    let remote = match remote_transport(&cli)? {
        Some(transport) => Some(open_remote(transport).await?),
        None => None,
    };
    let options = HostOptions {
        workspace: cli.workspace,
        extensions: cli.extensions,
        tools: cli.tools,
        all_tools: cli.all_tools,
        no_network: cli.no_network,
        require_jail: cli.require_jail,
        audit: cli.audit,
        pi: cli.pi,
        remote,
        record: cli.record.map(|file| {
            let to = toolhost::tape::RecordTo::new(file, recorded_command(&cli.command));
            match cli.record_limit {
                Some(bytes) => to.limit(bytes),
                None => to,
            }
        }),
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
    let host = loaded(builder, "toolhost").await?;
    // Said once per run, naming what is not contained.
    let runs_programs = matches!(
        cli.command,
        Command::Call { .. } | Command::Run { .. } | Command::Serve { .. } | Command::Mcp { .. }
    );
    // A remote workspace's commands are confined by its service, which
    // refuses to serve without the jail unless told otherwise.
    if runs_programs && options.remote.is_none() && !host.command_confinement().is_jail() {
        eprintln!(
            "toolhost: warning: programs run without the process jail: {} (toolhost doctor \
             says how to turn it on)",
            escape(&host.command_confinement().to_string())
        );
    }
    let told = host.clone();
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
            let served = match &options.record {
                // Recorded: the lines it reads too, for a replay to feed.
                Some(to) => {
                    let offered = host.active_tools();
                    let (input, output) =
                        to.stdio(offered, tokio::io::stdin(), tokio::io::stdout());
                    toolhost::serve::serve(host, tokio::io::BufReader::new(input), output).await
                }
                None => {
                    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
                    toolhost::serve::serve(host, stdin, tokio::io::stdout()).await
                }
            };
            served.context("serving JSON-RPC on stdio")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { http, sessions } => mcp(host, options.clone(), http, sessions).await,
        Command::Ext {
            command: ExtCommand::List { json },
        } => ext_list(&host, json),
        Command::Ext { .. }
        | Command::Trust { .. }
        | Command::Doctor { .. }
        | Command::Workspace { .. }
        | Command::Audit(_)
        | Command::Replay { .. } => {
            unreachable!("handled before loading")
        }
    };
    for said in told.tape_report() {
        eprintln!("toolhost: warning: {}", escape(&said));
    }
    if short {
        hand_over_compiles(options.workspace.as_deref(), &options.extensions);
    }
    code
}

/// What a recording says ran: how `replay` prints its calls again.
fn recorded_command(command: &Command) -> String {
    match command {
        Command::Call { json: true, .. } => "call --json",
        Command::Call { .. } => "call",
        Command::Run { json: true, .. } => "run --json",
        Command::Run { .. } => "run",
        Command::Serve { .. } => "serve",
        Command::Mcp { .. } => "mcp",
        _ => "toolhost",
    }
    .to_string()
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

/// The host `builder` builds, each diagnostic (an extension refused, a
/// name collision) told on stderr as `WHO: warning: …`.
pub(crate) async fn loaded(builder: HostBuilder, who: &str) -> Result<Host> {
    let host = builder.build().await.context("loading the tools")?;
    for d in host.diagnostics() {
        eprintln!("{who}: warning: {}", escape(&d.to_string()));
    }
    Ok(host)
}

/// The user's configuration directory, or why there is none.
fn user_config_dir() -> Result<PathBuf> {
    toolhost::extensions::policy::default_user_config_dir()
        .context("no user configuration directory (set HOME or XDG_CONFIG_HOME)")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
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

//! The command line: global options, commands and their arguments (clap).

use crate::*;

#[derive(Parser)]
#[command(
    name = "toolhost",
    version,
    about = "Run an LLM agent's tools as sandboxed WebAssembly components"
)]
pub(crate) struct Cli {
    /// Directory the tools work in and may read (default: the current
    /// directory), or a remote workspace: ssh://[user@]host[:port]/abs/path
    /// (OpenSSH's ssh with your own configuration and keys, or
    /// TOOLHOST_SSH_COMMAND) or container://NAME/abs/path (podman or docker
    /// exec), served there by this same toolhost, copied over when missing.
    #[arg(
        long,
        global = true,
        value_name = "DIR|URL",
        overrides_with = "workspace"
    )]
    pub(crate) workspace: Option<PathBuf>,
    /// The toolhost to run on the other side of an ssh:// or container://
    /// workspace, instead of a copy of this one.
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) remote_toolhost: Option<String>,
    /// Work in a remote workspace: run COMMAND, which starts `toolhost
    /// workspace serve DIR` with its stdin and stdout (`kubectl exec -i pod
    /// -- toolhost workspace serve /ws`), and send it every file, search and
    /// shell Operation; the tools themselves run here (--workspace is then
    /// not used).
    #[arg(long, global = true, value_name = "COMMAND")]
    pub(crate) workspace_exec: Option<String>,
    /// Load a tool component from this .wasm file (repeatable; granted nothing).
    #[arg(long = "extension", global = true, value_name = "FILE")]
    pub(crate) extensions: Vec<PathBuf>,
    /// Comma-separated tools the model may call (default: read, bash, edit,
    /// write that exist, plus every extension tool).
    #[arg(
        long,
        global = true,
        value_delimiter = ',',
        value_name = "NAMES",
        conflicts_with = "all_tools"
    )]
    pub(crate) tools: Option<Vec<String>>,
    /// Make every loaded tool active.
    #[arg(long, global = true)]
    pub(crate) all_tools: bool,
    /// Refuse shell commands the network: IPv4 and IPv6 sockets of every
    /// kind (Pi's bash has the network).
    #[arg(long, global = true)]
    pub(crate) no_network: bool,
    /// Refuse to run programs where the process jail (bubblewrap) cannot
    /// run, instead of running them under Landlock and seccomp alone.
    #[arg(long, global = true)]
    pub(crate) require_jail: bool,
    /// Append a JSON line per call to this file: the tool, its component,
    /// its arguments (secrets redacted), what it read, wrote, ran and
    /// contacted, how it ended (default: `audit` in the user's toolhost.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
    /// Record every call to this file, outside the workspace: what each
    /// component asked of the host and was answered (files read and
    /// written, programs with their output, searches, nested calls), the
    /// clocks and random bytes it saw, its arguments and result. `toolhost
    /// replay FILE` runs them again from it (docs/recording.md).
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
    /// Stop recording once the recording reaches this many bytes (the calls
    /// go on; default 1 GiB).
    #[arg(long, global = true, value_name = "BYTES", requires = "record")]
    pub(crate) record_limit: Option<u64>,
    /// The release of Pi whose texts and result shapes the model gets:
    /// 0.85 or 1.6 (default: `pi` in toolhost.toml, else 0.85).
    #[arg(long, global = true, value_name = "VERSION")]
    pub(crate) pi: Option<toolhost::PiProfile>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
    /// Run the calls of a recording (--record) again: the same components,
    /// answered from the recording instead of the machine, printing what the
    /// recorded command printed. The first question or result that differs
    /// from the recording is an error naming it (exit 1).
    Replay {
        /// Recordings, replayed in turn.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
        /// Replay only the call with this id.
        #[arg(long, value_name = "ID")]
        call: Option<String>,
        /// Print only whether each call replays as recorded (for CI): exit
        /// 1 on any divergence.
        #[arg(long)]
        check: bool,
        /// Serve the recorded extension NAME with this component instead
        /// (a new version of it), under its recorded grant, and show call by
        /// call how its questions and results differ (repeatable).
        #[arg(long = "component", value_name = "NAME=FILE", value_parser = parse_component)]
        components: Vec<(String, PathBuf)>,
    },
    /// Finish compiling what the last command loaded with the quick compiler
    /// (started by toolhost itself, detached, when a short command ends
    /// while Cranelift still works in the background).
    #[command(hide = true)]
    Optimise,
    /// The far end of a remote workspace (see --workspace-exec).
    Workspace {
        #[command(subcommand)]
        command: WorkspaceCommand,
    },
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

#[derive(Subcommand)]
pub(crate) enum WorkspaceCommand {
    /// Serve DIR's files, searches and commands over stdin and stdout to a
    /// toolhost elsewhere (what --workspace-exec runs), confined here as a
    /// local toolhost confines them. It refuses to start where the process
    /// jail cannot run, unless --allow-unconfined.
    Serve {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Serve even where the process jail cannot run (commands then run
        /// under Landlock and seccomp alone, where the kernel has them).
        #[arg(long)]
        allow_unconfined: bool,
    },
}

/// The bounds of `mcp --http`'s sessions (clients on the handshake
/// revisions; 2026-07-28 clients have none).
#[derive(clap::Args, Clone)]
pub(crate) struct SessionArgs {
    /// Most MCP sessions kept at once; past it, an `initialize` gets 503
    /// and the open sessions keep working.
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = toolhost::mcp::SessionBounds::DEFAULT_MAX as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_sessions: u64,
    /// Seconds a session may go without a request, a running call or an
    /// open stream before it is closed.
    #[arg(long, value_name = "SECONDS", requires = "http",
          default_value_t = toolhost::mcp::SessionBounds::DEFAULT_IDLE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) session_idle: u64,
    /// Seconds a response stream stays open while its call runs before the
    /// server closes it and the client resumes it with Last-Event-ID
    /// (clients of 2025-11-25 and later; SEP-1699 polling); 0: open until
    /// the response.
    #[arg(long, value_name = "SECONDS", requires = "http",
          default_value_t = toolhost::mcp::SessionBounds::DEFAULT_POLL_AFTER.as_secs())]
    pub(crate) sse_poll: u64,
}

impl SessionArgs {
    pub(crate) fn bounds(&self) -> toolhost::mcp::SessionBounds {
        toolhost::mcp::SessionBounds {
            max: usize::try_from(self.max_sessions).unwrap_or(usize::MAX),
            idle: Duration::from_secs(self.session_idle),
            poll_after: (self.sse_poll > 0).then(|| Duration::from_secs(self.sse_poll)),
        }
    }
}

/// Serving over HTTP instead of stdio (`serve`, `mcp`).
#[derive(clap::Args, Clone)]
pub(crate) struct HttpArgs {
    /// Listen for HTTP on this address (e.g. 127.0.0.1:8765; port 0 picks
    /// one). Every request needs a bearer token, on loopback too.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Require `Authorization: Bearer <token>` with the token in this file
    /// (keep it where tools' commands cannot read it). Without it, a token
    /// is generated and printed once on stderr.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) token_file: Option<PathBuf>,
    /// Serve without a token, on loopback only: every local process can
    /// then use the tools, among them the commands an agent runs in another
    /// workspace.
    #[arg(long, requires = "http", conflicts_with = "token_file")]
    pub(crate) no_auth: bool,
    /// Also accept this Host name (DNS-rebinding check; `name` for any port,
    /// `name:port`, or `*`). Repeatable.
    #[arg(long = "allow-host", value_name = "NAME", requires = "http")]
    pub(crate) allow_hosts: Vec<String>,
    /// Accept requests carrying this Origin (`http://app.example:8080`,
    /// `http://localhost:*`); any other Origin is refused. Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub(crate) allow_origins: Vec<String>,
    /// Most requests that run tools at once; more wait their turn.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "http")]
    pub(crate) max_requests: usize,
}

impl HttpArgs {
    /// The listener's options, reading or generating the token.
    pub(crate) fn options(
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

#[derive(Subcommand)]
pub(crate) enum ExtCommand {
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
    /// Make an extension's project from a template: its source, manifest,
    /// grant, WIT, a test and a README.
    New {
        /// Its name: lowercase words joined by '-' (its tool is the name
        /// with '_').
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(long = "lang", value_name = "rust|js|python|c")]
        language: crate::commands::author::toolchain::Language,
        /// The folder to make (default: NAME).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Build the project here with its language's tools, then show what
    /// the component asks for against what extension.toml grants.
    Build {
        #[arg(value_name = "DIR", default_value = ".")]
        project: PathBuf,
    },
    /// Build the project here, run its tests/cases.toml and replay its
    /// tests/recordings/ against the new build.
    Test {
        #[arg(value_name = "DIR", default_value = ".")]
        project: PathBuf,
        /// Record the cases' calls again, with every question the component
        /// asked, into tests/recordings/cases.rec (kept when every case
        /// passes), instead of replaying the recordings.
        #[arg(long)]
        rerecord: bool,
        /// Test what is built, without building.
        #[arg(long)]
        no_build: bool,
    },
    /// Build and load the project here, call it from stdin (one call a
    /// line), and rebuild it whenever a source changes.
    Dev {
        #[arg(value_name = "DIR", default_value = ".")]
        project: PathBuf,
    },
    /// What builds each language here; with --install, install what toolhost
    /// installs itself (pinned, into its toolchains directory).
    Toolchain {
        #[arg(value_name = "LANG")]
        languages: Vec<crate::commands::author::toolchain::Language>,
        #[arg(long)]
        install: bool,
    },
    /// Install a component for every workspace (into the user's extensions
    /// directory) and write its grant, pinned to its digest, into the user's
    /// toolhost.toml. From a registry, `oci://REGISTRY/REPOSITORY[:TAG][@sha256:…]`:
    /// pulled, checked, and its signature checked before anything is written.
    /// Without FILE, in an extension's project: what it built, granted its
    /// extension.toml's [capabilities].
    Add {
        #[arg(value_name = "FILE.wasm|oci://…")]
        file: Option<String>,
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
        // Boxed: the grant's flags are most of the command's size.
        #[command(flatten)]
        grant: Box<GrantArgs>,
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
    /// sign its digest as cosign does. Without FILE, in an extension's
    /// project: what it built.
    Publish {
        /// The component (default, in a project: what it built), then where it goes.
        #[arg(value_name = "[FILE.wasm] oci://REGISTRY/REPOSITORY:TAG", required = true, num_args = 1..=2)]
        targets: Vec<String>,
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
pub(crate) struct GrantArgs {
    /// A directory it may read (repeatable; relative to the workspace).
    #[arg(long = "fs-read", value_name = "DIR")]
    pub(crate) fs_read: Vec<String>,
    /// A directory it may write (repeatable).
    #[arg(long = "fs-write", value_name = "DIR")]
    pub(crate) fs_write: Vec<String>,
    /// A program it may run (repeatable).
    #[arg(long = "process", value_name = "PROGRAM")]
    pub(crate) process: Vec<String>,
    /// Its programs may use the network.
    #[arg(long)]
    pub(crate) network: bool,
    /// An environment variable it may see (repeatable).
    #[arg(long = "env", value_name = "NAME")]
    pub(crate) env: Vec<String>,
    /// Native search over its fs-read directories.
    #[arg(long)]
    pub(crate) search: bool,
    /// A host its wasi:http requests may reach (repeatable;
    /// `[http://|https://]host[:port]`, https only without a scheme).
    #[arg(long = "http", value_name = "HOST")]
    pub(crate) http: Vec<String>,
    /// It may read and change the active tools (`tools = true`).
    #[arg(long)]
    pub(crate) change_tools: bool,
    /// Its hooks may run (they see and may rewrite every call).
    #[arg(long)]
    pub(crate) hooks: bool,
    /// Its tools may replace built-ins of the same name.
    #[arg(long)]
    pub(crate) replace_builtin: bool,
    /// What it may ask the person's client: elicitation, sampling or roots
    /// (repeatable).
    #[arg(long = "client", value_name = "KIND")]
    pub(crate) client: Vec<String>,
    /// A secret its HTTP requests carry and it never sees (repeatable):
    /// `NAME=env:VARIABLE` or `NAME=file:PATH` (mode 0600), sent as
    /// `Authorization: Bearer …` to every host of its http grant (narrow
    /// the hosts, or change the header, in toolhost.toml).
    #[arg(long = "secret", value_name = "NAME=SOURCE")]
    pub(crate) secret: Vec<String>,
}

impl GrantArgs {
    pub(crate) fn grant(self) -> Result<toolhost::extensions::policy::GrantSpec> {
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

pub(crate) fn parse_format(s: &str) -> Result<ToolFormat, String> {
    s.parse()
}

/// `NAME=FILE` of `replay --component`.
fn parse_component(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!(
            "{text:?} is not NAME=FILE (an extension's name, a .wasm file)"
        )),
    }
}

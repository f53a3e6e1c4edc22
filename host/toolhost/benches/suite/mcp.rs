//! One MCP client's sequential `tools/call`s of a file read over stdio, to
//! `toolhost mcp` (`read`, sandboxed, through Pi's whole pipeline) and, in
//! the same run, to two servers without a sandbox: an rmcp server with a
//! `read` tool that reads the file with `tokio::fs` (this benchmark binary
//! itself, started with [`RMCP_READ`] set), and the reference filesystem
//! server (`read_text_file`, Node), as `scripts/setup` installs it in
//! target/conformance. The same file, the same raw JSON-RPC client (one
//! line out, wait for the answer line), the handshake of 2025-06-18.

use crate::Config;
use crate::startup::toolhost_bin;
use crate::table::{Row, quantile, ratio, us};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set to a directory, this binary serves it with [`serve_rmcp_read`]
/// instead of running the suite.
pub const RMCP_READ: &str = "TOOLHOST_BENCH_RMCP_READ";

/// Set to a directory, this binary serves it with [`serve_raw_read`]: the
/// floor of a JSON-RPC round trip over two pipes.
pub const RAW_READ: &str = "TOOLHOST_BENCH_RAW_READ";

/// The file read: 64 lines of 100 characters, as the figures.
const LINES: usize = 64;

/// Serve the rmcp baseline when this process was started for it; `true`
/// when it was (and has served its client to the end).
pub fn child_main() -> bool {
    if let Some(root) = std::env::var_os(RAW_READ) {
        serve_raw_read(Path::new(&root));
        return true;
    }
    let Some(root) = std::env::var_os(RMCP_READ) else {
        return false;
    };
    let rt = crate::runtime();
    rt.block_on(serve_rmcp_read(PathBuf::from(root)));
    true
}

/// The unsandboxed baseline: rmcp on stdio with one tool, `read`, which
/// returns the text of `root`/`path`.
async fn serve_rmcp_read(root: PathBuf) {
    use rmcp::ServiceExt;
    let server = ReadServer { root };
    let running = server
        .serve(rmcp::transport::io::stdio())
        .await
        .expect("serving rmcp on stdio");
    let _ = running.waiting().await;
}

/// The floor: no MCP library and no runtime, one thread reading a line,
/// parsing it with serde_json, and for `tools/call` writing the file's text
/// back in a result (`initialize` gets a minimal one, notifications none).
fn serve_raw_read(root: &Path) {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        let request: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = request.get("id") else {
            continue;
        };
        let result = match request["method"].as_str() {
            Some("tools/call") => {
                let path = request["params"]["arguments"]["path"]
                    .as_str()
                    .unwrap_or("");
                let text = std::fs::read_to_string(root.join(path)).unwrap_or_default();
                json!({"content": [{"type": "text", "text": text}], "isError": false})
            }
            _ => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw-read", "version": "0"},
            }),
        };
        let mut out = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        out.push('\n');
        if stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}

#[derive(Clone)]
struct ReadServer {
    root: PathBuf,
}

impl rmcp::ServerHandler for ReadServer {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        let capabilities = rmcp::model::ServerCapabilities::builder()
            .enable_tools()
            .build();
        rmcp::model::ServerConfig::new(capabilities)
            .with_server_info(rmcp::model::Implementation::new("rmcp-read", "0"))
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let tool = rmcp::model::Tool::new("read", "Read a file", schema);
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let path = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("path"))
            .and_then(Value::as_str)
            .ok_or_else(|| rmcp::ErrorData::invalid_params("path is required", None))?;
        let text = tokio::fs::read_to_string(self.root.join(path))
            .await
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        let content = vec![rmcp::model::ContentBlock::text(text)];
        Ok(rmcp::model::CallToolResult::success(content).into())
    }
}

/// A server on stdio and a raw client of it.
struct Client {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Client {
    /// Start `command` and make the 2025-06-18 handshake.
    fn start(mut command: Command) -> Client {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting an MCP server");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut client = Client {
            child,
            input,
            output,
            next: 0,
        };
        client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "toolhost-bench", "version": "0"},
            }),
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.input.write_all(line.as_bytes()).unwrap();
        self.input.flush().unwrap();
    }

    /// One request and its response (notifications before it skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.output.read_line(&mut line).unwrap();
            assert!(read > 0, "the server ended before answering {method}");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"].as_u64() == Some(id) {
                return message;
            }
        }
    }

    /// `calls` sequential calls of `tool` with `arguments`, each checked to
    /// return the file's text; their latencies.
    fn calls(&mut self, calls: usize, tool: &str, arguments: &Value, text: &str) -> Vec<Duration> {
        let params = json!({"name": tool, "arguments": arguments});
        let mut latencies = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            let response = self.request("tools/call", params.clone());
            latencies.push(start.elapsed());
            let got = response["result"]["content"][0]["text"].as_str();
            assert!(got.is_some_and(|t| t.contains(text)), "{tool}: {response}");
        }
        latencies
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The reference filesystem server and the Node it runs on, where
/// `scripts/setup` installs them.
fn reference_server() -> Option<(PathBuf, PathBuf)> {
    let modules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/conformance/node_modules");
    let node = modules.join("node/bin/node");
    let server = modules.join("@modelcontextprotocol/server-filesystem/dist/index.js");
    (node.is_file() && server.is_file()).then_some((node, server))
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let Some(bin) = toolhost_bin() else {
        eprintln!("  mcp: skipped: no toolhost binary (scripts/bench builds it)");
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let line = format!("{}\n", "x".repeat(99));
    std::fs::write(ws_path.join("notes.txt"), line.repeat(LINES)).unwrap();
    let calls = cfg.scaled(2000);
    let config = tempfile::tempdir().unwrap();

    let mut toolhost = Command::new(&bin);
    toolhost
        .arg("--workspace")
        .arg(&ws_path)
        .arg("mcp")
        .env("XDG_CONFIG_HOME", config.path())
        .env("XDG_STATE_HOME", config.path());
    let mut rmcp = Command::new(std::env::current_exe().unwrap());
    rmcp.env(RMCP_READ, &ws_path);
    let mut raw = Command::new(std::env::current_exe().unwrap());
    raw.env(RAW_READ, &ws_path);
    let relative = json!({"path": "notes.txt"});

    // Warm each up, then measure them one after another.
    let measure = |command: Command, tool: &str, arguments: &Value| {
        let mut client = Client::start(command);
        client.calls(calls / 10, tool, arguments, &line);
        client.calls(calls, tool, arguments, &line)
    };
    let ours = measure(toolhost, "read", &relative);
    let unsandboxed = measure(rmcp, "read", &relative);
    let floor = measure(raw, "read", &relative);
    let [ours_p50, ours_p99] = [0.5, 0.99].map(|q| quantile(&ours, q));
    let [rmcp_p50, rmcp_p99] = [0.5, 0.99].map(|q| quantile(&unsandboxed, q));
    rows.push(
        Row::timed(
            "MCP stdio `read`, p50",
            ours_p50,
            "unsandboxed rmcp server",
            rmcp_p50,
            us,
        )
        .target(
            "≤ 100 µs and ≤ 0.5× rmcp",
            ours_p50 <= Duration::from_micros(100) && ratio(ours_p50, rmcp_p50) <= 0.5,
        ),
    );
    rows.push(
        Row::timed(
            "MCP stdio `read`, p99",
            ours_p99,
            "unsandboxed rmcp server",
            rmcp_p99,
            us,
        )
        .target("≤ 200 µs", ours_p99 <= Duration::from_micros(200)),
    );
    let [raw_p50, raw_p99] = [0.5, 0.99].map(|q| quantile(&floor, q));
    let floor_name = "a JSON-RPC loop (std I/O, serde_json, no MCP library)";
    rows.push(Row::timed(
        "MCP stdio `read`, p50",
        ours_p50,
        floor_name,
        raw_p50,
        us,
    ));
    rows.push(Row::timed(
        "MCP stdio `read`, p99",
        ours_p99,
        floor_name,
        raw_p99,
        us,
    ));
    match reference_server() {
        Some((node, server)) => {
            let mut reference = Command::new(node);
            reference.arg(server).arg(&ws_path);
            let absolute = json!({"path": ws_path.join("notes.txt")});
            let theirs = measure(reference, "read_text_file", &absolute);
            let [p50, p99] = [0.5, 0.99].map(|q| quantile(&theirs, q));
            rows.push(Row::timed(
                "MCP stdio `read`, p50",
                ours_p50,
                "reference filesystem server (Node)",
                p50,
                us,
            ));
            rows.push(Row::timed(
                "MCP stdio `read`, p99",
                ours_p99,
                "reference filesystem server (Node)",
                p99,
                us,
            ));
        }
        None => eprintln!(
            "  mcp: the reference filesystem server is not installed (scripts/setup installs it \
             into target/conformance)"
        ),
    }
}

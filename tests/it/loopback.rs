//! A loopback server is no door between workspaces. bash has the network by
//! default (as in Pi), so the commands an agent runs for workspace B can
//! connect to workspace A's `mcp --http` or `serve --http` on 127.0.0.1;
//! without a token there, they once wrote into A. Now every request needs
//! the token the server generated (printed once on its stderr, nowhere a
//! command can read it), unless the person starts it with `--no-auth`.

use crate::support::*;
use serde_json::json;

const PLANTED: &str = "from-workspace-b.txt";

/// A bash command that asks the server at `url` to write [`PLANTED`] in its
/// workspace, with `token` if given, and prints the HTTP status.
fn write_through(url: &str, token: Option<&str>) -> String {
    let content = "written by the bash of workspace B";
    let (body, headers) = if url.ends_with("/mcp") {
        // Revision 2026-07-28: one self-contained request, no handshake.
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "write", "arguments": {"path": PLANTED, "content": content},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }});
        let headers = "-H 'Accept: application/json, text/event-stream' \
                       -H 'MCP-Protocol-Version: 2026-07-28' \
                       -H 'Mcp-Method: tools/call' -H 'Mcp-Name: write'";
        (body, headers)
    } else {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "batch/run", "params": {
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "w",
                "name": "write", "arguments": {"path": PLANTED, "content": content}}]},
        }});
        (body, "")
    };
    let auth = token
        .map(|t| format!("-H 'Authorization: Bearer {t}'"))
        .unwrap_or_default();
    format!(
        "curl -s -o /dev/null -w '%{{http_code}}' -X POST '{url}' \
         -H 'Content-Type: application/json' {headers} {auth} --data '{body}'"
    )
}

/// What B's bash printed running `command`.
#[track_caller]
fn bash_of_b(b: &Workspace, command: &str) -> String {
    let host = host(b);
    let result = call(&host, "bash", json!({ "command": command }));
    assert!(!result.is_error, "bash in B: {}", result.text());
    result.text().trim().to_string()
}

#[track_caller]
fn check_server(server: &str) {
    // A's server as a person starts it: on loopback, nothing more.
    let a = Workspace::new();
    let listening = Listening::start(&a, &[server, "--http", "127.0.0.1:0"]);

    // B's bash, without the token: refused, nothing written in A.
    let b = Workspace::new();
    let status = bash_of_b(&b, &write_through(&listening.url, None));
    assert!(
        !a.path.join(PLANTED).exists(),
        "{server}: B's bash wrote into A (HTTP {status})"
    );
    assert_eq!(status, "401", "{server}: B's bash without the token");

    // The person's own client, outside any jail, with the token printed
    // for them.
    let token = listening
        .token
        .clone()
        .unwrap_or_else(|| panic!("{server} --http printed no generated token"));
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(write_through(&listening.url, Some(&token)))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{server}");
    assert_eq!(a.read(PLANTED), "written by the bash of workspace B");
    drop(listening);

    // --no-auth, asked for explicitly, opens the door again: the switch is
    // what closed it.
    let a = Workspace::new();
    let open = Listening::start(&a, &[server, "--http", "127.0.0.1:0", "--no-auth"]);
    assert_eq!(open.token, None, "{server} --no-auth printed a token");
    let status = bash_of_b(&b, &write_through(&open.url, None));
    assert_eq!(status, "200", "{server} --no-auth: B's bash");
    assert_eq!(a.read(PLANTED), "written by the bash of workspace B");
}

#[test]
fn bash_of_another_workspace_cannot_use_a_loopback_mcp_server_without_its_token() {
    check_server("mcp");
}

#[test]
fn bash_of_another_workspace_cannot_use_a_loopback_serve_server_without_its_token() {
    check_server("serve");
}

#[test]
fn no_auth_is_refused_off_loopback_and_beside_a_token() {
    let ws = Workspace::new();
    let out = ws
        .cli()
        .args(["mcp", "--http", "0.0.0.0:0", "--no-auth"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "listening on 0.0.0.0:0 (not a loopback address) needs a bearer token \
             (--token-file); --no-auth is for loopback only"
        ),
        "{stderr}"
    );
    let token = ws.write("token", "0123456789abcdef0123");
    let out = ws
        .cli()
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--token-file",
        ])
        .arg(&token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}

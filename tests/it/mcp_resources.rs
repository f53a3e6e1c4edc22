//! `toolhost mcp`'s resources, prompts and completions, driven by the
//! official MCP Python SDK (tests/mcp_resources.py), attacks first: no URI,
//! prompt argument, completion or subscription names what `read` could not
//! open, nor git's internals, toolhost's configuration or the user's
//! secrets.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// A workspace that is also `$HOME` (so that the secret stores lie inside
/// it), beside a file outside it, with every kind of thing a resource must
/// not name.
fn lay_out(ws: &Path, outside: &Path) {
    let write = |rel: &str, contents: &[u8]| {
        let path = ws.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    };
    std::fs::write(outside, "outside the workspace\n").unwrap();
    write("a.txt", b"Hello, resources!\n");
    let mut png = Vec::new();
    image::RgbImage::from_pixel(1, 1, image::Rgb([255, 0, 0]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    write("pixel.png", &png);
    write("sub/b.rs", b"fn main() {}\n");
    write("sub/with space.md", b"# spaced\n");
    write(".gitignore", b"*.log\n");
    write("ignored.log", b"ignored\n");
    // Enough files for several pages.
    for i in 0..250 {
        write(&format!("many/f-{i}.txt"), b"x");
    }
    // A git repository's internals, toolhost's own files, secrets.
    write(".git/HEAD", b"ref: refs/heads/main\n");
    write(".git/config", b"[core]\n\tbare = false\n");
    std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
    std::fs::create_dir_all(ws.join(".git/refs")).unwrap();
    write("toolhost.toml", b"active-tools = [\"read\"]\n");
    write(".toolhost/extensions/x.wasm", b"\0asm");
    write(".ssh/id_ed25519", b"-----BEGIN OPENSSH PRIVATE KEY-----\n");
    write(
        ".aws/credentials",
        b"[default]\naws_secret_access_key = x\n",
    );
    // Links: out of the workspace, within it, and a directory link to .git.
    std::os::unix::fs::symlink(outside, ws.join("link-out.txt")).unwrap();
    std::os::unix::fs::symlink(ws.join("a.txt"), ws.join("link-in.txt")).unwrap();
    std::os::unix::fs::symlink(ws.join(".git"), ws.join("gitdir")).unwrap();
    // A directory link to a secret store: its names must not leak either.
    std::os::unix::fs::symlink(ws.join(".ssh"), ws.join("keys")).unwrap();
    // Over the 4 MiB a resource holds.
    write("big.bin", &vec![b'z'; (4 << 20) + 1]);
}

#[track_caller]
fn drive(mode: &str) -> Value {
    drive_with(mode, "")
}

/// [`drive`] with `more` in the user's toolhost.toml.
#[track_caller]
fn drive_with(mode: &str, more: &str) -> Value {
    let outer = tempfile::tempdir().unwrap();
    let outer_path = outer.path().canonicalize().unwrap();
    let ws = outer_path.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let outside = outer_path.join("outside.txt");
    lay_out(&ws, &outside);
    let config = tempfile::tempdir().unwrap();
    let (_tools_dir, tools) = conformance_tools();
    std::fs::create_dir_all(config.path().join("toolhost")).unwrap();
    std::fs::write(
        config.path().join("toolhost/toolhost.toml"),
        format!(
            "{more}[extensions.mcptools]\ntools = true\nclient = [\"elicitation\", \"sampling\", \
             \"roots\"]\n"
        ),
    )
    .unwrap();
    script_summary(
        Command::new(python_with_mcp())
            .arg(repo_root().join("tests/mcp_resources.py"))
            .arg(toolhost_bin())
            .arg(&ws)
            .arg(&outside)
            .arg(&tools)
            .arg(mode)
            .env("XDG_CONFIG_HOME", config.path())
            .env("XDG_CACHE_HOME", config.path().join("cache")),
        &format!("mcp_resources.py {mode}"),
    )
}

#[track_caller]
fn check_summary(summary: &Value) {
    let refusals = &summary["refusals"];
    let refused = |name: &str| refusals[name].as_str().unwrap_or_default().to_string();
    let all_say = |names: &[&str], said: &str| {
        for name in names {
            let text = refused(name);
            assert!(text.contains(said), "{name}: {text}");
        }
    };
    // Outside the workspace, by every spelling: named, and said why.
    all_say(
        &["outside", "passwd", "dotdot", "encodedDotdot"],
        "is outside the workspace, the only place read may open",
    );
    // Hidden, whatever read may do.
    all_say(
        &[
            "gitConfig",
            "gitHead",
            "policy",
            "dotToolhost",
            "sshKey",
            "awsCredentials",
            "madeLater",
            "dirLinkToGit",
        ],
        "is protected (git's internals, toolhost's configuration",
    );
    all_say(&["linkOut", "linkIn"], "leads through a symbolic link");
    let not_files = [
        "otherHost",
        "query",
        "nul",
        "otherScheme",
        "relative",
        "unknownScheme",
    ];
    all_say(&not_files, "Resource not found: ");
    assert_eq!(
        refused("missing"),
        "Resource not found: file://WS/missing.txt"
    );
    assert!(refused("directory").contains("is a directory"));
    assert_eq!(
        refused("tooLarge"),
        "Resource refused: file://WS/big.bin is 4.0 MiB, more than the 4.0 MiB a resource \
         holds; read it with the read tool (offset, limit)"
    );
    // Every listed file in pages of 100, the offered resources first.
    assert!(summary["pages"].as_u64().unwrap() >= 3, "{summary}");
    assert_eq!(summary["offeredListed"], true);
    // A shell's completion of `.`: what may be named, not what is hidden.
    assert_eq!(summary["dotCompletions"], json!([".gitignore"]));
    assert_eq!(
        summary["smuggledRefused"],
        json!({"passwd": -32602, "gitConfig": -32602, "sshKey": -32602, "linkOut": -32602})
    );
    assert_eq!(summary["argCompletions"], json!(["paris", "park", "party"]));
    assert_eq!(summary["updated"], true);
    assert_eq!(summary["instructions"], true);
    let prompts: Vec<&str> = strings_at(&summary["prompts"], "");
    for name in [
        "toolhost",
        "read",
        "bash",
        "test_simple_prompt",
        "test_prompt_with_image",
    ] {
        assert!(
            prompts.contains(&name),
            "{name} is not a prompt: {prompts:?}"
        );
    }
}

#[test]
fn mcp_resources_name_nothing_read_could_not_with_the_handshake() {
    check_summary(&drive("legacy"));
}

#[test]
fn mcp_resources_name_nothing_read_could_not_at_2026_07_28() {
    check_summary(&drive("auto"));
}

/// `[mcp] resources = false` turns the surface off: no capability, nothing
/// listed, each read refused saying why; prompts are still served.
#[test]
fn mcp_resources_false_serves_no_resource_at_all() {
    let summary = drive_with("off", "[mcp]\nresources = false\n\n");
    assert_eq!(
        summary["refused"],
        json!({
            "a.txt": "Resource not found: file://WS/a.txt (toolhost serves no resources here: \
                      [mcp] resources = false)",
            "static-text": "Resource not found: test://static-text (toolhost serves no \
                            resources here: [mcp] resources = false)",
        })
    );
}

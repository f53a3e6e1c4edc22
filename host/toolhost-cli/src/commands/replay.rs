//! `toolhost replay`: the calls of a recording run again by the same
//! components (or a new version of one), answered from the recording, and
//! printed as the recorded command printed them; or, with a new component,
//! what it does differently, call by call.

use crate::commands::call::print_result;
use crate::commands::run::run_message;
use crate::*;
use toolhost::tape::{RecordedComponent, Recording};

/// What `replay` was asked to do.
pub(crate) struct How {
    /// Only the call with this id.
    pub only: Option<String>,
    /// Print only whether each call replays as recorded.
    pub check: bool,
    /// Extensions served by other components (`--component NAME=FILE`).
    pub components: Vec<(String, PathBuf)>,
    /// Components given with `--extension`.
    pub extensions: Vec<PathBuf>,
}

pub(crate) async fn replay(files: &[PathBuf], how: &How) -> Result<ExitCode> {
    let mut failed = false;
    for file in files {
        failed |= !replay_one(file, how).await?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Replay one recording: `true` when every call replayed as recorded.
pub(crate) async fn replay_one(file: &std::path::Path, how: &How) -> Result<bool> {
    let shown = escape_path(file);
    let recording = Arc::new(Recording::open(file).map_err(anyhow::Error::msg)?);
    if let Some(why) = &recording.stopped {
        eprintln!("toolhost: replay: {shown}: the recording is incomplete: {why}");
    }
    for (name, _) in &how.components {
        if !recording.components.iter().any(|c| &c.name == name) {
            let recorded: Vec<&str> = recording
                .components
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            bail!(
                "{shown}: --component {name}: the recording has no extension of that name \
                 (it has: {})",
                if recorded.is_empty() {
                    "none".to_string()
                } else {
                    recorded.join(", ")
                }
            );
        }
    }
    let pi: toolhost::PiProfile = recording.header.pi.parse().map_err(|e| {
        anyhow::anyhow!(
            "{shown}: the recording's Pi profile {:?}: {e}",
            recording.header.pi
        )
    })?;
    // A workspace of its own, empty, and no user configuration: every
    // question a replayed call asks is answered from the recording.
    let scratch = tempfile::Builder::new()
        .prefix("toolhost-replay-")
        .tempdir()
        .context("making the replay's empty workspace")?;
    let replaced: Vec<String> = how.components.iter().map(|(n, _)| n.clone()).collect();
    let mut builder = Host::builder()
        .workspace(scratch.path().join("workspace"))
        .user_config_dir(None)
        .state_dir(None)
        .pi_profile(pi)
        .replay(recording.clone(), replaced.clone());
    // A front end on stdio replays the lines it read (`protocol`), offering
    // the tools it offered; anything else calls tools by name.
    let command = recording.header.command.as_str();
    let comparing = !how.components.is_empty();
    let protocol = !comparing
        && how.only.is_none()
        && matches!(command, "serve" | "mcp")
        && !recording.inputs.is_empty();
    builder = match (&recording.offered, protocol) {
        (Some(offered), true) => builder.active_tools(offered.clone()),
        _ => builder.all_tools_active(),
    };
    std::fs::create_dir(scratch.path().join("workspace"))?;
    for component in &recording.components {
        if let Some(file) = component_file(component, how, scratch.path())? {
            let name = component.name.clone();
            // Under the grant it was recorded with, whatever it says of
            // its own digest (the new version's is another), its
            // directories standing in empty here.
            let granted = standing_in(&component.granted, scratch.path())?;
            builder = builder.extensions(|e| e.load(file).grant(name, granted));
        }
    }
    for ext in &how.extensions {
        builder = builder.extensions(|e| e.load(ext));
    }
    let host = loaded(builder, "toolhost: replay").await?;
    let loaded: Vec<String> = host
        .tools()
        .into_iter()
        .map(|t| t.definition.name)
        .collect();
    let (mut replayed, mut diverged) = (0usize, Vec::new());
    if protocol {
        for message in &recording.messages {
            let calls = calls_of(message);
            replayed += calls.len();
            diverged.extend(missing(&recording, &calls, &loaded));
        }
        let output: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = match how.check {
            true => Box::new(tokio::io::sink()),
            false => Box::new(tokio::io::stdout()),
        };
        let (input, output, held) = toolhost::tape::replayed_stdio(&recording, output)
            .expect("a recording with input lines");
        let served = match command {
            "mcp" => toolhost::mcp::McpServer::new(host.clone())
                .serve(input, output)
                .await
                .map_err(anyhow::Error::from),
            _ => toolhost::serve::serve(host.clone(), tokio::io::BufReader::new(input), output)
                .await
                .map_err(anyhow::Error::from),
        };
        served.with_context(|| format!("{shown}: serving the recorded input again"))?;
        // What waited for an answer that never came is printed all the same.
        let rest = held.rest();
        if !how.check && !rest.is_empty() {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&rest)?;
            stdout.flush()?;
        }
        diverged.extend(host.tape_report());
    }
    for message in recording.messages.iter().filter(|_| !protocol) {
        let mut parsed = AssistantMessage::from_json(message.assistant.clone())
            .map_err(|e| anyhow::anyhow!("{shown}: a recorded message: {e}"))?;
        if let Some(id) = &how.only {
            parsed.tool_calls.retain(|c| &c.id == id);
            if parsed.tool_calls.is_empty() {
                continue;
            }
        }
        diverged.extend(missing(&recording, &parsed.tool_calls, &loaded));
        replayed += parsed.tool_calls.len();
        let one_call = (message.any_tool || how.only.is_some()) && parsed.tool_calls.len() == 1;
        let results = match (how.check || comparing, command) {
            (false, "call" | "call --json") if one_call => {
                let result = host.call(parsed.tool_calls[0].clone()).await;
                print_result(&result, command.ends_with("--json"))?;
                Vec::new()
            }
            (false, "run" | "run --json") => {
                run_message(&host, &parsed, command.ends_with("--json"), None).await?;
                Vec::new()
            }
            (quiet, _) => {
                let results = match one_call {
                    true => vec![host.call(parsed.tool_calls[0].clone()).await],
                    false => host.batch(&parsed).await.results,
                };
                if !quiet {
                    for result in &results {
                        println!("{}", serde_json::to_string(result)?);
                    }
                }
                results
            }
        };
        let said = host.tape_report();
        if comparing {
            compare(&recording, &parsed, &results, &said);
        }
        diverged.extend(said);
    }
    if !comparing {
        for said in &diverged {
            eprintln!("toolhost: replay: {shown}: {said}");
        }
    }
    if how.check && diverged.is_empty() {
        let calls = if replayed == 1 { "call" } else { "calls" };
        println!("{shown}: {replayed} {calls} replayed as recorded");
    }
    Ok(diverged.is_empty())
}

/// The calls `message` sent, as recorded (none when it does not parse).
fn calls_of(message: &toolhost::tape::RecordedMessage) -> Vec<toolhost::ToolCall> {
    AssistantMessage::from_json(message.assistant.clone())
        .map(|m| m.tool_calls)
        .unwrap_or_default()
}

/// Each of `calls` whose tool is not among `loaded`, said.
fn missing(recording: &Recording, calls: &[toolhost::ToolCall], loaded: &[String]) -> Vec<String> {
    calls
        .iter()
        .filter(|call| !loaded.contains(&call.name))
        .filter_map(|call| {
            let recorded = recording.calls.iter().find(|c| c.id == call.id)?;
            Some(format!(
                "call {}: its tool {} is not loaded here (the recording's component is {}, from \
                 {}): give it with --component NAME=FILE or --extension FILE",
                call.id, call.name, recorded.digest, recorded.source
            ))
        })
        .collect()
}

/// The file that serves the recorded extension `component`: the one given
/// with `--component` (copied under the extension's name, which its grant
/// is keyed by), else the recorded file when it is still there unchanged.
fn component_file(
    component: &RecordedComponent,
    how: &How,
    scratch: &std::path::Path,
) -> Result<Option<PathBuf>> {
    if let Some((_, file)) = how.components.iter().find(|(n, _)| n == &component.name) {
        let dir = scratch.join("components");
        std::fs::create_dir_all(&dir)?;
        let named = dir.join(format!("{}.wasm", component.name));
        std::fs::copy(file, &named)
            .with_context(|| format!("--component {}={}", component.name, file.display()))?;
        return Ok(Some(named));
    }
    Ok(component.unchanged_file())
}

/// `granted` as the replay grants it: no digest, and each directory it
/// names made empty under `scratch` (the files are the recording's; a grant
/// of a directory that does not exist would not link the component).
fn standing_in(
    granted: &toolhost::GrantSpec,
    scratch: &std::path::Path,
) -> Result<toolhost::GrantSpec> {
    let stand_in = |dirs: &[String]| -> Result<Vec<String>> {
        dirs.iter()
            .map(|dir| {
                if dir.starts_with('<') {
                    return Ok(dir.clone());
                }
                let rel = dir.trim_start_matches(['/', '~']);
                let here = match dir.starts_with(['/', '~']) {
                    true => scratch.join("elsewhere").join(rel),
                    false => scratch.join("workspace").join(rel),
                };
                std::fs::create_dir_all(&here)
                    .with_context(|| format!("making {} for the grant {dir}", here.display()))?;
                Ok(here.display().to_string())
            })
            .collect()
    };
    Ok(toolhost::GrantSpec {
        digest: None,
        fs_read: stand_in(&granted.fs_read)?,
        fs_write: stand_in(&granted.fs_write)?,
        ..granted.clone()
    })
}

/// Say, call by call, how a new version's questions and results differ
/// from the recorded ones.
fn compare(
    recording: &Recording,
    message: &AssistantMessage,
    results: &[ToolResultMessage],
    diverged: &[String],
) {
    for (call, result) in message.tool_calls.iter().zip(results) {
        let head = format!("call {} ({})", call.id, call.name);
        let prefix = format!("call {}: ", call.id);
        let first = diverged.iter().find_map(|d| d.strip_prefix(&prefix));
        let recorded = recording
            .calls
            .iter()
            .find(|c| c.id == call.id)
            .and_then(|c| c.end.as_ref());
        let now = result_text(&result.content);
        let was = recorded.map(|end| result_text(&end.result.content));
        match (first, was) {
            (None, Some(was)) if was == now => {
                println!("{}: the same questions, the same result", escape(&head));
            }
            (first, was) => {
                if let Some(first) = first.filter(|f| !f.starts_with("the result")) {
                    println!("{}: {}", escape(&head), escape(first));
                } else {
                    println!("{}: the same questions, another result:", escape(&head));
                }
                let was = was.unwrap_or_default();
                for line in was.lines().filter(|l| !now.lines().any(|n| n == *l)) {
                    println!("  - {}", escape(line));
                }
                for line in now.lines().filter(|l| !was.lines().any(|w| w == *l)) {
                    println!("  + {}", escape(line));
                }
            }
        }
    }
}

/// The text of a result's blocks, as a person reads them.
fn result_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.clone()),
            other => other.described(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

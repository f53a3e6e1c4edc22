//! `toolhost replay`: the calls of a recording run again by the same
//! components, answered from the recording, and printed as the recorded
//! command printed them.

use crate::commands::call::print_result;
use crate::commands::run::run_message;
use crate::*;
use toolhost::tape::Recording;

pub(crate) async fn replay(
    files: &[PathBuf],
    only: Option<&str>,
    check: bool,
    extensions: &[PathBuf],
) -> Result<ExitCode> {
    let mut failed = false;
    for file in files {
        failed |= !replay_one(file, only, check, extensions).await?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Replay one recording: `true` when every call replayed as recorded.
async fn replay_one(
    file: &std::path::Path,
    only: Option<&str>,
    check: bool,
    extensions: &[PathBuf],
) -> Result<bool> {
    let shown = escape_path(file);
    let recording = Arc::new(Recording::open(file).map_err(anyhow::Error::msg)?);
    if let Some(why) = &recording.stopped {
        eprintln!("toolhost: replay: {shown}: the recording is incomplete: {why}");
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
    let mut builder = Host::builder()
        .workspace(scratch.path())
        .user_config_dir(None)
        .state_dir(None)
        .pi_profile(pi)
        .all_tools_active()
        .replay(recording.clone());
    for ext in extensions {
        builder = builder.extensions(|e| e.load(ext));
    }
    let host = builder.build().await.context("loading the tools")?;
    let loaded: Vec<String> = host
        .tools()
        .into_iter()
        .map(|t| t.definition.name)
        .collect();
    let command = recording.header.command.as_str();
    let (mut replayed, mut diverged) = (0usize, Vec::new());
    for message in &recording.messages {
        let mut parsed = AssistantMessage::from_json(message.assistant.clone())
            .map_err(|e| anyhow::anyhow!("{shown}: a recorded message: {e}"))?;
        if let Some(id) = only {
            parsed.tool_calls.retain(|c| c.id == id);
            if parsed.tool_calls.is_empty() {
                continue;
            }
        }
        for call in &parsed.tool_calls {
            let recorded = recording.calls.iter().find(|c| c.id == call.id);
            if let Some(recorded) = recorded.filter(|_| !loaded.contains(&call.name)) {
                diverged.push(format!(
                    "call {}: its tool {} is not loaded here (the recording's component is {}, \
                     from {}): give it with --extension FILE",
                    call.id, call.name, recorded.digest, recorded.source
                ));
            }
        }
        replayed += parsed.tool_calls.len();
        let one_call = (message.any_tool || only.is_some()) && parsed.tool_calls.len() == 1;
        match (check, command) {
            (false, "call" | "call --json") if one_call => {
                let result = host.call(parsed.tool_calls[0].clone()).await;
                print_result(&result, command.ends_with("--json"))?;
            }
            (false, "run" | "run --json") => {
                run_message(&host, &parsed, command.ends_with("--json"), None).await?;
            }
            _ => {
                let results = match one_call {
                    true => vec![host.call(parsed.tool_calls[0].clone()).await],
                    false => host.batch(&parsed).await.results,
                };
                if !check {
                    for result in results {
                        println!("{}", serde_json::to_string(&result)?);
                    }
                }
            }
        }
        diverged.extend(host.tape_report());
    }
    for said in &diverged {
        eprintln!("toolhost: replay: {shown}: {said}");
    }
    if check && diverged.is_empty() {
        println!("{shown}: {replayed} calls replayed as recorded");
    }
    Ok(diverged.is_empty())
}

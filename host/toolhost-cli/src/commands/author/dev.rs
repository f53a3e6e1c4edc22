//! `toolhost ext dev`: the project's component loaded into a workspace
//! under its manifest's grant, called from stdin one line a call, and
//! rebuilt and loaded again whenever one of its sources changes, as a
//! dev extension is in Zed. Each call shows in the terminal view of
//! `toolhost run` (JSON lines when stdout is not a terminal).

use super::Project;
use super::build::Say;
use crate::*;
use std::path::Path;
use toolhost::watch::Watcher;

/// How often the sources are looked at.
const POLL: Duration = Duration::from_millis(300);

/// `toolhost ext dev` for the project in `dir`, calls made in `workspace`.
pub(crate) async fn ext_dev(dir: &Path, workspace: Option<&Path>) -> Result<ExitCode> {
    let project = Project::open(dir)?;
    let workspace = match workspace {
        Some(w) => w.to_path_buf(),
        None => std::env::current_dir().context("the current directory")?,
    };
    let mut host = load(&project, &workspace).await;
    let tools = host.as_ref().map(tool_names).unwrap_or_default();
    eprintln!(
        "toolhost: {} in {}: type a call a line, `TOOL {{JSON}}`{}; it is rebuilt when a \
         source changes; end with Ctrl-D",
        escape(&project.name),
        escape_path(&workspace),
        match tools.as_slice() {
            [one] => format!(" (or only the JSON, for {})", escape(one)),
            _ => String::new(),
        }
    );
    let mut lines = stdin_lines();
    let mut watcher = Watcher::new(sources(&project.dir), POLL);
    loop {
        tokio::select! {
            line = lines.recv() => {
                let Some(line) = line else { break };
                let Some(host) = &host else {
                    eprintln!("toolhost: nothing is loaded: fix the build first");
                    continue;
                };
                match message_of(line.trim(), &tool_names(host)) {
                    Ok(Some(message)) => {
                        commands::run::run_message(host, &message, false, None).await?;
                    }
                    Ok(None) => {}
                    Err(e) => eprintln!("toolhost: {}", escape(&e)),
                }
            }
            () = watcher.changed() => {
                eprintln!("toolhost: a source changed: rebuilding");
                host = load(&project, &workspace).await;
                // What the build itself wrote is not a change.
                watcher = Watcher::new(sources(&project.dir), POLL);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Build the project and load it into a host on `workspace`; `None`, the
/// failure reported, when either fails.
async fn load(project: &Project, workspace: &Path) -> Option<Host> {
    let built = async {
        let Some(component) = super::build::build_reported(project, Say::Err).await? else {
            bail!("not loaded: its grant does not cover its imports");
        };
        let host = loaded(project.host(&component, workspace), "toolhost").await?;
        eprintln!(
            "toolhost: loaded {}: {}",
            escape(&project.name),
            escape(&tool_names(&host).join(", "))
        );
        Ok(host)
    };
    match built.await {
        Ok(host) => Some(host),
        Err(e) => {
            eprintln!("toolhost: {}", escape(&format!("{e:#}")));
            None
        }
    }
}

/// The tools the project's extension defines (not the built-ins beside it).
fn tool_names(host: &Host) -> Vec<String> {
    host.tools()
        .into_iter()
        .filter(|t| !matches!(t.source, toolhost::ToolSource::Builtin))
        .map(|t| t.definition.name)
        .collect()
}

/// One line as a one-call assistant message: `TOOL JSON`, `TOOL`, or only
/// the JSON when `tools` has one; `None` for an empty line.
fn message_of(line: &str, tools: &[String]) -> Result<Option<AssistantMessage>, String> {
    if line.is_empty() {
        return Ok(None);
    }
    let (name, arguments) = if line.starts_with('{') {
        match tools {
            [one] => (one.clone(), line),
            _ => return Err(format!("name the tool first: one of {}", tools.join(", "))),
        }
    } else {
        let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        (name.to_string(), rest.trim())
    };
    let arguments: Value = match arguments {
        "" => Value::Object(Default::default()),
        text => {
            serde_json::from_str(text).map_err(|e| format!("the arguments are not JSON: {e}"))?
        }
    };
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = format!(
        "dev_{}",
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let raw = serde_json::json!({
        "role": "assistant",
        "content": [{"type": "toolCall", "id": id, "name": name, "arguments": arguments}],
    });
    AssistantMessage::from_json(raw)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// stdin's lines, read on a thread of their own.
fn stdin_lines() -> tokio::sync::mpsc::Receiver<String> {
    let (send, receive) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if send.blocking_send(line).is_err() {
                break;
            }
        }
    });
    receive
}

/// What a change of rebuilds the component: the sources, the WIT, the
/// manifest and the language's project file; never what a build writes.
fn sources(dir: &Path) -> Vec<PathBuf> {
    [
        "src",
        "wit",
        "extension.toml",
        "Cargo.toml",
        "package.json",
        "requirements.txt",
    ]
    .iter()
    .map(|p| dir.join(p))
    .collect()
}

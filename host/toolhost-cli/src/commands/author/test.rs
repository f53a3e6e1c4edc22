//! `toolhost ext test`: the project's cases (`tests/cases.toml`), each a
//! call in a fresh copy of `tests/workspace/` under the manifest's grant,
//! compared with the result it must give; then its recordings
//! (`tests/recordings/*.rec`) replayed against the new build, which must
//! ask the same questions and give the same results. `--rerecord` records the
//! cases' calls as `tests/recordings/cases.rec`.

use super::Project;
use super::build::Say;
use crate::*;
use serde::Deserialize;
use std::path::Path;

/// `tests/cases.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cases {
    #[serde(default)]
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    tool: String,
    #[serde(default = "empty_table")]
    arguments: toml::Value,
    /// The text of the result (its text blocks, one after another).
    expect: String,
    /// The call must fail, with `expect` as its text.
    #[serde(default)]
    error: bool,
}

fn empty_table() -> toml::Value {
    toml::Value::Table(Default::default())
}

/// Where `--rerecord` records the cases' calls.
const RECORDED: &str = "tests/recordings/cases.rec";

/// `toolhost ext test` in `dir`: exit 1 when a case or a replay failed.
pub(crate) async fn ext_test(dir: &Path, record: bool, build: bool) -> Result<ExitCode> {
    let project = Project::open(dir)?;
    let component = if build {
        match super::build::build_reported(&project, Say::Out).await? {
            Some(component) => component,
            None => return Ok(ExitCode::from(1)),
        }
    } else {
        project.built()?
    };
    let mut passed = cases(&project, &component, record).await?;
    if !record {
        passed &= replays(&project, &component).await?;
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Run every case; `true` when each gave its expected result. With
/// `record`, the calls are kept in [`RECORDED`] (replaced), unless a case
/// failed.
async fn cases(project: &Project, component: &Path, record: bool) -> Result<bool> {
    let file = project.dir.join("tests/cases.toml");
    let cases: Cases = match std::fs::read_to_string(&file) {
        Ok(text) => {
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", escape_path(&file)))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !record => Cases { case: Vec::new() },
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let recording = project.dir.join(RECORDED);
    let tape = if record {
        std::fs::create_dir_all(recording.parent().unwrap_or(&project.dir))?;
        match std::fs::remove_file(&recording) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
        Some(toolhost::tape::RecordTo::new(&recording, "call --json"))
    } else {
        None
    };
    let seed = project.dir.join("tests/workspace");
    let (mut passed, mut failed) = (0usize, 0usize);
    for (i, case) in cases.case.iter().enumerate() {
        let workspace = tempfile::Builder::new()
            .prefix("toolhost-test-")
            .tempdir()?;
        if seed.is_dir() {
            copy_tree(&seed, workspace.path())?;
        }
        let mut builder = project.host(component, workspace.path()).state_dir(None);
        if let Some(tape) = &tape {
            builder = builder.record(tape.clone());
        }
        let host = loaded(builder, "toolhost").await?;
        let arguments = serde_json::to_value(&case.arguments)?;
        let result = host
            .call(ToolCall {
                id: format!("case-{}", i + 1),
                name: case.tool.clone(),
                arguments,
            })
            .await;
        let got = text_of(&result);
        if got.trim_end() == case.expect.trim_end() && result.is_error == case.error {
            passed += 1;
            println!("ok    {}", escape(&case.name));
        } else {
            failed += 1;
            println!("FAIL  {}", escape(&case.name));
            let kind = |error: bool| if error { "an error" } else { "a result" };
            println!("  expected {}:", kind(case.error));
            println!("{}", escape_lines(&indent(&case.expect)));
            println!("  got {}:", kind(result.is_error));
            println!("{}", escape_lines(&indent(&got)));
        }
    }
    println!(
        "{passed} cases passed, {failed} failed ({})",
        escape_path(&file)
    );
    if let Some(_tape) = tape {
        if failed > 0 {
            let _ = std::fs::remove_file(&recording);
            println!("nothing recorded: a recording keeps what passes");
        } else {
            println!("recorded {} calls in {}", cases.case.len(), RECORDED);
        }
    }
    Ok(failed == 0)
}

/// Replay each recording of `tests/recordings/` with the project's
/// extension served by `component`; `true` when every call asked the same
/// questions and gave the same result.
async fn replays(project: &Project, component: &Path) -> Result<bool> {
    let dir = project.dir.join("tests/recordings");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rec"))
            .collect(),
        Err(_) => return Ok(true),
    };
    files.sort();
    let how = crate::commands::replay::How {
        only: None,
        check: false,
        components: vec![(project.name.clone(), component.to_path_buf())],
        extensions: Vec::new(),
    };
    let mut passed = true;
    for file in &files {
        println!(
            "replaying {}",
            escape_path(file.strip_prefix(&project.dir).unwrap_or(file))
        );
        passed &= crate::commands::replay::replay_one(file, &how).await?;
    }
    Ok(passed)
}

/// A result's text blocks, one after another.
fn text_of(result: &ToolResultMessage) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Copy the tree at `from` into `to` (files and folders; symlinks as links).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else {
            std::fs::copy(&source, &target)
                .with_context(|| format!("copying {}", source.display()))?;
        }
    }
    Ok(())
}

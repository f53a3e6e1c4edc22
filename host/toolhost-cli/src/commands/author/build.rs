//! `toolhost ext build`: the project's language builds its component, then
//! the component is inspected and what it asks for set against what
//! `extension.toml` grants.

use super::toolchain::{self, Language, Tools};
use super::{Project, run_shown};
use crate::*;
use std::process::Command;

/// `toolhost ext build` in `dir`: exit 1 when the component asks for more
/// than its manifest grants (it would be refused at load).
pub(crate) async fn ext_build(dir: &std::path::Path) -> Result<ExitCode> {
    let project = Project::open(dir)?;
    Ok(match build_reported(&project, Say::Out).await? {
        Some(_) => ExitCode::SUCCESS,
        None => ExitCode::from(1),
    })
}

/// [`build`], then [`report`]: the component, or `None` when it asks for
/// more than its manifest grants (said, with the lines that grant it).
pub(crate) async fn build_reported(project: &Project, say: Say) -> Result<Option<PathBuf>> {
    let component = build(project, say)?;
    Ok(report(project, &component, say).await?.then_some(component))
}

/// Where the build's report goes: stdout, or stderr when stdout carries
/// something else (`ext dev`'s calls).
#[derive(Clone, Copy)]
pub(crate) enum Say {
    Out,
    Err,
}

impl Say {
    fn line(self, text: &str) {
        match self {
            Say::Out => println!("{text}"),
            Say::Err => eprintln!("{text}"),
        }
    }
}

/// Build `project`'s component where its manifest names it; its path.
pub(crate) fn build(project: &Project, say: Say) -> Result<PathBuf> {
    let tools = toolchain::check(project.language, Some(&project.dir))
        .map_err(|missing| anyhow::anyhow!(toolchain::incomplete(project.language, &missing)))?;
    let out = project.component();
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("making {}", parent.display()))?;
    }
    let started = std::time::Instant::now();
    eprintln!(
        "toolhost: building {} ({})",
        escape(&project.name),
        project.language.title()
    );
    match project.language {
        Language::Rust => rust(project, &tools, &out)?,
        Language::Js => js(project, &tools, &out)?,
        Language::Python => python(project, &tools, &out)?,
        Language::C => c(project, &tools, &out)?,
    }
    let size = std::fs::metadata(&out)
        .with_context(|| format!("the build made no {}", out.display()))?
        .len();
    say.line(&format!(
        "built {} ({:.1} MB in {:.1} s)",
        escape_path(out.strip_prefix(&project.dir).unwrap_or(&out)),
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    ));
    Ok(out)
}

/// cargo, for wasm32-wasip2 (a cdylib built for it is already a
/// component), the library it reports copied to `out`.
fn rust(project: &Project, tools: &Tools, out: &std::path::Path) -> Result<()> {
    let output = Command::new(tools.get("cargo"))
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(&project.dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running cargo")?;
    if !output.status.success() {
        bail!(
            "cargo build failed ({}); its errors are above",
            output.status
        );
    }
    // The last cdylib cargo reports building is the component.
    let built = String::from_utf8_lossy(&output.stdout)
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "cdylib"))
        })
        .filter_map(|m| {
            m["filenames"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .find(|f| f.ends_with(".wasm"))
                .map(PathBuf::from)
        })
        .next();
    let Some(built) = built else {
        bail!("cargo built no .wasm library: Cargo.toml's [lib] needs crate-type = [\"cdylib\"]");
    };
    std::fs::copy(&built, out)
        .with_context(|| format!("copying {} to {}", built.display(), out.display()))?;
    Ok(())
}

fn js(project: &Project, tools: &Tools, out: &std::path::Path) -> Result<()> {
    run_shown(
        Command::new(tools.get("componentize-qjs"))
            .args([
                "--sync",
                "--wit",
                "wit",
                "--world",
                "extension",
                "--js",
                "src/index.js",
                "--output",
            ])
            .arg(out)
            .current_dir(&project.dir),
        "componentize-qjs",
    )
}

fn python(project: &Project, tools: &Tools, out: &std::path::Path) -> Result<()> {
    // VIRTUAL_ENV names the environment whose packages are bundled; the
    // machine's own never are.
    run_shown(
        Command::new(tools.get("componentize-py"))
            .args([
                "--quiet",
                "-d",
                "wit",
                "-w",
                "extension",
                "componentize",
                "-p",
                "src",
                "app",
                "-o",
            ])
            .arg(out)
            .env("VIRTUAL_ENV", venv_of(tools.get("componentize-py")))
            .current_dir(&project.dir),
        "componentize-py",
    )
}

/// The environment a program in its `bin/` belongs to.
fn venv_of(program: &std::path::Path) -> &std::path::Path {
    program
        .parent()
        .and_then(|bin| bin.parent())
        .unwrap_or(program)
}

fn c(project: &Project, tools: &Tools, out: &std::path::Path) -> Result<()> {
    let build = project.dir.join("build");
    run_shown(
        Command::new(tools.get("wit-bindgen"))
            .args(["c", "wit", "--world", "extension", "--out-dir"])
            .arg(&build)
            .current_dir(&project.dir),
        "wit-bindgen c",
    )?;
    let mut sources: Vec<PathBuf> = std::fs::read_dir(project.dir.join("src"))
        .context("reading src/")?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    run_shown(
        Command::new(tools.get("clang"))
            .args([
                "--target=wasm32-wasi",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Ibuild",
                "-mexec-model=reactor",
            ])
            .arg(format!(
                "-fuse-ld={}",
                tools.get("wasm-component-ld").display()
            ))
            .arg("-Wl,--wasi-adapter=reactor")
            .arg("-o")
            .arg(out)
            .args(&sources)
            .args(["build/extension.c", "build/extension_component_type.o"])
            .current_dir(&project.dir),
        "clang",
    )
}

/// Print what the component offers and asks for, against what the
/// manifest grants; `false` when it asks for more (it would be refused).
async fn report(project: &Project, component: &std::path::Path, say: Say) -> Result<bool> {
    let runtime = toolhost::Runtime::shared()?;
    let inspection = toolhost::inspect(&runtime, component).await?;
    for line in super::super::ext::component_lines(&inspection) {
        say.line(&line);
    }
    let grant = project.grant();
    let granted = serde_json::to_value(&grant)?;
    say.line(&format!(
        "  granted by extension.toml: {}",
        super::super::ext::summary(&granted)
    ));
    for problem in &inspection.problems {
        say.line(&format!("  problem: {}", escape(problem)));
    }
    let ungranted = toolhost::extensions::install::ungranted_capabilities(&inspection, &grant);
    if ungranted.is_empty() {
        return Ok(inspection.problems.is_empty());
    }
    eprintln!(
        "toolhost: {} imports what extension.toml does not grant, so it would be refused at \
         load; add to [capabilities] in {}:",
        escape(&project.name),
        escape_path(
            &project
                .dir
                .join(toolhost::extensions::discovery::MANIFEST_FILE)
        )
    );
    for capability in ungranted {
        eprintln!(
            "  {}",
            toolhost::extensions::policy::capability_line(&capability)
        );
    }
    eprintln!("or remove the import from wit/world.wit if the tool does not need it");
    Ok(false)
}

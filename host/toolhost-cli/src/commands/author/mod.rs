//! The extension author's loop: `ext new` makes a project from a template,
//! `ext build` builds it with its language's own tools and checks what the
//! component asks for against what its manifest grants, `ext test` runs its
//! cases and replays its recordings, `ext dev` rebuilds it on every change
//! and calls it; `ext toolchain` finds or installs what builds each
//! language. `ext add` in a project installs what it built.

pub(crate) mod build;
pub(crate) mod dev;
pub(crate) mod templates;
pub(crate) mod test;
pub(crate) mod toolchain;

use crate::*;
use std::path::Path;
use toolchain::Language;
use toolhost::extensions::discovery::{MANIFEST_FILE, Manifest};

/// An extension's project: a folder with an `extension.toml` that names its
/// language.
pub(crate) struct Project {
    /// Its folder, absolute.
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// The name it is granted and installed under.
    pub name: String,
    pub language: Language,
}

impl Project {
    /// The project in `dir`, or an error saying how to make one.
    pub(crate) fn open(dir: &Path) -> Result<Project> {
        let dir = std::fs::canonicalize(dir)
            .with_context(|| format!("the project folder {}", dir.display()))?;
        let file = dir.join(MANIFEST_FILE);
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{} has no {MANIFEST_FILE}, so it is not an extension's project: make one with \
                 `toolhost ext new NAME --lang rust|js|python|c`, or run this in one",
                escape_path(&dir)
            ),
            Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
        };
        let manifest: Manifest =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", escape_path(&file)))?;
        let name = match &manifest.name {
            Some(name) => name.clone(),
            None => dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let Some(language) = &manifest.language else {
            bail!(
                "{}: no `language`, so toolhost cannot build it: add `language = \"rust\"` (or \
                 js, python, c) beside `component`",
                escape_path(&file)
            );
        };
        let language = language
            .parse()
            .map_err(|e: String| anyhow::anyhow!("{}: language: {e}", escape_path(&file)))?;
        Ok(Project {
            dir,
            manifest,
            name,
            language,
        })
    }

    /// The component file the build makes and `ext add` installs.
    pub(crate) fn component(&self) -> PathBuf {
        self.dir.join(&self.manifest.component)
    }

    /// What the manifest asks to be granted.
    pub(crate) fn grant(&self) -> toolhost::GrantSpec {
        self.manifest.capabilities.clone()
    }

    /// A host on `workspace` (none of the user's configuration, every tool
    /// active) with `component` as this project's extension, under its
    /// manifest's grant.
    pub(crate) fn host(&self, component: &Path, workspace: &Path) -> HostBuilder {
        let (name, grant) = (self.name.clone(), self.grant());
        Host::builder()
            .workspace(workspace)
            .user_config_dir(None)
            .all_tools_active()
            .extensions(|e| e.load(component).grant(name, grant))
    }

    /// The built component, or an error saying to build it.
    pub(crate) fn built(&self) -> Result<PathBuf> {
        let component = self.component();
        if !component.is_file() {
            bail!(
                "{} is not built yet: run `toolhost ext build` in {}",
                escape_path(&component),
                escape_path(&self.dir)
            );
        }
        Ok(component)
    }
}

/// `toolhost ext new NAME --lang LANG [--dir DIR]`.
pub(crate) fn new(name: &str, language: Language, dir: Option<&Path>) -> Result<ExitCode> {
    templates::check_name(name).map_err(anyhow::Error::msg)?;
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_path_buf);
    if std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some()) {
        bail!(
            "{} exists and is not empty: choose another name, or another folder with --dir",
            escape_path(&dir)
        );
    }
    for (path, text) in templates::render(name, language) {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("making {}", parent.display()))?;
        }
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    }
    println!(
        "made {}: a {} extension with the tool {}, granted the workspace to read",
        escape_path(&dir),
        language.title(),
        templates::tool_name(name)
    );
    if let Err(missing) = toolchain::check(language, Some(&dir)) {
        eprintln!(
            "toolhost: {}",
            escape(&toolchain::incomplete(language, &missing))
        );
    }
    println!(
        "next:\n  cd {}\n  toolhost ext build\n  toolhost ext test\n  toolhost ext add",
        escape_path(&dir)
    );
    Ok(ExitCode::SUCCESS)
}

/// Run `command` (`what` names it in errors) with its output on stderr, so
/// stdout keeps only toolhost's own report.
pub(crate) fn run_shown(command: &mut std::process::Command, what: &str) -> Result<()> {
    let status = command
        .stdin(std::process::Stdio::null())
        .stdout(std::io::stderr())
        .status()
        .with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

//! What builds an extension in each language, found on this machine or
//! named with the step that installs it: `toolhost ext toolchain`.
//!
//! The JavaScript, Python and C toolchains toolhost installs itself, pinned,
//! into one directory ([`dir`]) that every project shares, so a project
//! builds offline once they are there: `scripts/setup` installs them. What a
//! system package manager provides (Node.js, Python, clang and wasi-libc) and
//! Rust's own target are named with their install command, never run.

use crate::*;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// componentize-qjs (npm): JavaScript on QuickJS, made a component.
pub(crate) const COMPONENTIZE_QJS: &str = "0.4.5";
/// componentize-py (PyPI): Python on CPython, made a component.
pub(crate) const COMPONENTIZE_PY: &str = "0.25.1";
/// wit-bindgen's CLI (crates): C bindings of the WIT.
pub(crate) const WIT_BINDGEN: &str = "0.63.0";

/// The languages `ext new` has a template for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Language {
    Rust,
    Js,
    Python,
    C,
}

impl Language {
    pub(crate) const ALL: [Language; 4] =
        [Language::Rust, Language::Js, Language::Python, Language::C];

    /// Its name in `--lang` and `extension.toml`'s `language`.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Js => "js",
            Language::Python => "python",
            Language::C => "c",
        }
    }

    /// Its name in prose.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::Js => "JavaScript",
            Language::Python => "Python",
            Language::C => "C",
        }
    }
}

impl std::str::FromStr for Language {
    type Err = String;
    fn from_str(s: &str) -> Result<Language, String> {
        match s.to_ascii_lowercase().as_str() {
            "rust" | "rs" => Ok(Language::Rust),
            "js" | "javascript" => Ok(Language::Js),
            "python" | "py" => Ok(Language::Python),
            "c" => Ok(Language::C),
            _ => Err(format!(
                "{s:?} is not a language toolhost builds: rust, js, python or c"
            )),
        }
    }
}

/// Where toolhost keeps the toolchains it installs: `$TOOLHOST_TOOLCHAINS`,
/// else `$XDG_DATA_HOME/toolhost/toolchains`, else
/// `~/.local/share/toolhost/toolchains`.
pub(crate) fn dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLHOST_TOOLCHAINS").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    match toolhost::extensions::policy::default_data_dir() {
        Some(data) => Ok(data.join("toolchains")),
        None => bail!(
            "neither TOOLHOST_TOOLCHAINS, XDG_DATA_HOME nor HOME is set: nowhere to keep toolchains"
        ),
    }
}

/// The programs a project of one language is built with.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tools {
    /// By role: `cargo`, `componentize-qjs`, `componentize-py` (in the
    /// Python environment whose packages are bundled), `clang`,
    /// `wit-bindgen`, `wasm-component-ld`.
    found: BTreeMap<&'static str, PathBuf>,
}

impl Tools {
    /// The program for `role`, found by [`check`].
    pub(crate) fn get(&self, role: &str) -> &Path {
        &self.found[role]
    }
}

/// Something missing, and what installs it.
#[derive(Clone, Debug)]
pub(crate) struct Missing {
    pub what: String,
    pub install: Install,
}

/// How a missing piece is installed.
#[derive(Clone, Debug)]
pub(crate) enum Install {
    /// Commands `toolhost ext toolchain LANGUAGE --install` runs, in order.
    Toolhost {
        language: Language,
        commands: Vec<Vec<String>>,
    },
    /// What the person installs themselves (a system package, rustup).
    Person(String),
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.install {
            Install::Toolhost { language, commands } => {
                let shown: Vec<String> = commands.iter().map(|c| c.join(" ")).collect();
                write!(
                    f,
                    "{} is missing: run `toolhost ext toolchain {} --install` (it runs {})",
                    self.what,
                    language.key(),
                    shown.join(" && ")
                )
            }
            Install::Person(how) => write!(f, "{} is missing: {how}", self.what),
        }
    }
}

/// What builds `language` here, or each piece missing with its install
/// step. A project's own copies come first (`node_modules/`, `.venv/`),
/// then toolhost's toolchains directory, then `PATH`.
pub(crate) fn check(language: Language, project: Option<&Path>) -> Result<Tools, Vec<Missing>> {
    let home = dir().map_err(|e| vec![person("the toolchains directory", &e.to_string())])?;
    let mut tools = Tools::default();
    let mut missing = Vec::new();
    let mut need = |role: &'static str, found: Option<PathBuf>, what: Missing| match found {
        Some(path) => {
            tools.found.insert(role, path);
        }
        None => missing.push(what),
    };
    let by_toolhost = |what: String, commands: Vec<Vec<String>>| Missing {
        what,
        install: Install::Toolhost { language, commands },
    };
    match language {
        Language::Rust => {
            need(
                "cargo",
                on_path("cargo"),
                person("cargo (Rust)", "install Rust with rustup"),
            );
            need("wasm32-wasip2", rust_target(), rustup_target());
        }
        Language::Js => {
            need(
                "node",
                on_path("node"),
                person(
                    "Node.js",
                    "install Node.js 18 or later (Debian: apt install nodejs npm)",
                ),
            );
            let local = project.map(|p| p.join("node_modules"));
            let found = local
                .into_iter()
                .chain([home.join("js/node_modules")])
                .find(|modules| {
                    npm_version(modules, "componentize-qjs").as_deref() == Some(COMPONENTIZE_QJS)
                })
                .map(|modules| modules.join(".bin/componentize-qjs"));
            let js = home.join("js");
            need(
                "componentize-qjs",
                found,
                by_toolhost(
                    format!("componentize-qjs {COMPONENTIZE_QJS}"),
                    vec![argv(
                        &["npm", "install", "--prefix"],
                        &js,
                        &[
                            "--no-audit",
                            "--no-fund",
                            "--no-save",
                            &format!("componentize-qjs@{COMPONENTIZE_QJS}"),
                        ],
                    )],
                ),
            );
        }
        Language::Python => {
            need(
                "python3",
                on_path("python3"),
                person(
                    "Python 3.10 or later",
                    "Debian: apt install python3 python3-venv",
                ),
            );
            // The project's own environment first (its packages are bundled).
            let found = project
                .map(|p| p.join(".venv"))
                .into_iter()
                .chain([home.join("python")])
                .map(|venv| venv.join("bin/componentize-py"))
                .find(|bin| {
                    version_line(bin, "--version")
                        .is_some_and(|v| v == format!("componentize-py {COMPONENTIZE_PY}"))
                });
            let ours = home.join("python");
            need(
                "componentize-py",
                found,
                by_toolhost(
                    format!("componentize-py {COMPONENTIZE_PY}"),
                    vec![
                        argv(&["python3", "-m", "venv"], &ours, &[]),
                        argv(
                            &[],
                            &ours.join("bin/pip"),
                            &[
                                "install",
                                "--quiet",
                                "--disable-pip-version-check",
                                &format!("componentize-py=={COMPONENTIZE_PY}"),
                            ],
                        ),
                    ],
                ),
            );
        }
        Language::C => {
            let clang = on_path("clang").filter(|clang| wasi_sysroot(clang));
            need(
                "clang",
                clang,
                person(
                    "clang for wasm32 with wasi-libc",
                    "Debian: apt install clang lld wasi-libc libclang-rt-dev-wasm32",
                ),
            );
            need("wasm-component-ld", component_linker(), rustup_target());
            let ours = home.join("c/bin/wit-bindgen");
            let found = [Some(ours), on_path("wit-bindgen")]
                .into_iter()
                .flatten()
                .find(|bin| {
                    version_line(bin, "--version")
                        .is_some_and(|v| v == format!("wit-bindgen-cli {WIT_BINDGEN}"))
                });
            need(
                "wit-bindgen",
                found,
                by_toolhost(
                    format!("wit-bindgen {WIT_BINDGEN}"),
                    vec![argv(
                        &[
                            "cargo",
                            "install",
                            "--quiet",
                            "--locked",
                            "wit-bindgen-cli",
                            "--version",
                            WIT_BINDGEN,
                            "--root",
                        ],
                        &home.join("c"),
                        &[],
                    )],
                ),
            );
        }
    }
    if missing.is_empty() {
        Ok(tools)
    } else {
        Err(missing)
    }
}

fn person(what: &str, how: &str) -> Missing {
    Missing {
        what: what.into(),
        install: Install::Person(how.into()),
    }
}

fn rustup_target() -> Missing {
    person(
        "Rust's wasm32-wasip2 target",
        "run `rustup target add wasm32-wasip2`",
    )
}

/// `before… path after…` as one command's arguments.
fn argv(before: &[&str], path: &Path, after: &[&str]) -> Vec<String> {
    before
        .iter()
        .map(|s| s.to_string())
        .chain([path.display().to_string()])
        .chain(after.iter().map(|s| s.to_string()))
        .collect()
}

/// `program` found in `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            p.is_file()
                && p.metadata()
                    .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
        })
}

/// The first line `program arg` prints, when it runs.
fn version_line(program: &Path, arg: &str) -> Option<String> {
    let out = Command::new(program)
        .arg(arg)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    out.status
        .success()
        .then(|| text.lines().next().unwrap_or("").trim().to_string())
}

/// The version of the npm package `name` installed in `modules`.
fn npm_version(modules: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(modules.join(name).join("package.json")).ok()?;
    let json: Value = serde_json::from_str(&text).ok()?;
    json["version"]
        .as_str()
        .map(str::to_string)
        .filter(|_| modules.join(".bin").join(name).exists())
}

/// rustc's sysroot.
fn sysroot() -> Option<PathBuf> {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The installed wasm32-wasip2 standard library, when there is one.
fn rust_target() -> Option<PathBuf> {
    Some(sysroot()?.join("lib/rustlib/wasm32-wasip2")).filter(|p| p.is_dir())
}

/// The linker rustup ships for wasm32-wasip2, which makes a core module a
/// component (the C build links with it).
fn component_linker() -> Option<PathBuf> {
    let out = Command::new("rustc").arg("-vV").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let host = text.lines().find_map(|l| l.strip_prefix("host: "))?.trim();
    let rustlib = sysroot()?.join("lib/rustlib");
    // It ships with the target: without it, it is not there to use.
    let linker = rustlib.join(host).join("bin/wasm-component-ld");
    (rustlib.join("wasm32-wasip2").is_dir() && linker.is_file()).then_some(linker)
}

/// Whether `clang` finds wasi-libc and its wasm32 builtins.
fn wasi_sysroot(clang: &Path) -> bool {
    let found = |arg: &str| {
        Command::new(clang)
            .args(["--target=wasm32-wasi", arg])
            .output()
            .ok()
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .is_some_and(|p| p.is_absolute() && p.is_file())
    };
    found("-print-file-name=libc.a") && found("-print-libgcc-file-name")
}

/// `toolhost ext toolchain [LANG…] [--install]`: what each language's
/// toolchain has and lacks; with `install`, install what toolhost can.
pub(crate) fn toolchain(languages: &[Language], install: bool) -> Result<ExitCode> {
    let languages = if languages.is_empty() {
        &Language::ALL[..]
    } else {
        languages
    };
    let home = dir()?;
    let mut incomplete = false;
    for &language in languages {
        let mut state = check(language, None);
        if install && let Err(missing) = &state {
            for m in missing {
                if let Install::Toolhost { commands, .. } = &m.install {
                    eprintln!(
                        "toolhost: installing {} into {}",
                        m.what,
                        escape_path(&home)
                    );
                    std::fs::create_dir_all(&home)
                        .with_context(|| format!("making {}", home.display()))?;
                    for command in commands {
                        run_step(command)?;
                    }
                }
            }
            state = check(language, None);
        }
        match state {
            Ok(_) => println!("{}: ready", language.title()),
            Err(missing) => {
                incomplete = true;
                println!("{}: incomplete", language.title());
                for m in missing {
                    println!("  {m}");
                }
            }
        }
    }
    Ok(if incomplete {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Run one install command, its output shown; an error names it.
fn run_step(command: &[String]) -> Result<()> {
    let status = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {}", command[0]))?;
    if !status.success() {
        bail!("`{}` failed ({status})", command.join(" "));
    }
    Ok(())
}

/// The message that a language's toolchain is incomplete, each missing
/// piece on its line with its install step.
pub(crate) fn incomplete(language: Language, missing: &[Missing]) -> String {
    let mut text = format!("the {} toolchain is incomplete:", language.title());
    for m in missing {
        text.push_str(&format!("\n  {m}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples of guest-tools/examples/ build with the same pins as
    /// the projects `ext new` makes.
    #[test]
    fn the_examples_pin_the_same_toolchains() {
        let js = include_str!("../../../../../guest-tools/examples/jsonquery/package.json");
        assert!(js.contains(&format!("\"componentize-qjs\": \"{COMPONENTIZE_QJS}\"")));
        let py = include_str!("../../../../../guest-tools/examples/csvstats/requirements.txt");
        assert!(py.contains(&format!("componentize-py=={COMPONENTIZE_PY}")));
        let c = include_str!("../../../../../guest-tools/examples/build.sh");
        assert!(c.contains(&format!("wit-bindgen-cli {WIT_BINDGEN}")));
    }

    #[test]
    fn languages_are_named_as_authors_name_them() {
        for (name, language) in [
            ("rust", Language::Rust),
            ("JavaScript", Language::Js),
            ("py", Language::Python),
            ("c", Language::C),
        ] {
            assert_eq!(name.parse::<Language>(), Ok(language));
        }
        for language in Language::ALL {
            assert_eq!(language.key().parse::<Language>(), Ok(language));
        }
        assert!("cobol".parse::<Language>().is_err());
    }
}

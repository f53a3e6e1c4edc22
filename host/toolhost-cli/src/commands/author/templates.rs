//! The project templates of `toolhost ext new`, kept in the repository at
//! `host/toolhost-cli/templates/` and compiled into the binary: files every
//! language shares (`common/`), then the language's own.

use super::toolchain::Language;

/// A template file: its path in the project, and its text with
/// `{{placeholders}}`.
type File = (&'static str, &'static str);

macro_rules! files {
    ($dir:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../../templates/", $dir, "/", $path)))),*]
    };
}

const COMMON: &[File] = files!("common":
    "extension.toml",
    "README.md",
    "wit/world.wit",
    "tests/cases.toml",
    "tests/workspace/notes.txt",
);

const RUST: &[File] = files!("rust": "Cargo.toml", ".gitignore", "src/lib.rs");
const JS: &[File] = files!("js": "package.json", ".gitignore", "src/index.js");
const PYTHON: &[File] = files!("python": ".gitignore", "src/app.py");
const C: &[File] = files!("c": ".gitignore", "src/tool.c");

/// toolhost's WIT contract, which every project carries in `wit/deps/`.
const CONTRACT: File = (
    "wit/deps/toolhost/tool.wit",
    include_str!("../../../../../wit/tool.wit"),
);

/// The version of the contract the templates target.
pub(crate) const WIT_VERSION: &str = "0.4.0";

/// What differs per language in the shared files.
struct Facts {
    /// The source file the author edits.
    source: &'static str,
    /// What `ext build` runs, in a few words.
    build: &'static str,
    /// README rows for the language's own files.
    files: &'static str,
}

fn facts(language: Language) -> Facts {
    match language {
        Language::Rust => Facts {
            source: "src/lib.rs",
            build: "cargo build --release --target wasm32-wasip2",
            files: "| `Cargo.toml` | the crate: a `cdylib`, with `wit-bindgen` and `serde_json` |\n",
        },
        Language::Js => Facts {
            source: "src/index.js",
            build: "componentize-qjs (QuickJS)",
            files: "| `package.json` | the package (add npm dependencies; componentize-qjs bundles `src/index.js` with what it imports) |\n",
        },
        Language::Python => Facts {
            source: "src/app.py",
            build: "componentize-py (CPython)",
            files: "| `.venv/` (yours, optional) | a virtual environment whose packages are bundled, when there is one |\n",
        },
        Language::C => Facts {
            source: "src/tool.c",
            build: "wit-bindgen c, then clang with wasi-libc",
            files: "| `build/` | the bindings `wit-bindgen c` generates (`extension.h`), made by `ext build` |\n",
        },
    }
}

/// The files of a new project `name` in `language`, placeholders filled.
pub(crate) fn render(name: &str, language: Language) -> Vec<(&'static str, String)> {
    let own = match language {
        Language::Rust => RUST,
        Language::Js => JS,
        Language::Python => PYTHON,
        Language::C => C,
    };
    let facts = facts(language);
    let tool = tool_name(name);
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{tool}}", &tool)
            .replace("{{language}}", language.key())
            .replace("{{language_name}}", language.title())
            .replace("{{wit_version}}", WIT_VERSION)
            .replace("{{source}}", facts.source)
            .replace("{{build}}", facts.build)
            .replace("{{files}}", facts.files)
    };
    let mut files: Vec<(&'static str, String)> = COMMON
        .iter()
        .chain(own)
        .map(|(path, text)| (*path, fill(text)))
        .collect();
    // The contract as it is, never filled.
    files.push((CONTRACT.0, CONTRACT.1.to_string()));
    files
}

/// The name of a project's tool: its own, `-` made `_` (the model sees
/// tool names; `_` is what Pi's tools use).
pub(crate) fn tool_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Whether `name` can name a project: lowercase words of letters and
/// digits, each beginning with a letter, joined by `-` (valid at once as a
/// WIT package, a crate, an npm package and a file name), at most 64.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let word_ok = |w: &str| {
        w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    };
    if name.len() > 64 || !name.split('-').all(word_ok) {
        return Err(format!(
            "{name:?} cannot name an extension: use lowercase words of letters and digits, each \
             beginning with a letter, joined by '-' (such as line-count), at most 64 characters"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled_in_every_language() {
        for language in Language::ALL {
            for (path, text) in render("line-count", language) {
                if path == CONTRACT.0 {
                    continue;
                }
                assert!(
                    !text.contains("{{"),
                    "{path} ({language:?}) keeps a placeholder:\n{text}"
                );
            }
        }
    }

    #[test]
    fn the_templates_target_the_contract_they_carry() {
        assert!(
            CONTRACT
                .1
                .starts_with(&format!("package toolhost:tool@{WIT_VERSION};"))
        );
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("line-count").is_ok());
        assert!(check_name("a2").is_ok());
        for bad in [
            "",
            "Line",
            "2x",
            "a--b",
            "a-",
            "a_b",
            "a.b",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(tool_name("line-count"), "line_count");
    }
}

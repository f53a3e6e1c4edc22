//! The shell examples of the README and the book (`docs/`) that are marked
//! `<!-- runs as a test: tests/it/book.rs -->` run as written: each block
//! with bash (`-euo pipefail`) in a folder of its own (or, marked `runs as
//! a test in the repository`, at the repository's root, as its reader
//! would run it there), this build's `toolhost` first on `PATH`, a
//! configuration home of its own, offline. A new user following the
//! README's tour reaches what it says they reach.

use crate::support::*;
use std::path::PathBuf;

const MARK: &str = "<!-- runs as a test: tests/it/book.rs -->";
const MARK_IN_REPOSITORY: &str = "<!-- runs as a test in the repository: tests/it/book.rs -->";

/// An example to run: its page, its text, and whether it runs at the
/// repository's root.
struct Example {
    page: PathBuf,
    block: String,
    in_repository: bool,
}

/// Every marked block.
fn marked_blocks() -> Vec<Example> {
    let root = repo_root();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut blocks = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let marks = text
            .match_indices(MARK)
            .map(|(at, m)| (at + m.len(), false));
        let in_repository = text
            .match_indices(MARK_IN_REPOSITORY)
            .map(|(at, m)| (at + m.len(), true));
        for (after, in_repository) in marks.chain(in_repository) {
            let block = text[after..].strip_prefix("\n```sh\n").unwrap_or_else(|| {
                panic!(
                    "{}: the mark is not right above a ```sh block",
                    page.display()
                )
            });
            let end = block.find("\n```").expect("the block ends");
            blocks.push(Example {
                page: page.clone(),
                block: block[..end + 1].to_string(),
                in_repository,
            });
        }
    }
    blocks
}

/// Run the example as written; its stdout.
#[track_caller]
fn run_block(example: &Example) -> String {
    let Example {
        page,
        block,
        in_repository,
    } = example;
    let home = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let bin = toolhost_bin();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let out = std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", block])
        .current_dir(if *in_repository {
            repo_root()
        } else {
            folder.path().to_path_buf()
        })
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("CARGO_NET_OFFLINE", "true")
        .env("CARGO_TARGET_DIR", toolhost_tests::EXT_PROJECTS_TARGET)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}: the example failed ({}):\n{block}\nstdout:\n{stdout}\nstderr:\n{}",
        page.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_readme_tour_runs_as_written_to_a_call_of_your_own_extension() {
    let blocks = marked_blocks();
    let tour = blocks
        .iter()
        .find(|e| e.page.ends_with("README.md"))
        .expect("the README's tour is marked");
    let out = run_block(tour);
    // What the README says each step shows.
    assert_has(&out, "one\ntwo\nthree\n");
    assert_has(&out, "refused: outside the workspace");
    assert_has(&out, "\"type\":\"turn_end\"");
    assert_has(&out, "3 notes.txt");
    assert_has(&out, "ok    counts the lines and bytes of a file");
    assert!(out.ends_with("notes.txt: 3 lines, 14 bytes\n"), "{out}");
}

#[test]
fn every_other_marked_example_of_the_book_runs_as_written() {
    let blocks = marked_blocks();
    let others: Vec<_> = blocks
        .iter()
        .filter(|e| !e.page.ends_with("README.md"))
        .collect();
    // The author's loop, serving, and recording and replaying at least.
    assert!(
        others.len() >= 3,
        "the book marks {} examples",
        others.len()
    );
    for example in others {
        run_block(example);
    }
}

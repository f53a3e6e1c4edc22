//! The process jail's cost per command: `bash` running `true` through the
//! whole pipeline, in the jail (bubblewrap, the init, a cgroup where the host
//! may make one) against the same call without it (Landlock and seccomp
//! alone), interleaved. Skipped, and said so, where the jail cannot run.
//!
//! Then the same call in a workspace like a real one: a git repository of
//! 10,000 files of 100 lines in 440 directories, 20 of them nested
//! repositories (each `git init` and a commit), against the empty workspace,
//! in the jail and without it. What grows with the repository is the git
//! guard's survey after every call and the jail's protective mounts (the
//! repositories' git directories pinned, their configuration and hooks
//! read-only). The goal (issue 23) is a call on that repository within 3 ms
//! of what it cost before the guard; the row holds the repository to 3 ms
//! over the empty workspace, and running this section on the earlier commit
//! gives the cost before. The guard's survey is also timed alone, and the
//! jail's mounts counted (`/proc/self/mountinfo` in the jail).
//!
//! Setting (environment): `TOOLHOST_BENCH_REPO` (generate the repository
//! there and keep it; default: a temporary directory).

use crate::table::{Row, alternating_medians, median, ms, us};
use crate::{Config, runtime, timed_call};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use toolhost::doctor::Support;
use toolhost::internals::GitGuard;
use toolhost::{Host, JailMode};

/// The generated repository's shape: `TOP × LEAVES` directories of `FILES`
/// files each, `NESTED` of them repositories of their own.
const TOP: usize = 20;
const LEAVES: usize = 20;
const FILES: usize = 25;
const LINES: usize = 100;
const NESTED: usize = 20;

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    if let Support::Unavailable { reason } = toolhost::doctor::jail_support() {
        eprintln!("  jail: skipped: {reason}");
        return;
    }
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let (repo, _keep) = generated_repository();
    let host = |workspace: &Path, mode: JailMode| -> Host {
        rt.block_on(
            toolhost::Host::builder()
                .workspace(workspace)
                .user_config_dir(None)
                .jail(mode)
                .build(),
        )
        .expect("building the host")
    };
    let (jailed, bare) = (
        host(ws.path(), JailMode::Required),
        host(ws.path(), JailMode::Off),
    );
    let (repo_jailed, repo_bare) = (host(&repo, JailMode::Required), host(&repo, JailMode::Off));
    let bash = |host: &Host, command: &str| {
        timed_call(&rt, host, "bash", serde_json::json!({ "command": command }))
    };
    let time = |host: &Host| bash(host, "true").1;
    // Warm every host (the jail's probe, compiled components, the guard's
    // first survey).
    for host in [&jailed, &bare, &repo_jailed, &repo_bare] {
        time(host);
    }
    let (with, without) = alternating_medians(cfg.scaled(60), || time(&jailed), || time(&bare));
    let cost = with.saturating_sub(without);
    rows.push(
        Row::timed(
            "bash `true`, whole call, in the jail",
            with,
            "without the jail",
            without,
            ms,
        )
        .target(
            "jail ≤ 15 ms per command",
            cost <= Duration::from_millis(15),
        ),
    );

    let (on_repo, empty) =
        alternating_medians(cfg.scaled(60), || time(&repo_jailed), || time(&jailed));
    rows.push(
        Row::timed(
            "bash `true` in the jail, 10,000-file repo with 20 nested",
            on_repo,
            "empty workspace",
            empty,
            ms,
        )
        .target(
            "repo ≤ 3 ms over an empty workspace",
            on_repo.saturating_sub(empty) <= Duration::from_millis(3),
        ),
    );
    let (on_repo, empty) = alternating_medians(cfg.scaled(60), || time(&repo_bare), || time(&bare));
    rows.push(Row::timed(
        "bash `true` without the jail, the same repo",
        on_repo,
        "empty workspace",
        empty,
        ms,
    ));

    // What the jail mounts: its mount table, in the repository and in the
    // empty workspace. The init makes the protective mounts where it can
    // (a few µs each); elsewhere bubblewrap does (it re-reads the mount
    // table for each), which the row says.
    let mounts = |host: &Host| -> usize {
        let (text, _) = bash(host, "wc -l < /proc/self/mountinfo");
        text.trim().parse().expect("a count of mounts")
    };
    let maker = match toolhost::doctor::jail_support() {
        Support::Available {
            init_mounts: true, ..
        } => "the init",
        _ => "bubblewrap",
    };
    let (in_repo, in_empty) = (mounts(&repo_jailed), mounts(&jailed));
    rows.push(
        Row::new(
            format!("mounts in the jail, the same repo (made by {maker})"),
            format!("{in_repo} (+{})", in_repo.saturating_sub(in_empty)),
        )
        .baseline(format!("empty workspace {in_empty}")),
    );

    guard_survey(cfg, &repo, ws.path(), rows);
}

/// The git guard alone, through its public interface: what it does around
/// each call (`watch`, then `settle`: a survey of what changed), in the
/// repository and in an empty directory; and its first survey, which a
/// host's first call pays.
fn guard_survey(cfg: &Config, repo: &Path, empty: &Path, rows: &mut Vec<Row>) {
    let around_a_call = |guard: &GitGuard| -> Duration {
        let start = Instant::now();
        let watch = guard.watch();
        let reverted = guard.settle(watch);
        let elapsed = start.elapsed();
        assert!(reverted.is_empty(), "{reverted:?}");
        elapsed
    };
    let (in_repo, in_empty) = (
        GitGuard::of_user(vec![repo.to_path_buf()], None),
        GitGuard::of_user(vec![empty.to_path_buf()], None),
    );
    in_repo.watch();
    in_empty.watch();
    let (known_repositories, known_files) = in_repo.known();
    eprintln!(
        "  jail: the guard knows {} repositories and {} files that decide what git runs",
        known_repositories.len(),
        known_files.len()
    );
    let (survey, survey_empty) = alternating_medians(
        cfg.scaled(200),
        || around_a_call(&in_repo),
        || around_a_call(&in_empty),
    );
    rows.push(Row::timed(
        "git guard alone: survey after a call, the same repo",
        survey,
        "empty workspace",
        survey_empty,
        us,
    ));
    let first: Vec<Duration> = (0..cfg.scaled(10))
        .map(|_| {
            let guard = GitGuard::of_user(vec![repo.to_path_buf()], None);
            let start = Instant::now();
            guard.watch();
            start.elapsed()
        })
        .collect();
    rows.push(Row::timed(
        "git guard alone: first survey (a host's first call), the same repo",
        median(&first),
        "a later call's",
        survey,
        ms,
    ));
}

/// The repository: `$TOOLHOST_BENCH_REPO` (kept), else a temporary one.
fn generated_repository() -> (PathBuf, Option<tempfile::TempDir>) {
    let (root, tmp) = match std::env::var_os("TOOLHOST_BENCH_REPO") {
        Some(dir) => (PathBuf::from(dir), None),
        None => {
            let tmp = tempfile::tempdir().unwrap();
            (tmp.path().join("repo"), Some(tmp))
        }
    };
    if !root.exists() {
        // Made beside its place and moved there when complete, so that an
        // interrupted run leaves no half repository to measure.
        let partial = root.with_extension("partial");
        let _ = std::fs::remove_dir_all(&partial);
        eprint!(
            "  jail: generating the repository in {} ... ",
            root.display()
        );
        let start = Instant::now();
        generate(&partial);
        std::fs::rename(&partial, &root).unwrap();
        eprintln!("{:.1} s", start.elapsed().as_secs_f64());
    }
    (root.canonicalize().unwrap(), tmp)
}

const WORDS: &[&str] = &[
    "let", "fn", "struct", "impl", "return", "match", "self", "value", "error", "config", "path",
    "buffer", "index", "result", "handle", "request", "response", "state", "token", "stream",
];

/// A repository of `TOP × LEAVES × FILES` files of `LINES` lines, committed;
/// `NESTED` of its leaf directories are repositories of their own (each
/// with its files committed), which the top one ignores.
fn generate(root: &Path) {
    let mut rng = toolhost_tests::Rng(0x2545_f491_4f6c_dd1d);
    let mut ignore = String::from("target/\n");
    for top in 0..TOP {
        for leaf in 0..LEAVES {
            let dir = root.join(format!("crate{top}/src/mod{leaf}"));
            std::fs::create_dir_all(&dir).unwrap();
            for file in 0..FILES {
                let mut text = String::new();
                for _ in 0..LINES {
                    let words: Vec<&str> = (0..(3 + rng.below(10)))
                        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                        .collect();
                    text.push_str(&words.join(" "));
                    text.push('\n');
                }
                std::fs::write(dir.join(format!("f{file}.rs")), text).unwrap();
            }
            // The nested repositories: one leaf in each of the first
            // `NESTED` crates.
            if top < NESTED && leaf == top % LEAVES {
                git(&dir, &["init", "-q"]);
                git(&dir, &["add", "-A"]);
                git(&dir, &["commit", "-q", "--no-verify", "-m", "nested"]);
                ignore.push_str(&format!("/crate{top}/src/mod{leaf}/\n"));
            }
        }
    }
    std::fs::write(root.join(".gitignore"), ignore).unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "--no-verify", "-m", "first"]);
}

/// git in `dir`, with nothing of the developer's configuration.
#[track_caller]
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .output()
        .expect("running git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {out:?}",
        dir.display()
    );
}

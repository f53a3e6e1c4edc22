//! The protection matrix (issue 23): every way a tool call could make the
//! user's own programs run code, or toolhost grant something, later: a
//! direct write through `write`, `edit` or bash, a rename of each ancestor
//! followed by recreation, creation where nothing was, a symlink, a hard
//! link, a redirection file. Each protected item meets each attack that
//! applies to it; the tests are generated from the two lists below.
//!
//! After each attempt, a git item's repository is used as the user would:
//! the host's own `git status`, `git diff`, `git commit` and `git log` (with
//! a pager) run there, and a marker program planted by the attack (as
//! `core.fsmonitor`, `core.pager` and as hooks) must never have run. A
//! toolhost item's check is toolhost itself: a fresh start must grant
//! nothing the attack wrote, show the audit log that was written, and find
//! the compile cache where it was.

use crate::support::*;
use serde_json::json;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use toolhost::Host;

/// The repositories the user's git runs in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Repo {
    /// The workspace itself.
    Top,
    /// A repository inside it (`vendor/lib`).
    Nested,
    /// A submodule (`sub`, its git directory in `.git/modules/sub`).
    Submodule,
    /// A linked worktree (`wt`, of the repository `main`).
    Worktree,
    /// One the call creates (`fresh`).
    New,
}

/// What an attack does to a repository.
#[derive(Clone, Copy, Debug, PartialEq)]
enum GitAttack {
    /// The `write` tool writes the configuration.
    Write,
    /// The `edit` tool edits it.
    Edit,
    /// bash: `git config`.
    BashConfig,
    /// bash: executable hooks.
    BashHooks,
    /// bash: rename the `n`th directory on the way to the configuration
    /// (counted from the workspace), copy it back under its name, plant.
    RenameAncestor(usize),
    /// The hooks directory is missing; bash creates it with hooks.
    CreateMissing,
    /// bash: the configuration and the hooks directory replaced by symlinks
    /// to planted ones.
    Symlink,
    /// bash: the configuration replaced by a hard link to a workspace file,
    /// which a second call then changes.
    Hardlink,
    /// bash: a `gitdir:` file or `commondir` sends git to a planted git
    /// directory.
    Redirect,
}

/// A workspace with the repository `repo` set up as a user would have it,
/// and a marker program outside it.
struct GitScene {
    ws: Workspace,
    repo: Repo,
    /// Outside the workspace: the marker program and its trace.
    outside: tempfile::TempDir,
    /// Where the user's git would have the empty global configuration.
    home: PathBuf,
}

impl GitScene {
    fn new(repo: Repo) -> GitScene {
        let ws = Workspace::new();
        let outside = tempfile::tempdir().unwrap();
        let home = outside.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let marker = outside.path().join("mark");
        std::fs::write(
            &marker,
            format!(
                "#!/bin/sh\necho \"$0 $*\" >> {}\n",
                outside.path().join("ran").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&marker, PermissionsExt::from_mode(0o755)).unwrap();
        let scene = GitScene {
            ws,
            repo,
            outside,
            home,
        };
        let ws = scene.ws.path.clone();
        match repo {
            Repo::Top => scene.init(&ws),
            Repo::Nested => scene.init(&ws.join("vendor/lib")),
            Repo::Submodule => {
                let source = scene.outside.path().join("source");
                scene.init(&source);
                scene.init(&ws);
                scene.git(
                    &ws,
                    &["-c", "protocol.file.allow=always", "submodule", "add", "-q"],
                    &[source.to_str().unwrap(), "sub"],
                );
                scene.git(&ws, &["commit", "-qm", "sub"], &[]);
            }
            Repo::Worktree => {
                scene.init(&ws.join("main"));
                scene.git(&ws.join("main"), &["worktree", "add", "-q", "../wt"], &[]);
            }
            Repo::New => {}
        }
        scene
    }

    /// `git init` and a first commit in `dir`.
    fn init(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        self.git(dir, &["init", "-q"], &[]);
        std::fs::write(dir.join("README"), "hello\n").unwrap();
        self.git(dir, &["add", "README"], &[]);
        self.git(dir, &["commit", "-qm", "first"], &[]);
    }

    /// The host's own git, as the user runs it (no global or system
    /// configuration of the developer's).
    fn git_command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new("git");
        cmd.current_dir(dir)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("XDG_CONFIG_HOME")
            .env("GIT_AUTHOR_NAME", "u")
            .env("GIT_AUTHOR_EMAIL", "u@example.invalid")
            .env("GIT_COMMITTER_NAME", "u")
            .env("GIT_COMMITTER_EMAIL", "u@example.invalid")
            .env("PAGER", "cat")
            .env_remove("GIT_PAGER");
        cmd
    }

    #[track_caller]
    fn git(&self, dir: &Path, args: &[&str], more: &[&str]) {
        let out = self
            .git_command(dir)
            .args(args)
            .args(more)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?} {more:?}: {out:?}");
    }

    /// The directory the user runs git in.
    fn dir(&self) -> PathBuf {
        let ws = &self.ws.path;
        match self.repo {
            Repo::Top => ws.clone(),
            Repo::Nested => ws.join("vendor/lib"),
            Repo::Submodule => ws.join("sub"),
            Repo::Worktree => ws.join("wt"),
            Repo::New => ws.join("fresh"),
        }
    }

    /// The repository's configuration file and hooks directory, relative to
    /// the workspace.
    fn config(&self) -> &'static str {
        match self.repo {
            Repo::Top => ".git/config",
            Repo::Nested => "vendor/lib/.git/config",
            Repo::Submodule => ".git/modules/sub/config",
            Repo::Worktree => "main/.git/config",
            Repo::New => "fresh/.git/config",
        }
    }

    fn hooks(&self) -> &'static str {
        match self.repo {
            Repo::Top => ".git/hooks",
            Repo::Nested => "vendor/lib/.git/hooks",
            Repo::Submodule => ".git/modules/sub/hooks",
            Repo::Worktree => "main/.git/hooks",
            Repo::New => "fresh/.git/hooks",
        }
    }

    fn marker(&self) -> String {
        self.outside.path().join("mark").display().to_string()
    }

    /// Shell text that adds the marker to the configuration at `config` as
    /// everything it runs on status, diff and log.
    fn plant_config(&self, config: &str) -> String {
        let m = self.marker();
        format!("printf '[core]\\n\\tfsmonitor = {m}\\n\\tpager = {m}\\n' >> {config}")
    }

    /// Shell text that puts executable hooks into `hooks`.
    fn plant_hooks(&self, hooks: &str) -> String {
        let m = self.marker();
        ["pre-commit", "commit-msg", "post-commit", "post-checkout"]
            .iter()
            .map(|h| {
                format!(
                    "mkdir -p {hooks} && printf '#!/bin/sh\\n{m} {h}\\n' > {hooks}/{h} && \
                     chmod +x {hooks}/{h}"
                )
            })
            .collect::<Vec<_>>()
            .join(" && ")
    }

    /// The user runs git in the repository: `status`, `diff`, `commit`,
    /// and `log` through a pager. The marker never ran.
    #[track_caller]
    fn assert_git_runs_nothing_planted(&self) {
        let dir = self.dir();
        if dir.join(".git").exists() {
            for args in [
                &["status"][..],
                &["diff"],
                &["commit", "--allow-empty", "-qm", "probe"],
                &["--paginate", "log", "-1"],
            ] {
                // Whether git succeeds is not the point; what it runs is.
                let _ = self.git_command(&dir).args(args).output().unwrap();
            }
        }
        let ran = self.outside.path().join("ran");
        assert!(
            !ran.exists(),
            "the user's git ran what the call planted: {}",
            std::fs::read_to_string(&ran).unwrap_or_default()
        );
    }

    /// The bash command(s) of `attack`.
    fn attack(&self, attack: GitAttack) -> Vec<String> {
        let config = self.config();
        let hooks = self.hooks();
        let plant = format!(
            "{} && {}",
            self.plant_config(config),
            self.plant_hooks(hooks)
        );
        match attack {
            GitAttack::Write | GitAttack::Edit => Vec::new(),
            GitAttack::BashConfig => {
                let m = self.marker();
                let dir = self.dir();
                let d = dir.display();
                let init = if self.repo == Repo::New {
                    format!("git init -q {d} && ")
                } else {
                    String::new()
                };
                vec![format!(
                    "{init}git -C {d} config core.fsmonitor {m} && git -C {d} config core.pager {m}"
                )]
            }
            GitAttack::BashHooks => {
                let init = if self.repo == Repo::New {
                    "git init -q fresh && ".to_string()
                } else {
                    String::new()
                };
                vec![format!("{init}{}", self.plant_hooks(hooks))]
            }
            GitAttack::RenameAncestor(n) => {
                let ancestor = ancestors(config)[n].clone();
                vec![format!(
                    "mv {ancestor} {ancestor}.moved && cp -a {ancestor}.moved {ancestor} && {plant}"
                )]
            }
            GitAttack::CreateMissing => match self.repo {
                Repo::New => vec![format!(
                    "mkdir -p fresh/.git/objects fresh/.git/refs && \
                     echo 'ref: refs/heads/main' > fresh/.git/HEAD && {plant}"
                )],
                _ => vec![self.plant_hooks(hooks)],
            },
            GitAttack::Symlink => vec![format!(
                "cp {config} evil.cfg && {} && ln -sfn \"$PWD/evil.cfg\" {config}; \
                 {} ; rm -rf {hooks}; ln -sfn \"$PWD/evilhooks\" {hooks}",
                self.plant_config("evil.cfg"),
                self.plant_hooks("evilhooks"),
            )],
            GitAttack::Hardlink => vec![
                format!("cp {config} evil.cfg && ln -f evil.cfg {config}"),
                self.plant_config("evil.cfg"),
            ],
            GitAttack::Redirect => {
                // A planted git directory, and git sent to it.
                let evil = format!(
                    "git init -q --bare \"$PWD/evil.git\" && {} && {}",
                    self.plant_config("evil.git/config"),
                    self.plant_hooks("evil.git/hooks")
                );
                let send = match self.repo {
                    Repo::Top => "rm -rf .git; echo \"gitdir: $PWD/evil.git\" > .git".to_string(),
                    Repo::Nested => {
                        "rm -rf vendor/lib/.git; echo \"gitdir: $PWD/evil.git\" > vendor/lib/.git"
                            .to_string()
                    }
                    Repo::Submodule => "echo \"gitdir: $PWD/evil.git\" > sub/.git; \
                                        echo \"$PWD/evil.git\" > .git/modules/sub/commondir"
                        .to_string(),
                    Repo::Worktree => "echo \"gitdir: $PWD/evil.git\" > wt/.git; \
                                       echo \"$PWD/evil.git\" > main/.git/worktrees/wt/commondir"
                        .to_string(),
                    Repo::New => {
                        "mkdir -p fresh && echo \"gitdir: $PWD/evil.git\" > fresh/.git".to_string()
                    }
                };
                vec![format!("{evil}; {send}")]
            }
        }
    }
}

/// The directories on the way from the workspace to `path` (relative),
/// nearest the workspace first.
fn ancestors(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').collect();
    (1..parts.len()).map(|n| parts[..n].join("/")).collect()
}

fn bash(host: &Host, command: &str) -> toolhost::ToolResultMessage {
    call(host, "bash", json!({ "command": command }))
}

/// Each attack runs in the jail and without it (Landlock and seccomp
/// alone, where the git guard alone must hold).
fn run_git_case(repo: Repo, attack: GitAttack) {
    for mode in jail_modes() {
        let scene = GitScene::new(repo);
        if attack == GitAttack::CreateMissing && repo != Repo::New {
            std::fs::remove_dir_all(scene.ws.path.join(scene.hooks())).unwrap();
        }
        let host = built(builder(&scene.ws).jail(mode));
        let config = scene.ws.path.join(scene.config());
        match attack {
            GitAttack::Write => {
                let mut text = std::fs::read_to_string(&config).unwrap_or_default();
                text.push_str(&format!("[core]\n\tfsmonitor = {}\n", scene.marker()));
                let r = call(
                    &host,
                    "write",
                    json!({"path": config.display().to_string(), "content": text}),
                );
                assert!(r.is_error, "{mode:?}: write was let through: {}", r.text());
            }
            GitAttack::Edit => {
                if !config.exists() {
                    scene.ws.write(scene.config(), "[core]\n");
                }
                let r = call(
                    &host,
                    "edit",
                    json!({"path": config.display().to_string(), "edits": [{"oldText": "[core]",
                        "newText": format!("[core]\n\tfsmonitor = {}", scene.marker())}]}),
                );
                assert!(r.is_error, "{mode:?}: edit was let through: {}", r.text());
            }
            _ => {
                for command in scene.attack(attack) {
                    bash(&host, &command);
                }
            }
        }
        scene.assert_git_runs_nothing_planted();
    }
}

/// One test per item and attack, each running `$run(item, attack)` (every
/// ancestor on the way to an item renamed in a test of its own).
macro_rules! matrix {
    ($run:ident; $($name:ident: $item:expr, $attack:expr;)*) => {
        $(
            #[test]
            fn $name() {
                $run($item, $attack);
            }
        )*
    };
}

matrix! {
    run_git_case;
    protect_git_top_write: Repo::Top, GitAttack::Write;
    protect_git_top_edit: Repo::Top, GitAttack::Edit;
    protect_git_top_bash_config: Repo::Top, GitAttack::BashConfig;
    protect_git_top_bash_hooks: Repo::Top, GitAttack::BashHooks;
    protect_git_top_rename_dot_git: Repo::Top, GitAttack::RenameAncestor(0);
    protect_git_top_create_missing_hooks: Repo::Top, GitAttack::CreateMissing;
    protect_git_top_symlink: Repo::Top, GitAttack::Symlink;
    protect_git_top_hardlink: Repo::Top, GitAttack::Hardlink;
    protect_git_top_redirect: Repo::Top, GitAttack::Redirect;
    protect_git_nested_write: Repo::Nested, GitAttack::Write;
    protect_git_nested_edit: Repo::Nested, GitAttack::Edit;
    protect_git_nested_bash_config: Repo::Nested, GitAttack::BashConfig;
    protect_git_nested_bash_hooks: Repo::Nested, GitAttack::BashHooks;
    protect_git_nested_rename_vendor: Repo::Nested, GitAttack::RenameAncestor(0);
    protect_git_nested_rename_lib: Repo::Nested, GitAttack::RenameAncestor(1);
    protect_git_nested_rename_dot_git: Repo::Nested, GitAttack::RenameAncestor(2);
    protect_git_nested_create_missing_hooks: Repo::Nested, GitAttack::CreateMissing;
    protect_git_nested_symlink: Repo::Nested, GitAttack::Symlink;
    protect_git_nested_hardlink: Repo::Nested, GitAttack::Hardlink;
    protect_git_nested_redirect: Repo::Nested, GitAttack::Redirect;
    protect_git_submodule_write: Repo::Submodule, GitAttack::Write;
    protect_git_submodule_edit: Repo::Submodule, GitAttack::Edit;
    protect_git_submodule_bash_config: Repo::Submodule, GitAttack::BashConfig;
    protect_git_submodule_bash_hooks: Repo::Submodule, GitAttack::BashHooks;
    protect_git_submodule_rename_dot_git: Repo::Submodule, GitAttack::RenameAncestor(0);
    protect_git_submodule_rename_modules: Repo::Submodule, GitAttack::RenameAncestor(1);
    protect_git_submodule_rename_module_dir: Repo::Submodule, GitAttack::RenameAncestor(2);
    protect_git_submodule_create_missing_hooks: Repo::Submodule, GitAttack::CreateMissing;
    protect_git_submodule_symlink: Repo::Submodule, GitAttack::Symlink;
    protect_git_submodule_hardlink: Repo::Submodule, GitAttack::Hardlink;
    protect_git_submodule_redirect: Repo::Submodule, GitAttack::Redirect;
    protect_git_worktree_write: Repo::Worktree, GitAttack::Write;
    protect_git_worktree_edit: Repo::Worktree, GitAttack::Edit;
    protect_git_worktree_bash_config: Repo::Worktree, GitAttack::BashConfig;
    protect_git_worktree_bash_hooks: Repo::Worktree, GitAttack::BashHooks;
    protect_git_worktree_rename_main: Repo::Worktree, GitAttack::RenameAncestor(0);
    protect_git_worktree_rename_dot_git: Repo::Worktree, GitAttack::RenameAncestor(1);
    protect_git_worktree_create_missing_hooks: Repo::Worktree, GitAttack::CreateMissing;
    protect_git_worktree_symlink: Repo::Worktree, GitAttack::Symlink;
    protect_git_worktree_hardlink: Repo::Worktree, GitAttack::Hardlink;
    protect_git_worktree_redirect: Repo::Worktree, GitAttack::Redirect;
    protect_git_new_write: Repo::New, GitAttack::Write;
    protect_git_new_edit: Repo::New, GitAttack::Edit;
    protect_git_new_bash_config: Repo::New, GitAttack::BashConfig;
    protect_git_new_bash_hooks: Repo::New, GitAttack::BashHooks;
    protect_git_new_create_missing: Repo::New, GitAttack::CreateMissing;
    protect_git_new_redirect: Repo::New, GitAttack::Redirect;
}

#[test]
fn protect_ancestors_are_counted_from_the_workspace() {
    assert_eq!(
        ancestors("vendor/lib/.git/config"),
        ["vendor", "vendor/lib", "vendor/lib/.git"]
    );
}

/// toolhost's own files, each with the workspace at a fake `$HOME` (so the
/// user's configuration, state and cache lie in it).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Own {
    WorkspaceToml,
    WorkspaceDir,
    UserConfig,
    TrustStore,
    Cache,
    AuditDir,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum OwnAttack {
    Write,
    Edit,
    Bash,
    RenameAncestor(usize),
    CreateMissing,
    Symlink,
    Hardlink,
}

/// A workspace that is also the user's home, with toolhost's files in it,
/// and a directory outside that no start may grant.
struct OwnScene {
    ws: Workspace,
    item: Own,
    /// Granted by every payload; never writable for bash.
    sentinel: tempfile::TempDir,
}

impl OwnScene {
    fn new(item: Own) -> OwnScene {
        let scene = OwnScene {
            ws: Workspace::new(),
            item,
            sentinel: tempfile::tempdir().unwrap(),
        };
        scene.ws.write(
            ".config/toolhost/toolhost.toml",
            "audit = \"~/.local/state/toolhost/audit.jsonl\"\n",
        );
        match item {
            Own::WorkspaceToml | Own::TrustStore => {
                scene.ws.write("toolhost.toml", "# the workspace's own\n");
                let out = scene.cli(&["trust", "--yes"]);
                assert!(out.status.success(), "{out:?}");
            }
            Own::WorkspaceDir => {
                std::fs::create_dir_all(scene.ws.path.join(".toolhost/extensions")).unwrap();
            }
            Own::UserConfig | Own::Cache | Own::AuditDir => {}
        }
        // A first start makes the cache and the audit log.
        let out = scene.cli(&["call", "bash", r#"{"command":"true"}"#]);
        assert!(out.status.success(), "{out:?}");
        scene
    }

    /// The CLI with the workspace as `$HOME` and nothing else of the
    /// developer's: configuration, state and cache where a user has them.
    fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(toolhost_bin())
            .arg("--workspace")
            .arg(&self.ws.path)
            .arg("--require-jail")
            .args(args)
            .env("HOME", &self.ws.path)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("TOOLHOST_CACHE_DIR")
            .output()
            .unwrap()
    }

    fn bash(&self, command: &str) -> std::process::Output {
        self.cli(&["call", "bash", &json!({ "command": command }).to_string()])
    }

    /// The item, relative to the workspace.
    fn path(&self) -> &'static str {
        match self.item {
            Own::WorkspaceToml => "toolhost.toml",
            Own::WorkspaceDir => ".toolhost/extensions",
            Own::UserConfig => ".config/toolhost/toolhost.toml",
            Own::TrustStore => ".config/toolhost/trust.toml",
            Own::Cache => ".cache/toolhost",
            Own::AuditDir => ".local/state/toolhost/audit.jsonl",
        }
    }

    /// Configuration that would let bash write into the sentinel.
    fn payload(&self) -> String {
        format!(
            "[shell]\nread-write = [\"{}\"]\n",
            self.sentinel.path().display()
        )
    }

    /// Shell text that puts the payload where the item is (the item's own
    /// kind of content).
    fn plant(&self) -> String {
        let payload = self.payload().replace('"', "\\\"");
        let toolhost = toolhost_bin().display().to_string();
        match self.item {
            Own::WorkspaceToml | Own::UserConfig => {
                format!("printf \"{payload}\" > {}", self.path())
            }
            // A workspace file of its choosing, approved by toolhost itself.
            Own::TrustStore => format!(
                "printf \"{payload}\" > toolhost.toml; HOME=$PWD {toolhost} --workspace $PWD trust --yes"
            ),
            Own::WorkspaceDir => format!(
                "mkdir -p .toolhost/extensions && cp {} .toolhost/extensions/kit.wasm",
                toolhost_tests::TESTKIT
            ),
            Own::Cache => "mkdir -p .cache/toolhost && touch .cache/toolhost/planted".into(),
            Own::AuditDir => "mkdir -p .local/state/toolhost && echo '{\"tool\":\"forged\"}' > \
                 .local/state/toolhost/audit.jsonl"
                .into(),
        }
    }

    fn attack(&self, attack: OwnAttack) {
        let path = self.path();
        let plant = self.plant();
        match attack {
            OwnAttack::Write | OwnAttack::Edit => {
                let abs = self.ws.path.join(path).display().to_string();
                let args = if attack == OwnAttack::Write {
                    ("write", json!({"path": abs, "content": self.payload()}))
                } else {
                    let old = std::fs::read_to_string(self.ws.path.join(path)).unwrap();
                    let first = old.lines().next().unwrap().to_string();
                    (
                        "edit",
                        json!({"path": abs, "edits": [{"oldText": first, "newText": self.payload()}]}),
                    )
                };
                let out = self.cli(&["call", args.0, &args.1.to_string()]);
                assert!(!out.status.success(), "{} was let through: {out:?}", args.0);
            }
            OwnAttack::Bash | OwnAttack::CreateMissing => {
                self.bash(&plant);
            }
            OwnAttack::RenameAncestor(n) => {
                let ancestor = ancestors(path)[n].clone();
                self.bash(&format!(
                    "mv {ancestor} {ancestor}.moved; cp -a {ancestor}.moved {ancestor}; {plant}"
                ));
            }
            OwnAttack::Symlink => {
                // The item's directory, or (at the top) the item itself,
                // replaced by a link to a planted copy.
                let parent = Path::new(path).parent().unwrap().display().to_string();
                let command = if parent.is_empty() {
                    format!("echo '# planted' > planted.toml; ln -sfn $PWD/planted.toml {path}")
                } else {
                    format!(
                        "mkdir -p planted && cp -a {parent}/. planted/; rm -rf {parent}; \
                         ln -sfn $PWD/planted {parent}"
                    )
                };
                self.bash(&format!("{command}; {plant}"));
            }
            OwnAttack::Hardlink => {
                self.bash(&format!(
                    "echo x > evil; ln -f evil {path}; ln {path} linked && echo y >> linked; {plant}"
                ));
            }
        }
    }

    /// What toolhost does next, started fresh: it grants nothing the attack
    /// wrote, loads nothing it planted, shows the audit log it wrote, and
    /// keeps its compile cache where it was.
    #[track_caller]
    fn assert_toolhost_grants_nothing_planted(&self, cache_before: Option<u64>) {
        let probe = self.sentinel.path().join("written");
        let out = self.bash(&format!("touch {}", probe.display()));
        assert!(
            !probe.exists(),
            "a fresh start granted what the attack wrote: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let list = self.cli(&["list", "--json"]);
        let listed = String::from_utf8_lossy(&list.stdout);
        assert!(
            !listed.contains("\"slow\""),
            "a planted component loaded: {listed}"
        );
        if let Some(ino) = cache_before {
            let now = std::fs::metadata(self.ws.path.join(".cache/toolhost")).map(|m| m.ino());
            assert_eq!(now.ok(), Some(ino), "the compile cache was moved");
            assert!(!self.ws.path.join(".cache/toolhost/planted").exists());
        }
        // (Unless the attack removed the setting that keeps it.)
        let user = std::fs::read_to_string(self.ws.path.join(".config/toolhost/toolhost.toml"));
        if user.is_ok_and(|text| text.contains("audit")) {
            let audit = self.cli(&["audit", "--json"]);
            let log = String::from_utf8_lossy(&audit.stdout);
            assert!(
                !log.contains(r#""tool":"forged""#),
                "the audit log was replaced: {log}"
            );
            assert!(
                log.contains(r#""tool":"bash""#),
                "the calls made are not in the audit log: {log}"
            );
        }
    }
}

fn run_own_case(item: Own, attack: OwnAttack) {
    let scene = OwnScene::new(item);
    if attack == OwnAttack::CreateMissing {
        let _ = std::fs::remove_file(scene.ws.path.join(scene.path()));
    }
    let cache = std::fs::metadata(scene.ws.path.join(".cache/toolhost"))
        .ok()
        .map(|m| m.ino());
    scene.attack(attack);
    scene.assert_toolhost_grants_nothing_planted(cache);
}

matrix! {
    run_own_case;
    protect_own_workspace_toml_write: Own::WorkspaceToml, OwnAttack::Write;
    protect_own_workspace_toml_edit: Own::WorkspaceToml, OwnAttack::Edit;
    protect_own_workspace_toml_bash: Own::WorkspaceToml, OwnAttack::Bash;
    protect_own_workspace_toml_create_missing: Own::WorkspaceToml, OwnAttack::CreateMissing;
    protect_own_workspace_toml_symlink: Own::WorkspaceToml, OwnAttack::Symlink;
    protect_own_workspace_toml_hardlink: Own::WorkspaceToml, OwnAttack::Hardlink;
    protect_own_workspace_dir_bash: Own::WorkspaceDir, OwnAttack::Bash;
    protect_own_workspace_dir_rename: Own::WorkspaceDir, OwnAttack::RenameAncestor(0);
    protect_own_workspace_dir_symlink: Own::WorkspaceDir, OwnAttack::Symlink;
    protect_own_user_config_write: Own::UserConfig, OwnAttack::Write;
    protect_own_user_config_edit: Own::UserConfig, OwnAttack::Edit;
    protect_own_user_config_bash: Own::UserConfig, OwnAttack::Bash;
    protect_own_user_config_rename_dot_config: Own::UserConfig, OwnAttack::RenameAncestor(0);
    protect_own_user_config_rename_toolhost: Own::UserConfig, OwnAttack::RenameAncestor(1);
    protect_own_user_config_create_missing: Own::UserConfig, OwnAttack::CreateMissing;
    protect_own_user_config_symlink: Own::UserConfig, OwnAttack::Symlink;
    protect_own_user_config_hardlink: Own::UserConfig, OwnAttack::Hardlink;
    protect_own_trust_store_bash: Own::TrustStore, OwnAttack::Bash;
    protect_own_trust_store_rename_dot_config: Own::TrustStore, OwnAttack::RenameAncestor(0);
    protect_own_trust_store_rename_toolhost: Own::TrustStore, OwnAttack::RenameAncestor(1);
    protect_own_trust_store_symlink: Own::TrustStore, OwnAttack::Symlink;
    protect_own_cache_bash: Own::Cache, OwnAttack::Bash;
    protect_own_cache_rename_dot_cache: Own::Cache, OwnAttack::RenameAncestor(0);
    protect_own_cache_symlink: Own::Cache, OwnAttack::Symlink;
    protect_own_audit_bash: Own::AuditDir, OwnAttack::Bash;
    protect_own_audit_rename_dot_local: Own::AuditDir, OwnAttack::RenameAncestor(0);
    protect_own_audit_rename_state: Own::AuditDir, OwnAttack::RenameAncestor(1);
    protect_own_audit_rename_toolhost: Own::AuditDir, OwnAttack::RenameAncestor(2);
    protect_own_audit_symlink: Own::AuditDir, OwnAttack::Symlink;
    protect_own_audit_hardlink: Own::AuditDir, OwnAttack::Hardlink;
}

/// What a call's result says when the guard undid something.
fn reverted(result: &toolhost::ToolResultMessage) -> bool {
    result.text().contains("toolhost reverted")
}

#[test]
fn protect_an_ordinary_git_workflow_in_the_jail_keeps_working() {
    for mode in jail_modes() {
        let ws = Workspace::new();
        let host = built(builder(&ws).jail(mode));
        let identity = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid \
                        GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid; set -e; ";
        // The first call makes the repositories; the second works in them
        // as they exist (their configuration read-only, their git
        // directories pinned).
        let first = format!(
            "{identity}git init -q --bare -b main remote.git && git init -q -b main proj && cd proj && \
             git remote add origin ../remote.git && echo one > a.txt && git add a.txt && \
             git commit -qm one && git push -q origin main && echo FIRST-OK"
        );
        let second = format!(
            "{identity}cd proj && git checkout -q -b feature && echo two >> a.txt && \
             git commit -qam two && git checkout -q main && echo three > b.txt && git add b.txt && \
             git commit -qm three && git merge -q --no-edit feature && git checkout -q feature && \
             git rebase -q main && echo wip >> a.txt && git stash -q && git stash pop -q && \
             git checkout -q -- a.txt && git branch -q topic && git checkout -q main && \
             git push -q origin main feature && git fetch -q origin && \
             cd .. && git clone -q remote.git copy && cd copy && git log --oneline | wc -l && \
             git pull -q origin main && echo SECOND-OK"
        );
        for (command, done) in [(first, "FIRST-OK"), (second, "SECOND-OK")] {
            let r = bash(&host, &command);
            assert!(
                !r.is_error && r.text().contains(done) && !reverted(&r),
                "{mode:?}: {}",
                r.text()
            );
        }
        let log = Command::new("git")
            .args(["-C", "proj", "log", "--format=%s", "main"])
            .current_dir(&ws.path)
            .output()
            .unwrap();
        let subjects = String::from_utf8_lossy(&log.stdout);
        assert!(
            subjects.contains("two") && subjects.contains("three") && subjects.contains("one"),
            "{mode:?}: {subjects}"
        );
    }
}

#[test]
fn protect_an_extensions_wasi_files_cannot_plant_what_git_runs() {
    // A directory an extension may write through WASI holds a repository
    // deeper down (its top has none, so the preopen is writable): the
    // git guard watches the call.
    let scene = GitScene::new(Repo::New);
    let ws = &scene.ws;
    scene.init(&ws.path.join("out/r"));
    let before = ws.read("out/r/.git/config");
    let host = built(
        granted(
            ws,
            "[extensions.hostile]\nfs-read = [\"out\"]\nfs-write = [\"out\"]\n",
        )
        .extensions(|e| e.load(toolhost_tests::HOSTILE)),
    );
    let config = ws.path.join("out/r/.git/config");
    let planted = format!("{before}[core]\n\tfsmonitor = {}\n", scene.marker());
    let r = call(
        &host,
        "hostile",
        json!({"mode": "wasi-write", "path": config.display().to_string(), "content": planted}),
    );
    assert!(reverted(&r), "{}", r.text());
    assert_eq!(ws.read("out/r/.git/config"), before);
    let out = scene
        .git_command(&ws.path.join("out/r"))
        .args(["status"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!scene.outside.path().join("ran").exists());
}

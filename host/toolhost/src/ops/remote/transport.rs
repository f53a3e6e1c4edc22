//! How toolhost reaches a workspace service: engines that already exist,
//! never a daemon of its own. `ssh://` runs OpenSSH's `ssh` with the user's
//! own configuration and keys (or `TOOLHOST_SSH_COMMAND`, as git's
//! `GIT_SSH_COMMAND`); `container://` runs `podman exec -i` (or docker's);
//! `--workspace-exec` runs any command that gives the service its stdio.
//!
//! The far end is the same `toolhost` binary. Over `ssh://` and
//! `container://`, when the other side lacks this very build, toolhost
//! copies itself into a per-user cache there, named and checked by its
//! SHA-256 digest, as editors' remote servers do; `--remote-toolhost PATH`
//! names one installed there instead.

use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The variable that replaces `ssh` (words split as a shell splits them).
pub const SSH_COMMAND_VAR: &str = "TOOLHOST_SSH_COMMAND";
/// The variable that replaces `podman` for `container://`.
pub const CONTAINER_COMMAND_VAR: &str = "TOOLHOST_CONTAINER_COMMAND";

/// How toolhost reaches a workspace service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A command that runs the service with its stdio, as given
    /// (`--workspace-exec 'kubectl exec -i pod -- toolhost workspace serve /ws'`).
    Exec(Vec<String>),
    /// A shell on another machine or in a container, which runs the service
    /// for `path` with the `toolhost` that `toolhost` says.
    Shell {
        /// The command that runs a shell script there, before the script:
        /// `ssh -p 2222 -l me host --` or `podman exec -i box`.
        runner: Runner,
        /// The workspace's absolute path there.
        path: String,
        toolhost: RemoteToolhost,
        /// `ssh://me@host:2222/srv/app`, as given.
        shown: String,
    },
}

/// How a script is run on the other side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runner {
    /// `ssh … host` then the script as one argument (ssh hands the remote
    /// login shell one command line).
    Ssh(Vec<String>),
    /// `podman exec -i NAME` then `sh -c SCRIPT`, as arguments.
    Container(Vec<String>),
}

/// Which `toolhost` serves on the other side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteToolhost {
    /// This binary: copied into the per-user cache there
    /// (`${XDG_CACHE_HOME:-$HOME/.cache}/toolhost/bin/toolhost-DIGEST`)
    /// unless a copy with its digest is there already.
    Copy(PathBuf),
    /// One installed there (`--remote-toolhost PATH`).
    At(String),
}

impl Transport {
    /// `--workspace-exec`'s text, split as a shell splits words (quotes
    /// and backslashes; no expansion).
    pub fn exec(command_line: &str) -> Result<Transport, String> {
        let words = split_words(command_line)?;
        if words.is_empty() {
            return Err("the command is empty".into());
        }
        Ok(Transport::Exec(words))
    }

    /// Whether `workspace` names a remote workspace (`ssh://`,
    /// `container://`) rather than a directory here.
    pub fn is_url(workspace: &str) -> bool {
        workspace.starts_with("ssh://") || workspace.starts_with("container://")
    }

    /// The transport of `ssh://[user@]host[:port]/abs/path` or
    /// `container://NAME/abs/path`, run with `toolhost` there.
    pub fn parse(workspace: &str, toolhost: RemoteToolhost) -> Result<Transport, String> {
        let url = url::Url::parse(workspace).map_err(|e| format!("{workspace:?}: {e}"))?;
        let path = percent_decode(url.path())?;
        if !path.starts_with('/') {
            return Err(format!(
                "{workspace:?} names no absolute path of the workspace (…/abs/path)"
            ));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{workspace:?} names no host"))?;
        let runner = match url.scheme() {
            "ssh" => {
                let mut ssh = match std::env::var(SSH_COMMAND_VAR) {
                    Ok(words) if !words.trim().is_empty() => {
                        split_words(&words).map_err(|e| format!("{SSH_COMMAND_VAR}: {e}"))?
                    }
                    _ => vec!["ssh".to_string()],
                };
                // Never a terminal (the protocol is binary) and never a
                // password prompt (nobody could answer it): keys, agents and
                // the user's configuration decide.
                ssh.extend(["-T".into(), "-o".into(), "BatchMode=yes".into()]);
                if let Some(port) = url.port() {
                    ssh.extend(["-p".into(), port.to_string()]);
                }
                if !url.username().is_empty() {
                    ssh.extend(["-l".into(), percent_decode(url.username())?]);
                }
                ssh.extend([host.trim_matches(['[', ']']).to_string(), "--".into()]);
                Runner::Ssh(ssh)
            }
            "container" => {
                if url.port().is_some() || !url.username().is_empty() {
                    return Err(format!(
                        "{workspace:?}: a container is named alone: container://NAME/abs/path"
                    ));
                }
                let mut engine = match std::env::var(CONTAINER_COMMAND_VAR) {
                    Ok(words) if !words.trim().is_empty() => {
                        split_words(&words).map_err(|e| format!("{CONTAINER_COMMAND_VAR}: {e}"))?
                    }
                    _ => vec![container_engine()],
                };
                engine.extend(["exec".into(), "-i".into(), host.to_string()]);
                Runner::Container(engine)
            }
            other => {
                return Err(format!(
                    "{workspace:?}: {other}:// is not a workspace toolhost reaches \
                     (ssh://, container://, or --workspace-exec)"
                ));
            }
        };
        Ok(Transport::Shell {
            runner,
            path,
            toolhost,
            shown: workspace.to_string(),
        })
    }

    /// How the workspace is named in messages.
    pub fn shown(&self) -> String {
        match self {
            Transport::Exec(words) => format!("`{}`", words.join(" ")),
            Transport::Shell { shown, .. } => shown.clone(),
        }
    }

    /// The command that runs the service, after whatever it needs there is
    /// in place (a copy of this toolhost).
    pub(super) fn service(&self) -> Result<Command, String> {
        match self {
            Transport::Exec(words) => {
                let mut cmd = Command::new(&words[0]);
                cmd.args(&words[1..]);
                Ok(cmd)
            }
            Transport::Shell {
                runner,
                path,
                toolhost,
                ..
            } => {
                let toolhost = match toolhost {
                    RemoteToolhost::At(path) => path.clone(),
                    RemoteToolhost::Copy(local) => runner.installed(local)?,
                };
                let script = format!("exec {} workspace serve {}", quote(&toolhost), quote(path));
                Ok(runner.script(&script))
            }
        }
    }
}

impl Runner {
    /// The command that runs `script` with `sh` on the other side.
    fn script(&self, script: &str) -> Command {
        match self {
            Runner::Ssh(ssh) => {
                let mut cmd = Command::new(&ssh[0]);
                cmd.args(&ssh[1..]).arg(format!("sh -c {}", quote(script)));
                cmd
            }
            Runner::Container(engine) => {
                let mut cmd = Command::new(&engine[0]);
                cmd.args(&engine[1..]).args(["sh", "-c", script]);
                cmd
            }
        }
    }

    /// `script` run there with `input` on its stdin: its stdout, or what
    /// went wrong (its stderr).
    fn run(&self, script: &str, input: Option<std::fs::File>) -> Result<String, String> {
        let out = self
            .script(script)
            .stdin(input.map_or_else(Stdio::null, Stdio::from))
            .output()
            .map_err(|e| format!("{} failed: {e}", self.program()))?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "{} ended with {}: {}",
                self.program(),
                out.status,
                crate::display::escape(said.trim())
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn program(&self) -> &str {
        match self {
            Runner::Ssh(words) | Runner::Container(words) => &words[0],
        }
    }

    /// The path there of a `toolhost` identical to `local` (by digest):
    /// the per-user cache's copy, made now if it is missing or differs.
    fn installed(&self, local: &Path) -> Result<String, String> {
        let digest = digest_of(local)?;
        let name = format!("toolhost-{}", &digest[..16]);
        let probe = format!(
            "d=\"${{XDG_CACHE_HOME:-$HOME/.cache}}/toolhost/bin\"; f=\"$d/{name}\"; \
             uname -sm; echo \"$f\"; \
             if [ -x \"$f\" ] && [ \"$(sha256sum \"$f\" | cut -d' ' -f1)\" = {digest} ]; \
             then echo present; else echo missing; fi"
        );
        let answer = self.run(&probe, None)?;
        let mut lines = answer.lines();
        let (system, path, state) = (
            lines.next().unwrap_or_default(),
            lines.next().unwrap_or_default().to_string(),
            lines.next().unwrap_or_default(),
        );
        let here = format!("Linux {}", std::env::consts::ARCH);
        if system != here {
            return Err(format!(
                "the other side is {system:?} and this toolhost is built for {here:?}: install \
                 toolhost there and name it with --remote-toolhost PATH"
            ));
        }
        if state == "present" {
            return Ok(path);
        }
        // A temporary file beside it, checked, then renamed: a copy cut
        // short or altered on the way is never the one that runs.
        let copy = format!(
            "set -e; d=\"${{XDG_CACHE_HOME:-$HOME/.cache}}/toolhost/bin\"; \
             mkdir -p \"$d\"; chmod 700 \"$d\"; t=$(mktemp \"$d/.copy.XXXXXX\"); \
             cat > \"$t\"; \
             if [ \"$(sha256sum \"$t\" | cut -d' ' -f1)\" != {digest} ]; then \
             rm -f \"$t\"; echo 'the copy of toolhost arrived altered' >&2; exit 1; fi; \
             chmod 700 \"$t\"; mv -f \"$t\" \"$d/{name}\""
        );
        // Read from the file as it is sent: the far side checks the digest,
        // so a file changed since is refused there, never run.
        let file =
            std::fs::File::open(local).map_err(|e| format!("reading {}: {e}", local.display()))?;
        self.run(&copy, Some(file))
            .map_err(|e| format!("copying toolhost there failed: {e}"))?;
        Ok(path)
    }
}

/// The SHA-256 digest of `local` (hex), read as a stream (a debug build
/// is 300 MB: never held whole).
fn digest_of(local: &Path) -> Result<String, String> {
    let reading = |e: std::io::Error| format!("reading {}: {e}", local.display());
    let mut file = std::fs::File::open(local).map_err(reading)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(reading)?;
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// podman where it is installed, else docker.
fn container_engine() -> String {
    let found = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    if !found("podman") && found("docker") {
        "docker".into()
    } else {
        "podman".into()
    }
}

/// `text` as one word for `sh`: single-quoted, each `'` written `'\''`.
pub(super) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `%XX` escapes decoded; an escape that is not UTF-8 is refused.
fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{text:?} has a % that is no escape"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

/// `text` split into words as a POSIX shell splits a simple command:
/// blanks separate, single quotes keep everything, double quotes keep all
/// but `\"` and `\\`, a backslash outside quotes keeps the next character.
pub(super) fn split_words(text: &str) -> Result<Vec<String>, String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a ' is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a \" is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a \" is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("it ends with a lone \\".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_splits_as_a_shell_splits_it() {
        let words = |t: &str| split_words(t).unwrap();
        assert_eq!(
            words("kubectl exec -i pod -- toolhost workspace serve /ws"),
            [
                "kubectl",
                "exec",
                "-i",
                "pod",
                "--",
                "toolhost",
                "workspace",
                "serve",
                "/ws"
            ]
        );
        assert_eq!(
            words(r#"a 'b c' "d \"e\"" f\ g"#),
            ["a", "b c", "d \"e\"", "f g"]
        );
        assert_eq!(words("  "), Vec::<String>::new());
        assert_eq!(words("''"), [""]);
        assert!(split_words("a 'b").is_err());
        assert!(split_words("a \"b").is_err());
        assert!(split_words("a \\").is_err());
        // What `quote` makes, a shell reads back as it was.
        let odd = "it's a \"path\" with $x and \\";
        assert_eq!(words(&quote(odd)), [odd]);
    }

    #[test]
    fn a_workspace_url_names_its_user_host_port_and_path() {
        let copy = || RemoteToolhost::At("/opt/toolhost".into());
        let shell = |url: &str| match Transport::parse(url, copy()).unwrap() {
            Transport::Shell { runner, path, .. } => (runner, path),
            _ => panic!("{url}: a shell transport"),
        };
        let (runner, path) = shell("ssh://me@build.example:2222/srv/my%20app");
        assert_eq!(path, "/srv/my app");
        let Runner::Ssh(ssh) = runner else {
            panic!("ssh")
        };
        assert!(
            ssh.ends_with(&["-p", "2222", "-l", "me", "build.example", "--"].map(String::from))
        );
        let (runner, path) = shell("container://dev_box/work");
        assert_eq!(path, "/work");
        let Runner::Container(engine) = runner else {
            panic!("container")
        };
        assert!(engine.ends_with(&["exec", "-i", "dev_box"].map(String::from)));
        for (bad, why) in [
            ("ssh://host", "no absolute path"),
            ("http://host/x", "is not a workspace"),
            ("container://me@box/x", "named alone"),
            ("ssh:///x", "no host"),
        ] {
            let err = Transport::parse(bad, copy()).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}

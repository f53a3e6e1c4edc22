//! What the jail probe found, remembered between starts.
//!
//! Probing starts two tiny jails, about 15 ms at every start of a command
//! that runs programs. What decides the answer changes rarely: bubblewrap's
//! binary, the kernel, the user, the sysctls and security-module policies
//! on user namespaces, and toolhost itself (its init). So a probe that found
//! the jail working is written down with a description of all of these
//! ([`machine`]), and a later start whose description is the same takes the
//! answer without probing. Any difference probes again.
//!
//! Only a working jail is remembered: a failed probe is tried again at every
//! start, so a file that says "no jail" can never turn the jail off. A file
//! that claims a jail the machine cannot run costs a failed command, never
//! containment. The file is in toolhost's cache directory, which the jail
//! keeps read-only to commands.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a working jail's probe found: the options the jail is run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Working {
    /// bubblewrap knows `--disable-userns`.
    pub disable_userns: bool,
    /// The init may make the protective mounts itself.
    pub init_mounts: bool,
}

/// The file's name in the cache directory.
const FILE: &str = "jail-probe";

/// Everything the probe's answer depends on, one fact per line.
pub(super) fn machine(bwrap: &Path) -> String {
    let mut facts = vec![format!("toolhost {}", env!("CARGO_PKG_VERSION"))];
    let identity = |path: &Path| match std::fs::metadata(path) {
        Ok(m) => format!(
            "{} {} {} {} {}.{}",
            path.display(),
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec()
        ),
        Err(e) => format!("{} {e}", path.display()),
    };
    // The running binary carries the init and the probe itself.
    if let Ok(exe) = std::env::current_exe() {
        facts.push(format!("exe {}", identity(&exe)));
    }
    facts.push(format!("bwrap {}", identity(bwrap)));
    let kernel = |f: &str| std::fs::read_to_string(f).unwrap_or_else(|_| "-".into());
    facts.push(format!(
        "kernel {} {}",
        kernel("/proc/sys/kernel/osrelease").trim(),
        kernel("/proc/sys/kernel/version").trim()
    ));
    facts.push(format!("uid {}", rustix::process::getuid().as_raw()));
    for sysctl in [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "/proc/sys/kernel/yama/ptrace_scope",
    ] {
        let value = std::fs::read_to_string(sysctl).unwrap_or_else(|_| "-".into());
        facts.push(format!("{sysctl} {}", value.trim()));
    }
    // AppArmor and SELinux policies that may confine bubblewrap.
    for dir in ["/etc/apparmor.d", "/etc/selinux"] {
        facts.push(format!("policy {}", identity(Path::new(dir))));
    }
    facts.join("\n")
}

/// The remembered answer for `machine`, if the file describes it.
pub(super) fn recall(dir: &Path, machine: &str) -> Option<Working> {
    let text = crate::files::read_text(&dir.join(FILE), 64 << 10).ok()??;
    let (facts, answer) = text.rsplit_once("\nanswer ")?;
    if facts != machine {
        return None;
    }
    let flag = |name: &str| -> Option<bool> {
        answer
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
    };
    Some(Working {
        disable_userns: flag("disable_userns")?,
        init_mounts: flag("init_mounts")?,
    })
}

/// Remember that a working jail runs with `working` on `machine` (a
/// failed probe is never remembered). Failing to write only means probing
/// again next time.
pub(super) fn remember(dir: &Path, machine: &str, working: &Working) {
    let Working {
        disable_userns,
        init_mounts,
    } = working;
    let text =
        format!("{machine}\nanswer disable_userns={disable_userns} init_mounts={init_mounts}\n");
    let _ = write_atomically(&dir.join(FILE), text.as_bytes());
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).create(dir)?;
    let temp: PathBuf = dir.join(format!(".{FILE}.{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&temp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_working_jail_is_recalled_for_the_same_machine_only_and_a_failure_never() {
        let dir = tempfile::tempdir().unwrap();
        let bwrap = Path::new("/usr/bin/bwrap");
        let here = machine(bwrap);
        assert!(here.contains("\nkernel "), "{here}");
        assert_eq!(recall(dir.path(), &here), None, "nothing yet");
        let works = Working {
            disable_userns: false,
            init_mounts: true,
        };
        remember(dir.path(), &here, &works);
        assert_eq!(recall(dir.path(), &here), Some(works));
        // Any fact that differs (a new kernel, bubblewrap, sysctl) probes again.
        let other = here.replace("\nuid ", "\nuid 9");
        assert_eq!(recall(dir.path(), &other), None);
        // A failure is never written (there is no way to say one): the last
        // working answer stays, and a forged "no jail" cannot be recalled.
        assert!(recall(dir.path(), &here).is_some());
        std::fs::write(
            dir.path().join(FILE),
            format!("{here}\nanswer unavailable\n"),
        )
        .unwrap();
        assert_eq!(recall(dir.path(), &here), None);
    }
}

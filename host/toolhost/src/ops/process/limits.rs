//! What one call's processes may take, enforced by the kernel: how many
//! processes, and how much memory.
//!
//! Where the host may create cgroups, each call's processes go into one of
//! their own (cgroup v2, or the v1 `pids` and `memory` hierarchies), made
//! before the first process starts and removed after the last is gone: the
//! limits then hold for all of the call's processes together, and the
//! cgroup's event counters tell afterwards which limit was hit, so the call
//! ends in an error naming it. Elsewhere the jail's init sets resource limits
//! (`RLIMIT_NPROC`, counted in the jail's own user namespace, and
//! `RLIMIT_AS`, per process), which bound a command without telling which
//! limit stopped it.

use rustix::fd::OwnedFd;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Limits of one call's processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Processes (and threads) alive at once.
    pub max_processes: u32,
    /// Memory of all of them together, in bytes.
    pub memory_bytes: u64,
}

impl Default for ProcessLimits {
    fn default() -> Self {
        ProcessLimits {
            max_processes: 1024,
            memory_bytes: 4 << 30,
        }
    }
}

impl ProcessLimits {
    /// The error a command that hit a limit ends with.
    pub fn exceeded(&self, which: Exceeded) -> String {
        match which {
            Exceeded::Processes => format!(
                "Command exceeded its process limit of {}",
                self.max_processes
            ),
            Exceeded::Memory => format!(
                "Command exceeded its memory limit of {} MiB",
                self.memory_bytes >> 20
            ),
        }
    }
}

/// Which limit a call's processes hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exceeded {
    Processes,
    Memory,
}

/// How limits are enforced on this machine; probed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// A cgroup v2 directory this host may create children in, with the
    /// `memory` and `pids` controllers enabled for them.
    CgroupV2 { parent: PathBuf },
    /// Writable cgroup v1 `pids` and `memory` directories.
    CgroupV1 { pids: PathBuf, memory: PathBuf },
    /// Resource limits, set by the jail's init (why no cgroup).
    Rlimits { reason: String },
}

impl std::fmt::Display for Enforcement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Enforcement::CgroupV2 { parent } => write!(f, "cgroup v2 under {}", parent.display()),
            Enforcement::CgroupV1 { pids, memory } => write!(
                f,
                "cgroup v1 under {} and {}",
                pids.display(),
                memory.display()
            ),
            Enforcement::Rlimits { reason } => write!(
                f,
                "resource limits per process ({reason}): the process count holds in the jail, \
                 memory per process, and a command that hits one is not told which"
            ),
        }
    }
}

/// The enforcement this machine allows (probed by making and removing a
/// cgroup).
pub fn enforcement() -> &'static Enforcement {
    static PROBE: OnceLock<Enforcement> = OnceLock::new();
    PROBE.get_or_init(probe)
}

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// This process's cgroup paths: `(hierarchy controllers, path)` per line of
/// `/proc/self/cgroup` (`""` for v2).
fn own_cgroups() -> Vec<(String, String)> {
    std::fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some((controllers.to_string(), path.to_string()))
        })
        .collect()
}

fn probe() -> Enforcement {
    let own = own_cgroups();
    let v2_mounted = Path::new(CGROUP_ROOT).join("cgroup.controllers").exists();
    if v2_mounted && let Some((_, path)) = own.iter().find(|(c, _)| c.is_empty()) {
        let parent = Path::new(CGROUP_ROOT).join(path.trim_start_matches('/'));
        let enabled =
            std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
        let has = |c: &str| enabled.split_whitespace().any(|e| e == c);
        if has("memory") && has("pids") && try_mkdir(&parent) {
            return Enforcement::CgroupV2 { parent };
        }
        return Enforcement::Rlimits {
            reason: format!(
                "the cgroup {} does not delegate the memory and pids controllers to this \
                 user (run toolhost under `systemd-run --user --scope -p Delegate=yes`)",
                parent.display()
            ),
        };
    }
    let dir = |controller: &str| {
        own.iter()
            .find(|(c, _)| c.split(',').any(|c| c == controller))
            .map(|(_, path)| {
                Path::new(CGROUP_ROOT)
                    .join(controller)
                    .join(path.trim_start_matches('/'))
            })
    };
    match (dir("pids"), dir("memory")) {
        (Some(pids), Some(memory)) if try_mkdir(&pids) && try_mkdir(&memory) => {
            Enforcement::CgroupV1 { pids, memory }
        }
        _ => Enforcement::Rlimits {
            reason: "no cgroup this user may create".into(),
        },
    }
}

/// Whether a child cgroup can be made (and removed) in `parent`.
fn try_mkdir(parent: &Path) -> bool {
    let probe = parent.join(format!("toolhost-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    if made {
        let _ = std::fs::remove_dir(&probe);
    }
    made
}

/// The cgroup (v2) or cgroups (v1) of one call; removed when dropped.
#[derive(Debug)]
pub(crate) struct CallCgroup {
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` (v2) or `tasks` (v1) of each, open for the child to
    /// move itself in.
    procs: Vec<OwnedFd>,
    v2: bool,
    /// The session's cgroups it lies in, kept until it is removed.
    _session: Option<std::sync::Arc<SessionCgroup>>,
}

/// A cgroup (v2) or pair of cgroups (v1) that holds the cgroups of several
/// spawns, its limits holding for all of them together: a session's
/// processes ([`super::session`]). Removed when dropped, once empty.
#[derive(Debug)]
pub struct SessionCgroup(CallCgroup);

impl SessionCgroup {
    /// Processes in it now (its `pids.current`).
    #[cfg(test)]
    pub(crate) fn processes(&self) -> u64 {
        std::fs::read_to_string(self.0.dirs[0].join("pids.current"))
            .ok()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// One with `limits`; `None` where limits are rlimits.
    pub(crate) fn create(limits: ProcessLimits) -> io::Result<Option<SessionCgroup>> {
        let Some(cgroup) = CallCgroup::create_in(None, limits)? else {
            return Ok(None);
        };
        // Nothing runs in it but in its children: it only counts them.
        if cgroup.v2 {
            std::fs::write(
                cgroup.dirs[0].join("cgroup.subtree_control"),
                "+memory +pids",
            )?;
        }
        let mut cgroup = cgroup;
        cgroup.procs.clear();
        Ok(Some(SessionCgroup(cgroup)))
    }
}

impl CallCgroup {
    /// A cgroup with `limits` for one call, inside `session`'s cgroups
    /// (whose limits then hold too) if given; `None` where limits are
    /// rlimits.
    pub(crate) fn create_in(
        session: Option<&std::sync::Arc<SessionCgroup>>,
        limits: ProcessLimits,
    ) -> io::Result<Option<CallCgroup>> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "toolhost-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let (dirs, v2) = match (session, enforcement()) {
            (Some(session), _) => (
                session.0.dirs.iter().map(|d| d.join(&name)).collect(),
                session.0.v2,
            ),
            (None, Enforcement::CgroupV2 { parent }) => (vec![parent.join(&name)], true),
            (None, Enforcement::CgroupV1 { pids, memory }) => {
                (vec![pids.join(&name), memory.join(&name)], false)
            }
            (None, Enforcement::Rlimits { .. }) => return Ok(None),
        };
        let mut cgroup = CallCgroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            v2,
            _session: session.cloned(),
        };
        for dir in &dirs {
            std::fs::create_dir(dir)?;
            cgroup.dirs.push(dir.clone());
        }
        let set = |dir: &Path, file: &str, value: String| std::fs::write(dir.join(file), value);
        if v2 {
            let dir = &cgroup.dirs[0];
            set(dir, "pids.max", limits.max_processes.to_string())?;
            set(dir, "memory.max", limits.memory_bytes.to_string())?;
            // No swapping around the limit, where swap exists.
            let _ = set(dir, "memory.swap.max", "0".into());
        } else {
            set(
                &cgroup.dirs[0],
                "pids.max",
                limits.max_processes.to_string(),
            )?;
            set(
                &cgroup.dirs[1],
                "memory.limit_in_bytes",
                limits.memory_bytes.to_string(),
            )?;
            let _ = set(
                &cgroup.dirs[1],
                "memory.memsw.limit_in_bytes",
                limits.memory_bytes.to_string(),
            );
        }
        // The child moves itself in between fork and exec, when it has one
        // thread. Under v1 it moves that thread (`tasks`): for the calling
        // thread alone the kernel skips the global lock that `cgroup.procs`
        // takes, whose first writer after a quiet spell waits for an RCU
        // grace period (8 to 20 ms of every command here; 0.5 ms this way).
        let file = if v2 { "cgroup.procs" } else { "tasks" };
        for dir in &cgroup.dirs {
            let procs = rustix::fs::open(
                dir.join(file),
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?;
            cgroup.procs.push(procs);
        }
        Ok(Some(cgroup))
    }

    /// The descriptors a child writes `0` to, between fork and exec, to
    /// move itself in ([`join`]).
    pub(crate) fn procs_fds(&self) -> Vec<i32> {
        use std::os::fd::AsRawFd;
        self.procs.iter().map(|fd| fd.as_raw_fd()).collect()
    }

    /// Which limit the call's processes hit, if any.
    pub(crate) fn exceeded(&self) -> Option<Exceeded> {
        let counter = |dir: &Path, file: &str, key: &str| -> u64 {
            std::fs::read_to_string(dir.join(file))
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        let (pids, memory) = if self.v2 {
            (&self.dirs[0], &self.dirs[0])
        } else {
            (&self.dirs[0], &self.dirs[1])
        };
        if counter(pids, "pids.events", "max ") > 0 {
            return Some(Exceeded::Processes);
        }
        let oom = if self.v2 {
            counter(memory, "memory.events", "oom_kill ")
        } else {
            counter(memory, "memory.oom_control", "oom_kill ")
        };
        (oom > 0).then_some(Exceeded::Memory)
    }
}

impl Drop for CallCgroup {
    fn drop(&mut self) {
        self.procs.clear();
        for dir in &self.dirs {
            // Anything left (there should be nothing: the jail is gone) is
            // killed first; an empty cgroup is removed at once.
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                if self.v2 {
                    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
                } else {
                    let procs =
                        std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                    for pid in procs.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
                        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                            let _ =
                                rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_errors_name_the_limit() {
        let limits = ProcessLimits::default();
        assert_eq!(
            limits.exceeded(Exceeded::Processes),
            "Command exceeded its process limit of 1024"
        );
        assert_eq!(
            limits.exceeded(Exceeded::Memory),
            "Command exceeded its memory limit of 4096 MiB"
        );
    }
}

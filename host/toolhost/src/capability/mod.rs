//! The capabilities a component may be granted, one module each: its
//! `toolhost.toml` key and the interface that key lets a component import
//! ([`Interface`]: its name, what it lets a component do, the value a
//! refusal suggests), whether a grant asks for it, how two grants of it
//! merge, what the host gives a built-in tool whose manifest names it, what
//! an extension's grant of it gives the extension, what its use adds to a
//! call's audit line, and what `toolhost doctor` says of its confinement
//! here.
//!
//! [`ALL`] is the one table. Everything else reads it: the import check and
//! the linker (`wit/interfaces.rs`, `wit/glue/`), the refusal and `ext`
//! lines, the policy's merging, the built-ins' grants (`builtin.rs`) and the
//! extensions' (`extensions/mod.rs`), `toolhost audit`'s lines
//! ([`audited`]) and `toolhost doctor` ([`doctor`]). Adding a
//! capability means a module here, a row in [`ALL`], its field in
//! [`GrantSpec`] and its glue in `wit/glue/` (`docs/architecture.md`, "Add a
//! capability").

mod call_tools;
mod client;
mod fs_read;
mod fs_write;
mod grant;
mod http;
pub(crate) mod process;
mod search;
mod secrets;
mod session_processes;
mod tools;

pub use grant::GrantSpec;

use crate::ops::Capabilities;
use crate::ops::fs::{FsRead, FsWrite, GrantedDir, LocalFs, OutputFiles, ProtectedPaths};
use crate::ops::process::doctor::Layer;
use crate::ops::process::{JailMode, ProcessPolicy};
use crate::ops::protect::GitGuard;
use crate::ops::search::Search;
use crate::ops::tools::ToolSet;
use crate::ops::usage::{Use, Used};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Who serves an interface, and on what grant.
#[derive(Clone, Copy, Debug)]
pub enum Serving {
    /// Linked for every component and served by the call's own state: the
    /// data types and the call's progress and cancellation channels.
    Call,
    /// Linked for every component and served by the Operations (types only).
    OpsAlways,
    /// An Operation, linked only when `granted` says the capabilities hold
    /// it. `grant_value` is the value of its `toolhost.toml` key.
    Granted {
        granted: fn(&Capabilities) -> bool,
        grant_value: &'static str,
    },
}

/// One interface of the package, or a capability imported through WASI.
#[derive(Clone, Copy, Debug)]
pub struct Interface {
    /// Its name in the package (`fs-read`); also its key in `toolhost.toml`.
    pub name: &'static str,
    /// What it lets a component do, for messages (`read files`).
    pub what: &'static str,
    pub serving: Serving,
}

impl Interface {
    /// Whether a component with `caps` may use it.
    pub fn granted(&self, caps: &Capabilities) -> bool {
        match self.serving {
            Serving::Call | Serving::OpsAlways => true,
            Serving::Granted { granted, .. } => granted(caps),
        }
    }

    /// Whether it is a capability, granted or not (not always linked).
    pub fn is_capability(&self) -> bool {
        matches!(self.serving, Serving::Granted { .. })
    }

    /// The value of its `toolhost.toml` key that grants it, if it is a
    /// capability.
    pub fn grant_value(&self) -> Option<&'static str> {
        match self.serving {
            Serving::Granted { grant_value, .. } => Some(grant_value),
            _ => None,
        }
    }
}

/// The interface of a capability: `name` (its `toolhost.toml` key), `what`
/// it lets a component do, the `grant_value` a refusal suggests, and
/// whether a component's capabilities hold it.
const fn granted(
    name: &'static str,
    what: &'static str,
    grant_value: &'static str,
    granted: fn(&Capabilities) -> bool,
) -> Interface {
    Interface {
        name,
        what,
        serving: Serving::Granted {
            granted,
            grant_value,
        },
    }
}

/// How a component imports a capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Imported {
    /// As the package's interface of the capability's name.
    Package,
    /// Through WASI: every import whose name starts with this prefix.
    Wasi(&'static str),
    /// Not by itself: it changes what the capability of this name serves
    /// (`secrets` rides on `http`'s requests).
    Through(&'static str),
}

/// A place a built-in's manifest names instead of a directory.
pub(crate) mod place {
    /// The workspace (its file backends; what `search = true` covers).
    pub const WORKSPACE: &str = "<workspace>";
    /// The full-output files of the shell tools (spec §7.15): written by
    /// them, readable beside the workspace.
    pub const OUTPUTS: &str = "<full-output files>";
    /// The shells (`process::SHELLS`), run under the shell tools' policy.
    pub const SHELLS: &str = "<shells>";
}

/// What the host gives its built-in tools, by the places their manifests
/// name ([`place`]).
pub(crate) struct BuiltinBackends {
    /// The workspace's file backends and its search.
    pub workspace: (Arc<dyn FsRead>, Arc<dyn FsWrite>, Arc<dyn Search>),
    /// Write access to the host's temp directory, whose every file written
    /// is recorded; the record, and read access to open those files with.
    pub outputs: (Arc<dyn FsWrite>, Arc<OutputFiles>, Arc<dyn FsRead>),
    /// The shell tools' process policy, and the guard over what its
    /// commands may write.
    pub shells: (Arc<ProcessPolicy>, Arc<GitGuard>),
}

/// Give a built-in what its manifest's grant of one capability names, into
/// the capabilities being built; an error names what the host does not
/// offer.
pub(crate) type ProvideBuiltin =
    fn(&GrantSpec, &BuiltinBackends, &mut Capabilities) -> Result<(), String>;

/// What an extension's grant resolved to, for each capability to give it
/// its part (`extensions::capabilities` resolves it).
pub(crate) struct ForExtension<'a> {
    pub name: &'a str,
    /// Its grant, as its files wrote it (merged).
    pub grant: &'a GrantSpec,
    /// Its `fs-read` and `fs-write` directories, as approved (pinned).
    pub read_roots: &'a [GrantedDir],
    pub write_roots: &'a [GrantedDir],
    /// The environment variables granted it (loader variables left out).
    pub env: &'a [&'a String],
    /// Watches what its programs and WASI files change, when it may write.
    pub guard: Option<&'a Arc<GitGuard>>,
    pub protected: &'a ProtectedPaths,
    pub jail: JailMode,
    /// The call's time limit: also a command's and a request's longest wait.
    pub call_time: Duration,
    pub tool_set: &'a ToolSet,
    /// The places tools can write: no granted program comes from there.
    pub no_programs_from: Vec<PathBuf>,
    /// Why a granted program is refused, if it is.
    pub program_refusal: &'a dyn Fn(&str) -> Option<String>,
    /// What to say of a granted bare program name whose first match on the
    /// policy's `PATH` is passed over, if anything.
    pub passed_over: &'a dyn Fn(&str, &ProcessPolicy) -> Option<String>,
}

/// Give an extension its grant of one capability, into the capabilities
/// being built; what it could not be given is said in `warnings`.
pub(crate) type ProvideExtension =
    fn(&ForExtension<'_>, &mut Capabilities, warnings: &mut Vec<String>);

/// What a call's use of a capability adds to its audit line: the list its
/// Operations fill ([`crate::ops::usage`]), and the word `toolhost audit`
/// shows that list with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Audited {
    pub list: Use,
    pub shown_as: &'static str,
}

/// A capability's use fills `list`, which `toolhost audit` shows as
/// `shown_as`.
const fn audited(list: Use, shown_as: &'static str) -> Option<Audited> {
    Some(Audited { list, shown_as })
}

/// One capability (see the module docs).
pub(crate) struct Capability {
    pub interface: Interface,
    pub imported: Imported,
    /// Whether a grant asks for it.
    pub asked: fn(&GrantSpec) -> bool,
    /// Add `other`'s grant of it to `mine`.
    pub merge: fn(mine: &mut GrantSpec, other: &GrantSpec),
    pub builtin: ProvideBuiltin,
    pub extension: ProvideExtension,
    /// What its use adds to the audit line (`None`: nothing).
    pub audit: Option<Audited>,
    /// What confines it on this machine, probed (`toolhost doctor`); none
    /// for a capability whose confinement does not depend on the machine.
    pub doctor: fn() -> Vec<Layer>,
}

/// Every capability, in the order they are listed to a person.
pub(crate) const ALL: &[Capability] = &[
    fs_read::CAPABILITY,
    fs_write::CAPABILITY,
    process::CAPABILITY,
    search::CAPABILITY,
    tools::CAPABILITY,
    http::CAPABILITY,
    client::CAPABILITY,
    session_processes::CAPABILITY,
    call_tools::CAPABILITY,
    // After `http`: its secrets join the policy `http` made.
    secrets::CAPABILITY,
];

/// Each list of `used` that a capability fills, with the word it is shown
/// with, in the table's order (a list two capabilities fill, once); then
/// what the host itself recorded: refusals, what it put back, and what
/// the person was asked.
pub(crate) fn audit_lists(used: &Used) -> Vec<(&'static str, &[String])> {
    let mut lists: Vec<(&'static str, Use)> = Vec::new();
    for audited in ALL.iter().filter_map(|c| c.audit) {
        if !lists.iter().any(|(_, list)| *list == audited.list) {
            lists.push((audited.shown_as, audited.list));
        }
    }
    lists.push(("denied", Use::Denied));
    lists.push(("put back", Use::Reverted));
    lists.push(("asked", Use::Asked));
    lists
        .into_iter()
        .map(|(shown_as, list)| (shown_as, used.list(list)))
        .collect()
}

/// What `toolhost doctor` reports: each capability's confinement on this
/// machine, in the table's order.
pub(crate) fn doctor() -> Vec<Layer> {
    ALL.iter().flat_map(|c| (c.doctor)()).collect()
}

/// A capability whose confinement is the same on every machine.
fn no_layers() -> Vec<Layer> {
    Vec::new()
}

/// The capability whose `toolhost.toml` key is `name`.
pub(crate) fn named(name: &str) -> Option<&'static Capability> {
    ALL.iter().find(|c| c.interface.name == name)
}

/// The capabilities a built-in's manifest grants it, from `backends`.
pub(crate) fn for_builtin(
    grant: &GrantSpec,
    backends: &BuiltinBackends,
) -> Result<Capabilities, String> {
    let mut caps = Capabilities::default();
    for capability in ALL.iter().filter(|c| (c.asked)(grant)) {
        (capability.builtin)(grant, backends, &mut caps)
            .map_err(|e| format!("{}: {e}", capability.interface.name))?;
    }
    Ok(caps)
}

/// The capabilities an extension's grant, resolved as `resolved`, gives it.
pub(crate) fn for_extension(
    resolved: &ForExtension<'_>,
    warnings: &mut Vec<String>,
) -> Capabilities {
    let mut caps = Capabilities::default();
    for capability in ALL.iter().filter(|c| (c.asked)(resolved.grant)) {
        (capability.extension)(resolved, &mut caps, warnings);
    }
    caps
}

/// The directories `roots` (approved, pinned) as one backend, the
/// protected set's secrets never read and its protected paths never
/// written; `None`, said in `warnings`, when one cannot be opened, or when
/// there are none (every one refused, and said so).
fn pinned(
    roots: &[GrantedDir],
    grant: &str,
    protected: &ProtectedPaths,
    warnings: &mut Vec<String>,
) -> Option<LocalFs> {
    if roots.is_empty() {
        return None;
    }
    LocalFs::pinned(roots)
        .map(|fs| fs.protect(protected.clone()))
        .map_err(|e| warnings.push(format!("opening the {grant} directories: {e}")))
        .ok()
}

/// The places of one list in a built-in's manifest that are not `offered`.
fn unknown_places(list: &[String], offered: &[&str]) -> Result<(), String> {
    match list.iter().find(|p| !offered.contains(&p.as_str())) {
        Some(other) => Err(format!(
            "{other:?} is not a place the host offers built-ins here (it offers {})",
            offered.join(", ")
        )),
        None => Ok(()),
    }
}

/// A built-in that asks for a capability the host gives only extensions.
fn extensions_only(_: &GrantSpec, _: &BuiltinBackends, _: &mut Capabilities) -> Result<(), String> {
    Err("the host gives it to extensions only".into())
}

/// Merge the list `theirs` into `mine`, keeping `mine`'s order.
fn merge_list(mine: &mut Vec<String>, theirs: &[String]) {
    for item in theirs {
        if !mine.contains(item) {
            mine.push(item.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_capability_has_one_row_and_its_grant_reads_the_row() {
        let mut names: Vec<&str> = ALL.iter().map(|c| c.interface.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a name twice in the table");
        let everything = GrantSpec {
            fs_read: vec!["/a".into()],
            fs_write: vec!["/a".into()],
            process: vec!["git".into()],
            search: true,
            tools: true,
            http: vec!["example.org".into()],
            client: vec!["sampling".into()],
            session_processes: true,
            call_tools: vec!["read".into()],
            secrets: [("TOKEN".into(), Default::default())].into(),
            ..Default::default()
        };
        for capability in ALL {
            let name = capability.interface.name;
            assert!(everything.grants(name), "{name}");
            assert!(!GrantSpec::default().grants(name), "{name}");
            assert!(capability.interface.is_capability(), "{name}");
            let mut merged = GrantSpec::default();
            (capability.merge)(&mut merged, &everything);
            assert!(merged.grants(name), "{name} is lost in a merge");
        }
    }

    /// Every list a call's record keeps is shown, once, with its
    /// capability's word; the lists only the host fills come last.
    #[test]
    fn the_audit_shows_each_list_once_with_its_capabilitys_word() {
        let used = Used {
            read: vec!["/w/a".into()],
            written: vec!["/w/b".into()],
            programs: vec!["/usr/bin/git".into()],
            hosts: vec!["example.org:443".into()],
            client: vec!["sampling greeting: answered".into()],
            secrets: vec!["GITHUB_TOKEN to api.github.com:443".into()],
            denied: vec!["fs-write /etc: outside-roots".into()],
            reverted: vec!["/w/.git/config".into()],
            asked: vec!["send HTTP requests to a:443: once (terminal)".into()],
            called: vec!["read call_1/1".into()],
            more: 0,
        };
        let shown: Vec<(&str, &str)> = audit_lists(&used)
            .into_iter()
            .map(|(word, list)| (word, list[0].as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("read", "/w/a"),
                ("wrote", "/w/b"),
                ("ran", "/usr/bin/git"),
                ("contacted", "example.org:443"),
                ("asked the client", "sampling greeting: answered"),
                ("called", "read call_1/1"),
                ("sent secrets", "GITHUB_TOKEN to api.github.com:443"),
                ("denied", "fs-write /etc: outside-roots"),
                ("put back", "/w/.git/config"),
                ("asked", "send HTTP requests to a:443: once (terminal)"),
            ]
        );
    }

    /// `toolhost doctor`'s layers are the capabilities' own: the process
    /// capability's confinement (the jail first).
    #[test]
    fn the_doctor_asks_each_capability() {
        let names: Vec<String> = doctor().iter().map(|l| l.name.to_string()).collect();
        let process: Vec<String> = (process::CAPABILITY.doctor)()
            .iter()
            .map(|l| l.name.to_string())
            .collect();
        assert_eq!(names, process);
        assert_eq!(names.first().map(String::as_str), Some("jail"));
    }

    #[test]
    fn a_manifest_naming_a_place_the_host_does_not_offer_is_refused_by_name() {
        let err = unknown_places(&["<home>".into()], &[place::WORKSPACE]).unwrap_err();
        assert!(
            err.contains("\"<home>\"") && err.contains("<workspace>"),
            "{err}"
        );
        assert!(unknown_places(&[place::WORKSPACE.into()], &[place::WORKSPACE]).is_ok());
    }
}

//! The one table of the interfaces a `toolhost:tool@0.1.0` component may
//! import. Checking a component's imports against its grants, inspecting
//! it, stubbing what it was not granted, linking what it was, and the
//! `toolhost.toml` line a refusal suggests all read it; adding an interface
//! means adding a row here and its glue beside this file.

use super::{HasOps, OpsCtx, OpsView, fs_read, fs_types, fs_write, process, search, tools};
use crate::ops::Capabilities;
use wasmtime::component::Linker;

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

/// One interface of the package.
#[derive(Debug)]
pub struct Interface {
    /// Its name in the package (`fs-read`); also its key in `toolhost.toml`.
    pub name: &'static str,
    /// What it lets a component do, for messages (`read files`).
    pub what: &'static str,
    pub serving: Serving,
}

/// Every interface of the package a component may import.
pub const INTERFACES: &[Interface] = &[
    Interface {
        name: "types",
        what: "the package's data types",
        serving: Serving::Call,
    },
    Interface {
        name: "fs-types",
        what: "the filesystem's data types",
        serving: Serving::OpsAlways,
    },
    Interface {
        name: "progress",
        what: "report progress",
        serving: Serving::Call,
    },
    Interface {
        name: "cancellation",
        what: "see its call cancelled",
        serving: Serving::Call,
    },
    Interface {
        name: "fs-read",
        what: "read files",
        serving: Serving::Granted {
            granted: |c| c.fs_read.is_some(),
            grant_value: "[\"<directory>\"]",
        },
    },
    Interface {
        name: "fs-write",
        what: "write files",
        serving: Serving::Granted {
            granted: |c| c.fs_write.is_some(),
            grant_value: "[\"<directory>\"]",
        },
    },
    Interface {
        name: "process",
        what: "run programs",
        serving: Serving::Granted {
            granted: |c| c.process.is_some(),
            grant_value: "[\"<program>\"]",
        },
    },
    Interface {
        name: "search",
        what: "search files",
        serving: Serving::Granted {
            granted: |c| c.search.is_some(),
            grant_value: "true",
        },
    },
    Interface {
        name: "tools",
        what: "change the active tools",
        serving: Serving::Granted {
            granted: |c| c.tools.is_some(),
            grant_value: "true",
        },
    },
];

pub use super::VERSION;

/// How a component's import name relates to the package.
#[derive(Debug)]
pub enum Import<'a> {
    /// An interface of this package and version.
    Known(&'static Interface),
    /// `toolhost:tool/NAME@VERSION` with another version.
    OtherVersion { version: &'a str },
    /// `toolhost:tool/NAME@0.1.0` with a name this package does not have.
    Unknown,
    /// Not `toolhost:tool` at all (WASI, or something else).
    Foreign,
}

/// Classify an import name, such as `toolhost:tool/fs-read@0.1.0`.
pub fn classify(import: &str) -> Import<'_> {
    let Some(rest) = import.strip_prefix("toolhost:tool/") else {
        return Import::Foreign;
    };
    let (name, version) = rest.split_once('@').unwrap_or((rest, ""));
    if version != VERSION {
        return Import::OtherVersion { version };
    }
    match INTERFACES.iter().find(|i| i.name == name) {
        Some(interface) => Import::Known(interface),
        None => Import::Unknown,
    }
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

fn ops_of<S: OpsView>(state: &mut S) -> OpsCtx<'_> {
    state.ops()
}

/// Link every interface the Operations serve that `caps` grants (and the
/// filesystem types, which every component may import).
pub(crate) fn link_operations<S: OpsView + 'static>(
    linker: &mut Linker<S>,
    caps: &Capabilities,
) -> wasmtime::Result<()> {
    for interface in INTERFACES {
        if matches!(interface.serving, Serving::Call) || !interface.granted(caps) {
            continue;
        }
        let view = ops_of::<S>;
        match interface.name {
            "fs-types" => fs_types::add_to_linker::<_, HasOps>(linker, view)?,
            "fs-read" => fs_read::add_to_linker::<_, HasOps>(linker, view)?,
            "fs-write" => fs_write::add_to_linker::<_, HasOps>(linker, view)?,
            "process" => process::add_to_linker::<_, HasOps>(linker, view)?,
            "search" => search::add_to_linker::<_, HasOps>(linker, view)?,
            "tools" => tools::add_to_linker::<_, HasOps>(linker, view)?,
            other => unreachable!("interface {other} has no Operations glue"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the package agree: every interface the WIT package
    /// defines has a row, and every row is in the package.
    #[test]
    fn the_table_lists_exactly_the_packages_interfaces() {
        let wit_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        let mut declared = Vec::new();
        for entry in std::fs::read_dir(&wit_dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in text.lines() {
                if let Some(rest) = line.trim().strip_prefix("interface ") {
                    declared.push(rest.trim_end_matches(" {").trim().to_string());
                }
            }
        }
        // The exports are not imports.
        declared.retain(|n| n != "tool" && n != "hook");
        declared.sort();
        let mut listed: Vec<String> = INTERFACES.iter().map(|i| i.name.to_string()).collect();
        listed.sort();
        assert_eq!(declared, listed);
    }

    #[test]
    fn import_names_are_classified() {
        assert!(matches!(
            classify("toolhost:tool/fs-read@0.1.0"),
            Import::Known(i) if i.name == "fs-read"
        ));
        assert!(matches!(
            classify("toolhost:tool/fs-read@0.2.0"),
            Import::OtherVersion { version: "0.2.0" }
        ));
        assert!(matches!(
            classify("toolhost:tool/net@0.1.0"),
            Import::Unknown
        ));
        assert!(matches!(classify("wasi:cli/stdin@0.2.0"), Import::Foreign));
    }

    #[test]
    fn only_operations_are_capabilities() {
        let none = Capabilities::default();
        for i in INTERFACES {
            assert_eq!(i.is_capability(), !i.granted(&none), "{}", i.name);
            assert_eq!(i.is_capability(), i.grant_value().is_some(), "{}", i.name);
        }
    }
}

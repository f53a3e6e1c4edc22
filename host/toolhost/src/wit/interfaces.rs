//! The interfaces a `toolhost:tool` component may import (every version the
//! host loads has the same ones): the call's own, and each capability's
//! (`crate::capability`, the one table of capabilities). Checking a
//! component's imports against its grants, inspecting it, stubbing what it
//! was not granted, linking what it was (`version.rs`, `glue/mod.rs`), and the
//! `toolhost.toml` line a refusal suggests all read them.

use crate::capability::{self, Imported};
pub use crate::capability::{Interface, Serving};
#[cfg(test)]
use crate::ops::Capabilities;

/// The interfaces every component may import: the call's own, and the
/// filesystem types.
const ALWAYS: &[Interface] = &[
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
        name: "logging",
        what: "send log messages to the person's client",
        serving: Serving::Call,
    },
    Interface {
        name: "host-info",
        what: "read the host's Pi profile",
        serving: Serving::Call,
    },
];

/// The interfaces that came after 0.1.0, each with the first version that
/// has it (the versions before it lack them).
const SINCE: &[(&str, &str)] = &[
    ("logging", "0.3.0"),
    ("client", "0.3.0"),
    ("session-processes", "0.3.0"),
    ("host-info", "0.4.0"),
    ("call-tools", "0.4.0"),
];

/// Whether the package's version `version` has the interface `name`.
pub fn in_version(name: &str, version: &str) -> bool {
    let minor = |v: &str| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok());
    SINCE
        .iter()
        .find(|(n, _)| *n == name)
        .is_none_or(|(_, since)| minor(version) >= minor(since))
}

/// Every interface of the package a component may import: [`ALWAYS`], then
/// each capability imported from the package.
pub fn interfaces() -> impl Iterator<Item = &'static Interface> {
    let package = capability::ALL
        .iter()
        .filter(|c| c.imported == Imported::Package)
        .map(|c| &c.interface);
    ALWAYS.iter().chain(package)
}

/// The capabilities a component imports through WASI rather than the
/// package, by the prefix of their imports: `wasi:http` (`ops/http_client/`),
/// granted by `http`. Refused at load like an Operation; linked by their own
/// crate when granted.
pub fn wasi_capabilities() -> impl Iterator<Item = (&'static str, &'static Interface)> {
    capability::ALL.iter().filter_map(|c| match c.imported {
        Imported::Wasi(prefix) => Some((prefix, &c.interface)),
        Imported::Package | Imported::Through(_) => None,
    })
}

/// A capability by its key in `toolhost.toml`: an Operation's interface, or
/// one of [`wasi_capabilities`].
pub fn capability(name: &str) -> Option<&'static Interface> {
    capability::named(name).map(|c| &c.interface)
}

/// How a component's import name relates to the package.
#[derive(Debug)]
pub enum Import<'a> {
    /// An interface of the package, at a version the host loads.
    Known {
        interface: &'static Interface,
        version: &'a str,
    },
    /// `toolhost:tool/NAME@VERSION` with a version the host does not load.
    OtherVersion { version: &'a str },
    /// `toolhost:tool/NAME@VERSION` with a name the package does not have.
    Unknown,
    /// One of the [`wasi_capabilities`] (`wasi:http/outgoing-handler@…`).
    Wasi(&'static Interface),
    /// Not `toolhost:tool` at all (WASI, or something else).
    Foreign,
}

/// Classify an import name, such as `toolhost:tool/fs-read@0.2.0`.
pub fn classify(import: &str) -> Import<'_> {
    let Some(rest) = import.strip_prefix("toolhost:tool/") else {
        return match wasi_capabilities().find(|(p, _)| import.starts_with(p)) {
            Some((_, interface)) => Import::Wasi(interface),
            None => Import::Foreign,
        };
    };
    let (name, version) = rest.split_once('@').unwrap_or((rest, ""));
    if !super::CONTRACTS.iter().any(|c| c.version == version) {
        return Import::OtherVersion { version };
    }
    match interfaces().find(|i| i.name == name && in_version(name, version)) {
        Some(interface) => Import::Known { interface, version },
        None => Import::Unknown,
    }
}

/// The `toolhost.toml` line that grants the extension `ext` the capability
/// `capability` (an Operations interface, `http`, or `hooks`).
pub fn grant_line(ext: &str, capability: &str) -> String {
    format!("[extensions.{ext}] {}", capability_line(capability))
}

/// The `key = value` line of a grant table (`[extensions.NAME]` in
/// `toolhost.toml`, `[capabilities]` in `extension.toml`) that grants
/// `capability`.
pub fn capability_line(capability: &str) -> String {
    let value = self::capability(capability)
        .and_then(|i| i.grant_value())
        .unwrap_or("true");
    format!("{capability} = {value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the package agree: every interface the WIT package
    /// defines has a row, and every row is in the package.
    #[test]
    fn the_table_lists_exactly_the_packages_interfaces() {
        let wit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        for (file, version) in [
            (wit.join("tool.wit"), "0.4.0"),
            (wit.join("v0.3/tool.wit"), "0.3.0"),
            (wit.join("v0.2/tool.wit"), "0.2.0"),
            (wit.join("v0.1/tool.wit"), "0.1.0"),
        ] {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut declared: Vec<String> = text
                .lines()
                .filter_map(|line| line.trim().strip_prefix("interface "))
                .map(|rest| rest.trim_end_matches(" {").trim().to_string())
                // The exports are not imports.
                .filter(|n| n != "tool" && n != "hook")
                .collect();
            declared.sort();
            let mut listed: Vec<String> = interfaces()
                .filter(|i| in_version(i.name, version))
                .map(|i| i.name.to_string())
                .collect();
            listed.sort();
            assert_eq!(declared, listed, "{}", file.display());
        }
    }

    #[test]
    fn import_names_are_classified() {
        // Each interface from the version that added it on, and unknown before.
        for (name, before, since) in [
            ("client", "0.2.0", "0.3.0"),
            ("host-info", "0.3.0", "0.4.0"),
        ] {
            let known = |version| match classify(&format!("toolhost:tool/{name}@{version}")) {
                Import::Known { interface, .. } => interface.name == name,
                _ => false,
            };
            assert!(!known(before) && known(since), "{name}");
        }
        for version in ["0.1.0", "0.2.0", "0.3.0", "0.4.0"] {
            let name = format!("toolhost:tool/fs-read@{version}");
            assert!(matches!(
                classify(&name),
                Import::Known { interface, version: v } if interface.name == "fs-read" && v == version
            ));
        }
        assert!(matches!(
            classify("toolhost:tool/fs-read@0.5.0"),
            Import::OtherVersion { version: "0.5.0" }
        ));
        assert!(matches!(
            classify("toolhost:tool/net@0.1.0"),
            Import::Unknown
        ));
        assert!(matches!(classify("wasi:cli/stdin@0.2.0"), Import::Foreign));
        for http in ["wasi:http/outgoing-handler@0.2.0", "wasi:http/types@0.2.12"] {
            assert!(
                matches!(classify(http), Import::Wasi(i) if i.name == "http"),
                "{http}"
            );
        }
        assert!(matches!(
            classify("wasi:httpx/types@0.2.0"),
            Import::Foreign
        ));
    }

    #[test]
    fn only_operations_are_capabilities() {
        let none = Capabilities::default();
        for i in interfaces().chain(wasi_capabilities().map(|(_, i)| i)) {
            assert_eq!(i.is_capability(), !i.granted(&none), "{}", i.name);
            assert_eq!(i.is_capability(), i.grant_value().is_some(), "{}", i.name);
        }
    }
}

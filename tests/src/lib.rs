//! Paths of the test guest components, built by this crate's build script.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

/// The fixtures directory (spec cases and test data).
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

/// Where `guest-tools/examples/build.sh` puts the example extensions.
pub const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/examples");

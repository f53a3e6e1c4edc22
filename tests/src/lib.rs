//! Paths of the test guest components, built by this crate's build script.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

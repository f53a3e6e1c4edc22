//! Builds the test guests (`tests/guests/`) once and exposes their paths as
//! constants (`toolhost_tests::TESTKIT`, …).

use std::path::PathBuf;
use std::{env, fs};

/// (constant name, guest crate).
const GUESTS: &[(&str, &str)] = &[
    ("TESTKIT", "testkit"),
    ("FSPROBE", "fsprobe"),
    ("TOOLSET", "toolset"),
    ("CALLER", "caller"),
    ("HOOKKIT", "hookkit"),
    ("RUNPROBE", "runprobe"),
    ("SEARCHPROBE", "searchprobe"),
    ("BENCHTOOL", "benchtool"),
    ("HOSTILE", "hostile"),
    ("MCPTOOLS", "mcptools"),
    ("OLDCONTRACT", "oldcontract"),
];

fn main() {
    let repo = guest_build::repo("..");
    // The test guests are built on the SDK.
    println!(
        "cargo:rerun-if-changed={}",
        repo.join("guest-tools/sdk").display()
    );
    let wasm = guest_build::build_named(&repo.join("tests/guests"), GUESTS, "test-guests");
    let mut code = String::new();
    for ((name, krate), path) in GUESTS.iter().zip(&wasm) {
        code.push_str(&format!(
            "/// The `{krate}` test guest component.\npub const {name}: &str = {:?};\n",
            path.display().to_string()
        ));
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("guests.rs");
    fs::write(out, code).unwrap();
}

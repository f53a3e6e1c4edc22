//! Builds the built-in tool components (the `guest-tools/` workspace) and
//! embeds them: `$OUT_DIR/builtins.rs` defines one `BuiltinComponent` per tool
//! with its bytes and content hash, so the `toolhost` binary is one
//! self-contained file, and compiles each to machine code with the engine's
//! settings (`src/engine_config.rs`), so a fresh machine's first start
//! compiles nothing. Also builds the process jail's init
//! (`host/jail-init`) for the target, embedded as `$OUT_DIR/jail-init`.

use guest_build::NativeProgram;

#[path = "src/engine_config.rs"]
mod engine_config;
use std::path::PathBuf;
use std::{env, fs};

/// Built-in components: (name, guest crate). `bash` also provides `powershell`.
const BUILTINS: &[(&str, &str)] = &[
    ("read", "toolhost-tool-read"),
    ("ls", "toolhost-tool-ls"),
    ("write", "toolhost-tool-write"),
    ("edit", "toolhost-tool-edit"),
    ("bash", "toolhost-tool-bash"),
    ("grep", "toolhost-tool-grep"),
    ("find", "toolhost-tool-find"),
    ("processes", "toolhost-tool-processes"),
];

fn main() {
    let repo = guest_build::repo("../..");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let wasm = guest_build::build_named(&repo.join("guest-tools"), BUILTINS, "guest-tools");

    let engine = wasmtime::Engine::new(&engine_config::compile_config())
        .unwrap_or_else(|e| panic!("creating the engine that precompiles the built-ins: {e}"));
    let mut code = String::from("/// The built-in tool components, embedded at build time.\n");
    code.push_str("pub(crate) const BUILTIN_COMPONENTS: &[BuiltinComponent] = &[\n");
    for ((tool, _), path) in BUILTINS.iter().zip(&wasm) {
        let bytes = fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let hash = blake3::hash(&bytes).to_hex();
        let copy = out_dir.join(format!("{tool}.wasm"));
        fs::write(&copy, &bytes).unwrap();
        let machine_code = engine
            .precompile_component(&bytes)
            .unwrap_or_else(|e| panic!("compiling the built-in {tool}: {e}"));
        let compiled = out_dir.join(format!("{tool}.cwasm"));
        fs::write(&compiled, machine_code).unwrap();
        // Its grants, as an extension's manifest: `extension.toml` beside
        // its Cargo.toml.
        let dir = repo.join("guest-tools").join(tool);
        let manifest = dir.join("extension.toml");
        println!("cargo:rerun-if-changed={}", manifest.display());
        let manifest = manifest
            .canonicalize()
            .unwrap_or_else(|e| panic!("the built-in {tool} has no {}: {e}", manifest.display()));
        code.push_str(&format!(
            "    BuiltinComponent {{ name: {tool:?}, bytes: include_bytes!({copy:?}), \
             precompiled: &PageAligned(*include_bytes!({compiled:?})), hash: {hash:?}, \
             manifest: include_str!({manifest:?}) }},\n",
            hash = hash.as_str(),
        ));
    }
    code.push_str("];\n");
    fs::write(out_dir.join("builtins.rs"), code).unwrap();

    let init = NativeProgram {
        dir: &repo.join("host/jail-init"),
        package: "toolhost-jail-init",
    }
    .build();
    fs::copy(&init, out_dir.join("jail-init"))
        .unwrap_or_else(|e| panic!("copying {}: {e}", init.display()));
}

//! Compile a cargo workspace of guest components (`wasm32-wasip2`) from a
//! build script: one nested `cargo build` with its own target directory, the
//! host's compiler flags kept out, rerun triggers on the sources, and a clear
//! message when the wasm target is not installed. [`NativeProgram`] builds a
//! small native program the same way (the process jail's init).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

/// The target every guest is built for; its output is already a component.
pub const WASM_TARGET: &str = "wasm32-wasip2";

/// A guest workspace to build.
pub struct GuestWorkspace<'a> {
    /// Directory holding the workspace's `Cargo.toml`.
    pub dir: &'a Path,
    /// Packages to build (`-p`), each a `cdylib`.
    pub packages: &'a [&'a str],
    /// Name of the subdirectory of the shared guest target directory.
    pub target_name: &'a str,
}

impl GuestWorkspace<'_> {
    /// Build the packages in release mode and return each package's `.wasm`
    /// path, in the order given. Panics (failing the build script) with the
    /// cause when the build fails.
    pub fn build(&self) -> Vec<PathBuf> {
        self.watch();
        ensure_wasm_target();
        let target_dir =
            guest_target_dir().join(format!("{}-{}", self.target_name, checkout_tag(self.dir)));
        cargo_build(self.dir, WASM_TARGET, &target_dir, self.packages);
        self.packages
            .iter()
            .map(|p| {
                target_dir
                    .join(WASM_TARGET)
                    .join("release")
                    .join(format!("{}.wasm", p.replace('-', "_")))
            })
            .collect()
    }

    /// Rerun the build script when the workspace's sources or the WIT change
    /// (its own `target/` excluded, so a manual build there changes nothing;
    /// `examples/` too: they are not members, and their builds fill it with
    /// toolchains and outputs).
    fn watch(&self) {
        println!(
            "cargo:rerun-if-changed={}",
            self.dir.join("Cargo.toml").display()
        );
        println!(
            "cargo:rerun-if-changed={}",
            self.dir.join("Cargo.lock").display()
        );
        // The guests' target and linker flags.
        println!(
            "cargo:rerun-if-changed={}",
            self.dir.join(".cargo/config.toml").display()
        );
        for entry in fs::read_dir(self.dir)
            .expect("reading the guest workspace")
            .flatten()
        {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if entry.path().is_dir()
                && !name.starts_with('.')
                && name != "target"
                && name != "examples"
            {
                println!("cargo:rerun-if-changed={}", entry.path().display());
            }
        }
    }
}

/// A native program of its own cargo workspace, built for the target the
/// build script builds for (so cross builds embed the right one).
pub struct NativeProgram<'a> {
    /// Directory holding the program's `Cargo.toml` (its own workspace).
    pub dir: &'a Path,
    /// The package, whose binary has the same name.
    pub package: &'a str,
}

impl NativeProgram<'_> {
    /// Build the program in release mode; its executable's path.
    pub fn build(&self) -> PathBuf {
        for file in ["Cargo.toml", "Cargo.lock", "src"] {
            println!("cargo:rerun-if-changed={}", self.dir.join(file).display());
        }
        let target = env::var("TARGET").expect("run from a build script");
        let target_dir =
            guest_target_dir().join(format!("{}-{}", self.package, checkout_tag(self.dir)));
        cargo_build(self.dir, &target, &target_dir, &[self.package]);
        target_dir.join(&target).join("release").join(self.package)
    }
}

/// One nested `cargo build --release` of `packages` in the workspace `dir`.
fn cargo_build(dir: &Path, target: &str, target_dir: &Path, packages: &[&str]) {
    let mut cargo = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(dir)
        .args(["build", "--release", "--target", target])
        .arg("--target-dir")
        .arg(target_dir);
    for package in packages {
        cargo.args(["-p", package]);
    }
    // The host's flags (coverage, sanitizers, native CPU) must not leak
    // into the nested build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        cargo.env_remove(var);
    }
    let status = cargo.status().expect("failed to run cargo");
    assert!(
        status.success(),
        "building {} failed (see the errors above)",
        dir.display()
    );
}

/// The repository root, `up` above the building package's directory
/// (`"../.."`), with what every guest build reads from it watched.
pub fn repo(up: &str) -> PathBuf {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("run by cargo"));
    let repo = manifest_dir.join(up);
    let repo = repo
        .canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", repo.display()));
    watch_shared(&repo);
    repo
}

/// The `.wasm` of each `(name, package)` of `guests`, built in the
/// workspace `dir` (see [`GuestWorkspace`]), in their order.
pub fn build_named(dir: &Path, guests: &[(&str, &str)], target_name: &str) -> Vec<PathBuf> {
    let packages: Vec<&str> = guests.iter().map(|(_, package)| *package).collect();
    GuestWorkspace {
        dir,
        packages: &packages,
        target_name,
    }
    .build()
}

/// What every guest build reads from outside its own workspace: the WIT
/// package and the `pi-compat` crate (the SDK builds it into every guest).
pub fn watch_shared(repo: &Path) {
    println!("cargo:rerun-if-changed={}", repo.join("wit").display());
    println!(
        "cargo:rerun-if-changed={}",
        repo.join("pi-compat").display()
    );
}

/// Guests get their own target directory beside the host's, shared by every
/// host profile, so switching between debug and release does not rebuild them.
fn guest_target_dir() -> PathBuf {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("run from a build script"));
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let host_target = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| out_dir.ancestors().nth(4).map(Path::to_path_buf))
        .expect("locating the target directory");
    host_target.join("wasm-guests")
}

/// A short tag naming the checkout a guest workspace lives in. Checkouts
/// (git worktrees, say) that share one `CARGO_TARGET_DIR` would otherwise
/// share one guest target directory, where cargo keeps one `.wasm` per
/// package name: whichever checkout built last would have its components
/// embedded by the others.
fn checkout_tag(dir: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    // SipHash with fixed keys: the same path gives the same tag every build.
    let mut hasher = std::hash::DefaultHasher::new();
    dir.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// Fail early, with the fix, when the wasm target's standard library is missing.
fn ensure_wasm_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", WASM_TARGET])
        .output()
        .expect("failed to run rustc");
    let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let installed = out.status.success()
        && fs::read_dir(&libdir).is_ok_and(|mut d| {
            d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libstd-")))
        });
    assert!(
        installed,
        "the Rust target {WASM_TARGET} is not installed; toolhost's tools are WebAssembly \
         components built for it. Install it with: rustup target add {WASM_TARGET}"
    );
}

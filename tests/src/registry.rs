//! The OCI distribution reference registry (Debian's `docker-registry`,
//! installed by `scripts/setup`) on a loopback port, its storage in a
//! temporary directory: what the registry tests and the benchmark push to
//! and pull from.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running registry; stopped when dropped.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its configuration and storage (`data/`).
    pub dir: tempfile::TempDir,
}

impl Registry {
    /// Start one on a free loopback port and wait until it listens; the
    /// error says why it could not (and how to install it).
    pub fn start() -> Result<Registry, String> {
        let binary = "docker-registry";
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                 http:\n  addr: {addr}\n  secret: test-only\n",
                dir.path().join("data").display()
            ),
        )
        .map_err(|e| e.to_string())?;
        let mut child = Command::new(binary)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {binary} ({e}): install it with scripts/setup"))?;
        // Ready when its log says it listens; the log is read to its end
        // (its requests' lines) so that it never blocks on a full pipe.
        let log = child.stderr.take().expect("piped");
        let (ready, listening) = std::sync::mpsc::channel();
        let wanted = format!("listening on {addr}");
        std::thread::spawn(move || {
            let mut ready = Some(ready);
            for line in BufReader::new(log).lines().map_while(Result::ok) {
                if line.contains(&wanted) {
                    ready.take().map(|r| r.send(()));
                }
            }
        });
        let registry = Registry { child, addr, dir };
        match listening.recv_timeout(Duration::from_secs(30)) {
            Ok(()) => Ok(registry),
            Err(_) => Err(format!("the registry on {} never listened", registry.addr)),
        }
    }

    /// `oci://127.0.0.1:PORT/REPO`.
    pub fn oci(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.addr)
    }

    /// The file holding the blob `digest` (`sha256:…`) in its storage.
    pub fn blob(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

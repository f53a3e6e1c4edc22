//! Remote workspaces: the Operations served by a workspace service on
//! another machine (`toolhost workspace serve`, the same binary), reached
//! through a command that runs it with its stdio: OpenSSH's `ssh`, `podman
//! exec -i`, `kubectl exec -i`, or any other ([`Transport`]).
//!
//! The service enforces there what a local host enforces here: its roots,
//! its protected paths, the process jail, network rules. toolhost keeps the
//! pipeline, the components, the grants and the texts; it only sends
//! Operations (`wire`). A backend here ([`RemoteFs`], [`RemoteSearch`], the
//! process spawner) turns each Operation into a request on the
//! [`Connection`], whose replies come back in any order, so the calls of a
//! parallel batch are in flight together.
//!
//! Faults are explicit: a connection that ends fails every request in
//! flight and every later one with an error naming the workspace and why
//! it ended (the service's last words on stderr), and nothing ever falls
//! back to the local disk. Credentials stay on this side: the transport's
//! (SSH keys, agents) are the transport's, and the service's processes get
//! the service's environment, never toolhost's.

mod fs;
mod process;
mod search;
mod transport;
pub mod wire;

pub use fs::RemoteFs;
pub use process::RemoteProcesses;
pub use search::RemoteSearch;
pub use transport::{RemoteToolhost, Runner, Transport};

use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use wire::{Frame, Hello, Message, Op, PROTOCOL, Reply, release};

/// How long the service has to say hello (an SSH login included).
const HELLO_WAIT: Duration = Duration::from_secs(60);
/// How much of what the service writes to stderr is kept for errors.
const STDERR_KEPT: usize = 4096;

/// A reply, or why there is none.
type Answer = Result<(Reply, Vec<u8>), String>;

/// A connection to one workspace service: its process (the transport), and
/// the requests and processes in flight on it. Dropping the last handle
/// ends the transport, and with it the service and everything it runs.
pub struct Connection {
    shown: String,
    hello: Hello,
    input: Mutex<ChildStdin>,
    next_id: AtomicU64,
    shared: Arc<Shared>,
    transport: Mutex<Child>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("workspace", &self.shown)
            .finish()
    }
}

/// What the reader thread and the requesters share.
#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<u64, mpsc::SyncSender<Answer>>>,
    children: Mutex<HashMap<u64, tokio::sync::mpsc::UnboundedSender<Frame>>>,
    /// Why the connection ended, once it has.
    lost: Mutex<Option<String>>,
    stderr: Mutex<Vec<u8>>,
}

impl Connection {
    /// Start `transport`, and greet the service it runs: an error when it
    /// cannot start, does not answer, or speaks another protocol.
    pub fn open(transport: &Transport) -> Result<Arc<Connection>, String> {
        let shown = transport.shown();
        let mut child = transport
            .service()
            .map_err(|e| format!("the remote workspace {shown} cannot be reached: {e}"))?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("the remote workspace {shown} cannot be reached: {e}"))?;
        let (mut input, output, stderr) = (
            child.stdin.take().expect("piped stdin"),
            child.stdout.take().expect("piped stdout"),
            child.stderr.take().expect("piped stderr"),
        );
        let shared = Arc::new(Shared::default());
        keep_stderr(stderr, shared.clone());
        let ours = Hello {
            protocol: PROTOCOL,
            release: release(),
            root: None,
            confinement: Vec::new(),
            temp: None,
            home: None,
        };
        let greeting = Frame::new(Message::Hello(ours.clone())).write_to(&mut input);
        let (hello_tx, hello_rx) = mpsc::sync_channel(1);
        read_frames(output, shared.clone(), hello_tx);
        let mut failed = |why: String| {
            let _ = child.kill();
            let _ = child.wait();
            let said = last_words(&shared);
            format!("the remote workspace {shown} {why}{said}")
        };
        if let Err(e) = greeting {
            return Err(failed(format!("did not take toolhost's greeting: {e}")));
        }
        let theirs = match hello_rx.recv_timeout(HELLO_WAIT) {
            Ok(Ok(hello)) => hello,
            Ok(Err(why)) => return Err(failed(why)),
            Err(_) => {
                return Err(failed(format!(
                    "did not answer within {} seconds",
                    HELLO_WAIT.as_secs()
                )));
            }
        };
        if theirs.protocol != PROTOCOL {
            return Err(failed(format!(
                "speaks the workspace protocol {} ({}), and this toolhost speaks {} ({}): \
                 run the same release on both sides",
                theirs.protocol, theirs.release, PROTOCOL, ours.release
            )));
        }
        if theirs.root.is_none() {
            return Err(failed("did not say which directory it serves".into()));
        }
        Ok(Arc::new(Connection {
            shown,
            hello: theirs,
            input: Mutex::new(input),
            next_id: AtomicU64::new(1),
            shared,
            transport: Mutex::new(child),
        }))
    }

    /// How the workspace is named in messages: `` `ssh host toolhost …` ``.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The workspace's real path on the service's machine.
    pub fn root(&self) -> &str {
        self.hello.root.as_deref().unwrap_or("/")
    }

    /// The service's greeting: its release, root and confinement.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Why the connection ended, if it has.
    pub fn lost(&self) -> Option<String> {
        self.shared.lost.lock().expect("lost lock").clone()
    }

    /// Send `op` (with `body`) and wait for its reply. `cancelled` is asked
    /// now and then while waiting; when it says so, the service is told
    /// and the request ends with `None`.
    pub(crate) fn request(
        &self,
        op: Op,
        body: Vec<u8>,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Answer> {
        let (id, replies) = match self.send_request(op, body) {
            Ok(sent) => sent,
            Err(why) => return Some(Err(why)),
        };
        loop {
            match replies.recv_timeout(Duration::from_millis(20)) {
                Ok(answer) => return Some(answer),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Some(Err(self.gone()));
                }
                Err(mpsc::RecvTimeoutError::Timeout) if cancelled() => {
                    self.shared.pending.lock().expect("pending").remove(&id);
                    let _ = self.send(Frame::new(Message::Cancel { id }));
                    return None;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// Send `op` (with `body`) and wait until its reply comes.
    pub(crate) fn ask(&self, op: Op, body: Vec<u8>) -> Answer {
        let (_, replies) = self.send_request(op, body)?;
        replies.recv().unwrap_or_else(|_| Err(self.gone()))
    }

    /// [`Self::ask`] from async code: the wait is the blocking pool's.
    pub(crate) async fn ask_later(self: &Arc<Self>, op: Op, body: Vec<u8>) -> Answer {
        let connection = self.clone();
        tokio::task::spawn_blocking(move || connection.ask(op, body))
            .await
            .unwrap_or_else(|e| Err(format!("the request was lost: {e}")))
    }

    fn send_request(&self, op: Op, body: Vec<u8>) -> Result<(u64, mpsc::Receiver<Answer>), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        {
            // Registered before it is sent: the reply may come at once.
            let lost = self.shared.lost.lock().expect("lost lock");
            if lost.is_some() {
                drop(lost);
                return Err(self.gone());
            }
            self.shared.pending.lock().expect("pending").insert(id, tx);
        }
        let sent = self.send(Frame::with_body(Message::Request { id, op }, body));
        if let Err(e) = sent {
            self.shared.pending.lock().expect("pending").remove(&id);
            return Err(e);
        }
        Ok((id, rx))
    }

    /// Write `frame` to the service.
    pub(crate) fn send(&self, frame: Frame) -> Result<(), String> {
        let bytes = frame
            .encode()
            .map_err(|e| format!("the remote workspace {}: {e}", self.shown))?;
        let mut input = self.input.lock().expect("input lock");
        input
            .write_all(&bytes)
            .and_then(|()| input.flush())
            .map_err(|e| {
                drop(input);
                lose(&self.shared, format!("writing to it failed: {e}"));
                self.gone()
            })
    }

    /// The error of a request on a connection that ended.
    pub(crate) fn gone(&self) -> String {
        let why = self
            .lost()
            .unwrap_or_else(|| "the connection ended".to_string());
        format!(
            "the remote workspace {} is gone: {why}{}",
            self.shown,
            last_words(&self.shared)
        )
    }

    /// The frames of process `child` from now on, until it exits or the
    /// connection ends (the channel then closes).
    pub(crate) fn watch_child(&self, child: u64) -> tokio::sync::mpsc::UnboundedReceiver<Frame> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.shared
            .children
            .lock()
            .expect("children lock")
            .insert(child, tx);
        rx
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let mut transport = self.transport.lock().expect("transport lock");
        let _ = transport.kill();
        let _ = transport.wait();
    }
}

/// What a reply that does not answer its request says: the service is not
/// one this toolhost can trust to serve it.
fn out_of_turn(reply: &Reply) -> String {
    format!("the workspace service answered out of turn ({reply:?})")
}

/// Mark the connection lost for `why` (the first reason stays), and fail
/// everything waiting on it.
fn lose(shared: &Shared, why: String) {
    let why = shared
        .lost
        .lock()
        .expect("lost lock")
        .get_or_insert(why)
        .clone();
    let pending: Vec<_> = shared.pending.lock().expect("pending").drain().collect();
    for (_, waiting) in pending {
        let _ = waiting.try_send(Err(why.clone()));
    }
    shared.children.lock().expect("children lock").clear();
}

/// What the service last wrote to stderr, as the end of an error: `: …`.
fn last_words(shared: &Shared) -> String {
    // The reader may see the end before the stderr thread has read it all.
    std::thread::sleep(Duration::from_millis(20));
    let said = shared.stderr.lock().expect("stderr lock");
    let text = String::from_utf8_lossy(&said);
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(" (it said: {})", crate::display::escape(text))
    }
}

/// Keep the last [`STDERR_KEPT`] bytes the service writes to stderr.
fn keep_stderr(mut stderr: impl Read + Send + 'static, shared: Arc<Shared>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut kept = shared.stderr.lock().expect("stderr lock");
            kept.extend_from_slice(&buf[..n]);
            let excess = kept.len().saturating_sub(STDERR_KEPT);
            kept.drain(..excess);
        }
    });
}

/// Read the service's frames until the connection ends: the first is its
/// hello (to `hello`), then each reply goes to its request and each
/// process event to its process.
fn read_frames(
    mut output: impl Read + Send + 'static,
    shared: Arc<Shared>,
    hello: mpsc::SyncSender<Result<Hello, String>>,
) {
    std::thread::spawn(move || {
        let mut output = std::io::BufReader::with_capacity(1 << 16, &mut output);
        let first = match Frame::read_from(&mut output) {
            Ok(Some(Frame {
                message: Message::Hello(theirs),
                ..
            })) => Ok(theirs),
            Ok(Some(other)) => Err(format!(
                "answered with {:?} where a hello was due",
                other.message
            )),
            Ok(None) => Err("ended before it said hello".to_string()),
            Err(e) => Err(format!("said something that is not the protocol: {e}")),
        };
        let greeted = first.is_ok();
        let _ = hello.send(first);
        if !greeted {
            return;
        }
        let why = loop {
            match Frame::read_from(&mut output) {
                Ok(Some(frame)) => route(&shared, frame),
                Ok(None) => break "the connection ended".to_string(),
                Err(e) => break format!("reading from it failed: {e}"),
            }
        };
        lose(&shared, why);
    });
}

/// Hand `frame` to whoever waits for it.
fn route(shared: &Shared, frame: Frame) {
    match frame.message {
        Message::Reply { id, reply } => {
            let waiting = shared.pending.lock().expect("pending").remove(&id);
            if let Some(waiting) = waiting {
                let _ = waiting.try_send(Ok((reply, frame.body)));
            }
        }
        Message::Child { child, ref event } => {
            let exited = matches!(event, wire::ChildMsg::Exit { .. });
            let mut children = shared.children.lock().expect("children lock");
            if let Some(events) = children.get(&child) {
                let _ = events.send(frame);
            }
            if exited {
                children.remove(&child);
            }
        }
        // Nothing else comes from a service; a service that sends it is
        // ignored rather than trusted.
        _ => {}
    }
}

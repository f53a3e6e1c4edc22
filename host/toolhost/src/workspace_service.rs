//! `toolhost workspace serve DIR`: the far end of a remote workspace. It
//! answers toolhost's Operations (`crate::ops::remote::wire`) on its stdin
//! and stdout, with the backends a local host would give its built-ins on
//! this machine: the same roots (`DIR`), the same protected paths, the same
//! process jail, Landlock, seccomp, limits and network rules
//! ([`HostBuilder::served_workspace`]). A tool's grant as toolhost sends it
//! narrows what a process gets; nothing toolhost sends widens it.
//!
//! Each request runs on its own (a slow search never holds up a read), its
//! reply goes back when it is ready; a process's output goes back as it
//! comes, at most `WINDOW` events ahead of what toolhost has taken. When
//! the connection ends, every process the service started is stopped.

use crate::error::Error;
use crate::host::{HostBuilder, ServedWorkspace};
use crate::ops::fs::{ErrorCode, FsError, fs_error};
use crate::ops::process::session::settle;
use crate::ops::process::{
    Child, ChildEvent, Input, InputEnd, ProcessErrorCode, Undone, error as process_error,
};
use crate::ops::protect::guard::Writer;
use crate::ops::remote::wire::{
    ChildMsg, Frame, Hello, Message, Op, PROTOCOL, Reply, WINDOW, release,
};
use crate::ops::search::{Query, StopFlag};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// A process the service runs for toolhost.
struct Running {
    stop: CancellationToken,
    window: Arc<Semaphore>,
    /// Its input, unless it reads nothing (or toolhost closed it).
    input: Arc<tokio::sync::Mutex<Option<InputEnd>>>,
}

/// What the service shares among the requests it runs.
struct Service {
    served: ServedWorkspace,
    replies: mpsc::UnboundedSender<Frame>,
    /// Searches running, by request id, to stop on `cancel`.
    searches: Mutex<HashMap<u64, StopFlag>>,
    /// Processes running: how to stop each, its window, and its input.
    children: Mutex<HashMap<u64, Running>>,
    /// What every process of the connection is tracked by.
    spawned: crate::ops::process::Spawned,
    /// Ends every process when the connection ends.
    closing: CancellationToken,
}

/// Serve the workspace `builder` describes on `input` and `output` until
/// toolhost hangs up. It refuses to serve (an error before any frame) when
/// it cannot confine processes as `builder` requires.
pub async fn serve_workspace(
    builder: HostBuilder,
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<(), Error> {
    let served = builder.served_workspace()?;
    let (replies, outgoing) = mpsc::unbounded_channel::<Frame>();
    let writer = write_frames(output, outgoing);
    let (frames_tx, mut frames) = mpsc::channel::<Result<Frame, String>>(64);
    read_frames(input, frames_tx);
    let theirs = match frames.recv().await {
        Some(Ok(Frame {
            message: Message::Hello(hello),
            ..
        })) => hello,
        Some(Ok(other)) => {
            return Err(Error::runtime(format!(
                "toolhost sent {:?} where its hello was due",
                other.message
            )));
        }
        Some(Err(why)) => return Err(Error::runtime(why)),
        None => return Ok(()),
    };
    let ours = Hello {
        protocol: PROTOCOL,
        release: release(),
        root: Some(served.root.display().to_string()),
        confinement: served.confinement.clone(),
        temp: Some(served.temp_dir.display().to_string()),
        home: served.home.clone(),
    };
    let _ = replies.send(Frame::new(Message::Hello(ours)));
    if theirs.protocol != PROTOCOL {
        // Said after the hello, so that toolhost names both versions.
        drop(replies);
        let _ = writer.await;
        return Err(Error::runtime(format!(
            "toolhost speaks the workspace protocol {} ({}), this service {}: run the same \
             release on both sides",
            theirs.protocol, theirs.release, PROTOCOL
        )));
    }
    let service = Arc::new(Service {
        served,
        replies,
        searches: Mutex::default(),
        children: Mutex::default(),
        spawned: Default::default(),
        closing: CancellationToken::new(),
    });
    while let Some(frame) = frames.recv().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(why) => {
                eprintln!("toolhost workspace serve: {why}");
                break;
            }
        };
        service.clone().take(frame);
    }
    service.closing.cancel();
    // The writer ends once every task holding the service (a process's
    // relay sending its last events) is done with it; not past 3 s.
    drop(service);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), writer).await;
    Ok(())
}

impl Service {
    /// Act on one frame from toolhost.
    fn take(self: Arc<Self>, frame: Frame) {
        match frame.message {
            Message::Request { id, op } => {
                tokio::spawn(async move {
                    let (reply, body) = self.clone().run(id, op, frame.body).await;
                    let message = Message::Reply { id, reply };
                    let _ = self.replies.send(Frame::with_body(message, body));
                });
            }
            Message::Cancel { id } => {
                if let Some(stop) = self.searches.lock().expect("searches").get(&id) {
                    stop.raise();
                }
            }
            Message::Ack { child } => {
                if let Some(running) = self.children.lock().expect("children").get(&child) {
                    running.window.add_permits(1);
                }
            }
            Message::Kill { child } => {
                if let Some(running) = self.children.lock().expect("children").get(&child) {
                    running.stop.cancel();
                }
            }
            Message::CloseStdin { child } => {
                let input = self.input_of(child);
                if let Some(input) = input {
                    tokio::spawn(async move { input.lock().await.take() });
                }
            }
            // toolhost says hello once and never replies.
            _ => {}
        }
    }

    /// Run `op`; its reply and the reply's body.
    async fn run(self: Arc<Self>, id: u64, op: Op, body: Vec<u8>) -> (Reply, Vec<u8>) {
        match op {
            Op::Spawn {
                child,
                command,
                input,
                grant,
            } => (self.spawn(child, command, input, grant).await, Vec::new()),
            Op::Stdin { child } => (self.write_input(child, &body).await, Vec::new()),
            Op::Search { query } => (self.search(id, query).await, Vec::new()),
            file_op => {
                let (read, write) = (self.served.fs_read.clone(), self.served.fs_write.clone());
                let r = blocking(move || file(read.as_ref(), write.as_ref(), file_op, &body)).await;
                match r.unwrap_or_else(|why| Err(fs_error(ErrorCode::Other, why))) {
                    Ok(answer) => answer,
                    Err(error) => (Reply::FsError { error }, Vec::new()),
                }
            }
        }
    }

    /// `query` on the served search, on the blocking pool, stopped when
    /// toolhost cancels request `id`.
    async fn search(&self, id: u64, query: Query) -> Reply {
        let stop = StopFlag::new();
        self.searches
            .lock()
            .expect("searches")
            .insert(id, stop.clone());
        let search = self.served.search.clone();
        let r = blocking(move || query.run(search.as_ref(), &stop)).await;
        self.searches.lock().expect("searches").remove(&id);
        match r {
            Ok(Ok(found)) => Reply::Found { found },
            Ok(Err(error)) => Reply::SearchError { error },
            Err(why) => Reply::FsError {
                error: fs_error(ErrorCode::Other, why),
            },
        }
    }

    /// Start `command` reading `input` under the served policy narrowed to
    /// `grant`, as process `child`, and relay its events.
    /// The git guard surveys the roots first (what it finds is read-only to
    /// the process) and settles what the process changed once it ends.
    async fn spawn(
        self: Arc<Self>,
        child: u64,
        command: crate::ops::process::Command,
        input: Input,
        grant: crate::ops::process::ProcessGrant,
    ) -> Reply {
        let guard = self.served.guard.clone();
        let writer = match tokio::task::spawn_blocking(move || guard.writer()).await {
            Ok(writer) => writer,
            Err(e) => {
                return Reply::FsError {
                    error: fs_error(ErrorCode::Other, e.to_string()),
                };
            }
        };
        let policy = self.served.process_for(&grant);
        let stop = self.closing.child_token();
        let usage = crate::ops::usage::Usage::default();
        match policy.spawn_with_input(command, input, stop.clone(), &self.spawned, &usage) {
            Ok((running, input)) => {
                let window = Arc::new(Semaphore::new(WINDOW));
                let entry = Running {
                    stop,
                    window: window.clone(),
                    input: Arc::new(tokio::sync::Mutex::new(input)),
                };
                self.children.lock().expect("children").insert(child, entry);
                tokio::spawn(self.relay(child, running, window, writer));
                Reply::Spawned { child }
            }
            Err(error) => Reply::ProcessError { error },
        }
    }

    fn input_of(&self, child: u64) -> Option<Arc<tokio::sync::Mutex<Option<InputEnd>>>> {
        let children = self.children.lock().expect("children");
        children.get(&child).map(|running| running.input.clone())
    }

    /// Write `bytes` to process `child`'s input.
    async fn write_input(&self, child: u64, bytes: &[u8]) -> Reply {
        let refused = |message: String| Reply::ProcessError {
            error: process_error(ProcessErrorCode::Other, message),
        };
        let Some(input) = self.input_of(child) else {
            return refused(format!("process {child} is not running"));
        };
        let input = input.lock().await;
        let Some(input) = input.as_ref() else {
            return refused(format!("process {child} reads no input"));
        };
        match input.write_all(bytes).await {
            Ok(()) => Reply::Done,
            Err(e) => refused(format!("writing to process {child}: {e}")),
        }
    }

    /// Send process `child`'s events to toolhost, at most `WINDOW` ahead of
    /// what it acknowledged.
    async fn relay(
        self: Arc<Self>,
        child: u64,
        mut running: Child,
        window: Arc<Semaphore>,
        writer: Writer,
    ) {
        let mut writer = Some(writer);
        loop {
            let frame = match running.next().await {
                ChildEvent::Output(bytes) => {
                    let message = Message::Child {
                        child,
                        event: ChildMsg::Output,
                    };
                    Frame::with_body(message, bytes)
                }
                ChildEvent::Exit(status) => {
                    let undone = settled(writer.take()).await;
                    let message = Message::Child {
                        child,
                        event: ChildMsg::Exit { status, undone },
                    };
                    let _ = self.replies.send(Frame::new(message));
                    break;
                }
            };
            // One of the window's places, given back by toolhost's ack;
            // when the connection closes, the process is being stopped.
            tokio::select! {
                permit = window.acquire() => match permit {
                    Ok(permit) => permit.forget(),
                    Err(_) => break,
                },
                () = self.closing.cancelled() => {}
            }
            if self.replies.send(frame).is_err() {
                break;
            }
        }
        self.children.lock().expect("children").remove(&child);
        // Relayed no further (the connection ended): what it changed until
        // now is settled all the same.
        settled(writer).await;
    }
}

/// Settle what a process changed (its `writer`, unless settled already):
/// what the git guard put back, said on stderr too.
async fn settled(writer: Option<Writer>) -> Vec<Undone> {
    let Some(writer) = writer else {
        return Vec::new();
    };
    let reverted = settle(writer).await;
    let undone = reverted.iter().map(|r| Undone {
        path: r.path.display().to_string(),
        sentence: r.sentence(),
    });
    let undone: Vec<Undone> = undone.collect();
    for u in &undone {
        eprintln!("toolhost workspace serve: {}", u.sentence);
    }
    undone
}

/// A file Operation on the served backends: its reply, and the bytes read
/// as its body.
fn file(
    read: &dyn crate::ops::fs::FsRead,
    write: &dyn crate::ops::fs::FsWrite,
    op: Op,
    body: &[u8],
) -> Result<(Reply, Vec<u8>), FsError> {
    let reply = match op {
        Op::Read {
            path,
            offset,
            max,
            unlinked,
        } => {
            let bytes = if unlinked {
                read.read_unlinked(&path, offset, max)?
            } else {
                read.read(&path, offset, max)?
            };
            return Ok((Reply::Bytes, bytes));
        }
        Op::Stat { path } => Reply::Metadata {
            metadata: read.stat(&path)?,
        },
        Op::ListDir { path, unlinked } => Reply::Entries {
            entries: if unlinked {
                read.list_dir_unlinked(&path)?
            } else {
                read.list_dir(&path)?
            },
        },
        Op::Write { path } => {
            write.write_file(&path, body)?;
            Reply::Done
        }
        Op::Append { path } => {
            write.append_file(&path, body)?;
            Reply::Done
        }
        Op::CreateDirAll { path } => {
            write.create_dir_all(&path)?;
            Reply::Done
        }
        Op::Access { path } => {
            write.access(&path)?;
            Reply::Done
        }
        Op::LockKey { path } => Reply::Key {
            key: write.lock_key(&path)?,
        },
        op => {
            let message = format!("{op:?} is not a file operation");
            return Err(fs_error(ErrorCode::Other, message));
        }
    };
    Ok((reply, Vec::new()))
}

/// `f` on the blocking pool; why it was lost, if it was.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("the operation was lost: {e}"))
}

/// Read frames from `input` on a thread of their own, until it ends or
/// says something that is not the protocol (that reason, then the end).
fn read_frames(input: impl Read + Send + 'static, frames: mpsc::Sender<Result<Frame, String>>) {
    std::thread::spawn(move || {
        let mut input = std::io::BufReader::with_capacity(1 << 16, input);
        loop {
            match Frame::read_from(&mut input) {
                Ok(Some(frame)) => {
                    if frames.blocking_send(Ok(frame)).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = frames.blocking_send(Err(format!("toolhost's input: {e}")));
                    return;
                }
            }
        }
    });
}

/// Write the frames of `outgoing` to `output` on a thread of their own.
fn write_frames(
    mut output: impl Write + Send + 'static,
    mut outgoing: mpsc::UnboundedReceiver<Frame>,
) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        while let Some(frame) = outgoing.blocking_recv() {
            if frame.write_to(&mut output).is_err() {
                return;
            }
        }
    })
}

//! Processes of a remote workspace: started by its service, under its
//! confinement and the tool's grant; their output streams back under the
//! process's id, acknowledged as the tool takes it. Killing the child, or
//! cancelling the call, stops the process group there; a connection that
//! ends ends the child here with a line saying so.

use super::Connection;
use super::wire::{ChildMsg, Frame, Message, Op, Reply};
use crate::ops::process::{
    ChildEvent, ChildFeed, ExitStatus, Held, Input, InputEnd, ProcessError,
    ProcessErrorCode::Other, RemoteInput, RemoteRequest, RemoteSpawn, Started, error,
};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// Starts the processes of a remote workspace through its service.
#[derive(Debug)]
pub struct RemoteProcesses {
    connection: Arc<Connection>,
    next_child: AtomicU64,
}

impl RemoteProcesses {
    pub fn new(connection: Arc<Connection>) -> RemoteProcesses {
        RemoteProcesses {
            connection,
            next_child: AtomicU64::new(1),
        }
    }
}

impl RemoteSpawn for RemoteProcesses {
    fn spawn(&self, request: RemoteRequest) -> BoxFuture<'_, Result<Started, ProcessError>> {
        let RemoteRequest {
            command,
            input,
            grant,
            cancel,
            hold,
        } = request;
        Box::pin(async move {
            // The id is toolhost's, so that the process's first output, which
            // may come before the reply, already has somewhere to go.
            let child = self.next_child.fetch_add(1, Ordering::Relaxed);
            let frames = self.connection.watch_child(child);
            let op = Op::Spawn {
                child,
                command,
                input,
                grant,
            };
            match self.connection.ask_later(op, Vec::new()).await {
                Ok((Reply::Spawned { child: started }, _)) if started == child => {}
                Ok((Reply::ProcessError { error }, _)) => return Err(error),
                Ok((reply, _)) => return Err(error(Other, super::out_of_turn(&reply))),
                Err(why) => return Err(error(Other, why)),
            }
            let (feed, handle) = ChildFeed::new();
            let writes = (input != Input::Null).then(|| {
                let stdin = Box::new(RemoteStdin {
                    connection: self.connection.clone(),
                    child,
                });
                InputEnd::elsewhere(stdin, matches!(input, Input::Terminal { .. }))
            });
            let connection = self.connection.clone();
            tokio::spawn(relay(connection, child, frames, feed, cancel, hold));
            Ok((handle, writes))
        })
    }
}

/// The input of process `child` there: each write a request, done once
/// the service has written it all; dropped, the input is closed there.
#[derive(Debug)]
struct RemoteStdin {
    connection: Arc<Connection>,
    child: u64,
}

impl RemoteInput for RemoteStdin {
    fn write<'a>(&'a self, bytes: &'a [u8]) -> BoxFuture<'a, std::io::Result<()>> {
        let op = Op::Stdin { child: self.child };
        Box::pin(async move {
            match self.connection.ask_later(op, bytes.to_vec()).await {
                Ok((Reply::Done, _)) => Ok(()),
                Ok((Reply::ProcessError { error }, _)) => Err(std::io::Error::other(error.message)),
                Ok((reply, _)) => Err(std::io::Error::other(super::out_of_turn(&reply))),
                Err(why) => Err(std::io::Error::other(why)),
            }
        })
    }
}

impl Drop for RemoteStdin {
    fn drop(&mut self) {
        let child = self.child;
        let _ = self
            .connection
            .send(Frame::new(Message::CloseStdin { child }));
    }
}

/// Hand process `child`'s events to `feed` until it exits, acknowledging
/// each; stop it there when the child here is killed or dropped, or the
/// call is cancelled. `hold` is released when it is gone.
async fn relay(
    connection: Arc<Connection>,
    child: u64,
    mut frames: tokio::sync::mpsc::UnboundedReceiver<Frame>,
    feed: ChildFeed,
    cancel: CancellationToken,
    hold: Held,
) {
    let mut stopped = false;
    loop {
        // Killed or dropped here, or the call cancelled: stopped there.
        let stop = async {
            tokio::select! {
                () = feed.stop_requested() => {}
                () = cancel.cancelled() => {}
            }
        };
        let frame = tokio::select! {
            frame = frames.recv() => frame,
            () = stop, if !stopped => {
                stopped = true;
                let _ = connection.send(Frame::new(Message::Kill { child }));
                continue;
            }
        };
        match frame {
            Some(Frame {
                message:
                    Message::Child {
                        event: ChildMsg::Output,
                        ..
                    },
                body,
            }) => {
                let taken = feed.send(ChildEvent::Output(body)).await;
                let _ = connection.send(Frame::new(Message::Ack { child }));
                if !taken && !stopped {
                    stopped = true;
                    let _ = connection.send(Frame::new(Message::Kill { child }));
                }
            }
            Some(Frame {
                message:
                    Message::Child {
                        event: ChildMsg::Exit { status, undone },
                        ..
                    },
                ..
            }) => {
                hold.undone(undone);
                feed.send(ChildEvent::Exit(status)).await;
                break;
            }
            Some(_) => {}
            None => {
                // The connection ended: the process is gone with the service.
                let why = connection.gone();
                let line = format!("\ntoolhost: {why}\n");
                feed.send(ChildEvent::Output(line.into_bytes())).await;
                feed.send(ChildEvent::Exit(ExitStatus::Cancelled)).await;
                break;
            }
        }
    }
    drop(hold);
}

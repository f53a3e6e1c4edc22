//! The workspace protocol: what toolhost and the workspace service it
//! started (`toolhost workspace serve`) say to each other over the
//! service's stdin and stdout.
//!
//! A frame is a 4-byte big-endian length (of what follows), a 4-byte
//! big-endian header length, the header (one [`Message`] as JSON) and the
//! body (raw bytes: a file's contents, a write's data, a process's output).
//! Keeping bytes out of the JSON keeps them exact and costs no encoding.
//! A frame is at most [`MAX_FRAME`]; a peer that sends a larger one, or
//! one that is not what this version reads, is answered by closing the
//! connection with the reason on stderr (the far end) or in the error of
//! every call in flight (toolhost).
//!
//! The first frame each way is [`Hello`]: toolhost's, then the service's
//! answer with its root and how it confines. Every later request carries
//! an id the reply repeats, so requests from parallel calls are in flight
//! together on one connection and their replies come back in any order.
//! A process started by `spawn` streams [`ChildMsg`]s under its own id;
//! toolhost acknowledges each one it hands on, and the service keeps at
//! most [`WINDOW`] unacknowledged, so a tool that reads slowly slows its
//! process down instead of filling memory on either side.

use crate::ops::fs::{DirEntry, FsError, Metadata};
use crate::ops::process::{Command, ExitStatus, Input, ProcessError, ProcessGrant, Undone};
use crate::ops::search::{Found, Query, SearchError};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// The protocol's version: a service answers only the version it speaks.
pub const PROTOCOL: u32 = 1;
/// toolhost's release, as each side names it in its hello.
pub fn release() -> String {
    format!("toolhost {}", env!("CARGO_PKG_VERSION"))
}

/// The largest frame either side sends or reads: a read of the largest
/// chunk (4 MiB) or an output delivery (1 MiB) with room to spare.
pub const MAX_FRAME: usize = 16 << 20;
/// Most process events in flight, unacknowledged, per process.
pub const WINDOW: usize = 4;

/// What each side says first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Hello {
    /// [`PROTOCOL`].
    pub protocol: u32,
    /// The toolhost release (`toolhost 0.1.0`).
    pub release: String,
    /// The service's: the workspace's real path on its machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The service's: how the processes it starts are confined there, as
    /// `toolhost doctor` reports each layer on its machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confinement: Vec<crate::ops::process::doctor::Layer>,
    /// The service's: the temp directory its processes get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp: Option<String>,
    /// The service's: `$HOME` on its machine (what `~` means to a tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
}

/// One frame's header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case")]
pub enum Message {
    Hello(Hello),
    /// toolhost asks; the body is a write's data.
    Request {
        id: u64,
        op: Op,
    },
    /// The service answers request `id`; the body is a read's bytes.
    Reply {
        id: u64,
        reply: Reply,
    },
    /// toolhost no longer waits for request `id` (a search it cancelled).
    Cancel {
        id: u64,
    },
    /// What process `child` did; the body is its output.
    Child {
        child: u64,
        event: ChildMsg,
    },
    /// toolhost handed on one event of process `child`.
    Ack {
        child: u64,
    },
    /// Stop process `child` (its whole group, as a local one is stopped).
    Kill {
        child: u64,
    },
    /// Close process `child`'s input (a pipe's reader then sees its end).
    CloseStdin {
        child: u64,
    },
}

/// An Operation, as toolhost asks it of the service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Op {
    Stat {
        path: String,
    },
    Read {
        path: String,
        offset: u64,
        max: u64,
        /// No symbolic link anywhere on the way (`FsRead::read_unlinked`).
        unlinked: bool,
    },
    ListDir {
        path: String,
        unlinked: bool,
    },
    Write {
        path: String,
    },
    Append {
        path: String,
    },
    CreateDirAll {
        path: String,
    },
    Access {
        path: String,
    },
    LockKey {
        path: String,
    },
    /// A grep or a glob, run by the service's own search.
    Search {
        query: Query,
    },
    /// Start `command` under the service's confinement and `grant`, as
    /// process `child` (toolhost's number, unique on the connection),
    /// reading `input`.
    Spawn {
        child: u64,
        command: Command,
        input: Input,
        grant: ProcessGrant,
    },
    /// Write the body to process `child`'s input; done once all of it is
    /// written.
    Stdin {
        child: u64,
    },
}

/// The answer to one [`Op`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub enum Reply {
    Metadata {
        metadata: Metadata,
    },
    /// The bytes are the body.
    Bytes,
    Entries {
        entries: Vec<DirEntry>,
    },
    Done,
    Key {
        key: String,
    },
    Found {
        found: Found,
    },
    /// The process started, as `child`.
    Spawned {
        child: u64,
    },
    FsError {
        error: FsError,
    },
    SearchError {
        error: SearchError,
    },
    ProcessError {
        error: ProcessError,
    },
}

/// What a process did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum ChildMsg {
    /// The output is the body.
    Output,
    /// It ended; the git guard there put back what `undone` names of
    /// what it changed.
    Exit {
        status: ExitStatus,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        undone: Vec<Undone>,
    },
}

/// One frame: a header and its body.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub message: Message,
    pub body: Vec<u8>,
}

impl Frame {
    pub fn new(message: Message) -> Frame {
        Frame {
            message,
            body: Vec::new(),
        }
    }

    pub fn with_body(message: Message, body: Vec<u8>) -> Frame {
        Frame { message, body }
    }

    /// The frame as bytes, ready to write.
    pub fn encode(&self) -> io::Result<Vec<u8>> {
        let header = serde_json::to_vec(&self.message).map_err(io::Error::other)?;
        let len = 4 + header.len() + self.body.len();
        if len > MAX_FRAME {
            return Err(io::Error::other(format!(
                "a frame of {len} bytes is larger than the protocol's {MAX_FRAME}"
            )));
        }
        let mut out = Vec::with_capacity(4 + len);
        out.extend_from_slice(&(len as u32).to_be_bytes());
        out.extend_from_slice(&(header.len() as u32).to_be_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&self.body);
        Ok(out)
    }

    /// Write the frame to `out` and flush it.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&self.encode()?)?;
        out.flush()
    }

    /// The next frame of `input`; `None` at its end (between frames).
    pub fn read_from(input: &mut impl Read) -> io::Result<Option<Frame>> {
        let mut len = [0u8; 4];
        match input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let len = u32::from_be_bytes(len) as usize;
        if !(4..=MAX_FRAME).contains(&len) {
            return Err(invalid(format!(
                "a frame announced {len} bytes (at most {MAX_FRAME})"
            )));
        }
        let mut rest = vec![0u8; len];
        input.read_exact(&mut rest)?;
        let header_len = u32::from_be_bytes(rest[..4].try_into().expect("four bytes")) as usize;
        if header_len > len - 4 {
            return Err(invalid(format!(
                "a frame's header of {header_len} bytes does not fit in its {len}"
            )));
        }
        let message = serde_json::from_slice(&rest[4..4 + header_len])
            .map_err(|e| invalid(format!("a frame's header is not a message: {e}")))?;
        let body = rest.split_off(4 + header_len);
        Ok(Some(Frame { message, body }))
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_with_its_body_exact() {
        let body: Vec<u8> = (0..=255).collect();
        let frame = Frame::with_body(
            Message::Child {
                child: 7,
                event: ChildMsg::Output,
            },
            body.clone(),
        );
        let bytes = frame.encode().unwrap();
        let mut input = &bytes[..];
        assert_eq!(Frame::read_from(&mut input).unwrap(), Some(frame));
        assert_eq!(Frame::read_from(&mut input).unwrap(), None);
    }

    /// A frame's bytes as written: its length, its header's, then `rest`.
    fn raw(len: u32, header_len: u32, rest: &[u8]) -> Vec<u8> {
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(&header_len.to_be_bytes());
        bytes.extend_from_slice(rest);
        bytes
    }

    #[test]
    fn a_frame_too_large_or_malformed_is_refused_naming_why() {
        for (bytes, why) in [
            ((MAX_FRAME as u32 + 1).to_be_bytes().to_vec(), "announced"),
            (raw(9, 5, b"{oops"), "not a message"),
            (raw(8, 99, b"abcd"), "does not fit"),
        ] {
            let err = Frame::read_from(&mut &bytes[..]).unwrap_err();
            assert!(err.to_string().contains(why), "{why}: {err}");
        }
    }
}

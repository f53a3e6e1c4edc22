//! What a child reads: nothing (`/dev/null`, Pi's bash), a pipe the host
//! writes, or a pseudo-terminal whose other side the host holds (a REPL, a
//! prompt, a program that colours its output only on a terminal).

use rustix::fd::{AsFd, OwnedFd};
use std::io;
use tokio::io::unix::AsyncFd;

/// What a child's stdin is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "input", rename_all = "kebab-case")]
pub enum Input {
    /// `/dev/null`.
    #[default]
    Null,
    /// A pipe: what the host writes, the child reads; stdout and stderr stay
    /// two pipes.
    Pipe,
    /// A new pseudo-terminal of this size, the child's stdin, stdout, stderr
    /// and controlling terminal (in a session of its own).
    Terminal { rows: u16, cols: u16 },
}

/// The host's end of a child's input: a pipe's write end, or a terminal's
/// controller side. Dropping it closes the child's stdin (a pipe's reader
/// sees end of file).
#[derive(Debug)]
pub struct InputEnd {
    to: To,
    terminal: bool,
}

/// Where an [`InputEnd`] writes.
#[derive(Debug)]
enum To {
    /// A pipe's write end or a terminal's controller side, here.
    Here(AsyncFd<OwnedFd>),
    /// The input of a process a remote workspace's service runs.
    Elsewhere(Box<dyn RemoteInput>),
}

/// The input of a process that runs elsewhere: its writes are the service's
/// to make, and dropping it closes that process's stdin there.
pub trait RemoteInput: Send + Sync + std::fmt::Debug {
    /// Write all of `bytes`, waiting while the process does not read.
    fn write<'a>(&'a self, bytes: &'a [u8]) -> futures::future::BoxFuture<'a, io::Result<()>>;
}

/// The child's side of its input, and for a terminal the host's side to
/// read its output from.
pub(super) struct Prepared {
    /// The child's stdin (a terminal's also stdout and stderr).
    pub child: OwnedFd,
    /// A terminal's controller side, read for its output.
    pub output: Option<OwnedFd>,
    pub end: InputEnd,
}

impl Input {
    /// Make the pipe or the terminal; `None` for `/dev/null`.
    pub(super) fn prepare(self) -> io::Result<Option<Prepared>> {
        match self {
            Input::Null => Ok(None),
            Input::Pipe => {
                let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
                Ok(Some(Prepared {
                    child: read,
                    output: None,
                    end: InputEnd::new(write, false)?,
                }))
            }
            Input::Terminal { rows, cols } => {
                use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
                let controller =
                    openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
                grantpt(&controller)?;
                unlockpt(&controller)?;
                let name = ptsname(&controller, Vec::new())?;
                let terminal = rustix::fs::open(
                    name.as_c_str(),
                    rustix::fs::OFlags::RDWR
                        | rustix::fs::OFlags::NOCTTY
                        | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )?;
                rustix::termios::tcsetwinsize(
                    &terminal,
                    rustix::termios::Winsize {
                        ws_row: rows.max(1),
                        ws_col: cols.max(1),
                        ws_xpixel: 0,
                        ws_ypixel: 0,
                    },
                )?;
                let output = rustix::io::fcntl_dupfd_cloexec(&controller, 0)?;
                Ok(Some(Prepared {
                    child: terminal,
                    output: Some(output),
                    end: InputEnd::new(controller, true)?,
                }))
            }
        }
    }
}

impl InputEnd {
    fn new(fd: OwnedFd, terminal: bool) -> io::Result<InputEnd> {
        rustix::io::ioctl_fionbio(&fd, true)?;
        Ok(InputEnd {
            to: To::Here(super::sys::watched(fd, tokio::io::Interest::WRITABLE)?),
            terminal,
        })
    }

    /// The input of a process that runs elsewhere, written through `input`.
    pub fn elsewhere(input: Box<dyn RemoteInput>, terminal: bool) -> InputEnd {
        InputEnd {
            to: To::Elsewhere(input),
            terminal,
        }
    }

    /// Whether the child reads a terminal.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// Write all of `bytes`, waiting while the child does not read (the
    /// caller bounds the wait). An error when the child closed its side.
    pub async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        let fd = match &self.to {
            To::Here(fd) => fd,
            To::Elsewhere(input) => return input.write(bytes).await,
        };
        while !bytes.is_empty() {
            let mut ready = fd.writable().await?;
            match ready.try_io(|fd| Ok(rustix::io::write(fd.get_ref().as_fd(), bytes)?)) {
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }
}

//! A protocol front end on stdio (`serve`, `mcp`), recorded and replayed
//! as the lines it read: each input line is kept with the number of lines
//! the front end had written before it came, and a replay feeds each one
//! once as many have been written again, so that a client that waited for
//! an answer before asking again is replayed waiting too. The replayed
//! front end prints its own answers: what the recorded one printed.

use super::{RecordTo, Recording};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, DuplexStream};

/// The longest a replay waits for the lines a recorded input came after;
/// then it is fed anyway (a front end that answers less than it did).
const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many lines a front end has written, and the news of each.
#[derive(Debug, Default)]
pub struct Written {
    lines: AtomicU64,
    more: tokio::sync::Notify,
}

impl Written {
    /// Wait until at least `n` lines are written (at most [`WAIT`]).
    async fn at_least(&self, n: u64) {
        let give_up = tokio::time::Instant::now() + WAIT;
        loop {
            let more = self.more.notified();
            tokio::pin!(more);
            more.as_mut().enable();
            if self.lines.load(Ordering::Acquire) >= n
                || tokio::time::timeout_at(give_up, more).await.is_err()
            {
                return;
            }
        }
    }
}

/// A front end's output, its lines counted.
pub struct Counted<W> {
    inner: W,
    written: Arc<Written>,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            let lines = buf[..*n].iter().filter(|&&b| b == b'\n').count() as u64;
            if lines > 0 {
                this.written.lines.fetch_add(lines, Ordering::AcqRel);
                this.written.more.notify_waiters();
            }
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The largest input line passed through at once.
const PIPE: usize = 1 << 16;

impl RecordTo {
    /// A front end's stdio, recorded: `offered` names the tools it offers
    /// (a replay offers the same), and each line read from `input` is kept
    /// as it is passed on. Serve the front end on what this returns. Call
    /// it once the host is built.
    pub fn stdio<R, W>(
        &self,
        offered: Vec<String>,
        input: R,
        output: W,
    ) -> (DuplexStream, Counted<W>)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Unpin,
    {
        let recorder = self.opened.get().cloned();
        if let Some(recorder) = &recorder {
            recorder.line(serde_json::json!({ "offered": offered }));
        }
        let written = Arc::new(Written::default());
        let (mut to_front, from_client) = tokio::io::duplex(PIPE);
        let counted = written.clone();
        tokio::spawn(async move {
            let mut input = tokio::io::BufReader::new(input);
            let mut line = Vec::new();
            loop {
                line.clear();
                match input.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => {
                        if let Some(recorder) = &recorder {
                            let after = counted.lines.load(Ordering::Acquire);
                            recorder.line(serde_json::json!({ "input_end": after }));
                        }
                        break;
                    }
                    Ok(_) => {}
                }
                if let Some(recorder) = &recorder {
                    let text = String::from_utf8_lossy(&line);
                    let after = counted.lines.load(Ordering::Acquire);
                    recorder.line(serde_json::json!({ "input": text, "after": after }));
                }
                if to_front.write_all(&line).await.is_err() {
                    break;
                }
            }
        });
        (
            from_client,
            Counted {
                inner: output,
                written,
            },
        )
    }
}

/// The recorded input of a front end on stdio, fed at the recorded points
/// of its output: serve the replayed front end on what this returns.
/// `None` when the recording holds no such input.
pub fn replayed_stdio<W>(recording: &Recording, output: W) -> Option<(DuplexStream, Counted<W>)>
where
    W: AsyncWrite + Unpin,
{
    if recording.inputs.is_empty() {
        return None;
    }
    let written = Arc::new(Written::default());
    let (mut to_front, from_client) = tokio::io::duplex(PIPE);
    let (inputs, end) = (recording.inputs.clone(), recording.input_end);
    let waiting = written.clone();
    tokio::spawn(async move {
        for input in inputs {
            waiting.at_least(input.after).await;
            if to_front.write_all(input.line.as_bytes()).await.is_err() {
                return;
            }
        }
        // The input ends where it ended: after the answers it waited for.
        if let Some(end) = end {
            waiting.at_least(end).await;
        }
    });
    Some((
        from_client,
        Counted {
            inner: output,
            written,
        },
    ))
}

/// A line a front end read, and how many it had written before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedInput {
    pub line: String,
    pub after: u64,
}

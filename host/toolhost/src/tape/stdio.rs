//! A protocol front end on stdio (`serve`, `mcp`), recorded and replayed
//! as the lines it read: each input line is kept with the number of lines
//! the front end had written before it came, and a replay feeds each one
//! once as many have been written again, so that a client that waited for
//! an answer before asking again is replayed waiting too. The replayed
//! front end prints its own answers: what the recorded one printed.
//!
//! Requests a client sent together are answered in whatever order they
//! end, so the recording also keeps the id of each answer in the order it
//! was written (`answered`), and the replay writes its answers in that
//! order: an answer that ends before one the recording wrote earlier waits
//! for it.

use super::{RecordTo, Recorder, Recording};
use serde_json::Value;
use std::collections::VecDeque;
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

    /// Count `lines` more written.
    fn add(&self, lines: u64) {
        if lines > 0 {
            self.lines.fetch_add(lines, Ordering::AcqRel);
            self.more.notify_waiters();
        }
    }
}

/// A front end's output, its lines counted (and, recorded or replayed,
/// its answers' order).
pub struct Counted<W> {
    inner: W,
    written: Arc<Written>,
    answers: Answers,
}

/// What a [`Counted`] output does with the answers written to it.
enum Answers {
    /// Nothing: not recorded.
    Passed,
    /// Records each answer's id as it is written.
    Recorded {
        recorder: Arc<Recorder>,
        line: Vec<u8>,
    },
    /// Writes the answers in the recorded order.
    Ordered(HeldAnswers),
}

/// The replay's order of answers: `expected` the ids not written yet, in
/// the recorded order; an answer of a later one is `held` until those
/// before it are written (or the front end has ended: [`HeldAnswers::rest`]).
#[derive(Default)]
struct Order {
    line: Vec<u8>,
    expected: VecDeque<Value>,
    held: Vec<(Value, Vec<u8>)>,
    /// Bytes ready for the output, in their order.
    ready: Vec<u8>,
}

/// The answers a replayed front end wrote that still wait for an earlier
/// one (see [`replayed_stdio`]).
#[derive(Clone, Default)]
pub struct HeldAnswers(Arc<std::sync::Mutex<Order>>);

impl HeldAnswers {
    /// Waiting for the answers of `ids`, in this order.
    fn expecting(ids: impl IntoIterator<Item = Value>) -> HeldAnswers {
        let held = HeldAnswers::default();
        held.lock().expected = ids.into_iter().collect();
        held
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Order> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Once the front end has ended: what it wrote that was never
    /// written, in the order it came (an answer the recording has was not
    /// given again, so those after it waited in vain). Nothing waits from
    /// now on.
    pub fn rest(&self) -> Vec<u8> {
        let mut order = self.lock();
        order.expected.clear();
        let mut rest = std::mem::take(&mut order.ready);
        for (_, line) in order.held.drain(..) {
            rest.extend_from_slice(&line);
        }
        rest.append(&mut order.line);
        rest
    }
}

impl Order {
    /// One whole line the front end wrote.
    fn line(&mut self, line: Vec<u8>) {
        let Some(id) = answer_id(&line) else {
            self.ready.extend_from_slice(&line);
            return;
        };
        match self.expected.iter().position(|expected| *expected == id) {
            Some(0) => {
                self.expected.pop_front();
                self.ready.extend_from_slice(&line);
                self.release();
            }
            Some(_) => self.held.push((id, line)),
            None => self.ready.extend_from_slice(&line),
        }
    }

    /// Held answers whose turn has come, in turn.
    fn release(&mut self) {
        while let Some(next) = self.expected.front() {
            let Some(at) = self.held.iter().position(|(id, _)| id == next) else {
                return;
            };
            let (_, line) = self.held.remove(at);
            self.ready.extend_from_slice(&line);
            self.expected.pop_front();
        }
    }
}

/// The id of `line` when it is a JSON-RPC answer (a result or an error).
fn answer_id(line: &[u8]) -> Option<Value> {
    let mut value: Value = serde_json::from_slice(line).ok()?;
    let answer = value.get("result").is_some() || value.get("error").is_some();
    answer.then(|| value.get_mut("id").map(Value::take))?
}

/// Each whole line `buf` ends in `partial` (which keeps the rest).
fn whole_lines<'a>(partial: &'a mut Vec<u8>, buf: &[u8]) -> impl Iterator<Item = Vec<u8>> + 'a {
    partial.extend_from_slice(buf);
    std::iter::from_fn(move || {
        let end = partial.iter().position(|&b| b == b'\n')?;
        Some(partial.drain(..=end).collect())
    })
}

impl<W: AsyncWrite + Unpin> Counted<W> {
    /// Write what is ready, as far as the output takes it.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let Answers::Ordered(held) = &self.answers else {
            return Poll::Ready(Ok(()));
        };
        let mut order = held.lock();
        while !order.ready.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &order.ready) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => drop(order.ready.drain(..n)),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if let Answers::Ordered(held) = &this.answers {
            // Taken whole; written in order as the output takes it.
            let lines = {
                let mut order = held.lock();
                let mut partial = std::mem::take(&mut order.line);
                let mut lines = 0;
                for line in whole_lines(&mut partial, buf) {
                    order.line(line);
                    lines += 1;
                }
                order.line = partial;
                lines
            };
            this.written.add(lines);
            if let Poll::Ready(Err(e)) = this.poll_ready(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            let taken = &buf[..*n];
            this.written
                .add(taken.iter().filter(|&&b| b == b'\n').count() as u64);
            if let Answers::Recorded { recorder, line } = &mut this.answers {
                for whole in whole_lines(line, taken) {
                    if let Some(id) = answer_id(&whole) {
                        recorder.line(serde_json::json!({ "answered": id }));
                    }
                }
            }
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.poll_ready(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.poll_ready(cx))?;
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
        let answers = match self.opened.get() {
            Some(recorder) => Answers::Recorded {
                recorder: recorder.clone(),
                line: Vec::new(),
            },
            None => Answers::Passed,
        };
        (
            from_client,
            Counted {
                inner: output,
                written,
                answers,
            },
        )
    }
}

/// The recorded input of a front end on stdio, fed at the recorded points
/// of its output, and the answers it writes put in their recorded order:
/// serve the replayed front end on the stream and the output this returns,
/// then write out what [`HeldAnswers::rest`] still holds. `None` when the
/// recording holds no such input.
pub fn replayed_stdio<W>(
    recording: &Recording,
    output: W,
) -> Option<(DuplexStream, Counted<W>, HeldAnswers)>
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
    let held = HeldAnswers::expecting(recording.answered.iter().cloned());
    let output = Counted {
        inner: output,
        written,
        answers: Answers::Ordered(held.clone()),
    };
    Some((from_client, output, held))
}

/// A line a front end read, and how many it had written before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedInput {
    pub line: String,
    pub after: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ordered(expected: &[Value]) -> (Counted<Vec<u8>>, HeldAnswers) {
        let held = HeldAnswers::expecting(expected.iter().cloned());
        let counted = Counted {
            inner: Vec::new(),
            written: Arc::default(),
            answers: Answers::Ordered(held.clone()),
        };
        (counted, held)
    }

    fn answer(id: Value) -> String {
        format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "result": {}}))
    }

    #[tokio::test]
    async fn answers_are_written_in_the_recorded_order_and_the_rest_as_they_come() {
        let (mut out, _held) = ordered(&[json!(2), json!("three")]);
        let notice = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n";
        // The later answer first, split across writes; then a notification
        // and an answer the recording lacks, which are not held.
        let three = answer(json!("three"));
        let (head, tail) = three.split_at(10);
        out.write_all(head.as_bytes()).await.unwrap();
        out.write_all(tail.as_bytes()).await.unwrap();
        out.write_all(notice.as_bytes()).await.unwrap();
        out.write_all(answer(json!(9)).as_bytes()).await.unwrap();
        out.flush().await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.inner),
            format!("{notice}{}", answer(json!(9)))
        );
        // Every line counts as written, held or not.
        assert_eq!(out.written.lines.load(Ordering::Acquire), 3);
        out.write_all(answer(json!(2)).as_bytes()).await.unwrap();
        out.flush().await.unwrap();
        let expected = format!("{notice}{}{}{three}", answer(json!(9)), answer(json!(2)));
        assert_eq!(String::from_utf8_lossy(&out.inner), expected);
    }

    #[tokio::test]
    async fn an_answer_still_held_when_the_front_end_ends_is_its_rest() {
        let (mut out, held) = ordered(&[json!(1), json!(2)]);
        out.write_all(answer(json!(2)).as_bytes()).await.unwrap();
        out.write_all(b"{\"partial\":").await.unwrap();
        out.flush().await.unwrap();
        assert!(out.inner.is_empty());
        let rest = String::from_utf8(held.rest()).unwrap();
        assert_eq!(rest, format!("{}{{\"partial\":", answer(json!(2))));
        // Nothing waits any more.
        out.write_all(answer(json!(1)).as_bytes()).await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out.inner), answer(json!(1)));
    }

    #[test]
    fn only_results_and_errors_are_answers() {
        assert_eq!(answer_id(br#"{"id":1,"result":null}"#), Some(json!(1)));
        assert_eq!(
            answer_id(br#"{"id":"a","error":{"code":1}}"#),
            Some(json!("a"))
        );
        assert_eq!(answer_id(br#"{"id":1,"method":"ping"}"#), None);
        assert_eq!(answer_id(b"not json"), None);
    }
}

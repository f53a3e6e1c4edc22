//! The order of a batch's events (spec §2.3, §2.4): every call's start in
//! source order, before anything a running call emits (the [`Gate`] holds
//! that back while the batch is still being prepared, and the
//! [`Announcer`] puts starts in order whichever worker prepared them); each
//! call's end when it finishes; then each result message, appended in
//! source order.

use super::Batch;
use crate::call::Finished;
use crate::events::{Event, EventSink};
use crate::message::{ToolCall, ToolResultMessage};

/// Events of executing calls held back until the batch's preflight is
/// over, so that every start event precedes them, as in Pi, even while
/// calls prepared first already run. Open unless closed.
#[derive(Default)]
pub(super) struct Gate(std::sync::Mutex<Option<Vec<Event>>>);

impl Gate {
    fn close(&self) {
        *self.0.lock().expect("gate lock") = Some(Vec::new());
    }

    /// Emit what was held, in order, and let everything through from now on.
    fn open(&self, sink: &dyn EventSink) {
        let mut held = self.0.lock().expect("gate lock");
        for event in held.take().unwrap_or_default() {
            sink.emit(event);
        }
    }

    pub(super) fn emit(&self, sink: &dyn EventSink, event: Event) {
        let mut held = self.0.lock().expect("gate lock");
        match held.as_mut() {
            Some(held) => held.push(event),
            None => {
                drop(held);
                sink.emit(event);
            }
        }
    }
}

/// A finished call ready to be appended (see [`Batch::settle`]).
pub(super) struct Settled {
    /// Its result asks the loop to stop after this batch.
    pub(super) terminate: bool,
    message: ToolResultMessage,
    events: [Event; 2],
    outcome: crate::audit::Outcome,
}

impl Batch {
    /// Hold back what executing calls emit until [`Self::release_events`].
    pub(super) fn hold_events(&self) {
        self.gate.close();
    }

    /// Emit what was held, in order, and let everything through from now on.
    pub(super) fn release_events(&self) {
        self.gate.open(self.sink.as_ref());
    }

    pub(super) fn start(&self, call: &ToolCall) {
        self.sink.emit(Event::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        });
    }

    /// A call's end, now (past the gate).
    pub(super) fn end(&self, finished: &Finished) {
        if let Some(tape) = finished.tape() {
            tape.ending();
        }
        self.sink.emit(finished.end_event());
    }

    /// Make a finished call ready to be appended to the conversation: its
    /// result message and the two events that append it (and its line in
    /// the audit log, written now). A parallel batch does this on the
    /// worker the call finished on, so that only the appending is left for
    /// the end, in source order.
    pub(super) fn settle(&self, finished: Finished) -> Settled {
        finished.audit(&self.session);
        let outcome = finished.outcome();
        let (message, terminate) = finished.into_message();
        Settled {
            terminate,
            outcome,
            events: [
                Event::MessageStart {
                    message: message.clone(),
                },
                Event::MessageEnd {
                    message: message.clone(),
                },
            ],
            message,
        }
    }

    /// Append a settled call: its two events go out, stamped with the time
    /// it is appended, and its result message is returned.
    pub(super) fn append(&self, settled: Settled) -> ToolResultMessage {
        let Settled {
            mut message,
            events,
            outcome,
            ..
        } = settled;
        self.outcomes.lock().expect("outcomes lock").push(outcome);
        let now = crate::message::now_ms();
        message.timestamp = now;
        for mut event in events {
            if let Event::MessageStart { message } | Event::MessageEnd { message } = &mut event {
                message.timestamp = now;
            }
            self.sink.emit(event);
        }
        message
    }
}

/// The start events (and the ends of calls that ended before running) in
/// source order, whichever worker prepared them first; the gate opens after
/// the last start.
pub(super) struct Announcer {
    calls: Vec<Announce>,
    /// The first call not announced.
    next: usize,
}

enum Announce {
    Waiting,
    /// Prepared: its start goes out, then this end if it ended there.
    Ready(Option<Box<Event>>),
    Gone,
}

impl Announcer {
    /// For `n` calls; holds back what running calls emit until all are
    /// announced.
    pub(super) fn new(batch: &Batch, n: usize) -> Announcer {
        batch.hold_events();
        Announcer {
            calls: (0..n).map(|_| Announce::Waiting).collect(),
            next: 0,
        }
    }

    /// Call `i` was prepared (`end`: it ended there). Announce every call
    /// now ready in order; open the gate after the last. False when `i` had
    /// been announced already.
    pub(super) fn announce(&mut self, batch: &Batch, i: usize, end: Option<Event>) -> bool {
        if !matches!(self.calls[i], Announce::Waiting) {
            return false;
        }
        self.calls[i] = Announce::Ready(end.map(Box::new));
        while self.next < self.calls.len() {
            let next = self.next;
            match std::mem::replace(&mut self.calls[next], Announce::Gone) {
                Announce::Ready(end) => {
                    batch.start(&batch.message.tool_calls[next]);
                    if let Some(end) = end {
                        batch.sink.emit(*end);
                    }
                    self.next += 1;
                    if self.next == self.calls.len() {
                        batch.release_events();
                    }
                }
                waiting => {
                    self.calls[next] = waiting;
                    break;
                }
            }
        }
        true
    }
}

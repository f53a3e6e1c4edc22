//! The WASI clocks and random generators of a call on tape: recording,
//! each value the component is handed is the machine's, kept; replaying,
//! it is the recorded one, in the same order. Their resolutions are fixed
//! (1 ns), so that no machine's shows through.

use super::{Blobs, CallTape, Taped};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

/// What a call saw of its clocks and random generators, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Wall-clock readings, in nanoseconds since the Unix epoch.
    pub wall: Vec<u64>,
    /// Monotonic-clock readings, in nanoseconds.
    pub monotonic: Vec<u64>,
    /// The bytes `wasi:random/random` handed out.
    pub random: Vec<u8>,
    /// The bytes `wasi:random/insecure` handed out.
    pub insecure: Vec<u8>,
}

/// [`Seen`] as a recording holds it: the readings as they are, the bytes
/// as blobs (`null` when none were drawn).
#[derive(serde::Serialize)]
pub(crate) struct SeenKept<'a> {
    wall: &'a [u64],
    monotonic: &'a [u64],
    random: Value,
    insecure: Value,
}

impl Seen {
    pub(crate) fn put<'a>(&'a self, blobs: &dyn Blobs) -> SeenKept<'a> {
        let bytes = |b: &Vec<u8>| match b.is_empty() {
            true => Value::Null,
            false => b.put(blobs),
        };
        SeenKept {
            wall: &self.wall,
            monotonic: &self.monotonic,
            random: bytes(&self.random),
            insecure: bytes(&self.insecure),
        }
    }

    pub(crate) fn take(value: &Value, blobs: &dyn Blobs) -> Option<Seen> {
        let numbers = |key: &str| -> Option<Vec<u64>> {
            match value.get(key) {
                None | Some(Value::Null) => Some(Vec::new()),
                Some(v) => serde_json::from_value(v.clone()).ok(),
            }
        };
        let bytes = |key: &str| -> Option<Vec<u8>> {
            match value.get(key) {
                None | Some(Value::Null) => Some(Vec::new()),
                Some(v) => Vec::take(v, blobs),
            }
        };
        Some(Seen {
            wall: numbers("wall")?,
            monotonic: numbers("monotonic")?,
            random: bytes("random")?,
            insecure: bytes("insecure")?,
        })
    }
}

/// Which clock.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Clock {
    Wall,
    Monotonic,
}

/// Which generator.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Random {
    Secure,
    Insecure,
}

impl Seen {
    fn readings(&mut self, which: Clock) -> &mut Vec<u64> {
        match which {
            Clock::Wall => &mut self.wall,
            Clock::Monotonic => &mut self.monotonic,
        }
    }

    fn bytes(&mut self, which: Random) -> &mut Vec<u8> {
        match which {
            Random::Secure => &mut self.random,
            Random::Insecure => &mut self.insecure,
        }
    }
}

/// An empty record, for a replayed call the recording does not hold.
static NOTHING: Seen = Seen {
    wall: Vec::new(),
    monotonic: Vec::new(),
    random: Vec::new(),
    insecure: Vec::new(),
};

impl CallTape {
    /// What the recorded call saw (replaying; nothing for a call the
    /// recording does not hold), or `None` when recording.
    fn replayed_seen(&self) -> Option<&Seen> {
        self.is_replaying()
            .then(|| self.recorded().map_or(&NOTHING, |r| &r.seen))
    }

    /// A reading of `which`: `live`'s, kept (recording), or the next
    /// recorded one (replaying; past the last, the last, and a divergence).
    pub(crate) fn clock(&self, which: Clock, live: impl FnOnce() -> u64) -> u64 {
        let recorded = self.replayed_seen();
        let mut state = self.state();
        let seen = state.seen.readings(which);
        let Some(recorded) = recorded else {
            let now = live();
            seen.push(now);
            return now;
        };
        let had = match which {
            Clock::Wall => &recorded.wall,
            Clock::Monotonic => &recorded.monotonic,
        };
        match had.get(seen.len()) {
            Some(&now) => {
                seen.push(now);
                now
            }
            None => {
                let last = had.last().copied().unwrap_or(0);
                drop(state);
                self.diverge(format!(
                    "the component read the {} clock more often than the recording holds ({} readings)",
                    match which {
                        Clock::Wall => "wall",
                        Clock::Monotonic => "monotonic",
                    },
                    had.len()
                ));
                last
            }
        }
    }

    /// Random bytes into `dst` from `which`: `live`'s, kept (recording), or
    /// the next recorded ones (replaying; past the end, zeros and a
    /// divergence).
    pub(crate) fn random(&self, which: Random, dst: &mut [u8], live: impl FnOnce(&mut [u8])) {
        let recorded = self.replayed_seen();
        let mut state = self.state();
        let seen = state.seen.bytes(which);
        let Some(recorded) = recorded else {
            live(dst);
            seen.extend_from_slice(dst);
            return;
        };
        let had = match which {
            Random::Secure => &recorded.random,
            Random::Insecure => &recorded.insecure,
        };
        let from = seen.len();
        match had.get(from..from + dst.len()) {
            Some(bytes) => {
                dst.copy_from_slice(bytes);
                seen.extend_from_slice(bytes);
            }
            None => {
                dst.fill(0);
                drop(state);
                self.diverge(format!(
                    "the component drew more random bytes than the recording holds ({})",
                    had.len()
                ));
            }
        }
    }
}

/// The wall clock of a call on tape.
pub(crate) struct WallClock(pub Arc<CallTape>);

impl HostWallClock for WallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let live = || {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            u64::try_from(now.as_nanos()).unwrap_or(u64::MAX)
        };
        Duration::from_nanos(self.0.clock(Clock::Wall, live))
    }
}

/// The monotonic clock of a call on tape: nanoseconds since the call's
/// tape began.
pub(crate) struct MonotonicClock(pub Arc<CallTape>);

impl HostMonotonicClock for MonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        let started = self.0.started;
        let live = || u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.0.clock(Clock::Monotonic, live)
    }
}

/// A random generator of a call on tape.
pub(crate) struct Generator(pub Arc<CallTape>, pub Random);

impl Generator {
    fn fill(&mut self, dst: &mut [u8]) {
        // getrandom(2) does not fail on a kernel that runs wasmtime at all.
        self.0.random(self.1, dst, |dst| {
            let _ = crate::files::getrandom(dst);
        });
    }
}

impl rand_core::TryRng for Generator {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut bytes = [0u8; 4];
        self.fill(&mut bytes);
        Ok(u32::from_le_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut bytes = [0u8; 8];
        self.fill(&mut bytes);
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.fill(dst);
        Ok(())
    }
}

//! What one call did with its capabilities, as the Operations saw it: the
//! paths it read and wrote, the programs it started, the hosts it contacted,
//! and what it was refused. The audit log records it per call
//! ([`crate::audit`]); nothing else reads it.
//!
//! Recording is off unless the host keeps an audit log, so a call without
//! one pays a branch per Operation. Each list keeps its first
//! [`MAX_ENTRIES`] distinct entries and counts the rest: a `find` over a
//! large tree does not grow a call's record without bound.

use serde::Serialize;
use std::sync::Mutex;

/// How many distinct entries each list keeps.
pub const MAX_ENTRIES: usize = 64;

/// One call's record of use (shared by the call and its instance; a clone
/// records into the same record, for what outlives a borrow of it: the
/// egress proxy of a command's connections).
#[derive(Clone, Debug, Default)]
pub struct Usage {
    /// `None` when nothing is recorded.
    seen: Option<std::sync::Arc<Mutex<Used>>>,
}

/// What a call used, as the audit log writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Used {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The secrets its HTTP requests carried, by name and host (never the
    /// value): `GITHUB_TOKEN to api.github.com:443`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// What it asked the person's client, by kind and key:
    /// `elicitation user_name: accept`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub client: Vec<String>,
    /// What the Operations refused it: `fs-write /etc/passwd: outside-roots`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<String>,
    /// Files that decide what git runs, changed by the call in a way that
    /// could run code, and put back by the host (`crate::ops::protect`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reverted: Vec<String>,
    /// What the person was asked, and the answer, with the front end that
    /// asked: `send HTTP requests to api.github.com:443: session (terminal)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<String>,
    /// The tools it called through the host, each with the nested call's
    /// id: `read call_1/1` (their own lines say what they did).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub called: Vec<String>,
    /// Distinct entries beyond [`MAX_ENTRIES`] in any list, not listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: u32,
}

impl Used {
    /// The entries of one list.
    pub fn list(&self, kind: Use) -> &[String] {
        match kind {
            Use::Read => &self.read,
            Use::Written => &self.written,
            Use::Program => &self.programs,
            Use::Host => &self.hosts,
            Use::Client => &self.client,
            Use::Secret => &self.secrets,
            Use::Denied => &self.denied,
            Use::Reverted => &self.reverted,
            Use::Asked => &self.asked,
            Use::Called => &self.called,
        }
    }

    fn list_mut(&mut self, kind: Use) -> &mut Vec<String> {
        match kind {
            Use::Read => &mut self.read,
            Use::Written => &mut self.written,
            Use::Program => &mut self.programs,
            Use::Host => &mut self.hosts,
            Use::Client => &mut self.client,
            Use::Secret => &mut self.secrets,
            Use::Denied => &mut self.denied,
            Use::Reverted => &mut self.reverted,
            Use::Asked => &mut self.asked,
            Use::Called => &mut self.called,
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Which list an entry goes to (each capability says which lists its use
/// fills: `crate::capability`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    Read,
    Written,
    Program,
    Host,
    Secret,
    Client,
    Denied,
    Reverted,
    Asked,
    Called,
}

impl Usage {
    /// A record that keeps what it is told.
    pub fn recording() -> Usage {
        Usage {
            seen: Some(std::sync::Arc::new(Mutex::new(Used::default()))),
        }
    }

    /// Whether anything is kept (callers may skip building an entry).
    pub fn is_recording(&self) -> bool {
        self.seen.is_some()
    }

    /// Note one use; a repeat of an entry already listed is not added.
    pub fn note(&self, kind: Use, entry: &str) {
        let Some(seen) = &self.seen else { return };
        let mut used = seen.lock().expect("usage lock");
        let list = used.list_mut(kind);
        if list.iter().any(|e| e == entry) {
            return;
        }
        if list.len() < MAX_ENTRIES {
            list.push(entry.to_string());
        } else {
            used.more = used.more.saturating_add(1);
        }
    }

    /// What was recorded so far.
    pub fn used(&self) -> Used {
        self.seen
            .as_ref()
            .map(|seen| seen.lock().expect("usage lock").clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_distinct_and_bounded() {
        let usage = Usage::recording();
        usage.note(Use::Read, "/w/a");
        usage.note(Use::Read, "/w/a");
        for i in 0..MAX_ENTRIES + 5 {
            usage.note(Use::Written, &format!("/w/{i}"));
        }
        let used = usage.used();
        assert_eq!(used.read, ["/w/a"]);
        assert_eq!(used.written.len(), MAX_ENTRIES);
        assert_eq!(used.more, 5);
    }

    #[test]
    fn a_record_that_is_off_keeps_nothing() {
        let usage = Usage::default();
        usage.note(Use::Program, "/bin/sh");
        assert_eq!(usage.used(), Used::default());
        assert!(!usage.is_recording());
    }
}

//! Asking the person behind an MCP client: an `elicitation/create` form
//! request (2025-11-25 and the other handshake revisions) to a client that
//! declared the `elicitation` capability. The form has one required choice,
//! `answer` (`once`, `session`, `always` where offered, `deny`), and an
//! optional `reason`; declining or cancelling the form is a denial.
//!
//! A client that did not declare the capability, or a 2026-07-28 client
//! (whose revision forbids requests from the server), is not asked: the call
//! gets the refusal, saying what the person can grant.
//!
//! "For this session" lasts as long as the client's session: an [`Asker`]
//! per MCP session id (`"stdio"` for the one client on stdio), the most
//! recent [`SESSIONS`] kept.

use crate::permissions::{Answer, Ask, Asker, Question};
use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// How many sessions' askers are kept (older sessions are asked again).
pub(super) const SESSIONS: usize = 256;

/// The askers of the recent sessions, by session key.
#[derive(Default)]
pub(super) struct Askers(Mutex<VecDeque<(String, Arc<Asker>)>>);

impl Askers {
    /// The asker of the session `context` belongs to, when its client can
    /// be asked.
    pub(super) fn of(&self, context: &RequestContext<RoleServer>) -> Option<Arc<Asker>> {
        let peer = &context.peer;
        let can_elicit = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if !can_elicit {
            return None;
        }
        let key = session_key(context);
        let mut askers = self.0.lock().expect("askers lock");
        if let Some((_, asker)) = askers.iter().find(|(k, _)| *k == key) {
            return Some(asker.clone());
        }
        let asker = Asker::new(Arc::new(Client { peer: peer.clone() }));
        if askers.len() >= SESSIONS {
            askers.pop_front();
        }
        askers.push_back((key, asker.clone()));
        Some(asker)
    }
}

/// The session's id over HTTP (`Mcp-Session-Id`), `stdio` otherwise.
fn session_key(context: &RequestContext<RoleServer>) -> String {
    #[cfg(feature = "http")]
    if let Some(id) = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
    {
        return format!("http:{id}");
    }
    let _ = context;
    "stdio".into()
}

/// The person behind one client session.
struct Client {
    peer: Peer<RoleServer>,
}

impl Ask for Client {
    fn front_end(&self) -> &str {
        "mcp"
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Option<Answer>> {
        Box::pin(async move {
            let answers = question.answers();
            let params = json!({
                "mode": "form",
                "message": format!("toolhost: permission needed\n{}", question.text()),
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "answer": {
                            "type": "string",
                            "title": "Allow?",
                            "enum": answers,
                        },
                        "reason": {
                            "type": "string",
                            "title": "Reason (told to the model when you deny)",
                        },
                    },
                    "required": ["answer"],
                },
            });
            let params: ElicitRequestParams = serde_json::from_value(params).ok()?;
            let result = self.peer.create_elicitation(params).await.ok()?;
            if result.action != ElicitationAction::Accept {
                // Declined or cancelled: the person said no.
                return Some(Answer::Deny { reason: None });
            }
            let content = result.content?;
            let name = content.get("answer")?.as_str()?;
            if !answers.contains(&name) {
                return None;
            }
            let reason = content
                .get("reason")
                .and_then(|r| r.as_str())
                .map(str::to_string);
            Answer::from_name(name, reason)
        })
    }
}

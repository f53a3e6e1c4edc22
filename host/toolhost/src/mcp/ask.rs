//! Asking the person behind an MCP client: an `elicitation/create` form
//! request (2025-11-25 and the other handshake revisions) to a client that
//! declared the `elicitation` capability. The form has one required choice,
//! `answer` (`once`, `session`, `always` where offered, `deny`), and an
//! optional `reason`; declining or cancelling the form is a denial.
//!
//! A 2026-07-28 client, whose revision forbids requests from the server,
//! is asked by the input-required result instead ([`Round`]): the call stops
//! where it needed the answer, the result carries the elicitation and a
//! `requestState`, and the client's retry carries the answer. The state is
//! sealed by the host (a keyed BLAKE3 MAC under a key of this process),
//! bound to the tool, its arguments and the question, valid for the wait's
//! bound, and used once: a forged, altered, replayed or misapplied state is
//! refused. The retry runs the call again from its start, with the answers
//! given so far.
//!
//! A client that did not declare the capability is not asked: the call gets
//! the refusal, saying what the person can grant.
//!
//! "For this session" lasts as long as the client's session: an [`Asker`]
//! per MCP session id (`"stdio"` for the one client on stdio), the most
//! recent [`SESSIONS`] kept.

use crate::ops::client::{Answers, Client, ClientCaps, ClientError, ClientMethod, ClientRequest};
use crate::permissions::{Answer, Ask, Asker, Need, Question};
use futures::future::BoxFuture;
use rmcp::model::{ClientResult, ElicitRequestParams, ElicitationAction, ServerRequest};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

mod logging;
mod rounds;
pub(super) use logging::{LogLevels, LogSender, ToolLogs};
pub(super) use rounds::States;

/// How many sessions' state is kept (older sessions start again: are asked
/// again, send no log messages).
pub(super) const SESSIONS: usize = 256;

/// A value for each of the [`SESSIONS`] most recent sessions, by session
/// key ([`session_key`]).
struct PerSession<T>(Mutex<VecDeque<(String, T)>>);

impl<T> Default for PerSession<T> {
    fn default() -> Self {
        PerSession(Mutex::default())
    }
}

impl<T: Clone> PerSession<T> {
    fn get(&self, key: &str) -> Option<T> {
        let values = self.0.lock().expect("per-session lock");
        values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// The value of `key`, made by `make` when it has none.
    fn get_or_insert_with(&self, key: String, make: impl FnOnce() -> T) -> T {
        let mut values = self.0.lock().expect("per-session lock");
        if let Some((_, value)) = values.iter().find(|(k, _)| *k == key) {
            return value.clone();
        }
        let value = make();
        Self::push(&mut values, key, value.clone());
        value
    }

    fn remove(&self, key: &str) -> Option<T> {
        let mut values = self.0.lock().expect("per-session lock");
        let at = values.iter().position(|(k, _)| k == key)?;
        values.remove(at).map(|(_, v)| v)
    }

    fn set(&self, key: String, value: T) {
        let mut values = self.0.lock().expect("per-session lock");
        values.retain(|(k, _)| *k != key);
        Self::push(&mut values, key, value);
    }

    fn push(values: &mut VecDeque<(String, T)>, key: String, value: T) {
        if values.len() >= SESSIONS {
            values.pop_front();
        }
        values.push_back((key, value));
    }
}

/// The askers of the recent sessions.
#[derive(Default)]
pub(super) struct Askers(PerSession<Arc<Asker>>);

impl Askers {
    /// The asker of the session `context` belongs to, when its client can
    /// be asked.
    pub(super) fn of(&self, context: &RequestContext<RoleServer>) -> Option<Arc<Asker>> {
        let peer = &context.peer;
        if !can_elicit(context) {
            return None;
        }
        let make = || Asker::new(Arc::new(Person { peer: peer.clone() }));
        Some(self.0.get_or_insert_with(session_key(context), make))
    }
}

/// The processes of each open HTTP session (`crate::SessionProcesses`):
/// made at its first use, ended when the session closes (or is the oldest
/// of more than [`SESSIONS`]). Requests without a session (stdio, and
/// 2026-07-28's sessionless requests) use the host's own.
#[derive(Default)]
pub(super) struct Processes(PerSession<Arc<crate::SessionProcesses>>);

impl Processes {
    /// The processes of the session of `context` (a sibling of the host's
    /// `own` for an HTTP session, `own` otherwise), and its key when they
    /// are new to this session, whose client is then to be told their ends.
    pub(super) fn of(
        &self,
        context: &RequestContext<RoleServer>,
        own: &Arc<crate::SessionProcesses>,
    ) -> (Arc<crate::SessionProcesses>, Option<String>) {
        let key = session_key(context);
        if let Some(known) = self.0.get(&key) {
            return (known, None);
        }
        #[cfg(feature = "http")]
        if !key.starts_with("http:") && context.extensions.get::<http::request::Parts>().is_some() {
            // A request of no session (2026-07-28): nobody to tell later.
            return (own.clone(), None);
        }
        let processes = if key.starts_with("http:") {
            Arc::new(own.sibling())
        } else {
            own.clone()
        };
        let processes = self.0.get_or_insert_with(key.clone(), || processes);
        (processes, Some(key))
    }

    /// The session `id` closed: its processes end.
    pub(super) fn close(&self, id: &str) {
        let processes = self.0.remove(&format!("http:{id}"));
        if let Some(processes) = processes {
            tokio::spawn(async move {
                processes.end(crate::ops::process::STOP_GRACE * 3).await;
            });
        }
    }
}

/// Whether the client of `context` declared elicitation.
pub(super) fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    declared(context).elicitation
}

/// Whether the request is of a revision without server requests
/// (2026-07-28): asked by input-required results.
pub(super) fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
}

/// The session's id over HTTP (`Mcp-Session-Id`), `stdio` otherwise.
pub(super) fn session_key(context: &RequestContext<RoleServer>) -> String {
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
struct Person {
    peer: Peer<RoleServer>,
}

impl Ask for Person {
    fn front_end(&self) -> &str {
        "mcp"
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Option<Answer>> {
        Box::pin(async move {
            let params: ElicitRequestParams = serde_json::from_value(form(question)).ok()?;
            let request = ServerRequest::from(rmcp::model::ElicitRequest::new(params));
            match send(&self.peer, request).await.ok()? {
                ClientResult::ElicitResult(result) => {
                    answer_of(question, &serde_json::to_value(result).ok()?)
                }
                _ => None,
            }
        })
    }
}

/// Ask the client an `elicitation/create` with `params`: its result
/// (`{action, content}`).
pub(super) async fn elicit(peer: &Peer<RoleServer>, params: Value) -> Result<Value, String> {
    let params: ElicitRequestParams =
        serde_json::from_value(params).map_err(|e| format!("the form: {e}"))?;
    let request = ServerRequest::from(rmcp::model::ElicitRequest::new(params));
    match send(peer, request).await? {
        ClientResult::ElicitResult(result) => {
            serde_json::to_value(result).map_err(|e| format!("the answer: {e}"))
        }
        _ => Err("the client answered something else than the form".into()),
    }
}

/// Send `request` to the client and wait for its answer; withdrawn
/// (`notifications/cancelled`) if dropped unanswered: its call was
/// cancelled, or the wait ran out.
async fn send(peer: &Peer<RoleServer>, request: ServerRequest) -> Result<ClientResult, String> {
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| format!("sending the request: {e}"))?;
    let mut withdraw = Withdraw {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let response = handle.await_response().await;
    withdraw.id = None;
    response.map_err(|e| format!("the client: {e}"))
}

/// Tells the client a question is withdrawn when dropped unanswered.
struct Withdraw {
    peer: Peer<RoleServer>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = "toolhost withdrew the question: its call was cancelled or timed out";
        let param = rmcp::model::CancelledNotificationParam::new(Some(id), Some(reason.into()));
        let notification = rmcp::model::CancelledNotification::new(param);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(notification.into()).await;
            });
        }
    }
}

/// The elicitation form of `question`.
fn form(question: &Question) -> Value {
    json!({
        "mode": "form",
        "message": format!("toolhost: permission needed\n{}", question.text()),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "title": "Allow?",
                    "enum": question.answers(),
                },
                "reason": {
                    "type": "string",
                    "title": "Reason (told to the model when you deny)",
                },
            },
            "required": ["answer"],
        },
    })
}

/// The answer an elicitation result gives `question`: declined or
/// cancelled is a denial; an answer not offered is none.
fn answer_of(question: &Question, result: &Value) -> Option<Answer> {
    let action: ElicitationAction = serde_json::from_value(result.get("action")?.clone()).ok()?;
    if action != ElicitationAction::Accept {
        return Some(Answer::Deny { reason: None });
    }
    let content = result.get("content")?;
    let name = content.get("answer")?.as_str()?;
    if !question.answers().contains(&name) {
        return None;
    }
    let reason = content
        .get("reason")
        .and_then(|r| r.as_str())
        .map(str::to_string);
    Answer::from_name(name, reason)
}

/// One round of a 2026-07-28 `tools/call`: the answers its retry brought,
/// and the first question it needs that has none (the call is stopped
/// there, and answered with an input-required result).
pub(super) struct Round {
    cancel: CancellationToken,
    answered: Vec<Answered>,
    /// The answers to the tool's own requests so far, by their keys.
    inputs: BTreeMap<String, Value>,
    /// What the client declared it can answer (in the request's `_meta`).
    declared: ClientCaps,
    needed: Mutex<Option<Needed>>,
}

/// Where a round stopped.
#[derive(Clone)]
pub(super) enum Needed {
    /// A permission question of the host's.
    Question(Box<Question>),
    /// The tool's requests that have no answer yet (their params as the
    /// client sees them).
    Inputs(Vec<ClientRequest>),
    /// The tool asked for what the client did not declare.
    Missing(ClientMethod),
}

/// A question answered in an earlier round.
#[derive(Clone, Serialize, Deserialize)]
struct Answered {
    need: Need,
    digest: String,
    answer: Answer,
}

impl Ask for Round {
    fn front_end(&self) -> &str {
        "mcp"
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Option<Answer>> {
        let answered = self
            .answered
            .iter()
            .find(|a| a.need == question.need && a.digest == question.digest);
        let answer = match answered {
            Some(a) => Some(a.answer.clone()),
            None => {
                self.stop(Needed::Question(Box::new(question.clone())));
                None
            }
        };
        Box::pin(async move { answer })
    }
}

impl Round {
    /// Stop the call at `needed` (the first thing it needs, if several
    /// calls of it ask): nothing more of it runs; it is asked and run again.
    fn stop(&self, needed: Needed) {
        let mut first = self.needed.lock().expect("round lock");
        first.get_or_insert(needed);
        self.cancel.cancel();
    }
}

/// A tool's requests on a 2026-07-28 round: answered from the retry's
/// `inputResponses` (and the earlier rounds' answers its state carries),
/// or the call stops and the client is sent the rest.
impl Client for Round {
    fn capabilities(&self) -> ClientCaps {
        self.declared
    }

    fn request<'a>(&'a self, tool: &'a str, requests: &'a [ClientRequest]) -> Answers<'a> {
        let answers = if let Some(r) = requests.iter().find(|r| !self.declared.has(r.method)) {
            // The revision forbids relying on what the client did not
            // declare: the call ends with MissingRequiredClientCapability.
            self.stop(Needed::Missing(r.method));
            Err(ClientError::Cancelled)
        } else {
            let unanswered: Vec<ClientRequest> = requests
                .iter()
                .filter(|r| !self.inputs.get(&r.key).is_some_and(|a| fits(r.method, a)))
                .map(|r| r.attributed(tool))
                .collect();
            if unanswered.is_empty() {
                Ok(requests
                    .iter()
                    .map(|r| self.inputs[&r.key].clone())
                    .collect())
            } else {
                self.stop(Needed::Inputs(unanswered));
                Err(ClientError::Cancelled)
            }
        };
        Box::pin(async move { answers })
    }
}

/// A running task's way to the person's client (SEP-2663): each request is
/// one of the task's `inputRequests`, the task reports `input_required`
/// until `tasks/update` answers it, and the call goes on where it asked
/// (nothing runs again). A cancelled task's pending requests end the call's
/// wait as a cancellation.
pub(super) struct TaskClient {
    /// The task, once the call became one.
    task: tokio::sync::watch::Sender<Option<Arc<rmcp::task_manager::TaskContext>>>,
    /// Told when the call asks before it is a task: it must become one.
    wanted: tokio::sync::Notify,
    declared: ClientCaps,
    /// Keys are unique over a task's life; each request gets a new one.
    next: std::sync::atomic::AtomicU64,
}

impl TaskClient {
    pub(super) fn new(declared: ClientCaps) -> TaskClient {
        TaskClient {
            task: tokio::sync::watch::Sender::new(None),
            wanted: tokio::sync::Notify::new(),
            declared,
            next: Default::default(),
        }
    }

    /// The call became the task `task`.
    pub(super) fn attach(&self, task: Arc<rmcp::task_manager::TaskContext>) {
        self.task.send_replace(Some(task));
    }

    /// Resolves once the call asked the client while it is not yet a task.
    pub(super) async fn wants_task(&self) {
        self.wanted.notified().await;
    }

    /// The task, made one now if the call is not yet.
    async fn task(&self) -> Result<Arc<rmcp::task_manager::TaskContext>, ClientError> {
        let mut task = self.task.subscribe();
        if task.borrow().is_none() {
            self.wanted.notify_one();
        }
        let attached = task.wait_for(Option::is_some).await;
        attached
            .map(|t| t.clone().expect("waited for a task"))
            .map_err(|_| ClientError::Cancelled)
    }
}

impl Client for TaskClient {
    fn capabilities(&self) -> ClientCaps {
        self.declared
    }

    fn request<'a>(&'a self, tool: &'a str, requests: &'a [ClientRequest]) -> Answers<'a> {
        Box::pin(async move {
            let task = self.task().await?;
            let asks = requests.iter().map(|r| {
                let task = task.clone();
                let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let key = format!("{}-{n}", r.key);
                let r = r.attributed(tool);
                let request = json!({"method": r.method.method(), "params": r.params});
                async move {
                    let request = serde_json::from_value(request)
                        .map_err(|e| ClientError::Failed(format!("forming the request: {e}")))?;
                    let answer = task
                        .request_input(key, request)
                        .await
                        .map_err(|_| ClientError::Cancelled)?;
                    if fits(r.method, &answer) {
                        Ok(answer)
                    } else {
                        Err(ClientError::Failed(format!(
                            "the client's answer to {} is not one: {answer}",
                            r.method.method()
                        )))
                    }
                }
            });
            futures::future::try_join_all(asks).await
        })
    }
}

/// Whether `answer` has the shape of a result of `method`; a response
/// that does not is asked for again (SEP-2322: validate what comes back).
fn fits(method: ClientMethod, answer: &Value) -> bool {
    match method {
        ClientMethod::Elicitation => answer.get("action").is_some_and(Value::is_string),
        ClientMethod::Sampling => answer
            .get("content")
            .is_some_and(|c| c.is_object() || c.is_array()),
        ClientMethod::Roots => answer.get("roots").is_some_and(Value::is_array),
    }
}

/// What the client of `context` declared it can answer.
pub(super) fn declared(context: &RequestContext<RoleServer>) -> ClientCaps {
    let caps = context.client_capabilities();
    let caps = caps.as_ref();
    ClientCaps {
        elicitation: caps.is_some_and(|c| c.elicitation.is_some()),
        sampling: caps.is_some_and(|c| c.sampling.is_some()),
        roots: caps.is_some_and(|c| c.roots.is_some()),
    }
}

/// The client of a session that takes requests from the server
/// (2025-11-25 and earlier): each request is sent as it is, in turn.
pub(super) struct LiveClient {
    peer: Peer<RoleServer>,
    declared: ClientCaps,
}

impl LiveClient {
    pub(super) fn of(context: &RequestContext<RoleServer>) -> LiveClient {
        LiveClient {
            peer: context.peer.clone(),
            declared: declared(context),
        }
    }
}

impl Client for LiveClient {
    fn capabilities(&self) -> ClientCaps {
        self.declared
    }

    fn request<'a>(&'a self, tool: &'a str, requests: &'a [ClientRequest]) -> Answers<'a> {
        Box::pin(async move {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                if !self.declared.has(request.method) {
                    return Err(ClientError::NotSupported(request.method));
                }
                let request = request.attributed(tool);
                let wire = json!({"method": request.method.method(), "params": request.params});
                let wire: ServerRequest = serde_json::from_value(wire).map_err(|e| {
                    ClientError::Failed(format!("the request {} is malformed: {e}", request.key))
                })?;
                let response = send(&self.peer, wire).await.map_err(ClientError::Failed)?;
                answers.push(
                    serde_json::to_value(response)
                        .map_err(|e| ClientError::Failed(format!("the client's answer: {e}")))?,
                );
            }
            Ok(answers)
        })
    }
}

impl Round {
    /// Where the round stopped, if it did.
    pub(super) fn needed(&self) -> Option<Needed> {
        self.needed.lock().expect("round lock").clone()
    }
}

//! Asking the person.
//!
//! A call that needs what it was not granted (an HTTP host for an
//! extension), or that an `ask` rule names, may ask the person behind the
//! front end: the terminal of `toolhost run`, a `serve` client, an MCP
//! client that can elicit, or an embedder's callback ([`Ask`]). Only the
//! front end ever answers: nothing the model writes (its arguments) and
//! nothing a tool can write (a workspace file) reaches the answer.
//!
//! One [`Asker`] serves one session of a front end: it asks one question at
//! a time, keeps what was allowed "for this session", and bounds the wait
//! for an answer. A call reaches it through its [`CallAsking`], which knows
//! the call (its tool, component and arguments) and says what the rules,
//! the session's answers and the person decide.

use super::{Decision, Rules, Subject, Verdict};
use crate::display::escape;
use crate::ops::usage::{Usage, Use};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The most questions one call asks the person.
pub const MAX_QUESTIONS: u32 = 8;

/// What one call asked.
#[derive(Default)]
struct Asked {
    count: u32,
    /// Needs the person refused, with the refusal's text.
    refused: Vec<(Need, String)>,
}

/// How long a question waits for its answer by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// What a call needs that the person may allow.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Need {
    /// The call itself, with its arguments, which an `ask` rule names.
    Call,
    /// A shell tool's command line, which an `ask` rule names or which the
    /// rules cannot read.
    Command { line: String },
    /// An HTTP host (and port) the component was not granted.
    Host { host: String, port: u16 },
    /// A program the component was not granted, as it names it.
    Program { program: String },
    /// The network for a shell command line run without it (`--no-network`).
    Network { line: String },
    /// A path outside the granted roots (its real path): a file, or a
    /// directory with everything in it; to read, or to write.
    Path {
        path: String,
        write: bool,
        directory: bool,
    },
}

impl Need {
    /// What it asks for, as a clause: `run the command: git push`.
    pub fn describe(&self) -> String {
        match self {
            Need::Call => "make this call".into(),
            Need::Command { line } => format!("run the command: {}", escape(line)),
            Need::Host { host, port } => {
                format!("send HTTP requests to {}:{port}", escape(host))
            }
            Need::Program { program } => format!("run the program {}", escape(program)),
            Need::Network { line } => {
                format!("use the network in the command: {}", escape(line))
            }
            Need::Path {
                path, write: true, ..
            } => format!("write {} (outside the granted roots)", escape(path)),
            Need::Path {
                path,
                directory: true,
                ..
            } => format!(
                "read the directory {} and everything in it (outside the granted roots)",
                escape(path)
            ),
            Need::Path { path, .. } => {
                format!("read {} (outside the granted roots)", escape(path))
            }
        }
    }

    /// The allow rule an "always" answer to `tool`'s question writes;
    /// `None` when the need can only be allowed for a session.
    pub fn rule(&self, tool: &str) -> Option<String> {
        // A name that a pattern would read as more than itself (`*`, a
        // parenthesis) is never written as a rule: it would allow more
        // than the person was asked about.
        let plain = |text: &str| {
            !text
                .chars()
                .any(|c| matches!(c, '*' | '(' | ')') || c.is_whitespace() || c.is_control())
        };
        let plain_path = |path: &str| {
            !path.chars().any(|c| {
                matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '(' | ')') || c.is_control()
            })
        };
        match self {
            Need::Host { host, .. } if !plain(host) => None,
            Need::Program { program } if !plain(program) => None,
            Need::Path { path, .. } if !plain_path(path) => None,
            Need::Path {
                path,
                directory: true,
                ..
            } => Some(format!("{tool}({path}/**)")),
            Need::Path { path, .. } => Some(format!("{tool}({path})")),
            // The exact line, when no character of it reads as a pattern.
            Need::Network { line } if plain_path(line) && !line.contains('\n') => {
                Some(format!("network({line})"))
            }
            Need::Network { .. } => None,
            Need::Host { host, port } => Some(format!("http({host}:{port})")),
            Need::Program { program } => Some(format!("process({program})")),
            Need::Call | Need::Command { .. } => None,
        }
    }
}

/// A question to the person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The tool whose call asks.
    pub tool: String,
    pub tool_call_id: String,
    /// Where the tool's component came from: `built-in` or its file.
    pub component: String,
    /// The component's digest (`blake3:…`): an "always" answer is pinned to it.
    pub digest: String,
    pub need: Need,
    /// The call's arguments, as the model wrote them.
    pub arguments: Value,
    /// The `ask` rule that asks; `None` when nothing was granted and the
    /// default is to ask, or when the rules could not read a command line.
    pub rule: Option<String>,
    /// Whether "always" is an answer (not to an `ask` rule: the rule would
    /// ask again, so what it asks is allowed once or for the session).
    pub always: bool,
}

impl Question {
    /// The question as a person reads it, every control character of what
    /// the model or a tool chose escaped (`\x0a`, `\x1b`), the arguments
    /// cut at 2,000 characters:
    ///
    /// ```text
    /// Tool wc (component /home/u/.config/toolhost/extensions/wc.wasm, blake3:4f2a…)
    /// wants to send HTTP requests to api.github.com:443
    /// because nothing grants it (permissions.default = "ask").
    /// Arguments: {"url":"https://api.github.com/x"}
    /// ```
    pub fn text(&self) -> String {
        let why = match (&self.rule, &self.need) {
            (Some(rule), _) => format!("the rule ask = [{:?}] asks about it", escape(rule)),
            (None, Need::Command { .. }) => {
                "the permission rules cannot tell which commands it runs".into()
            }
            (None, _) => "nothing grants it (permissions.default = \"ask\")".into(),
        };
        let mut arguments = serde_json::to_string(&self.arguments).unwrap_or_default();
        if let Some((cut, _)) = arguments.char_indices().nth(SHOWN_ARGUMENTS) {
            let more = arguments.len() - cut;
            arguments.truncate(cut);
            arguments.push_str(&format!("… ({more} more bytes)"));
        }
        format!(
            "Tool {} (component {}, {})\nwants to {}\nbecause {why}.\nArguments: {}",
            escape(&self.tool),
            escape(&self.component),
            self.digest,
            self.need.describe(),
            escape(&arguments),
        )
    }

    /// The answers the person may give, as their wire names.
    pub fn answers(&self) -> &'static [&'static str] {
        if self.always {
            &["once", "session", "always", "deny"]
        } else {
            &["once", "session", "deny"]
        }
    }
}

/// The most of a call's arguments a question shows: a flood of them must
/// not push what is asked off the person's screen.
const SHOWN_ARGUMENTS: usize = 2000;

/// The person's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "camelCase")]
pub enum Answer {
    /// Allowed for this call.
    Once,
    /// Allowed for the rest of the session.
    Session,
    /// Allowed from now on: written to the user's `toolhost.toml`, pinned
    /// to the component's digest.
    Always,
    /// Refused, with a reason the model sees.
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl Answer {
    /// The answer's wire name, for the audit log.
    pub fn name(&self) -> &'static str {
        match self {
            Answer::Once => "once",
            Answer::Session => "session",
            Answer::Always => "always",
            Answer::Deny { .. } => "deny",
        }
    }

    /// The answer a front end's words name (`once`, `session`, `always`,
    /// `deny`), with the reason a denial gives.
    pub fn from_name(name: &str, reason: Option<String>) -> Option<Answer> {
        Some(match name {
            "once" => Answer::Once,
            "session" => Answer::Session,
            "always" => Answer::Always,
            "deny" => Answer::Deny {
                reason: reason.filter(|r| !r.trim().is_empty()),
            },
            _ => return None,
        })
    }
}

/// A front end that can ask its person ([`crate::HostBuilder::ask`] for an
/// embedder's own).
pub trait Ask: Send + Sync {
    /// The front end's name, for the audit log: `terminal`, `serve`, `mcp`,
    /// `library`.
    fn front_end(&self) -> &str;

    /// Ask `question`; `None` when no person can answer here (a pipe, a
    /// client that cannot be asked). Dropping the future withdraws the
    /// question.
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Option<Answer>>;
}

/// One session's asking (see the module docs).
pub struct Asker {
    person: Arc<dyn Ask>,
    /// What was allowed for the session: (digest, need).
    session: Mutex<HashSet<(String, Need)>>,
    one_at_a_time: tokio::sync::Mutex<()>,
    wait: Duration,
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asker")
            .field("front_end", &self.person.front_end())
            .finish()
    }
}

impl Asker {
    /// A session asking through `person`, each question waiting at most
    /// [`DEFAULT_WAIT`].
    pub fn new(person: Arc<dyn Ask>) -> Arc<Asker> {
        Self::with_wait(person, DEFAULT_WAIT)
    }

    /// A session asking through `person`, each question waiting at most `wait`.
    pub fn with_wait(person: Arc<dyn Ask>, wait: Duration) -> Arc<Asker> {
        Arc::new(Asker {
            person,
            session: Mutex::new(HashSet::new()),
            one_at_a_time: tokio::sync::Mutex::new(()),
            wait,
        })
    }

    fn allowed_for_session(&self, digest: &str, need: &Need) -> bool {
        let session = self.session.lock().expect("session answers");
        session.contains(&(digest.to_string(), need.clone()))
    }

    fn allow_for_session(&self, digest: &str, need: &Need) {
        let mut session = self.session.lock().expect("session answers");
        session.insert((digest.to_string(), need.clone()));
    }
}

/// What a call asks with: the rules, its session's [`Asker`] (none: no
/// person), where "always" is written, and who the call is.
pub(crate) struct CallAsking {
    pub rules: Arc<Rules>,
    pub asker: Option<Arc<Asker>>,
    /// The user's `toolhost.toml`, where "always" answers go (none: the host
    /// reads no user file, and "always" is for the session).
    pub always: Option<PathBuf>,
    pub tool: String,
    pub tool_call_id: String,
    pub component: String,
    pub digest: String,
    pub arguments: Value,
    /// Never asked about.
    pub protected: Arc<crate::ops::fs::ProtectedPaths>,
    /// The places outside the roots this call was allowed (`paths`).
    pub(super) places: Mutex<Vec<Place>>,
    /// Its commands get the network, which the shell's policy withholds
    /// (`network(…)` rules, or the person).
    network: std::sync::atomic::AtomicBool,
    /// How many questions it asked, and what the person refused it.
    asked: Mutex<Asked>,
    /// Time spent waiting for answers, in microseconds: it does not count
    /// against the call's time limit.
    waited: AtomicU64,
}

/// A place outside the roots one call was allowed.
pub(crate) struct Place {
    pub(super) real: PathBuf,
    pub(super) directory: bool,
    pub(super) write: bool,
    pub(super) fs: Arc<crate::ops::fs::LocalFs>,
}

impl Place {
    /// Whether the place covers an Operation on `real`: reading it, writing
    /// it, or (`mkdir`) creating it as a directory, which an approved write
    /// of something inside it covers (its parents are made first).
    pub(super) fn covers(&self, real: &std::path::Path, write: bool, mkdir: bool) -> bool {
        (self.write || !write)
            && (self.real == real
                || (self.directory && real.starts_with(&self.real))
                || (mkdir && self.write && self.real.starts_with(real)))
    }
}

/// The HTTP Operations ask through this for a host not granted.
impl crate::ops::http_client::AskForHost for CallAsking {
    fn allow_host<'a>(
        &'a self,
        (host, port): (String, u16),
        refusal: &'a str,
        call: &'a dyn crate::ops::http_client::CallWatch,
    ) -> futures::future::BoxFuture<'a, Result<(), String>> {
        let need = Need::Host { host, port };
        Box::pin(self.need(need, refusal, call.cancel(), call.usage()))
    }
}

impl CallAsking {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        rules: Arc<Rules>,
        asker: Option<Arc<Asker>>,
        always: Option<PathBuf>,
        tool: &str,
        tool_call_id: &str,
        component: String,
        digest: &str,
        arguments: Value,
        protected: Arc<crate::ops::fs::ProtectedPaths>,
    ) -> CallAsking {
        CallAsking {
            rules,
            asker,
            always,
            protected,
            places: Mutex::default(),
            network: Default::default(),
            asked: Mutex::default(),
            tool: tool.to_string(),
            tool_call_id: tool_call_id.to_string(),
            component,
            digest: digest.to_string(),
            arguments,
            waited: AtomicU64::new(0),
        }
    }

    /// How long the call has waited for answers.
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_micros(self.waited.load(Ordering::Relaxed))
    }

    /// What the rules say of `need` of this call: the subject they match is
    /// the need itself, so that what is judged is what is asked about.
    fn decide(&self, need: &Need) -> Option<Decision> {
        let arguments;
        let subject = match need {
            Need::Call => {
                arguments = self.arguments.to_string();
                Subject::Call {
                    tool: &self.tool,
                    arguments: &arguments,
                }
            }
            Need::Command { line } => Subject::Command {
                tool: &self.tool,
                line,
            },
            Need::Network { line } => Subject::Command {
                tool: "network",
                line,
            },
            Need::Host { host, port } => Subject::Host { host, port: *port },
            Need::Program { program } => Subject::Program { program },
            Need::Path { path, .. } => Subject::Path {
                tool: &self.tool,
                path: std::path::Path::new(path),
            },
        };
        self.rules.decide(&subject, &self.digest)
    }

    /// What the rules say of the call itself (`Need::Call`, or a shell
    /// tool's `Need::Command`), before it runs: `Err` with the text the
    /// model sees when a rule denies it or the person does. A call no `deny`
    /// or `ask` rule names goes on.
    pub(crate) async fn check_call(
        &self,
        need: Need,
        cancel: &CancellationToken,
        usage: &Usage,
    ) -> Result<(), String> {
        match self.decide(&need) {
            None
            | Some(Decision {
                verdict: Verdict::Allow,
                ..
            }) => Ok(()),
            Some(decision) => self.settle(need, decision, None, cancel, usage).await,
        }
    }

    /// Whether the call's commands get the network the shell withholds.
    pub(crate) fn network(&self) -> bool {
        self.network.load(Ordering::Relaxed)
    }

    /// The network for the shell command `line`, which runs without it:
    /// given when the `network(…)` rules allow every command of the line, or
    /// the person does when one asks. `Err` when the person refused (or
    /// could not be asked); a `deny` rule, or no rule speaking of the line,
    /// leaves it running without, as before.
    pub(crate) async fn check_network(
        &self,
        line: &str,
        cancel: &CancellationToken,
        usage: &Usage,
    ) -> Result<(), String> {
        let need = Need::Network {
            line: line.to_string(),
        };
        let Some(decision) = self.decide(&need) else {
            return Ok(());
        };
        match decision.verdict {
            // Without the network, as the host was told.
            Verdict::Deny => Ok(()),
            Verdict::Allow => {
                self.network.store(true, Ordering::Relaxed);
                Ok(())
            }
            Verdict::Ask => {
                self.ask(need, decision.rule, None, cancel, usage).await?;
                self.network.store(true, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// A need the call's grants do not cover: `refusal` (the text the model
    /// saw before asking existed) unless a rule or the person allows it.
    pub(crate) async fn need(
        &self,
        need: Need,
        refusal: &str,
        cancel: &CancellationToken,
        usage: &Usage,
    ) -> Result<(), String> {
        let decision = self.decide(&need).unwrap_or(Decision {
            verdict: self.rules.default_verdict(),
            rule: None,
        });
        self.settle(need, decision, Some(refusal), cancel, usage)
            .await
    }

    async fn settle(
        &self,
        need: Need,
        decision: Decision,
        refusal: Option<&str>,
        cancel: &CancellationToken,
        usage: &Usage,
    ) -> Result<(), String> {
        let rule = decision.rule.clone();
        match decision.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny => Err(match (rule, refusal) {
                (Some(rule), _) => format!(
                    "Permission denied: the rule deny = [{:?}] in toolhost.toml refuses to {}.",
                    escape(&rule),
                    need.describe()
                ),
                (None, Some(refusal)) => refusal.to_string(),
                (None, None) => format!("Permission denied: {}.", need.describe()),
            }),
            Verdict::Ask => self.ask(need, rule, refusal, cancel, usage).await,
        }
    }

    async fn ask(
        &self,
        need: Need,
        rule: Option<String>,
        refusal: Option<&str>,
        cancel: &CancellationToken,
        usage: &Usage,
    ) -> Result<(), String> {
        let Some(asker) = &self.asker else {
            return Err(no_person(&self.tool, &need, rule.as_deref(), refusal));
        };
        if asker.allowed_for_session(&self.digest, &need) {
            return Ok(());
        }
        // A call does not ask again what its person refused, nor more than
        // a few questions: a hostile tool cannot flood the person.
        {
            let mut asked = self.asked.lock().expect("asked lock");
            if let Some(refused) = asked.refused.iter().find(|(n, _)| *n == need) {
                return Err(refused.1.clone());
            }
            if asked.count >= MAX_QUESTIONS {
                return Err(format!(
                    "{}\nThe call asked the person {MAX_QUESTIONS} questions already; toolhost \
                     asks no more for one call.",
                    refusal.unwrap_or("Permission refused.")
                ));
            }
            asked.count += 1;
        }
        let question = Question {
            tool: self.tool.clone(),
            tool_call_id: self.tool_call_id.clone(),
            component: self.component.clone(),
            digest: self.digest.clone(),
            always: rule.is_none() && self.always.is_some() && need.rule(&self.tool).is_some(),
            need,
            arguments: self.arguments.clone(),
            rule,
        };
        let started = Instant::now();
        let answer = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(crate::message::OPERATION_ABORTED.to_string()),
            answer = async {
                let _turn = asker.one_at_a_time.lock().await;
                // Another call of the session may have been allowed the same
                // while this one waited its turn: not asked.
                if asker.allowed_for_session(&self.digest, &question.need) {
                    return Ok(None);
                }
                tokio::time::timeout(asker.wait, asker.person.ask(&question))
                    .await
                    .map(Some)
                    .map_err(|_| {
                        format!(
                            "No answer came within {} s: the person was asked whether tool {} \
                             may {}, and did not answer.",
                            asker.wait.as_secs(),
                            question.tool,
                            question.need.describe()
                        )
                    })
            } => answer,
        };
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.waited.fetch_add(micros, Ordering::Relaxed);
        let front_end = asker.person.front_end();
        let noted = |said: &str| {
            usage.note(
                Use::Asked,
                &format!("{}: {said} ({front_end})", question.need.describe()),
            )
        };
        let answer = match answer {
            Err(text) => {
                noted("no answer");
                return Err(text);
            }
            Ok(None) => return Ok(()),
            Ok(Some(None)) => {
                noted("nobody to ask");
                let rule = question.rule.as_deref();
                return Err(no_person(&self.tool, &question.need, rule, refusal));
            }
            Ok(Some(Some(answer))) => answer,
        };
        noted(answer.name());
        match answer {
            Answer::Once => Ok(()),
            Answer::Session => {
                asker.allow_for_session(&self.digest, &question.need);
                Ok(())
            }
            Answer::Always => {
                asker.allow_for_session(&self.digest, &question.need);
                if let (true, Some(path), Some(rule)) = (
                    question.always,
                    &self.always,
                    question.need.rule(&self.tool),
                ) {
                    // The answer stands for this session even when the file
                    // cannot take it; the audit line says why.
                    if let Err(e) = super::always::write(path, &rule, &self.digest) {
                        usage.note(Use::Asked, &format!("always not written: {e}"));
                    }
                }
                Ok(())
            }
            Answer::Deny { reason } => {
                let text = match reason {
                    Some(reason) => format!(
                        "The person denied permission to {}: {}",
                        question.need.describe(),
                        escape(&reason)
                    ),
                    None => format!(
                        "The person denied permission to {}.",
                        question.need.describe()
                    ),
                };
                let mut asked = self.asked.lock().expect("asked lock");
                asked.refused.push((question.need.clone(), text.clone()));
                Err(text)
            }
        }
    }
}

/// The refusal of a call that would have been asked about where no person
/// can answer, saying what the person can do instead.
fn no_person(tool: &str, need: &Need, rule: Option<&str>, refusal: Option<&str>) -> String {
    let asked = format!(
        "Permission to {} needs the person's answer, and no person can be asked here \
         (toolhost runs without a terminal or a client that can ask).",
        need.describe()
    );
    let how = match (rule, need.rule(tool)) {
        (Some(rule), _) => format!(
            "The person can run it where toolhost can ask them, or change the rule ask = [{:?}] \
             in their toolhost.toml.",
            escape(rule)
        ),
        (None, Some(allow)) => format!(
            "The person can grant it in their toolhost.toml: [permissions] allow = [{allow:?}]."
        ),
        (None, None) => "The person can run it where toolhost can ask them.".into(),
    };
    match refusal {
        Some(refusal) => format!("{refusal}\n{asked} {how}"),
        None => format!("{asked} {how}"),
    }
}

//! Permission rules: what the person allows, wants to be asked about, and
//! denies, over a tool and its arguments (`[permissions]` in the user's
//! `toolhost.toml`):
//!
//! ```toml
//! [permissions]
//! default = "deny"            # or "ask": what is not granted and no rule names
//! allow = ["bash(git status*)", "read(~/notes/**)", "http(api.github.com)", "wc(*)"]
//! ask = ["bash(git push*)"]
//! deny = ["bash(rm *)", "read(~/.ssh/**)"]
//! ```
//!
//! A rule is a tool's name, alone (any call of it) or with a pattern in
//! parentheses, matched against what the call names:
//! - a shell tool's command (`bash`): each simple command of its lists and
//!   pipelines, after quote removal ([`shell`]), against a pattern where
//!   `*` is any text. Every command must be allowed for the line to be; a
//!   line the parser does not fully understand is never allowed by a
//!   pattern, and is asked about when any rule speaks of the tool;
//! - a path (`read`, `write`, `edit`, `ls`, `find`, `grep`): a glob over the
//!   absolute path (`*` within a directory, `**` across), `~/` being the
//!   home directory and a relative pattern the workspace's;
//! - `http(host)`: an extension's request to a host (`*.example.com` for
//!   its subdomains, `host:port` for one port);
//! - `process(program)`: a program an extension starts, as it names it;
//! - `network(command)`: the network for a shell command run without it
//!   (`--no-network`), read command by command as for `bash`;
//! - any other tool: its arguments as compact JSON, `*` any text.
//!
//! Precedence: deny, then ask, then allow. A workspace's `toolhost.toml`
//! may add `deny` and `ask` rules; its `allow` rules are ignored (a file the
//! agent's tools can write never allows anything).
//!
//! An allow rule may be pinned to one component, `{ rule = "http(api.github.com)",
//! digest = "blake3:…" }`: it then allows only that component's calls. An
//! "always" answer is written so ([`always`]).

pub(crate) mod always;
pub(crate) mod ask;
mod paths;
mod pattern;
pub(crate) mod shell;

pub use ask::{Answer, Ask, Asker, DEFAULT_WAIT, Need, Question};
use pattern::Pattern;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The `[permissions]` table as a `toolhost.toml` writes it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsSpec {
    pub default: Option<String>,
    pub allow: Vec<AllowEntry>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

/// An allow rule: for every component, or pinned to one by its digest.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum AllowEntry {
    Rule(String),
    Pinned { rule: String, digest: String },
}

impl AllowEntry {
    fn rule(&self) -> &str {
        match self {
            AllowEntry::Rule(rule) | AllowEntry::Pinned { rule, .. } => rule,
        }
    }

    fn digest(&self) -> Option<&str> {
        match self {
            AllowEntry::Rule(_) => None,
            AllowEntry::Pinned { digest, .. } => Some(digest),
        }
    }
}

impl From<&str> for AllowEntry {
    fn from(rule: &str) -> AllowEntry {
        AllowEntry::Rule(rule.to_string())
    }
}

/// What a rule, or the default, says of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// What a call needs that a rule can speak of.
#[derive(Clone, Copy, Debug)]
pub enum Subject<'a> {
    /// A shell tool's command line.
    Command { tool: &'a str, line: &'a str },
    /// A path a tool reads or writes (absolute).
    Path { tool: &'a str, path: &'a Path },
    /// A host an extension's HTTP request goes to.
    Host { host: &'a str, port: u16 },
    /// A program an extension starts, as it names it (`process(curl)`).
    Program { program: &'a str },
    /// Any other call: its arguments as compact JSON.
    Call { tool: &'a str, arguments: &'a str },
}

impl Subject<'_> {
    fn tool(&self) -> &str {
        match self {
            Subject::Command { tool, .. }
            | Subject::Path { tool, .. }
            | Subject::Call { tool, .. } => tool,
            Subject::Host { .. } => "http",
            Subject::Program { .. } => "process",
        }
    }
}

/// The verdict on a subject, and the rule that gave it (`None`: the line
/// was not understood, so it is asked about).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub rule: Option<String>,
}

/// One rule.
#[derive(Clone, Debug)]
struct Rule {
    /// As written, for messages and the audit log.
    text: String,
    tool: String,
    /// `None`: every call of the tool.
    pattern: Option<Pattern>,
    /// Only the component with this digest (allow rules).
    digest: Option<String>,
}

/// The rules of the user's file, with a trusted workspace's deny and ask
/// rules added.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    default_ask: bool,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
}

/// Where relative and home-relative path patterns are anchored.
#[derive(Clone, Debug)]
pub struct Anchors {
    pub home: Option<PathBuf>,
    pub workspace: PathBuf,
}

impl Rules {
    /// The rules of the user's `[permissions]` and, when a person trusted
    /// it, the workspace's; what was left out of the workspace's (its
    /// `allow` rules, its `default`) is said in the warnings. An error names
    /// the file's list, the rule and what is wrong with it.
    pub fn new(
        user: &PermissionsSpec,
        workspace: Option<&PermissionsSpec>,
        anchors: &Anchors,
    ) -> Result<(Rules, Vec<String>), String> {
        let default_ask = match user.default.as_deref() {
            None | Some("deny") => false,
            Some("ask") => true,
            Some(other) => {
                return Err(format!(
                    "permissions.default: {other:?} is neither \"deny\" nor \"ask\""
                ));
            }
        };
        let mut rules = Rules {
            default_ask,
            deny: parse_list(&user.deny, "permissions.deny", anchors)?,
            ask: parse_list(&user.ask, "permissions.ask", anchors)?,
            allow: parse_allow(&user.allow, anchors)?,
        };
        let mut warnings = Vec::new();
        if let Some(ws) = workspace {
            let at = "the workspace's permissions";
            rules
                .deny
                .extend(parse_list(&ws.deny, &format!("{at}.deny"), anchors)?);
            rules
                .ask
                .extend(parse_list(&ws.ask, &format!("{at}.ask"), anchors)?);
            if !ws.allow.is_empty() {
                warnings.push(format!(
                    "{at}.allow is ignored ({}): only the user's toolhost.toml may allow",
                    ws.allow
                        .iter()
                        .map(AllowEntry::rule)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if ws.default.is_some() {
                warnings.push(format!(
                    "{at}.default is ignored: only the user's toolhost.toml sets it"
                ));
            }
        }
        Ok((rules, warnings))
    }

    /// The `deny` and `ask` rules of the built-in path tools that name a
    /// place inside `root` (a granted root: the workspace), where the grants
    /// decide and such a rule would never be consulted: said to the person
    /// at load, so that no rule is silently without effect.
    pub fn inside(&self, root: &Path) -> Vec<String> {
        const PATH_TOOLS: &[&str] = &["read", "write", "edit", "ls", "find", "grep"];
        self.deny
            .iter()
            .chain(&self.ask)
            .filter(|r| PATH_TOOLS.contains(&r.tool.as_str()))
            .filter(|r| r.pattern.as_ref().is_some_and(|p| p.starts_inside(root)))
            .map(|r| r.text.clone())
            .collect()
    }

    /// What a call that needs something it was not granted gets when no
    /// rule speaks of it: `Deny` (today's refusal) or `Ask`.
    pub fn default_verdict(&self) -> Verdict {
        if self.default_ask {
            Verdict::Ask
        } else {
            Verdict::Deny
        }
    }

    /// The allow rules pinned to the component `digest`.
    pub fn pinned_to(&self, digest: &str) -> Vec<String> {
        self.allow
            .iter()
            .filter(|r| r.digest.as_deref() == Some(digest))
            .map(|r| r.text.clone())
            .collect()
    }

    /// Whether the rules change nothing: no rule, and the default refuses.
    pub fn is_inert(&self) -> bool {
        !self.default_ask && self.deny.is_empty() && self.ask.is_empty() && self.allow.is_empty()
    }

    /// Whether any rule names `tool` (a call of a tool no rule names needs
    /// no look at its arguments).
    pub fn speak_of(&self, tool: &str) -> bool {
        [&self.deny, &self.ask, &self.allow]
            .iter()
            .any(|list| list.iter().any(|r| r.tool == tool))
    }

    /// What the rules say of `subject` needed by a call of the component
    /// `digest`; `None` when no rule speaks of it.
    pub fn decide(&self, subject: &Subject<'_>, digest: &str) -> Option<Decision> {
        let tool = subject.tool();
        fn of_tool<'r>(list: &'r [Rule], tool: &str, digest: &str) -> Vec<&'r Rule> {
            list.iter()
                .filter(|r| r.tool == tool && r.digest.as_ref().is_none_or(|d| d == digest))
                .collect()
        }
        let (deny, ask, allow) = (
            of_tool(&self.deny, tool, digest),
            of_tool(&self.ask, tool, digest),
            of_tool(&self.allow, tool, digest),
        );
        let decided = |verdict, rule: &Rule| {
            Some(Decision {
                verdict,
                rule: Some(rule.text.clone()),
            })
        };
        let Subject::Command { line, .. } = subject else {
            for (verdict, list) in [
                (Verdict::Deny, &deny),
                (Verdict::Ask, &ask),
                (Verdict::Allow, &allow),
            ] {
                if let Some(rule) = list.iter().find(|r| r.matches(subject)) {
                    return decided(verdict, rule);
                }
            }
            return None;
        };
        let split = shell::split(line);
        let any_matches = |rule: &&&Rule| match &rule.pattern {
            None => true,
            Some(p) => split.commands.iter().any(|c| p.matches_text(c)),
        };
        if let Some(rule) = deny.iter().find(any_matches) {
            return decided(Verdict::Deny, rule);
        }
        if let Some(rule) = ask.iter().find(any_matches) {
            return decided(Verdict::Ask, rule);
        }
        if let Some(rule) = allow.iter().find(|r| r.pattern.is_none()) {
            return decided(Verdict::Allow, rule);
        }
        if !split.understood {
            // Which commands it runs is not known: asked about when a deny
            // or ask rule speaks of the tool (it might have matched one of
            // them), and never allowed by a pattern.
            return (!deny.is_empty() || !ask.is_empty()).then_some(Decision {
                verdict: Verdict::Ask,
                rule: None,
            });
        }
        let allowed_by = |command: &String| {
            allow
                .iter()
                .find(|r| r.pattern.as_ref().is_some_and(|p| p.matches_text(command)))
        };
        let by: Option<Vec<&&Rule>> = split.commands.iter().map(allowed_by).collect();
        match by {
            Some(rules) if !rules.is_empty() => Some(Decision {
                verdict: Verdict::Allow,
                rule: Some(
                    rules
                        .iter()
                        .map(|r| r.text.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            }),
            _ => None,
        }
    }
}

impl Rule {
    fn matches(&self, subject: &Subject<'_>) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        match subject {
            // Commands are matched one by one (`decide`), never as a line.
            Subject::Command { .. } => false,
            Subject::Path { path, .. } => pattern.matches_path(path),
            Subject::Host { host, port } => pattern.matches_host(host, *port),
            Subject::Call { arguments, .. } => pattern.matches_text(arguments),
            Subject::Program { program } => pattern.matches_text(program),
        }
    }
}

/// The rules of one list; an error names the list, the rule and the cause.
fn parse_list(list: &[String], at: &str, anchors: &Anchors) -> Result<Vec<Rule>, String> {
    list.iter()
        .enumerate()
        .map(|(i, text)| parse_rule(text, anchors).map_err(|e| format!("{at}[{i}] {text:?}: {e}")))
        .collect()
}

/// The user's allow rules, each with its pin.
fn parse_allow(list: &[AllowEntry], anchors: &Anchors) -> Result<Vec<Rule>, String> {
    list.iter()
        .enumerate()
        .map(|(i, entry)| {
            let text = entry.rule();
            let at = |e: String| format!("permissions.allow[{i}] {text:?}: {e}");
            let mut rule = parse_rule(text, anchors).map_err(at)?;
            if let Some(digest) = entry.digest() {
                if !digest.starts_with("blake3:") {
                    return Err(at(format!(
                        "the digest {digest:?} is not a component's (blake3:…)"
                    )));
                }
                rule.digest = Some(digest.to_string());
            }
            Ok(rule)
        })
        .collect()
}

fn parse_rule(text: &str, anchors: &Anchors) -> Result<Rule, String> {
    let text = text.trim();
    let (tool, pattern) = match text.split_once('(') {
        None => (text, None),
        Some((tool, rest)) => {
            let inner = rest
                .strip_suffix(')')
                .ok_or("a rule is `tool` or `tool(pattern)`, and this one does not end with `)`")?;
            (tool.trim(), Some(inner))
        }
    };
    if tool.is_empty()
        || !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!(
            "{tool:?} is not a tool's name (letters, digits, `_`, `-` and `.`)"
        ));
    }
    let pattern = match pattern {
        None | Some("*") => None,
        Some(p) if p.trim().is_empty() => return Err("the pattern in parentheses is empty".into()),
        Some(p) => Some(Pattern::new(p, anchors)?),
    };
    Ok(Rule {
        text: text.to_string(),
        tool: tool.to_string(),
        pattern,
        digest: None,
    })
}

#[cfg(test)]
mod tests;

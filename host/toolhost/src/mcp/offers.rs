//! What the extensions' manifests offer beside their tools: MCP prompts
//! and resources, as data, and their tools' task support. The host keeps
//! these sections as written (`crate::extensions::discovery::Offers`); the
//! server reads and checks them once per host it serves ([`Offers::of`]),
//! and logs what it leaves out.
//!
//! ```toml
//! [[prompts]]
//! name = "review"
//! description = "Review a file"
//! arguments = [{ name = "file", required = true, completions = ["src/", "tests/"] }]
//! messages = [
//!     { text = "Review {file} for bugs." },
//!     { resource = "file:///{file}" },           # embedded, read as resources/read reads it
//!     { image = "iVBORw0…", mime-type = "image/png" },
//! ]
//!
//! [[prompts]]
//! name = "standup"
//! description = "Draft a stand-up note"
//! ask = { message = "What did you work on?", fields = ["work"] }   # a form the person fills
//! messages = [{ text = "Draft a stand-up note about: {work}" }]
//!
//! [[resources]]
//! uri = "notes://today"                           # `{name}` parts make it a template
//! name = "Today's notes"
//! mime-type = "text/markdown"
//! text = "…"                                      # or blob = "<base64>"
//! ```
//!
//!
//! ```toml
//! [tools.migrate]                                 # one of the extension's tools
//! task-support = "required"                       # MCP tasks: forbidden, optional (default), required
//! ```
//!
//! No code runs for them, and everything they say is in the manifest itself,
//! so a workspace extension's offers are covered by the digest its trust
//! approved: nothing beside the manifest can change what a client is shown.
//! A prompt's embedded resource is read through the same checks as
//! `resources/read` (a workspace file `read` could open, or another offered
//! resource), so an argument cannot smuggle in a file a resource could not
//! name.

use serde::{Deserialize, Serialize};

/// A prompt an extension offers.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PromptSpec {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<ArgumentSpec>,
    /// A form the person behind the client fills before the prompt is
    /// built (MCP elicitation); each field is replaced like an argument.
    pub ask: Option<AskSpec>,
    pub messages: Vec<MessageSpec>,
}

/// What a prompt asks the person: a message and the text fields of a form,
/// each required.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AskSpec {
    pub message: String,
    pub fields: Vec<String>,
}

impl AskSpec {
    /// The elicitation form (`elicitation/create`'s params).
    pub fn form(&self) -> serde_json::Value {
        let properties: serde_json::Map<String, serde_json::Value> = self
            .fields
            .iter()
            .map(|f| (f.clone(), serde_json::json!({ "type": "string" })))
            .collect();
        serde_json::json!({
            "mode": "form",
            "message": self.message,
            "requestedSchema": {
                "type": "object",
                "properties": properties,
                "required": self.fields,
            },
        })
    }

    /// The values an elicitation result (`{action, content}`) gives the
    /// fields; why not, when the person declined or left one out.
    pub fn answers(&self, result: &serde_json::Value) -> Result<Vec<(String, String)>, String> {
        match result.get("action").and_then(|a| a.as_str()) {
            Some("accept") => {}
            Some(other) => return Err(format!("the person answered {other}")),
            None => return Err("the answer has no action".into()),
        }
        self.fields
            .iter()
            .map(|field| {
                let value = result
                    .pointer(&format!("/content/{field}"))
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| format!("the answer has no {field}"))?;
                Ok((field.clone(), value.to_string()))
            })
            .collect()
    }
}

/// One argument of a prompt: `{name}` in its messages is replaced by it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ArgumentSpec {
    pub name: String,
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    /// What `completion/complete` offers for it (those starting with what
    /// was typed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completions: Vec<String>,
}

/// One message of a prompt: exactly one of text, image or resource.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MessageSpec {
    #[serde(default)]
    pub role: Role,
    pub text: Option<String>,
    /// Base64 of an image; `mime-type` says which kind.
    pub image: Option<String>,
    pub mime_type: Option<String>,
    /// A resource's URI, embedded with its contents.
    pub resource: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    User,
    Assistant,
}

/// A resource an extension offers; a URI with `{name}` parts is a template,
/// each part standing for one path segment, replaced in its text.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ResourceSpec {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub text: Option<String>,
    /// Base64 of its bytes.
    pub blob: Option<String>,
}

/// How one of the extension's tools runs under MCP's tasks extension.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ToolSettings {
    pub task_support: Option<TaskSupport>,
}

/// MCP's `execution.taskSupport` of a tool: a forbidden one always
/// answers as a request; an optional one becomes a task when it runs long
/// or asks; a required one always runs as a task, and a client that did not
/// declare tasks gets `-32021`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    Forbidden,
    #[default]
    Optional,
    Required,
}

impl TaskSupport {
    pub fn name(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// Offers of one extension, with its name.
#[derive(Clone, Debug, PartialEq)]
pub struct Offered<T> {
    pub extension: String,
    pub spec: T,
}

/// What the loaded extensions offer, first come first served.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offers {
    pub prompts: Vec<Offered<PromptSpec>>,
    pub resources: Vec<Offered<ResourceSpec>>,
    /// The task support each tool declares, by tool name.
    pub task_support: std::collections::BTreeMap<String, TaskSupport>,
}

impl Offers {
    /// What the loaded extensions of `host` offer, read and checked; what
    /// is left out, naming the extension and the offer.
    pub(crate) fn of(host: &crate::host::Host) -> (Offers, Vec<String>) {
        let mut offers = Offers::default();
        let mut problems = Vec::new();
        for report in host.extensions().iter().filter(|r| r.refused.is_none()) {
            let raw = &report.offers;
            let mut own = Vec::new();
            let prompts = read_all(&raw.prompts, "prompt", &mut own);
            let resources = read_all(&raw.resources, "resource", &mut own);
            let mut tools = std::collections::BTreeMap::new();
            for (name, value) in &raw.tools {
                match value.clone().try_into::<ToolSettings>() {
                    Ok(settings) => {
                        tools.insert(name.clone(), settings);
                    }
                    Err(e) => own.push(format!("[tools.{name}] is ignored: {}", e.message())),
                }
            }
            own.extend(offers.add(&report.name, &prompts, &resources));
            own.extend(offers.add_tools(&report.name, &tools, &report.tools));
            let name = &report.name;
            problems.extend(own.into_iter().map(|p| format!("extension {name}: {p}")));
        }
        (offers, problems)
    }

    /// Take what `extension`'s manifest offers; what is wrong with an offer
    /// (it is left out) is returned, naming it.
    pub(crate) fn add(
        &mut self,
        extension: &str,
        prompts: &[PromptSpec],
        resources: &[ResourceSpec],
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let (key, check): (fn(&PromptSpec) -> &str, _) = (|p| &p.name, PromptSpec::check);
        take_first(
            &mut self.prompts,
            (extension, "prompt"),
            prompts,
            &mut problems,
            key,
            check,
        );
        // A scheme is one extension's: another's offer under it would
        // answer for URIs the first one's client expects from it.
        let mut owned = Vec::new();
        for spec in resources {
            let owner = self
                .resources
                .iter()
                .find(|r| r.extension != extension && same_scheme(&r.spec.uri, &spec.uri));
            match owner {
                Some(owner) => problems.push(format!(
                    "resource {:?} is not offered: its scheme is extension {}'s",
                    spec.uri, owner.extension
                )),
                None => owned.push(spec.clone()),
            }
        }
        let (key, check): (fn(&ResourceSpec) -> &str, _) = (|r| &r.uri, ResourceSpec::check);
        let what = (extension, "resource");
        take_first(&mut self.resources, what, &owned, &mut problems, key, check);
        problems
    }

    /// Take the task support `extension`'s manifest declares for its
    /// `tools` (those it provides); what names another tool is returned.
    pub(crate) fn add_tools(
        &mut self,
        extension: &str,
        settings: &std::collections::BTreeMap<String, ToolSettings>,
        tools: &[String],
    ) -> Vec<String> {
        let mut problems = Vec::new();
        for (name, setting) in settings {
            if !tools.contains(name) {
                problems.push(format!(
                    "[tools.{name}] is ignored: extension {extension} provides no tool {name}"
                ));
                continue;
            }
            if let Some(support) = setting.task_support {
                self.task_support.insert(name.clone(), support);
            }
        }
        problems
    }

    /// How the tool `name` runs under MCP's tasks extension.
    pub fn task_support(&self, name: &str) -> TaskSupport {
        self.task_support.get(name).copied().unwrap_or_default()
    }

    pub fn prompt(&self, name: &str) -> Option<&PromptSpec> {
        self.prompts
            .iter()
            .map(|p| &p.spec)
            .find(|p| p.name == name)
    }

    /// The offered resource `uri` names, with the values of its template's
    /// parts. A `file:` URI is the workspace's and never an offer's, whatever
    /// an offer's template would match (the manifests are checked for that
    /// at load too: [`ResourceSpec::check`]).
    pub fn resource(&self, uri: &str) -> Option<(&ResourceSpec, Vec<(String, String)>)> {
        if scheme_of(uri).is_none_or(|s| s.eq_ignore_ascii_case("file")) {
            return None;
        }
        self.resources
            .iter()
            .map(|r| &r.spec)
            .find_map(|r| match_template(&r.uri, uri).map(|values| (r, values)))
    }
}

/// Each of `values` (`what`: `prompt`, `resource`) read as a `T`; what
/// cannot be goes to `problems`, naming it by its place.
fn read_all<T: serde::de::DeserializeOwned>(
    values: &[toml::Value],
    what: &str,
    problems: &mut Vec<String>,
) -> Vec<T> {
    let mut read = Vec::new();
    for (i, value) in values.iter().enumerate() {
        match value.clone().try_into::<T>() {
            Ok(spec) => read.push(spec),
            Err(e) => problems.push(format!("{what} {} is not offered: {}", i + 1, e.message())),
        }
    }
    read
}

/// Add each of `extension`'s `offered` (`what`: `prompt`, `resource`) to
/// `taken`, unless `check` finds it wrong or its `key` is taken already;
/// why not goes to `problems`, naming it.
fn take_first<T: Clone>(
    taken: &mut Vec<Offered<T>>,
    (extension, what): (&str, &str),
    offered: &[T],
    problems: &mut Vec<String>,
    key: fn(&T) -> &str,
    check: fn(&T) -> Result<(), String>,
) {
    for spec in offered {
        let shown = format!("{what} {:?}", key(spec));
        let first = taken.iter().find(|o| key(&o.spec) == key(spec));
        match (check(spec), first) {
            (Err(e), _) => problems.push(format!("{shown} is not offered: {e}")),
            (Ok(()), Some(first)) => problems.push(format!(
                "{shown} is not offered: extension {} offers it already",
                first.extension
            )),
            (Ok(()), None) => taken.push(Offered {
                extension: extension.to_string(),
                spec: spec.clone(),
            }),
        }
    }
}

impl PromptSpec {
    fn check(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("its name is empty".into());
        }
        if self.messages.is_empty() {
            return Err("it has no messages".into());
        }
        if let Some(ask) = &self.ask
            && (ask.fields.is_empty() || ask.fields.iter().any(|f| f.trim().is_empty()))
        {
            return Err("what it asks needs fields with names".into());
        }
        for (i, message) in self.messages.iter().enumerate() {
            let kinds = [&message.text, &message.image, &message.resource]
                .iter()
                .filter(|k| k.is_some())
                .count();
            if kinds != 1 {
                return Err(format!(
                    "message {} must have exactly one of text, image and resource",
                    i + 1
                ));
            }
            if let Some(image) = &message.image {
                decode(image).map_err(|e| format!("message {}: image: {e}", i + 1))?;
                if message
                    .mime_type
                    .as_deref()
                    .is_none_or(|m| !m.starts_with("image/"))
                {
                    return Err(format!(
                        "message {}: an image needs an image mime-type",
                        i + 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// The values of `given` for its arguments, each required one present;
    /// what is missing or unknown otherwise.
    pub fn values(
        &self,
        given: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Vec<(String, String)>, String> {
        if let Some(unknown) = given
            .keys()
            .find(|k| !self.arguments.iter().any(|a| &a.name == *k))
        {
            return Err(format!("Prompt {} has no argument {unknown}", self.name));
        }
        let mut values = Vec::new();
        for argument in &self.arguments {
            match given.get(&argument.name) {
                Some(serde_json::Value::String(value)) => {
                    values.push((argument.name.clone(), value.clone()))
                }
                Some(other) => {
                    return Err(format!(
                        "Prompt {}: argument {} must be a string, not {other}",
                        self.name, argument.name
                    ));
                }
                None if argument.required => {
                    return Err(format!(
                        "Prompt {} needs the argument {}",
                        self.name, argument.name
                    ));
                }
                None => values.push((argument.name.clone(), String::new())),
            }
        }
        Ok(values)
    }
}

impl ResourceSpec {
    fn check(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("its name is empty".into());
        }
        check_uri(&self.uri)?;
        match (&self.text, &self.blob) {
            (Some(_), None) => Ok(()),
            (None, Some(blob)) => decode(blob).map(|_| ()).map_err(|e| format!("blob: {e}")),
            _ => Err("it must have exactly one of text and blob".into()),
        }
    }

    /// Whether its URI has `{name}` parts.
    pub fn is_template(&self) -> bool {
        template_names(&self.uri).next().is_some()
    }
}

fn decode(base64_text: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(base64_text.trim())
        .map_err(|e| format!("not base64: {e}"))
}

/// The scheme of `uri`: what comes before its first `:`, when that is a
/// scheme written out (a letter, then letters, digits, `+`, `.` or `-`).
fn scheme_of(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    (chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c)))
    .then_some(scheme)
}

fn same_scheme(a: &str, b: &str) -> bool {
    matches!((scheme_of(a), scheme_of(b)), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
}

/// An offered resource's URI keeps to a namespace of its own, which can
/// never match a workspace file's: its scheme written out, never a
/// template part, and never `file` (and the scheme is one extension's:
/// [`Offers::add`]); each `{…}` a
/// template part's name (letters, digits, `_`), so that what is checked
/// here is what [`match_template`] reads.
fn check_uri(uri: &str) -> Result<(), String> {
    let Some(scheme) = scheme_of(uri) else {
        return Err(match uri.split_once(':') {
            None => "its uri has no scheme".into(),
            Some((scheme, _)) => format!(
                "its uri must begin with a scheme written out (a letter, then letters, digits, \
                 +, . or -), not {scheme:?}"
            ),
        });
    };
    if scheme.eq_ignore_ascii_case("file") {
        return Err("file: URIs are the workspace's; an extension offers others".into());
    }
    let mut rest = uri;
    while let Some(at) = rest.find(['{', '}']) {
        if rest[at..].starts_with('}') {
            return Err("its uri has a } without a {".into());
        }
        let close = rest[at..].find('}').ok_or("its uri has a { without a }")? + at;
        let name = &rest[at + 1..close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "{{{name}}} in its uri is no template part (a name of letters, digits and _)"
            ));
        }
        rest = &rest[close + 1..];
    }
    Ok(())
}

/// The `{name}` parts of a template.
fn template_names(template: &str) -> impl Iterator<Item = &str> {
    template.split('{').skip(1).filter_map(|part| {
        let name = part.split_once('}')?.0;
        (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then_some(name)
    })
}

/// The values of `template`'s `{name}` parts that make it `uri` (each one a
/// non-empty run without `/`); `None` when it does not match. A template
/// without parts matches itself only.
pub fn match_template(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    let mut values = Vec::new();
    let (mut t, mut u) = (template, uri);
    loop {
        match t.find('{') {
            None => return (t == u).then_some(values),
            Some(open) => {
                let close = t[open..].find('}')? + open;
                let name = &t[open + 1..close];
                u = u.strip_prefix(&t[..open])?;
                t = &t[close + 1..];
                // The part ends where the template's next literal begins.
                let literal_end = t.find('{').unwrap_or(t.len());
                let literal = &t[..literal_end];
                let end = if literal.is_empty() {
                    if t.is_empty() { u.len() } else { return None }
                } else {
                    u.find(literal)?
                };
                let value = &u[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                values.push((name.to_string(), value.to_string()));
                u = &u[end..];
            }
        }
    }
}

/// `text` with each `{name}` of `values` replaced by its value, in one pass:
/// a value is taken as it is, never read for `{…}` parts itself.
pub fn substitute(text: &str, values: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let part = &rest[open..];
        let value = part.find('}').and_then(|close| {
            let name = &part[1..close];
            values
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, value)| (value, close))
        });
        match value {
            Some((value, close)) => {
                out.push_str(value);
                rest = &part[close + 1..];
            }
            None => {
                out.push('{');
                rest = &part[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_one_segment_per_part() {
        let values = |t, u| match_template(t, u);
        assert_eq!(
            values("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(
            values("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            values("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(values("test://static", "test://static"), Some(vec![]));
        assert_eq!(values("test://static", "test://static2"), None);
        assert_eq!(
            values("x://{a}/{b}", "x://1/2"),
            Some(vec![("a".into(), "1".into()), ("b".into(), "2".into())])
        );
        assert_eq!(
            substitute(r#"{"id":"{id}"}"#, &[("id".into(), "7".into())]),
            r#"{"id":"7"}"#
        );
        // A value is not read again for parts: arg1 stays what was typed.
        let values = [("a".into(), "{b}".into()), ("b".into(), "x".into())];
        assert_eq!(substitute("{a} {b} {c}", &values), "{b} x {c}");
    }

    #[test]
    fn an_offer_that_cannot_be_read_is_left_out_and_named_by_its_place() {
        let values: Vec<toml::Value> = [
            "name = \"p\"\nmessages = [{ text = \"hi\" }]",
            "nme = \"x\"",
        ]
        .iter()
        .map(|text| toml::from_str(text).unwrap())
        .collect();
        let mut problems = Vec::new();
        let read: Vec<PromptSpec> = read_all(&values, "prompt", &mut problems);
        assert_eq!(read.len(), 1);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("prompt 2 is not offered: unknown field `nme`"),
            "{problems:?}"
        );
    }

    #[test]
    fn an_offer_that_is_wrong_or_taken_is_left_out_and_named() {
        let prompt: PromptSpec =
            toml::from_str("name = \"p\"\nmessages = [{ text = \"hi\" }]").unwrap();
        let two_kinds: PromptSpec =
            toml::from_str("name = \"q\"\nmessages = [{ text = \"hi\", resource = \"x://y\" }]")
                .unwrap();
        let file: ResourceSpec =
            toml::from_str("uri = \"file:///etc/passwd\"\nname = \"n\"\ntext = \"t\"").unwrap();
        let mut offers = Offers::default();
        assert!(
            offers
                .add("a", std::slice::from_ref(&prompt), &[])
                .is_empty()
        );
        let problems = offers.add("b", &[prompt, two_kinds], &[file]);
        assert_eq!(
            problems,
            [
                "prompt \"p\" is not offered: extension a offers it already",
                "prompt \"q\" is not offered: message 1 must have exactly one of text, image and resource",
                "resource \"file:///etc/passwd\" is not offered: file: URIs are the workspace's; an extension offers others",
            ]
        );
        assert_eq!(offers.prompts.len(), 1);
    }

    /// The shapes an offer once took to answer for a workspace file
    /// (`{s}:///{a}/{b}/README.md` matched `file:///…/README.md`), and a
    /// second extension's offer under a first one's scheme: each refused at
    /// load, naming why; and `file:` never reaches an offer at all.
    #[test]
    fn an_offer_never_answers_for_a_workspace_file() {
        let spec = |uri: &str| -> ResourceSpec {
            toml::from_str(&format!("uri = {uri:?}\nname = \"n\"\ntext = \"t\"")).unwrap()
        };
        for (uri, why) in [
            (
                "{s}:///{a}/{b}/README.md",
                "must begin with a scheme written out",
            ),
            ("fil{x}:///x", "must begin with a scheme written out"),
            ("{-}:///x", "must begin with a scheme written out"),
            ("FILE:///x", "file: URIs are the workspace's"),
            ("File://localhost/x", "file: URIs are the workspace's"),
            ("1x://y", "must begin with a scheme written out"),
            ("notes://a/{}", "{} in its uri is no template part"),
            ("notes://a/{-}", "{-} in its uri is no template part"),
            ("notes://a/{x", "a { without a }"),
            ("notes://a/x}", "a } without a {"),
            ("//x", "has no scheme"),
            ("no-scheme", "has no scheme"),
        ] {
            let err = spec(uri).check().unwrap_err();
            assert!(err.contains(why), "{uri}: {err}");
        }
        for uri in [
            "notes://{day}",
            "test://template/{id}/data",
            "x+y.z-1:{a}/{b}",
            "urn:x:{id}",
        ] {
            assert_eq!(spec(uri).check(), Ok(()), "{uri}");
        }

        let mut offers = Offers::default();
        assert!(offers.add("a", &[], &[spec("notes://{day}")]).is_empty());
        assert_eq!(
            offers.add("b", &[], &[spec("NOTES://x/{y}"), spec("other://x")]),
            ["resource \"NOTES://x/{y}\" is not offered: its scheme is extension a's"]
        );
        assert_eq!(offers.resources.len(), 2);
        assert!(offers.resource("notes://today").is_some());
        // Even an offer that got in by another way never answers for `file:`.
        offers.resources.push(Offered {
            extension: "c".into(),
            spec: spec("x://y"),
        });
        offers.resources.last_mut().unwrap().spec.uri = "{s}:///{a}".into();
        assert!(offers.resource("file:///README.md").is_none());
        assert!(offers.resource("FILE:///README.md").is_none());
    }
}

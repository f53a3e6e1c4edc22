//! JSON-RPC 2.0 messages as they arrive, judged before any typed parse, so
//! that every front (MCP over stdio and HTTP, `serve`) answers every message
//! that is or claims to be a request with the error that fits, and the id
//! the client sent.
//!
//! A typed parser (rmcp's, `serve`'s) answers only what it could read: a
//! line it cannot parse gets nothing, and the client waits for ever; an id
//! it cannot hold (an integer beyond 64 bits) is lost from the answer. Here
//! the message's top level is read without building it ([`Envelope`]): the
//! id is kept as the exact JSON text the client sent, so an answer carries
//! it verbatim whatever its size, and a message whose *contents* the parser
//! refuses (nesting deeper than its limit, a lone surrogate escape in an
//! argument) still has its id read and answered.
//!
//! The answers ([`Rejection`]):
//! * `-32700` (parse error), id `null`: the text is not a JSON object, nor
//!   any JSON value;
//! * `-32600` (invalid request), with the id when it can be read: JSON that
//!   is not a request (an array, a scalar, a wrong `jsonrpc` or `method`,
//!   an id that is not a string or a 64-bit integer), a message over
//!   [`MAX_MESSAGE_BYTES`], JSON the parser refuses inside a readable
//!   envelope;
//! * `-32602` (invalid params), with the id: `params` that is not an
//!   object, or parameters a served method cannot take (the front decides
//!   which methods it serves).
//!
//! A notification (no id) and a response (`result` or `error`, no method)
//! get no answer, whatever is wrong with them, as JSON-RPC says.

/// The largest message a front reads (a line over stdio, a body over
/// HTTP): 16 MiB, what MCP's SDKs accept.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The error codes JSON-RPC 2.0 reserves.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
}

/// The kind of a JSON value, read from its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

/// The top level of a JSON object, read without building it: the raw text
/// of the members JSON-RPC gives meaning to. Strings are taken as written
/// (escapes are not decoded nor checked), and nesting is followed by
/// counting, without recursion: a message the full parser refuses (too
/// deep, a lone surrogate) still has its envelope read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The id's JSON text, exactly as sent (`"a\u0041"`, `18446744073709551616`).
    pub id: Option<(&'a str, Kind)>,
    /// The method's JSON text, as sent.
    pub method: Option<(&'a str, Kind)>,
    /// The `jsonrpc` member's JSON text.
    pub jsonrpc: Option<&'a str>,
    /// The kind of `params`, when present.
    pub params: Option<Kind>,
    /// Whether it has `result` or `error` (a response).
    pub response: bool,
}

impl<'a> Envelope<'a> {
    /// The envelope of `text`, or `None` when `text` is not one JSON object
    /// (with nothing but white space around it) by the grammar's shape.
    pub fn read(text: &'a [u8]) -> Option<Envelope<'a>> {
        let mut scan = Scan { text, at: 0 };
        scan.ws();
        scan.eat(b'{')?;
        let mut envelope = Envelope::default();
        scan.ws();
        if scan.eat(b'}').is_none() {
            loop {
                let (key, start, kind) = scan.member()?;
                // Only the members kept are text; the others (params) may
                // hold anything, UTF-8 or not: the full parser judges them.
                let raw = || std::str::from_utf8(&text[start..scan.at]).ok();
                match key {
                    b"\"id\"" => envelope.id = Some((raw()?, kind)),
                    b"\"method\"" => envelope.method = Some((raw()?, kind)),
                    b"\"jsonrpc\"" => envelope.jsonrpc = Some(raw()?),
                    b"\"params\"" => envelope.params = Some(kind),
                    b"\"result\"" | b"\"error\"" => envelope.response = true,
                    _ => {}
                }
                scan.ws();
                if scan.eat(b',').is_some() {
                    continue;
                }
                scan.eat(b'}')?;
                break;
            }
        }
        scan.ws();
        (scan.at == text.len()).then_some(envelope)
    }

    /// The method's name, when it is a string without escapes.
    pub fn method_name(&self) -> Option<&'a str> {
        match self.method {
            Some((raw, Kind::String)) if !raw.contains('\\') => Some(&raw[1..raw.len() - 1]),
            _ => None,
        }
    }

    /// Whether it is, or claims to be, a request: it has an id and is no
    /// response.
    pub fn is_request(&self) -> bool {
        self.id.is_some() && !(self.response && self.method.is_none())
    }

    /// The id as an answer may carry it: a string's or a number's text as
    /// sent; `None` (an answer's `null`) for any other kind.
    pub fn answerable_id(&self) -> Option<&'a str> {
        match self.id {
            Some((raw, Kind::String | Kind::Number)) => Some(raw),
            _ => None,
        }
    }
}

/// A cursor over a message's bytes.
struct Scan<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.text.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// One `"key": value` member of an object: the key's text with its
    /// quotes, where the value starts, and its kind (the cursor after it).
    fn member(&mut self) -> Option<(&'a [u8], usize, Kind)> {
        self.ws();
        let key = self.string()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        let start = self.at;
        let kind = self.value()?;
        Some((key, start, kind))
    }

    /// A string's text with its quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.eat(b'"')?;
        loop {
            match self.text.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(&self.text[start..self.at]);
                }
                b'\\' => self.at += 2,
                0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// One value of any kind; nested arrays and objects by counting their
    /// brackets (strings skipped whole), not by recursion.
    fn value(&mut self) -> Option<Kind> {
        let kind = match self.text.get(self.at)? {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'"' => {
                self.string()?;
                return Some(Kind::String);
            }
            b't' | b'f' => Kind::Bool,
            b'n' => Kind::Null,
            b'-' | b'0'..=b'9' => Kind::Number,
            _ => return None,
        };
        if matches!(kind, Kind::Object | Kind::Array) {
            let mut open: Vec<u8> = Vec::new();
            loop {
                match self.text.get(self.at)? {
                    b'"' => {
                        self.string()?;
                        continue;
                    }
                    b'{' => open.push(b'}'),
                    b'[' => open.push(b']'),
                    close @ (b'}' | b']') => {
                        if open.pop() != Some(*close) {
                            return None;
                        }
                        if open.is_empty() {
                            self.at += 1;
                            return Some(kind);
                        }
                    }
                    _ => {}
                }
                self.at += 1;
            }
        }
        let start = self.at;
        while let Some(b) = self.text.get(self.at) {
            if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.at += 1;
        }
        let token = &self.text[start..self.at];
        let valid = match kind {
            Kind::Bool => token == b"true" || token == b"false",
            Kind::Null => token == b"null",
            _ => is_number(token),
        };
        valid.then_some(kind)
    }
}

/// Whether `token` is a JSON number by the grammar.
fn is_number(token: &[u8]) -> bool {
    let digits = |t: &[u8], at: &mut usize| {
        let start = *at;
        while t.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at > start
    };
    let mut at = usize::from(token.first() == Some(&b'-'));
    if token.get(at) == Some(&b'0') {
        at += 1;
    } else if !digits(token, &mut at) {
        return false;
    }
    if token.get(at) == Some(&b'.') {
        at += 1;
        if !digits(token, &mut at) {
            return false;
        }
    }
    if matches!(token.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(token.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        if !digits(token, &mut at) {
            return false;
        }
    }
    at == token.len()
}

/// An answer a front sends for a message it will not hand on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The id's JSON text as the client sent it; `None` is `null`.
    pub id: Option<String>,
    pub code: i64,
    pub message: String,
}

impl Rejection {
    pub fn new(id: Option<&str>, code: i64, message: impl Into<String>) -> Rejection {
        Rejection {
            id: id.map(str::to_string),
            code,
            message: message.into(),
        }
    }

    /// The answer as one line of JSON (with its `\n`).
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":{},\"message\":",
            self.id.as_deref().unwrap_or("null"),
            self.code
        )
        .into_bytes();
        serde_json::to_writer(&mut line, &self.message).expect("a string serializes");
        line.extend_from_slice(b"}}\n");
        line
    }
}

/// What to do with a message a typed parser refused, or one that is not
/// for it: answer it, or let it go unanswered (a notification or a
/// response: JSON-RPC answers neither).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Answer(Rejection),
    Drop(&'static str),
}

/// The verdict on `text`, a message a typed parser could not take (`why`
/// is its error): what is wrong with it, in the order a client would fix
/// it. `invalid_params` says, for a method the front serves, why its
/// parameters cannot be taken (`None`: the method is not one it serves).
pub fn judge(
    text: &[u8],
    why: &dyn std::fmt::Display,
    invalid_params: &dyn Fn(&str, &serde_json::Value) -> Option<String>,
) -> Verdict {
    if text.len() > MAX_MESSAGE_BYTES {
        return Verdict::Answer(oversized(text, text.len()));
    }
    let Some(envelope) = Envelope::read(text) else {
        return Verdict::Answer(
            match serde_json::from_slice::<serde::de::IgnoredAny>(text) {
                Ok(_) => Rejection::new(
                    None,
                    code::INVALID_REQUEST,
                    "Invalid request: a JSON-RPC message is a JSON object",
                ),
                Err(e) => Rejection::new(None, code::PARSE_ERROR, format!("Parse error: {e}")),
            },
        );
    };
    if !envelope.is_request() {
        return Verdict::Drop(if envelope.id.is_none() {
            "a notification gets no answer"
        } else {
            "a response gets no answer"
        });
    }
    let id = envelope.answerable_id();
    let reject = |code, message: String| Verdict::Answer(Rejection::new(id, code, message));
    match envelope.id {
        Some((_, Kind::String)) => {}
        Some((raw, Kind::Number)) if raw.parse::<i64>().is_err() => {
            return reject(
                code::INVALID_REQUEST,
                format!(
                    "Invalid request: the id {raw} is neither a string nor an integer of at most 64 bits"
                ),
            );
        }
        Some((_, Kind::Number)) => {}
        _ => {
            return reject(
                code::INVALID_REQUEST,
                "Invalid request: the id must be a string or an integer".into(),
            );
        }
    }
    if envelope.jsonrpc != Some("\"2.0\"") {
        return reject(
            code::INVALID_REQUEST,
            "Invalid request: \"jsonrpc\" must be \"2.0\"".into(),
        );
    }
    let Some(method) = envelope.method_name() else {
        return reject(
            code::INVALID_REQUEST,
            "Invalid request: \"method\" must be a string".into(),
        );
    };
    let value = match serde_json::from_slice::<serde_json::Value>(text) {
        Ok(value) => value,
        Err(e) => {
            return reject(
                code::INVALID_REQUEST,
                format!("Invalid request: its JSON cannot be read: {e}"),
            );
        }
    };
    if !matches!(envelope.params, None | Some(Kind::Object)) {
        return reject(
            code::INVALID_PARAMS,
            format!("Invalid params for {method}: params must be an object"),
        );
    }
    let request = serde_json::json!({"method": method, "params": value.get("params")});
    if let Some(problem) = invalid_params(method, &request) {
        return reject(
            code::INVALID_PARAMS,
            format!("Invalid params for {method}: {problem}"),
        );
    }
    reject(code::INVALID_REQUEST, format!("Invalid request: {why}"))
}

/// Lines of JSON-RPC messages from `R`, each at most [`MAX_MESSAGE_BYTES`]:
/// a longer one is read to its end and dropped, and its answer (with the
/// id its start shows) given instead.
#[derive(Debug)]
pub struct LineReader<R> {
    input: R,
    /// The line being read: kept across cancelled reads (rmcp polls
    /// `receive` in a `select!`), cleared once judged.
    line: Vec<u8>,
    /// Past [`MAX_MESSAGE_BYTES`]: the line's size so far, its start kept
    /// (to find the id), the rest read and dropped.
    oversized: Option<usize>,
}

/// The start of an oversized line kept to find its id.
const KEPT: usize = 64 << 10;

impl<R: tokio::io::AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(input: R) -> Self {
        LineReader {
            input,
            line: Vec::new(),
            oversized: None,
        }
    }

    /// The input, to look at what it holds already read.
    pub fn input(&self) -> &R {
        &self.input
    }

    /// The next whole line (without its end), or the answer to one over
    /// [`MAX_MESSAGE_BYTES`]; `None` at the end of the input. Safe to
    /// cancel: what was read stays in `line`.
    pub async fn next(&mut self) -> Option<Result<Vec<u8>, Rejection>> {
        loop {
            use tokio::io::AsyncBufReadExt;
            let available = match self.input.fill_buf().await {
                Ok(bytes) => bytes,
                Err(_) => return None,
            };
            if available.is_empty() {
                // The end: a last line without its line break still counts.
                if let Some(size) = self.oversized.take() {
                    let start = std::mem::take(&mut self.line);
                    return Some(Err(oversized(&start, size)));
                }
                if self.line.iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
                return Some(Ok(std::mem::take(&mut self.line)));
            }
            let (taken, complete) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            let part = &available[..taken - usize::from(complete)];
            match &mut self.oversized {
                Some(size) => {
                    *size += part.len();
                    let room = KEPT.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&part[..part.len().min(room)]);
                }
                None => {
                    self.line.extend_from_slice(part);
                    if self.line.len() > MAX_MESSAGE_BYTES {
                        self.oversized = Some(self.line.len());
                        self.line.truncate(KEPT);
                        self.line.shrink_to(KEPT);
                    }
                }
            }
            self.input.consume(taken);
            if complete {
                if let Some(size) = self.oversized.take() {
                    let start = std::mem::take(&mut self.line);
                    return Some(Err(oversized(&start, size)));
                }
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(Ok(line));
            }
        }
    }
}

/// The answer to a message of `size` bytes, over [`MAX_MESSAGE_BYTES`]:
/// with its id when `start` (its first bytes) shows one.
pub fn oversized(start: &[u8], size: usize) -> Rejection {
    Rejection::new(
        id_in_start(start).as_deref(),
        code::INVALID_REQUEST,
        format!(
            "Invalid request: the message is {size} bytes, more than the {} MiB a message \
             may be",
            MAX_MESSAGE_BYTES >> 20
        ),
    )
}

/// The id of a message from its first bytes only (an oversized message is
/// not kept whole): the top-level members before the first value that does
/// not end within `start`.
fn id_in_start(start: &[u8]) -> Option<String> {
    let mut scan = Scan { text: start, at: 0 };
    scan.ws();
    scan.eat(b'{')?;
    loop {
        let (key, begin, kind) = scan.member()?;
        if key == b"\"id\"" && matches!(kind, Kind::String | Kind::Number) && scan.at < start.len()
        {
            return std::str::from_utf8(&start[begin..scan.at])
                .ok()
                .map(str::to_string);
        }
        scan.ws();
        scan.eat(b',')?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_params(_: &str, _: &serde_json::Value) -> Option<String> {
        None
    }

    fn answer(text: &str) -> Rejection {
        match judge(text.as_bytes(), &"refused", &no_params) {
            Verdict::Answer(r) => r,
            Verdict::Drop(why) => panic!("{text}: dropped ({why})"),
        }
    }

    #[test]
    fn the_envelope_is_read_without_building_the_message() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call","params":{{"a":{}{}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let envelope = Envelope::read(deep.as_bytes()).unwrap();
        assert_eq!(envelope.id, Some(("18446744073709551616", Kind::Number)));
        assert_eq!(envelope.method_name(), Some("tools/call"));
        assert_eq!(envelope.params, Some(Kind::Object));
        let surrogate = r#"{"id":"x\"y","method":"m","params":{"s":"\ud800"}}"#;
        assert_eq!(
            Envelope::read(surrogate.as_bytes()).unwrap().id,
            Some((r#""x\"y""#, Kind::String))
        );
        for broken in [
            "",
            "{",
            "{\"id\":1",
            "{\"id\":1,}",
            "{\"id\":01}",
            "{\"id\":1} x",
            "[1]",
            "{\"a\":[}",
        ] {
            assert_eq!(Envelope::read(broken.as_bytes()), None, "{broken}");
        }
    }

    #[test]
    fn each_message_gets_the_answer_that_fits_with_its_id() {
        let r = answer("{not json");
        assert_eq!((r.id, r.code), (None, code::PARSE_ERROR));
        let r = answer("[1,2]");
        assert_eq!((r.id, r.code), (None, code::INVALID_REQUEST));
        let r = answer(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#);
        assert_eq!(
            (r.id.as_deref(), r.code),
            (Some("18446744073709551616"), code::INVALID_REQUEST)
        );
        assert!(
            r.to_line()
                .starts_with(br#"{"jsonrpc":"2.0","id":18446744073709551616,"#)
        );
        let r = answer(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
        assert_eq!(
            (r.id.as_deref(), r.code),
            (Some("1.5"), code::INVALID_REQUEST)
        );
        let r = answer(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#);
        assert_eq!((r.id, r.code), (None, code::INVALID_REQUEST));
        let r = answer(r#"{"jsonrpc":"2.0","id":"a","method":"ping","params":[1]}"#);
        assert_eq!(
            (r.id.as_deref(), r.code),
            (Some("\"a\""), code::INVALID_PARAMS)
        );
        let r = answer(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!(
            (r.id.as_deref(), r.code),
            (Some("7"), code::INVALID_REQUEST)
        );
        let r = answer(r#"{"jsonrpc":"2.0","id":7,"method":5}"#);
        assert_eq!(
            (r.id.as_deref(), r.code),
            (Some("7"), code::INVALID_REQUEST)
        );
        let r = answer(r#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"s":"\ud800"}}"#);
        assert_eq!(
            (r.id.as_deref(), r.code),
            (Some("7"), code::INVALID_REQUEST)
        );
        let served = |method: &str, _: &serde_json::Value| {
            (method == "tools/call").then(|| "name must be a string".to_string())
        };
        let text = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#;
        let Verdict::Answer(r) = judge(text, &"x", &served) else {
            panic!()
        };
        assert_eq!(
            (r.id.as_deref(), r.code, r.message.as_str()),
            (
                Some("3"),
                code::INVALID_PARAMS,
                "Invalid params for tools/call: name must be a string"
            )
        );
        for quiet in [
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ] {
            assert!(
                matches!(judge(quiet.as_bytes(), &"x", &no_params), Verdict::Drop(_)),
                "{quiet}"
            );
        }
    }

    #[test]
    fn an_oversized_message_is_answered_with_the_id_its_start_shows() {
        let start = br#"{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"a":"xxxx"#;
        let r = oversized(start, MAX_MESSAGE_BYTES + 10);
        assert_eq!(r.id.as_deref(), Some("\"big-1\""));
        assert_eq!(r.code, code::INVALID_REQUEST);
        let r = oversized(br#"{"params":{"a":"xxx"#, MAX_MESSAGE_BYTES + 10);
        assert_eq!(r.id, None);
    }
}

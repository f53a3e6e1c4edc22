//! The sealed `requestState` of a 2026-07-28 input-required round: what it holds, how it is
//! sealed, checked and used once ([`States`]).

use super::*;

/// What a sealed `requestState` holds.
#[derive(Serialize, Deserialize)]
pub(in crate::mcp) struct State {
    /// Used once.
    nonce: String,
    /// Seconds since the Unix epoch after which it is refused.
    expires: u64,
    /// The call it belongs to: the tool and a digest of its arguments.
    tool: String,
    arguments: String,
    /// The answers of the earlier rounds.
    answered: Vec<Answered>,
    /// The answers to the tool's own requests so far.
    #[serde(default)]
    inputs: BTreeMap<String, Value>,
    /// The permission question this round asks, under [`KEY`] in
    /// `inputRequests`, if it asks one.
    asked: Option<Asked>,
}

/// The question a state's round asks.
#[derive(Serialize, Deserialize)]
pub(in crate::mcp) struct Asked {
    need: Need,
    digest: String,
    /// Whether "always" was offered.
    always: bool,
}

/// The key of a permission question in an input-required result (a
/// response under it answers that question, never a tool's request).
pub(in crate::mcp) const KEY: &str = "permission";

/// Seals and opens `requestState`s, and remembers which were used.
pub(in crate::mcp) struct States {
    key: [u8; 32],
    used: Mutex<VecDeque<(String, u64)>>,
}

/// How many used states are remembered (each also expires).
pub(in crate::mcp) const USED_STATES: usize = 4096;

impl Default for States {
    fn default() -> States {
        let mut key = [0u8; 32];
        crate::files::getrandom(&mut key).expect("the kernel's random source");
        States {
            key,
            used: Mutex::default(),
        }
    }
}

pub(in crate::mcp) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(in crate::mcp) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(in crate::mcp) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A digest of a call's arguments, as the state binds them.
pub(in crate::mcp) fn arguments_digest(arguments: &Value) -> String {
    blake3::hash(arguments.to_string().as_bytes())
        .to_hex()
        .to_string()
}

impl States {
    fn seal(&self, state: &State) -> String {
        let payload = serde_json::to_vec(state).expect("a state serializes");
        let mac = blake3::keyed_hash(&self.key, &payload);
        format!("{}.{}", hex(&payload), mac.to_hex())
    }

    /// The state `sealed`, when this process sealed it, it has not expired,
    /// was not used, and belongs to `tool` called with `arguments`.
    fn open(&self, sealed: &str, tool: &str, arguments: &Value) -> Result<State, String> {
        let refused = |why: &str| format!("requestState refused: {why}");
        let (payload, mac) = sealed
            .split_once('.')
            .ok_or_else(|| refused("it is not a state this server issued"))?;
        let payload =
            unhex(payload).ok_or_else(|| refused("it is not a state this server issued"))?;
        let mac = unhex(mac)
            .and_then(|m| <[u8; 32]>::try_from(m).ok())
            .ok_or_else(|| refused("it is not a state this server issued"))?;
        // Constant-time comparison (blake3's Hash equality).
        if blake3::keyed_hash(&self.key, &payload) != blake3::Hash::from(mac) {
            return Err(refused("it was not issued by this server, or was altered"));
        }
        let state: State = serde_json::from_slice(&payload)
            .map_err(|_| refused("it is not a state this server issued"))?;
        if state.expires < now() {
            return Err(refused("it has expired; call the tool again"));
        }
        if state.tool != tool || state.arguments != arguments_digest(arguments) {
            return Err(refused("it was issued for another call"));
        }
        let mut used = self.used.lock().expect("used states lock");
        let at = now();
        used.retain(|(_, expires)| *expires >= at);
        if used.iter().any(|(nonce, _)| *nonce == state.nonce) {
            return Err(refused("it was used already"));
        }
        if used.len() >= USED_STATES {
            used.pop_front();
        }
        used.push_back((state.nonce.clone(), state.expires));
        Ok(state)
    }

    /// The round of a call of `tool` with `arguments` whose retry brought
    /// `request_state` and `responses`: the answers so far. `Err` is the
    /// refusal of a state that cannot be trusted.
    pub(in crate::mcp) fn round(
        &self,
        tool: &str,
        arguments: &Value,
        request_state: Option<&str>,
        responses: Option<&rmcp::model::InputResponses>,
        declared: ClientCaps,
        cancel: CancellationToken,
    ) -> Result<Arc<Round>, String> {
        let mut answered = Vec::new();
        let mut inputs = BTreeMap::new();
        let mut permission_asked = false;
        if let Some(sealed) = request_state {
            let state = self.open(sealed, tool, arguments)?;
            answered = state.answered;
            inputs = state.inputs;
            if let Some(asked) = state.asked {
                permission_asked = true;
                // The question asked is answered by the response under its key.
                let response = responses.and_then(|r| r.get(KEY));
                let question = Question {
                    tool: tool.into(),
                    tool_call_id: String::new(),
                    component: String::new(),
                    digest: asked.digest,
                    need: asked.need,
                    arguments: Value::Null,
                    rule: None,
                    always: asked.always,
                };
                if let Some(answer) = response.and_then(|r| answer_of(&question, r)) {
                    answered.push(Answered {
                        need: question.need,
                        digest: question.digest,
                        answer,
                    });
                }
            }
        }
        // The tool's requests are answered by the responses under their
        // keys; what an earlier round's state holds stays as it was. (These
        // are the tool's data, which the client could give it anyway: they
        // need no state, unlike a permission.)
        for (key, response) in responses.into_iter().flat_map(|r| r.iter()) {
            if permission_asked && key == KEY {
                continue;
            }
            if let Ok(response) = serde_json::to_value(response) {
                inputs.entry(key.clone()).or_insert(response);
            }
        }
        Ok(Arc::new(Round {
            cancel,
            answered,
            inputs,
            declared,
            needed: Mutex::new(None),
        }))
    }

    /// The input-required result of a round that stopped at `needed` (a
    /// question, or the tool's requests).
    pub(in crate::mcp) fn input_required(
        &self,
        round: &Round,
        needed: &Needed,
        tool: &str,
        arguments: &Value,
        wait: std::time::Duration,
    ) -> Value {
        let (asked, requests) = match needed {
            Needed::Question(question) => (
                Some(Asked {
                    need: question.need.clone(),
                    digest: question.digest.clone(),
                    always: question.always,
                }),
                json!({KEY: {"method": "elicitation/create", "params": form(question)}}),
            ),
            Needed::Inputs(requests) => {
                let mut map = serde_json::Map::new();
                for r in requests {
                    map.insert(
                        r.key.clone(),
                        json!({"method": r.method.method(), "params": r.params}),
                    );
                }
                (None, Value::Object(map))
            }
            Needed::Missing(_) => (None, json!({})),
        };
        let state = State {
            nonce: crate::files::random_hex(16).expect("the kernel's random source"),
            expires: now() + wait.as_secs(),
            tool: tool.into(),
            arguments: arguments_digest(arguments),
            answered: round.answered.clone(),
            inputs: round.inputs.clone(),
            asked,
        };
        json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self.seal(&state),
        })
    }
}

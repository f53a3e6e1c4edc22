//! Secrets out of the audit log: a call's arguments as the log keeps them.
//!
//! Two rules, applied to every value at any depth:
//! - a value under a key named like a secret (`token`, `apiKey`,
//!   `DB_PASSWORD`, `x-auth-token`, …: a word of the key, split at case
//!   changes and punctuation, is one of [`SECRET_WORDS`]) is replaced whole;
//! - in every string, what has the shape of a credential is replaced and
//!   the text around it kept: assignments and flags of secret-named
//!   variables (`GITHUB_TOKEN=…`, `--password …`), `Bearer`/`Basic`
//!   credentials, passwords in URLs, PEM private keys, and the token formats
//!   of common services (AWS, GitHub, GitLab, Slack, OpenAI/Anthropic,
//!   Google, npm, JWTs).
//!
//! It errs on the side of redacting: `max_tokens=100` loses its value. What
//! it cannot know (a password in free text with no name or shape) it keeps;
//! the log is written 0600 for that reason too.

use regex::{Captures, Regex};
use serde_json::Value;
use std::sync::LazyLock;

/// What a redacted value becomes.
pub const REDACTED: &str = "[REDACTED]";

/// Words that make a key's value secret.
pub const SECRET_WORDS: &[&str] = &[
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "key",
    "apikey",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "cookie",
    "privatekey",
    "accesskey",
    "accesstoken",
];

/// `value` with its secrets replaced.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) {
                        Value::String(REDACTED.into())
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(text) => Value::String(redact_text(text)),
        other => other.clone(),
    }
}

/// Whether a key names a secret: one of its words is in [`SECRET_WORDS`].
pub fn is_secret_key(key: &str) -> bool {
    words(key).any(|w| SECRET_WORDS.contains(&w.as_str()))
}

/// The words of a key, lowercase: split at non-alphanumerics and where a
/// lowercase letter or digit meets an uppercase one (`apiKey` → api, key).
fn words(key: &str) -> impl Iterator<Item = String> + '_ {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            out.push(std::mem::take(&mut word));
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    out.push(word);
    out.into_iter().filter(|w| !w.is_empty())
}

/// A name that makes what is assigned to it secret (inside a larger name:
/// `GITHUB_TOKEN`, `db.password`, `x-api-key`).
const SECRET_NAME: &str = r"[A-Za-z0-9_.-]*(?i:token|secret|password|passwd|passphrase|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credentials?)[A-Za-z0-9_.-]*";

/// A value in a command line or a config text.
const VALUE: &str = r#"("[^"]*"|'[^']*'|[^\s"'&;|\[][^\s"'&;|]*)"#;

struct Rules {
    pem: Regex,
    url_password: Regex,
    scheme: Regex,
    assignment: Regex,
    flag: Regex,
    shapes: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    pem: Regex::new(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
    )
    .expect("pem pattern"),
    url_password: Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+):[^@\s/]+@")
        .expect("url pattern"),
    scheme: Regex::new(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/-]{8,}=*")
        .expect("scheme pattern"),
    assignment: Regex::new(&format!(r#"\b({SECRET_NAME})("?\s*[=:]\s*){VALUE}"#))
        .expect("assignment pattern"),
    flag: Regex::new(&format!(r"(--?{SECRET_NAME})(\s+){VALUE}")).expect("flag pattern"),
    shapes: Regex::new(concat!(
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bgh[pousr]_[A-Za-z0-9]{30,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{20,}",
        r"|\bglpat-[A-Za-z0-9_-]{20,}",
        r"|\bsk-[A-Za-z0-9_-]{20,}",
        r"|\bxox[abposr]-[A-Za-z0-9-]{10,}",
        r"|\bAIza[0-9A-Za-z_-]{35}",
        r"|\bnpm_[A-Za-z0-9]{36}",
        r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ))
    .expect("token shapes"),
});

/// `text` with what looks like a credential replaced.
pub fn redact_text(text: &str) -> String {
    let rules = &*RULES;
    let text = rules.pem.replace_all(text, "[REDACTED PRIVATE KEY]");
    let text = rules.url_password.replace_all(&text, "$1:[REDACTED]@");
    let text = rules.scheme.replace_all(&text, "$1$2[REDACTED]");
    let text = rules.assignment.replace_all(&text, |c: &Captures| {
        // `Authorization: Bearer [REDACTED]`: the scheme word stays.
        let value = &c[3];
        if ["bearer", "basic", "token"].contains(&value.to_ascii_lowercase().as_str()) {
            return c[0].to_string();
        }
        format!("{}{}{REDACTED}", &c[1], &c[2])
    });
    let text = rules.flag.replace_all(&text, "$1$2[REDACTED]");
    rules.shapes.replace_all(&text, REDACTED).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_named_like_secrets_lose_their_values() {
        let args = json!({
            "path": "a.txt",
            "apiKey": "abc",
            "GITHUB_TOKEN": "x",
            "db": {"password": 1234, "user": "me"},
            "x-auth-token": ["a"],
            "keyword": "kept",
            "author": "kept",
        });
        assert_eq!(
            redact(&args),
            json!({
                "path": "a.txt",
                "apiKey": REDACTED,
                "GITHUB_TOKEN": REDACTED,
                "db": {"password": REDACTED, "user": "me"},
                "x-auth-token": REDACTED,
                "keyword": "kept",
                "author": "kept",
            })
        );
    }

    #[test]
    fn credentials_in_text_are_replaced_and_the_rest_kept() {
        let cases = [
            (
                "GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz gh pr list",
                "GITHUB_TOKEN=[REDACTED] gh pr list",
            ),
            (
                "export OPENAI_API_KEY=\"hunter2\" && run",
                "export OPENAI_API_KEY=[REDACTED] && run",
            ),
            (
                "curl -H 'Authorization: Bearer abcdef0123456789' https://api.example.com",
                "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com",
            ),
            (
                "git clone https://me:s3cret@example.com/r.git",
                "git clone https://me:[REDACTED]@example.com/r.git",
            ),
            (
                "mysql --password hunter2 -u root",
                "mysql --password [REDACTED] -u root",
            ),
            ("aws s3 ls # AKIAIOSFODNN7EXAMPLE", "aws s3 ls # [REDACTED]"),
            (
                "key: sk-ant-api03-abcdefghijklmnopqrstuvwx",
                "key: [REDACTED]",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nrest",
                "[REDACTED PRIVATE KEY]\nrest",
            ),
            ("ls -la src", "ls -la src"),
            ("grep -rn keyword .", "grep -rn keyword ."),
        ];
        for (text, want) in cases {
            assert_eq!(redact_text(text), want, "{text}");
        }
    }

    #[test]
    fn key_words_split_at_case_and_punctuation() {
        assert_eq!(words("apiKey").collect::<Vec<_>>(), ["api", "key"]);
        assert_eq!(
            words("X_AUTH-Token").collect::<Vec<_>>(),
            ["x", "auth", "token"]
        );
        assert!(!is_secret_key("monkey"));
        assert!(is_secret_key("APIKEY"));
    }
}

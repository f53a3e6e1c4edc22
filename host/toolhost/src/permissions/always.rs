//! "Always": an answer written to the user's `toolhost.toml` as an allow
//! rule pinned to the component's digest, beside the user's own comments
//! and rules (`toml_edit` keeps them):
//!
//! ```toml
//! [permissions]
//! allow = ["bash(git status*)", { rule = "http(api.github.com:443)", digest = "blake3:…" }]
//! ```
//!
//! Only the user's file is ever written: it lies outside every tool's reach.

use crate::error::Error;
use crate::files::{read_policy, write_policy};
use std::path::Path;

/// Add `rule`, pinned to `digest`, to the allow list of the policy file
/// `path` (created when missing). Nothing changes when it is there already.
pub(crate) fn write(path: &Path, rule: &str, digest: &str) -> Result<(), Error> {
    // Two answers of this process never interleave their read and write.
    static ONE_WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _writer = ONE_WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let mut doc = read_policy(path)?;
    let refuse = |reason: &str| Error::Policy {
        path: path.display().to_string(),
        reason: reason.to_string(),
    };
    let permissions = doc
        .entry("permissions")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| refuse("`permissions` is not a table; add the rule by hand"))?;
    let allow = permissions
        .entry("allow")
        .or_insert(toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or_else(|| refuse("`permissions.allow` is not an array; add the rule by hand"))?;
    let present = allow.iter().any(|entry| {
        entry.as_inline_table().is_some_and(|t| {
            t.get("rule").and_then(|v| v.as_str()) == Some(rule)
                && t.get("digest").and_then(|v| v.as_str()) == Some(digest)
        })
    });
    if present {
        return Ok(());
    }
    let mut pinned = toml_edit::InlineTable::new();
    pinned.insert("rule", rule.into());
    pinned.insert("digest", digest.into());
    allow.push(pinned);
    write_policy(path, &doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::{AllowEntry, PermissionsSpec};

    #[test]
    fn an_always_answer_joins_the_users_rules_and_comments_once() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("toolhost.toml");
        std::fs::write(
            &path,
            "# mine\n[permissions]\nallow = [\"bash(git status*)\"] # keep\n",
        )
        .unwrap();
        write(&path, "http(api.example.com:443)", "blake3:ab").unwrap();
        write(&path, "http(api.example.com:443)", "blake3:ab").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        assert!(text.contains("# keep"), "{text}");
        #[derive(serde::Deserialize)]
        struct File {
            permissions: PermissionsSpec,
        }
        let file: File = toml::from_str(&text).unwrap();
        assert_eq!(
            file.permissions.allow,
            [
                AllowEntry::from("bash(git status*)"),
                AllowEntry::Pinned {
                    rule: "http(api.example.com:443)".into(),
                    digest: "blake3:ab".into()
                }
            ]
        );

        let fresh = tmp.path().join("new/toolhost.toml");
        std::fs::create_dir_all(fresh.parent().unwrap()).unwrap();
        write(&fresh, "http(h:80)", "blake3:cd").unwrap();
        let file: File = toml::from_str(&std::fs::read_to_string(&fresh).unwrap()).unwrap();
        assert_eq!(file.permissions.allow.len(), 1);
    }
}

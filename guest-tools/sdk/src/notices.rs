//! The bracketed notices Pi's listing tools (`ls`, `find`, `grep`) end their
//! text with (`[100 matches limit reached. Use limit=200 for more, or refine
//! pattern. 50.0KB limit reached]`), and the details that go with them.

use crate::ToolOutput;
use crate::js;
use crate::truncate::{Truncation, format_size};
use serde_json::{Map, Value};

/// Pi 1.5's limit of the listing tools, `Math.max(1, Math.floor(limit))`: a
/// limit below 1 would list nothing (or, for fd and rg, everything).
pub fn at_least_one(limit: f64) -> f64 {
    limit.floor().max(1.0)
}

/// Notices and details gathered while a listing tool builds its result.
#[derive(Default)]
pub struct Notices {
    notices: Vec<String>,
    details: Map<String, Value>,
}

impl Notices {
    pub fn new() -> Notices {
        Notices::default()
    }

    /// `{limit} {what} limit reached. Use limit={2 × limit} for more{hint}`,
    /// with `limit` in the details under `key`.
    pub fn limit_reached(&mut self, what: &str, limit: f64, hint: &str, key: &str) {
        self.notices.push(format!(
            "{} {what} limit reached. Use limit={} for more{hint}",
            js::number(limit),
            js::number(limit * 2.0)
        ));
        self.details.insert(key.into(), js::json_number(limit));
    }

    /// `{max bytes} limit reached` when `truncation` cut the output, with the
    /// truncation in the details.
    pub fn truncated(&mut self, truncation: &Truncation, max_bytes: usize) {
        if truncation.truncated {
            self.notices
                .push(format!("{} limit reached", format_size(max_bytes)));
            self.details.insert(
                "truncation".into(),
                serde_json::to_value(truncation).unwrap_or(Value::Null),
            );
        }
    }

    /// Any other notice, with an optional detail.
    pub fn push(&mut self, notice: String, detail: Option<(&str, Value)>) {
        self.notices.push(notice);
        if let Some((key, value)) = detail {
            self.details.insert(key.into(), value);
        }
    }

    /// `text` with the notices appended (`\n\n[a. b]`) and the details, if any.
    pub fn finish(self, mut text: String) -> ToolOutput {
        if !self.notices.is_empty() {
            text.push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        let out = ToolOutput::text(text);
        if self.details.is_empty() {
            out
        } else {
            out.with_details(Value::Object(self.details))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_below_one_mean_one_and_fractions_round_down() {
        assert_eq!(at_least_one(0.0), 1.0);
        assert_eq!(at_least_one(-3.0), 1.0);
        assert_eq!(at_least_one(0.5), 1.0);
        assert_eq!(at_least_one(2.9), 2.0);
        assert_eq!(at_least_one(100.0), 100.0);
    }
}

//! A pattern where `*` is any text and everything else is literal, matched
//! against a whole text: a permission rule's command or arguments
//! (`bash(rm *)`), an `[exposure]` rule's tool names (`jira__*`).

/// A compiled `*` pattern.
#[derive(Clone, Debug)]
pub(crate) struct Wildcard(regex::Regex);

impl Wildcard {
    pub(crate) fn new(pattern: &str) -> Result<Wildcard, String> {
        let parts: Vec<String> = pattern.split('*').map(regex::escape).collect();
        regex::Regex::new(&format!("^(?s:{})$", parts.join(".*")))
            .map(Wildcard)
            .map_err(|e| format!("the pattern cannot be read: {e}"))
    }

    /// Whether the pattern matches all of `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

#[cfg(test)]
mod tests {
    use super::Wildcard;

    #[test]
    fn a_star_is_any_text_and_the_rest_is_literal() {
        for (pattern, text, matches) in [
            ("a*c", "abc", true),
            ("a*c", "ac", true),
            ("a*c", "acb", false),
            ("*b*", "abc", true),
            ("ab*", "a", false),
            ("a*a", "a", false),
            ("**", "", true),
            ("a.c", "abc", false),
            ("rm *", "rm -rf\n/", true),
        ] {
            let wildcard = Wildcard::new(pattern).unwrap();
            assert_eq!(wildcard.is_match(text), matches, "{pattern} {text:?}");
        }
    }
}

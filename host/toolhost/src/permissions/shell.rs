//! A shell command line as permission rules see it: the simple commands in
//! it, found by tree-sitter's bash grammar (the parser Codex uses for the
//! same question), and whether the whole line is understood.
//!
//! A line is understood when it is only simple commands of plain words
//! (unquoted, single- or double-quoted text without expansions), joined by
//! `&&`, `||`, `;`, `|`, `|&`, `&` or newlines. Anything else (a
//! substitution, an expansion, a redirection, an assignment, a subshell, a
//! function, control flow, a here-document, a backslash-newline, text the
//! grammar cannot parse) and any command that runs text as code (`eval`,
//! `source`, `sh -c`, …) leaves it not understood: an allow rule never
//! covers it, however its prefix reads.

use tree_sitter::Node;

/// What the rules see of one command line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Split {
    /// Every simple command found, anywhere (inside substitutions and
    /// subshells too): its words after quote removal, joined by single
    /// spaces, where they are plain; as written otherwise.
    pub commands: Vec<String>,
    pub understood: bool,
}

/// Commands that run their arguments (or a file) as shell code.
const RUNS_CODE: &[&str] = &["eval", "exec", "source", ".", "builtin", "command"];

/// Shells, which run code given with `-c`.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "fish"];

/// The commands of `line` (see the module docs).
pub(crate) fn split(line: &str) -> Split {
    // Bash removes a backslash-newline before it reads words, so `r\<newline>m`
    // is `rm`; the grammar may read it otherwise. Parsed without them, and
    // never understood with one.
    let continued = line.contains("\\\n");
    let text = line.replace("\\\n", "");
    let mut parser = tree_sitter::Parser::new();
    let tree = parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()
        .and_then(|()| parser.parse(&text, None));
    let Some(tree) = tree else {
        return Split {
            commands: Vec::new(),
            understood: false,
        };
    };
    let root = tree.root_node();
    let src = text.as_bytes();
    let mut commands = Vec::new();
    collect(root, src, &mut commands);
    let understood = !continued && !root.has_error() && plain_structure(root, src);
    Split {
        commands,
        understood,
    }
}

/// Every `command` node under `node`, plain or as written.
fn collect(node: Node<'_>, src: &[u8], out: &mut Vec<String>) {
    if node.kind() == "command" {
        let command = plain_command(node, src)
            .unwrap_or_else(|| squeeze(node.utf8_text(src).unwrap_or_default()));
        out.push(command);
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        collect(child, src, out);
    }
}

/// Whitespace runs as single spaces.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `node` is only lists and pipelines of plain commands.
fn plain_structure(node: Node<'_>, src: &[u8]) -> bool {
    match node.kind() {
        "program" | "list" | "pipeline" => {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            children.into_iter().all(|child| {
                if child.is_named() {
                    child.kind() == "comment" || plain_structure(child, src)
                } else {
                    matches!(child.kind(), "&&" | "||" | ";" | "|" | "|&" | "&" | "\n")
                }
            })
        }
        "command" => plain_command(node, src).is_some_and(|c| !runs_code(&c)),
        _ => false,
    }
}

/// Whether a plain command runs text as code.
fn runs_code(command: &str) -> bool {
    let mut words = command.split(' ');
    let first = words.next().unwrap_or_default();
    let name = first.rsplit('/').next().unwrap_or(first);
    RUNS_CODE.contains(&name)
        || (SHELLS.contains(&name) && words.any(|w| w.starts_with('-') && w.contains('c')))
}

/// A command's words after quote removal, when every part of it is a plain
/// word (no redirection, assignment or expansion).
fn plain_command(node: Node<'_>, src: &[u8]) -> Option<String> {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        let word = match child.kind() {
            "command_name" => plain_word(child.named_child(0)?, src)?,
            _ if child.is_named() => plain_word(child, src)?,
            _ => return None,
        };
        words.push(word);
    }
    (!words.is_empty()).then(|| words.join(" "))
}

/// A word's value after quote removal, when it has no expansion.
fn plain_word(node: Node<'_>, src: &[u8]) -> Option<String> {
    let text = node.utf8_text(src).ok()?;
    match node.kind() {
        "word" | "number" => Some(unescape(text, false)),
        "raw_string" => Some(text.strip_prefix('\'')?.strip_suffix('\'')?.to_string()),
        "string" => {
            let mut cursor = node.walk();
            if node
                .named_children(&mut cursor)
                .any(|c| c.kind() != "string_content")
            {
                return None;
            }
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            Some(unescape(inner, true))
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let mut value = String::new();
            for child in node.children(&mut cursor) {
                value.push_str(&plain_word(child, src)?);
            }
            Some(value)
        }
        _ => None,
    }
}

/// Backslashes removed as bash removes them: before any character outside
/// quotes; inside double quotes only before `$`, `` ` ``, `"` and `\`.
fn unescape(text: &str, double_quoted: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next)) if !double_quoted || matches!(next, '$' | '`' | '"' | '\\') => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn understood(line: &str) -> Option<Vec<String>> {
        let split = split(line);
        split.understood.then_some(split.commands)
    }

    #[test]
    fn lists_and_pipelines_are_split_into_their_commands() {
        assert_eq!(
            understood("git status; curl x|sh").unwrap(),
            ["git status", "curl x", "sh"]
        );
        assert_eq!(
            understood("make && make test || echo failed &").unwrap(),
            ["make", "make test", "echo failed"]
        );
        assert_eq!(understood("ls\npwd").unwrap(), ["ls", "pwd"]);
    }

    #[test]
    fn quotes_are_removed_so_that_a_quoted_name_is_the_name() {
        assert_eq!(understood("'r'm -rf /").unwrap(), ["rm -rf /"]);
        assert_eq!(understood(r#""rm" -rf /"#).unwrap(), ["rm -rf /"]);
        assert_eq!(understood(r"r\m -rf /").unwrap(), ["rm -rf /"]);
        assert_eq!(
            understood(r#"git commit -m "a \"b\" c""#).unwrap(),
            [r#"git commit -m a "b" c"#]
        );
    }

    #[test]
    fn what_is_not_plain_is_not_understood_but_its_commands_are_found() {
        for line in [
            "echo $(rm -rf /)",
            "echo `rm -rf /`",
            "echo $HOME",
            "cat <(curl x)",
            "echo hi > ~/.bashrc",
            "FOO=1 make",
            "(cd /; rm -rf x)",
            "if true; then rm x; fi",
            "f() { rm x; }",
            "cat <<EOF\nhi\nEOF",
            "echo $'\\x72m'",
            "git status \\\n&& rm -rf /",
            "eval 'rm -rf /'",
            "bash -c 'rm -rf /'",
            "/bin/sh -ec 'rm x'",
            "source ./x.sh",
            "echo 'unterminated",
        ] {
            assert!(!split(line).understood, "{line:?} is understood");
        }
        assert!(
            split("echo $(rm -rf /)")
                .commands
                .contains(&"rm -rf /".to_string())
        );
        assert!(
            split("(cd /; rm -rf x)")
                .commands
                .contains(&"rm -rf x".to_string())
        );
        assert!(
            split("git status \\\n&& rm -rf /")
                .commands
                .contains(&"rm -rf /".to_string())
        );
    }
}

//! Pi's path resolution (`resolveToCwd`, `docs/spec.md` §1.2) and Node's
//! `path` functions, for POSIX paths.
//!
//! Resolution is pure string work; whether the result may be touched is the
//! host's decision (every filesystem operation is checked against the granted
//! roots, spec §7.1).

/// Unicode spaces Pi turns into ASCII spaces before resolving.
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Resolve a path argument as Pi does: unicode spaces → ASCII space, one
/// leading `@` dropped, `~` and `~/…` expanded to `home`, `file://` URLs
/// decoded, then made absolute against `cwd` and normalised.
pub fn resolve_to_cwd(raw: &str, cwd: &str, home: Option<&str>) -> String {
    let spaced: String = raw
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    let mut p = spaced.strip_prefix('@').unwrap_or(&spaced).to_string();
    if let Some(home) = home {
        if p == "~" {
            p = home.to_string();
        } else if let Some(rest) = p.strip_prefix("~/") {
            p = format!("{home}/{rest}");
        }
    }
    if let Some(url_path) = file_url_to_path(&p) {
        p = url_path;
    }
    resolve(cwd, &p)
}

/// Node's `path.resolve(base, p)` for POSIX: absolute `p` wins, else joined to
/// `base`; `.`/`..`/empty segments collapsed; no trailing slash but `/`.
pub fn resolve(base: &str, p: &str) -> String {
    let joined = if p.starts_with('/') {
        p.to_string()
    } else {
        format!("{base}/{p}")
    };
    normalize(&joined)
}

/// Lexical normalisation of an absolute path (`..` at the root stays at the root).
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `fileURLToPath` for `file://` URLs with an empty or `localhost` host.
fn file_url_to_path(p: &str) -> Option<String> {
    let rest = p.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    crate::js::percent_decode(path)
}

/// The path shown to the model: relative to `base` when inside it (with `/`
/// separators), else the absolute path.
pub fn relative_to(base: &str, abs: &str) -> String {
    if abs == base {
        return String::new();
    }
    let prefix = if base.ends_with('/') {
        base.to_string()
    } else {
        format!("{base}/")
    };
    abs.strip_prefix(&prefix).unwrap_or(abs).to_string()
}

/// The final component of a path.
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_pi() {
        let r = |p: &str| resolve_to_cwd(p, "/ws", Some("/home/u"));
        assert_eq!(r("a.txt"), "/ws/a.txt");
        assert_eq!(r("@a.txt"), "/ws/a.txt");
        assert_eq!(r("file\u{00A0}name.txt"), "/ws/file name.txt");
        assert_eq!(r("~"), "/home/u");
        assert_eq!(r("~/x"), "/home/u/x");
        assert_eq!(r("~foo"), "/ws/~foo");
        assert_eq!(r("../x"), "/x");
        assert_eq!(r("/a/./b/../c/"), "/a/c");
        assert_eq!(r(""), "/ws");
        assert_eq!(r("file:///tmp/a%20b"), "/tmp/a b");
        assert_eq!(r("/../.."), "/");
    }
}

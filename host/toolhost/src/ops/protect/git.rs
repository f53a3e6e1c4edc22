//! What makes git run a program, read the way git reads it: its
//! configuration files (with their includes) and the hooks directory of a
//! repository, found from a directory the way git's own discovery finds
//! them (`.git` directories, `gitdir:` files, `commondir`, bare
//! repositories, `core.hooksPath`).
//!
//! Judged by what a file *is*, not by its name: a configuration is inert
//! only if every entry is on a list of keys that name no program and
//! redirect nothing ([`inert_entry`]); anything else, an unknown key or text
//! that does not parse included, counts as able to run code. A hook is any
//! executable file in the hooks directory that git would run (not a
//! `*.sample`).

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Largest file read as configuration, a hook or a redirection; a bigger
/// one is judged by its size alone (as able to run code).
pub const MAX_CODE_FILE: u64 = 1 << 20;

/// One `key = value` of a configuration file, with the lines it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Lowercased section name (`remote`).
    pub section: String,
    /// The subsection as written (`origin`), if any.
    pub subsection: Option<String>,
    /// Lowercased key (`url`).
    pub key: String,
    /// The value after unquoting; `None` for a bare key (boolean true).
    pub value: Option<String>,
    /// The entry's own text, continuation lines included.
    pub text: String,
}

impl Entry {
    /// `section.subsection.key`, as `git config` names it.
    pub fn name(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }
}

/// A configuration file as a list of entries, or why it does not parse.
pub fn parse_config(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    let mut lines = text.split_inclusive('\n').enumerate().peekable();
    while let Some((number, line)) = lines.next() {
        let mut rest = line.trim_start();
        if rest.starts_with('[') {
            let (header, after) = parse_header(rest)
                .ok_or_else(|| format!("line {}: a malformed section header", number + 1))?;
            section = Some(header);
            rest = after.trim_start();
        }
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let Some((name, value_part)) = split_key(rest) else {
            return Err(format!("line {}: not a `key = value` line", number + 1));
        };
        let Some((sec, sub)) = section.clone() else {
            return Err(format!("line {}: a key outside any section", number + 1));
        };
        let mut text_of_entry = rest.to_string();
        let value = match value_part {
            None => None,
            Some(first) => {
                let mut raw = first.to_string();
                // A value continues on the next line after a backslash.
                while ends_in_continuation(&raw) {
                    let Some((_, next)) = lines.next() else { break };
                    raw.truncate(raw.trim_end_matches(['\n', '\r']).len() - 1);
                    raw.push_str(next);
                    text_of_entry.push_str(next);
                }
                Some(unquote(&raw).ok_or_else(|| {
                    format!("line {}: a value with an unclosed quote", number + 1)
                })?)
            }
        };
        if !text_of_entry.ends_with('\n') {
            text_of_entry.push('\n');
        }
        entries.push(Entry {
            section: sec,
            subsection: sub,
            key: name.to_ascii_lowercase(),
            value,
            text: text_of_entry,
        });
    }
    Ok(entries)
}

/// `[section]`, `[section "sub"]` or the old `[section.sub]`; the header
/// and what follows it on the line.
fn parse_header(line: &str) -> Option<((String, Option<String>), &str)> {
    let inner = &line[1..];
    let close_plain = inner.find(']')?;
    let name_end = inner.find([' ', '\t', '"', ']'])?;
    let name = &inner[..name_end];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    {
        return None;
    }
    if name_end == close_plain {
        // `[section]` or `[section.sub]` (the old form lowercases nothing
        // but the section).
        let (section, sub) = match name.split_once('.') {
            Some((s, sub)) => (s, Some(sub.to_string())),
            None => (name, None),
        };
        return Some((
            (section.to_ascii_lowercase(), sub),
            &inner[close_plain + 1..],
        ));
    }
    let after_name = inner[name_end..].trim_start_matches([' ', '\t']);
    let quoted = after_name.strip_prefix('"')?;
    let mut sub = String::new();
    let mut chars = quoted.char_indices();
    loop {
        let (i, c) = chars.next()?;
        match c {
            '\\' => sub.push(chars.next()?.1),
            '"' => {
                let tail = quoted[i + 1..].strip_prefix(']')?;
                if name.contains('.') {
                    return None;
                }
                return Some(((name.to_ascii_lowercase(), Some(sub)), tail));
            }
            '\n' => return None,
            c => sub.push(c),
        }
    }
}

/// The key of a `key = value` line and the raw value, if there is one.
fn split_key(line: &str) -> Option<(&str, Option<&str>)> {
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(line.len());
    let key = &line[..end];
    if key.is_empty() || !key.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let rest = line[end..].trim_start_matches([' ', '\t']);
    if let Some(value) = rest.strip_prefix('=') {
        return Some((key, Some(value)));
    }
    let rest = rest.trim_end();
    (rest.is_empty() || rest.starts_with('#') || rest.starts_with(';')).then_some((key, None))
}

/// Whether a raw value's line ends in a backslash that continues it (one
/// outside a comment; quotes do not stop it).
fn ends_in_continuation(raw: &str) -> bool {
    let line = raw.trim_end_matches(['\n', '\r']);
    let mut in_quote = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek().is_none() => return true,
            '\\' => {
                chars.next();
            }
            '"' => in_quote = !in_quote,
            '#' | ';' if !in_quote => return false,
            _ => {}
        }
    }
    false
}

/// A value as git reads it: quotes removed, escapes applied, a comment
/// outside quotes cut, the ends trimmed. `None` for an unclosed quote or an
/// unknown escape.
fn unquote(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut in_quote = false;
    let mut chars = raw.trim().chars();
    let mut pending_space = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => in_quote = !in_quote,
            '\\' => {
                let escaped = match chars.next()? {
                    'n' => '\n',
                    't' => '\t',
                    'b' => '\u{8}',
                    '\\' => '\\',
                    '"' => '"',
                    '\n' => continue,
                    _ => return None,
                };
                out.push_str(&std::mem::take(&mut pending_space));
                out.push(escaped);
            }
            '#' | ';' if !in_quote => break,
            ' ' | '\t' if !in_quote => pending_space.push(c),
            '\n' | '\r' if !in_quote => {}
            c => {
                out.push_str(&std::mem::take(&mut pending_space));
                out.push(c);
            }
        }
    }
    (!in_quote).then_some(out)
}

/// Whether `entry` can neither run a program nor send git elsewhere: a key
/// on this list of settings that only tune git's own behaviour, with a value
/// that names no program. Everything else (hooks paths, editors, pagers,
/// filters, drivers, credential helpers, `!` aliases, includes, transport
/// helpers, `core.worktree`, unknown keys) is not.
pub fn inert_entry(entry: &Entry) -> bool {
    let (section, key) = (entry.section.as_str(), entry.key.as_str());
    let value = entry.value.as_deref().unwrap_or("true");
    let sub = entry.subsection.is_some();
    // A URL `helper::address` runs the program `git-remote-helper`.
    let plain_url = || !value.contains("::");
    let boolean = || {
        matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
        )
    };
    match (section, sub, key) {
        ("core", false, k) => matches!(
            k,
            "repositoryformatversion"
                | "filemode"
                | "bare"
                | "logallrefupdates"
                | "ignorecase"
                | "precomposeunicode"
                | "symlinks"
                | "autocrlf"
                | "eol"
                | "safecrlf"
                | "quotepath"
                | "trustctime"
                | "checkstat"
                | "splitindex"
                | "untrackedcache"
                | "preloadindex"
                | "compression"
                | "loosecompression"
                | "bigfilethreshold"
                | "abbrev"
                | "commentchar"
                | "commentstring"
                | "whitespace"
                | "sharedrepository"
                | "warnambiguousrefs"
                | "multipackindex"
                | "commitgraph"
                | "fsync"
                | "fsyncmethod"
                | "sparsecheckout"
                | "sparsecheckoutcone"
                | "excludesfile"
                | "attributesfile"
                | "longpaths"
                | "protectntfs"
                | "protecthfs"
                | "fsmonitorhookversion"
        ),
        ("extensions", false, _) => true,
        ("remote", true, "url" | "pushurl") => plain_url(),
        ("remote", true, k) => matches!(
            k,
            "fetch"
                | "push"
                | "mirror"
                | "tagopt"
                | "prune"
                | "prunetags"
                | "skipdefaultupdate"
                | "skipfetchall"
                | "promisor"
                | "partialclonefilter"
                | "followremotehead"
        ),
        ("branch", true, k) => {
            matches!(
                k,
                "remote" | "merge" | "rebase" | "pushremote" | "description"
            )
        }
        ("branch", false, k) => matches!(k, "autosetupmerge" | "autosetuprebase" | "sort"),
        ("user" | "author" | "committer", false, k) => {
            matches!(k, "name" | "email" | "signingkey" | "useconfigonly")
        }
        ("init", false, "defaultbranch") => true,
        ("submodule", true, "url") => plain_url(),
        ("submodule", true, k) => matches!(
            k,
            "active" | "branch" | "shallow" | "fetchrecursesubmodules" | "ignore" | "path"
        ),
        ("submodule", false, k) => matches!(k, "recurse" | "fetchjobs" | "active"),
        ("pull", false, k) => matches!(k, "rebase" | "ff"),
        ("push", false, k) => matches!(
            k,
            "default" | "autosetupremote" | "followtags" | "recursesubmodules"
        ),
        ("fetch", false, k) => matches!(
            k,
            "prune"
                | "prunetags"
                | "recursesubmodules"
                | "parallel"
                | "writecommitgraph"
                | "fsckobjects"
        ),
        ("merge", false, k) => matches!(
            k,
            "ff" | "conflictstyle" | "log" | "renames" | "renamelimit" | "stat" | "autostash"
        ),
        ("rebase", false, k) => matches!(
            k,
            "autosquash"
                | "autostash"
                | "updaterefs"
                | "abbreviatecommands"
                | "missingcommitscheck"
                | "stat"
        ),
        ("commit", false, k) => matches!(k, "gpgsign" | "verbose" | "cleanup" | "status"),
        ("tag", false, k) => matches!(k, "gpgsign" | "sort" | "forcesignannotated"),
        ("gpg", false, "format") => true,
        (
            "color" | "advice" | "gc" | "pack" | "index" | "feature" | "column" | "versionsort",
            ..,
        ) => true,
        ("diff", false, k) => matches!(
            k,
            "renames"
                | "renamelimit"
                | "algorithm"
                | "mnemonicprefix"
                | "noprefix"
                | "context"
                | "interhunkcontext"
                | "indentheuristic"
                | "colormoved"
                | "submodule"
                | "ignoresubmodules"
                | "statgraphwidth"
        ),
        ("status", false, k) => matches!(
            k,
            "showuntrackedfiles"
                | "submodulesummary"
                | "short"
                | "branch"
                | "relativepaths"
                | "aheadbehind"
        ),
        ("log", false, k) => matches!(k, "date" | "decorate" | "abbrevcommit" | "follow"),
        ("help", false, "autocorrect") => true,
        ("i18n", false, _) => true,
        ("rerere", false, k) => matches!(k, "enabled" | "autoupdate"),
        ("receive", false, k) => matches!(
            k,
            "denycurrentbranch" | "denynonfastforwards" | "denydeletes" | "fsckobjects"
        ),
        ("transfer", false, "fsckobjects") => true,
        ("http", false, k) => matches!(k, "postbuffer" | "version"),
        ("worktree", false, "guessremote") => true,
        ("maintenance", _, k) => matches!(k, "auto" | "strategy" | "enabled" | "schedule"),
        ("alias", false, _) => !value.trim_start().starts_with('!'),
        ("pager", false, _) => boolean(),
        _ => false,
    }
}

/// What a configuration file's text holds that could run code: the names of
/// its entries that are not inert, or the reason it does not parse.
pub fn risky_entries(text: &str) -> Vec<String> {
    match parse_config(text) {
        Ok(entries) => {
            let mut names: Vec<String> = entries
                .iter()
                .filter(|e| !inert_entry(e))
                .map(Entry::name)
                .collect();
            names.dedup();
            names
        }
        Err(reason) => vec![format!(
            "a configuration git may read differently ({reason})"
        )],
    }
}

/// The inert part of a configuration file: its inert entries under their
/// sections, everything else left out (what a neutralized file keeps).
pub fn inert_part(text: &str) -> String {
    let Ok(entries) = parse_config(text) else {
        return String::new();
    };
    let mut out = String::new();
    let mut current: Option<(&str, Option<&str>)> = None;
    for entry in entries.iter().filter(|e| inert_entry(e)) {
        let header = (entry.section.as_str(), entry.subsection.as_deref());
        if current != Some(header) {
            match header.1 {
                Some(sub) => {
                    let escaped = sub.replace('\\', "\\\\").replace('"', "\\\"");
                    out.push_str(&format!("[{} \"{escaped}\"]\n", header.0));
                }
                None => out.push_str(&format!("[{}]\n", header.0)),
            }
            current = Some(header);
        }
        out.push('\t');
        out.push_str(entry.text.trim_start());
    }
    out
}

/// The `include.path` and `includeIf.*.path` values of a configuration.
pub fn includes(text: &str) -> Vec<String> {
    parse_config(text)
        .map(|entries| {
            entries
                .into_iter()
                .filter(|e| (e.section == "include" || e.section == "includeif") && e.key == "path")
                .filter_map(|e| e.value)
                .collect()
        })
        .unwrap_or_default()
}

/// The last `core.hooksPath` of a configuration, if it sets one.
pub fn hooks_path(text: &str) -> Option<String> {
    parse_config(text)
        .ok()?
        .into_iter()
        .filter(|e| e.section == "core" && e.subsection.is_none() && e.key == "hookspath")
        .filter_map(|e| e.value)
        .next_back()
}

/// Whether a directory with these entry names looks like a git directory to
/// git (`HEAD`, and `objects/` and `refs/` or a `commondir` file naming
/// where they are): a place git opens as a repository when it is the
/// current directory or a `gitdir:` points at it.
pub fn looks_like_git_dir(has: impl Fn(&str) -> bool) -> bool {
    has("HEAD") && ((has("objects") && has("refs")) || has("commondir"))
}

/// The directory a `gitdir:` file names, relative to the file's directory.
pub fn gitdir_target(file_dir: &Path, text: &str) -> Option<PathBuf> {
    let line = text.lines().next()?.trim_end();
    let target = line.strip_prefix("gitdir:")?.trim();
    (!target.is_empty()).then(|| lexical_join(file_dir, Path::new(target)))
}

/// A path a configuration names (an include, a hooks path), as git
/// resolves it: `~/` from `home`, relative ones from `base`.
pub fn config_path(value: &str, base: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = value.strip_prefix("~/") {
        return home.map(|h| lexical_join(h, Path::new(rest)));
    }
    if value.starts_with('~') || value.starts_with("%(prefix)") {
        return None;
    }
    Some(lexical_join(base, Path::new(value)))
}

/// `base` joined with `rel` (or `rel` if absolute), `.` and `..` resolved by
/// name.
pub fn lexical_join(base: &Path, rel: &Path) -> PathBuf {
    let mut out = if rel.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    for component in rel.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

/// Whether a file named `name` in a hooks directory is one git would run:
/// git runs hooks by their exact name, never a `*.sample`.
pub fn is_hook_name(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    !name.ends_with(".sample") && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        risky_entries(text)
    }

    #[test]
    fn parses_sections_subsections_and_values_as_git_does() {
        let text = "# comment\n[core]\n\trepositoryformatversion = 0\n\tbare\n\
                    [remote \"or\\\"igin\"]\n\turl = \"a b\" ; note\n[branch.main]\n\
                    remote = origin\n[alias] co = \"check\\\n out\"\n";
        let entries = parse_config(text).unwrap();
        let shown: Vec<(String, Option<String>)> = entries
            .iter()
            .map(|e| (e.name(), e.value.clone()))
            .collect();
        assert_eq!(
            shown,
            [
                ("core.repositoryformatversion".into(), Some("0".into())),
                ("core.bare".into(), None),
                ("remote.or\"igin.url".into(), Some("a b".into())),
                ("branch.main.remote".into(), Some("origin".into())),
                ("alias.co".into(), Some("check out".into())),
            ]
        );
        assert!(parse_config("[core\n").is_err());
        assert!(
            parse_config("key = 1\n").is_err(),
            "a key outside a section"
        );
        assert!(parse_config("[a]\nk = \"open\n").is_err());
    }

    #[test]
    fn what_git_init_and_clone_write_is_inert() {
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n";
        let clone = "[remote \"origin\"]\n\turl = /srv/repo.git\n\
                     \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                     \tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = A\n";
        assert!(names(init).is_empty());
        assert!(names(clone).is_empty());
        assert!(names("[alias]\n\tst = status\n[pager]\n\tbranch = false\n").is_empty());
    }

    #[test]
    fn every_key_that_runs_a_program_or_redirects_is_risky() {
        for (text, name) in [
            ("[core]\nfsmonitor = /tmp/x\n", "core.fsmonitor"),
            ("[core]\n\thooksPath = .h\n", "core.hookspath"),
            ("[core]\n\tsshCommand = x\n", "core.sshcommand"),
            ("[core]\n\tpager = x\n", "core.pager"),
            ("[core]\n\teditor = x\n", "core.editor"),
            ("[core]\n\tworktree = /\n", "core.worktree"),
            ("[credential]\n\thelper = x\n", "credential.helper"),
            ("[filter \"lfs\"]\n\tclean = x\n", "filter.lfs.clean"),
            ("[diff \"x\"]\n\ttextconv = x\n", "diff.x.textconv"),
            ("[diff]\n\texternal = x\n", "diff.external"),
            ("[merge \"x\"]\n\tdriver = x\n", "merge.x.driver"),
            ("[alias]\n\tst = \"!sh -c x\"\n", "alias.st"),
            ("[include]\n\tpath = ../x\n", "include.path"),
            (
                "[includeIf \"gitdir:/\"]\n\tpath = x\n",
                "includeif.gitdir:/.path",
            ),
            ("[remote \"o\"]\n\turl = ext::sh -c x\n", "remote.o.url"),
            ("[pager]\n\tlog = less -R\n", "pager.log"),
            ("[sequence]\n\teditor = x\n", "sequence.editor"),
            ("[unknown]\n\tkey = 1\n", "unknown.key"),
        ] {
            assert_eq!(names(text), [name], "{text}");
        }
        assert_eq!(
            names("[core\n").len(),
            1,
            "text that does not parse is risky"
        );
    }

    #[test]
    fn the_inert_part_keeps_what_is_inert_under_its_section() {
        let text = "[core]\n\tbare = false\n\tfsmonitor = x\n[remote \"o\"]\n\turl = /r\n\
                    [alias]\n\tx = !y\n";
        assert_eq!(
            inert_part(text),
            "[core]\n\tbare = false\n[remote \"o\"]\n\turl = /r\n"
        );
        assert!(names(&inert_part(text)).is_empty());
    }

    #[test]
    fn redirections_and_paths_resolve_as_git_resolves_them() {
        let base = Path::new("/ws/sub");
        assert_eq!(
            gitdir_target(base, "gitdir: ../.git/modules/sub\n"),
            Some(PathBuf::from("/ws/.git/modules/sub"))
        );
        assert_eq!(gitdir_target(base, "nothing"), None);
        assert_eq!(
            config_path("~/x", base, Some(Path::new("/h"))),
            Some(PathBuf::from("/h/x"))
        );
        assert_eq!(
            hooks_path("[core]\nhooksPath = a\n[core]\nhooksPath = b\n"),
            Some("b".into())
        );
        assert_eq!(
            includes("[include]\npath = x\n[includeIf \"a\"]\npath = y\n"),
            ["x", "y"]
        );
        assert!(looks_like_git_dir(
            |n| ["HEAD", "objects", "refs"].contains(&n)
        ));
        assert!(looks_like_git_dir(|n| ["HEAD", "commondir"].contains(&n)));
        assert!(!looks_like_git_dir(|n| ["objects", "refs"].contains(&n)));
        assert!(is_hook_name(OsStr::new("pre-commit")));
        assert!(!is_hook_name(OsStr::new("pre-commit.sample")));
    }
}

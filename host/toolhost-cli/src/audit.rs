//! `toolhost audit`: the audit log, readable, filtered by tool, outcome and
//! time (the library reads and filters; this prints).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;
use toolhost::audit::{self, Entry, Filter, Outcome};
use toolhost::display::{escape, escape_path};
use toolhost::extensions::policy::{Policy, default_user_config_dir};
use toolhost::extensions::trust::TrustStore;

/// What `toolhost audit` was asked.
#[derive(clap::Args)]
pub struct Query {
    /// The log (default: --audit, else `audit` in the user's toolhost.toml).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// ok, error, not-found, invalid, blocked, cancelled, timeout, crashed or not-run.
    #[arg(long, value_name = "OUTCOME")]
    pub outcome: Option<String>,
    /// Calls that started at or after this time: RFC 3339, or a time ago (15m, 2h, 7d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Calls that started before this time (as --since).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only calls that asked the person: each question, its answer and the
    /// front end that asked.
    #[arg(long)]
    pub asked: bool,
    #[arg(long)]
    pub json: bool,
}

/// The log to read: the one named, else the one `--audit` names, else the
/// user's `toolhost.toml`'s.
fn log_file(query: &Query, global: Option<&Path>, workspace: Option<&Path>) -> Result<PathBuf> {
    if let Some(file) = query.file.as_deref().or(global) {
        return Ok(file.to_path_buf());
    }
    let workspace = match workspace {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("finding the current directory")?,
    };
    let user_config = default_user_config_dir();
    let policy = Policy::load(&workspace, user_config.as_deref(), &TrustStore::empty())
        .context("reading the user's toolhost.toml")?;
    match policy.audit {
        Some(file) => Ok(file),
        None => bail!(
            "no audit log is configured: name the FILE, give --audit FILE, or set \
             audit = \"…\" in the user's toolhost.toml"
        ),
    }
}

pub fn run(query: Query, global: Option<&Path>, workspace: Option<&Path>) -> Result<ExitCode> {
    let path = log_file(&query, global, workspace)?;
    let now = SystemTime::now();
    let when = |text: &Option<String>, what: &str| -> Result<Option<SystemTime>> {
        text.as_deref()
            .map(|t| audit::parse_when(t, now).map_err(|e| anyhow::anyhow!("--{what}: {e}")))
            .transpose()
    };
    let filter = Filter {
        tool: query.tool.clone(),
        outcome: query
            .outcome
            .as_deref()
            .map(str::parse::<Outcome>)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--outcome: {e}"))?,
        since: when(&query.since, "since")?,
        until: when(&query.until, "until")?,
        asked: query.asked,
    };
    let read = audit::read(&path, &filter)
        .with_context(|| format!("reading the audit log {}", path.display()))?;
    for (line, error) in &read.malformed {
        eprintln!(
            "toolhost: warning: {}:{line}: not an audit entry: {}",
            escape_path(&path),
            escape(error)
        );
    }
    if query.json {
        for entry in &read.entries {
            println!("{}", serde_json::to_string(entry)?);
        }
        return Ok(ExitCode::SUCCESS);
    }
    for (time, lost, reason) in &read.lost {
        println!(
            "{}  ! {lost} entries were lost before this time: {}",
            escape(time),
            escape(reason)
        );
    }
    for entry in &read.entries {
        print_entry(entry);
    }
    let failed = read
        .entries
        .iter()
        .filter(|e| e.outcome != Outcome::Ok)
        .count();
    println!(
        "{} call{} ({} ok, {failed} not)",
        read.entries.len(),
        if read.entries.len() == 1 { "" } else { "s" },
        read.entries.len() - failed
    );
    Ok(ExitCode::SUCCESS)
}

/// One call: a line with when, how it ended, the tool, how long it took and
/// its arguments; then what it used, one kind per line. The model chose the
/// tool's name and arguments, a tool or the workspace the paths and the
/// error: all escaped, so no entry can hide another.
fn print_entry(entry: &Entry) {
    let mark = match entry.outcome {
        Outcome::Ok => "✓".to_string(),
        Outcome::Error => "✗".to_string(),
        other => format!("✗ {}", other.as_str()),
    };
    let args = crate::view::clip(&entry.arguments.to_string(), 100);
    println!(
        "{}  {mark:<3} {:<8} {:>9}  {args}",
        escape(entry.time.replace('T', " ").trim_end_matches('Z')),
        escape(&entry.tool),
        format!("{:.1} ms", entry.duration_ms),
    );
    for (what, list) in entry.used_lines() {
        println!("    {what}: {}", escape(&list.join(", ")));
    }
    if entry.used.more > 0 {
        println!("    and {} more", entry.used.more);
    }
    if let Some(error) = &entry.error {
        println!("    error: {}", escape(error));
    }
}

//! `toolhost trust`: review what a workspace contributes, and trust or revoke it.

use super::ext::{print_component, summary};
use crate::*;

pub(crate) async fn trust(
    workspace: Option<&std::path::Path>,
    yes: bool,
    revoke: bool,
    json: bool,
) -> Result<ExitCode> {
    use toolhost::extensions::review;
    let workspace = workspace
        .unwrap_or(std::path::Path::new("."))
        .canonicalize()
        .context("locating the workspace")?;
    let config = user_config_dir()?;
    if revoke {
        if review::revoke(&workspace, &config)? {
            println!(
                "{} is no longer trusted: its toolhost.toml and components are refused",
                escape_path(&workspace)
            );
        } else {
            println!("{} was not trusted", escape_path(&workspace));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = toolhost::Runtime::shared()?;
    let review = review::review(&runtime, &workspace, &config).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&review)?);
        if !yes {
            return Ok(ExitCode::SUCCESS);
        }
    } else {
        print_review(&review);
    }
    if review.files().is_empty() {
        if !json {
            println!("\nnothing to trust: no toolhost.toml and no .toolhost/extensions/ here");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if review.all_trusted() && !yes {
        if !json {
            println!("\nall of it is trusted already");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !yes {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            bail!(
                "not trusting without asking: review the list above, then run \
                 `toolhost trust --yes` to trust exactly these files"
            );
        }
        eprint!(
            "\nTrust these {} files of {}? [y/N] ",
            review.files().len(),
            escape_path(&workspace)
        );
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing trusted");
            return Ok(ExitCode::from(1));
        }
    }
    let store = review::approve(&review, &config)?;
    // Its components' first calls find Cranelift's code, compiled meanwhile.
    hand_over_compiles(Some(&workspace), &[]);
    if !json {
        println!(
            "trusted {} files of {} (recorded in {}); any change needs `toolhost trust` again",
            review.files().len(),
            escape_path(&workspace),
            escape_path(&store)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A review as a person reads it: each file with its digest and state, each
/// component's tools, hooks, requests and the grants the toml gives it.
/// Every name, path and text in it comes from the workspace, escaped.
pub(crate) fn print_review(review: &toolhost::extensions::review::Review) {
    use toolhost::extensions::review::ReviewedFile;
    let shown = |f: &ReviewedFile| {
        let path = escape_path(f.path.strip_prefix(&review.workspace).unwrap_or(&f.path));
        let state = match f.verdict {
            toolhost::extensions::trust::Verdict::Trusted => "trusted",
            toolhost::extensions::trust::Verdict::Untrusted => "new",
            toolhost::extensions::trust::Verdict::Changed => "CHANGED since trusted",
        };
        format!("{path}  {}  ({state})", f.digest)
    };
    println!("workspace {}", escape_path(&review.workspace));
    if let Some(policy) = &review.policy {
        println!("\n{}", shown(policy));
    }
    for ext in &review.extensions {
        println!("\nextension {}", escape(&ext.name));
        println!("  component {}", shown(&ext.component));
        if let Some(manifest) = &ext.manifest {
            println!("  manifest  {}", shown(manifest));
        }
        match &ext.inspection {
            Ok(i) => print_component(i),
            Err(reason) => println!("  cannot be inspected: {}", escape(reason)),
        }
        let granted = ext
            .grant
            .as_ref()
            .map(|g| summary(&serde_json::to_value(g).unwrap_or_default()))
            .unwrap_or_else(|| "nothing".into());
        println!("  granted by toolhost.toml: {granted}");
        // A workspace's file declares no secret: what it writes is ignored.
        for name in ext.grant.iter().flat_map(|g| g.secrets.keys()) {
            println!(
                "  secret {}: declared here and ignored (only the user's toolhost.toml declares secrets)",
                escape(name)
            );
        }
    }
    for problem in &review.problems {
        println!(
            "\nrefused, cannot be trusted: {}",
            escape(&problem.to_string())
        );
    }
}

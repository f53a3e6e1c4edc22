//! `toolhost ext …`: extensions listed, added from files and registries, updated, published,
//! signed, inspected and removed.

use super::list::print_definition;
use crate::*;

/// A component's tools, whether it has hooks, and what it requests (hooks
/// being a request too), as `trust` and `ext add` show them.
pub(crate) fn print_component(i: &toolhost::Inspection) {
    for line in component_lines(i) {
        println!("{line}");
    }
}

/// [`print_component`]'s lines, escaped.
pub(crate) fn component_lines(i: &toolhost::Inspection) -> Vec<String> {
    let list = |items: Vec<&str>, none: &str| {
        if items.is_empty() {
            none.to_string()
        } else {
            escape(&items.join(", ")).into_owned()
        }
    };
    let mut lines = vec![format!(
        "  tools: {}",
        list(i.tools.iter().map(|t| t.name.as_str()).collect(), "none")
    )];
    if i.hooks {
        lines.push("  hooks: yes (sees and may rewrite every call)".into());
    }
    let mut requests: Vec<&str> = i.capabilities.iter().map(String::as_str).collect();
    if i.hooks {
        requests.push("hooks");
    }
    lines.push(format!("  requests: {}", list(requests, "nothing")));
    lines
}

/// `toolhost ext …`, but `list`, which loads the tools first.
pub(crate) async fn ext(
    command: ExtCommand,
    workspace: Option<&std::path::Path>,
) -> Result<ExitCode> {
    use super::author;
    match command {
        ExtCommand::New {
            name,
            language,
            dir,
        } => author::new(&name, language, dir.as_deref()),
        ExtCommand::Build { project } => author::build::ext_build(&project).await,
        ExtCommand::Test {
            project,
            rerecord,
            no_build,
        } => author::test::ext_test(&project, rerecord, !no_build).await,
        ExtCommand::Dev { project } => author::dev::ext_dev(&project, workspace).await,
        ExtCommand::Toolchain { languages, install } => {
            author::toolchain::toolchain(&languages, install)
        }
        ExtCommand::Inspect { file, json } => inspect(&file, json).await,
        ExtCommand::Add {
            file,
            name,
            key,
            signed_by,
            grant,
        } => {
            let mut grant = grant.grant()?;
            // In a project: what it built, under its manifest's name and,
            // unless flags grant otherwise, its manifest's [capabilities].
            let (file, name) = match file {
                Some(file) => (file, name),
                None => {
                    let project = author::Project::open(std::path::Path::new("."))?;
                    let file = project.built()?.display().to_string();
                    if grant == toolhost::GrantSpec::default() {
                        grant = project.grant();
                        println!(
                            "granting {} what its extension.toml asks: {}",
                            escape(&project.name),
                            summary(&serde_json::to_value(&grant)?)
                        );
                    }
                    (file, name.or(Some(project.name)))
                }
            };
            grant.key = key
                .map(|k| {
                    std::fs::canonicalize(&k)
                        .map(|k| k.display().to_string())
                        .with_context(|| format!("the key {}", k.display()))
                })
                .transpose()?;
            grant.signed_by = signed_by;
            ext_add(&file, name.as_deref(), grant).await
        }
        ExtCommand::Update { names, yes } => ext_update(&names, yes).await,
        ExtCommand::Publish { targets, sign } => {
            let (file, reference) = match targets.as_slice() {
                [file, reference] => (PathBuf::from(file), reference),
                [reference] => {
                    let project = author::Project::open(std::path::Path::new("."))?;
                    (project.built()?, reference)
                }
                _ => bail!("ext publish takes [FILE.wasm] oci://REGISTRY/REPOSITORY:TAG"),
            };
            ext_publish(&file, reference, sign.as_deref()).await
        }
        ExtCommand::Attach { reference, bundle } => ext_attach(&reference, &bundle).await,
        ExtCommand::Keygen { prefix } => ext_keygen(&prefix),
        ExtCommand::Remove { name } => ext_remove(&name),
        ExtCommand::List { .. } => unreachable!("`ext list` loads the tools first"),
    }
}

pub(crate) async fn ext_add(
    file: &str,
    name: Option<&str>,
    grant: toolhost::extensions::policy::GrantSpec,
) -> Result<ExitCode> {
    use toolhost::extensions::install;
    let config = user_config_dir()?;
    let runtime = toolhost::Runtime::shared()?;
    let from_registry = file.starts_with(toolhost::extensions::oci::SCHEME);
    let installed = if from_registry {
        install::add_from_registry(&runtime, &config, file, name, grant).await?
    } else {
        install::add(&runtime, &config, std::path::Path::new(file), name, grant).await?
    };
    // Its first call finds Cranelift's code, compiled meanwhile.
    hand_over_compiles(None, std::slice::from_ref(&installed.path));
    let i = &installed.inspection;
    println!(
        "installed {} as {}",
        escape(file),
        escape_path(&installed.path)
    );
    println!("  digest: {}", installed.digest);
    if let Some(source) = &installed.grant.source {
        let signed = match (&installed.grant.key, &installed.grant.signed_by) {
            (Some(key), _) => format!("signature by {key} checked"),
            (None, Some(by)) => format!("signature of {by} checked"),
            (None, None) => "no signature policy".to_string(),
        };
        println!("  from {} ({signed})", escape(source));
    }
    print_component(i);
    println!(
        "  granted in {}: {}",
        escape_path(&installed.policy),
        summary(&serde_json::to_value(&installed.grant)?)
    );
    for line in secret_lines(&installed.grant) {
        println!("  {line}");
    }
    if !installed.ungranted.is_empty() {
        println!("  not granted (it is refused at load until these are):");
        for line in &installed.ungranted {
            println!("    {}", escape(line));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn ext_update(names: &[String], yes: bool) -> Result<ExitCode> {
    use toolhost::extensions::install::{self, Update};
    let config = user_config_dir()?;
    let runtime = toolhost::Runtime::shared()?;
    let names = if names.is_empty() {
        install::from_registries(&config)?
    } else {
        names.to_vec()
    };
    let mut waiting = false;
    for name in &names {
        match install::update(&runtime, &config, name, yes).await? {
            Update::Pinned { source } => {
                println!(
                    "{}: pinned by digest ({}); nothing to update",
                    escape(name),
                    escape(&source)
                )
            }
            Update::Current { source, digest } => {
                println!(
                    "{}: up to date ({} is {digest})",
                    escape(name),
                    escape(&source)
                )
            }
            Update::Newer {
                source,
                from,
                to,
                requested: (before, now),
                ungranted,
                applied,
            } => {
                let list = |l: &[String]| {
                    if l.is_empty() {
                        "none".to_string()
                    } else {
                        escape(&l.join(", ")).into_owned()
                    }
                };
                println!(
                    "{}: {} moved from {from} to {to}",
                    escape(name),
                    escape(&source)
                );
                println!("  requests: {} (was {})", list(&now), list(&before));
                for line in &ungranted {
                    println!("  not granted: {}", escape(line));
                }
                if applied {
                    println!("  installed, its digest pinned in its grant");
                } else {
                    println!(
                        "  not installed: run `toolhost ext update {} --yes` to install it",
                        escape(name)
                    );
                    waiting = true;
                }
            }
        }
    }
    Ok(if waiting {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) async fn ext_publish(
    file: &std::path::Path,
    reference: &str,
    key: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let runtime = toolhost::Runtime::shared()?;
    let password = std::env::var(toolhost::extensions::signature::PASSWORD_VARIABLE).ok();
    let published =
        toolhost::extensions::install::publish(&runtime, file, reference, key, password.as_deref())
            .await?;
    println!(
        "pushed {} to {}",
        escape_path(file),
        escape(&published.reference)
    );
    println!("  digest: {}", published.digest);
    if published.signed {
        println!(
            "  signed with {}",
            escape_path(key.expect("signed with a key"))
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn ext_attach(reference: &str, bundle: &std::path::Path) -> Result<ExitCode> {
    use toolhost::extensions::{keyless, oci::OciRef};
    let r = OciRef::parse(reference).map_err(anyhow::Error::msg)?;
    let bytes = std::fs::read(bundle).with_context(|| format!("reading {}", bundle.display()))?;
    let referrer = keyless::attach(&r, &bytes)
        .await
        .map_err(anyhow::Error::msg)?;
    println!("attached {} to {}", escape_path(bundle), escape(reference));
    println!("  as the referrer {referrer}");
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn ext_keygen(prefix: &std::path::Path) -> Result<ExitCode> {
    use toolhost::extensions::signature::{PASSWORD_VARIABLE, generate};
    let password = std::env::var(PASSWORD_VARIABLE).map_err(|_| {
        anyhow::anyhow!("set {PASSWORD_VARIABLE} to the password that seals the private key")
    })?;
    let (private, public) = generate(prefix, &password).map_err(anyhow::Error::msg)?;
    println!("private key (keep it secret): {}", escape_path(&private));
    println!(
        "public key (give it to your users): {}",
        escape_path(&public)
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn ext_remove(name: &str) -> Result<ExitCode> {
    let config = user_config_dir()?;
    let removed = toolhost::extensions::install::remove(&config, name)?;
    for file in &removed.files {
        println!("removed {}", escape_path(file));
    }
    if removed.grant {
        println!("removed the grant [extensions.{}]", escape(name));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn inspect(file: &std::path::Path, json: bool) -> Result<ExitCode> {
    let runtime = toolhost::Runtime::shared()?;
    let inspection = toolhost::inspect(&runtime, file).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&inspection)?);
        return Ok(ExitCode::SUCCESS);
    }
    // Everything below is the component's own choice but the word `none`.
    println!("{}", escape(&inspection.path));
    let caps = if inspection.capabilities.is_empty() {
        "none".to_string()
    } else {
        escape(&inspection.capabilities.join(", ")).into_owned()
    };
    println!("  requests: {caps}");
    // Where the secrets the user's toolhost.toml declares for an extension
    // of this name would go (it inspects a file; the grant is by name).
    for line in user_secret_lines(file) {
        println!("  {line}");
    }
    for tool in &inspection.tools {
        print_definition(tool)?;
    }
    for problem in &inspection.problems {
        println!("\nproblem: {}", escape(problem));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn ext_list(host: &Host, json: bool) -> Result<ExitCode> {
    let reports = host.extensions();
    if json {
        println!("{}", serde_json::to_string_pretty(reports)?);
        return Ok(ExitCode::SUCCESS);
    }
    if reports.is_empty() {
        println!("no extensions found (looked in .toolhost/extensions/ and the user's config)");
    }
    for r in reports {
        println!(
            "{} ({:?}) {}",
            escape(&r.name),
            r.origin,
            escape_path(&r.component)
        );
        if let Some(digest) = &r.digest {
            println!("  digest: {digest}");
        }
        let granted = serde_json::to_value(&r.granted)?;
        println!("  granted: {}", summary(&granted));
        for line in secret_lines(&r.granted) {
            println!("  {line}");
        }
        if let Some(requested) = &r.requested {
            println!(
                "  requested: {}",
                summary(&serde_json::to_value(requested)?)
            );
        }
        if !r.always.is_empty() {
            println!("  always allowed: {}", escape(&r.always.join(", ")));
        }
        match &r.refused {
            Some(reason) => println!("  refused: {}", escape(reason)),
            None => println!("  tools: {}", escape(&r.tools.join(", "))),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The secret lines of the user's grant to an extension named like `file`
/// (its stem); none when there is no such grant or file.
pub(crate) fn user_secret_lines(file: &std::path::Path) -> Vec<String> {
    let (Some(name), Ok(dir)) = (file.file_stem().and_then(|s| s.to_str()), user_config_dir())
    else {
        return Vec::new();
    };
    let path = dir.join(toolhost::extensions::policy::POLICY_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    toolhost::extensions::policy::parse_text(&text, &path, &dir)
        .ok()
        .and_then(|policy| policy.grants.get(name).map(secret_lines))
        .unwrap_or_default()
        .into_iter()
        .map(|line| format!("{line} (granted in {})", escape_path(&path)))
        .collect()
}

/// A line per secret of `grant`: its name, where it is read, the hosts it
/// goes to and how (never a value: the grant holds none).
pub(crate) fn secret_lines(grant: &toolhost::extensions::policy::GrantSpec) -> Vec<String> {
    grant
        .secrets
        .iter()
        .map(|(name, s)| {
            let shown = format!(
                "secret {name} (from {}) goes to {} in {}",
                s.from,
                s.hosts_text(),
                s.header_name()
            );
            escape(&shown).into_owned()
        })
        .collect()
}

/// The non-empty fields of a grant, `key=value` each, or `nothing`; escaped
/// (JSON leaves bidi and invisible characters in its strings as they are).
pub(crate) fn summary(grant: &Value) -> String {
    let parts: Vec<String> = grant
        .as_object()
        .map(|o| {
            o.iter()
                // Secrets have lines of their own (`secret_lines`).
                .filter(|(k, v)| match v {
                    _ if *k == "secrets" => false,
                    Value::Null | Value::Bool(false) => false,
                    Value::Array(a) => !a.is_empty(),
                    _ => true,
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect()
        })
        .unwrap_or_default();
    if parts.is_empty() {
        "nothing".into()
    } else {
        escape(&parts.join(" ")).into_owned()
    }
}

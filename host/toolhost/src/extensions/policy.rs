//! Policy: what each extension is granted, from `toolhost.toml`.
//!
//! Two files are read: the user's (`$XDG_CONFIG_HOME/toolhost/toolhost.toml`,
//! default `~/.config/toolhost/toolhost.toml`) and the workspace's
//! (`<workspace>/toolhost.toml`). Third-party extensions get nothing until a
//! file grants it; built-ins have fixed defaults (`crate::builtin`).
//!
//! # Grants bind to components, not names
//!
//! Anyone can pick a name, so a grant applies only to components of its own
//! file's origin: the user's grants (and an embedder's,
//! [`Policy::grant`]) to the user's extensions directory and the files given
//! on the command line; the workspace's grants to that workspace's components.
//! A grant may also pin the component's digest (`digest = "blake3:…"`): a
//! different component under that name then gets nothing.
//!
//! # The agent cannot grant itself anything
//!
//! The workspace's file lies where the agent's own tools can write. It is
//! therefore applied only as the content the user trusted
//! ([`crate::extensions::trust`]): any later change, by the agent or anyone,
//! makes the file untrusted again until the user reviews it anew.
//!
//! ```toml
//! extension-paths = ["~/tools/jq.wasm"]          # more extensions (files or directories)
//! active-tools = ["read", "bash", "edit", "write", "grep"]
//! pi = "1.6"                                     # the Pi whose texts the model gets (default 0.85)
//!
//! [exposure]                                     # how the model and other tools reach a tool
//! bash = "callable"                              # direct (default), model-only, callable, hidden
//! "jira__*" = "hidden"                           # `*` patterns; a name wins, then the longest
//! audit = "~/.local/state/toolhost/audit.jsonl"  # a line per call (user's file only)
//!
//! [extensions.wordcount]                         # by extension name
//! digest = "blake3:…"                            # only this exact component
//! fs-read = ["docs"]                             # directories, relative to the workspace
//! fs-write = ["out"]
//! process = ["git"]                              # programs it may run
//! network = true                                 # its programs may use the network
//! env = ["LANG"]                                 # environment variables it may see
//! search = true                                  # search within its fs-read roots
//! tools = true                                   # read and set the active tools
//! http = ["api.example.com", "http://localhost:8080"]  # wasi:http to these hosts only
//! http-response-kb = 1024                        # largest response body (default 16 MiB)
//! hooks = true                                   # see and rewrite every call (hook components)
//! replace-builtin = true                         # its tools may take a built-in's name
//! memory-mb = 128
//! time-limit-s = 30
//! output-kb = 512
//!
//! [permissions]                                  # see crate::permissions
//! default = "ask"                                # ask instead of refusing (user's file only)
//! allow = ["http(api.github.com)"]               # user's file only
//! ask = ["bash(git push*)"]
//! deny = ["bash(rm -rf *)"]
//! ```
//!
//! Relative `extension-paths` are relative to the file's own directory: the
//! user configuration directory, or the workspace.

pub use crate::capability::GrantSpec;
use crate::error::Diagnostic;
use crate::error::Error;
use crate::extensions::signature::SignaturePolicy;
use crate::extensions::trust::{Digest, TrustStore};
use crate::files::{self, MAX_POLICY_BYTES};
pub use crate::ops::http_client::SecretSpec;
use crate::permissions::{Anchors, PermissionsSpec, Rules};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The policy file's name, in the workspace and in the user config directory.
pub const POLICY_FILE: &str = "toolhost.toml";

/// `$XDG_CONFIG_HOME/toolhost`, else `~/.config/toolhost`.
pub fn default_user_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config/toolhost"))
}

/// toolhost's own state directory: `$XDG_STATE_HOME/toolhost`, else
/// `~/.local/state/toolhost` (where what the git guard neutralizes is kept).
pub fn default_state_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state/toolhost"))
}

/// toolhost's own data directory: `$XDG_DATA_HOME/toolhost`, else
/// `~/.local/share/toolhost` (where `toolhost ext toolchain` installs).
pub fn default_data_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share/toolhost"))
}

/// Where an extension was found: what decides which policy file's grants
/// apply to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    Workspace,
    User,
    Configured,
}

/// Settings of the shell tools' jail (`[shell]`), from both policy files.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ShellSettings {
    /// More paths hidden from commands, besides the secret stores.
    pub hide: Vec<String>,
    /// More directories commands may write in, besides the workspace and
    /// the temp directory.
    pub read_write: Vec<String>,
    /// What commands see of `$HOME`: all of it read-only (`visible`, the
    /// default, as Pi's bash reads everywhere) or none of it (`hidden`: an
    /// empty directory of their own, with the write roots and `read-only`
    /// directories shown in it).
    pub home: Option<HomeView>,
    /// Directories shown read-only when `home = "hidden"`.
    pub read_only: Vec<String>,
    /// Processes one command may have at once (default 1,024).
    pub max_processes: Option<u32>,
    /// Memory one command's processes may take together (default 4,096).
    pub memory_mb: Option<u64>,
    /// The network of commands: `true` (all of it, as Pi's bash has),
    /// `false` (none), or the hosts they may reach through the host's
    /// egress proxy (`["pkg.example.com", "*.github.com:443"]`).
    pub network: Option<ShellNetwork>,
}

/// `[shell] network`: all, none, or these hosts.
pub use crate::ops::http_client::proxy::Network as ShellNetwork;

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
struct PolicyFile {
    extension_paths: Vec<String>,
    active_tools: Option<Vec<String>>,
    pi: Option<crate::profile::PiProfile>,
    exposure: BTreeMap<String, crate::registry::Exposure>,
    audit: Option<String>,
    shell: ShellSettings,
    extensions: BTreeMap<String, GrantSpec>,
    permissions: Option<PermissionsSpec>,
    mcp: McpSettings,
    trust: TrustSettings,
}

/// `[trust]`: what every extension must show before it loads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct TrustSettings {
    /// No extension loads without a signature its grant's `key` or
    /// `signed-by` names (and one whose grant names neither never loads).
    #[serde(alias = "require_signatures")]
    pub require_signatures: bool,
    /// The Sigstore trusted root (`trusted_root.json`) keyless signatures
    /// (`signed-by`) are checked against; relative to the file's directory.
    /// Only the user's file names it.
    #[serde(alias = "sigstore_root")]
    pub sigstore_root: Option<String>,
}

/// `[mcp]`: what `toolhost mcp` serves beside the tools.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct McpSettings {
    /// `false`: no resources (the workspace's files and the extensions'
    /// offers) and no resource completions. Either file may turn them off;
    /// neither turns them back on once one has.
    pub resources: Option<bool>,
}

/// The policy in force: the user's grants, and the workspace's when its file
/// is trusted, kept apart (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    workspace_dir: PathBuf,
    user: BTreeMap<String, GrantSpec>,
    workspace: BTreeMap<String, GrantSpec>,
    /// Extension files or directories named by the policy files, resolved,
    /// with the origin of the file that named them.
    pub extension_paths: Vec<(PathBuf, Origin)>,
    /// The default active tools, when a file sets them.
    pub active_tools: Option<Vec<String>>,
    /// The Pi profile, when a file sets it (a workspace's over the user's,
    /// like the active tools: it changes texts, not what runs).
    pub pi: Option<crate::profile::PiProfile>,
    /// `[exposure]`: how the model and other tools reach each tool, by
    /// name or pattern (the user's, then a trusted workspace's).
    pub exposure: Vec<(String, crate::registry::Exposure)>,
    /// The audit log's file, when the user's file sets one.
    pub audit: Option<PathBuf>,
    /// The shell tools' jail settings, with paths resolved (`~/`, relative
    /// to the workspace).
    pub shell: Vec<(ShellPath, PathBuf)>,
    /// What commands see of `$HOME`, where a file sets it (hidden wins).
    pub shell_home: Option<HomeView>,
    /// The shell tools' limits, where a file sets them.
    pub shell_max_processes: Option<u32>,
    pub shell_memory_mb: Option<u64>,
    /// `[shell] network`, where a file sets it (a workspace's only where it
    /// narrows the user's).
    pub shell_network: Option<ShellNetwork>,
    /// The permission rules: the user's, with a trusted workspace's `deny`
    /// and `ask` rules added (`crate::permissions`).
    pub permissions: Rules,
    /// `[mcp]`, the user's and a trusted workspace's (off wins).
    pub mcp: McpSettings,
    /// `[trust] require-signatures`, from the user's file or a trusted
    /// workspace's (either turns it on; neither turns it off).
    pub require_signatures: bool,
    /// `[trust] sigstore-root`, from the user's file, resolved.
    pub sigstore_root: Option<PathBuf>,
    /// The user's `toolhost.toml`, where an "always" answer is written;
    /// `None` when the host reads no user configuration.
    pub user_file: Option<PathBuf>,
    /// The files applied, in order.
    pub applied: Vec<PathBuf>,
    /// Problems worth telling the user (an untrusted workspace file).
    pub diagnostics: Vec<Diagnostic>,
}

impl Policy {
    /// Read the user's file and, if `trust` approves its content, the
    /// workspace's. A user file that cannot be read or parsed is an error
    /// naming it: a typo must not silently drop a grant. A workspace file
    /// that is not applied is reported in [`Policy::diagnostics`].
    pub fn load(
        workspace: &Path,
        user_config: Option<&Path>,
        trust: &TrustStore,
    ) -> Result<Policy, Error> {
        Policy::load_from(workspace, false, user_config, trust)
    }

    /// [`Policy::load`]; for a `remote` workspace, whose own
    /// `toolhost.toml` is on its machine and is not read, the user's alone.
    pub(crate) fn load_from(
        workspace: &Path,
        remote: bool,
        user_config: Option<&Path>,
        trust: &TrustStore,
    ) -> Result<Policy, Error> {
        let mut policy = Policy {
            workspace_dir: workspace.to_path_buf(),
            ..Policy::default()
        };
        // The rules of each file, read where the file is read.
        let mut rules: (Option<(PermissionsSpec, PathBuf)>, _) = (None, None);
        if let Some(dir) = user_config {
            let path = dir.join(POLICY_FILE);
            policy.user_file = Some(path.clone());
            let text = files::read_text(&path, MAX_POLICY_BYTES)
                .map_err(|reason| policy_error(&path, reason))?;
            if let Some(text) = text {
                let mut file = parse(&text, &path)?;
                rules.0 = file.permissions.take().map(|spec| (spec, path.clone()));
                policy.apply(file, Origin::User, dir, &path);
            }
        }
        let path = workspace.join(POLICY_FILE);
        let not_applied = |reason: &str| Diagnostic {
            path: path.display().to_string(),
            message: format!("not applied: {reason}"),
        };
        // A remote workspace's is on its service's machine: never this
        // one's file of that name.
        let read = match remote {
            false => files::read_regular(&path, MAX_POLICY_BYTES),
            true => Ok(None),
        };
        match read {
            Ok(None) => {}
            Err(reason) => policy.diagnostics.push(not_applied(&reason)),
            Ok(Some(bytes)) => {
                let verdict = trust.verdict(workspace, &path, &Digest::of(&bytes));
                match verdict.refusal() {
                    Some(refusal) => policy.diagnostics.push(not_applied(refusal)),
                    None => {
                        let text = String::from_utf8_lossy(&bytes);
                        let mut file = parse(&text, &path)?;
                        rules.1 = file.permissions.take().map(|spec| (spec, path.clone()));
                        policy.apply(file, Origin::Workspace, workspace, &path);
                    }
                }
            }
        }
        policy.read_permissions(rules.0, rules.1)?;
        Ok(policy)
    }

    /// The rules of the user's file and of the trusted workspace's. A rule
    /// that cannot be read is an error naming its file, list and rule; what
    /// the workspace's file may not say (allow, default) is reported.
    fn read_permissions(
        &mut self,
        user: Option<(PermissionsSpec, PathBuf)>,
        workspace: Option<(PermissionsSpec, PathBuf)>,
    ) -> Result<(), Error> {
        // Real paths, as the paths rules are matched against are (the
        // workspace's is already).
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let anchors = Anchors {
            home: home.map(|h| h.canonicalize().unwrap_or(h)),
            workspace: self.workspace_dir.clone(),
        };
        // Each file alone first, so that an error names the file it is in.
        if let Some((spec, path)) = &workspace {
            Rules::new(&PermissionsSpec::default(), Some(spec), &anchors)
                .map_err(|reason| policy_error(path, reason))?;
        }
        let user_spec = user
            .as_ref()
            .map(|(spec, _)| spec.clone())
            .unwrap_or_default();
        let (rules, warnings) =
            Rules::new(&user_spec, workspace.as_ref().map(|(s, _)| s), &anchors).map_err(
                |reason| {
                    let path = user.as_ref().map_or(Path::new(POLICY_FILE), |(_, p)| p);
                    policy_error(path, reason)
                },
            )?;
        if let Some((_, path)) = &workspace {
            self.diagnostics
                .extend(warnings.into_iter().map(|message| Diagnostic {
                    path: path.display().to_string(),
                    message,
                }));
        }
        let at = |path: Option<&PathBuf>| {
            path.map_or(POLICY_FILE.to_string(), |p| p.display().to_string())
        };
        let file = at(user
            .as_ref()
            .map(|(_, p)| p)
            .or(workspace.as_ref().map(|(_, p)| p)));
        for rule in rules.inside(&self.workspace_dir) {
            self.diagnostics.push(Diagnostic {
                path: file.clone(),
                message: format!(
                    "the permission rule {rule:?} names a place inside the workspace, where \
                     the grants decide and path rules are not consulted: path rules speak of \
                     places outside the granted roots"
                ),
            });
        }
        self.permissions = rules;
        Ok(())
    }

    fn apply(&mut self, file: PolicyFile, origin: Origin, base: &Path, path: &Path) {
        let grants = match origin {
            Origin::Workspace => &mut self.workspace,
            Origin::User | Origin::Configured => &mut self.user,
        };
        for (name, grant) in &file.extensions {
            let mut grant = grant.clone();
            // The agent's tools can write the workspace's file: it must not
            // choose where a secret goes (or which of the user's variables
            // or files is read as one).
            if origin == Origin::Workspace && !grant.secrets.is_empty() {
                grant.secrets.clear();
                self.diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: format!(
                        "[extensions.{name}.secrets]: secrets are declared only by the user's \
                         toolhost.toml; ignored here"
                    ),
                });
            }
            // Nor who must have signed an extension, or where one comes
            // from: those are the user's to say.
            if origin == Origin::Workspace
                && (grant.key.is_some()
                    || grant.signed_by.is_some()
                    || grant.source.is_some()
                    || !grant.superseded.is_empty())
            {
                (grant.key, grant.signed_by, grant.source) = (None, None, None);
                grant.superseded.clear();
                self.diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: format!(
                        "[extensions.{name}]: key, signed-by, source and superseded are set only \
                         by the user's toolhost.toml; ignored here"
                    ),
                });
            }
            grants.entry(name.clone()).or_default().merge(&grant);
        }
        self.require_signatures |= file.trust.require_signatures;
        match (&file.trust.sigstore_root, origin) {
            (Some(_), Origin::Workspace) => self.diagnostics.push(Diagnostic {
                path: path.display().to_string(),
                message: "[trust] sigstore-root is set only by the user's toolhost.toml; \
                          ignored here"
                    .into(),
            }),
            (Some(root), _) => self.sigstore_root = Some(resolve_path(root, base)),
            (None, _) => {}
        }
        self.extension_paths.extend(
            file.extension_paths
                .iter()
                .map(|p| (resolve_path(p, base), origin)),
        );
        if file.active_tools.is_some() {
            self.active_tools = file.active_tools;
        }
        if file.pi.is_some() {
            self.pi = file.pi;
        }
        self.exposure.extend(file.exposure);
        if let Some(resources) = file.mcp.resources
            && self.mcp.resources != Some(false)
        {
            self.mcp.resources = Some(resources);
        }
        if let Some(audit) = &file.audit {
            match origin {
                // The agent's tools can write where the workspace's file
                // lies: it must not choose where (or whether) the record of
                // what they did goes.
                Origin::Workspace => self.diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: "audit is set only by the user's toolhost.toml or --audit; \
                              ignored here"
                        .into(),
                }),
                Origin::User | Origin::Configured => {
                    self.audit = Some(resolve_path(audit, base));
                }
            }
        }
        let workspace_base = match origin {
            Origin::Workspace => base,
            // A user's relative shell path means the workspace too: the
            // shell works there.
            Origin::User | Origin::Configured => self.workspace_dir.as_path(),
        };
        // Either file may hide home; neither can show it again.
        self.shell_home = match (self.shell_home, file.shell.home) {
            (Some(HomeView::Hidden), _) => Some(HomeView::Hidden),
            (current, next) => next.or(current),
        };
        if let Some(network) = &file.shell.network {
            if let ShellNetwork::Hosts(hosts) = network
                && let Err(reason) = crate::ops::http_client::proxy::NetPolicy::check(hosts)
            {
                // A list meant to narrow the network: never all of it.
                self.diagnostics.push(Diagnostic {
                    path: path.display().to_string(),
                    message: format!("[shell] network: {reason}; commands get no network"),
                });
                self.shell_network = Some(ShellNetwork::All(false));
            } else {
                let current = self
                    .shell_network
                    .clone()
                    .unwrap_or(ShellNetwork::All(true));
                match origin {
                    Origin::Workspace if !network.within(&current) => {
                        self.diagnostics.push(Diagnostic {
                            path: path.display().to_string(),
                            message: "[shell] network: a workspace may only narrow the user's; \
                                      ignored"
                                .into(),
                        });
                    }
                    _ => self.shell_network = Some(network.clone()),
                }
            }
        }
        self.shell_max_processes = file.shell.max_processes.or(self.shell_max_processes);
        self.shell_memory_mb = file.shell.memory_mb.or(self.shell_memory_mb);
        for (kind, list) in [
            (ShellPath::Hide, &file.shell.hide),
            (ShellPath::ReadWrite, &file.shell.read_write),
            (ShellPath::ReadOnly, &file.shell.read_only),
        ] {
            for p in list {
                self.shell.push((kind, resolve_path(p, workspace_base)));
            }
        }
        self.applied.push(path.to_path_buf());
    }

    /// Add a grant with the user's authority (an embedder's own grants):
    /// it applies to the user's and the configured extensions.
    pub fn grant(&mut self, name: &str, grant: &GrantSpec) {
        self.user.entry(name.to_string()).or_default().merge(grant);
    }

    /// The sources of every secret a grant names, of either file: the files
    /// they are read from (`~/` expanded) and the environment variables.
    /// They join the protected set (`crate::ops::protect`), hidden from
    /// every tool, the moment a grant names them.
    pub fn secret_sources(&self) -> (Vec<PathBuf>, Vec<String>) {
        let specs = || {
            self.user
                .values()
                .chain(self.workspace.values())
                .flat_map(|g| g.secrets.values())
        };
        (
            specs().filter_map(|s| s.file_source()).collect(),
            specs()
                .filter_map(|s| s.env_source().map(str::to_string))
                .collect(),
        )
    }

    /// Every directory some grant lets tools write, as written (resolved
    /// against the workspace), each with what grants it: `[shell]
    /// read-write` and every extension's `fs-write`, of either file.
    pub fn write_grants(&self) -> Vec<(PathBuf, String)> {
        let shell = self
            .shell
            .iter()
            .filter(|(kind, _)| *kind == ShellPath::ReadWrite)
            .map(|(_, p)| (p.clone(), format!("[shell] read-write {}", p.display())));
        let extensions = self
            .user
            .iter()
            .chain(&self.workspace)
            .flat_map(|(name, grant)| {
                grant.fs_write.iter().map(move |p| {
                    (
                        resolve_path(p, &self.workspace_dir),
                        format!("fs-write {p} of extension {name}"),
                    )
                })
            });
        shell.chain(extensions).collect()
    }

    /// The grants of the extension `name` found at `origin`: those of the
    /// files of that origin only (nothing when none are written).
    /// Who must have signed the extension `name`, whatever its origin: the
    /// user's grant's `key` (relative to the user's configuration
    /// directory) and `signed-by`, each to be checked; with neither, nothing,
    /// unless `[trust] require-signatures` is on. An unreadable `signed-by`
    /// is an error naming it.
    pub fn signature_policies(&self, name: &str) -> Result<Vec<SignaturePolicy>, String> {
        let base = self
            .user_file
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(&self.workspace_dir);
        signature_policies_of(
            self.user.get(name),
            (self.require_signatures, self.sigstore_root.clone()),
            base,
        )
    }

    pub fn grants_for(&self, name: &str, origin: Origin) -> GrantSpec {
        let grants = match origin {
            Origin::Workspace => &self.workspace,
            Origin::User | Origin::Configured => &self.user,
        };
        grants.get(name).cloned().unwrap_or_default()
    }
}

/// What a `[shell]` path does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellPath {
    /// Hidden from commands.
    Hide,
    /// Writable for commands.
    ReadWrite,
    /// Shown read-only where `$HOME` is hidden.
    ReadOnly,
}

/// `[shell] home`: what commands see of `$HOME`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HomeView {
    #[default]
    Visible,
    Hidden,
}

/// What a workspace's policy file writes, as `toolhost trust` shows it.
#[derive(Clone, Debug, Default)]
pub struct PolicyText {
    /// Grants by extension name.
    pub grants: BTreeMap<String, GrantSpec>,
    /// The extension files it names, resolved against `base`.
    pub extension_paths: Vec<PathBuf>,
}

/// Parse the policy file `path`'s `text`, resolving its paths against `base`.
pub fn parse_text(text: &str, path: &Path, base: &Path) -> Result<PolicyText, Error> {
    parse(text, path).map(|f| PolicyText {
        extension_paths: f
            .extension_paths
            .iter()
            .map(|p| resolve_path(p, base))
            .collect(),
        grants: f.extensions,
    })
}

fn policy_error(path: &Path, reason: String) -> Error {
    Error::Policy {
        path: path.display().to_string(),
        reason,
    }
}

fn parse(text: &str, path: &Path) -> Result<PolicyFile, Error> {
    let file: PolicyFile =
        toml::from_str(text).map_err(|e| policy_error(path, e.to_string().trim().to_string()))?;
    // A malformed host must not silently grant less (or more) than meant.
    for (name, grant) in &file.extensions {
        for entry in &grant.http {
            if let Err(reason) = crate::ops::http_client::HttpGrant::parse(entry) {
                return Err(policy_error(
                    path,
                    format!("[extensions.{name}] http entry {entry:?} {reason}"),
                ));
            }
        }
    }
    Ok(file)
}

/// Who must have signed an extension whose user's grant is `grant`:
/// its `key` (resolved against `base`) and its `signed-by`; with neither,
/// nothing, or [`SignaturePolicy::Unnamed`] when signatures are required.
fn signature_policies_of(
    grant: Option<&GrantSpec>,
    (required, root): (bool, Option<PathBuf>),
    base: &Path,
) -> Result<Vec<SignaturePolicy>, String> {
    let mut policies = Vec::new();
    if let Some(key) = grant.and_then(|g| g.key.as_deref()) {
        policies.push(SignaturePolicy::Key(resolve_path(key, base)));
    }
    if let Some(by) = grant.and_then(|g| g.signed_by.as_deref()) {
        policies.push(SignaturePolicy::signed_by(by, root)?);
    }
    if policies.is_empty() && required {
        policies.push(SignaturePolicy::Unnamed);
    }
    Ok(policies)
}

/// The signature policies of the extension `name` once `grant` is written
/// over its grant in the user's file `path` (whose text is `text`): what
/// `ext add` and `ext update` check before they install anything.
pub(crate) fn signature_policies_in(
    text: &str,
    path: &Path,
    name: &str,
    grant: &GrantSpec,
) -> Result<Vec<SignaturePolicy>, Error> {
    let file = parse(text, path)?;
    let mut merged = file.extensions.get(name).cloned().unwrap_or_default();
    merged.merge(grant);
    let base = path.parent().unwrap_or(Path::new("."));
    let root = file.trust.sigstore_root.map(|r| resolve_path(&r, base));
    signature_policies_of(Some(&merged), (file.trust.require_signatures, root), base)
        .map_err(|reason| policy_error(path, reason))
}

/// A path from a policy file: `~/…` is the user's home, a relative path is
/// relative to `base`.
pub fn resolve_path(p: &str, base: &Path) -> PathBuf {
    if let (Some(rest), Some(home)) = (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    base.join(p)
}

pub use crate::wit::interfaces::{capability_line, grant_line};

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let user = tmp.path().join("config");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        (tmp, ws, user)
    }

    fn write_policy(dir: &Path, text: &str) {
        std::fs::write(dir.join(POLICY_FILE), text).unwrap();
    }

    /// `err` names the policy file of `dir` and says `cause`.
    #[track_caller]
    fn names_file_and_cause(err: &str, dir: &Path, cause: &str) {
        let file = dir.join(POLICY_FILE).display().to_string();
        assert!(err.contains(&file) && err.contains(cause), "{err}");
    }

    /// Why the policy of `ws` and `user` (trusting nothing) does not load.
    fn load_error(ws: &Path, user: &Path) -> String {
        Policy::load(ws, Some(user), &TrustStore::empty())
            .unwrap_err()
            .to_string()
    }

    fn trust_policy_of(ws: &Path, user: &Path) {
        let path = ws.join(POLICY_FILE);
        let digest = Digest::of(&std::fs::read(&path).unwrap());
        let mut store = TrustStore::load(user).unwrap();
        store.trust(ws, &[(path, digest)]);
        store.save().unwrap();
    }

    #[test]
    fn user_and_trusted_workspace_grants_apply_to_their_own_origin_only() {
        let (_tmp, ws, user) = dirs();
        write_policy(
            &user,
            "extension-paths = [\"tools/x.wasm\"]\n[extensions.wc]\nfs-read = [\"docs\"]\nmemory-mb = 64\n",
        );
        write_policy(
            &ws,
            "active-tools = [\"read\"]\nextension-paths = [\"tools/y.wasm\"]\n[extensions.wc]\nfs-read = [\"src\"]\nenv = [\"LANG\"]\n",
        );
        // Untrusted: only the user's file applies, and that is reported.
        let p = Policy::load(&ws, Some(&user), &TrustStore::load(&user).unwrap()).unwrap();
        assert_eq!(p.grants_for("wc", Origin::User).fs_read, ["docs"]);
        assert_eq!(p.grants_for("wc", Origin::Workspace), GrantSpec::default());
        assert_eq!(p.active_tools, None);
        assert_eq!(p.diagnostics.len(), 1);
        assert_eq!(
            p.extension_paths,
            [(user.join("tools/x.wasm"), Origin::User)],
            "relative to the user's configuration, not the workspace"
        );
        trust_policy_of(&ws, &user);
        let p = Policy::load(&ws, Some(&user), &TrustStore::load(&user).unwrap()).unwrap();
        let user_wc = p.grants_for("wc", Origin::User);
        assert_eq!(user_wc.fs_read, ["docs"]);
        assert_eq!(user_wc.memory_mb, Some(64));
        assert!(
            user_wc.env.is_empty(),
            "the workspace grants nothing to user extensions"
        );
        let ws_wc = p.grants_for("wc", Origin::Workspace);
        assert_eq!(ws_wc.fs_read, ["src"]);
        assert_eq!(ws_wc.env, ["LANG"]);
        assert_eq!(
            ws_wc.memory_mb, None,
            "the user's grant is not the workspace's"
        );
        assert_eq!(p.active_tools, Some(vec!["read".to_string()]));
        assert_eq!(
            p.extension_paths[1],
            (ws.join("tools/y.wasm"), Origin::Workspace)
        );
        assert!(p.diagnostics.is_empty());
        assert_eq!(p.grants_for("other", Origin::User), GrantSpec::default());
    }

    #[test]
    fn a_changed_workspace_policy_is_no_longer_trusted() {
        let (_tmp, ws, user) = dirs();
        write_policy(&ws, "[extensions.wc]\nsearch = true\n");
        trust_policy_of(&ws, &user);
        let load = || Policy::load(&ws, Some(&user), &TrustStore::load(&user).unwrap()).unwrap();
        assert!(load().grants_for("wc", Origin::Workspace).search);
        // The agent edits the file to grant itself more.
        write_policy(&ws, "[extensions.wc]\nsearch = true\nfs-write = [\"/\"]\n");
        let p = load();
        assert_eq!(p.grants_for("wc", Origin::Workspace), GrantSpec::default());
        assert_eq!(
            p.diagnostics[0].message,
            "not applied: untrusted (changed since trusted): run toolhost trust to review"
        );
    }

    #[test]
    fn a_malformed_user_file_is_an_error_naming_it() {
        let (_tmp, ws, user) = dirs();
        write_policy(&user, "[extensions.wc]\nfs-reed = [\"x\"]\n");
        let err = load_error(&ws, &user);
        assert!(err.contains("toolhost.toml"), "{err}");
        assert!(err.contains("fs-reed"), "{err}");
    }

    #[test]
    fn http_grants_merge_and_a_malformed_entry_names_file_extension_and_entry() {
        let (_tmp, ws, user) = dirs();
        write_policy(&user, "[extensions.web]\nhttp = [\"api.example.com\"]\n");
        let mut p = Policy::load(&ws, Some(&user), &TrustStore::empty()).unwrap();
        p.grant(
            "web",
            &GrantSpec {
                http: vec!["http://localhost:8080".into(), "api.example.com".into()],
                ..Default::default()
            },
        );
        let web = p.grants_for("web", Origin::User);
        assert_eq!(web.http, ["api.example.com", "http://localhost:8080"]);
        assert!(web.grants("http"));
        assert!(!GrantSpec::default().grants("http"));
        assert_eq!(
            grant_line("web", "http"),
            "[extensions.web] http = [\"<host[:port]>\"]"
        );

        write_policy(&user, "[extensions.web]\nhttp = [\"api.example.com/v1\"]\n");
        let err = load_error(&ws, &user);
        names_file_and_cause(
            &err,
            &user,
            "[extensions.web] http entry \"api.example.com/v1\" grants a host",
        );
    }

    #[test]
    fn an_embedders_grant_is_the_users() {
        let (_tmp, ws, _user) = dirs();
        let mut p = Policy::load(&ws, None, &TrustStore::empty()).unwrap();
        p.grant(
            "hookkit",
            &GrantSpec {
                hooks: true,
                ..Default::default()
            },
        );
        assert!(p.grants_for("hookkit", Origin::Configured).hooks);
        assert!(!p.grants_for("hookkit", Origin::Workspace).hooks);
    }

    #[test]
    fn permissions_come_from_the_user_and_a_workspace_may_only_restrict() {
        use crate::permissions::{Subject, Verdict};
        let (_tmp, ws, user) = dirs();
        write_policy(
            &user,
            "[permissions]\ndefault = \"ask\"\nallow = [\"http(a.example)\"]\n",
        );
        write_policy(
            &ws,
            "[permissions]\ndefault = \"deny\"\nallow = [\"http(b.example)\"]\n\
             deny = [\"http(a.example)\"]\nask = [\"bash(git push*)\"]\n",
        );
        trust_policy_of(&ws, &user);
        let p = Policy::load(&ws, Some(&user), &TrustStore::load(&user).unwrap()).unwrap();
        let host = |h| Subject::Host { host: h, port: 443 };
        let verdict = |s| p.permissions.decide(&s, "blake3:x").map(|d| d.verdict);
        assert_eq!(
            verdict(host("a.example")),
            Some(Verdict::Deny),
            "deny added"
        );
        assert_eq!(
            verdict(host("b.example")),
            None,
            "the workspace's allow is ignored"
        );
        assert_eq!(
            p.permissions.default_verdict(),
            Verdict::Ask,
            "the user's default"
        );
        let messages: Vec<&str> = p.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "the workspace's permissions.allow is ignored (http(b.example)): only the \
                 user's toolhost.toml may allow",
                "the workspace's permissions.default is ignored: only the user's toolhost.toml \
                 sets it"
            ]
        );
        assert_eq!(p.user_file, Some(user.join(POLICY_FILE)));

        // A rule that cannot be read names its file, list and rule.
        write_policy(&ws, "[permissions]\nask = [\"bash(git\"]\n");
        trust_policy_of(&ws, &user);
        let err = load_error_trusting(&ws, &user);
        names_file_and_cause(&err, &ws, "the workspace's permissions.ask[0] \"bash(git\"");
        write_policy(&user, "[permissions]\ndefault = \"maybe\"\n");
        let err = load_error(&ws, &user);
        names_file_and_cause(&err, &user, "permissions.default: \"maybe\"");
    }

    #[test]
    fn a_path_rule_that_would_never_be_consulted_is_reported() {
        let (_tmp, ws, user) = dirs();
        write_policy(
            &user,
            "[permissions]\ndeny = [\"read(.env)\", \"read(~/.ssh/**)\"]\n",
        );
        let p = Policy::load(&ws, Some(&user), &TrustStore::empty()).unwrap();
        let messages: Vec<&str> = p.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("the permission rule \"read(.env)\" names a place inside"),
            "{messages:?}"
        );
    }

    fn load_error_trusting(ws: &Path, user: &Path) -> String {
        Policy::load(ws, Some(user), &TrustStore::load(user).unwrap())
            .unwrap_err()
            .to_string()
    }
}

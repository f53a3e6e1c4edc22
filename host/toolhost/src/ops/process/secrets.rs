//! Where a user's secrets live, by kind, so that the jail hides every one of
//! them from every child: keys, cloud and cluster credentials, registry,
//! package-index and forge tokens, database passwords, secret managers,
//! browser profiles (their cookies are sessions) and shell histories (where
//! tokens typed on a command line end up).
//!
//! Each store is named at every documented location: under `$HOME`, under
//! the XDG base directories (`$XDG_CONFIG_HOME`, `$XDG_DATA_HOME`) and under
//! their defaults (a file left at the default place is still a secret when
//! the variable points elsewhere), and wherever the program's own variable
//! sends it (`$DOCKER_CONFIG`, `$KUBECONFIG`, `$GNUPGHOME`, …). Only those
//! that exist are hidden; a missing one costs one `lstat`.

use std::path::{Path, PathBuf};

/// Under `$HOME` itself.
const IN_HOME: &[&str] = &[
    // Keys and agents.
    ".ssh",
    ".gnupg",
    ".password-store",
    ".age",
    // Cloud and cluster credentials.
    ".aws",
    ".azure",
    ".kube",
    ".oci",
    ".bluemix",
    ".aliyun",
    ".s3cfg",
    ".boto",
    ".databrickscfg",
    ".snowflake",
    ".fly",
    ".wrangler",
    ".supabase",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".terraformrc",
    // Container registries (the whole engine directory: contexts hold
    // endpoints and certificates too).
    ".docker",
    // Forges, package indexes and build tools.
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".pip/pip.conf",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".ivy2/.credentials",
    ".sbt/.credentials",
    ".composer/auth.json",
    ".nuget/NuGet/NuGet.Config",
    // Databases.
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".dbt/profiles.yml",
    // Browser profiles.
    ".mozilla",
    ".librewolf",
    ".waterfox",
    ".thunderbird",
    "snap/firefox",
    "snap/chromium",
    ".var/app",
    // Shell and interpreter histories.
    ".bash_history",
    ".zsh_history",
    ".histfile",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".lesshst",
];

/// Under the configuration directory (`$XDG_CONFIG_HOME`, `~/.config`).
const IN_CONFIG: &[&str] = &[
    "gcloud",
    "gh",
    "hub",
    "glab-cli",
    "git/credentials",
    "containers/auth.json",
    "sops/age/keys.txt",
    "age",
    "rclone",
    "op",
    "Bitwarden CLI",
    "doctl",
    "hcloud",
    "heroku",
    "netlify",
    "stripe",
    "linode-cli",
    ".wrangler",
    "pip/pip.conf",
    "composer/auth.json",
    "google-chrome",
    "chromium",
    "BraveSoftware",
    "microsoft-edge",
    "vivaldi",
    "opera",
    "Slack",
    "discord",
];

/// Under the data directory (`$XDG_DATA_HOME`, `~/.local/share`).
const IN_DATA: &[&str] = &[
    "keyrings",
    "kwalletd",
    "gem/credentials",
    "com.vercel.cli",
    "fish/fish_history",
    "password-store",
];

/// Variables naming a secret store directly (`KUBECONFIG` may list several,
/// `:`-separated).
const NAMED_BY: &[&str] = &[
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "KUBECONFIG",
    "GNUPGHOME",
    "PASSWORD_STORE_DIR",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AZURE_CONFIG_DIR",
    "CLOUDSDK_CONFIG",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GH_CONFIG_DIR",
    "PGPASSFILE",
    "NPM_CONFIG_USERCONFIG",
    "SOPS_AGE_KEY_FILE",
    "RCLONE_CONFIG",
    "TF_CLI_CONFIG_FILE",
    "VAULT_CONFIG_PATH",
    "HISTFILE",
];

/// The user's secret stores: for `home`, with the base directories and
/// variables `env` gives (the host's own environment in use).
pub fn secret_stores_with(home: &Path, env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let mut configs = vec![home.join(".config")];
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        configs.push(PathBuf::from(dir));
    }
    let mut data = vec![home.join(".local/share")];
    if let Some(dir) = var("XDG_DATA_HOME") {
        data.push(PathBuf::from(dir));
    }
    let mut stores: Vec<PathBuf> = IN_HOME.iter().map(|p| home.join(p)).collect();
    for dir in &configs {
        stores.extend(IN_CONFIG.iter().map(|p| dir.join(p)));
    }
    for dir in &data {
        stores.extend(IN_DATA.iter().map(|p| dir.join(p)));
    }
    if let Some(cargo) = var("CARGO_HOME") {
        let cargo = PathBuf::from(cargo);
        stores.extend([cargo.join("credentials"), cargo.join("credentials.toml")]);
    }
    for name in NAMED_BY {
        for path in var(name)
            .iter()
            .flat_map(|v| v.split(':').map(str::to_string).collect::<Vec<_>>())
        {
            if path.starts_with('/') {
                stores.push(PathBuf::from(path));
            }
        }
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for store in stores {
        if !unique.contains(&store) {
            unique.push(store);
        }
    }
    unique
}

/// [`secret_stores_with`] for `home` and this process's environment.
pub fn secret_stores(home: &Path) -> Vec<PathBuf> {
    secret_stores_with(home, &|name| std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_place_and_its_xdg_and_variable_forms() {
        let env = |name: &str| match name {
            "XDG_CONFIG_HOME" => Some("/x/config".to_string()),
            "XDG_DATA_HOME" => Some("/x/data".to_string()),
            "KUBECONFIG" => Some("/k/one:/k/two:relative".to_string()),
            "DOCKER_CONFIG" => Some("/d".to_string()),
            "HISTFILE" => Some(String::new()),
            _ => None,
        };
        let stores = secret_stores_with(Path::new("/h"), &env);
        for expected in [
            "/h/.ssh",
            "/h/.config/git/credentials",
            "/x/config/git/credentials",
            "/h/.config/gh",
            "/x/config/gh",
            "/h/.local/share/keyrings",
            "/x/data/keyrings",
            "/k/one",
            "/k/two",
            "/d",
            "/h/.vault-token",
            "/h/.pgpass",
            "/h/.m2/settings.xml",
            "/h/.terraform.d/credentials.tfrc.json",
            "/h/.config/containers/auth.json",
            "/h/.config/sops/age/keys.txt",
            "/h/.config/rclone",
            "/h/.mozilla",
            "/h/.config/google-chrome",
            "/h/.bash_history",
        ] {
            assert!(
                stores.contains(&PathBuf::from(expected)),
                "{expected} is not hidden"
            );
        }
        assert!(!stores.iter().any(|s| s.ends_with("relative")));
        assert!(
            !stores.contains(&PathBuf::new()),
            "an empty variable names nothing"
        );
    }
}

//! [`GrantSpec`]: one component's grants as `toolhost.toml` (and an
//! extension's manifest) write them. Each capability's key is a field here;
//! what the key means is its module's ([`super::ALL`]).

use crate::ops::http_client::SecretSpec;
use crate::ops::http_client::proxy::Network;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One extension's grants, as written in a policy file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct GrantSpec {
    /// Only the component with this digest gets the grant (`blake3:…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Where it was installed from (`oci://…`; `toolhost ext update` pulls
    /// from there again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// It loads only with a signature by this public key (a cosign key;
    /// relative to the user's configuration directory). Only the user's
    /// file says who must have signed an extension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// It loads only with a keyless signature of this `identity@issuer`.
    #[serde(skip_serializing_if = "Option::is_none", alias = "signed_by")]
    pub signed_by: Option<String>,
    /// The registry digests (`sha256:…`) it was updated away from: a
    /// component whose record names one never loads, and `ext update`
    /// never installs one again (a registry's tag moved back, a copy of the
    /// old files restored). Only the user's file says it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<String>,
    pub fs_read: Vec<String>,
    pub fs_write: Vec<String>,
    pub process: Vec<String>,
    /// The network of its programs: `true` (IPv4 and IPv6 sockets; refused
    /// otherwise, see `ProcessPolicy::network`), `false`, or the hosts they
    /// reach through the host's egress proxy (`ProcessPolicy::network_hosts`).
    #[serde(skip_serializing_if = "Network::is_none")]
    pub network: Network,
    pub env: Vec<String>,
    pub search: bool,
    pub tools: bool,
    /// Hosts its `wasi:http` requests may reach: `[http://|https://]host[:port]`
    /// (`crate::ops::http_client::HttpGrant`).
    pub http: Vec<String>,
    /// What it may ask the person's client: `elicitation`, `sampling`,
    /// `roots` (`crate::ops::client`).
    pub client: Vec<String>,
    /// It may start processes that outlive the call, until the session
    /// ends (`crate::ops::process::session`), under its `process` grant.
    pub session_processes: bool,
    /// The tools it may call through the host (`crate::ops::nested`),
    /// by name; `"*"` is every tool the model may call.
    pub call_tools: Vec<String>,
    /// Secrets its HTTP requests carry, which it never sees, by name
    /// (`crate::ops::http_client::secrets`). Only the user's file declares
    /// them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, SecretSpec>,
    /// Largest HTTP response body passed to it (default 16 MiB).
    pub http_response_kb: Option<u64>,
    /// Its hooks may run: they see and may rewrite every call of every tool.
    pub hooks: bool,
    /// Its tools may take the name of a built-in tool, replacing it.
    pub replace_builtin: bool,
    /// Its tools are named `{namespace}__{name}` (Pi 1.x's namespaces, as
    /// MCP servers' tools are `mcp__{server}__{name}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Processes its programs may have at once (default 1,024).
    pub max_processes: Option<u32>,
    /// Memory its programs may take together (default 4,096 MiB); its own
    /// memory is `memory-mb`.
    pub process_memory_mb: Option<u64>,
    pub memory_mb: Option<u64>,
    pub time_limit_s: Option<f64>,
    pub output_kb: Option<u64>,
}

impl GrantSpec {
    /// Whether it grants `capability` (a key of [`super::ALL`], or `hooks`).
    pub fn grants(&self, capability: &str) -> bool {
        match super::named(capability) {
            Some(c) => (c.asked)(self),
            None => capability == "hooks" && self.hooks,
        }
    }

    /// Add `other`'s grants to these; its limits win where it sets them.
    pub(crate) fn merge(&mut self, other: &GrantSpec) {
        for capability in super::ALL {
            (capability.merge)(self, other);
        }
        super::merge_list(&mut self.env, &other.env);
        self.hooks |= other.hooks;
        self.replace_builtin |= other.replace_builtin;
        self.digest = other.digest.clone().or(self.digest.take());
        self.source = other.source.clone().or(self.source.take());
        self.key = other.key.clone().or(self.key.take());
        self.signed_by = other.signed_by.clone().or(self.signed_by.take());
        super::merge_list(&mut self.superseded, &other.superseded);
        self.namespace = other.namespace.clone().or(self.namespace.take());
        self.memory_mb = other.memory_mb.or(self.memory_mb);
        self.max_processes = other.max_processes.or(self.max_processes);
        self.process_memory_mb = other.process_memory_mb.or(self.process_memory_mb);
        self.time_limit_s = other.time_limit_s.or(self.time_limit_s);
        self.output_kb = other.output_kb.or(self.output_kb);
    }
}

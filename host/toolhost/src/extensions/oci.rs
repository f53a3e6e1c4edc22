//! Extensions from OCI registries: `toolhost ext add oci://…`, `ext update`
//! and `ext publish`, with the `oci-client` crate.
//!
//! A component is an OCI artifact as wkg and Wassette lay it out: an OCI
//! image manifest whose config is `application/vnd.wasm.config.v0+json` and
//! whose one layer is `application/wasm`. A pull trusts nothing the registry
//! says without checking it: the manifest's bytes must hash to the digest
//! the reference names (or, for a tag, to the digest recorded and signed),
//! the manifest must have exactly that shape (no index, no second layer, no
//! layer fetched from elsewhere), and the layer must hash to its
//! descriptor's digest, within fixed sizes. Signatures over the manifest's
//! digest are `signature.rs`'s.

use crate::files::MAX_COMPONENT_BYTES;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};

/// How a reference to a registry starts.
pub const SCHEME: &str = "oci://";
/// The config of a WebAssembly component artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// Its one layer: the component.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
pub use super::fetch::MAX_MANIFEST_BYTES;

/// A component in a registry, as `oci://REGISTRY/REPOSITORY[:TAG][@sha256:…]`
/// names it. One spelling per artifact: the registry is named, lowercase,
/// the digest is a lowercase SHA-256, the tag ASCII; anything else is
/// refused before the network is touched, so that no spelling reaches a
/// different artifact than the one a pin or a signature speaks of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciRef {
    reference: Reference,
}

impl OciRef {
    /// Parse `text`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<OciRef, String> {
        let refuse = |why: &str| Err(format!("{text:?} is not a component reference: {why}"));
        let Some(rest) = text.strip_prefix(SCHEME) else {
            return refuse("it must start with oci://");
        };
        if rest.starts_with(SCHEME) || rest.contains("://") {
            return refuse("it names a scheme twice");
        }
        if rest.is_empty()
            || !rest.is_ascii()
            || rest
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return refuse("use printable ASCII without spaces");
        }
        let (registry, path) = rest.split_once('/').unwrap_or((rest, ""));
        if path.is_empty() || !(registry.contains(['.', ':']) || registry == "localhost") {
            return refuse(
                "name the registry: oci://REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST] (no default \
                 registry is assumed)",
            );
        }
        if registry.bytes().any(|b| b.is_ascii_uppercase()) {
            return refuse("write the registry in lowercase");
        }
        if registry.ends_with('.') || registry.contains(".:") {
            return refuse("the registry's name ends in a dot");
        }
        let reference: Reference = match rest.parse() {
            Ok(reference) => reference,
            Err(e) => return refuse(&e.to_string()),
        };
        if reference.registry() != registry {
            return refuse("its registry is read as another one");
        }
        if let Some(digest) = reference.digest()
            && !is_sha256(digest)
        {
            return refuse("a digest is sha256: and 64 lowercase hexadecimal digits");
        }
        Ok(OciRef { reference })
    }

    pub fn registry(&self) -> &str {
        self.reference.registry()
    }

    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The tag (`latest` when neither a tag nor a digest is named).
    pub fn tag(&self) -> Option<&str> {
        self.reference.tag()
    }

    /// The digest it pins, if it names one.
    pub fn digest(&self) -> Option<&str> {
        self.reference.digest()
    }

    /// `REGISTRY/REPOSITORY`: what a signature's payload names.
    pub fn repo(&self) -> String {
        format!("{}/{}", self.registry(), self.repository())
    }

    /// The same repository at `digest`.
    pub fn at(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.registry().into(),
            self.repository().into(),
            digest.into(),
        )
    }

    /// The same repository under `tag`.
    pub fn tagged(&self, tag: &str) -> Reference {
        Reference::with_tag(self.registry().into(), self.repository().into(), tag.into())
    }

    /// Whether its registry is on this machine's loopback (the only one
    /// spoken to in plain HTTP).
    pub(crate) fn is_on_loopback(&self) -> bool {
        let host = self
            .registry()
            .rsplit_once(':')
            .map_or(self.registry(), |(h, _)| h);
        host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// A reader of its registry, every answer bounded (`fetch.rs`).
    pub(crate) fn reader(&self) -> Result<super::fetch::RegistryReader, String> {
        super::fetch::RegistryReader::new(self.registry(), self.is_on_loopback(), self.to_string())
    }

    /// A client for pushing to its registry: plain HTTP only to a loopback
    /// registry. Reads go through [`OciRef::reader`].
    pub(crate) fn client(&self) -> Result<Client, String> {
        let protocol = if self.is_on_loopback() {
            ClientProtocol::HttpsExcept(vec![self.registry().to_string()])
        } else {
            ClientProtocol::Https
        };
        Client::try_from(ClientConfig {
            protocol,
            // An index is refused, not resolved to one of its manifests.
            platform_resolver: None,
            ..Default::default()
        })
        .map_err(|e| format!("cannot make a registry client: {e}"))
    }
}

impl std::fmt::Display for OciRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SCHEME}{}", self.reference.whole())
    }
}

/// Whether `digest` is `sha256:` and 64 lowercase hexadecimal digits.
pub fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

pub use crate::files::{sha256, sha256_bytes};

/// The config of a component artifact (as wkg writes it).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created: Option<String>,
    architecture: String,
    os: String,
    #[serde(default)]
    layer_digests: Vec<String>,
}

/// A component pulled and checked.
#[derive(Clone, Debug)]
pub struct Pulled {
    /// The manifest's bytes, as served (they hash to `digest`).
    pub manifest: Vec<u8>,
    /// The manifest's digest: what a pin and a signature name.
    pub digest: String,
    pub component: Vec<u8>,
}

/// Check that `manifest` (bytes) is a component artifact's manifest, and
/// return its layer's descriptor.
pub fn check_manifest(manifest: &[u8]) -> Result<OciDescriptor, String> {
    let m: OciImageManifest = serde_json::from_slice(manifest)
        .map_err(|e| format!("its manifest is not an OCI image manifest: {e}"))?;
    if m.schema_version != 2 || m.media_type.as_deref() != Some(OCI_IMAGE_MEDIA_TYPE) {
        return Err(format!(
            "its manifest is not an OCI image manifest (schemaVersion 2, mediaType \
             {OCI_IMAGE_MEDIA_TYPE})"
        ));
    }
    if m.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(format!(
            "it is not a WebAssembly component: its config is {}, not {CONFIG_MEDIA_TYPE}",
            m.config.media_type
        ));
    }
    let [layer] = m.layers.as_slice() else {
        return Err(format!(
            "a component artifact has one layer; this one has {}",
            m.layers.len()
        ));
    };
    if layer.media_type != LAYER_MEDIA_TYPE {
        return Err(format!(
            "its layer is {}, not {LAYER_MEDIA_TYPE}",
            layer.media_type
        ));
    }
    if layer.urls.is_some() {
        return Err("its layer names other addresses to fetch it from; refused".into());
    }
    if !is_sha256(&layer.digest) {
        return Err(format!(
            "its layer's digest {} is not a sha256 digest",
            layer.digest
        ));
    }
    if layer.size <= 0 || layer.size as u64 > MAX_COMPONENT_BYTES {
        return Err(format!(
            "its layer is {} bytes; a component is 1 to {MAX_COMPONENT_BYTES} bytes",
            layer.size
        ));
    }
    Ok(layer.clone())
}

/// Pull the component `r` names and check it (see the module docs).
pub async fn pull(r: &OciRef) -> Result<Pulled, String> {
    let reader = r.reader()?;
    let (manifest, digest) = reader
        .manifest(&r.reference, OCI_IMAGE_MEDIA_TYPE)
        .await?
        .ok_or_else(|| format!("{r}: the registry has no such manifest"))?;
    if let Some(named) = r.digest()
        && named != digest
    {
        return Err(format!("{r}: the registry served {digest} for {named}"));
    }
    let layer = check_manifest(&manifest).map_err(|e| format!("{r}: {e}"))?;
    let component = reader
        .blob(
            &r.at(&digest),
            &layer.digest,
            layer.size as u64,
            "its component",
        )
        .await?;
    Ok(Pulled {
        manifest,
        digest,
        component,
    })
}

/// Push `component` to `r` (a tag) as a component artifact; its manifest's
/// digest.
pub async fn push(r: &OciRef, component: &[u8]) -> Result<String, String> {
    if r.digest().is_some() {
        return Err(format!("{r}: publish to a tag, not a digest"));
    }
    let client = r.client()?;
    let layer_digest = sha256(component);
    let config = serde_json::to_vec(&WasmConfig {
        created: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        architecture: "wasm".into(),
        os: "wasip2".into(),
        layer_digests: vec![layer_digest.clone()],
    })
    .expect("a config serializes");
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
        config: descriptor(CONFIG_MEDIA_TYPE, &config),
        layers: vec![descriptor(LAYER_MEDIA_TYPE, component)],
        ..Default::default()
    };
    let push_err = |what: &str, e: OciDistributionError| format!("{r}: pushing its {what}: {e}");
    client
        .push_blob(&r.reference, component.to_vec(), &layer_digest)
        .await
        .map_err(|e| push_err("component", e))?;
    client
        .push_blob(&r.reference, config.clone(), &sha256(&config))
        .await
        .map_err(|e| push_err("config", e))?;
    let body = serde_json::to_vec(&manifest).expect("a manifest serializes");
    push_manifest(&client, &r.reference, &body, OCI_IMAGE_MEDIA_TYPE)
        .await
        .map_err(|e| push_err("manifest", e))?;
    Ok(sha256(&body))
}

/// Put the manifest `body` (of `media_type`) under `reference`.
pub(crate) async fn push_manifest(
    client: &Client,
    reference: &Reference,
    body: &[u8],
    media_type: &'static str,
) -> Result<(), OciDistributionError> {
    let content_type = http::HeaderValue::from_static(media_type);
    client
        .push_manifest_raw(reference, body.to_vec(), content_type)
        .await
        .map(drop)
}

/// A descriptor of `bytes` as `media_type`.
pub(crate) fn descriptor(media_type: &str, bytes: &[u8]) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.into(),
        digest: sha256(bytes),
        size: bytes.len() as i64,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// Every spelling that could reach another artifact than the one a pin
    /// or a signature names is refused before any request, by name.
    #[test]
    fn one_spelling_per_artifact_and_the_rest_refused_with_the_reason() {
        let refused = [
            ("127.0.0.1:5000/a/b", "must start with oci://"),
            ("OCI://127.0.0.1:5000/a/b", "must start with oci://"),
            ("oci://oci://127.0.0.1:5000/a/b", "a scheme twice"),
            ("oci://https://127.0.0.1:5000/a/b", "a scheme twice"),
            ("oci://a/b", "name the registry"),
            ("oci://wordcount", "name the registry"),
            ("oci://Localhost/a", "name the registry"),
            ("oci://LOCALHOST:5000/a", "lowercase"),
            ("oci://Registry.Example/a", "lowercase"),
            ("oci://registry.example./a", "ends in a dot"),
            ("oci://registry.example.:443/a", "ends in a dot"),
            ("oci://127.0.0.1:5000/a/b:lätest", "printable ASCII"),
            ("oci://127.0.0.1:5000/a/b:v1 ", "printable ASCII"),
            ("oci://127.0.0.1:5000/a/b\n", "printable ASCII"),
            ("oci://127.0.0.1:5000/A/b", "not a component reference"),
            ("oci://127.0.0.1:5000//a", "not a component reference"),
        ];
        for (text, why) in refused {
            let err = OciRef::parse(text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
        let upper = format!(
            "oci://127.0.0.1:5000/a/b@{}",
            D.to_uppercase().replace("SHA256", "sha256")
        );
        assert!(
            OciRef::parse(&upper)
                .unwrap_err()
                .contains("lowercase hexadecimal")
        );
        let long = format!("oci://127.0.0.1:5000/a/b@sha512:{}", "0".repeat(128));
        assert!(OciRef::parse(&long).unwrap_err().contains("sha256:"));

        let tag = OciRef::parse("oci://127.0.0.1:5000/tools/wc:1.0").unwrap();
        assert_eq!(
            (tag.registry(), tag.repository()),
            ("127.0.0.1:5000", "tools/wc")
        );
        assert_eq!((tag.tag(), tag.digest()), (Some("1.0"), None));
        assert_eq!(tag.to_string(), "oci://127.0.0.1:5000/tools/wc:1.0");
        let latest = OciRef::parse("oci://localhost:5000/wc").unwrap();
        assert_eq!(latest.tag(), Some("latest"));
        let pinned = OciRef::parse(&format!("oci://registry.example/wc@{D}")).unwrap();
        assert_eq!(pinned.digest(), Some(D));
        // Both: the digest decides what is fetched; the tag is only a name.
        let both = OciRef::parse(&format!("oci://registry.example/wc:1.0@{D}")).unwrap();
        assert_eq!(both.digest(), Some(D));
        assert_eq!(both.repo(), "registry.example/wc");
    }

    #[test]
    fn only_a_component_artifact_of_one_bounded_local_layer_is_taken() {
        let layer = descriptor(LAYER_MEDIA_TYPE, b"\0asm");
        let manifest = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut m = serde_json::to_value(OciImageManifest {
                schema_version: 2,
                media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
                config: descriptor(CONFIG_MEDIA_TYPE, b"{}"),
                layers: vec![layer.clone()],
                ..Default::default()
            })
            .unwrap();
            edit(&mut m);
            serde_json::to_vec(&m).unwrap()
        };
        assert_eq!(
            check_manifest(&manifest(&|_| {})).unwrap().digest,
            layer.digest
        );
        type Edit<'a> = &'a dyn Fn(&mut serde_json::Value);
        let refused: [(Edit, &str); 7] = [
            (
                &|m| m["mediaType"] = "application/vnd.docker.distribution.manifest.v2+json".into(),
                "not an OCI image manifest",
            ),
            (
                &|m| {
                    m.as_object_mut().unwrap().remove("mediaType");
                },
                "not an OCI image manifest",
            ),
            (
                &|m| m["config"]["mediaType"] = "application/vnd.oci.image.config.v1+json".into(),
                "not a WebAssembly component",
            ),
            (
                &|m| {
                    let l = m["layers"][0].clone();
                    m["layers"].as_array_mut().unwrap().push(l);
                },
                "has 2",
            ),
            (
                &|m| m["layers"][0]["mediaType"] = "application/octet-stream".into(),
                "its layer is application/octet-stream",
            ),
            (
                &|m| m["layers"][0]["urls"] = serde_json::json!(["https://elsewhere.example/x"]),
                "other addresses",
            ),
            (
                &|m| m["layers"][0]["size"] = (MAX_COMPONENT_BYTES + 1).into(),
                "a component is 1 to",
            ),
        ];
        for (edit, why) in refused {
            let err = check_manifest(&manifest(edit)).unwrap_err();
            assert!(err.contains(why), "{why}: {err}");
        }
    }
}

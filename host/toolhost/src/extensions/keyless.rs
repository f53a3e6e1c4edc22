//! Keyless signatures: Sigstore bundles (v0.3) over a component's manifest
//! digest, checked with no network against a Sigstore trusted root
//! (`[trust] sigstore-root`, the `trusted_root.json` that `cosign` and
//! sigstore-go read).
//!
//! The `sigstore` crate's verifier checks the certificate's chain to a
//! trusted certificate authority (Fulcio), its embedded SCT against a
//! trusted certificate-transparency log, the identity and OIDC issuer the
//! policy names, the signature over the digest, and that the Rekor entry is
//! the one of this signature and lies within the certificate's lifetime.
//! What it leaves to its caller (sigstore-rs#285), this module checks: the
//! entry's log is a trusted Rekor, its signed entry timestamp is that log's,
//! and its inclusion proof reaches a checkpoint that log signed.

use super::oci::{self, OciRef};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use oci_client::manifest::OCI_IMAGE_MEDIA_TYPE;
use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};
use sigstore::bundle::Bundle;
use sigstore::bundle::verify::policy::Identity;
use sigstore::bundle::verify::{ArtifactDigest, Verifier};
use sigstore::crypto::{CosignVerificationKey, Signature};
use sigstore::rekor::models::InclusionProof;
use sigstore::rekor::models::checkpoint::SignedCheckpoint;
use sigstore::trust::ManualTrustRoot;
use std::collections::BTreeMap;
use std::path::Path;

/// The media type of a bundle, in a registry and in the bundle itself.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The largest trusted root or bundle read.
const MAX_JSON_BYTES: u64 = 1 << 20;

/// A Sigstore trusted root: the certificate authorities, the transparency
/// logs (Rekor) and the certificate-transparency logs, by key.
struct TrustedRoot {
    authorities: Vec<Vec<u8>>,
    /// Rekor's keys (SPKI DER) by their log id (the key's SHA-256).
    logs: BTreeMap<Vec<u8>, Vec<u8>>,
    ct_logs: Vec<Vec<u8>>,
}

impl TrustedRoot {
    fn read(path: &Path) -> Result<TrustedRoot, String> {
        let shown = path.display();
        let bytes = crate::files::read_regular(path, MAX_JSON_BYTES)
            .map_err(|e| format!("the Sigstore trusted root {shown} {e}"))?
            .ok_or_else(|| format!("the Sigstore trusted root {shown} does not exist"))?;
        let root: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the Sigstore trusted root {shown} is not JSON: {e}"))?;
        let bytes_at = |v: &Value, pointer: &str| -> Result<Vec<u8>, String> {
            let text = v.pointer(pointer).and_then(Value::as_str).ok_or_else(|| {
                format!("the Sigstore trusted root {shown} has no {pointer} in an entry")
            })?;
            BASE64
                .decode(text)
                .map_err(|e| format!("the Sigstore trusted root {shown}: {pointer}: {e}"))
        };
        let list = |key: &str| root[key].as_array().cloned().unwrap_or_default();
        let mut authorities = Vec::new();
        for ca in list("certificateAuthorities") {
            for cert in ca
                .pointer("/certChain/certificates")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                authorities.push(bytes_at(cert, "/rawBytes")?);
            }
        }
        let mut logs = BTreeMap::new();
        for log in list("tlogs") {
            let key = bytes_at(&log, "/publicKey/rawBytes")?;
            logs.insert(crate::extensions::oci::sha256_bytes(&key).to_vec(), key);
        }
        let ct_logs: Vec<Vec<u8>> = list("ctlogs")
            .iter()
            .map(|log| bytes_at(log, "/publicKey/rawBytes"))
            .collect::<Result<_, _>>()?;
        if authorities.is_empty() || logs.is_empty() || ct_logs.is_empty() {
            return Err(format!(
                "the Sigstore trusted root {shown} names no certificate authority, transparency \
                 log or certificate-transparency log"
            ));
        }
        Ok(TrustedRoot {
            authorities,
            logs,
            ct_logs,
        })
    }

    fn verifier(&self) -> Result<Verifier, String> {
        let manual = ManualTrustRoot {
            fulcio_certs: self
                .authorities
                .iter()
                .map(|der| CertificateDer::from(der.clone()))
                .collect(),
            rekor_keys: BTreeMap::new(),
            ctfe_keys: self
                .ct_logs
                .iter()
                .enumerate()
                .map(|(i, key)| (i.to_string(), key.clone()))
                .collect(),
        };
        Verifier::new(Default::default(), manual)
            .map_err(|e| format!("the Sigstore trusted root cannot be used: {e}"))
    }
}

/// One of `bundles` signs `digest` (`sha256:…`) as `identity` of `issuer`,
/// under the trusted root `root`; else why none does.
pub fn verify(
    bundles: &[Value],
    identity: &str,
    issuer: &str,
    root: Option<&Path>,
    digest: &str,
) -> Result<(), String> {
    let signer = format!("{identity}@{issuer}");
    let root = root.ok_or_else(|| {
        format!(
            "signed-by {signer}: no Sigstore trusted root is named ([trust] sigstore-root = \
             \"trusted_root.json\" in your toolhost.toml)"
        )
    })?;
    let root = TrustedRoot::read(root)?;
    if bundles.is_empty() {
        return Err(format!(
            "it has no keyless signature (its policy wants one of {signer})"
        ));
    }
    let raw = digest_bytes(digest).ok_or_else(|| format!("{digest} is not a sha256 digest"))?;
    let verifier = root.verifier()?;
    let mut why = Vec::new();
    for bundle in bundles {
        match check_one(bundle, (&root, &verifier), identity, issuer, raw) {
            Ok(()) => return Ok(()),
            Err(reason) => why.push(reason),
        }
    }
    Err(format!(
        "no keyless signature of {signer} over {digest}: {}",
        why.join("; ")
    ))
}

fn check_one(
    bundle: &Value,
    (root, verifier): (&TrustedRoot, &Verifier),
    identity: &str,
    issuer: &str,
    digest: [u8; 32],
) -> Result<(), String> {
    let parsed: Bundle = serde_json::from_value(bundle.clone())
        .map_err(|e| format!("a bundle cannot be read: {e}"))?;
    let policy = Identity::new(identity, issuer);
    // Offline, the verifier awaits nothing.
    futures::executor::block_on(verifier.verify_digest_with(
        ArtifactDigest::Sha256(digest),
        parsed,
        &policy,
        true,
    ))
    .map_err(|e| format!("a bundle does not hold: {}", crate::error::chain_of(&e)))?;
    check_log_entry(bundle, root)
}

/// The Rekor entry of `bundle`: from a trusted log, its signed entry
/// timestamp that log's, its inclusion proof reaching a checkpoint the log
/// signed.
fn check_log_entry(bundle: &Value, root: &TrustedRoot) -> Result<(), String> {
    let entry = bundle
        .pointer("/verificationMaterial/tlogEntries/0")
        .ok_or("a bundle has no log entry")?;
    let bytes = |pointer: &str| -> Result<Vec<u8>, String> {
        let text = entry
            .pointer(pointer)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("its log entry has no {pointer}"))?;
        BASE64
            .decode(text)
            .map_err(|e| format!("its log entry's {pointer}: {e}"))
    };
    let number = |pointer: &str| -> Result<i64, String> {
        let v = entry.pointer(pointer);
        v.and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .or_else(|| v.and_then(Value::as_i64))
            .ok_or_else(|| format!("its log entry has no {pointer}"))
    };
    let log_id = bytes("/logId/keyId")?;
    let key = root
        .logs
        .get(&log_id)
        .ok_or("its log entry is not from a transparency log the trusted root names")?;
    let key = CosignVerificationKey::try_from_der(key)
        .map_err(|e| format!("the trusted root's log key cannot be read: {e}"))?;
    let body = bytes("/canonicalizedBody")?;
    let (time, index) = (number("/integratedTime")?, number("/logIndex")?);
    // The signed entry timestamp: the log's signature over the entry as
    // canonical JSON (keys in order).
    let promise = format!(
        "{{\"body\":\"{}\",\"integratedTime\":{time},\"logID\":\"{}\",\"logIndex\":{index}}}",
        BASE64.encode(&body),
        log_id
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    );
    let set = bytes("/inclusionPromise/signedEntryTimestamp")?;
    key.verify_signature(Signature::Raw(&set), promise.as_bytes())
        .map_err(|_| "its log entry's signed timestamp is not the log's".to_string())?;
    let hash = |v: Vec<u8>| {
        <[u8; 32]>::try_from(v)
            .map_err(|_| "a hash of its inclusion proof is not 32 bytes".to_string())
    };
    let hashes = entry
        .pointer("/inclusionProof/hashes")
        .and_then(Value::as_array)
        .ok_or("its log entry has no inclusion proof")?
        .iter()
        .map(|h| {
            h.as_str()
                .and_then(|s| BASE64.decode(s).ok())
                .ok_or_else(|| "a hash of its inclusion proof is not base64".to_string())
                .and_then(hash)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let envelope = entry
        .pointer("/inclusionProof/checkpoint/envelope")
        .and_then(Value::as_str)
        .ok_or("its inclusion proof has no checkpoint")?;
    let checkpoint: SignedCheckpoint = serde_json::from_value(Value::from(envelope))
        .map_err(|e| format!("its checkpoint cannot be read: {e}"))?;
    let size = u64::try_from(number("/inclusionProof/treeSize")?)
        .map_err(|_| "its inclusion proof's tree size is negative".to_string())?;
    InclusionProof::new(
        number("/inclusionProof/logIndex")?,
        hash(bytes("/inclusionProof/rootHash")?)?,
        size,
        hashes,
        Some(checkpoint),
    )
    .verify(&body, &key)
    .map_err(|e| format!("its log entry is not proven in the log: {e}"))
}

/// The media type of an index (the referrers of a digest, listed under
/// its fallback tag).
const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The most bundles read for one component.
const MAX_BUNDLES: usize = 8;
/// The empty config of an artifact manifest.
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";

/// The tag the referrers of `digest` are listed under in a registry
/// without the referrers API (OCI 1.1's fallback): `sha256-<hex>`.
fn referrers_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

/// The bundles the registry holds for `digest` in `r`'s repository: the
/// referrers of that digest whose artifact type is a bundle (as cosign 3
/// stores them). None is not an error here: the policy decides.
pub async fn fetch(r: &OciRef, digest: &str) -> Result<Vec<Value>, String> {
    let reader = r.reader()?;
    let listed = r.tagged(&referrers_tag(digest));
    let Some((index, _)) = reader.manifest(&listed, INDEX_MEDIA_TYPE).await? else {
        return Ok(Vec::new());
    };
    let index: Value =
        serde_json::from_slice(&index).map_err(|e| format!("{r}: its referrers: {e}"))?;
    let mut bundles = Vec::new();
    // A registry lists as many as it likes; the host reads a few (one
    // signature passes; more are other signers' or the same one's again).
    let listed = index["manifests"].as_array().into_iter().flatten();
    for entry in listed
        .filter(|e| e["artifactType"] == BUNDLE_MEDIA_TYPE)
        .take(MAX_BUNDLES)
    {
        let referrer = entry["digest"].as_str().unwrap_or_default();
        if !oci::is_sha256(referrer) {
            continue;
        }
        let Some((manifest, _)) = reader
            .manifest(&r.at(referrer), OCI_IMAGE_MEDIA_TYPE)
            .await?
        else {
            continue;
        };
        let manifest: Value =
            serde_json::from_slice(&manifest).map_err(|e| format!("{r}: a referrer: {e}"))?;
        let layer = &manifest["layers"][0];
        let (blob, size) = (
            layer["digest"].as_str().unwrap_or_default(),
            layer["size"].as_u64().unwrap_or(u64::MAX),
        );
        if manifest["subject"]["digest"] != digest
            || layer["mediaType"] != BUNDLE_MEDIA_TYPE
            || !oci::is_sha256(blob)
            || size > MAX_JSON_BYTES
        {
            continue;
        }
        let bundle = reader.blob(&r.at(digest), blob, size, "a bundle").await?;
        bundles.push(serde_json::from_slice(&bundle).map_err(|e| format!("{r}: a bundle: {e}"))?);
    }
    Ok(bundles)
}

/// Attach the Sigstore bundle `bundle` (JSON) to the component `r` names by
/// digest, as a referrer of it listed under the fallback tag (what cosign 3
/// does for a keyless signature). A bundle whose message signature names
/// another digest is refused before anything is pushed.
pub async fn attach(r: &OciRef, bundle: &[u8]) -> Result<String, String> {
    let digest = r
        .digest()
        .ok_or_else(|| format!("{r}: name the component by its digest (oci://…@sha256:…)"))?;
    let parsed: Value =
        serde_json::from_slice(bundle).map_err(|e| format!("the bundle is not JSON: {e}"))?;
    if parsed["mediaType"] != BUNDLE_MEDIA_TYPE {
        return Err(format!("the bundle is not a {BUNDLE_MEDIA_TYPE}"));
    }
    if let Some(signed) = parsed
        .pointer("/messageSignature/messageDigest/digest")
        .and_then(Value::as_str)
    {
        let named = digest_bytes(digest).expect("a parsed reference's digest");
        if BASE64.decode(signed).ok().as_deref() != Some(&named[..]) {
            return Err(format!("the bundle signs another digest than {digest}"));
        }
    }
    let client = r.client()?;
    let reader = r.reader()?;
    let (subject, _) = reader
        .manifest(&r.at(digest), OCI_IMAGE_MEDIA_TYPE)
        .await?
        .ok_or_else(|| format!("{r}: the registry has no such manifest"))?;
    let push_err = |what: &str, e: oci_client::errors::OciDistributionError| {
        format!("{r}: pushing {what}: {e}")
    };
    let empty = b"{}";
    client
        .push_blob(&r.at(digest), bundle.to_vec(), &oci::sha256(bundle))
        .await
        .map_err(|e| push_err("the bundle", e))?;
    client
        .push_blob(&r.at(digest), empty.to_vec(), &oci::sha256(empty))
        .await
        .map_err(|e| push_err("an empty config", e))?;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_MEDIA_TYPE,
        "artifactType": BUNDLE_MEDIA_TYPE,
        "config": {"mediaType": EMPTY_MEDIA_TYPE, "digest": oci::sha256(empty), "size": empty.len()},
        "layers": [{"mediaType": BUNDLE_MEDIA_TYPE, "digest": oci::sha256(bundle), "size": bundle.len()}],
        "subject": {"mediaType": OCI_IMAGE_MEDIA_TYPE, "digest": digest, "size": subject.len()},
    }))
    .expect("a manifest serializes");
    let referrer = oci::sha256(&manifest);
    oci::push_manifest(&client, &r.at(&referrer), &manifest, OCI_IMAGE_MEDIA_TYPE)
        .await
        .map_err(|e| push_err("the bundle's manifest", e))?;
    let listed = r.tagged(&referrers_tag(digest));
    let mut index = match reader.manifest(&listed, INDEX_MEDIA_TYPE).await? {
        Some((bytes, _)) => {
            serde_json::from_slice(&bytes).map_err(|e| format!("{r}: its referrers: {e}"))?
        }
        None => json!({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": []}),
    };
    let manifests = index["manifests"]
        .as_array_mut()
        .ok_or_else(|| format!("{r}: its referrers' index has no manifests"))?;
    if !manifests.iter().any(|m| m["digest"] == referrer.as_str()) {
        manifests.push(json!({
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "digest": referrer,
            "size": manifest.len(),
            "artifactType": BUNDLE_MEDIA_TYPE,
        }));
    }
    let body = serde_json::to_vec(&index).expect("an index serializes");
    oci::push_manifest(&client, &listed, &body, INDEX_MEDIA_TYPE)
        .await
        .map_err(|e| push_err("the referrers' index", e))?;
    Ok(referrer)
}

/// The 32 bytes of a `sha256:` digest.
pub fn digest_bytes(digest: &str) -> Option<[u8; 32]> {
    let hex = digest.strip_prefix("sha256:").filter(|h| h.len() == 64)?;
    let mut out = [0; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

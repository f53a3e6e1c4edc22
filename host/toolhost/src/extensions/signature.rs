//! Who made an extension: cosign signatures over a component's manifest
//! digest, made and checked with the `sigstore` crate, and the record kept
//! beside a component pulled from a registry (`NAME.oci.json`), from which
//! every start checks it again with no network.
//!
//! A signature is cosign's: a "simple signing" payload naming the
//! repository and the manifest's digest, signed by a key, stored in the
//! registry as a layer of the manifest tagged `sha256-<hex>.sig` (so that
//! `cosign verify --key` accepts what `toolhost ext publish --sign` makes,
//! and toolhost accepts what `cosign sign --key` makes).
//!
//! The chain that is checked: the component's bytes hash to the layer
//! digest of the recorded manifest; the manifest's bytes hash to the
//! recorded digest; a signature by the policy's key names that digest and
//! the repository it came from. A signature of another component, another
//! repository or another key proves nothing and is refused, naming the check
//! that failed.

use super::oci::{self, OciRef};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use serde::{Deserialize, Serialize};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{CosignVerificationKey, SigStoreSigner, Signature, SigningScheme};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The media type of a cosign signature's layer: its payload.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation of that layer holding the signature (base64).
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The config media type of cosign's signature manifests.
const SIGNATURE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// What the payload says it is.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The largest payload read (a few hundred bytes in practice).
const MAX_PAYLOAD_BYTES: usize = 16 << 10;
/// The variable holding the password of an encrypted key, as cosign reads it.
pub const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";

/// Why an extension whose grant names no signer never loads when
/// signatures are required.
pub const UNNAMED: &str =
    "[trust] require-signatures is on, and its grant names no key or signed-by";

/// One cosign signature: the payload signed and the signature, each base64.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosignSignature {
    pub payload: String,
    pub signature: String,
}

/// What is kept beside a component pulled from a registry: where it came
/// from, its manifest (the exact bytes, which hash to `digest`), and the
/// signatures found for that digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Provenance {
    pub source: String,
    pub digest: String,
    pub manifest: String,
    #[serde(default)]
    pub signatures: Vec<CosignSignature>,
    /// Sigstore bundles (keyless signatures) of the digest, as JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundles: Vec<serde_json::Value>,
}

impl Provenance {
    /// Where the record of `component` lies: beside it, `NAME.oci.json`.
    pub fn path_of(component: &Path) -> PathBuf {
        component.with_extension("oci.json")
    }

    /// The record of `component`, if it has one.
    pub fn read(component: &Path) -> Result<Option<Provenance>, String> {
        Ok(Self::read_with_bytes(component)?.map(|(record, _)| record))
    }

    /// The record of `component` and its file's bytes, if it has one.
    pub fn read_with_bytes(component: &Path) -> Result<Option<(Provenance, Vec<u8>)>, String> {
        let path = Self::path_of(component);
        let text = match crate::files::read_regular(&path, 1 << 20) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let record = serde_json::from_slice(&text)
            .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
        Ok(Some((record, text)))
    }

    /// Write it beside `component`.
    pub fn write(&self, component: &Path) -> Result<(), String> {
        let text = serde_json::to_vec_pretty(self).expect("a record serializes");
        crate::files::write_private(&Self::path_of(component), &text)
            .map_err(|e| format!("cannot keep its record: {e}"))
    }
}

/// Who must have signed an extension, as the user's `toolhost.toml` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignaturePolicy {
    /// `key = "cosign.pub"`: a signature by this public key.
    Key(PathBuf),
    /// `signed-by = "identity@issuer"`: a keyless signature (a Fulcio
    /// certificate for this identity from this OIDC issuer, logged in
    /// Rekor), checked against the Sigstore trusted root `root`
    /// (`[trust] sigstore-root`).
    Identity {
        identity: String,
        issuer: String,
        root: Option<PathBuf>,
    },
    /// `[trust] require-signatures = true`, and the extension's grant names
    /// neither.
    Unnamed,
}

impl SignaturePolicy {
    /// Split `identity@issuer` at the issuer's URL (an identity may hold an
    /// `@` itself: an address, a workflow's `@refs/heads/main`).
    pub fn signed_by(text: &str, root: Option<PathBuf>) -> Result<SignaturePolicy, String> {
        let at = text
            .rfind("@https://")
            .or_else(|| text.rfind("@http://"))
            .ok_or_else(|| {
                format!("signed-by {text:?}: write IDENTITY@ISSUER, the issuer as its URL")
            })?;
        let (identity, issuer) = (&text[..at], &text[at + 1..]);
        if identity.is_empty() {
            return Err(format!("signed-by {text:?}: the identity is empty"));
        }
        Ok(SignaturePolicy::Identity {
            identity: identity.into(),
            issuer: issuer.into(),
            root,
        })
    }
}

/// A digest (hex) of everything a check of `policies` reads: the record's
/// bytes, each policy with the bytes of its key or trusted root, and the
/// component's SHA-256; `None` when a file cannot be read (the check then
/// runs, and says why). A check that passed on the same inputs passes again.
pub fn check_inputs(
    record: &[u8],
    policies: &[SignaturePolicy],
    component: &str,
) -> Option<String> {
    let mut h = blake3::Hasher::new();
    let mut part = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes()).update(bytes);
    };
    part(b"signature check 1");
    part(record);
    part(component.as_bytes());
    for policy in policies {
        let (what, file) = match policy {
            SignaturePolicy::Key(key) => ("key".to_string(), Some(key.as_path())),
            SignaturePolicy::Identity {
                identity,
                issuer,
                root,
            } => (format!("identity {identity} {issuer}"), root.as_deref()),
            SignaturePolicy::Unnamed => return None,
        };
        part(what.as_bytes());
        if let Some(file) = file {
            part(file.as_os_str().as_encoded_bytes());
            part(&std::fs::read(file).ok()?);
        }
    }
    Some(h.finalize().to_hex().to_string())
}

/// The payload cosign signs for `digest` in the repository `repo`.
pub fn payload(repo: &str, digest: &str) -> Vec<u8> {
    // Built by hand so the bytes are cosign's, whatever order a map keeps.
    format!(
        "{{\"critical\":{{\"identity\":{{\"docker-reference\":{}}},\"image\":{{\
         \"docker-manifest-digest\":{}}},\"type\":{}}},\"optional\":null}}",
        serde_json::Value::from(repo),
        serde_json::Value::from(digest),
        serde_json::Value::from(PAYLOAD_TYPE),
    )
    .into_bytes()
}

/// Check the component whose SHA-256 is `component` (`sha256:…`) against
/// `provenance` and `policy`, with no network; the error names the check
/// that failed.
pub fn verify(
    component: &str,
    provenance: &Provenance,
    policy: &SignaturePolicy,
) -> Result<(), String> {
    if oci::sha256(provenance.manifest.as_bytes()) != provenance.digest {
        return Err(format!(
            "its recorded manifest is not the one its digest {} names",
            provenance.digest
        ));
    }
    let layer = oci::check_manifest(provenance.manifest.as_bytes())?;
    if component != layer.digest {
        return Err(format!(
            "the component is not the one its manifest names ({}): it was changed",
            layer.digest
        ));
    }
    let source = OciRef::parse(&provenance.source)?;
    match policy {
        SignaturePolicy::Key(key) => verify_by_key(
            &provenance.signatures,
            key,
            &source.repo(),
            &provenance.digest,
        ),
        SignaturePolicy::Identity {
            identity,
            issuer,
            root,
        } => super::keyless::verify(
            &provenance.bundles,
            identity,
            issuer,
            root.as_deref(),
            &provenance.digest,
        ),
        SignaturePolicy::Unnamed => Err(UNNAMED.into()),
    }
}

/// One of `signatures` is `key`'s, over the payload naming `digest` in `repo`.
fn verify_by_key(
    signatures: &[CosignSignature],
    key: &Path,
    repo: &str,
    digest: &str,
) -> Result<(), String> {
    let pem = std::fs::read(key).map_err(|e| format!("its key {}: {e}", key.display()))?;
    let key_name = key.display();
    let verifier = CosignVerificationKey::try_from_pem(&pem)
        .map_err(|e| format!("its key {key_name} is not a public key: {e}"))?;
    if signatures.is_empty() {
        return Err(format!(
            "it is not signed (its policy wants a signature by {key_name})"
        ));
    }
    let mut why = Vec::new();
    for s in signatures {
        match check_one(s, &verifier, repo, digest) {
            Ok(()) => return Ok(()),
            Err(reason) => why.push(reason),
        }
    }
    Err(format!(
        "no signature by {key_name} over {digest}: {}",
        why.join("; ")
    ))
}

fn check_one(
    s: &CosignSignature,
    key: &CosignVerificationKey,
    repo: &str,
    digest: &str,
) -> Result<(), String> {
    let payload = BASE64
        .decode(&s.payload)
        .map_err(|e| format!("a payload is not base64: {e}"))?;
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err("a payload is too large".into());
    }
    key.verify_signature(Signature::Base64Encoded(s.signature.as_bytes()), &payload)
        .map_err(|_| "a signature is not the key's".to_string())?;
    let said: serde_json::Value = serde_json::from_slice(&payload)
        .map_err(|e| format!("a signed payload is not JSON: {e}"))?;
    let critical = &said["critical"];
    if critical["type"] != PAYLOAD_TYPE {
        return Err("a signed payload is not a cosign image signature".into());
    }
    let signed = critical["image"]["docker-manifest-digest"]
        .as_str()
        .unwrap_or_default();
    if signed != digest {
        return Err(format!("the key signed {signed}, another component"));
    }
    let named = critical["identity"]["docker-reference"]
        .as_str()
        .unwrap_or_default();
    if named != repo {
        return Err(format!("the key signed it for {named}, not {repo}"));
    }
    Ok(())
}

/// The signer in the private key file `path`: cosign's encrypted form (its
/// password in `password`) or an unencrypted PKCS #8 key.
pub fn signer(path: &Path, password: Option<&str>) -> Result<SigStoreSigner, String> {
    let pem = std::fs::read(path).map_err(|e| format!("the key {}: {e}", path.display()))?;
    let encrypted = String::from_utf8_lossy(&pem).contains("ENCRYPTED");
    let pair = if encrypted {
        let password = password.ok_or_else(|| {
            format!(
                "the key {} is encrypted: set {PASSWORD_VARIABLE} to its password",
                path.display()
            )
        })?;
        SigStoreKeyPair::from_encrypted_pem(&pem, password.as_bytes())
    } else {
        SigStoreKeyPair::from_pem(&pem)
    }
    .map_err(|e| format!("the key {} cannot be read: {e}", path.display()))?;
    pair.to_sigstore_signer(&SigningScheme::ECDSA_P256_SHA256_ASN1)
        .map_err(|e| format!("the key {} is not an ECDSA P-256 key: {e}", path.display()))
}

/// Make a key pair: `PREFIX.key` (encrypted with `password`, as cosign
/// writes it) and `PREFIX.pub`; their paths.
pub fn generate(prefix: &Path, password: &str) -> Result<(PathBuf, PathBuf), String> {
    let (private, public) = (prefix.with_extension("key"), prefix.with_extension("pub"));
    for path in [&private, &public] {
        if path.exists() {
            return Err(format!("{} exists already; not replaced", path.display()));
        }
    }
    let pair = SigningScheme::ECDSA_P256_SHA256_ASN1
        .create_signer()
        .and_then(|s| s.to_sigstore_keypair())
        .map_err(|e| format!("cannot make a key: {e}"))?;
    let sealed = pair
        .private_key_to_encrypted_pem(password.as_bytes())
        .map_err(|e| format!("cannot seal the key: {e}"))?;
    let open = pair
        .public_key_to_pem()
        .map_err(|e| format!("cannot write the public key: {e}"))?;
    crate::files::write_private(&private, sealed.as_bytes())
        .map_err(|e| format!("{}: {e}", private.display()))?;
    std::fs::write(&public, open).map_err(|e| format!("{}: {e}", public.display()))?;
    Ok((private, public))
}

/// The tag of the signatures of `digest`: `sha256-<hex>.sig`.
fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The signatures the registry holds for `digest` in `r`'s repository.
/// None is not an error here: the policy decides whether one is needed.
pub async fn fetch(r: &OciRef, digest: &str) -> Result<Vec<CosignSignature>, String> {
    let reader = r.reader()?;
    let Some((manifest, _)) = reader
        .manifest(&r.tagged(&signature_tag(digest)), OCI_IMAGE_MEDIA_TYPE)
        .await?
    else {
        return Ok(Vec::new());
    };
    let manifest: OciImageManifest = serde_json::from_slice(&manifest)
        .map_err(|e| format!("{r}: its signature manifest cannot be read: {e}"))?;
    let mut found = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING)
    {
        let Some(signature) = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIGNATURE_ANNOTATION))
        else {
            continue;
        };
        if layer.size < 0
            || layer.size as usize > MAX_PAYLOAD_BYTES
            || !oci::is_sha256(&layer.digest)
        {
            continue;
        }
        let payload = reader
            .blob(
                &r.at(digest),
                &layer.digest,
                layer.size as u64,
                "a signature",
            )
            .await?;
        found.push(CosignSignature {
            payload: BASE64.encode(&payload),
            signature: signature.clone(),
        });
    }
    Ok(found)
}

/// Sign `digest` in `r`'s repository with `signer` and add the signature to
/// the registry's signature manifest for it (cosign's layout).
pub async fn sign_and_push(
    r: &OciRef,
    digest: &str,
    signer: &SigStoreSigner,
) -> Result<CosignSignature, String> {
    let payload = payload(&r.repo(), digest);
    let signature = BASE64.encode(
        signer
            .sign(&payload)
            .map_err(|e| format!("cannot sign: {e}"))?,
    );
    let client = r.client()?;
    let tag = r.tagged(&signature_tag(digest));
    let mut manifest = match r.reader()?.manifest(&tag, OCI_IMAGE_MEDIA_TYPE).await? {
        Some((bytes, _)) => serde_json::from_slice::<OciImageManifest>(&bytes)
            .map_err(|e| format!("{r}: its signature manifest cannot be read: {e}"))?,
        None => OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
            config: oci::descriptor(SIGNATURE_CONFIG, b"{}"),
            ..Default::default()
        },
    };
    let push_err = |what: &str, e: oci_client::errors::OciDistributionError| {
        format!("{r}: pushing the signature's {what}: {e}")
    };
    client
        .push_blob(&tag, b"{}".to_vec(), &manifest.config.digest)
        .await
        .map_err(|e| push_err("config", e))?;
    client
        .push_blob(&tag, payload.clone(), &oci::sha256(&payload))
        .await
        .map_err(|e| push_err("payload", e))?;
    let mut layer = oci::descriptor(SIMPLE_SIGNING, &payload);
    layer.annotations = Some(BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_string(),
        signature.clone(),
    )]));
    manifest.layers.retain(|l| l.digest != layer.digest);
    manifest.layers.push(layer);
    let body = serde_json::to_vec(&manifest).expect("a manifest serializes");
    oci::push_manifest(&client, &tag, &body, OCI_IMAGE_MEDIA_TYPE)
        .await
        .map_err(|e| push_err("manifest", e))?;
    Ok(CosignSignature {
        payload: BASE64.encode(&payload),
        signature,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_of(component: &[u8]) -> String {
        let m = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
            config: oci::descriptor(oci::CONFIG_MEDIA_TYPE, b"{}"),
            layers: vec![oci::descriptor(oci::LAYER_MEDIA_TYPE, component)],
            ..Default::default()
        };
        serde_json::to_string(&m).unwrap()
    }

    fn signed(component: &[u8], repo: &str, signer: &SigStoreSigner) -> Provenance {
        let manifest = manifest_of(component);
        let digest = oci::sha256(manifest.as_bytes());
        let payload = payload(repo, &digest);
        Provenance {
            source: format!("oci://{repo}:1.0"),
            signatures: vec![CosignSignature {
                payload: BASE64.encode(&payload),
                signature: BASE64.encode(signer.sign(&payload).unwrap()),
            }],
            digest,
            manifest,
            bundles: Vec::new(),
        }
    }

    fn key_pair(dir: &Path, name: &str) -> (SigStoreSigner, PathBuf) {
        let signer = SigningScheme::ECDSA_P256_SHA256_ASN1
            .create_signer()
            .unwrap();
        let public = dir.join(format!("{name}.pub"));
        let pem = signer
            .to_sigstore_keypair()
            .unwrap()
            .public_key_to_pem()
            .unwrap();
        std::fs::write(&public, pem).unwrap();
        (signer, public)
    }

    /// The whole chain is checked, and each broken link is named.
    #[test]
    fn a_signature_holds_only_for_its_key_its_component_and_its_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let (ours, our_key) = key_pair(tmp.path(), "ours");
        let (theirs, their_key) = key_pair(tmp.path(), "theirs");
        let (a, b) = (
            b"\0asm component a".as_slice(),
            b"\0asm component b".as_slice(),
        );
        let repo = "127.0.0.1:5000/tools/wc";
        let good = signed(a, repo, &ours);
        let key = SignaturePolicy::Key(our_key.clone());
        verify(&oci::sha256(a), &good, &key).unwrap();

        let refused = |component: &[u8], p: &Provenance, policy: &SignaturePolicy| {
            verify(&oci::sha256(component), p, policy).unwrap_err()
        };
        // Another key.
        let err = refused(a, &good, &SignaturePolicy::Key(their_key));
        assert!(err.contains("a signature is not the key's"), "{err}");
        // The component changed after it was signed.
        let err = refused(b, &good, &key);
        assert!(
            err.contains("the component is not the one its manifest names"),
            "{err}"
        );
        // B's signature put beside A: it names B's digest.
        let other = signed(b, repo, &ours);
        let swapped = Provenance {
            signatures: other.signatures.clone(),
            ..good.clone()
        };
        let err = refused(a, &swapped, &key);
        assert!(err.contains("another component"), "{err}");
        // A signature made for another repository.
        let elsewhere = signed(a, "127.0.0.1:5000/other/wc", &ours);
        let moved = Provenance {
            signatures: elsewhere.signatures,
            ..good.clone()
        };
        let err = refused(a, &moved, &key);
        assert!(err.contains("not 127.0.0.1:5000/tools/wc"), "{err}");
        // The record's manifest edited: its digest no longer matches.
        let edited = Provenance {
            manifest: good.manifest.replace("wasm", "wasm "),
            ..good.clone()
        };
        let err = refused(a, &edited, &key);
        assert!(err.contains("is not the one its digest"), "{err}");
        // No signature at all, and a signature by their key only.
        let unsigned = Provenance {
            signatures: Vec::new(),
            ..good.clone()
        };
        assert!(refused(a, &unsigned, &key).contains("it is not signed"));
        let theirs_only = signed(a, repo, &theirs);
        assert!(refused(a, &theirs_only, &key).contains("not the key's"));
        // Keyless and unnamed policies fail closed.
        let identity =
            SignaturePolicy::signed_by("dev@example.com@https://issuer.example", None).unwrap();
        assert!(refused(a, &good, &identity).contains("no Sigstore trusted root"));
        assert!(refused(a, &good, &SignaturePolicy::Unnamed).contains("names no key"));
    }

    #[test]
    fn signed_by_splits_at_the_issuers_url() {
        assert_eq!(
            SignaturePolicy::signed_by(
                "https://github.com/o/r/.github/workflows/rel.yml@refs/heads/main@https://token.actions.githubusercontent.com",
                None
            )
            .unwrap(),
            SignaturePolicy::Identity {
                identity: "https://github.com/o/r/.github/workflows/rel.yml@refs/heads/main".into(),
                issuer: "https://token.actions.githubusercontent.com".into(),
                root: None,
            }
        );
        assert!(SignaturePolicy::signed_by("dev@example.com", None).is_err());
        assert!(SignaturePolicy::signed_by("@https://issuer.example", None).is_err());
    }

    #[test]
    fn a_generated_key_signs_and_its_public_half_verifies() {
        let tmp = tempfile::tempdir().unwrap();
        let (private, public) = generate(&tmp.path().join("cosign"), "pw").unwrap();
        assert!(
            generate(&tmp.path().join("cosign"), "pw")
                .unwrap_err()
                .contains("exists")
        );
        assert!(
            signer(&private, None)
                .unwrap_err()
                .contains(PASSWORD_VARIABLE)
        );
        let signer = signer(&private, Some("pw")).unwrap();
        let p = signed(b"\0asm x", "registry.example/x", &signer);
        verify(&oci::sha256(b"\0asm x"), &p, &SignaturePolicy::Key(public)).unwrap();
    }
}

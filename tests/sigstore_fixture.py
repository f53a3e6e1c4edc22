#!/usr/bin/env python3
"""A Sigstore of the tests' own, offline: a certificate authority in Fulcio's
place, a certificate-transparency log key, a Rekor key, their trusted root as
`cosign` and sigstore-go read it, and keyless signing bundles (v0.3) over an
OCI manifest digest, each with everything a verifier checks: a short-lived
certificate for an identity from an OIDC issuer with its embedded SCT, the
signature, the Rekor entry with its signed entry timestamp, inclusion proof
and signed checkpoint.

    sigstore_fixture.py root DIR
        writes DIR/trusted_root.json and the three keys (DIR/*.key.pem)
    sigstore_fixture.py bundle DIR sha256:HEX IDENTITY ISSUER [--tamper WHAT]
        prints a bundle signing the digest as IDENTITY of ISSUER; WHAT breaks
        one part (set, proof, checkpoint, sct) for the tests that it is checked

Built with the `cryptography` package (a dependency of the MCP SDK the tests
install; pinned in tests/requirements.txt)."""

import base64
import datetime
import hashlib
import json
import struct
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

OIDC_ISSUER = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
SCT_LIST = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
ORIGIN = "rekor.toolhost.test - 1"
KEYS = ("ca", "ct", "rekor")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def spki(key) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def sign(key, data: bytes) -> bytes:
    return key.sign(data, ec.ECDSA(hashes.SHA256()))


def load(directory: Path, name: str):
    pem = (directory / f"{name}.key.pem").read_bytes()
    return serialization.load_pem_private_key(pem, password=None)


def der_octet_string(data: bytes) -> bytes:
    n = len(data)
    if n < 0x80:
        length = bytes([n])
    elif n < 0x100:
        length = bytes([0x81, n])
    else:
        length = bytes([0x82]) + n.to_bytes(2, "big")
    return b"\x04" + length + data


def key_usage(**granted) -> x509.KeyUsage:
    """KeyUsage with the bits named set and every other bit clear."""
    bits = ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment",
            "key_agreement", "key_cert_sign", "crl_sign", "encipher_only", "decipher_only")
    return x509.KeyUsage(**{bit: granted.get(bit, False) for bit in bits})


def ca_certificate(ca_key):
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "toolhost-test"),
            x509.NameAttribute(NameOID.COMMON_NAME, "toolhost test fulcio"),
        ]
    )
    now = datetime.datetime.now(datetime.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(key_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )


def root(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    keys = {name: ec.generate_private_key(ec.SECP256R1()) for name in KEYS}
    for name, key in keys.items():
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        (directory / f"{name}.key.pem").write_bytes(pem)
    ca = ca_certificate(keys["ca"])
    (directory / "ca.der").write_bytes(ca.public_bytes(serialization.Encoding.DER))
    valid = {"start": "2020-01-01T00:00:00Z"}

    def log(name: str, url: str) -> dict:
        der = spki(keys[name])
        return {
            "baseUrl": url,
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": b64(der),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": valid,
            },
            "logId": {"keyId": b64(hashlib.sha256(der).digest())},
        }

    trusted = {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [log("rekor", "https://rekor.toolhost.test")],
        "certificateAuthorities": [
            {
                "subject": {"organization": "toolhost-test", "commonName": "toolhost test fulcio"},
                "uri": "https://fulcio.toolhost.test",
                "certChain": {"certificates": [{"rawBytes": b64(ca.public_bytes(serialization.Encoding.DER))}]},
                "validFor": valid,
            }
        ],
        "ctlogs": [log("ct", "https://ctfe.toolhost.test")],
        "timestampAuthorities": [],
    }
    (directory / "trusted_root.json").write_text(json.dumps(trusted, indent=1) + "\n")


def leaf_certificate(directory: Path, leaf_key, identity: str, issuer: str, tamper: str):
    ca_key, ct_key = load(directory, "ca"), load(directory, "ct")
    ca = x509.load_der_x509_certificate((directory / "ca.der").read_bytes())
    now = datetime.datetime.now(datetime.timezone.utc)
    san = (
        x509.UniformResourceIdentifier(identity)
        if "://" in identity
        else x509.RFC822Name(identity)
    )
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(ca.subject)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(minutes=10))
        .add_extension(key_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
        .add_extension(x509.SubjectAlternativeName([san]), critical=True)
        .add_extension(x509.UnrecognizedExtension(OIDC_ISSUER, issuer.encode()), critical=False)
    )
    # The SCT signs the certificate as it is without the SCT (RFC 6962's
    # precertificate), issued by the CA whose key hash it names.
    tbs = builder.sign(ca_key, hashes.SHA256()).tbs_certificate_bytes
    timestamp = int(now.timestamp() * 1000)
    issuer_key_hash = hashlib.sha256(ca.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )).digest()
    signed = (
        struct.pack(">BBQH", 0, 0, timestamp, 1)
        + issuer_key_hash
        + len(tbs).to_bytes(3, "big")
        + tbs
        + struct.pack(">H", 0)
    )
    signature = sign(ct_key, signed)
    if tamper == "sct":
        signature = sign(ct_key, signed + b"x")
    sct = (
        struct.pack(">B", 0)
        + hashlib.sha256(spki(ct_key)).digest()
        + struct.pack(">QH", timestamp, 0)
        + struct.pack(">BBH", 4, 3, len(signature))
        + signature
    )
    listed = struct.pack(">H", len(sct)) + sct
    scts = struct.pack(">H", len(listed)) + listed
    return builder.add_extension(
        x509.UnrecognizedExtension(SCT_LIST, der_octet_string(scts)), critical=False
    ).sign(ca_key, hashes.SHA256())


def bundle(directory: Path, digest: str, identity: str, issuer: str, tamper: str) -> dict:
    rekor_key = load(directory, "rekor")
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = leaf_certificate(directory, leaf_key, identity, issuer, tamper)
    leaf_der = leaf.public_bytes(serialization.Encoding.DER)
    leaf_pem = leaf.public_bytes(serialization.Encoding.PEM)
    hex_digest = digest.removeprefix("sha256:")
    raw_digest = bytes.fromhex(hex_digest)
    signature = leaf_key.sign(raw_digest, ec.ECDSA(Prehashed(hashes.SHA256())))
    body = json.dumps(
        {
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hex_digest}},
                "signature": {"content": b64(signature), "publicKey": {"content": b64(leaf_pem)}},
            },
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    log_id = hashlib.sha256(spki(rekor_key)).digest()
    integrated = int(datetime.datetime.now(datetime.timezone.utc).timestamp())
    promise = json.dumps(
        {"body": b64(body), "integratedTime": integrated, "logID": log_id.hex(), "logIndex": 0},
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    set_signature = sign(rekor_key, promise + (b"x" if tamper == "set" else b""))
    # A log of one entry: its root is the entry's leaf hash.
    root_hash = hashlib.sha256(b"\x00" + body).digest()
    if tamper == "proof":
        root_hash = hashlib.sha256(b"\x00" + body + b"x").digest()
    note = f"{ORIGIN}\n1\n{b64(root_hash)}\n"
    note_key = ec.generate_private_key(ec.SECP256R1()) if tamper == "checkpoint" else rekor_key
    note_signature = sign(note_key, note.encode())
    envelope = f"{note}\n\u2014 rekor.toolhost.test {b64(log_id[:4] + note_signature)}\n"
    return {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": b64(leaf_der)},
            "tlogEntries": [
                {
                    "logIndex": "0",
                    "logId": {"keyId": b64(log_id)},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": str(integrated),
                    "inclusionPromise": {"signedEntryTimestamp": b64(set_signature)},
                    "inclusionProof": {
                        "logIndex": "0",
                        "rootHash": b64(root_hash),
                        "treeSize": "1",
                        "hashes": [],
                        "checkpoint": {"envelope": envelope},
                    },
                    "canonicalizedBody": b64(body),
                }
            ],
        },
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(raw_digest)},
            "signature": b64(signature),
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "root":
        root(Path(argv[1]))
        return 0
    if len(argv) in (5, 7) and argv[0] == "bundle":
        tamper = argv[6] if len(argv) == 7 and argv[5] == "--tamper" else ""
        print(json.dumps(bundle(Path(argv[1]), argv[2], argv[3], argv[4], tamper)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

//! Extensions from a registry, signed: `toolhost ext publish`, `ext add
//! oci://…`, `ext update`, and the signature check of every start, against
//! the OCI distribution reference registry (Debian's `docker-registry`,
//! installed by `scripts/setup`) started on loopback by each test.
//!
//! The hostile cases come first: a tampered layer, a signature by another
//! key, a signature moved from another component, a registry that serves
//! other bytes than the digest names, a component changed after install;
//! each is refused with the check that failed, and nothing is installed or
//! loaded.

use crate::examples::example;
use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use toolhost_tests::registry::Registry;

/// Raw access to the registry's API, as an attacker with write access to
/// it has.
trait RegistryApi {
    fn manifest(&self, repo: &str, reference: &str) -> Vec<u8>;
    fn put_manifest(&self, repo: &str, tag: &str, body: &[u8]);
}

#[track_caller]
fn registry() -> Registry {
    Registry::start().unwrap_or_else(|e| panic!("{e}"))
}

impl RegistryApi for Registry {
    /// The manifest `reference` (a tag or digest) of `repo`, raw.
    fn manifest(&self, repo: &str, reference: &str) -> Vec<u8> {
        let out = curl(&[
            "-sf",
            "-H",
            "Accept: application/vnd.oci.image.manifest.v1+json",
            &format!("http://{}/v2/{repo}/manifests/{reference}", self.addr),
        ]);
        assert!(out.status.success(), "GET {repo}:{reference}");
        out.stdout
    }

    /// Put `body` as the manifest `tag` of `repo` (what an attacker with
    /// write access to the registry does).
    fn put_manifest(&self, repo: &str, tag: &str, body: &[u8]) {
        let file = self.dir.path().join("put.json");
        std::fs::write(&file, body).unwrap();
        let out = curl(&[
            "-sf",
            "-X",
            "PUT",
            "-H",
            "Content-Type: application/vnd.oci.image.manifest.v1+json",
            "--data-binary",
            &format!("@{}", file.display()),
            &format!("http://{}/v2/{repo}/manifests/{tag}", self.addr),
        ]);
        assert!(out.status.success(), "PUT {repo}:{tag}: {}", stderr(&out));
    }
}

fn curl(args: &[&str]) -> Output {
    Command::new("curl").args(args).output().expect("curl runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const PASSWORD: &str = "correct horse";

/// The CLI on `ws` with the signing key's password.
fn cli(ws: &Workspace, args: &[&str]) -> Output {
    toolhost_with_env(ws, args, None, &[("COSIGN_PASSWORD", PASSWORD)])
}

/// A registry, a workspace, and a key pair (`cosign`) made by `ext keygen`.
fn set_up() -> (Registry, Workspace, (String, String)) {
    let ws = Workspace::new();
    let keys = keygen(&ws, ws.config_home(), "cosign");
    (registry(), ws, keys)
}

/// wordcount and httpget published signed with `private`, as
/// `tools/<repo>:1.0` of each of `repos`, and a file for them in `ws`
/// (`docs/a.txt`); their references.
fn signed(registry: &Registry, ws: &Workspace, private: &str, repos: [&str; 2]) -> [String; 2] {
    ws.write_files(&[("docs/a.txt", "one\n")]);
    let mut examples = ["wordcount", "httpget"].into_iter();
    repos.map(|repo| {
        let reference = format!("{}:1.0", registry.oci(&format!("tools/{repo}")));
        publish(ws, examples.next().unwrap(), &reference, Some(private));
        reference
    })
}

/// A key pair made by `toolhost ext keygen` in `dir`: (private, public).
fn keygen(ws: &Workspace, dir: &Path, name: &str) -> (String, String) {
    let prefix = dir.join(name);
    let out = cli(ws, &["ext", "keygen", prefix.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let path = |ext: &str| prefix.with_extension(ext).display().to_string();
    (path("key"), path("pub"))
}

/// Publish the example `name` to `reference`, signed with `key` if given;
/// the manifest digest it printed.
#[track_caller]
fn publish(ws: &Workspace, name: &str, reference: &str, key: Option<&str>) -> String {
    let component = example(name);
    let mut args = vec!["ext", "publish", component.to_str().unwrap(), reference];
    if let Some(key) = key {
        args.extend(["--sign", key]);
    }
    let out = cli(ws, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("digest: "))
        .unwrap_or_else(|| panic!("no digest in {text}"))
        .to_string()
}

/// `ext add REFERENCE ARGS…`.
fn add(ws: &Workspace, reference: &str, args: &[&str]) -> Output {
    let mut all = vec!["ext", "add", reference];
    all.extend(args);
    cli(ws, &all)
}

/// `out` failed, its error saying each of `says`.
#[track_caller]
fn failed_saying(out: &Output, says: &[impl AsRef<str>]) {
    let err = stderr(out);
    assert!(!out.status.success(), "it succeeded: {}", stdout(out));
    for said in says.iter().map(AsRef::as_ref) {
        assert!(err.contains(said), "{said:?} is not in: {err}");
    }
}

/// `out` succeeded, its output saying `says`.
#[track_caller]
fn succeeded_saying(out: &Output, says: &str) {
    assert!(out.status.success(), "{}", stderr(out));
    assert!(
        stdout(out).contains(says),
        "{says:?} is not in: {}",
        stdout(out)
    );
}

/// `ext add REFERENCE ARGS…` fails saying each of `says`, and nothing of
/// `name` is installed.
#[track_caller]
fn add_refused(
    ws: &Workspace,
    reference: &str,
    args: &[&str],
    name: &str,
    says: &[impl AsRef<str>],
) {
    failed_saying(&add(ws, reference, args), says);
    nothing_installed(ws, name);
}

/// Nothing of `name` was installed: no component, no record, no grant.
#[track_caller]
fn nothing_installed(ws: &Workspace, name: &str) {
    let ext = ws.user_extensions();
    assert!(!ext.join(format!("{name}.wasm")).exists());
    assert!(!ext.join(format!("{name}.oci.json")).exists());
    let policy =
        std::fs::read_to_string(ws.user_config().join("toolhost.toml")).unwrap_or_default();
    assert!(
        !policy.contains(&format!("[extensions.{name}]")),
        "{policy}"
    );
}

/// The record kept beside the installed extension `name`.
fn record(ws: &Workspace, name: &str) -> Value {
    let file = ws.user_extensions().join(format!("{name}.oci.json"));
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

/// `into`'s record with its `part` (`signatures`, `bundles`) taken from
/// `from`'s, as someone who can write the extensions directory would.
fn move_record_part(ws: &Workspace, part: &str, from: &str, into: &str) {
    let mut moved = record(ws, into);
    moved[part] = record(ws, from)[part].clone();
    let file = ws.user_extensions().join(format!("{into}.oci.json"));
    std::fs::write(file, moved.to_string()).unwrap();
}

/// Why the extension `name` is refused at load.
fn refusal(ws: &Workspace, name: &str) -> String {
    let refused = listed_extension(ws, name)["refused"].clone();
    refused
        .as_str()
        .unwrap_or_else(|| panic!("{name} loads"))
        .to_string()
}

/// The extension `name` as `ext list --json` reports it.
fn listed_extension(ws: &Workspace, name: &str) -> Value {
    let list = json_out(&toolhost(ws, &["ext", "list", "--json"], None));
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not listed: {list}"))
}

#[test]
fn a_tampered_layer_is_refused_and_nothing_is_installed() {
    let (registry, ws, (private, public)) = set_up();
    let reference = format!("{}:1.0", registry.oci("tools/wordcount"));
    publish(&ws, "wordcount", &reference, Some(&private));
    // The component's blob changed in the registry's storage, its length kept.
    let manifest: Value =
        serde_json::from_slice(&registry.manifest("tools/wordcount", "1.0")).unwrap();
    let layer = registry.blob(manifest["layers"][0]["digest"].as_str().unwrap());
    let mut bytes = std::fs::read(&layer).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&layer, bytes).unwrap();

    let args = ["--key", &public, "--fs-read", "docs"];
    add_refused(&ws, &reference, &args, "wordcount", &[&reference, "digest"]);
}

#[test]
fn a_signature_by_another_key_is_refused_by_name() {
    let registry = registry();
    let ws = Workspace::new();
    let (private, _) = keygen(&ws, ws.config_home(), "publisher");
    let (_, impostor) = keygen(&ws, ws.config_home(), "expected");
    let reference = format!("{}:1.0", registry.oci("tools/wordcount"));
    let digest = publish(&ws, "wordcount", &reference, Some(&private));

    // Every spelling that reaches the component reaches the check: by tag,
    // by digest, by both; the spellings that could reach another artifact
    // are refused before any request.
    let repo = registry.oci("tools/wordcount");
    for spelling in [
        reference.clone(),
        format!("{repo}@{digest}"),
        format!("{repo}:1.0@{digest}"),
        format!("{repo}:other@{digest}"),
    ] {
        let says = [
            "its signature check failed",
            &format!("no signature by {impostor} over {digest}"),
            "a signature is not the key's",
        ];
        add_refused(&ws, &spelling, &["--key", &impostor], "wordcount", &says);
    }
    let upper = repo.replace("127.0.0.1", "LOCALHOST");
    for spelling in [
        format!("{upper}:1.0"),
        format!(
            "{repo}@{}",
            digest.to_uppercase().replace("SHA256", "sha256")
        ),
    ] {
        let says = ["is not a component reference"];
        add_refused(&ws, &spelling, &["--key", &impostor], "wordcount", &says);
    }
    // Unsigned: refused too when a key is named.
    let unsigned = format!("{}:unsigned", registry.oci("tools/wordcount"));
    publish(&ws, "wordcount", &unsigned, None);
    let says = ["it is not signed"];
    add_refused(&ws, &unsigned, &["--key", &impostor], "wordcount", &says);
}

#[test]
fn a_signature_moved_from_another_component_is_refused() {
    let (registry, ws, (private, public)) = set_up();
    // The publisher signed httpget; an attacker who can write the registry
    // pushes wordcount under the tool's name and copies httpget's signature
    // manifest to the new digest's signature tag.
    let signed = publish(
        &ws,
        "httpget",
        &format!("{}:1.0", registry.oci("tools/tool")),
        Some(&private),
    );
    let planted = publish(
        &ws,
        "wordcount",
        &format!("{}:2.0", registry.oci("tools/tool")),
        None,
    );
    let signature = registry.manifest("tools/tool", &format!("{}.sig", signed.replace(':', "-")));
    registry.put_manifest(
        "tools/tool",
        &format!("{}.sig", planted.replace(':', "-")),
        &signature,
    );

    let planted_tag = format!("{}:2.0", registry.oci("tools/tool"));
    let says = [format!("the key signed {signed}, another component")];
    add_refused(&ws, &planted_tag, &["--key", &public], "tool", &says);
}

#[test]
fn a_registry_serving_other_bytes_than_the_digest_names_is_refused() {
    let (registry, ws, (private, public)) = set_up();
    let tagged = format!("{}:1.0", registry.oci("tools/wordcount"));
    let digest = publish(&ws, "wordcount", &tagged, Some(&private));
    // The stored manifest rewritten: the registry now serves other bytes for
    // the digest (and for the tag that points at it).
    let stored = registry.blob(&digest);
    let text = std::fs::read_to_string(&stored).unwrap();
    std::fs::write(
        &stored,
        text.replace("\"schemaVersion\":2", "\"schemaVersion\": 2"),
    )
    .unwrap();

    for reference in [
        format!("{}@{digest}", registry.oci("tools/wordcount")),
        tagged,
    ] {
        let says = [&reference, &digest];
        add_refused(&ws, &reference, &["--key", &public], "wordcount", &says);
    }
}

/// The three commands of the book (docs/extensions.md): the publisher's `keygen` and
/// `publish --sign`, and the user's `add` with the publisher's key; by tag
/// and by digest. The first call does not compile (the install did).
#[test]
fn a_signed_component_installs_by_tag_and_by_digest_and_runs_under_its_grant() {
    let (registry, ws, (private, public)) = set_up();
    ws.write_files(&[("docs/a.txt", "one two three\n")]);
    let reference = format!("{}:1.0", registry.oci("examples/wordcount"));
    let digest = publish(&ws, "wordcount", &reference, Some(&private));

    let out = add(&ws, &reference, &["--key", &public, "--fs-read", "docs"]);
    succeeded_saying(
        &out,
        &format!("from {reference} (signature by {public} checked)"),
    );
    let kept = record(&ws, "wordcount");
    assert_eq!(kept["digest"], digest.as_str());
    assert_eq!(kept["source"], reference.as_str());
    let policy = std::fs::read_to_string(ws.user_config().join("toolhost.toml")).unwrap();
    assert!(
        policy.contains(&format!("source = \"{reference}\"")),
        "{policy}"
    );
    assert!(policy.contains(&format!("key = \"{public}\"")), "{policy}");

    let (text, is_error) = call_text(&ws, "wc", json!({"path": "docs"}));
    assert!(!is_error && text.contains('3'), "{text}");
    let ext = listed_extension(&ws, "wordcount");
    assert!(ext["refused"].is_null(), "{ext}");

    // Again by digest, under another name.
    let pinned = format!("{}@{digest}", registry.oci("examples/wordcount"));
    let out = add(&ws, &pinned, &["--name", "wc-pinned", "--key", &public]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(&ws, &["ext", "update", "wc-pinned"]);
    assert!(
        stdout(&out).contains("pinned by digest"),
        "{}",
        stdout(&out)
    );
}

/// Every start checks the signature again from the record beside the
/// component, with no network: a component changed on disk, a record whose
/// signature was swapped, and an extension with no record under
/// `[trust] require-signatures` are refused, each with its reason.
#[test]
fn every_start_checks_the_signature_offline_and_names_the_check_that_failed() {
    let (registry, ws, (private, public)) = set_up();
    let [wc, get] = signed(&registry, &ws, &private, ["wordcount", "httpget"]);
    for (reference, grant) in [(&wc, "--fs-read"), (&get, "--http")] {
        let out = add(&ws, reference, &["--key", &public, grant, "docs"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    drop(registry);
    let wordcount = listed_extension(&ws, "wordcount");
    assert!(wordcount["refused"].is_null(), "{wordcount}");

    // httpget's record with wordcount's signatures.
    move_record_part(&ws, "signatures", "wordcount", "httpget");
    let refused = refusal(&ws, "httpget");
    assert!(
        refused.starts_with("its signature check failed: no signature by")
            && refused.contains("another component"),
        "{refused}"
    );

    // wordcount changed on disk, its pin updated by someone who can write
    // the user's file: the signature still speaks of the old bytes.
    let ext = ws.user_extensions();
    let component = ext.join("wordcount.wasm");
    let mut bytes = std::fs::read(&component).unwrap();
    bytes.extend_from_slice(b"\0\0\0\0");
    std::fs::write(&component, &bytes).unwrap();
    let refused = refusal(&ws, "wordcount");
    assert!(
        refused.contains("the component is not the one its manifest names"),
        "{refused}"
    );

    // A plain drop-in has no record: under require-signatures it never
    // loads, and neither does an extension whose grant names no key.
    std::fs::copy(example("jsonquery"), ext.join("jsonquery.wasm")).unwrap();
    let policy = ws.user_config().join("toolhost.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(
        &policy,
        format!("[trust]\nrequire-signatures = true\n\n{text}"),
    )
    .unwrap();
    assert_eq!(
        refusal(&ws, "jsonquery"),
        "its signature check failed: [trust] require-signatures is on, and its grant names no \
         key or signed-by"
    );
}

/// `ext update` pulls what the tag points at now, checks it as `add` does
/// and shows what it requests; only `--yes` installs it, and an unsigned
/// newer component is refused.
#[test]
fn an_update_shows_what_the_new_component_requests_and_installs_only_when_told() {
    let (registry, ws, (private, public)) = set_up();
    let tag = format!("{}:stable", registry.oci("tools/tool"));
    let first = publish(&ws, "wordcount", &tag, Some(&private));
    let out = add(&ws, &tag, &["--key", &public, "--name", "tool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(&ws, &["ext", "update"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("tool: up to date ({tag} is {first})")),
        "{}",
        stdout(&out)
    );

    // The tag moves to httpget, signed: shown, not installed.
    let second = publish(&ws, "httpget", &tag, Some(&private));
    let out = cli(&ws, &["ext", "update", "tool"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("moved from {first} to {second}")),
        "{text}"
    );
    assert!(text.contains("requests: http (was fs-read)"), "{text}");
    assert!(text.contains("not installed"), "{text}");
    let pinned = |ws: &Workspace| record(ws, "tool")["digest"].as_str().unwrap().to_string();
    assert_eq!(pinned(&ws), first);
    let out = cli(&ws, &["ext", "update", "tool", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(pinned(&ws), second);
    // It loads as far as its grant: httpget asks for http, not granted.
    let refused = refusal(&ws, "tool");
    assert!(refused.contains("[extensions.tool] http"), "{refused}");

    // An unsigned component under the tag: refused, the installed one kept.
    publish(&ws, "wordcount", &tag, None);
    let out = cli(&ws, &["ext", "update", "tool", "--yes"]);
    failed_saying(&out, &["it is not signed"]);
    assert_eq!(pinned(&ws), second);
}

/// A signature binds to the grant, not to itself: a component and its
/// record replaced by another signed by the same key, with its own valid
/// record (another repository's, or the version the user updated away
/// from), once loaded at the next start. Now the start compares the record
/// with the grant's source, pin and superseded versions, and `ext update`
/// refuses a tag moved back to an older version.
#[test]
fn hostile_a_component_signed_by_the_same_key_never_loads_in_anothers_place() {
    let (registry, ws, (private, public)) = set_up();
    let [a, b] = signed(&registry, &ws, &private, ["a", "b"]);
    for (reference, name) in [(&a, "a"), (&b, "b")] {
        let out = add(
            &ws,
            reference,
            &["--key", &public, "--name", name, "--fs-read", "docs"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert!(listed_extension(&ws, "a")["refused"].is_null());

    // b's component and record copied over a's: genuine, signed, not a's.
    let ext = ws.user_extensions();
    for suffix in ["wasm", "oci.json"] {
        std::fs::copy(
            ext.join(format!("b.{suffix}")),
            ext.join(format!("a.{suffix}")),
        )
        .unwrap();
    }
    let refused = refusal(&ws, "a");
    assert!(
        refused.contains(&format!(
            "its record says it came from {b}, but its grant's source is {a}"
        )),
        "{refused}"
    );
    // b's record alone over a's: genuine, but another repository's.
    let out = cli(&ws, &["ext", "remove", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = add(
        &ws,
        &a,
        &["--key", &public, "--name", "a", "--fs-read", "docs"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::copy(ext.join("b.oci.json"), ext.join("a.oci.json")).unwrap();
    assert!(!refusal(&ws, "a").is_empty());
    drop(registry);
}

#[test]
fn hostile_a_rollback_to_the_version_updated_away_from_is_refused() {
    let (registry, ws, (private, public)) = set_up();
    let tag = format!("{}:stable", registry.oci("tools/tool"));
    let first = publish(&ws, "wordcount", &tag, Some(&private));
    let first_manifest = registry.manifest("tools/tool", &first);
    let out = add(&ws, &tag, &["--key", &public, "--name", "tool"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ext = ws.user_extensions();
    let old: Vec<(PathBuf, Vec<u8>)> = ["tool.wasm", "tool.oci.json"]
        .iter()
        .map(|f| (ext.join(f), std::fs::read(ext.join(f)).unwrap()))
        .collect();
    let second = publish(&ws, "cksum", &tag, Some(&private));
    let out = cli(&ws, &["ext", "update", "tool", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(record(&ws, "tool")["digest"], second.as_str());
    let policy = std::fs::read_to_string(ws.user_config().join("toolhost.toml")).unwrap();
    assert!(
        policy.contains(&format!("superseded = [\"{first}\"]")),
        "{policy}"
    );

    // The old files put back (a valid record, the same source, signed).
    for (path, bytes) in &old {
        std::fs::write(path, bytes).unwrap();
    }
    let refused = refusal(&ws, "tool");
    assert!(
        refused.contains(&format!(
            "it is {first}, a version its grant was updated away from"
        )),
        "{refused}"
    );

    // The registry's tag moved back to the old manifest: update refuses.
    registry.put_manifest("tools/tool", "stable", &first_manifest);
    let out = cli(&ws, &["ext", "update", "tool", "--yes"]);
    failed_saying(
        &out,
        &[format!(
            "the registry now serves {first}, a version tool was updated away from"
        )],
    );
}

/// The tests' own Sigstore (`tests/sigstore_fixture.py`): a trusted root
/// in `dir`, named as `[trust] sigstore-root` in `ws`'s user file.
fn sigstore_root(ws: &Workspace, dir: &Path) -> PathBuf {
    let out = fixture(&["root", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let root = dir.join("trusted_root.json");
    user_policy(
        ws,
        &format!("[trust]\nsigstore-root = \"{}\"\n", root.display()),
    );
    root
}

fn fixture(args: &[&str]) -> Output {
    Command::new(python_with_mcp())
        .arg(repo_root().join("tests/sigstore_fixture.py"))
        .args(args)
        .output()
        .expect("python runs")
}

const ISSUER: &str = "https://issuer.toolhost.test";

/// A keyless bundle from the tests' Sigstore over `digest` for `identity`
/// (`tamper`: one part broken), written to a file in `dir`.
fn bundle(dir: &Path, digest: &str, identity: &str, tamper: Option<&str>) -> PathBuf {
    let mut args = vec!["bundle", dir.to_str().unwrap(), digest, identity, ISSUER];
    if let Some(what) = tamper {
        args.extend(["--tamper", what]);
    }
    let out = fixture(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.join(format!("{}-{}.json", identity, tamper.unwrap_or("good")));
    std::fs::write(&file, &out.stdout).unwrap();
    file
}

/// A component published unsigned to `repo`, with `bundle_for(digest)`
/// attached as its keyless signature; its tag reference and digest.
fn published_with_bundle(
    registry: &Registry,
    ws: &Workspace,
    repo: &str,
    bundle_for: impl Fn(&str) -> PathBuf,
) -> (String, String) {
    let tag = format!("{}:1.0", registry.oci(repo));
    let digest = publish(ws, "wordcount", &tag, None);
    let pinned = format!("{}@{digest}", registry.oci(repo));
    let out = cli(
        ws,
        &[
            "ext",
            "attach",
            &pinned,
            bundle_for(&digest).to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    (tag, digest)
}

/// Keyless: a Fulcio-style certificate for the identity, its SCT, the
/// signature and its Rekor entry (signed timestamp, inclusion proof, signed
/// checkpoint), all checked offline against the trusted root the user
/// named; the wrong identity, and each broken part, refused by name.
#[test]
fn a_keyless_signature_of_the_named_identity_installs_and_every_broken_part_is_refused() {
    let registry = registry();
    let ws = Workspace::new();
    ws.write_files(&[("docs/a.txt", "one two\n")]);
    let sigstore = ws.config_home().join("sigstore");
    sigstore_root(&ws, &sigstore);
    let me = "dev@example.com";
    let signed_by = format!("{me}@{ISSUER}");

    let (tag, _) = published_with_bundle(&registry, &ws, "tools/wc", |d| {
        bundle(&sigstore, d, me, None)
    });
    let out = add(&ws, &tag, &["--signed-by", &signed_by, "--fs-read", "docs"]);
    succeeded_saying(&out, &format!("(signature of {signed_by} checked)"));
    let (text, is_error) = call_text(&ws, "wc", json!({"path": "docs"}));
    assert!(!is_error && text.contains('2'), "{text}");

    // Another identity is not the one named.
    let other = format!("other@example.com@{ISSUER}");
    let args = ["--name", "wc-other", "--signed-by", &other];
    let says = [
        "no keyless signature of other@example.com",
        "SubjectAltName",
    ];
    add_refused(&ws, &tag, &args, "wc-other", &says);

    // Each part of the proof, broken in turn.
    for (what, why) in [
        ("sct", "SCT"),
        ("set", "its log entry's signed timestamp is not the log's"),
        ("proof", "its log entry is not proven in the log"),
        ("checkpoint", "its log entry is not proven in the log"),
    ] {
        let repo = format!("broken/{what}");
        let (tag, _) = published_with_bundle(&registry, &ws, &repo, |d| {
            bundle(&sigstore, d, me, Some(what))
        });
        let name = format!("broken-{what}");
        let args = ["--name", &name, "--signed-by", &signed_by];
        add_refused(&ws, &tag, &args, &name, &[why]);
    }

    // A bundle for another digest is refused on attaching, and moved into
    // the record of an installed component it does not hold at start.
    let (other_tag, other_digest) = published_with_bundle(&registry, &ws, "tools/other", |d| {
        bundle(&sigstore, d, me, None)
    });
    let wrong = bundle(&sigstore, &other_digest, me, None);
    let wc_digest = record(&ws, "wc")["digest"].as_str().unwrap().to_string();
    let pinned = format!("{}@{wc_digest}", registry.oci("tools/wc"));
    let out = cli(&ws, &["ext", "attach", &pinned, wrong.to_str().unwrap()]);
    failed_saying(
        &out,
        &[&format!("the bundle signs another digest than {wc_digest}")],
    );
    let out = add(
        &ws,
        &other_tag,
        &["--name", "other", "--signed-by", &signed_by],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    drop(registry);
    move_record_part(&ws, "bundles", "other", "wc");
    let refused = refusal(&ws, "wc");
    assert!(
        refused.starts_with("its signature check failed: no keyless signature"),
        "{refused}"
    );
}

/// A registry stand-in on loopback that answers every request as `mode`
/// says, with a body that goes on for 1.5 GiB (or until the client leaves):
/// `endless` a manifest without a length, `declared` one that declares its
/// 1.5 GiB, `error` a 500 whose body is that long, `token` a 401 whose
/// token service answers that long. Its port.
fn hostile_registry(mode: &'static str) -> u16 {
    use std::io::{BufRead, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                const SIZE: u64 = 1536 << 20;
                let head = match (mode, request.contains("/token")) {
                    ("token", false) => format!(
                        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer \
                         realm=\"http://127.0.0.1:{port}/token\",service=\"x\"\r\n\
                         Content-Length: 0\r\n\r\n"
                    ),
                    ("declared", _) => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
                         Content-Length: {SIZE}\r\nConnection: close\r\n\r\n"
                    ),
                    ("error", _) => "HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n".into(),
                    _ => "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
                          Connection: close\r\n\r\n"
                        .into(),
                };
                let mut out = stream;
                if out.write_all(head.as_bytes()).is_err() || head.contains("401") {
                    return;
                }
                let chunk = vec![b'a'; 1 << 20];
                for _ in 0..(SIZE >> 20) {
                    if out.write_all(&chunk).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// Nothing from the network is read unbounded: a registry that answers a
/// manifest request with 1.5 GiB once took the host to 3.1 GiB before the
/// digest check refused it. Every answer is now bounded before its bytes
/// are kept: the manifest (declared or not), a registry's error, a token
/// service's answer; `ext add` fails naming the bound, and the host's peak
/// memory stays small.
#[test]
fn hostile_a_registry_answering_without_end_is_read_within_bounds() {
    for (mode, says) in [
        ("endless", "more than the 65536 expected"),
        (
            "declared",
            "the registry sent 1610612736 bytes, more than the 65536 expected",
        ),
        (
            "error",
            "the registry answered 500 Internal Server Error for its manifest: aaaa",
        ),
        ("token", "its token service: the registry sent more than"),
    ] {
        let port = hostile_registry(mode);
        let ws = Workspace::new();
        let reference = format!("oci://127.0.0.1:{port}/tools/x:1.0");
        let (out, peak_mib) = toolhost_peak_memory(&ws, &["ext", "add", &reference]);
        eprintln!("{mode}: peak resident memory of ext add: {peak_mib} MiB");
        failed_saying(&out, &[says]);
        assert!(peak_mib < 256, "{mode}: the host grew to {peak_mib} MiB");
        nothing_installed(&ws, "x");
    }
}

/// The end of the author's loop: in a project `ext new` made and `ext
/// build` built, `ext publish REFERENCE --sign KEY` pushes what it built;
/// another user adds it with the public key and calls it.
#[test]
fn a_project_publishes_what_it_built_signed_and_it_installs_by_its_key() {
    let (registry, ws, (private, public)) = set_up();
    let projects = tempfile::tempdir().unwrap();
    let in_dir = |dir: &Path, args: &[&str]| {
        let out = ws
            .cli()
            .current_dir(dir)
            .env("COSIGN_PASSWORD", PASSWORD)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    in_dir(projects.path(), &["ext", "new", "tally", "--lang", "c"]);
    let project = projects.path().join("tally");
    in_dir(&project, &["ext", "build"]);
    let reference = format!("{}:0.1.0", registry.oci("authors/tally"));
    let published = in_dir(
        &project,
        &["ext", "publish", &reference, "--sign", &private],
    );
    assert!(published.contains("signed"), "{published}");

    let user = Workspace::new();
    user.write("notes.txt", "a\nb\n");
    let out = add(&user, &reference, &["--key", &public, "--fs-read", "."]);
    succeeded_saying(
        &out,
        &format!("from {reference} (signature by {public} checked)"),
    );
    let (text, is_error) = call_text(&user, "tally", json!({"path": "notes.txt"}));
    assert_eq!(
        (text.as_str(), is_error),
        ("notes.txt: 2 lines, 4 bytes", false)
    );
}

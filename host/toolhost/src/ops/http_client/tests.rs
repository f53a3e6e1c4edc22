use super::address::*;
use super::body::*;
use super::*;
use bytes::Bytes;

fn grant(entry: &str) -> HttpGrant {
    HttpGrant::parse(entry).unwrap_or_else(|e| panic!("{entry}: {e}"))
}

fn target(url: &str) -> Target {
    Target::of(&url.parse().unwrap()).unwrap()
}

fn policy(entries: &[&str]) -> HttpPolicy {
    let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
    HttpPolicy::new(&entries, Duration::from_secs(30)).unwrap()
}

#[test]
fn entries_parse_with_https_and_its_port_by_default() {
    let g = grant("api.example.com");
    assert_eq!(
        (g.scheme, g.port, g.host),
        (
            Scheme::Https,
            443,
            HostPattern::Name("api.example.com".into())
        )
    );
    let g = grant("http://LocalHost:8080/");
    assert_eq!(
        (g.scheme, g.port, g.host),
        (Scheme::Http, 8080, HostPattern::Name("localhost".into()))
    );
    assert_eq!(grant("http://x.org").port, 80);
    assert_eq!(
        grant("*.example.org:8443").host,
        HostPattern::Subdomains("example.org".into())
    );
    assert_eq!(
        grant("127.0.0.1:9000").host,
        HostPattern::Ip("127.0.0.1".parse().unwrap())
    );
    assert_eq!(
        grant("[::1]:9000").host,
        HostPattern::Ip("::1".parse().unwrap())
    );
    assert_eq!(
        grant("https://example.com.").host,
        HostPattern::Name("example.com".into())
    );
}

#[test]
fn malformed_entries_say_what_is_wrong() {
    for (entry, why) in [
        ("", "is empty"),
        ("ftp://x.org", "only the schemes"),
        ("https://x.org/api", "not a path"),
        ("user@x.org", "credentials"),
        ("x.org:0", "port \"0\""),
        ("x.org:http", "port \"http\""),
        ("x.org:70000", "port \"70000\""),
        ("::1", "brackets"),
        ("[::1", "unclosed"),
        ("[nope]", "not an IPv6 address"),
        ("*.org", "two or more labels"),
        ("*", "may only begin"),
        ("a.*.org", "may only begin"),
        ("x_y.org", "not a host name"),
        ("1.2.3", "not a host name"),
        (":80", "names no host"),
        ("x .org", "whitespace"),
    ] {
        let err = HttpGrant::parse(entry).expect_err(entry);
        assert!(err.contains(why), "{entry:?}: {err}");
    }
}

#[test]
fn scheme_host_and_port_must_all_match() {
    let p = policy(&[
        "api.example.com",
        "http://localhost:8080",
        "*.example.org:8443",
    ]);
    let granted = |url: &str| p.grant_for(&target(url)).is_some();
    assert!(granted("https://api.example.com/v1"));
    assert!(granted("https://API.example.com:443/"));
    assert!(
        !granted("http://api.example.com/"),
        "https only without a scheme"
    );
    assert!(!granted("https://api.example.com:8443/"));
    assert!(!granted("https://evil.api.example.com/"));
    assert!(granted("http://localhost:8080/"));
    assert!(!granted("http://localhost:8081/"));
    assert!(!granted("https://localhost:8080/"));
    assert!(granted("https://a.example.org:8443/"));
    assert!(
        granted("https://a.b.example.org:8443/"),
        "one or more labels"
    );
    assert!(
        !granted("https://example.org:8443/"),
        "not the domain itself"
    );
    assert!(!granted("https://badexample.org:8443/"));
    assert!(
        !granted("https://127.0.0.1:8080/"),
        "an address is not a name"
    );
}

#[test]
fn a_refusal_names_the_target_as_an_entry_and_the_grants() {
    let p = policy(&["http://localhost:8080"]);
    let t = target("http://evil.test/x?secret=1");
    assert!(p.grant_for(&t).is_none());
    assert_eq!(t.url, "http://evil.test:80/x");
    assert_eq!(t.as_entry(), "http://evil.test:80");
    assert_eq!(p.granted_list(), "http://localhost:8080");
    assert_eq!(target("https://[::1]:9/").as_entry(), "[::1]:9");
}

#[test]
fn addresses_are_classified() {
    for (ip, kind) in [
        ("127.0.0.1", Some("a loopback address")),
        ("127.0.1.1", Some("a loopback address")),
        ("10.0.0.5", Some("a private address")),
        ("172.16.0.1", Some("a private address")),
        ("172.31.255.255", Some("a private address")),
        ("192.168.1.1", Some("a private address")),
        ("169.254.169.254", Some("a link-local address")),
        ("0.0.0.0", Some("an unspecified address")),
        ("100.64.0.1", Some("a shared (CGNAT) address")),
        ("100.127.255.255", Some("a shared (CGNAT) address")),
        ("255.255.255.255", Some("a broadcast address")),
        ("224.0.0.1", Some("a multicast address")),
        ("240.0.0.1", Some("a reserved address")),
        ("::", Some("an unspecified address")),
        ("::1", Some("a loopback address")),
        ("fc00::1", Some("a private address")),
        ("fd12:3456::1", Some("a private address")),
        ("fe80::1", Some("a link-local address")),
        ("ff02::1", Some("a multicast address")),
        ("::ffff:10.0.0.5", Some("a private address")),
        ("::ffff:127.0.0.1", Some("a loopback address")),
        ("::ffff:169.254.169.254", Some("a link-local address")),
        ("::127.0.0.1", Some("a loopback address")),
        ("64:ff9b::10.1.2.3", Some("a private address")),
        ("93.184.216.34", None),
        ("100.128.0.1", None),
        ("172.32.0.1", None),
        ("2606:4700::1111", None),
        ("::ffff:93.184.216.34", None),
    ] {
        assert_eq!(special(ip.parse().unwrap()), kind, "{ip}");
    }
}

#[test]
fn a_name_resolving_to_a_special_address_is_refused_unless_named_explicitly() {
    let p = policy(&[
        "api.example.com",
        "http://localhost:8080",
        "http://10.0.0.5:80",
    ]);
    let ips = |list: &[&str]| -> Vec<IpAddr> { list.iter().map(|s| s.parse().unwrap()).collect() };
    let t = target("https://api.example.com/");
    let g = p.grant_for(&t).unwrap();
    let err = p
        .route(g, &t, &ips(&["93.184.216.34", "10.0.0.5"]))
        .unwrap_err();
    assert_eq!(
        err.text,
        "api.example.com resolves to 10.0.0.5, a private address; grant the address itself to allow it"
    );
    let err = p.route(g, &t, &ips(&["::ffff:127.0.0.1"])).unwrap_err();
    assert!(err.text.contains("a loopback address"), "{}", err.text);
    assert_eq!(
        p.route(g, &t, &ips(&["93.184.216.34"])).unwrap(),
        ["93.184.216.34:443".parse().unwrap()]
    );
    assert!(p.route(g, &t, &[]).is_err());

    // `localhost` names loopback, and only loopback.
    let t = target("http://localhost:8080/");
    let g = p.grant_for(&t).unwrap();
    assert_eq!(
        p.route(g, &t, &ips(&["127.0.0.1", "::1"])).unwrap().len(),
        2
    );
    let err = p.route(g, &t, &ips(&["192.168.1.9"])).unwrap_err();
    assert_eq!(
        err.text,
        "localhost resolves to 192.168.1.9, which is not a loopback address"
    );

    // An address grant is the address connected to.
    let t = target("http://10.0.0.5/");
    let g = p.grant_for(&t).unwrap();
    assert_eq!(
        p.route(g, &t, &[]).unwrap(),
        ["10.0.0.5:80".parse().unwrap()]
    );
}

#[tokio::test]
async fn a_request_body_over_the_limit_fails_naming_the_limit() {
    let body = |bytes: usize| {
        http_body_util::Full::new(Bytes::from(vec![b'x'; bytes]))
            .map_err(|never| match never {})
            .boxed_unsync()
    };
    let limited = |bytes| Limited {
        inner: body(bytes),
        sent: 0,
        limit: 1024,
    };
    assert_eq!(
        limited(1024).collect().await.unwrap().to_bytes().len(),
        1024
    );
    let err = limited(1025).collect().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "HTTP request body size exceeds limit: 1024 bytes"
    );
}

/// A call that is never cancelled and records nothing.
struct Quiet(
    tokio_util::sync::CancellationToken,
    crate::ops::usage::Usage,
);

impl CallWatch for Quiet {
    fn cancel(&self) -> &tokio_util::sync::CancellationToken {
        &self.0
    }
    fn usage(&self) -> &crate::ops::usage::Usage {
        &self.1
    }
    fn asking(&self) -> Option<&dyn super::AskForHost> {
        None
    }
}

/// A body that carries a secret split across its chunks, and a trailer
/// that carries it whole, reaches the guest with neither.
#[tokio::test]
async fn a_secret_in_a_chunked_body_or_a_trailer_is_replaced() {
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "tok-0123456789").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let spec = SecretSpec {
        from: format!("file:{}", file.display()),
        ..Default::default()
    };
    let secret = Arc::new(HttpSecret::resolve("T", &spec, &[grant("example.com")]).unwrap());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf).await;
        let answer = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-echo\r\n\r\n\
                      8\r\nsaw tok-\r\n6\r\n012345\r\n5\r\n6789.\r\n0\r\nx-echo: Bearer tok-0123456789\r\n\r\n";
        s.write_all(answer.as_bytes()).await.unwrap();
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let request = http::Request::get("/")
        .header("host", "x")
        .header("te", "trailers")
        .body(http_body_util::Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let signals: Arc<dyn CallWatch> = Arc::new(Quiet(Default::default(), Default::default()));
    let body = Incoming {
        inner: response.into_body(),
        read: 0,
        limit: 1 << 20,
        idle: Duration::from_secs(10),
        timer: Box::pin(tokio::time::sleep(Duration::from_secs(10))),
        cancelled: Box::pin(signals.cancel().clone().cancelled_owned()),
        url: "http://x/".into(),
        signals: signals.clone(),
        done: false,
        redactor: secrets::Redactor::of(&[secret]),
    };
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned().unwrap_or_default();
    assert_eq!(collected.to_bytes(), "saw [secret T].".as_bytes());
    assert_eq!(trailers["x-echo"], "Bearer [secret T]");
}

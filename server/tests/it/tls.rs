//! TLS, as operators set it up for ZooKeeper 3.8: the same zoo.cfg lines
//! (`secureClientPort`, PEM `ssl.keyStore`/`ssl.trustStore`, `ssl.clientAuth`) on
//! Paddock and on Apache ZooKeeper, driven by `zkCli.sh` over Netty TLS and by kazoo
//! with `use_ssl=True`, whose transcripts must match; `x509` ACLs naming certificate
//! subjects; clients without a valid certificate refused; and an ensemble whose peer
//! links are mutual TLS (`sslQuorum=true`), which a stranger cannot join.
//!
//! Every certificate is made here, with rcgen: a CA, a server certificate for
//! 127.0.0.1, client certificates `CN=client,O=Paddock` and `CN=other,O=Paddock`,
//! and a stranger's CA and certificate.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use paddock_client::{Client, ConnectOptions, CreateMode, TlsOptions};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::support::{
    free_port, paddock, run_bounded, run_kazoo_script, zookeeper_installed,
    zookeeper_with_jvm_flags, Ensemble, Server, ZOOKEEPER_HOME,
};

/// Debian's zookeeper.jar names netty's handler in its class path but not the codec
/// and resolver jars its TLS code needs (`NoClassDefFoundError`: `ByteToMessageDecoder`,
/// `AddressResolverGroup`); they are installed with it (libnetty-java), so a second
/// `-cp` after the scripts' own adds them.
const NETTY_CLASS_PATH: &str = "-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:\
                                /usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar";

/// A CA and the PEM files of the certificates it signed, in a directory of their own.
struct Certs {
    dir: tempfile::TempDir,
}

/// One certificate authority, able to sign.
struct Authority {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("CA certificate");
        Authority { cert, key }
    }

    /// A PEM key store (certificate then PKCS#8 key, ZooKeeper's PEM layout) for a
    /// certificate good for 127.0.0.1 and localhost, as server and as client.
    fn key_store(&self, organization: &str, common_name: &str) -> String {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("params");
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, organization);
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("certificate");
        format!("{}{}", cert.pem(), key.serialize_pem())
    }
}

impl Certs {
    fn new() -> Certs {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = Authority::new("Paddock test CA");
        let stranger = Authority::new("Stranger CA");
        let files = [
            ("ca.pem", ca.cert.pem()),
            ("server.pem", ca.key_store("Paddock", "server")),
            ("client.pem", ca.key_store("Paddock", "client")),
            ("other.pem", ca.key_store("Paddock", "other")),
            ("stranger-ca.pem", stranger.cert.pem()),
            ("stranger.pem", stranger.key_store("Paddock", "client")),
        ];
        for (name, pem) in files {
            std::fs::write(dir.path().join(name), pem).expect("write PEM");
        }
        Certs { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The zoo.cfg lines of a secure client port, identical for both servers but the
    /// port number.
    fn client_port_lines(&self, port: u16, client_auth: &str) -> String {
        format!(
            "secureClientPort={port}\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\nssl.trustStore.type=PEM\n\
             ssl.clientAuth={client_auth}\n",
            self.path("server.pem").display(),
            self.path("ca.pem").display(),
        )
    }
}

/// Paddock and ZooKeeper with the same TLS lines; their secure ports.
fn both_servers(certs: &Certs, client_auth: &str) -> ((Server, u16), (Server, u16)) {
    let (ours_port, theirs_port) = (free_port(), free_port());
    let ours = paddock(&certs.client_port_lines(ours_port, client_auth));
    let theirs = zookeeper_with_jvm_flags(
        &certs.client_port_lines(theirs_port, client_auth),
        NETTY_CLASS_PATH,
    );
    ((ours, ours_port), (theirs, theirs_port))
}

// zkCli splits an ACL list at commas, so the node's ACL is `auth`: the caller's
// authenticated ids, here its certificate's `x509:CN=client,O=Paddock`.
const ZKCLI_WRITE: &str = "\
create /tls secret auth::cdrwa
getAcl /tls
get /tls
create /tls/child c
ls /tls
quit
";

const ZKCLI_READ: &str = "\
get /tls
ls /tls
quit
";

/// zkCli.sh over TLS (Netty, PEM stores) to `port`, presenting `key_store`.
fn zkcli_tls(certs: &Certs, port: u16, key_store: &str, session: &str) -> Vec<String> {
    assert!(
        zookeeper_installed(),
        "zkCli.sh is not installed: run scripts/test.sh, which installs it \
         (or apt-get install zookeeper)"
    );
    let flags = format!(
        "{NETTY_CLASS_PATH} -Dzookeeper.client.secure=true \
         -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty \
         -Dzookeeper.ssl.keyStore.location={} -Dzookeeper.ssl.keyStore.type=PEM \
         -Dzookeeper.ssl.trustStore.location={} -Dzookeeper.ssl.trustStore.type=PEM",
        certs.path(key_store).display(),
        certs.path("ca.pem").display()
    );
    let mut child = Command::new(Path::new(ZOOKEEPER_HOME).join("bin/zkCli.sh"))
        .arg("-server")
        .arg(format!("127.0.0.1:{port}"))
        .env("CLIENT_JVMFLAGS", flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkCli.sh");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(session.as_bytes())
        .expect("commands");
    let output = wait_bounded(child, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let varying = [
        "cZxid",
        "mZxid",
        "pZxid",
        "ctime",
        "mtime",
        "SLF4J",
        "WATCHER",
        "WatchedEvent",
        "JLine",
        "Connecting to",
    ];
    stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| !l.trim().is_empty() && !varying.iter().any(|v| l.contains(v)))
        .map(str::to_owned)
        .collect()
}

fn wait_bounded(child: std::process::Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| child.wait_with_output());
        let deadline = std::time::Instant::now() + limit;
        while !waiter.is_finished() {
            if std::time::Instant::now() > deadline {
                let _ = run_bounded(
                    Command::new("kill").arg("-9").arg(pid.to_string()),
                    Duration::from_secs(5),
                );
                panic!("the client ran longer than {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        waiter.join().expect("join").expect("output")
    })
}

/// zkCli.sh over TLS, the same session against both servers: a node whose ACL names
/// the client certificate's subject is usable by that client and refused to another
/// certificate, on Paddock as on ZooKeeper.
#[test]
fn zkcli_over_tls_and_x509_acls_match_apache_zookeeper() {
    let certs = Certs::new();
    let ((ours, ours_port), (theirs, theirs_port)) = both_servers(&certs, "need");
    let run = |port, key_store, session| {
        std::thread::scope(|s| {
            let theirs = s.spawn(|| zkcli_tls(&certs, theirs_port, key_store, session));
            let ours = zkcli_tls(&certs, port, key_store, session);
            (ours, theirs.join().expect("zookeeper run"))
        })
    };
    let (written, written_zk) = run(ours_port, "client.pem", ZKCLI_WRITE);
    assert_eq!(
        written, written_zk,
        "Paddock (left) and ZooKeeper (right) differ"
    );
    let text = written.join("\n");
    for expected in [
        "Created /tls",
        "'x509,'CN=client%2CO=Paddock",
        "secret",
        "[child]",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let (other, other_zk) = run(ours_port, "other.pem", ZKCLI_READ);
    assert_eq!(
        other, other_zk,
        "Paddock (left) and ZooKeeper (right) differ"
    );
    let text = other.join("\n");
    assert!(
        text.contains("Insufficient permission : /tls"),
        "CN=other read the node:\n{text}"
    );
    drop((ours, theirs));
}

fn kazoo_tls(port: u16, certs: &Certs, scenario: &str, key_store: Option<&str>) -> Vec<String> {
    let host = format!("127.0.0.1:{port}");
    let ca = certs.path("ca.pem").to_string_lossy().into_owned();
    let mut args = vec![host.as_str(), ca.as_str(), scenario];
    let key_store = key_store.map(|k| certs.path(k).to_string_lossy().into_owned());
    args.extend(key_store.as_deref());
    run_kazoo_script("tls.py", &args, Duration::from_secs(60))
}

/// kazoo with `use_ssl=True`: with the client certificate it creates and reads an
/// x509-protected node; another certificate is refused the node; without a
/// certificate it cannot connect at all (`ssl.clientAuth=need`). Same on both servers.
#[test]
fn kazoo_over_tls_matches_apache_zookeeper() {
    let certs = Certs::new();
    let ((ours, ours_port), (theirs, theirs_port)) = both_servers(&certs, "need");
    for (scenario, key_store, expected) in [
        ("write", Some("client.pem"), "get b'secret'"),
        ("read", Some("other.pem"), "error NoAuthError"),
        ("read", None, "connect failed"),
    ] {
        let (mine, zk) = std::thread::scope(|s| {
            let zk = s.spawn(|| kazoo_tls(theirs_port, &certs, scenario, key_store));
            let mine = kazoo_tls(ours_port, &certs, scenario, key_store);
            (mine, zk.join().expect("zookeeper run"))
        });
        assert_eq!(
            mine, zk,
            "{scenario} {key_store:?}: Paddock (left), ZooKeeper (right)"
        );
        assert!(
            mine.iter().any(|l| l == expected),
            "{scenario} {key_store:?}: missing {expected:?} in {mine:?}"
        );
    }
    assert!(
        ours.log_text()
            .contains("refused a client: TLS handshake failed"),
        "the refusal is not logged:\n{}",
        ours.log_text()
    );
    drop(theirs);
}

async fn connect(port: u16, tls: TlsOptions) -> Result<Client, paddock_client::Error> {
    let options = ConnectOptions {
        connect_timeout: Some(Duration::from_secs(5)),
        tls: Some(tls),
        ..ConnectOptions::with_session_timeout(Duration::from_secs(5))
    };
    Client::connect(&format!("127.0.0.1:{port}"), options).await
}

/// The Rust client over TLS, and the clients a `need` port refuses: no certificate, a
/// certificate from a CA the server does not trust, and plain TCP.
#[tokio::test(flavor = "multi_thread")]
async fn clients_without_a_valid_certificate_are_refused() {
    let certs = Certs::new();
    let port = free_port();
    let server = paddock(&certs.client_port_lines(port, "need"));
    let ca = certs.path("ca.pem");
    let trusted = TlsOptions::from_pem(
        &ca,
        Some((certs.path("client.pem"), certs.path("client.pem"))),
    )
    .expect("client TLS");
    let client = connect(port, trusted)
        .await
        .expect("a trusted client connects");
    client
        .create("/rust-tls", b"x", CreateMode::Persistent)
        .await
        .expect("create over TLS");
    assert_eq!(
        client.get_data("/rust-tls").await.expect("get").0.as_ref(),
        b"x"
    );
    client.close().await.expect("close");

    let anonymous = TlsOptions::from_pem(&ca, None::<(PathBuf, PathBuf)>).expect("client TLS");
    assert!(connect(port, anonymous).await.is_err(), "no certificate");
    let stranger = TlsOptions::from_pem(
        &ca,
        Some((certs.path("stranger.pem"), certs.path("stranger.pem"))),
    )
    .expect("client TLS");
    assert!(
        connect(port, stranger).await.is_err(),
        "an untrusted CA's certificate"
    );
    // A plain client's connect request is not a TLS handshake: no answer, closed.
    let plain = crate::support::RawClient::try_connect(([127, 0, 0, 1], port).into());
    assert!(plain.is_none(), "a plain client was served on the TLS port");
    // The server does not trust the stranger CA, nor does a client trusting only the
    // stranger CA trust the server.
    let wrong_ca = TlsOptions::from_pem(certs.path("stranger-ca.pem"), None::<(PathBuf, PathBuf)>)
        .expect("client TLS");
    assert!(connect(port, wrong_ca).await.is_err(), "server not trusted");
    let log = server.log_text();
    assert!(
        log.matches("refused a client: TLS handshake failed")
            .count()
            >= 2,
        "refusals not logged:\n{log}"
    );
}

/// `ssl.clientAuth=want` serves clients without a certificate (without an x509
/// identity), and `X509AuthenticationProvider.superUser` makes a certificate's holder
/// the super user.
#[tokio::test(flavor = "multi_thread")]
async fn want_serves_anonymous_clients_and_the_x509_super_user_passes_every_acl() {
    let certs = Certs::new();
    let port = free_port();
    let server = paddock(&format!(
        "{}X509AuthenticationProvider.superUser=CN=other,O=Paddock\n",
        certs.client_port_lines(port, "want")
    ));
    let ca = certs.path("ca.pem");
    let identity = |name: &str| Some((certs.path(name), certs.path(name)));
    let owner = connect(
        port,
        TlsOptions::from_pem(&ca, identity("client.pem")).unwrap(),
    )
    .await
    .expect("owner connects");
    let acl = vec![paddock_client::Acl {
        perms: paddock_client::perms::ALL,
        id: paddock_client::Id::new("x509", "CN=client,O=Paddock"),
    }];
    owner
        .create(
            "/owned",
            b"mine",
            paddock_client::CreateOptions::new(CreateMode::Persistent).acl(acl),
        )
        .await
        .expect("create");
    let anonymous = connect(
        port,
        TlsOptions::from_pem(&ca, None::<(PathBuf, PathBuf)>).unwrap(),
    )
    .await
    .expect("want serves a client without a certificate");
    assert!(matches!(
        anonymous.get_data("/owned").await,
        Err(paddock_client::Error::Keeper(
            paddock_client::ErrorCode::NoAuth
        ))
    ));
    let root = connect(
        port,
        TlsOptions::from_pem(&ca, identity("other.pem")).unwrap(),
    )
    .await
    .expect("super user connects");
    assert_eq!(
        root.get_data("/owned")
            .await
            .expect("super reads")
            .0
            .as_ref(),
        b"mine"
    );
    drop(server);
}

/// Three servers whose peer links are mutual TLS elect a leader and replicate; a
/// stranger — plain TCP, or TLS with a certificate from another CA — is refused on
/// the peer port, and logged.
#[test]
fn a_tls_ensemble_replicates_and_refuses_strangers() {
    let certs = Certs::new();
    let lines = format!(
        "sslQuorum=true\nssl.quorum.keyStore.location={}\nssl.quorum.keyStore.type=PEM\n\
         ssl.quorum.trustStore.location={}\nssl.quorum.trustStore.type=PEM\n",
        certs.path("server.pem").display(),
        certs.path("ca.pem").display()
    );
    let ensemble = Ensemble::start_with(3, 0, &lines);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let first = Client::connect(&ensemble.servers[0].hosts(), ConnectOptions::default())
            .await
            .expect("connect");
        first
            .create("/replicated", b"over TLS", CreateMode::Persistent)
            .await
            .expect("write");
        for server in &ensemble.servers[1..] {
            let other = Client::connect(&server.hosts(), ConnectOptions::default())
                .await
                .expect("connect");
            other.sync("/replicated").await.expect("sync");
            assert_eq!(
                other
                    .get_data("/replicated")
                    .await
                    .expect("read")
                    .0
                    .as_ref(),
                b"over TLS"
            );
        }
    });
    let target = &ensemble.servers[0];
    let peer_port = peer_port_of(target);
    let from = target.log_len();
    // A plain stranger sends a hello claiming to be server 2, then bytes.
    if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", peer_port)) {
        let _ = stream.write_all(&[0, 0, 0, 10, 3, 0, 0, 0, 0, 0, 0, 0, 2, 1]);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let mut buf = [0u8; 64];
        let _ = stream.read(&mut buf);
    }
    assert!(
        target.wait_for_log("refused a peer connection", from, Duration::from_secs(20)),
        "a plain stranger was not refused:\n{}",
        target.log_text()
    );
    let from = target.log_len();
    runtime.block_on(async {
        let stranger = TlsOptions::from_pem(
            certs.path("ca.pem"),
            Some((certs.path("stranger.pem"), certs.path("stranger.pem"))),
        )
        .expect("stranger TLS");
        // The stranger's TLS handshake is refused: no connect reply ever comes.
        let refused = connect(peer_port, stranger).await;
        assert!(refused.is_err());
    });
    assert!(
        target.wait_for_log(
            "refused a peer connection: TLS handshake failed",
            from,
            Duration::from_secs(20)
        ),
        "a stranger with another CA's certificate was not refused:\n{}",
        target.log_text()
    );
}

/// Server 1's peer port, from its zoo.cfg.
fn peer_port_of(server: &Server) -> u16 {
    let config = server.log.with_file_name("zoo.cfg");
    let text = std::fs::read_to_string(config).expect("zoo.cfg");
    text.lines()
        .find_map(|line| line.strip_prefix("server.1=127.0.0.1:"))
        .and_then(|rest| rest.split(':').next())
        .and_then(|port| port.parse().ok())
        .expect("server.1's peer port")
}

/// `portUnification=true`: the plain client port also takes TLS clients (told apart by
/// the first byte, a TLS handshake record), as ZooKeeper's unified port does.
#[tokio::test(flavor = "multi_thread")]
async fn a_unified_port_serves_plain_and_tls_clients() {
    let certs = Certs::new();
    let server = paddock(&format!(
        "portUnification=true\nssl.keyStore.location={}\nssl.trustStore.location={}\n",
        certs.path("server.pem").display(),
        certs.path("ca.pem").display()
    ));
    let port = server.addr.port();
    let tls = TlsOptions::from_pem(
        certs.path("ca.pem"),
        Some((certs.path("client.pem"), certs.path("client.pem"))),
    )
    .expect("client TLS");
    let secure = connect(port, tls)
        .await
        .expect("a TLS client on the plain port");
    secure
        .create("/unified", b"tls", CreateMode::Persistent)
        .await
        .expect("create over TLS");
    let plain = Client::connect(&server.hosts(), ConnectOptions::default())
        .await
        .expect("a plain client on the same port");
    assert_eq!(
        plain.get_data("/unified").await.expect("read").0.as_ref(),
        b"tls"
    );
    assert!(server
        .log_text()
        .contains("authenticated x509 id \"CN=client,O=Paddock\""));
}

/// Not a check but a measurement: what TLS adds to a client's round trips and
/// connects, on one unified port (`portUnification=true`) so both kinds meet the same
/// server. `cargo test -p paddock-server --release --test it -- --ignored --nocapture
/// tls_round_trip_cost`
#[tokio::test(flavor = "multi_thread")]
#[ignore]
async fn tls_round_trip_cost() {
    let certs = Certs::new();
    let server = paddock(&format!(
        "portUnification=true\nssl.keyStore.location={}\nssl.trustStore.location={}\n",
        certs.path("server.pem").display(),
        certs.path("ca.pem").display()
    ));
    let tls = TlsOptions::from_pem(
        certs.path("ca.pem"),
        Some((certs.path("client.pem"), certs.path("client.pem"))),
    )
    .expect("client TLS");
    let percentile = |samples: &mut Vec<Duration>, p: usize| {
        samples.sort();
        samples[(samples.len() - 1) * p / 100]
    };
    for (name, tls) in [("plain", None), ("TLS", Some(tls))] {
        let options = || ConnectOptions {
            tls: tls.clone(),
            ..ConnectOptions::default()
        };
        let mut connects = Vec::new();
        for _ in 0..50 {
            let started = std::time::Instant::now();
            let client = Client::connect(&server.hosts(), options())
                .await
                .expect("connect");
            connects.push(started.elapsed());
            client.close().await.expect("close");
        }
        let client = Client::connect(&server.hosts(), options())
            .await
            .expect("connect");
        let _ = client
            .create("/rt", &[7u8; 255], CreateMode::Persistent)
            .await;
        let mut reads = Vec::new();
        for _ in 0..5000 {
            let started = std::time::Instant::now();
            client.get_data("/rt").await.expect("get");
            reads.push(started.elapsed());
        }
        let started = std::time::Instant::now();
        let batch: Vec<_> = (0..20_000).map(|_| client.get_data("/rt")).collect();
        for read in futures::future::join_all(batch).await {
            read.expect("get");
        }
        let pipelined = 20_000.0 / started.elapsed().as_secs_f64();
        println!(
            "{name}: connect p50 {:?} p99 {:?}; getData of 255 B, one at a time p50 {:?} \
             p99 {:?}; 20,000 pipelined {pipelined:.0}/s",
            percentile(&mut connects, 50),
            percentile(&mut connects, 99),
            percentile(&mut reads, 50),
            percentile(&mut reads, 99),
        );
    }
}

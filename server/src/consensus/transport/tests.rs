use super::*;

use raft::prelude::Entry;

fn hello_frame(id: u64, has_state: Option<bool>) -> Bytes {
    let mut out = BytesMut::new();
    encode(&mut out, KIND_HELLO, |b| {
        b.put_u64(id);
        if let Some(flag) = has_state {
            b.put_u8(u8::from(flag));
        }
    });
    out.advance(4);
    out.freeze()
}

#[test]
fn raft_messages_with_entries_round_trip_after_other_frames() {
    // Encoded in place at the end of a buffer that already holds a frame, with a
    // payload bigger than protobuf's own 8 KiB write buffer.
    let entry = |index: u64, len: usize| raft::prelude::Entry {
        index,
        term: 3,
        data: vec![index as u8; len].into(),
        context: b"ctx".to_vec().into(),
        ..Default::default()
    };
    let message = Message {
        msg_type: MessageType::MsgAppend,
        to: 2,
        from: 1,
        term: 3,
        log_term: 3,
        index: 9,
        commit: 8,
        entries: vec![entry(10, 255), entry(11, 20_000), entry(12, 0)].into(),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    encode_ack(&mut out, 1, 2);
    encode_raft(&mut out, &message);
    encode_raft(&mut out, &Message::default());
    let mut from = Some(1);
    let ack = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(ack, Some(PeerEvent::Ack { .. })));
    let raft = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(raft, Some(PeerEvent::Raft(m)) if m == message));
    let empty = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(empty, Some(PeerEvent::Raft(m)) if m == Message::default()));
    assert!(out.is_empty());
}

#[test]
fn frames_round_trip() {
    let mut out = BytesMut::new();
    let message = Message {
        to: 2,
        term: 7,
        ..Default::default()
    };
    encode_raft(&mut out, &message);
    let report = LivenessReport {
        seq: 9,
        sessions: vec![(1, 20), (-2, 0)],
    };
    encode_report(&mut out, &report);
    encode_ack(&mut out, 9, 40);
    let mut from = Some(3);
    let raft = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(raft, Some(PeerEvent::Raft(m)) if m == message));
    let got = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(got, Some(PeerEvent::Report { from: 3, report: r }) if r == report));
    let ack = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(
        ack,
        Some(PeerEvent::Ack {
            from: 3,
            seq: 9,
            commit: 40
        })
    ));
    assert!(next_frame(&mut out).unwrap().is_none());
}

#[test]
fn nothing_is_taken_before_the_hello_and_the_hello_says_who() {
    let mut out = BytesMut::new();
    encode_ack(&mut out, 1, 1);
    let mut from = None;
    let frame = next_frame(&mut out).unwrap().unwrap();
    assert!(decode(frame, &mut from).is_err());
    let hello = decode(hello_frame(4, Some(false)), &mut from).unwrap();
    assert!(matches!(
        hello,
        Some(PeerEvent::Hello {
            from: 4,
            has_state: false
        })
    ));
    assert_eq!(from, Some(4));
    // A second hello on the same connection is malformed.
    assert!(decode(hello_frame(4, None), &mut from).is_err());
    // An older peer's 8-byte hello counts as "has state" (the careful reading).
    let mut fresh = None;
    let hello = decode(hello_frame(5, None), &mut fresh).unwrap();
    assert!(matches!(
        hello,
        Some(PeerEvent::Hello {
            has_state: true,
            ..
        })
    ));
}

#[test]
fn oversized_frames_are_refused() {
    let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xff][..]);
    assert!(next_frame(&mut buf).is_err());
}

/// A peer whose connection is stuck (here: it accepts and never reads, as a cut link
/// looks once the buffers fill) must be abandoned and reconnected in bounded time, not
/// left in TCP back-off: before links had write and unacked-data limits, a healed
/// follower was heard from again only after 11–47 s.
#[tokio::test]
async fn a_stuck_link_is_reconnected() {
    let tempdir = tempfile::tempdir().unwrap();
    let stuck = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = stuck.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let timing = LinkTiming::from_tick_time(Duration::from_millis(200));
    let me = Identity {
        id: 1,
        has_state: Arc::new(AtomicBool::new(true)),
        tls: None,
    };
    let transport = Transport::start(
        me,
        "127.0.0.1:0".parse().unwrap(),
        HashMap::from([(2, addr)]),
        timing,
        SnapshotDir::open(tempdir.path()).unwrap(),
        |_| {},
        None,
        shutdown.clone(),
    )
    .await
    .unwrap();
    let (first, _) = tokio::time::timeout(Duration::from_secs(10), stuck.accept())
        .await
        .expect("the link connects")
        .unwrap();
    // Fill the socket buffers: 64 messages of 1 MiB, more than any kernel buffers.
    let big = Entry {
        data: vec![7u8; 1024 * 1024].into(),
        ..Default::default()
    };
    let messages: Vec<Message> = (0..64)
        .map(|_| Message {
            to: 2,
            entries: vec![big.clone()].into(),
            ..Default::default()
        })
        .collect();
    transport.send(messages);
    let second = tokio::time::timeout(Duration::from_secs(20), stuck.accept()).await;
    assert!(second.is_ok(), "the stuck link was never abandoned");
    drop(first);
    shutdown.cancel();
}

/// A receiver drops a connection that has been silent for longer than its limit (a
/// live sender always writes keepalives), so a half-open link from a vanished peer does
/// not linger.
#[tokio::test]
async fn a_silent_connection_is_dropped_by_the_receiver() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (mut client, accepted) =
        tokio::join!(async { TcpStream::connect(addr).await.unwrap() }, async {
            listener.accept().await.unwrap().0
        });
    let limit = Duration::from_millis(200);
    let tempdir = tempfile::tempdir().unwrap();
    let snapshots = SnapshotDir::open(tempdir.path()).unwrap();
    let receiver = Receiver {
        deliver: &|_| {},
        silence_limit: limit,
        snapshots: &snapshots,
        hand_over: false,
    };
    let received = tokio::time::timeout(Duration::from_secs(10), receiver.run(Box::new(accepted)))
        .await
        .expect("the receiver gave up on the silent peer");
    assert!(matches!(received, Err(ReceiveError::Silent(_))));
    let mut byte = [0u8; 1];
    // The receiver closed its end.
    let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))));
}

/// Two transports on 127.0.0.1, each with its own snapshot dir; events are collected.
struct Pair {
    sender: Transport,
    sender_events: std::sync::mpsc::Receiver<PeerEvent>,
    receiver_events: std::sync::mpsc::Receiver<PeerEvent>,
    sender_dir: SnapshotDir,
    receiver_dir: SnapshotDir,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    shutdown: CancellationToken,
}

async fn pair() -> Pair {
    pair_with(None).await
}

/// Addresses for servers 1 and 2 on 127.0.0.1 (free a moment ago), and the peer map.
fn two_peers() -> ([SocketAddr; 2], HashMap<u64, SocketAddr>) {
    let ports = [
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    ];
    let addrs = [
        ports[0].local_addr().unwrap(),
        ports[1].local_addr().unwrap(),
    ];
    (addrs, HashMap::from([(1, addrs[0]), (2, addrs[1])]))
}

/// [`pair`], with TLS peer links when `certs` are given.
async fn pair_with(certs: Option<&PeerCerts>) -> Pair {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sender_dir = SnapshotDir::open(dirs.0.path()).unwrap();
    let receiver_dir = SnapshotDir::open(dirs.1.path()).unwrap();
    let shutdown = CancellationToken::new();
    let timing = LinkTiming::from_tick_time(Duration::from_millis(500));
    let (addrs, peers) = two_peers();
    let identity = |id| Identity {
        id,
        has_state: Arc::new(AtomicBool::new(true)),
        tls: certs.map(|certs| certs.tls("peer.pem")),
    };
    let (tx, sender_events) = std::sync::mpsc::channel();
    let tx = parking_lot::Mutex::new(tx);
    let sender = Transport::start(
        identity(1),
        addrs[0],
        peers.clone(),
        timing,
        sender_dir.clone(),
        move |event| {
            let _ = tx.lock().send(event);
        },
        None,
        shutdown.clone(),
    )
    .await
    .unwrap();
    let (tx, receiver_events) = std::sync::mpsc::channel();
    let tx = parking_lot::Mutex::new(tx);
    Transport::start(
        identity(2),
        addrs[1],
        peers,
        timing,
        receiver_dir.clone(),
        move |event| {
            let _ = tx.lock().send(event);
        },
        None,
        shutdown.clone(),
    )
    .await
    .unwrap();
    Pair {
        sender,
        sender_events,
        receiver_events,
        sender_dir,
        receiver_dir,
        _dirs: dirs,
        shutdown,
    }
}

fn snapshot_message(index: u64) -> Message {
    let mut message = Message {
        to: 2,
        from: 1,
        term: 3,
        ..Default::default()
    };
    message.set_msg_type(MessageType::MsgSnapshot);
    message.mut_snapshot().mut_metadata().index = index;
    message.mut_snapshot().mut_metadata().term = 3;
    message
}

/// Waits (bounded) for the first event `pick` accepts.
async fn next_event<T>(
    events: &std::sync::mpsc::Receiver<PeerEvent>,
    mut pick: impl FnMut(PeerEvent) -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(std::time::Instant::now() < deadline, "no such event");
        match events.try_recv() {
            Ok(event) => {
                if let Some(found) = pick(event) {
                    return found;
                }
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// A snapshot bigger than any peer frame (64 MiB) still reaches the follower: it goes
/// in chunks, on its own connection, and arrives verified under its final name; the
/// sender learns it was delivered (raft is told, or it would never send again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_larger_than_a_frame_streams_to_the_follower() {
    streams_a_large_snapshot(pair().await).await;
}

/// The same over TLS peer links (`sslQuorum=true`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_streams_over_tls_peer_links() {
    let certs = PeerCerts::new();
    streams_a_large_snapshot(pair_with(Some(&certs)).await).await;
}

async fn streams_a_large_snapshot(pair: Pair) {
    let payload: Vec<u8> = (0..(MAX_PEER_FRAME + 3 * SNAPSHOT_CHUNK))
        .map(|i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes()[7])
        .collect();
    let mut metadata = snapshot_message(77).get_snapshot().get_metadata().clone();
    metadata.set_conf_state(raft::prelude::ConfState::from((vec![1, 2], vec![])));
    pair.sender_dir
        .create(&metadata, |w| w.write_all(&payload))
        .unwrap();
    let mut message = snapshot_message(77);
    message.mut_snapshot().set_metadata(metadata);
    pair.sender.send(vec![message]);
    let (index, received) = next_event(&pair.receiver_events, |event| match event {
        PeerEvent::Snapshot {
            message,
            snapshot,
            prepared,
        } => {
            let _ = prepared.send(true);
            Some((message.get_snapshot().get_metadata().index, snapshot))
        }
        _ => None,
    })
    .await;
    assert_eq!(index, 77);
    assert_eq!(received.payload.len(), payload.len());
    assert!(received.payload == payload[..]);
    let on_disk = pair.receiver_dir.load_index(77).unwrap().unwrap();
    assert!(on_disk.payload == payload[..]);
    let sent = next_event(&pair.sender_events, |event| match event {
        PeerEvent::SnapshotSent { to: 2, ok } => Some(ok),
        _ => None,
    })
    .await;
    assert!(sent);
    pair.shutdown.cancel();
}

/// A damaged snapshot file is refused by the receiver (it checks the file's own
/// CRC), nothing is handed to raft there, and the sender reports a failure so raft
/// tries again later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_snapshot_is_refused_and_reported() {
    let pair = pair().await;
    let metadata = snapshot_message(9).get_snapshot().get_metadata().clone();
    let file = pair
        .sender_dir
        .create(&metadata, |w| w.write_all(&[5u8; 4096]))
        .unwrap();
    let mut bytes = std::fs::read(&file.path).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&file.path, bytes).unwrap();
    pair.sender.send(vec![snapshot_message(9)]);
    let sent = next_event(&pair.sender_events, |event| match event {
        PeerEvent::SnapshotSent { to: 2, ok } => Some(ok),
        _ => None,
    })
    .await;
    assert!(!sent);
    assert!(pair.receiver_dir.load_index(9).unwrap().is_none());
    assert!(!matches!(
        pair.receiver_events.try_recv(),
        Ok(PeerEvent::Snapshot { .. })
    ));
    pair.shutdown.cancel();
}

/// A CA, a peer certificate it signed for 127.0.0.1, and a stranger's certificate from
/// another CA, as PEM files (ZooKeeper's layout: certificate and key in one file).
struct PeerCerts {
    dir: tempfile::TempDir,
}

impl PeerCerts {
    fn new() -> PeerCerts {
        let dir = tempfile::tempdir().unwrap();
        let authority = |name: &str| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, name);
            (params.self_signed(&key).unwrap(), key)
        };
        let key_store = |ca: &(rcgen::Certificate, rcgen::KeyPair), host: &str| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(vec![host.to_owned()]).unwrap();
            params.extended_key_usages = vec![
                rcgen::ExtendedKeyUsagePurpose::ServerAuth,
                rcgen::ExtendedKeyUsagePurpose::ClientAuth,
            ];
            let cert = params.signed_by(&key, &ca.0, &ca.1).unwrap();
            format!("{}{}", cert.pem(), key.serialize_pem())
        };
        let (ca, stranger_ca) = (authority("quorum CA"), authority("stranger CA"));
        std::fs::write(dir.path().join("ca.pem"), ca.0.pem()).unwrap();
        std::fs::write(dir.path().join("peer.pem"), key_store(&ca, "127.0.0.1")).unwrap();
        // From the quorum's CA, but for another host than the server.N lines name.
        let misnamed = key_store(&ca, "elsewhere.example");
        std::fs::write(dir.path().join("misnamed.pem"), misnamed).unwrap();
        let stranger = key_store(&stranger_ca, "127.0.0.1");
        std::fs::write(dir.path().join("stranger.pem"), stranger).unwrap();
        PeerCerts { dir }
    }

    /// Peer TLS presenting `key_store`, trusting the quorum CA, for servers 1 and 2.
    fn tls(&self, key_store: &str) -> PeerTls {
        self.tls_checking_names(key_store, true)
    }

    fn tls_checking_names(&self, key_store: &str, hostname_verification: bool) -> PeerTls {
        let stores = crate::config::PemStores {
            key_store: self.dir.path().join(key_store),
            trust_store: Some(self.dir.path().join("ca.pem")),
        };
        let hosts = HashMap::from([(1, "127.0.0.1".to_owned()), (2, "127.0.0.1".to_owned())]);
        crate::tls::peer_tls(
            &crate::config::QuorumTls {
                stores,
                hostname_verification,
            },
            &hosts,
        )
        .unwrap()
    }
}

/// What a stranger would send: a hello as server 9, then a raft message of term 99.
fn forged_frames() -> BytesMut {
    let mut out = BytesMut::new();
    encode(&mut out, KIND_HELLO, |b| {
        b.put_u64(9);
        b.put_u8(1);
    });
    encode_raft(
        &mut out,
        &Message {
            to: 1,
            from: 9,
            term: 99,
            ..Default::default()
        },
    );
    out
}

/// Sends the forged frames on `stream` and waits (bounded) for the receiver to close it.
async fn forge(mut stream: impl AsyncRead + AsyncWrite + Unpin) {
    let _ = stream.write_all(&forged_frames()).await;
    let _ = stream.flush().await;
    let mut sink = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut sink)).await;
    assert!(
        closed.is_ok(),
        "the receiver kept the stranger's connection open"
    );
}

/// sslQuorum: a peer whose certificate the quorum CA signed is heard; a stranger on
/// the network — plain TCP, or TLS with a certificate from another CA — is refused
/// before a byte it sends is read, so it can neither join nor forge raft messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tls_only_peers_with_a_trusted_certificate_are_heard() {
    let certs = PeerCerts::new();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let shutdown = CancellationToken::new();
    let timing = LinkTiming::from_tick_time(Duration::from_millis(500));
    let (addrs, peers) = two_peers();
    let identity = |id| Identity {
        id,
        has_state: Arc::new(AtomicBool::new(true)),
        tls: Some(certs.tls("peer.pem")),
    };
    let (tx, events) = std::sync::mpsc::channel();
    let tx = parking_lot::Mutex::new(tx);
    Transport::start(
        identity(1),
        addrs[0],
        peers.clone(),
        timing,
        SnapshotDir::open(dirs.0.path()).unwrap(),
        move |event| {
            let _ = tx.lock().send(event);
        },
        None,
        shutdown.clone(),
    )
    .await
    .unwrap();

    forge(TcpStream::connect(addrs[0]).await.unwrap()).await;
    let stranger = certs.tls("stranger.pem");
    let tcp = TcpStream::connect(addrs[0]).await.unwrap();
    let name = stranger.names[&1].clone();
    // TLS 1.3 lets the client finish before the server has checked its certificate;
    // then the refusal shows as the connection closing.
    if let Ok(stream) = stranger.connector.connect(name, tcp).await {
        forge(stream).await;
    }

    let sender = Transport::start(
        identity(2),
        addrs[1],
        peers,
        timing,
        SnapshotDir::open(dirs.1.path()).unwrap(),
        |_| {},
        None,
        shutdown.clone(),
    )
    .await
    .unwrap();
    sender.send(vec![Message {
        to: 1,
        from: 2,
        term: 5,
        ..Default::default()
    }]);
    let term = next_event(&events, |event| match event {
        PeerEvent::Raft(message) if message.from == 2 => Some(message.term),
        PeerEvent::Raft(message) => panic!("a stranger's message got through: {message:?}"),
        PeerEvent::Hello { from: 9, .. } => panic!("a stranger's hello got through"),
        _ => None,
    })
    .await;
    assert_eq!(term, 5);
    shutdown.cancel();
}

/// `ssl.quorum.hostnameVerification`: by default a peer's certificate must name the
/// host of its `server.N` line; with `false`, any certificate from the quorum's CA does.
#[tokio::test]
async fn peer_certificates_must_name_the_peers_host_unless_told_otherwise() {
    let certs = PeerCerts::new();
    let server = certs.tls("misnamed.pem");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = tokio::spawn(async move {
        for _ in 0..2 {
            let (stream, _) = listener.accept().await.unwrap();
            // The outcome shows on the connecting side.
            let _ = server.acceptor.accept(stream).await;
        }
    });
    for (verify, expect_ok) in [(true, false), (false, true)] {
        let client = certs.tls_checking_names("peer.pem", verify);
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = client.names[&1].clone();
        let connected =
            tokio::time::timeout(Duration::from_secs(20), client.connector.connect(name, tcp))
                .await
                .expect("the handshake ends");
        assert_eq!(
            connected.is_ok(),
            expect_ok,
            "hostnameVerification={verify}"
        );
    }
    accepting.await.unwrap();
}

/// Reads an adopted socket until `done` or 100 polls, a second each at most.
fn read_until(
    socket: &mut PeerSocket,
    poll: &mut mio::Poll,
    messages: &mut Vec<Message>,
    done: impl Fn(&Result<bool, ReceiveError>, &[Message]) -> bool,
) -> Result<bool, ReceiveError> {
    let mut events = mio::Events::with_capacity(8);
    for _ in 0..100 {
        let mut budget = 1 << 20;
        let read = socket.read(messages, &mut budget, std::time::Instant::now());
        if done(&read, messages) {
            return read;
        }
        poll.poll(&mut events, Some(Duration::from_secs(1)))
            .unwrap();
    }
    panic!("the adopted socket never got there");
}

#[test]
fn an_adopted_link_yields_its_raft_messages_in_order_and_hands_on_the_rest() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (stream, _) = listener.accept().unwrap();
    stream.set_nonblocking(true).unwrap();
    let first = Message {
        to: 1,
        term: 3,
        index: 10,
        ..Default::default()
    };
    let second = Message {
        index: 11,
        ..first.clone()
    };
    let mut out = BytesMut::new();
    encode_raft(&mut out, &first);
    encode_ack(&mut out, 7, 9);
    encode_raft(&mut out, &second);
    // What the transport's task read past its last frame comes along: half a frame.
    let buffered = out.split_to(5);
    std::io::Write::write_all(&mut peer, &out).unwrap();
    let handed_on = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let deliver: Deliver = {
        let handed_on = handed_on.clone();
        Arc::new(move |event| handed_on.lock().push(event))
    };
    let mut poll = mio::Poll::new().unwrap();
    let mut socket = PeerSocket::adopt(
        AdoptedPeer {
            stream,
            buffered,
            from: 2,
            silence_limit: Duration::from_secs(60),
            deliver,
        },
        poll.registry(),
        mio::Token(1),
        mio::Interest::READABLE,
        std::time::Instant::now(),
    )
    .unwrap();
    let mut messages = Vec::new();
    read_until(&mut socket, &mut poll, &mut messages, |_, got| {
        got.len() == 2
    })
    .unwrap();
    assert_eq!(messages, [first, second]);
    assert!(matches!(
        handed_on.lock().as_slice(),
        [PeerEvent::Ack {
            from: 2,
            seq: 7,
            commit: 9
        }]
    ));
    // A second hello on a link is malformed: the raft thread closes it.
    std::io::Write::write_all(&mut peer, &[0, 0, 0, 9, KIND_HELLO, 0, 0, 0, 0, 0, 0, 0, 2])
        .unwrap();
    let refused = read_until(&mut socket, &mut poll, &mut messages, |r, _| r.is_err());
    assert!(matches!(refused, Err(ReceiveError::Malformed)));
}

#[test]
fn an_adopted_link_ends_when_the_peer_closes_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (stream, _) = listener.accept().unwrap();
    stream.set_nonblocking(true).unwrap();
    let mut poll = mio::Poll::new().unwrap();
    let now = std::time::Instant::now();
    let mut socket = PeerSocket::adopt(
        AdoptedPeer {
            stream,
            buffered: BytesMut::new(),
            from: 3,
            silence_limit: Duration::from_millis(100),
            deliver: Arc::new(|_| {}),
        },
        poll.registry(),
        mio::Token(1),
        mio::Interest::READABLE,
        now,
    )
    .unwrap();
    assert!(!socket.silent(now));
    assert!(socket.silent(now + Duration::from_secs(1)));
    drop(peer);
    let mut messages = Vec::new();
    let ended = read_until(&mut socket, &mut poll, &mut messages, |r, _| r.is_err());
    assert!(matches!(ended, Err(ReceiveError::Closed)));
}

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
fn frames_round_trip() {
    let mut out = BytesMut::new();
    let message = Message {
        to: 2,
        term: 7,
        ..Default::default()
    };
    push(&mut out, Outgoing::Raft(message.clone()));
    let report = LivenessReport {
        seq: 9,
        sessions: vec![(1, 20), (-2, 0)],
    };
    push(&mut out, Outgoing::Report(report.clone()));
    push(&mut out, Outgoing::Ack(9));
    let mut from = Some(3);
    let raft = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(raft, Some(PeerEvent::Raft(m)) if m == message));
    let got = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(got, Some(PeerEvent::Report { from: 3, report: r }) if r == report));
    let ack = decode(next_frame(&mut out).unwrap().unwrap(), &mut from).unwrap();
    assert!(matches!(ack, Some(PeerEvent::Ack { from: 3, seq: 9 })));
    assert!(next_frame(&mut out).unwrap().is_none());
}

#[test]
fn nothing_is_taken_before_the_hello_and_the_hello_says_who() {
    let mut out = BytesMut::new();
    push(&mut out, Outgoing::Ack(1));
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
    let stuck = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = stuck.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let timing = LinkTiming::from_tick_time(Duration::from_millis(200));
    let me = Identity {
        id: 1,
        has_state: Arc::new(AtomicBool::new(true)),
    };
    let transport = Transport::start(
        me,
        "127.0.0.1:0".parse().unwrap(),
        HashMap::from([(2, addr)]),
        timing,
        |_| {},
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
    let received = tokio::time::timeout(Duration::from_secs(10), receive(accepted, &|_| {}, limit))
        .await
        .expect("the receiver gave up on the silent peer");
    assert!(matches!(received, Err(ReceiveError::Silent(_))));
    let mut byte = [0u8; 1];
    // The receiver closed its end.
    let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))));
}

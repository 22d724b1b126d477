//! Bad input: each misbehaving connection is closed on its own; the server stays up,
//! other clients are unaffected, and memory stays bounded.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use paddock_wire::{Acl, CreateRequest, ErrorCode, Request, Response, WatchedPathRequest};

use crate::support::{four_letter, paddock, RawClient, Server};

fn get_data(path: &str) -> Request {
    Request::GetData(WatchedPathRequest {
        path: path.into(),
        watch: false,
    })
}

/// A healthy client can still create and read.
fn assert_serves(server: &Server) {
    let mut client = RawClient::connect(server.addr);
    let (header, _) = client.call(
        1,
        &Request::Create(CreateRequest {
            path: "/healthy".into(),
            data: paddock_wire::Data::from(&b"ok"[..]),
            acl: Acl::open_unsafe(),
            flags: 0,
        }),
    );
    assert!(
        header.err == ErrorCode::Ok || header.err == ErrorCode::NodeExists,
        "{header:?}"
    );
    let (header, body) = client.call(2, &get_data("/healthy"));
    assert_eq!(header.err, ErrorCode::Ok);
    assert!(matches!(body, Some(Response::GetData { .. })));
    assert_eq!(four_letter(server.addr, "ruok").as_deref(), Some("imok"));
}

/// True once the server has closed `stream` (EOF or reset), within 10 s.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
    false
}

#[test]
fn an_oversized_frame_closes_only_that_connection() {
    let server = paddock("");
    let mut bystander = RawClient::connect(server.addr);
    let mut bad = RawClient::connect(server.addr);
    bad.stream
        .write_all(&0x7fff_ffffu32.to_be_bytes())
        .expect("send length");
    assert!(closed_by_server(&mut bad.stream));
    let (header, _) = bystander.call(1, &get_data("/"));
    assert_eq!(header.err, ErrorCode::Ok);
    assert_serves(&server);
}

#[test]
fn garbage_closes_the_connection_and_nothing_else() {
    let server = paddock("");
    // Garbage instead of a handshake.
    let mut raw = TcpStream::connect(server.addr).expect("connect");
    raw.write_all(&[0, 0, 0, 7, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3])
        .expect("send");
    assert!(closed_by_server(&mut raw));
    // Garbage after a handshake: a frame whose op code and body are nonsense.
    let mut client = RawClient::connect(server.addr);
    client
        .stream
        .write_all(&[0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0x80])
        .expect("send");
    assert!(closed_by_server(&mut client.stream));
    // A negative frame length.
    let mut client = RawClient::connect(server.addr);
    client
        .stream
        .write_all(&[0xff, 0xff, 0xff, 0xfe])
        .expect("send");
    assert!(closed_by_server(&mut client.stream));
    assert_serves(&server);
}

#[test]
fn an_unknown_op_code_gets_an_error_reply() {
    let server = paddock("");
    let mut client = RawClient::connect(server.addr);
    // xid 5, op 77: ZooKeeper answers Unimplemented rather than disconnecting.
    client
        .stream
        .write_all(&[0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 77])
        .expect("send");
    let reply = crate::support::read_frame(&mut client.stream).expect("reply");
    assert_eq!(&reply[0..4], &5i32.to_be_bytes());
    assert_eq!(
        &reply[12..16],
        &ErrorCode::Unimplemented.as_i32().to_be_bytes()
    );
}

#[test]
fn an_unknown_op_code_is_answered_in_its_turn() {
    // Replies come in request order: the error for an unknown op waits for the write
    // sent before it, like any other reply.
    let server = paddock("");
    let mut client = RawClient::connect(server.addr);
    let mut frames = bytes::BytesMut::new();
    let mut body = bytes::BytesMut::new();
    Request::Create(CreateRequest {
        path: "/first".into(),
        data: paddock_wire::Data::from(&b""[..]),
        acl: Acl::open_unsafe(),
        flags: 0,
    })
    .encode_with_header(1, &mut body);
    frames.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frames.extend_from_slice(&body);
    frames.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 77]);
    client.stream.write_all(&frames).expect("send");
    let first = crate::support::read_frame(&mut client.stream).expect("reply");
    let second = crate::support::read_frame(&mut client.stream).expect("reply");
    assert_eq!(
        (&first[0..4], &second[0..4]),
        (&1i32.to_be_bytes()[..], &2i32.to_be_bytes()[..])
    );
}

#[test]
fn a_client_that_never_reads_is_throttled_not_buffered() {
    let server = paddock("");
    let rss_before = server.rss_kib();
    let mut flooder = RawClient::connect(server.addr);
    flooder
        .stream
        .set_write_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    // Write requests without reading a single reply until the server stops reading
    // (the write times out), or 400,000 requests, or 30 s.
    let mut frame = bytes::BytesMut::new();
    for xid in 0..1_000 {
        let mut body = bytes::BytesMut::new();
        get_data("/zookeeper").encode_with_header(xid, &mut body);
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(&body);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut sent = 0usize;
    while sent < 400_000 && Instant::now() < deadline {
        if flooder.stream.write_all(&frame).is_err() {
            break;
        }
        sent += 1_000;
    }
    assert!(
        sent < 400_000,
        "the server kept reading a client that reads no replies"
    );
    // Others are still served, and the server did not buffer the flood.
    assert_serves(&server);
    let rss_after = server.rss_kib();
    assert!(
        rss_after < rss_before + 256 * 1024,
        "RSS grew from {rss_before} KiB to {rss_after} KiB"
    );
}

#[test]
fn connections_beyond_max_client_cnxns_are_refused() {
    let server = paddock("maxClientCnxns=5");
    let mut held: Vec<RawClient> = (0..5).map(|_| RawClient::connect(server.addr)).collect();
    let mut extra = TcpStream::connect(server.addr).expect("tcp connect");
    assert!(closed_by_server(&mut extra), "a sixth connection was kept");
    for (i, client) in held.iter_mut().enumerate() {
        let (header, _) = client.call(i as i32 + 1, &get_data("/"));
        assert_eq!(header.err, ErrorCode::Ok);
    }
    drop(held);
    // Closed connections free their places.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut probe = TcpStream::connect(server.addr).expect("tcp connect");
        probe
            .set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut buf = [0u8; 1];
        // A kept connection times out waiting for a handshake reply; a refused one EOFs.
        if matches!(probe.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut)
        {
            break;
        }
        assert!(Instant::now() < deadline, "places were not freed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

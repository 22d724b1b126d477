//! The session task against a scripted server on loopback: what it sends when idle,
//! and what it does when the server falls silent. Time is real (the sockets are), so
//! the server hands out a short session timeout and every wait has a generous bound.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use paddock_wire::codec::write_frame;
use paddock_wire::{
    ConnectRequest, ConnectResponse, ErrorCode, FrameCodec, OpCode, Reader, Record, ReplyHeader,
    RequestHeader, Xid, DEFAULT_MAX_FRAME,
};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpListener;
use tokio::time::timeout;
use tokio_util::codec::FramedRead;

use crate::{Client, ConnectOptions, SessionState};

/// The session timeout the scripted server grants: pings every 200 ms, silence
/// noticed after 400 ms.
const GRANTED_MS: i32 = 600;
const SESSION_ID: i64 = 0x5ca1ab1e;
/// No step of these tests should take anywhere near this.
const BOUND: Duration = Duration::from_secs(10);

struct ServerSide {
    frames: FramedRead<OwnedReadHalf, FrameCodec>,
    writer: OwnedWriteHalf,
}

impl ServerSide {
    /// Accepts the next connection and answers its handshake; returns the request.
    async fn accept(listener: &TcpListener) -> (ServerSide, ConnectRequest) {
        let (stream, _) = timeout(BOUND, listener.accept())
            .await
            .expect("the client did not connect")
            .expect("accept failed");
        let (reader, writer) = stream.into_split();
        let mut side = ServerSide {
            frames: FramedRead::new(reader, FrameCodec::new(DEFAULT_MAX_FRAME)),
            writer,
        };
        let frame = side.next_frame().await.expect("no handshake");
        let request = ConnectRequest::from_bytes(frame).expect("bad ConnectRequest");
        let response = ConnectResponse {
            protocol_version: 0,
            timeout: GRANTED_MS,
            session_id: SESSION_ID,
            passwd: Bytes::from_static(&[7; 16]),
            read_only: request.read_only.map(|_| false),
        };
        side.send(|buf| response.encode(buf)).await;
        (side, request)
    }

    /// The next frame, or `None` once the client has closed the connection.
    async fn next_frame(&mut self) -> Option<Bytes> {
        match timeout(BOUND, self.frames.next()).await {
            Ok(Some(Ok(frame))) => Some(frame),
            Ok(Some(Err(_)) | None) => None,
            Err(_) => panic!("the client sent nothing and did not close"),
        }
    }

    /// The next frame's request header.
    async fn next_header(&mut self) -> RequestHeader {
        let frame = self.next_frame().await.expect("the connection closed");
        RequestHeader::decode(&mut Reader::new(frame)).expect("bad request header")
    }

    async fn send(&mut self, body: impl FnOnce(&mut BytesMut)) {
        let mut buf = BytesMut::new();
        write_frame(&mut buf, DEFAULT_MAX_FRAME, body).expect("frame too large");
        self.writer.write_all(&buf).await.expect("write failed");
    }
}

fn is_ping(header: &RequestHeader) -> bool {
    header.xid == Xid::Ping.as_i32() && header.op == OpCode::Ping as i32
}

#[tokio::test]
async fn an_idle_session_pings_and_a_silent_server_is_left_for_another_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr").to_string();
    let connecting = tokio::spawn(async move {
        let options = ConnectOptions::with_session_timeout(Duration::from_millis(600));
        Client::connect(&addr, options).await
    });
    let (mut first, request) = ServerSide::accept(&listener).await;
    assert_eq!(request.session_id, 0, "a new session");
    let client = timeout(BOUND, connecting)
        .await
        .expect("connect did not return")
        .expect("connect panicked")
        .expect("connect failed");

    // Idle, it pings, and goes on pinging as long as each ping is answered.
    for _ in 0..4 {
        let header = first.next_header().await;
        assert!(
            is_ping(&header),
            "an idle session sends only pings: {header:?}"
        );
        let reply = ReplyHeader {
            xid: Xid::Ping.as_i32(),
            zxid: 0,
            err: ErrorCode::Ok,
        };
        first.send(|buf| reply.encode(buf)).await;
    }
    assert_eq!(client.state(), SessionState::Connected);

    // Once nothing comes back, it gives the connection up (only pings before that)
    // and takes the session to the next connection.
    let mut unanswered = 0;
    while let Some(frame) = first.next_frame().await {
        let header = RequestHeader::decode(&mut Reader::new(frame)).expect("bad header");
        assert!(is_ping(&header), "{header:?}");
        unanswered += 1;
        assert!(unanswered < 100, "the client kept a silent connection");
    }
    assert!(
        unanswered >= 1,
        "the client left before its ping went unanswered"
    );
    let (_second, request) = ServerSide::accept(&listener).await;
    assert_eq!(request.session_id, SESSION_ID, "the same session");
    assert_eq!(request.passwd, Bytes::from_static(&[7; 16]));
}

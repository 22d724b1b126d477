//! A connection the server resets is reported as a lost connection, not as a "bad
//! frame": the peer here answers the handshake and then resets the socket.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use paddock_client::{Client, ConnectOptions, SessionState};
use paddock_wire::codec::write_frame;
use paddock_wire::{ConnectResponse, Record, DEFAULT_MAX_FRAME};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{wait_for_state, within};

/// Captures the client's log lines.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut lines) = self.0.lock() {
            lines.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One connection: read the connect request, accept it, then reset the socket.
async fn accept_then_reset(listener: tokio::net::TcpListener) {
    let (mut socket, _) = listener.accept().await.expect("accept");
    let mut len = [0u8; 4];
    socket.read_exact(&mut len).await.expect("request length");
    let mut request = vec![0u8; u32::from_be_bytes(len) as usize];
    socket.read_exact(&mut request).await.expect("request");
    let response = ConnectResponse {
        protocol_version: 0,
        timeout: 10_000,
        session_id: 0x42,
        passwd: bytes::Bytes::from_static(&[7; 16]),
        read_only: Some(false),
    };
    let mut out = BytesMut::new();
    write_frame(&mut out, DEFAULT_MAX_FRAME, |b| response.encode(b)).expect("frame");
    socket.write_all(&out).await.expect("response");
    // A zero linger makes the close a reset (RST), at once and without blocking.
    #[allow(deprecated)] // tokio deprecates SO_LINGER for the blocking it causes otherwise
    socket.set_linger(Some(Duration::ZERO)).expect("linger");
    drop(socket);
}

// One thread, so that the session task logs where the capture is installed.
#[tokio::test(flavor = "current_thread")]
async fn a_reset_connection_is_reported_as_lost_not_as_a_bad_frame() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("paddock_client=debug")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    within(Duration::from_secs(30), async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(accept_then_reset(listener));
        let options = ConnectOptions {
            connect_timeout: Some(Duration::from_secs(5)),
            ..ConnectOptions::with_session_timeout(Duration::from_secs(10))
        };
        let client = Client::connect(&addr.to_string(), options)
            .await
            .expect("connect");
        server.await.expect("fake server");
        wait_for_state(&client, SessionState::Disconnected, Duration::from_secs(10)).await;
        let log = String::from_utf8_lossy(&captured.0.lock().expect("log")).into_owned();
        assert!(log.contains("connection to the server lost"), "{log}");
        assert!(!log.contains("bad frame"), "{log}");
    })
    .await;
}

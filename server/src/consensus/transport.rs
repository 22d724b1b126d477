//! Peer traffic: raft messages and session liveness between the servers of an
//! ensemble, over TCP to each peer's `peerPort` (the first port of `server.N`; the
//! election port is not used, since raft elects over the same connection).
//!
//! Wire format, one frame per message: `length u32 | kind u8 | payload`, where kind
//! 1 is a raft `Message` (protobuf), 2 is session liveness (`count u32 | session i64…`:
//! sessions whose clients were heard from, for the leader's expiry clock), and 3 is a
//! hello (`server id u64`), the first frame on every connection.
//!
//! Sending never blocks the raft loop: each peer has a bounded queue drained by its own
//! task, which batches what is queued into one write and reconnects with backoff. A
//! full queue drops the message; raft retransmits.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use protobuf::Message as _;
use raft::prelude::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Messages waiting for one peer before new ones are dropped.
const PEER_QUEUE: usize = 4096;
/// The largest peer frame accepted: a raft append of up to `max_size_per_msg` plus slack.
const MAX_PEER_FRAME: usize = 64 * 1024 * 1024;

const KIND_RAFT: u8 = 1;
const KIND_TOUCH: u8 = 2;
const KIND_HELLO: u8 = 3;

/// Something a peer sent us.
#[derive(Debug)]
pub enum PeerEvent {
    Raft(Message),
    /// Sessions whose clients a peer heard from since its last report.
    Touch(Vec<i64>),
}

enum Outgoing {
    Raft(Message),
    Touch(Vec<i64>),
}

/// The sending side: a bounded queue per peer.
#[derive(Clone)]
pub struct Transport {
    peers: Arc<HashMap<u64, mpsc::Sender<Outgoing>>>,
}

impl Transport {
    /// Starts a sender task per peer and the listener for incoming peer connections;
    /// what peers send is handed to `deliver`.
    pub async fn start(
        my_id: u64,
        listen: SocketAddr,
        peers: HashMap<u64, SocketAddr>,
        deliver: impl Fn(PeerEvent) + Send + Sync + 'static,
        shutdown: CancellationToken,
    ) -> std::io::Result<Transport> {
        let listener = TcpListener::bind(listen).await?;
        tokio::spawn(accept_loop(listener, Arc::new(deliver), shutdown.clone()));
        let mut senders = HashMap::new();
        for (id, addr) in peers {
            if id == my_id {
                continue;
            }
            let (tx, rx) = mpsc::channel(PEER_QUEUE);
            tokio::spawn(send_loop(my_id, id, addr, rx, shutdown.clone()));
            senders.insert(id, tx);
        }
        Ok(Transport {
            peers: Arc::new(senders),
        })
    }

    /// Queues raft messages for their peers; never blocks.
    pub fn send(&self, messages: Vec<Message>) {
        for message in messages {
            if let Some(peer) = self.peers.get(&message.to) {
                // Full or closed: drop it, raft retransmits what matters.
                let _ = peer.try_send(Outgoing::Raft(message));
            }
        }
    }

    /// Reports live sessions to `leader`.
    pub fn touch(&self, leader: u64, sessions: Vec<i64>) {
        if let Some(peer) = self.peers.get(&leader) {
            let _ = peer.try_send(Outgoing::Touch(sessions));
        }
    }
}

fn encode(out: &mut BytesMut, kind: u8, payload: impl FnOnce(&mut BytesMut)) {
    let start = out.len();
    out.put_u32(0);
    out.put_u8(kind);
    payload(out);
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

async fn send_loop(
    my_id: u64,
    peer: u64,
    addr: SocketAddr,
    mut rx: mpsc::Receiver<Outgoing>,
    shutdown: CancellationToken,
) {
    let mut backoff = Duration::from_millis(50);
    loop {
        let stream = tokio::select! {
            stream = TcpStream::connect(addr) => stream,
            _ = shutdown.cancelled() => return,
        };
        let mut stream = match stream {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(peer, %addr, "peer unreachable: {e}");
                // Messages queued meanwhile are stale by the time we connect.
                while rx.try_recv().is_ok() {}
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.cancelled() => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        backoff = Duration::from_millis(50);
        let _ = stream.set_nodelay(true);
        let mut out = BytesMut::with_capacity(64 * 1024);
        encode(&mut out, KIND_HELLO, |b| b.put_u64(my_id));
        loop {
            if !out.is_empty() {
                if let Err(e) = stream.write_all(&out).await {
                    tracing::debug!(peer, "peer connection lost: {e}");
                    break;
                }
                out.clear();
            }
            let first = tokio::select! {
                first = rx.recv() => first,
                _ = shutdown.cancelled() => return,
            };
            let Some(first) = first else { return };
            push(&mut out, first);
            // Batch whatever else is queued into the same write.
            while out.len() < 1024 * 1024 {
                match rx.try_recv() {
                    Ok(next) => push(&mut out, next),
                    Err(_) => break,
                }
            }
        }
    }
}

fn push(out: &mut BytesMut, message: Outgoing) {
    match message {
        Outgoing::Raft(message) => match message.write_to_bytes() {
            Ok(bytes) => encode(out, KIND_RAFT, |b| b.put_slice(&bytes)),
            Err(e) => tracing::error!("cannot encode a raft message: {e}"),
        },
        Outgoing::Touch(sessions) => encode(out, KIND_TOUCH, |b| {
            b.put_u32(sessions.len() as u32);
            for session in sessions {
                b.put_i64(session);
            }
        }),
    }
}

async fn accept_loop(
    listener: TcpListener,
    deliver: Arc<dyn Fn(PeerEvent) + Send + Sync>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.cancelled() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let deliver = deliver.clone();
                let shutdown = shutdown.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        result = receive(stream, &*deliver) => {
                            if let Err(e) = result {
                                tracing::debug!(%peer, "peer stream ended: {e}");
                            }
                        }
                        _ = shutdown.cancelled() => {}
                    }
                });
            }
            Err(e) => {
                tracing::warn!("peer accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum ReceiveError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("peer frame of {0} bytes is over the limit")]
    TooLarge(usize),
    #[error("malformed peer frame")]
    Malformed,
}

async fn receive(
    mut stream: TcpStream,
    deliver: &(dyn Fn(PeerEvent) + Send + Sync),
) -> Result<(), ReceiveError> {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut said_hello = false;
    loop {
        while let Some(frame) = next_frame(&mut buf)? {
            let mut frame = frame;
            if frame.is_empty() {
                return Err(ReceiveError::Malformed);
            }
            let kind = frame.get_u8();
            match kind {
                KIND_HELLO if frame.len() == 8 => said_hello = true,
                _ if !said_hello => return Err(ReceiveError::Malformed),
                KIND_RAFT => {
                    let message =
                        Message::parse_from_bytes(&frame).map_err(|_| ReceiveError::Malformed)?;
                    deliver(PeerEvent::Raft(message));
                }
                KIND_TOUCH => {
                    if frame.len() < 4 {
                        return Err(ReceiveError::Malformed);
                    }
                    let count = frame.get_u32() as usize;
                    if frame.len() != count * 8 {
                        return Err(ReceiveError::Malformed);
                    }
                    let sessions = (0..count).map(|_| frame.get_i64()).collect();
                    deliver(PeerEvent::Touch(sessions));
                }
                _ => return Err(ReceiveError::Malformed),
            }
        }
        if stream.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

fn next_frame(buf: &mut BytesMut) -> Result<Option<Bytes>, ReceiveError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_PEER_FRAME {
        return Err(ReceiveError::TooLarge(len));
    }
    if buf.len() < 4 + len {
        buf.reserve(4 + len - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut out = BytesMut::new();
        let message = Message {
            to: 2,
            term: 7,
            ..Default::default()
        };
        push(&mut out, Outgoing::Raft(message.clone()));
        push(&mut out, Outgoing::Touch(vec![1, -2]));
        let mut raft = next_frame(&mut out).unwrap().unwrap();
        assert_eq!(raft.get_u8(), KIND_RAFT);
        assert_eq!(Message::parse_from_bytes(&raft).unwrap(), message);
        let mut touch = next_frame(&mut out).unwrap().unwrap();
        assert_eq!(touch.get_u8(), KIND_TOUCH);
        assert_eq!(touch.get_u32(), 2);
        assert!(next_frame(&mut out).unwrap().is_none());
    }

    #[test]
    fn oversized_frames_are_refused() {
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xff][..]);
        assert!(next_frame(&mut buf).is_err());
    }
}

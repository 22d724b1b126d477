//! A plain-TCP peer connection the raft thread reads itself (see `consensus::inbox`):
//! the transport's task hands it over after the hello and the first frame that shows
//! it is a message link (not a snapshot stream), with what it had read but not yet
//! decoded; frames are decoded here the same way, raft messages go to the caller in
//! order and the rest (liveness reports and acks) to the transport's handler.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use mio::{Interest, Registry, Token};
use raft::prelude::Message;

use super::{decode, next_frame, Deliver, PeerEvent, ReceiveError};

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 64 * 1024;

/// What the transport hands the raft thread.
pub struct AdoptedPeer {
    pub(super) stream: std::net::TcpStream,
    pub(super) buffered: BytesMut,
    pub(super) from: u64,
    pub(super) silence_limit: Duration,
    pub(super) deliver: Deliver,
}

impl std::fmt::Debug for AdoptedPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdoptedPeer")
            .field("from", &self.from)
            .field("buffered", &self.buffered.len())
            .finish_non_exhaustive()
    }
}

/// An adopted connection, registered with the raft thread's poll.
pub struct PeerSocket {
    stream: mio::net::TcpStream,
    /// Bytes read and not yet decoded (at most one partial frame between reads).
    buf: BytesMut,
    scratch: Box<[u8]>,
    from: Option<u64>,
    silence_limit: Duration,
    last_heard: Instant,
    deliver: Deliver,
}

impl PeerSocket {
    pub fn adopt(
        peer: AdoptedPeer,
        registry: &Registry,
        token: Token,
        interest: Interest,
        now: Instant,
    ) -> io::Result<PeerSocket> {
        // The transport's stream is non-blocking already (tokio's `into_std`), as
        // mio requires; said again so that this never blocks the raft thread.
        peer.stream.set_nonblocking(true)?;
        let mut stream = mio::net::TcpStream::from_std(peer.stream);
        registry.register(&mut stream, token, interest)?;
        Ok(PeerSocket {
            stream,
            buf: peer.buffered,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            from: Some(peer.from),
            silence_limit: peer.silence_limit,
            last_heard: now,
            deliver: peer.deliver,
        })
    }

    /// The peer's server id.
    pub fn from(&self) -> u64 {
        self.from.unwrap_or(0)
    }

    /// Reads and decodes until the socket has nothing more or `budget` bytes are
    /// spent; `Ok(true)`: it may have more.
    pub fn read(
        &mut self,
        messages: &mut Vec<Message>,
        budget: &mut usize,
        now: Instant,
    ) -> Result<bool, ReceiveError> {
        loop {
            self.decode_buffered(messages)?;
            if *budget == 0 {
                return Ok(true);
            }
            let want = READ_CHUNK.min(*budget);
            match self.stream.read(&mut self.scratch[..want]) {
                Ok(0) => return Err(ReceiveError::Closed),
                Ok(n) => {
                    *budget = budget.saturating_sub(n);
                    self.last_heard = now;
                    self.buf.extend_from_slice(&self.scratch[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn decode_buffered(&mut self, messages: &mut Vec<Message>) -> Result<(), ReceiveError> {
        while let Some(frame) = next_frame(&mut self.buf)? {
            // A hello or a snapshot frame here is malformed: `decode` refuses both.
            match decode(frame, &mut self.from)? {
                Some(PeerEvent::Raft(message)) => messages.push(message),
                Some(event) => (self.deliver)(event),
                None => {}
            }
        }
        Ok(())
    }

    /// Whether nothing has come for longer than the limit (a live peer writes a
    /// keepalive every half tick).
    pub fn silent(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_heard) > self.silence_limit
    }

    pub fn deregister(&mut self, registry: &Registry) {
        let _ = registry.deregister(&mut self.stream);
    }
}

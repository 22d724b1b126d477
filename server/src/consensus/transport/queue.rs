//! What waits to be written to one peer, and the fast path that writes it at once.
//!
//! Raft's messages leave from the raft thread (and a follower's append acks from the
//! log writer's, right after the fsync that covers them). Handing each one to the
//! link's task costs a wake-up of the runtime and a thread switch on the commit path,
//! twice per round trip. So a sender writes its frame itself, without blocking, when
//! the link is plain TCP, connected and idle; whatever the socket does not take at
//! once, or arrives while the link's task is writing, waits in `pending` for the task,
//! in order. TLS links always go through the task (the session is the task's).

use std::sync::Arc;

use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Bytes that may wait for one peer before new frames are dropped (raft retransmits).
const MAX_PENDING: usize = 64 * 1024 * 1024;

#[derive(Default)]
pub(super) struct PeerQueue {
    state: Mutex<State>,
    /// Wakes the link's task: something is pending.
    wake: Notify,
}

#[derive(Default)]
struct State {
    /// Encoded frames not yet handed to the socket, oldest first.
    pending: BytesMut,
    /// The connection, while it is plain TCP and its hello has been written.
    direct: Option<Arc<TcpStream>>,
    /// The task is writing bytes taken from `pending`: nothing may overtake them.
    in_flight: bool,
}

impl PeerQueue {
    /// Queues one frame (`encode` appends it) for the next [`flush`]. `false`: the
    /// queue is full and the frame was dropped.
    ///
    /// [`flush`]: PeerQueue::flush
    pub fn push(&self, encode: impl FnOnce(&mut BytesMut)) -> bool {
        let mut state = self.state.lock();
        if state.pending.len() >= MAX_PENDING {
            return false;
        }
        encode(&mut state.pending);
        true
    }

    /// Sends what is pending: written at once, without blocking, if the link is idle;
    /// whatever is left goes to the link's task. One write for all the frames pushed
    /// since the last flush.
    pub fn flush(&self) {
        let mut state = self.state.lock();
        let state = &mut *state;
        if state.pending.is_empty() {
            return;
        }
        if !state.in_flight {
            if let Some(stream) = &state.direct {
                // An error leaves the bytes pending: the task's write meets it too
                // and reconnects.
                if let Ok(n) = stream.try_write(&state.pending) {
                    state.pending.advance(n);
                }
            }
        }
        if !state.pending.is_empty() {
            self.wake.notify_one();
        }
    }

    /// For the link's task: everything pending, now in flight until [`written`].
    ///
    /// [`written`]: PeerQueue::written
    pub fn take(&self) -> Option<BytesMut> {
        let mut state = self.state.lock();
        if state.pending.is_empty() {
            return None;
        }
        state.in_flight = true;
        Some(state.pending.split())
    }

    /// The task wrote what it took.
    pub fn written(&self) {
        self.state.lock().in_flight = false;
    }

    /// Resolves once something may be pending.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// A connection is up and its hello written: senders may write to `direct`.
    pub fn connected(&self, direct: Option<Arc<TcpStream>>) {
        let mut state = self.state.lock();
        state.direct = direct;
        state.in_flight = false;
    }

    /// The connection is gone, or not there yet: what waits is stale by the time the
    /// next one is up (raft retransmits what still matters).
    pub fn disconnected(&self) {
        let mut state = self.state.lock();
        state.direct = None;
        state.in_flight = false;
        state.pending.clear();
    }

    #[cfg(test)]
    pub fn pending_len(&self) -> usize {
        self.state.lock().pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    async fn connected_pair() -> (Arc<TcpStream>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (ours, theirs) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (Arc::new(ours.unwrap()), theirs.unwrap().0)
    }

    #[tokio::test]
    async fn an_idle_connected_link_is_written_at_once_and_in_order() {
        let (ours, mut theirs) = connected_pair().await;
        let queue = PeerQueue::default();
        // Before the connection is up (its hello unwritten), frames wait.
        assert!(queue.push(|b| b.extend_from_slice(b"one ")));
        queue.flush();
        assert_eq!(queue.pending_len(), 4);
        let first = queue.take().expect("pending");
        queue.connected(Some(ours.clone()));
        // The task's write is in flight: a later frame must not overtake it.
        let in_flight = queue.take();
        assert!(in_flight.is_none());
        queue.state.lock().in_flight = true;
        assert!(queue.push(|b| b.extend_from_slice(b"two ")));
        queue.flush();
        assert_eq!(queue.pending_len(), 4);
        ours.writable().await.unwrap();
        assert_eq!(ours.try_write(&first).unwrap(), first.len());
        queue.written();
        let second = queue.take().expect("still pending");
        assert_eq!(ours.try_write(&second).unwrap(), second.len());
        queue.written();
        // Idle and connected: written by the sender itself, at the flush.
        assert!(queue.push(|b| b.extend_from_slice(b"three")));
        assert_eq!(queue.pending_len(), 5);
        queue.flush();
        assert_eq!(queue.pending_len(), 0);
        let mut got = vec![0u8; 13];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"one two three");
    }

    #[tokio::test]
    async fn what_the_socket_does_not_take_waits_for_the_task() {
        let (ours, _theirs) = connected_pair().await;
        let queue = PeerQueue::default();
        queue.connected(Some(ours));
        // Far more than the socket buffers hold: the rest waits, and the task is woken.
        let big = vec![9u8; 32 * 1024 * 1024];
        assert!(queue.push(|b| b.extend_from_slice(&big)));
        queue.flush();
        let left = queue.pending_len();
        assert!(left > 0 && left < big.len(), "{left}");
        tokio::time::timeout(std::time::Duration::from_secs(5), queue.woken())
            .await
            .expect("the task is woken");
        // A full queue drops new frames instead of growing or blocking.
        let refused = (0..4).any(|_| !queue.push(|b| b.extend_from_slice(&big)));
        assert!(refused, "the queue grew to {} bytes", queue.pending_len());
        queue.disconnected();
        assert_eq!(queue.pending_len(), 0);
    }
}

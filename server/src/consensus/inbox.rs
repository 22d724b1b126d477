//! The raft thread's inbox: the one place it waits, both for what other threads send it
//! (a channel) and for raft traffic on the peer connections it reads itself.
//!
//! Why this thread reads peer sockets: a peer's message used to wake a tokio worker,
//! which read it and then woke this thread through the channel — two wake-ups where
//! one does, on every step of every commit (a write a follower forwards crosses four
//! of them). Now the transport's task keeps a plain-TCP connection only until its
//! first frame after the hello, then hands the socket over (`AdoptedPeer`), and epoll
//! wakes this thread when a peer writes. TLS links and snapshot streams stay with the
//! transport's tasks.
//!
//! Waking: a sender queues its input, then writes the poll's eventfd only if this
//! thread is parked (or about to be), so a busy raft thread costs senders no syscall.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token, Waker};
use raft::prelude::Message;

use super::transport::{AdoptedPeer, PeerSocket};

/// The poll token of the eventfd senders write.
const WAKE: Token = Token(0);

/// Bytes read from peer sockets per turn at most, so a flood of appends cannot starve
/// ticks and proposals; what is left is read on the next turn, without waiting.
const READ_BUDGET: usize = 4 * 1024 * 1024;

/// The channel was closed: every sender is gone.
#[derive(Debug)]
pub struct Disconnected;

/// The sending half; cheap to clone.
pub struct InboxSender<T> {
    tx: mpsc::Sender<T>,
    wake: Arc<Wake>,
}

impl<T> Clone for InboxSender<T> {
    fn clone(&self) -> Self {
        InboxSender {
            tx: self.tx.clone(),
            wake: self.wake.clone(),
        }
    }
}

struct Wake {
    waker: Waker,
    /// Set by the raft thread before it checks the channel a last time and parks.
    parked: AtomicBool,
}

impl<T> InboxSender<T> {
    pub fn send(&self, item: T) -> Result<(), Disconnected> {
        self.tx.send(item).map_err(|_| Disconnected)?;
        // Pairs with the fence in `Inbox::wait`: either the raft thread's last look at
        // the channel sees this item, or this sees it parked and wakes it.
        fence(Ordering::SeqCst);
        if self.wake.parked.load(Ordering::Relaxed)
            && self.wake.parked.swap(false, Ordering::AcqRel)
        {
            if let Err(e) = self.wake.waker.wake() {
                // The eventfd cannot fail short of fd exhaustion; the next tick still
                // wakes the loop.
                tracing::warn!("waking the raft thread: {e}");
            }
        }
        Ok(())
    }
}

/// The raft thread's half.
pub struct Inbox<T> {
    rx: mpsc::Receiver<T>,
    /// An input taken while checking the channel before parking.
    stashed: Option<T>,
    wake: Arc<Wake>,
    poll: Poll,
    events: Events,
    peers: HashMap<Token, PeerSocket>,
    /// Sockets that may have bytes waiting (epoll is edge-triggered: one event, then
    /// nothing until they are read dry).
    readable: Vec<Token>,
    next_token: usize,
}

/// Makes the channel and its poll, before either end's thread exists.
pub fn inbox<T>() -> io::Result<(InboxSender<T>, Inbox<T>)> {
    let (tx, rx) = mpsc::channel();
    let poll = Poll::new()?;
    let wake = Arc::new(Wake {
        waker: Waker::new(poll.registry(), WAKE)?,
        parked: AtomicBool::new(false),
    });
    Ok((
        InboxSender {
            tx,
            wake: wake.clone(),
        },
        Inbox {
            rx,
            stashed: None,
            wake,
            poll,
            events: Events::with_capacity(64),
            peers: HashMap::new(),
            readable: Vec::new(),
            next_token: 1,
        },
    ))
}

impl<T> Inbox<T> {
    /// Returns once an input or peer bytes may be waiting, or after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> Result<(), Disconnected> {
        let busy = self.stashed.is_some() || !self.readable.is_empty();
        if !busy {
            self.wake.parked.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            match self.rx.try_recv() {
                Ok(input) => self.stashed = Some(input),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => return Err(Disconnected),
            }
        }
        let timeout = if busy || self.stashed.is_some() {
            Duration::ZERO
        } else {
            timeout
        };
        let polled = self.poll.poll(&mut self.events, Some(timeout));
        self.wake.parked.store(false, Ordering::Relaxed);
        if let Err(e) = polled {
            if e.kind() != io::ErrorKind::Interrupted {
                tracing::warn!("raft thread poll: {e}");
            }
        }
        for event in self.events.iter() {
            let token = event.token();
            if token != WAKE && !self.readable.contains(&token) {
                self.readable.push(token);
            }
        }
        Ok(())
    }

    /// The next waiting input, if any.
    pub fn next_input(&mut self) -> Option<T> {
        self.stashed.take().or_else(|| self.rx.try_recv().ok())
    }

    /// Takes over a peer connection from the transport; its raft messages come out of
    /// `read_peers` from now on.
    pub fn adopt(&mut self, peer: AdoptedPeer, now: Instant) {
        let token = Token(self.next_token);
        self.next_token += 1;
        match PeerSocket::adopt(peer, self.poll.registry(), token, Interest::READABLE, now) {
            Ok(socket) => {
                self.peers.insert(token, socket);
                // Bytes may have arrived before it was registered.
                self.readable.push(token);
            }
            Err(e) => tracing::warn!("cannot take over a peer connection: {e}"),
        }
    }

    /// Reads what the peers sent, within the turn's budget: raft messages go to
    /// `messages`, in the order each peer sent them; the rest to the transport's
    /// handler. A connection that fails or sends garbage is closed (the peer
    /// reconnects).
    pub fn read_peers(&mut self, messages: &mut Vec<Message>, now: Instant) {
        let mut budget = READ_BUDGET;
        let mut still_readable = Vec::new();
        for token in std::mem::take(&mut self.readable) {
            let Some(socket) = self.peers.get_mut(&token) else {
                continue;
            };
            match socket.read(messages, &mut budget, now) {
                Ok(true) => still_readable.push(token),
                Ok(false) => {}
                Err(e) => {
                    tracing::debug!(peer = socket.from(), "peer connection closed: {e}");
                    self.close(token);
                }
            }
        }
        self.readable = still_readable;
    }

    /// Closes connections silent for longer than their limit: a peer that is alive
    /// writes at least a keepalive every half tick.
    pub fn drop_silent(&mut self, now: Instant) {
        let silent: Vec<Token> = self
            .peers
            .iter()
            .filter(|(_, socket)| socket.silent(now))
            .map(|(token, _)| *token)
            .collect();
        for token in silent {
            if let Some(socket) = self.peers.get(&token) {
                tracing::debug!(peer = socket.from(), "peer connection silent; closed");
            }
            self.close(token);
        }
    }

    fn close(&mut self, token: Token) {
        if let Some(mut socket) = self.peers.remove(&token) {
            socket.deregister(self.poll.registry());
        }
        self.readable.retain(|t| *t != token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_wakes_a_parked_wait() {
        let (tx, mut inbox) = inbox::<u32>().expect("inbox");
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(7).expect("send");
            tx
        });
        let started = Instant::now();
        inbox.wait(Duration::from_secs(30)).expect("wait");
        // Woken by the send, not the 30 s timeout (bounded generously: this asserts
        // the wake-up happened, not how fast).
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(inbox.next_input(), Some(7));
        assert_eq!(inbox.next_input(), None);
        drop(sender.join());
    }

    #[test]
    fn an_input_sent_before_the_wait_is_not_missed() {
        let (tx, mut inbox) = inbox::<u32>().expect("inbox");
        tx.send(1).expect("send");
        tx.send(2).expect("send");
        inbox.wait(Duration::from_secs(30)).expect("wait");
        assert_eq!(inbox.next_input(), Some(1));
        assert_eq!(inbox.next_input(), Some(2));
        assert_eq!(inbox.next_input(), None);
    }

    #[test]
    fn a_send_racing_the_park_is_never_missed() {
        // Each round a send races the wait's park; the wait must come back with the
        // input whichever wins. A lost wake-up would sit out the 60 s timeout.
        let (tx, mut inbox) = inbox::<u32>().expect("inbox");
        for round in 0..2_000u32 {
            let tx = tx.clone();
            let sender = std::thread::spawn(move || tx.send(round).expect("send"));
            let started = Instant::now();
            let mut got = None;
            // A wait may return early, for an earlier round's wake-up: then again.
            for _ in 0..3 {
                inbox.wait(Duration::from_secs(60)).expect("wait");
                got = inbox.next_input();
                if got.is_some() {
                    break;
                }
            }
            sender.join().expect("sender");
            assert_eq!(got, Some(round));
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "a lost wake-up"
            );
        }
    }

    #[test]
    fn the_wait_reports_a_closed_channel() {
        let (tx, mut inbox) = inbox::<u32>().expect("inbox");
        drop(tx);
        assert!(inbox.wait(Duration::from_secs(1)).is_err());
    }
}

//! Session liveness, and whether this server may serve clients at all.
//!
//! One task owns the leader's expiry clock ([`ExpiryTracker`]); everything that bears on
//! it arrives over one channel: sessions opened and ended (effects of applied txns),
//! a snapshot installed, followers' reports and the leader's acknowledgements.
//!
//! Every `tickTime/10`:
//! - a **follower** (or observer) sends the leader a report of every session it holds
//!   and how long ago each client was heard from. Reports are complete, not deltas, so
//!   a lost one is made good by the next; the leader acknowledges each one it applies.
//! - the **leader** moves each session's deadline to a timeout after its client was
//!   last heard from (locally, or per the reports) and proposes the expiry of sessions
//!   past their deadline.
//! - every server decides whether it is **serving**: the leader while a majority of
//!   voters answered it within the serving window, a follower while the leader
//!   acknowledged one of its reports sent within the window. The window is 0.8
//!   tickTime. A server that stops serving closes every client connection (its clients
//!   go to a server that is in a quorum) and takes no new ones until it serves again,
//!   as ZooKeeper closes client connections when a server loses its leader.
//!
//! Why the window keeps locks safe: a client of a server cut off at T was last reported
//! to the leader no earlier than T − window, and pings at least every third of its
//! session timeout, so the majority can expire its session no earlier than about
//! T − window + 2/3 · timeout; the cut server closes the client's connection by
//! T + window + tickTime/10. With the minimum session timeout (2 tickTimes) the client
//! is told (Disconnected) before its session can expire and its lock go to another.
//!
//! A paused process (SIGSTOP, a stalled VM) must not act on a stale clock: when this
//! task finds it did not run for longer than the window, the leader gives every
//! session a fresh timeout rather than expiring them all, as after an election.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::consensus::{LivenessReport, Transport};
use crate::server::Shared;
use crate::session::ExpiryTracker;
use crate::txn::TxnKind;

/// What the liveness task is told.
#[derive(Debug)]
pub enum LivenessEvent {
    /// A session was created (applied on this server): its clock starts.
    Opened { session: i64, timeout: Duration },
    /// A session was closed or expired.
    Ended { session: i64 },
    /// The state was replaced by a snapshot holding these sessions.
    Installed { sessions: Vec<(i64, Duration)> },
    /// A follower's report (this server is, or was, the leader).
    Report { from: u64, report: LivenessReport },
    /// The leader applied our report `seq`.
    Ack { from: u64, seq: u64 },
}

/// The handle that feeds the liveness task; cheap to clone, never blocks.
#[derive(Debug, Clone)]
pub struct Liveness {
    tx: mpsc::UnboundedSender<LivenessEvent>,
}

/// The liveness task's end of the channel.
pub struct LivenessEvents {
    rx: mpsc::UnboundedReceiver<LivenessEvent>,
}

pub fn channel() -> (Liveness, LivenessEvents) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Liveness { tx }, LivenessEvents { rx })
}

impl Liveness {
    pub fn send(&self, event: LivenessEvent) {
        // Closed only at shutdown, when nobody needs the clock any more.
        let _ = self.tx.send(event);
    }
}

/// The serving window for a tickTime (see the module docs).
pub fn serving_window(tick_time: Duration) -> Duration {
    tick_time * 4 / 5
}

/// Reports sent and not yet acknowledged, kept this many at most.
const UNACKED_KEPT: usize = 64;

struct Task {
    shared: Arc<Shared>,
    transport: Option<Transport>,
    expiry: ExpiryTracker,
    window: Duration,
    was_leader: bool,
    last_tick: Instant,
    next_seq: u64,
    /// (seq, when sent) of recent reports, oldest first.
    sent: VecDeque<(u64, Instant)>,
    /// When the newest report the leader acknowledged was sent.
    acked: Option<Instant>,
}

/// Runs until shutdown.
pub async fn run(shared: Arc<Shared>, mut events: LivenessEvents, transport: Option<Transport>) {
    let period = (shared.settings.tick / 10).max(Duration::from_millis(1));
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut task = Task {
        window: serving_window(shared.settings.tick),
        shared: shared.clone(),
        transport,
        expiry: ExpiryTracker::default(),
        was_leader: false,
        last_tick: Instant::now(),
        next_seq: 1,
        sent: VecDeque::new(),
        acked: None,
    };
    loop {
        tokio::select! {
            _ = ticker.tick() => task.tick(Instant::now()),
            event = events.rx.recv() => match event {
                Some(event) => task.on_event(event, Instant::now()),
                None => return,
            },
            _ = shared.shutdown.cancelled() => return,
        }
    }
}

impl Task {
    fn on_event(&mut self, event: LivenessEvent, now: Instant) {
        match event {
            LivenessEvent::Opened { session, timeout } => self.expiry.add(session, timeout, now),
            LivenessEvent::Ended { session } => self.expiry.remove(session),
            LivenessEvent::Installed { sessions } => {
                // Nobody knows when these clients were last heard from: a full timeout.
                self.expiry.clear();
                for (session, timeout) in sessions {
                    self.expiry.add(session, timeout, now);
                }
            }
            LivenessEvent::Report { from, report } => {
                if !self.shared.is_leader() {
                    // Not ours to count, and unacknowledged: the follower stops serving
                    // unless it finds the real leader.
                    return;
                }
                for (session, age) in report.sessions {
                    let heard = now
                        .checked_sub(Duration::from_millis(u64::from(age)))
                        .unwrap_or(now);
                    self.expiry.touch(session, heard);
                }
                if let Some(transport) = &self.transport {
                    transport.ack(from, report.seq);
                }
            }
            LivenessEvent::Ack { from, seq } => {
                if from != self.shared.status.leader() {
                    return;
                }
                while let Some((sent_seq, sent_at)) = self.sent.front().copied() {
                    if sent_seq > seq {
                        break;
                    }
                    self.sent.pop_front();
                    if sent_seq == seq {
                        self.acked = Some(self.acked.map_or(sent_at, |a| a.max(sent_at)));
                    }
                }
            }
        }
    }

    fn tick(&mut self, now: Instant) {
        let stalled = now.duration_since(self.last_tick) > self.window;
        self.last_tick = now;
        let leader = self.shared.is_leader();
        if leader && (!self.was_leader || stalled) {
            // A new leader, or one whose clock stood still: nobody knows when clients
            // were last heard from, so every session gets a full timeout from now.
            self.expiry.reset_all(now);
        }
        self.was_leader = leader;
        let serving = self.decide_serving(now);
        if leader {
            for (session, heard) in self.shared.conns.heard() {
                self.expiry.touch(session, heard);
            }
            if serving && !stalled {
                for session in self.expiry.take_expired(now) {
                    tracing::info!("expiring session {session:#x}");
                    self.shared
                        .propose_internal(session, TxnKind::ExpireSession);
                }
            }
        } else {
            self.report(now);
        }
    }

    /// Publishes whether this server serves, closing every client connection when it
    /// stops.
    fn decide_serving(&mut self, now: Instant) -> bool {
        let shared = &self.shared;
        let within =
            |at: Option<Instant>| at.is_some_and(|at| now.duration_since(at) <= self.window);
        let serving = shared.settings.standalone
            || if shared.is_leader() {
                within(shared.status.leader_contact())
            } else {
                shared.status.leader() != 0 && within(self.acked)
            };
        let was = shared.serving.swap(serving, Ordering::AcqRel);
        if was && !serving {
            let closed = shared.conns.close_all();
            tracing::warn!(
                "lost touch with the quorum (no answer within {:?}): not serving; closed {closed} \
                 client connections",
                self.window
            );
        } else if serving && !was {
            tracing::info!("in touch with a quorum: serving clients");
        }
        serving
    }

    /// Sends the leader the sessions held here and how long ago each was heard from.
    fn report(&mut self, now: Instant) {
        let leader = self.shared.status.leader();
        let Some(transport) = &self.transport else {
            return;
        };
        if leader == 0 {
            return;
        }
        let sessions = self
            .shared
            .conns
            .heard()
            .into_iter()
            .map(|(session, heard)| {
                let age = now.saturating_duration_since(heard).as_millis();
                (session, u32::try_from(age).unwrap_or(u32::MAX))
            })
            .collect();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.sent.push_back((seq, now));
        while self.sent.len() > UNACKED_KEPT {
            self.sent.pop_front();
        }
        transport.report(leader, LivenessReport { seq, sessions });
    }
}

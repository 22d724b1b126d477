//! The liveness decisions as a pure state machine: events and ticks go in with the
//! time, actions come out. See the parent module for the protocol and why it is safe.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::LivenessEvent;
use crate::consensus::LivenessReport;
use crate::session::ExpiryTracker;

/// Reports sent and not yet acknowledged, kept this many at most.
const UNACKED_KEPT: usize = 64;

/// What the core is told of the raft role at each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub standalone: bool,
    pub leader: bool,
    /// The leader this server follows, 0 if none.
    pub leader_id: u64,
    /// The index of the last entry this server applied.
    pub applied: u64,
    /// On the leader: when a majority of voters last answered it.
    pub leader_contact: Option<Instant>,
}

/// What the core asks of the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Propose the expiry of this session (leader only).
    Expire(i64),
    /// Send this report to the leader.
    Report { leader: u64, report: LivenessReport },
    /// Acknowledge a follower's report.
    Ack { follower: u64, seq: u64 },
    /// Out of touch with a quorum: close every client connection, take no new ones.
    StopServing { window: Duration },
    /// Back in touch: take clients again.
    StartServing,
}

#[derive(Debug)]
pub struct LivenessCore {
    expiry: ExpiryTracker,
    window: Duration,
    was_leader: bool,
    last_tick: Instant,
    next_seq: u64,
    /// (seq, when sent) of recent reports, oldest first.
    sent: VecDeque<(u64, Instant)>,
    /// When the newest report the leader acknowledged was sent.
    acked: Option<Instant>,
    /// What the leader had applied when it acknowledged the newest report.
    acked_commit: u64,
    serving: bool,
}

impl LivenessCore {
    pub fn new(window: Duration, now: Instant) -> Self {
        LivenessCore {
            expiry: ExpiryTracker::default(),
            window,
            was_leader: false,
            last_tick: now,
            next_seq: 1,
            sent: VecDeque::new(),
            acked: None,
            acked_commit: 0,
            serving: false,
        }
    }

    #[cfg(test)]
    pub fn serving(&self) -> bool {
        self.serving
    }

    pub fn on_event(&mut self, event: LivenessEvent, view: View, now: Instant) -> Vec<Action> {
        match event {
            LivenessEvent::Opened { session, timeout } => self.expiry.add(session, timeout, now),
            LivenessEvent::Ended { session } => self.expiry.remove(session),
            LivenessEvent::Reattached { session } => self.expiry.touch(session, now),
            LivenessEvent::Installed { sessions } => {
                // Nobody knows when these clients were last heard from: a full timeout.
                self.expiry.clear();
                for (session, timeout) in sessions {
                    self.expiry.add(session, timeout, now);
                }
            }
            LivenessEvent::Report { from, report } => {
                if !view.leader {
                    // Not ours to count, and unacknowledged: the follower stops serving
                    // unless it finds the real leader.
                    return Vec::new();
                }
                for (session, age) in report.sessions {
                    let heard = now
                        .checked_sub(Duration::from_millis(u64::from(age)))
                        .unwrap_or(now);
                    self.expiry.touch(session, heard);
                }
                return vec![Action::Ack {
                    follower: from,
                    seq: report.seq,
                }];
            }
            LivenessEvent::Ack { from, seq, commit } => {
                if from != view.leader_id {
                    return Vec::new();
                }
                while let Some((sent_seq, sent_at)) = self.sent.front().copied() {
                    if sent_seq > seq {
                        break;
                    }
                    self.sent.pop_front();
                    if sent_seq == seq {
                        self.acked = Some(self.acked.map_or(sent_at, |a| a.max(sent_at)));
                        self.acked_commit = self.acked_commit.max(commit);
                    }
                }
            }
        }
        Vec::new()
    }

    /// One tick: `heard` is every session held on this server and when its client was
    /// last heard from.
    pub fn tick(&mut self, view: View, heard: Vec<(i64, Instant)>, now: Instant) -> Vec<Action> {
        let mut actions = Vec::new();
        let stalled = now.duration_since(self.last_tick) > self.window;
        self.last_tick = now;
        if view.leader && (!self.was_leader || stalled) {
            // A new leader, or one whose clock stood still: nobody knows when clients
            // were last heard from, so every session gets a full timeout from now.
            self.expiry.reset_all(now);
        }
        self.was_leader = view.leader;
        let serving = self.decide_serving(view, now);
        if serving != self.serving {
            self.serving = serving;
            actions.push(if serving {
                Action::StartServing
            } else {
                Action::StopServing {
                    window: self.window,
                }
            });
        }
        if view.leader {
            for (session, at) in heard {
                self.expiry.touch(session, at);
            }
            if serving && !stalled {
                actions.extend(
                    self.expiry
                        .take_expired(now)
                        .into_iter()
                        .map(Action::Expire),
                );
            }
        } else if view.leader_id != 0 {
            actions.push(self.report(view.leader_id, heard, now));
        }
        actions
    }

    fn decide_serving(&self, view: View, now: Instant) -> bool {
        let within = |at: Option<Instant>| {
            at.is_some_and(|at| now.saturating_duration_since(at) <= self.window)
        };
        view.standalone
            || if view.leader {
                within(view.leader_contact)
            } else {
                // Already serving, or caught up with the leader: a rejoining follower
                // does not answer from a state far behind the ensemble's.
                view.leader_id != 0
                    && within(self.acked)
                    && (self.serving || view.applied >= self.acked_commit)
            }
    }

    fn report(&mut self, leader: u64, heard: Vec<(i64, Instant)>, now: Instant) -> Action {
        let sessions = heard
            .into_iter()
            .map(|(session, at)| {
                let age = now.saturating_duration_since(at).as_millis();
                (session, u32::try_from(age).unwrap_or(u32::MAX))
            })
            .collect();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.sent.push_back((seq, now));
        while self.sent.len() > UNACKED_KEPT {
            self.sent.pop_front();
        }
        Action::Report {
            leader,
            report: LivenessReport { seq, sessions },
        }
    }
}

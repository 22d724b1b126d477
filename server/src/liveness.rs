//! Session liveness, and whether this server may serve clients at all. The decisions
//! are a pure [`LivenessCore`], fed with the time; this module's task carries out
//! what it decides.
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
//!   acknowledged one of its reports sent within the window — and a follower starts
//!   serving only once it has applied what the leader had applied when it acknowledged
//!   (as a ZooKeeper follower syncs with its leader before it serves), so a server that
//!   rejoins after a partition, a restart or a wiped disk never answers from a state
//!   far behind the ensemble's. The window is 0.8 tickTime. A server that stops
//!   serving closes every client connection (its clients go to a server that is in a
//!   quorum) and takes no new ones until it serves again, as ZooKeeper closes client
//!   connections when a server loses its leader.
//!
//! Why the window keeps locks safe: let S be when a follower sent the newest report
//! the leader acknowledged. The follower stops serving (its clients are told
//! Disconnected) by S + window + tickTime/10. That report said each client was heard
//! at most a third of its session timeout before S (clients ping at least that often),
//! so the leader cannot expire the session before S − timeout/3 + timeout. With the
//! minimum session timeout (2 tickTimes), 2/3 · timeout = 1.33 tickTimes exceeds
//! 0.8 + 0.1 tickTimes: the client is told before its session can expire and its lock
//! go to another. (`tests::a_cut_off_follower_stops_serving_before_the_leader_expires_its_session`
//! checks it on 1,000 schedules, and the simulated ensemble on whole clusters.)
//!
//! A paused process (SIGSTOP, a stalled VM) must not act on a stale clock: when this
//! task finds it did not run for longer than the window, the leader gives every
//! session a fresh timeout rather than expiring them all, as after an election.

mod core;
#[cfg(test)]
mod task_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::conns::ConnRegistry;
use crate::consensus::{LivenessReport, Transport};
use crate::health::Health;
use crate::replicated::Replicated;
use crate::txn::TxnKind;
use crate::writes::Writes;

pub use self::core::{Action, LivenessCore, View};

/// What the liveness task is told.
#[derive(Debug)]
pub enum LivenessEvent {
    /// A session was created (applied on this server): its clock starts.
    Opened { session: i64, timeout: Duration },
    /// A session was closed or expired.
    Ended { session: i64 },
    /// A session's client reattached (a committed MoveSession): heard from now.
    Reattached { session: i64 },
    /// The state was replaced by a snapshot holding these sessions.
    Installed { sessions: Vec<(i64, Duration)> },
    /// A follower's report (this server is, or was, the leader).
    Report { from: u64, report: LivenessReport },
    /// The leader applied our report `seq`, having applied the log up to `commit`.
    Ack { from: u64, seq: u64, commit: u64 },
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

/// What the liveness task works with: it writes `health`'s serving flag and proposes
/// expiries; the rest it reads.
pub struct LivenessTask {
    pub tick_time: Duration,
    pub standalone: bool,
    pub health: Arc<Health>,
    pub conns: Arc<ConnRegistry>,
    pub replicated: Arc<Replicated>,
    pub writes: Arc<Writes>,
    /// `None` standalone.
    pub transport: Option<Transport>,
    pub shutdown: CancellationToken,
}

/// Runs until shutdown.
pub async fn run(task: LivenessTask, mut events: LivenessEvents) {
    let period = (task.tick_time / 10).max(Duration::from_millis(1));
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut core = LivenessCore::new(serving_window(task.tick_time), now());
    loop {
        let actions = tokio::select! {
            _ = ticker.tick() => core.tick(task.view(), task.conns.heard(), now()),
            event = events.rx.recv() => match event {
                Some(event) => core.on_event(event, task.view(), now()),
                None => return,
            },
            _ = task.shutdown.cancelled() => return,
        };
        for action in actions {
            task.carry_out(action);
        }
    }
}

/// The task's clock is tokio's (the same as the system's, except in tests that pause
/// it), so a test can step the task through its windows without waiting.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl LivenessTask {
    /// What the core needs to know of the raft role.
    fn view(&self) -> View {
        let status = &self.health.status;
        View {
            standalone: self.standalone,
            leader: status.is_leader(),
            leader_id: status.leader(),
            applied: status.applied(),
            leader_contact: status.leader_contact(),
        }
    }

    fn carry_out(&self, action: Action) {
        match action {
            Action::Expire(session) => {
                tracing::info!("expiring session {session:#x}");
                let conn = self.replicated.session_conn(session);
                self.writes
                    .propose_internal(session, conn, TxnKind::ExpireSession);
            }
            Action::Report { leader, report } => {
                if let Some(transport) = &self.transport {
                    transport.report(leader, report);
                }
            }
            Action::Ack { follower, seq } => {
                if let Some(transport) = &self.transport {
                    transport.ack(follower, seq, self.health.status.applied());
                }
            }
            Action::StopServing { window } => {
                self.health.set_serving(false);
                let closed = self.conns.close_all();
                tracing::warn!(
                    "lost touch with the quorum (no answer within {window:?}): not serving; \
                     closed {closed} client connections"
                );
            }
            Action::StartServing => {
                self.health.set_serving(true);
                tracing::info!("in touch with a quorum: serving clients");
            }
        }
    }
}

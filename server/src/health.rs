//! Whether this server may take clients: the raft role as the raft thread publishes
//! it, whether the liveness task finds it in touch with a quorum, and how far it has
//! replayed its own log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::consensus::Status;

pub struct Health {
    /// The raft role, leader and indexes, kept current by the raft thread.
    pub status: Arc<Status>,
    /// Whether this server is in touch with a quorum (always, standalone): written by
    /// the liveness task only, which closes every client connection when it stops being
    /// so.
    serving: AtomicBool,
    /// The last log index this server had when it started: it takes no sessions until
    /// it has applied that far, so that a restarted server never answers from a state
    /// older than the one it had already acknowledged.
    pub replay_to: u64,
}

impl Health {
    pub fn new(status: Arc<Status>, standalone: bool, replay_to: u64) -> Self {
        Health {
            status,
            serving: AtomicBool::new(standalone),
            replay_to,
        }
    }

    pub fn is_leader(&self) -> bool {
        self.status.is_leader()
    }

    /// Whether this server is in touch with a quorum (see `liveness`).
    pub fn is_serving(&self) -> bool {
        self.serving.load(Ordering::Acquire)
    }

    /// For the liveness task alone.
    pub fn set_serving(&self, serving: bool) {
        self.serving.store(serving, Ordering::Release);
    }

    /// Whether this server has replayed its own log as far as it went at start-up.
    pub fn replayed(&self) -> bool {
        self.status.applied() >= self.replay_to
    }

    /// Whether this server may take clients: it has replayed its own log, and is in
    /// touch with a quorum.
    pub fn ready_for_clients(&self) -> bool {
        self.replayed() && self.is_serving()
    }
}

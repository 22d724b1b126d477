//! ZooKeeper's `quorum_ack_latency` on the leader: how long its proposals wait, from
//! being appended to its log until a quorum holds them (committed). Together with
//! `updatelatency` (arrival to reply) it splits a write's time into consensus and the
//! rest: queueing before the proposal, applying, and the reply.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The leader's appended, uncommitted proposals, a batch (one `Ready`'s entries) per
/// element, oldest first.
#[derive(Debug, Default)]
pub struct QuorumAckClock {
    /// The last index of each batch and when the leader appended it.
    pending: VecDeque<(u64, Instant)>,
}

/// More batches than any leader has in flight; past it the oldest are forgotten, so a
/// commit index that stops advancing can't grow the queue without bound.
const MAX_PENDING: usize = 4096;

impl QuorumAckClock {
    /// The leader appended entries up to `last_index` at `at`.
    pub fn appended(&mut self, last_index: u64, at: Instant) {
        if self.pending.len() == MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back((last_index, at));
    }

    /// The commit index reached `committed` at `at`: how long each batch it covers
    /// waited, oldest first.
    pub fn committed(&mut self, committed: u64, at: Instant) -> Vec<Duration> {
        let mut waits = Vec::new();
        while let Some(&(last_index, appended)) = self.pending.front() {
            if last_index > committed {
                break;
            }
            self.pending.pop_front();
            waits.push(at.saturating_duration_since(appended));
        }
        waits
    }

    /// Leadership is lost: what is pending commits, if ever, under another leader.
    pub fn clear(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_times_every_batch_it_covers_and_no_later_one() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut clock = QuorumAckClock::default();
        clock.appended(3, ms(0));
        clock.appended(5, ms(1));
        clock.appended(9, ms(2));
        assert_eq!(clock.committed(2, ms(3)), Vec::<Duration>::new());
        assert_eq!(
            clock.committed(5, ms(4)),
            [Duration::from_millis(4), Duration::from_millis(3)]
        );
        assert_eq!(clock.committed(8, ms(5)), Vec::<Duration>::new());
        assert_eq!(clock.committed(9, ms(7)), [Duration::from_millis(5)]);
        assert_eq!(clock.committed(100, ms(8)), Vec::<Duration>::new());
    }

    #[test]
    fn lost_leadership_forgets_the_pending_batches() {
        let start = Instant::now();
        let mut clock = QuorumAckClock::default();
        clock.appended(3, start);
        clock.clear();
        assert_eq!(clock.committed(3, start), Vec::<Duration>::new());
    }

    #[test]
    fn the_queue_is_bounded() {
        let start = Instant::now();
        let mut clock = QuorumAckClock::default();
        for index in 1..=(MAX_PENDING as u64 + 10) {
            clock.appended(index, start);
        }
        assert_eq!(clock.committed(u64::MAX, start).len(), MAX_PENDING);
    }
}

//! When each session expires unless its client is heard from: the leader's clock (a
//! pure structure; the liveness task owns the one instance and feeds it).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct ExpiryTracker {
    deadlines: HashMap<i64, (Instant, Duration)>,
    /// Sessions whose expiry has been proposed but not yet applied.
    expiring: HashSet<i64>,
}

impl ExpiryTracker {
    /// Starts (or restarts) a session's clock.
    pub fn add(&mut self, session: i64, timeout: Duration, now: Instant) {
        self.deadlines.insert(session, (now + timeout, timeout));
        self.expiring.remove(&session);
    }

    /// The client was heard from at `heard`: its deadline is a full timeout after
    /// that, unless it already was later (reports may arrive out of order).
    pub fn touch(&mut self, session: i64, heard: Instant) {
        if let Some((deadline, timeout)) = self.deadlines.get_mut(&session) {
            *deadline = (*deadline).max(heard + *timeout);
        }
    }

    pub fn remove(&mut self, session: i64) {
        self.deadlines.remove(&session);
        self.expiring.remove(&session);
    }

    /// Sessions past their deadline that have not been reported yet; each is reported
    /// once until it is touched or removed.
    pub fn take_expired(&mut self, now: Instant) -> Vec<i64> {
        let mut expired: Vec<i64> = self
            .deadlines
            .iter()
            .filter(|(id, (deadline, _))| *deadline <= now && !self.expiring.contains(id))
            .map(|(id, _)| *id)
            .collect();
        // In id order, not the map's (random) order: replicas of a simulated run, and
        // an operator reading the log, see the same sequence each time.
        expired.sort_unstable();
        self.expiring.extend(&expired);
        expired
    }

    pub fn clear(&mut self) {
        self.deadlines.clear();
        self.expiring.clear();
    }

    /// Gives every session a full timeout from now: after a leader change nobody knows
    /// when clients were last heard from.
    pub fn reset_all(&mut self, now: Instant) {
        for (deadline, timeout) in self.deadlines.values_mut() {
            *deadline = now + *timeout;
        }
        self.expiring.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_once_unless_touched() {
        let t0 = Instant::now();
        let mut tracker = ExpiryTracker::default();
        tracker.add(1, Duration::from_secs(2), t0);
        tracker.add(2, Duration::from_secs(10), t0);
        assert!(tracker.take_expired(t0 + Duration::from_secs(1)).is_empty());
        tracker.touch(1, t0 + Duration::from_secs(1));
        assert!(tracker.take_expired(t0 + Duration::from_secs(2)).is_empty());
        assert_eq!(tracker.take_expired(t0 + Duration::from_secs(3)), vec![1]);
        assert!(tracker.take_expired(t0 + Duration::from_secs(4)).is_empty());
        tracker.remove(1);
        assert_eq!(tracker.take_expired(t0 + Duration::from_secs(11)), vec![2]);
    }

    #[test]
    fn an_older_report_does_not_pull_a_deadline_back() {
        let t0 = Instant::now();
        let mut tracker = ExpiryTracker::default();
        tracker.add(1, Duration::from_secs(2), t0);
        tracker.touch(1, t0 + Duration::from_secs(3));
        tracker.touch(1, t0 + Duration::from_secs(1));
        assert!(tracker
            .take_expired(t0 + Duration::from_millis(4900))
            .is_empty());
        assert_eq!(tracker.take_expired(t0 + Duration::from_secs(5)), vec![1]);
    }
}

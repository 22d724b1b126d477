//! When each session expires unless its client is heard from. Only the leader acts on
//! it; every server keeps one so that a new leader can start from fresh deadlines (as
//! ZooKeeper does after an election).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct ExpiryTracker {
    deadlines: HashMap<i64, (Instant, Duration)>,
    /// Sessions whose expiry has been proposed but not yet applied.
    expiring: HashSet<i64>,
    /// Sessions heard from since the last report to the leader.
    touched: HashSet<i64>,
}

impl ExpiryTracker {
    /// Starts (or restarts) a session's clock.
    pub fn add(&mut self, session: i64, timeout: Duration, now: Instant) {
        self.deadlines.insert(session, (now + timeout, timeout));
        self.expiring.remove(&session);
    }

    /// The client was heard from: its deadline moves a full timeout ahead.
    pub fn touch(&mut self, session: i64, now: Instant) {
        if let Some((deadline, timeout)) = self.deadlines.get_mut(&session) {
            *deadline = now + *timeout;
            self.touched.insert(session);
        }
    }

    /// The sessions heard from since the last call: a follower reports them to the
    /// leader, whose clock is the one that counts.
    pub fn take_touched(&mut self) -> Vec<i64> {
        self.touched.drain().collect()
    }

    pub fn remove(&mut self, session: i64) {
        self.deadlines.remove(&session);
        self.expiring.remove(&session);
        self.touched.remove(&session);
    }

    /// Sessions past their deadline that have not been reported yet; each is reported
    /// once until it is touched or removed.
    pub fn take_expired(&mut self, now: Instant) -> Vec<i64> {
        let expired: Vec<i64> = self
            .deadlines
            .iter()
            .filter(|(id, (deadline, _))| *deadline <= now && !self.expiring.contains(id))
            .map(|(id, _)| *id)
            .collect();
        self.expiring.extend(&expired);
        expired
    }

    pub fn clear(&mut self) {
        self.deadlines.clear();
        self.expiring.clear();
        self.touched.clear();
    }

    /// Gives every session a full timeout from now: after a leader change nobody knows
    /// when clients were last heard from.
    pub fn reset_all(&mut self, now: Instant) {
        for (deadline, timeout) in self.deadlines.values_mut() {
            *deadline = now + *timeout;
        }
        self.expiring.clear();
    }

    pub fn len(&self) -> usize {
        self.deadlines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.deadlines.is_empty()
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
}

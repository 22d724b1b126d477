//! When the leader last had a quorum with it: the newest time by which a majority of
//! the voters (the leader itself counting as heard now) had answered it. A leader that
//! has not had one for a while must stop serving: the majority may already have
//! elected another leader and expired this one's sessions.

use std::collections::HashMap;
use std::time::Instant;

#[derive(Debug)]
pub struct QuorumContact {
    me: u64,
    voters: Vec<u64>,
    heard: HashMap<u64, Instant>,
}

impl QuorumContact {
    pub fn new(me: u64, voters: Vec<u64>) -> Self {
        QuorumContact {
            me,
            voters,
            heard: HashMap::new(),
        }
    }

    /// A voter answered (an append or heartbeat response of the current term).
    pub fn heard_from(&mut self, peer: u64, at: Instant) {
        if self.voters.contains(&peer) {
            let last = self.heard.entry(peer).or_insert(at);
            *last = (*last).max(at);
        }
    }

    /// Just elected: a majority voted for this server now.
    pub fn elected(&mut self, at: Instant) {
        for voter in &self.voters {
            self.heard.insert(*voter, at);
        }
    }

    /// The newest time at which a majority of voters had been heard from, if ever.
    pub fn since(&self, now: Instant) -> Option<Instant> {
        let mut times: Vec<Instant> = self
            .voters
            .iter()
            .filter_map(|voter| {
                if *voter == self.me {
                    Some(now)
                } else {
                    self.heard.get(voter).copied()
                }
            })
            .collect();
        times.sort_unstable_by(|a, b| b.cmp(a));
        let majority = self.voters.len() / 2 + 1;
        times.get(majority - 1).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_majority_th_newest_answer_counts() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut contact = QuorumContact::new(1, vec![1, 2, 3, 4, 5]);
        assert_eq!(contact.since(t0 + s), None);
        contact.heard_from(2, t0);
        assert_eq!(contact.since(t0 + s), None, "two of five is no majority");
        contact.heard_from(3, t0 + s);
        assert_eq!(contact.since(t0 + 2 * s), Some(t0));
        contact.heard_from(4, t0 + 2 * s);
        assert_eq!(contact.since(t0 + 3 * s), Some(t0 + s));
        // A learner or unknown id changes nothing; older answers don't go back.
        contact.heard_from(9, t0 + 9 * s);
        contact.heard_from(4, t0);
        assert_eq!(contact.since(t0 + 3 * s), Some(t0 + s));
    }

    #[test]
    fn a_single_voter_is_its_own_quorum() {
        let now = Instant::now();
        assert_eq!(QuorumContact::new(1, vec![1]).since(now), Some(now));
    }
}

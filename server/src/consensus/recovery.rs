//! Rejoining safely after losing raft state.
//!
//! Term and vote live in dataDir, the log in dataLogDir. A server that lost either
//! (a wiped disk, a restore of one directory only) no longer knows whom it voted for,
//! or which entries it acknowledged. As a full voter it could vote twice in one term
//! (two leaders in a term) or help elect a leader that lacks a committed write.
//!
//! So such a server **grants no vote or pre-vote and never campaigns** until it has
//! caught up from a leader of the current term: its log holds, durably, the entries up
//! to an index that leader had committed after committing an entry of its own term
//! (either such an entry itself, or the index a ReadIndex the server asks for returns:
//! raft-rs's leader answers a ReadIndex only once it has committed in its term). A
//! leader commits an entry of its term only with a majority that accepted that term, so
//! by then:
//! - its log holds every committed entry (log matching), so whoever it votes for has
//!   every committed write if it wins with its vote (the election restriction holds
//!   again);
//! - every term in which it could have voted before the loss is at most the current
//!   term or belongs to an election that no majority completed: a majority accepted the
//!   current term after the loss, and no server accepts an older term after a newer one.
//!   It votes from then on only in terms later than the current one.
//!
//! A server with no state at all is either new or wholly wiped, which it cannot tell on
//! its own: peers say in their hello whether they have raft state. When a majority of
//! the voters (this one included) has none, the ensemble is new: nothing was ever
//! committed that a vote could lose, and it votes normally. Otherwise it waits to catch
//! up as above.
//!
//! The state survives restarts: the store records "rejoining" in the meta database
//! before the server takes part, and clears it (flushed) when the guard says the server
//! caught up, before it votes; a server that crashes again meanwhile restarts as
//! rejoining, not as an intact voter (its new hard state would look whole).
//!
//! [`crate::consensus::replica`] asks this guard before it steps a vote request and
//! before it ticks (a follower's tick only drives its election timer); nothing else
//! changes.

use std::collections::HashSet;

use raft::prelude::{Message, MessageType};
use raft::{RawNode, Storage};

pub use crate::store::RaftStateOnDisk;

#[derive(Debug)]
pub struct VoteGuard {
    me: u64,
    voters: Vec<u64>,
    /// Until caught up, no votes, no campaigns.
    recovering: bool,
    /// Blank at start: a majority of blank voters makes a new ensemble.
    blank: bool,
    blank_peers: HashSet<u64>,
    /// The index a ReadIndex asked for while recovering came back with.
    confirmed: Option<u64>,
}

/// The context of the ReadIndex a recovering server asks for.
pub const RECOVERY_READ: &[u8] = b"paddock:recovery";

impl VoteGuard {
    pub fn new(me: u64, voters: Vec<u64>, on_disk: RaftStateOnDisk) -> Self {
        // A lone voter has nobody to disagree with; a learner never votes anyway.
        let guarded = voters.len() > 1 && voters.contains(&me);
        let recovering = guarded && on_disk != RaftStateOnDisk::Intact;
        VoteGuard {
            me,
            voters,
            recovering,
            blank: on_disk == RaftStateOnDisk::Blank,
            blank_peers: HashSet::new(),
            confirmed: None,
        }
    }

    pub fn recovering(&self) -> bool {
        self.recovering
    }

    /// Whether raft may step this message now.
    pub fn admits(&self, message: &Message) -> bool {
        !(self.recovering
            && matches!(
                message.get_msg_type(),
                MessageType::MsgRequestVote | MessageType::MsgRequestPreVote
            ))
    }

    /// A peer's hello: whether it has raft state. True when this ends the recovery
    /// (the caller must make that durable before this server votes).
    pub fn peer_hello(&mut self, peer: u64, has_state: bool) -> bool {
        if !self.recovering || !self.blank || !self.voters.contains(&peer) {
            return false;
        }
        if has_state {
            // Someone has state: this is not a new ensemble.
            self.blank = false;
            return false;
        }
        self.blank_peers.insert(peer);
        let blank = 1 + self.blank_peers.len();
        if blank > self.voters.len() / 2 {
            tracing::info!(
                "a majority of the ensemble ({blank} of {}) has no raft state: a new \
                 ensemble; server {} votes",
                self.voters.len(),
                self.me
            );
            self.recovering = false;
            return true;
        }
        false
    }

    /// Whether to ask the leader for a ReadIndex (with [`RECOVERY_READ`]) now.
    pub fn wants_read_index(&self) -> bool {
        self.recovering && self.confirmed.is_none()
    }

    /// The leader answered the recovery ReadIndex with `index`.
    pub fn read_confirmed(&mut self, index: u64) {
        if self.recovering {
            self.confirmed = Some(self.confirmed.map_or(index, |i| i.max(index)));
        }
    }

    /// Ends recovery once this server's log holds, durably, what a leader of the
    /// current term had committed after committing in its term. True when it ends now
    /// (the caller must make that durable before this server votes).
    pub fn check_caught_up<S: Storage>(&mut self, node: &RawNode<S>) -> bool {
        if !self.recovering {
            return false;
        }
        let raft = &node.raft;
        let log = &raft.raft_log;
        let durable = log.committed.min(log.persisted);
        let own_term_entry = log.committed > 0
            && log.persisted >= log.committed
            && log.term(log.committed).is_ok_and(|term| term == raft.term);
        let read_confirmed = self.confirmed.is_some_and(|index| durable >= index);
        let caught_up = raft.leader_id != 0 && (own_term_entry || read_confirmed);
        if caught_up {
            tracing::info!(
                "caught up from leader {} at term {} (index {}): this server votes again",
                raft.leader_id,
                raft.term,
                log.committed
            );
            self.recovering = false;
        }
        caught_up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote_request(kind: MessageType) -> Message {
        let mut m = Message::default();
        m.set_msg_type(kind);
        m
    }

    #[test]
    fn a_server_that_lost_state_refuses_votes_and_pre_votes() {
        for lost in [
            RaftStateOnDisk::Blank,
            RaftStateOnDisk::LostHardState { log_last: 9 },
            RaftStateOnDisk::LostLog {
                commit: 9,
                log_last: 0,
            },
        ] {
            let guard = VoteGuard::new(1, vec![1, 2, 3], lost);
            assert!(guard.recovering());
            assert!(!guard.admits(&vote_request(MessageType::MsgRequestVote)));
            assert!(!guard.admits(&vote_request(MessageType::MsgRequestPreVote)));
            assert!(guard.admits(&vote_request(MessageType::MsgHeartbeat)));
        }
        let intact = VoteGuard::new(1, vec![1, 2, 3], RaftStateOnDisk::Intact);
        assert!(intact.admits(&vote_request(MessageType::MsgRequestVote)));
        // Alone, or a learner: nothing to guard.
        assert!(!VoteGuard::new(1, vec![1], RaftStateOnDisk::Blank).recovering());
        assert!(!VoteGuard::new(4, vec![1, 2, 3], RaftStateOnDisk::Blank).recovering());
    }

    #[test]
    fn a_majority_of_blank_voters_is_a_new_ensemble() {
        let mut guard = VoteGuard::new(1, vec![1, 2, 3, 4, 5], RaftStateOnDisk::Blank);
        guard.peer_hello(2, false);
        assert!(guard.recovering(), "two of five is no majority");
        guard.peer_hello(9, false);
        assert!(guard.recovering(), "not a voter");
        guard.peer_hello(3, false);
        assert!(!guard.recovering());
    }

    #[test]
    fn one_peer_with_state_means_rejoin_carefully() {
        let mut guard = VoteGuard::new(1, vec![1, 2, 3], RaftStateOnDisk::Blank);
        guard.peer_hello(2, true);
        guard.peer_hello(3, false);
        assert!(guard.recovering());
        // A server that lost only one directory never takes the shortcut.
        let mut lost = VoteGuard::new(
            1,
            vec![1, 2, 3],
            RaftStateOnDisk::LostHardState { log_last: 3 },
        );
        lost.peer_hello(2, false);
        lost.peer_hello(3, false);
        assert!(lost.recovering());
    }
}

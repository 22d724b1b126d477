//! Rejoining safely after losing raft state.
//!
//! Term and vote live in dataDir, the log in dataLogDir. A server that lost either
//! (a wiped disk, a restore of one directory only) no longer knows whom it voted for,
//! or which entries it acknowledged. As a full voter it could vote twice in one term
//! (two leaders in a term) or help elect a leader that lacks a committed write.
//!
//! So such a server **grants no vote or pre-vote and never campaigns** until it has
//! caught up from a leader whose term is current, and **acknowledges nothing** (no
//! append or heartbeat response) until it knows that term is current:
//! - the leader's term is current once a majority *without this server* accepted it
//!   after this server restarted: the server asks the leader for a ReadIndex and
//!   withholds its own heartbeat response, so the answer means just that. A leader that
//!   was paused while the others moved on still believes it leads; without this, the
//!   blank server's acks alone made it a majority (in three) and it committed over
//!   writes the blank server had acknowledged before its loss. After the answer, no
//!   entry of a later term was committed with this server's help before the loss (such
//!   a commit needs a majority that includes it, and that majority's other members
//!   would refuse the older term; the two majorities meet), so acknowledging this
//!   leader's entries breaks no earlier promise;
//! - it has caught up once its log holds, durably, the index that ReadIndex returned
//!   (raft-rs's leader answers a ReadIndex only once it has committed in its term, so
//!   the index covers every committed entry). Then whoever it votes for has every
//!   committed write if it wins with its vote (the election restriction holds again),
//!   and every term in which it could have voted before the loss is at most the
//!   current term or belongs to an election that no majority completed. It votes from
//!   then on only in terms later than the current one.
//!
//! If the term changes before it has caught up, it asks again.
//!
//! What this cannot rule out, in five servers: a candidate that had its vote before the
//! loss, was itself paused mid-election and unheard by the ReadIndex's majority, and
//! resumes to finish the election in a term this server then votes in again. Only a
//! new identity for the wiped server (removing and re-adding it) closes that.
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
//! [`crate::consensus::replica`] asks this guard before it steps a vote request, before
//! it ticks (a follower's tick only drives its election timer) and before its messages
//! leave; nothing else changes.

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
    /// The term a majority without this server confirmed (by answering the recovery
    /// ReadIndex) and the index the answer came back with.
    confirmed: Option<(u64, u64)>,
}

/// The context of the ReadIndex a recovering server asks for in `term`: the leader
/// keys pending reads by context, so it names the server; and it names the term, since
/// the answer confirms the term the request was made in (the leader answers only a
/// request of its own term), which may not be the server's term by the time the answer
/// is handled.
pub fn recovery_read_context(me: u64, term: u64) -> Vec<u8> {
    let mut ctx = RECOVERY_READ.to_vec();
    ctx.extend_from_slice(&me.to_be_bytes());
    ctx.extend_from_slice(&term.to_be_bytes());
    ctx
}

/// The term of a recovery ReadIndex context of server `me`; `None` for any other.
pub fn recovery_read_term(me: u64, ctx: &[u8]) -> Option<u64> {
    let rest = ctx.strip_prefix(RECOVERY_READ)?;
    let rest = rest.strip_prefix(me.to_be_bytes().as_slice())?;
    Some(u64::from_be_bytes(rest.try_into().ok()?))
}

const RECOVERY_READ: &[u8] = b"paddock:recovery:";

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

    /// Whether this outgoing message must not leave: while rejoining, an acknowledgement
    /// (an accepted append, a heartbeat response) to a leader whose term no majority
    /// without this server has confirmed. Rejections count for nothing and may go.
    pub fn withholds(&self, message: &Message) -> bool {
        let acknowledges = match message.get_msg_type() {
            MessageType::MsgAppendResponse => !message.reject,
            MessageType::MsgHeartbeatResponse => true,
            _ => false,
        };
        acknowledges
            && self.recovering
            && self.confirmed.is_none_or(|(term, _)| term != message.term)
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

    /// Whether to ask the leader of `term` for a ReadIndex (with
    /// [`recovery_read_context`]) now.
    pub fn wants_read_index(&self, term: u64) -> bool {
        self.recovering
            && self
                .confirmed
                .is_none_or(|(confirmed, _)| confirmed != term)
    }

    /// The leader of `term` answered the recovery ReadIndex made in `term` with `index`.
    pub fn read_confirmed(&mut self, term: u64, index: u64) {
        if !self.recovering {
            return;
        }
        self.confirmed = Some(match self.confirmed {
            Some((same, earlier)) if same == term => (term, earlier.max(index)),
            _ => (term, index),
        });
    }

    /// Ends recovery once this server's log holds, durably, what the leader of the
    /// current term had committed when a majority without this server confirmed that
    /// term. True when it ends now (the caller must make that durable before this
    /// server votes).
    pub fn check_caught_up<S: Storage>(&mut self, node: &RawNode<S>) -> bool {
        if !self.recovering {
            return false;
        }
        let raft = &node.raft;
        let log = &raft.raft_log;
        let durable = log.committed.min(log.persisted);
        let caught_up = raft.leader_id != 0
            && self
                .confirmed
                .is_some_and(|(term, index)| term == raft.term && durable >= index);
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

    fn ack(kind: MessageType, term: u64, reject: bool) -> Message {
        let mut m = vote_request(kind);
        m.term = term;
        m.reject = reject;
        m
    }

    #[test]
    fn acknowledgements_wait_for_a_majority_without_this_server_to_confirm_the_term() {
        let mut guard = VoteGuard::new(1, vec![1, 2, 3], RaftStateOnDisk::Blank);
        guard.peer_hello(2, true);
        let append_ack = ack(MessageType::MsgAppendResponse, 4, false);
        let heartbeat_ack = ack(MessageType::MsgHeartbeatResponse, 4, false);
        let rejection = ack(MessageType::MsgAppendResponse, 4, true);
        assert!(guard.withholds(&append_ack));
        assert!(guard.withholds(&heartbeat_ack));
        assert!(
            !guard.withholds(&rejection),
            "a rejection counts for nothing"
        );
        assert!(guard.wants_read_index(4));
        guard.read_confirmed(4, 17);
        assert!(!guard.wants_read_index(4));
        assert!(!guard.withholds(&append_ack));
        assert!(!guard.withholds(&heartbeat_ack));
        // A new term is confirmed anew.
        assert!(guard.wants_read_index(5));
        assert!(guard.withholds(&ack(MessageType::MsgAppendResponse, 5, false)));
        // An intact server withholds nothing.
        let intact = VoteGuard::new(1, vec![1, 2, 3], RaftStateOnDisk::Intact);
        assert!(!intact.withholds(&append_ack));
        assert!(!intact.wants_read_index(4));
    }

    #[test]
    fn a_recovery_read_names_its_server_and_term() {
        let ctx = recovery_read_context(2, 7);
        assert_eq!(recovery_read_term(2, &ctx), Some(7));
        assert_eq!(recovery_read_term(3, &ctx), None, "another server's");
        assert_eq!(recovery_read_term(2, &ctx[..ctx.len() - 1]), None);
        assert_eq!(recovery_read_term(2, b"client read"), None);
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

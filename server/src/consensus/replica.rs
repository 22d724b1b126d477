//! raft-rs's `RawNode` with Paddock's rules around it, apart from any IO, so that the
//! raft loop and the in-process simulated cluster (`crate::sim`) run the same code:
//! - the vote guard of a server that lost its raft state (`recovery`): vote requests
//!   are not stepped, its acknowledgements are withheld ([`Replica::outgoing`]) until
//!   a majority without it confirms the leader's term, and it does not tick (a
//!   follower's tick only drives its election timer) but asks for the ReadIndex that
//!   confirms the term and ends its recovery;
//! - the leader's record of which voters answered lately (`contact`);
//! - the wiped-follower repair (`lost_data`).

use std::time::Instant;

use raft::prelude::Message;
use raft::prelude::MessageType;
use raft::{RawNode, Storage};

use super::contact::QuorumContact;
use super::lost_data;
use super::recovery::{recovery_read_context, recovery_read_term, VoteGuard};

pub struct Replica<S: Storage> {
    pub node: RawNode<S>,
    guard: VoteGuard,
    contact: QuorumContact,
}

impl<S: Storage> Replica<S> {
    pub fn new(node: RawNode<S>, guard: VoteGuard, contact: QuorumContact) -> Self {
        Replica {
            node,
            guard,
            contact,
        }
    }

    /// Steps a peer's message at `now`; returns the messages to send back at once (the
    /// lost-data rejection of a wiped follower).
    pub fn step(&mut self, mut message: Message, now: Instant) -> raft::Result<Vec<Message>> {
        if !self.guard.admits(&message) {
            tracing::debug!(
                "not voting for {} at term {}: rejoining after a loss of raft state",
                message.from,
                message.term
            );
            return Ok(Vec::new());
        }
        if matches!(
            message.get_msg_type(),
            MessageType::MsgAppendResponse | MessageType::MsgHeartbeatResponse
        ) && message.term == self.node.raft.term
        {
            self.contact.heard_from(message.from, now);
        }
        let lost = lost_data::clamp(&self.node, &mut message);
        if lost_data::is_lost_data_reply(&message) {
            let (peer, last) = (message.from, message.reject_hint);
            if let Some(recorded) = lost_data::restart_progress(&mut self.node, peer, last) {
                tracing::warn!(
                    "server {peer} lost its log after index {last} (recorded: {recorded}); \
                     catching it up again"
                );
            }
            return Ok(Vec::new());
        }
        let (leader, term) = (message.from, message.term);
        self.node.step(message)?;
        let Some(claimed) = lost else {
            return Ok(Vec::new());
        };
        let rejection = lost_data::lost_data_reply(&self.node, leader, term, claimed);
        tracing::warn!(
            "the leader believes this server has entries up to {claimed}, but its log ends at \
             {} (was its data wiped?): asking to be caught up",
            rejection.reject_hint
        );
        Ok(vec![rejection])
    }

    /// One raft tick, or, while rejoining after a loss of raft state, a step toward
    /// catching up. True when the rejoining ended at this tick: the caller records that
    /// durably before the next tick (which may vote).
    pub fn tick(&mut self) -> bool {
        if self.guard.check_caught_up(&self.node) {
            return true;
        }
        if !self.guard.recovering() {
            self.node.tick();
        } else if self.guard.wants_read_index(self.node.raft.term) && self.node.raft.leader_id != 0
        {
            // The leader answers once it has committed in its term and a majority
            // (without this server, which withholds its heartbeat response) has
            // confirmed the term: the index it returns is one this server must hold
            // before it votes.
            let ctx = recovery_read_context(self.node.raft.id, self.node.raft.term);
            self.node.read_index(ctx);
        }
        false
    }

    /// Takes a confirmed read state if it is the recovery's own; `false` otherwise.
    pub fn take_recovery_read(&mut self, ctx: &[u8], index: u64) -> bool {
        let Some(term) = recovery_read_term(self.node.raft.id, ctx) else {
            return false;
        };
        self.guard.read_confirmed(term, index);
        true
    }

    /// The messages of a `Ready` (or of [`Replica::step`]) that may leave now: all of
    /// them but the acknowledgements a rejoining server withholds.
    pub fn outgoing(&self, mut messages: Vec<Message>) -> Vec<Message> {
        messages.retain(|message| {
            let withheld = self.guard.withholds(message);
            if withheld {
                tracing::debug!(
                    "withholding a {:?} to {} at term {}: rejoining, and no majority \
                     without this server has confirmed that term yet",
                    message.get_msg_type(),
                    message.to,
                    message.term
                );
            }
            !withheld
        });
        messages
    }

    /// True when the hello ended the rejoining (see [`Replica::tick`]).
    pub fn peer_hello(&mut self, from: u64, has_state: bool) -> bool {
        self.guard.peer_hello(from, has_state)
    }

    /// Just elected: a majority voted for it now.
    pub fn elected(&mut self, now: Instant) {
        self.contact.elected(now);
    }

    /// On the leader, when a majority of voters last answered it.
    pub fn quorum_contact(&self, now: Instant) -> Option<Instant> {
        self.contact.since(now)
    }
}

//! The one place that reaches into raft-rs's internals: catching up a follower that
//! lost its log (its data was wiped) while the leader still records it as far ahead.
//!
//! raft-rs offers no hook for this. A leader's heartbeat carries
//! `min(recorded match, commit)`, which for a wiped follower is past the end of its log,
//! and raft-rs 0.7 panics on such a commit index; and raft-rs never lowers a follower's
//! `matched` by itself (its own `request_snapshot` needs an entry of the current term,
//! which a wiped server lacks). So:
//! - the follower clamps such a heartbeat's commit to its last index ([`clamp`]) and
//!   answers with a rejection marked [`LOST_DATA`] ([`lost_data_reply`]);
//! - the leader, on that mark, restarts the follower's progress from its real end
//!   ([`restart_progress`]) and so sends it the log or a snapshot.
//!
//! The tests below pin the raft-rs behaviour this relies on; they fail if an upgrade
//! changes it.

use raft::prelude::{Message, MessageType};
use raft::{ProgressState, RawNode, StateRole, Storage};

/// Marks the rejection a follower sends when a heartbeat shows it lost its data.
pub const LOST_DATA: &[u8] = b"paddock:lost-data";

/// Clamps a heartbeat's commit index to the end of this server's log; returns the
/// commit the leader claimed when it was past that end and the leader speaks for this
/// term or a later one (this server lost its data).
pub fn clamp<S: Storage>(node: &RawNode<S>, heartbeat: &mut Message) -> Option<u64> {
    if heartbeat.get_msg_type() != MessageType::MsgHeartbeat {
        return None;
    }
    let last = node.raft.raft_log.last_index();
    let lost =
        (heartbeat.commit > last && heartbeat.term >= node.raft.term).then_some(heartbeat.commit);
    heartbeat.commit = heartbeat.commit.min(last);
    lost
}

/// The rejection that tells `leader` this server's log ends before `claimed`.
pub fn lost_data_reply<S: Storage>(
    node: &RawNode<S>,
    leader: u64,
    term: u64,
    claimed: u64,
) -> Message {
    let mut rejection = Message::default();
    rejection.set_msg_type(MessageType::MsgAppendResponse);
    rejection.to = leader;
    rejection.from = node.raft.id;
    rejection.term = term;
    rejection.index = claimed;
    rejection.reject = true;
    rejection.reject_hint = node.raft.raft_log.last_index();
    rejection.context = bytes::Bytes::from_static(LOST_DATA);
    rejection
}

/// On the leader: the lowest index a live follower still needs from the log — the
/// snapshot it is being sent, or what it has matched while it catches up — or `None`
/// when no live follower lags. Followers that have gone quiet are left out (but one
/// being sent a snapshot, for at most the transfer's time limit), so a dead one never
/// holds the log back.
pub fn catch_up_floor<S: Storage>(node: &RawNode<S>) -> Option<u64> {
    if node.raft.state != StateRole::Leader {
        return None;
    }
    let me = node.raft.id;
    let last = node.raft.raft_log.last_index();
    node.raft
        .prs()
        .iter()
        // A follower being sent a snapshot is silent until it has it: it counts anyway.
        .filter(|(id, progress)| {
            **id != me && (progress.recent_active || progress.state == ProgressState::Snapshot)
        })
        .map(|(_, progress)| match progress.state {
            ProgressState::Snapshot => progress.pending_snapshot,
            _ => progress.matched,
        })
        .filter(|needed| *needed < last)
        .min()
}

/// Whether `message` is a follower's lost-data rejection (not for raft to step).
pub fn is_lost_data_reply(message: &Message) -> bool {
    message.get_msg_type() == MessageType::MsgAppendResponse
        && message.context.as_ref() == LOST_DATA
}

/// On the leader: restarts `peer`'s progress from `last`, the real end of its log.
/// Returns the match index the leader had recorded, if it was beyond `last`.
pub fn restart_progress<S: Storage>(node: &mut RawNode<S>, peer: u64, last: u64) -> Option<u64> {
    if node.raft.state != StateRole::Leader {
        return None;
    }
    let progress = node.raft.mut_prs().get_mut(peer)?;
    if progress.matched <= last {
        return None;
    }
    let recorded = progress.matched;
    progress.matched = last;
    progress.become_probe();
    progress.next_idx = last + 1;
    Some(recorded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use raft::prelude::{ConfState, Entry};
    use raft::storage::MemStorage;
    use raft::ProgressState;

    fn logger() -> slog::Logger {
        slog::Logger::root(slog::Discard, slog::o!())
    }

    fn node(id: u64, voters: Vec<u64>, entries: u64) -> RawNode<MemStorage> {
        let storage = MemStorage::new_with_conf_state(ConfState::from((voters, vec![])));
        let log: Vec<Entry> = (1..=entries)
            .map(|index| Entry {
                index,
                term: 1,
                ..Default::default()
            })
            .collect();
        storage.wl().append(&log).unwrap();
        let config = raft::Config {
            id,
            ..Default::default()
        };
        RawNode::new(&config, storage, &logger()).unwrap()
    }

    /// Node 1 of `voters`, with `entries` in its log, elected leader by node 2's vote.
    fn leader(voters: Vec<u64>, entries: u64) -> RawNode<MemStorage> {
        let mut leader = node(1, voters, entries);
        leader.campaign().unwrap();
        let mut vote = Message::default();
        vote.set_msg_type(MessageType::MsgRequestVoteResponse);
        vote.from = 2;
        vote.to = 1;
        vote.term = leader.raft.term;
        leader.step(vote).unwrap();
        assert_eq!(leader.raft.state, StateRole::Leader);
        leader
    }

    /// Why the clamp exists: raft-rs 0.7 panics when a heartbeat commits past the end of
    /// the log.
    #[test]
    fn raft_panics_on_a_commit_past_the_log() {
        let stepped = std::panic::catch_unwind(|| {
            let mut follower = node(2, vec![1, 2], 0);
            let mut heartbeat = Message::default();
            heartbeat.set_msg_type(MessageType::MsgHeartbeat);
            heartbeat.from = 1;
            heartbeat.to = 2;
            heartbeat.term = 1;
            heartbeat.commit = 10;
            let _ = follower.step(heartbeat);
        });
        assert!(
            stepped.is_err(),
            "raft-rs no longer panics: the clamp may go"
        );
    }

    #[test]
    fn a_wiped_follower_clamps_and_says_so() {
        let mut follower = node(2, vec![1, 2], 3);
        follower.raft.term = 2;
        let mut heartbeat = Message::default();
        heartbeat.set_msg_type(MessageType::MsgHeartbeat);
        heartbeat.term = 2;
        heartbeat.commit = 10;
        assert_eq!(clamp(&follower, &mut heartbeat), Some(10));
        assert_eq!(heartbeat.commit, 3);
        // A stale leader's claim is clamped but not believed.
        let mut stale = heartbeat.clone();
        stale.commit = 10;
        stale.term = 1;
        assert_eq!(clamp(&follower, &mut stale), None);
        let reply = lost_data_reply(&follower, 1, 1, 10);
        assert!(is_lost_data_reply(&reply));
        assert_eq!(reply.reject_hint, 3);
    }

    #[test]
    fn the_leader_restarts_a_followers_progress_from_its_real_end() {
        let mut leader = leader(vec![1, 2], 5);
        leader.raft.mut_prs().get_mut(2).unwrap().matched = 5;
        assert_eq!(restart_progress(&mut leader, 2, 0), Some(5));
        let progress = leader.raft.prs().get(2).unwrap();
        assert_eq!(progress.matched, 0);
        assert_eq!(progress.next_idx, 1);
        assert_eq!(progress.state, ProgressState::Probe);
        assert_eq!(
            restart_progress(&mut leader, 2, 0),
            None,
            "nothing to restart"
        );
    }

    /// The leader keeps the log a follower being caught up needs next: compacting past
    /// the snapshot it is being sent made a wiped follower need snapshot after snapshot
    /// under a steady write load, and never catch up (found with 1 M znodes).
    #[test]
    fn the_log_a_follower_being_caught_up_needs_is_kept() {
        let mut leader = leader(vec![1, 2, 3], 9);
        let last = leader.raft.raft_log.last_index();
        for (id, matched) in [(2, last), (3, last)] {
            let progress = leader.raft.mut_prs().get_mut(id).unwrap();
            progress.matched = matched;
            progress.recent_active = true;
        }
        assert_eq!(catch_up_floor(&leader), None, "nobody lags");
        let progress = leader.raft.mut_prs().get_mut(3).unwrap();
        progress.become_snapshot(6);
        progress.recent_active = false;
        assert_eq!(
            catch_up_floor(&leader),
            Some(6),
            "a snapshot is in flight to 3"
        );
        let progress = leader.raft.mut_prs().get_mut(2).unwrap();
        progress.matched = 4;
        assert_eq!(catch_up_floor(&leader), Some(4));
        // A follower gone quiet holds nothing back.
        leader.raft.mut_prs().get_mut(2).unwrap().recent_active = false;
        leader.raft.mut_prs().get_mut(3).unwrap().become_probe();
        assert_eq!(catch_up_floor(&leader), None);
    }
}

//! Consensus: the raft loop that orders every write, on its own thread, and the
//! transport that carries its messages between servers.
//!
//! Named `consensus`, not `raft`, so it does not shadow the `raft` crate.

mod after_fsync;
mod contact;
mod inbox;
mod logger;
mod lost_data;
mod node;
mod quorum_ack;
mod recovery;
mod replica;
pub mod transport;

pub use node::{
    channel, Applier, Consensus, ConsensusConfig, Proposer, Role, SnapshotWriter, Status,
};
pub use recovery::RaftStateOnDisk;
pub use transport::{Handover, Identity, LinkTiming, LivenessReport, PeerEvent, Transport};
#[cfg(test)]
pub(crate) use {contact::QuorumContact, recovery::VoteGuard, replica::Replica};

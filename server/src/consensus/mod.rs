//! Consensus: the raft loop that orders every write, on its own thread.
//!
//! Named `consensus`, not `raft`, so it does not shadow the `raft` crate.

mod logger;
mod node;

pub use node::{channel, Applier, Consensus, ConsensusConfig, Proposals, Proposer};

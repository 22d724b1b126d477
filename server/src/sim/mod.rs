//! An in-process, deterministic ensemble for tests: three replicas built from the same
//! pieces as the server — raft-rs's node with Paddock's rules ([`Replica`]), the pure
//! [`apply`], the [`LivenessCore`] — wired by a simulated network that delays,
//! reorders, drops and partitions messages, on a virtual clock, with clients that keep
//! sessions alive, write through them, and watch for each other's writes (exists
//! watches, re-armed with `setWatches` when they reconnect elsewhere, through the
//! server's own `WatchRegistry`). Everything random comes from one seed, so a
//! failing run replays exactly.
//!
//! What it leaves out, and the process tests cover instead: the threads and sockets,
//! the txn log's files (each replica's log is a `MemStorage`, persisted as each `Ready`
//! is handled; a crash keeps it, a wipe replaces it), snapshots.
//!
//! Faults: isolation, crash, wipe and pause (SIGSTOP), on a seeded schedule, or
//! scripted by a test ([`Cluster::scripted`]) for a scenario the schedule rarely hits.
//!
//! The invariants checked on every run:
//! - **election safety**: at most one leader per term;
//! - **state machine safety**: every replica applies the same txn at each index;
//! - **durability**: every acknowledged write is on every replica at the end;
//! - **sessions**: a session is never expired while its client is connected to a
//!   serving replica (the promise that keeps lock holders from overlapping);
//! - **convergence**: once healed, all replicas reach the same state;
//! - **watches**: a session is told of each creation it watched for exactly once, in
//!   zxid order, whether the change happened while it was connected or while it was
//!   moving to another server; a session connected at the end missed none.

mod cluster;
#[cfg(test)]
mod tests;

pub use cluster::{Cluster, Fault, Rng, SimReport};

//! Paddock's server: a ZooKeeper-compatible coordination service whose writes are
//! ordered by raft.
//!
//! # Layout, in request-path order
//! - [`config`]: `zoo.cfg`, parsed and validated once.
//! - [`daemon`]: wires the pieces together and runs until shutdown.
//! - [`listener`]: accepts connections (`maxClientCnxns` per IP).
//! - [`conn`]: one task per connection: handshake, per-session ordering, replies;
//!   [`outbox`] bounds what it holds for a client that does not read.
//! - [`fourlw`]: the four-letter words on the client port; [`conn_stats`] is what
//!   `cons` lists of each connection.
//! - [`server`]: the shared state, and where a request forks into a read ([`query`])
//!   or a proposed write ([`txn`], matched back through [`wait`]).
//! - [`consensus`]: the raft loop that orders writes.
//! - [`state_machine`]: applies committed txns: the only writer of the tree and the
//!   session table; fires watches ([`watch`]).
//! - [`tree`] and [`acl`]: the znode tree and access control, pure and synchronous.
//! - [`session`]: the session table, the expiry clock, the caller's identities.
//! - [`store`]: the durable raft log (`dataLogDir`), snapshots and raft's hard state
//!   (`dataDir`); [`image`] is what a snapshot holds of the state machine.
//! - [`metrics`]: counters for `srvr` / `mntr`.

pub(crate) mod acl;
pub(crate) mod apply;
pub mod config;
pub(crate) mod conn;
pub(crate) mod conn_stats;
pub(crate) mod consensus;
pub mod daemon;
mod fatal;
pub(crate) mod fourlw;
pub(crate) mod ids;
pub(crate) mod image;
pub(crate) mod listener;
pub(crate) mod liveness;
pub(crate) mod metrics;
pub(crate) mod monotonic;
pub(crate) mod outbox;
pub(crate) mod query;
pub(crate) mod server;
pub(crate) mod session;
#[cfg(test)]
mod sim;
pub(crate) mod state_machine;
pub(crate) mod store;
pub(crate) mod tree;
pub(crate) mod txn;
pub(crate) mod wait;
pub(crate) mod watch;

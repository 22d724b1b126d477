//! Paddock's server: a ZooKeeper-compatible coordination service whose writes are
//! ordered by raft.
//!
//! # Layout, in request-path order
//! The library exports only what the binary needs (`config`, `daemon`); the rest is
//! crate-private.
//! - `config`: `zoo.cfg`, parsed and validated once.
//! - `daemon`: wires the pieces together and runs until shutdown.
//! - `listener`: accepts connections (`maxClientCnxns` per IP).
//! - `conn`: one task per connection: handshake, per-session ordering, replies;
//!   `outbox` bounds what it holds for a client that does not read.
//! - `fourlw`: the four-letter words on the client port; `conn_stats` is what `cons`
//!   lists of each connection.
//! - `server`: the connection tasks' view of the parts below; a request forks there
//!   into a read (`query`) or a proposed write (`writes` → `txn`, each connection's
//!   writes numbered; matched back through `wait`, with ids from `ids` that never
//!   repeat). `conns`: the open connections and which holds each session here.
//! - `replicated`: the tree and sessions as applied here (one writer: the state
//!   machine), and the connections' watches; `health`: whether this server may serve.
//! - `consensus`: the raft loop that orders writes (`replica`: raft-rs's node with the
//!   vote guard, quorum contact and wiped-follower repair), the peer transport.
//! - `state_machine`: applies committed txns through the pure `apply`, fires watches
//!   (`watch`) and carries out the other effects.
//! - `liveness`: session clocks and whether this server may serve (a pure core).
//! - `tree` and `acl`: the znode tree and access control, pure and synchronous.
//! - `session`: the session table, the expiry clock, the caller's identities.
//! - `store`: the durable raft log (`dataLogDir`), snapshots and raft's hard state
//!   (`dataDir`); `image` is what a snapshot holds of the state machine.
//! - `tls`: TLS on the client port and peer links, from PEM files; the `x509` identity
//!   of a client certificate.
//! - `metrics`: counters for `srvr` / `mntr` and the distributions `/metrics` exports;
//!   `report`: what `srvr`, `mntr`, `cons`, ... report, rendered as text by `fourlw`
//!   and as JSON by `admin`, the HTTP listener (`/commands`, `/metrics`, health);
//!   `process_stats`: the process's CPU, memory and file descriptors;
//!   `fatal`: the one way to die.
//! - `sim` (tests only): the deterministic in-process ensemble.

pub(crate) mod acl;
pub(crate) mod admin;
pub(crate) mod apply;
pub mod config;
pub(crate) mod conn;
pub(crate) mod conn_stats;
pub(crate) mod conns;
pub(crate) mod consensus;
pub mod daemon;
mod fatal;
pub(crate) mod fourlw;
pub(crate) mod health;
pub(crate) mod ids;
pub(crate) mod image;
pub(crate) mod listener;
pub(crate) mod liveness;
pub(crate) mod metrics;
pub(crate) mod monotonic;
pub(crate) mod outbox;
pub(crate) mod process_stats;
pub(crate) mod query;
pub(crate) mod replicated;
pub(crate) mod report;
pub(crate) mod server;
pub(crate) mod session;
#[cfg(test)]
mod sim;
pub(crate) mod state_machine;
pub(crate) mod store;
pub(crate) mod tls;
pub(crate) mod tree;
pub(crate) mod txn;
pub(crate) mod wait;
pub(crate) mod watch;
pub(crate) mod writes;

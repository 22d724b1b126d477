//! Integration tests of `paddock-cli` against a real server: Apache ZooKeeper 3.8
//! started here, or the server named by `PADDOCK_TEST_SERVER` (see `support`). The
//! `paddock` test binary runs the same sessions against Paddock.

#[path = "../../../client/tests/it/certs.rs"]
mod certs;
mod cli;
// The client's server harness, shared rather than copied so that both crates test
// against identically configured servers.
#[path = "../../../client/tests/it/support.rs"]
// The CLI's tests use only part of the harness (no ensembles, no kazoo, no sandboxes).
#[allow(dead_code)]
mod support;

/// This binary's tests run against Apache ZooKeeper.
pub const TARGET: support::Target = support::Target::ZooKeeper;

//! Integration tests of paddock-client against a real server: Apache ZooKeeper 3.8
//! started here, or the server named by `PADDOCK_TEST_SERVER` (see `support`).

mod certs;
mod chroot;
mod crud;
mod election;
mod ensemble;
mod interop;
mod lock;
mod multi;
mod persistent;
mod recipes;
mod reset;
mod session;
mod support;
mod tls;
mod watches;

/// This binary's tests run against Apache ZooKeeper (the `paddock` binary runs the same
/// tests against Paddock).
pub const TARGET: support::Target = support::Target::ZooKeeper;

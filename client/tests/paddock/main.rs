//! The client's integration tests (`tests/it`), run against Paddock instead of Apache
//! ZooKeeper: the same test code and expectations, a different server.

#[path = "../it/certs.rs"]
mod certs;
#[path = "../it/chroot.rs"]
mod chroot;
#[path = "../it/crud.rs"]
mod crud;
#[path = "../it/election.rs"]
mod election;
#[path = "../it/ensemble.rs"]
mod ensemble;
#[path = "../it/interop.rs"]
mod interop;
#[path = "../it/lock.rs"]
mod lock;
#[path = "../it/multi.rs"]
mod multi;
#[path = "../it/persistent.rs"]
mod persistent;
#[path = "../it/recipes.rs"]
mod recipes;
#[path = "../it/session.rs"]
mod session;
#[path = "../it/support.rs"]
mod support;
#[path = "../it/tls.rs"]
mod tls;
#[path = "../it/watches.rs"]
mod watches;

pub const TARGET: support::Target = support::Target::Paddock;

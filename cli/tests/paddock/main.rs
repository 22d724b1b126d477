//! `paddock-cli`'s integration tests (`tests/it`), run against Paddock instead of Apache
//! ZooKeeper: the same test code and expectations, a different server.

#[path = "../../../client/tests/it/certs.rs"]
mod certs;
#[path = "../it/cli.rs"]
mod cli;
#[path = "../../../client/tests/it/support.rs"]
// The CLI's tests use only part of the harness (no ensembles, no kazoo, no sandboxes).
#[allow(dead_code)]
mod support;

pub const TARGET: support::Target = support::Target::Paddock;

//! The one way the server dies on a failure it cannot recover from in place: a failed
//! write or fsync of its data, a txn or snapshot it cannot read (applying anything
//! after it would fork this replica), a panicked raft thread. It logs what failed and
//! exits; a supervisor restarts it, and recovery starts from what is durable.

use std::fmt::{Arguments, Display};

/// Logs `what: error` and ends the process with status 1.
pub(crate) fn fatal(what: Arguments<'_>, error: &dyn Display) -> ! {
    tracing::error!("{what}: {error}; exiting");
    std::process::exit(1)
}

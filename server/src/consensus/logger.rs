//! raft-rs logs through slog; this drain forwards its records to `tracing`, so the
//! server has one log.

use slog::{Drain, Level, OwnedKVList, Record};

pub struct TracingDrain;

impl Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record<'_>, _values: &OwnedKVList) -> Result<(), slog::Never> {
        let message = record.msg();
        match record.level() {
            Level::Critical | Level::Error => tracing::error!(target: "raft", "{message}"),
            Level::Warning => tracing::warn!(target: "raft", "{message}"),
            Level::Info => tracing::info!(target: "raft", "{message}"),
            Level::Debug | Level::Trace => tracing::trace!(target: "raft", "{message}"),
        }
        Ok(())
    }
}

pub fn raft_logger() -> slog::Logger {
    slog::Logger::root(TracingDrain.fuse(), slog::o!())
}

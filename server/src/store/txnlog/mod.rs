//! The txn log: raft's log in `dataLogDir`, as `log.<first index>` segment files.
//!
//! - [`segment`]: the file format, documented at its top, and its encoding.
//! - [`writer`]: the group-commit thread that appends and fsyncs, [`LogWriter`].
//! - `recovery`: reading the log back at [`open`]: torn tails are cut, corruption in
//!   the middle is an error.
//! - [`disk`]: the file operations, a trait so tests can simulate crashes.
//! - [`stats`]: fsync latency and batch sizes for `mntr`.

pub mod disk;
mod reader;
mod recovery;
pub mod segment;
pub mod stats;
pub mod writer;

#[cfg(test)]
mod bench;
#[cfg(test)]
mod sim;
#[cfg(test)]
pub(crate) mod tests;

use std::path::PathBuf;
use std::sync::Arc;

use raft::prelude::Entry;

pub use disk::{Disk, OsDisk};
pub use reader::LogReader;
pub use segment::{Damage, HeaderError};
pub use stats::LogStats;
pub use writer::{AppendBatch, Durable, LogWriter, OnDurable};

/// A point in the log: an entry's index and term.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    pub index: u64,
    pub term: u64,
}

/// How the log is written; from `zoo.cfg`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// `dataLogDir`.
    pub dir: PathBuf,
    /// A segment is closed and the next begun once a record would take it past this.
    pub segment_size: u64,
    /// Segments grow in steps of this many bytes (`preAllocSize`); 0 grows them per write.
    pub pre_alloc_size: u64,
    /// The most entries one fsync covers (`groupCommitMaxEntries`).
    pub max_batch_entries: u64,
    /// `forceSync`: without it the log is written but never fsynced.
    pub force_sync: bool,
}

impl LogConfig {
    pub const DEFAULT_SEGMENT_SIZE: u64 = 64 * 1024 * 1024;
    /// ZooKeeper's `preAllocSize` default, 64 MiB.
    pub const DEFAULT_PRE_ALLOC_SIZE: u64 = 64 * 1024 * 1024;
    pub const DEFAULT_MAX_BATCH_ENTRIES: u64 = 1000;

    pub fn new(dir: impl Into<PathBuf>) -> LogConfig {
        LogConfig {
            dir: dir.into(),
            segment_size: Self::DEFAULT_SEGMENT_SIZE,
            pre_alloc_size: Self::DEFAULT_PRE_ALLOC_SIZE,
            max_batch_entries: Self::DEFAULT_MAX_BATCH_ENTRIES,
            force_sync: true,
        }
    }
}

/// Why the log could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: bad segment header: {error}")]
    Header { file: PathBuf, error: HeaderError },
    #[error("{file}: its header says the segment starts at index {first}, its name disagrees")]
    Misnamed { file: PathBuf, first: u64 },
    #[error(
        "{file} at offset {offset}: {damage}; not a torn tail (only the end of the last \
         segment can be torn), so the log is corrupt and will not be skipped over"
    )]
    Corrupt {
        file: PathBuf,
        offset: u64,
        damage: Damage,
    },
    #[error(
        "{file} starts at index {first} after term {prev_term}, but the segment before it \
         ends at index {last} in term {last_term}"
    )]
    Discontinuous {
        file: PathBuf,
        first: u64,
        prev_term: u64,
        last: u64,
        last_term: u64,
    },
    #[error(
        "the txn log resumes at index {first} ({file}), but the snapshot needs it from \
         index {needed}: entries in between are missing"
    )]
    Gap {
        file: PathBuf,
        first: u64,
        needed: u64,
    },
    #[error("entry {index} is not in the txn log in {dir}")]
    Missing { index: u64, dir: PathBuf },
}

/// Opens the log in `config.dir` that continues the snapshot at `after` (index 0 and
/// term 0 when there is none), and starts its writer.
///
/// Returns the entries after `after.index`, in order, the writer, and a reader for
/// entries the caller no longer keeps. A torn tail is cut off with a
/// warning; damage anywhere else is an error naming the file and offset. A log that
/// disagrees with the snapshot's term at its index, a log the snapshot has overtaken,
/// is replaced by an empty one, as raft's snapshot install replaces the follower's log.
pub fn open(
    disk: Arc<dyn Disk>,
    config: LogConfig,
    after: Position,
    on_durable: OnDurable,
) -> Result<(Vec<Entry>, LogWriter, LogReader), LogError> {
    let recovered = recovery::recover(disk.as_ref(), &config.dir, after)?;
    let reader = LogReader::new(disk.clone(), config.dir.clone());
    let writer = LogWriter::start(
        disk,
        config,
        recovered.closed,
        recovered.tail,
        after,
        on_durable,
    )?;
    Ok((recovered.entries, writer, reader))
}

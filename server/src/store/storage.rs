//! [`DurableStorage`]: the `raft::Storage` the raft loop reads, built from the txn log
//! ([`crate::store::txnlog`]), the snapshots ([`crate::store::snapshot`]) and the meta
//! database ([`crate::store::meta`]). Memory holds the newest entries: every one not
//! yet durable or applied, and a window of applied ones behind them for followers a
//! little behind. Older entries are released ([`DurableStorage::release`]) and read
//! back from the log's files when raft asks for them ([`crate::store::txnlog::LogReader`]).
//!
//! # Driving it from the raft loop
//! raft-rs's async-ready contract: the loop hands each `Ready`'s writes to the log writer
//! and goes on; the writer's fsync reports come back as `on_persist_ready` calls. Per
//! `Ready`, in this order:
//!
//! ```text
//! if !node.has_ready() { return }
//! let mut ready = node.ready();
//! 1. send(ready.take_messages())
//!      A leader's appends and heartbeats go out before its own fsync (raft thesis
//!      §10.2.1); raft-rs leaves this empty on followers.
//! 2. if !ready.snapshot().is_empty():
//!        storage.apply_snapshot(ready.snapshot())?   // file + meta durable on return
//!        state_machine.restore(ready.snapshot().get_data())
//!      Must come before the entries of the same Ready, which follow the snapshot.
//! 3. apply(ready.take_committed_entries())
//!      raft-rs hands out only entries that are committed *and* durable locally.
//! 4. after_fsync.hold(ready.number(), ready.take_persisted_messages())
//!      Votes and append responses must not leave before the fsync that covers this
//!      Ready (and its hard state, which may hold the vote). Held before step 5, so
//!      the fsync cannot come first.
//! 5. storage.append(ready.number(), ready.take_entries(), ready.hs().cloned())?
//!      Every Ready, even one with no entries and no hard state, so that its number is
//!      reported in order. Must come before advance_append_async: raft reads the entries
//!      back from the cache at once. The hard state is recorded after the entries' fsync,
//!      since its commit index may point at them.
//! 6. node.advance_append_async(ready)
//! 5'. instead of 4–6, when the Ready need not be made durable (!ready.must_sync(): no
//!      entries, snapshot, term or vote) and the writer has reported every earlier
//!      Ready: send its persisted messages at once, storage.note_commit(hs), then
//!      advance_append_async(ready) and on_persist_ready(ready.number()) on the raft
//!      loop; that hs goes to the writer with the next Ready's append (unless the
//!      next has its own). A commit index alone needs no fsync, and the round trip
//!      through the writer cost two thread switches per server per write.
//! 7. node.advance_apply()                             // after step 3's entries applied
//!      Except after a Ready that carried a snapshot: raft's applied index may not pass
//!      its persisted one, so hold advance_apply until that Ready's on_persist_ready.
//!
//! on the writer thread, after each fsync (the hard state flushed first):
//! 8. after_fsync.release(number): send every held message list whose Ready number
//!      <= number, from this thread (a follower's ack leaves without waiting for the
//!      raft loop)
//! then on the `on_persisted(number)` callback (writer thread → raft loop's channel):
//! 9. node.on_persist_ready(number)
//! 10. loop back to has_ready(): the commit index moves, raft has more to say.
//! ```
//!
//! There is no `LightReady` in this flow: `advance_append_async` returns none, and what
//! `advance` would have put in it (commit index, committed entries, messages) arrives in
//! the next `Ready` after `on_persist_ready`. A conf change, once applied, is recorded
//! with [`DurableStorage::set_conf_state`].
//!
//! # Restart
//! [`DurableStorage::open`] returns the newest valid snapshot for the state machine to
//! restore; its index is the applied index to give `raft::Config::applied`. The log
//! after it is replayed by raft as committed entries.
//!
//! # Snapshots and compaction
//! The state machine writes a snapshot at an applied index with
//! [`DurableStorage::create_snapshot`], then calls [`DurableStorage::compact`] to drop
//! the entries up to it (or a little below, to spare slow followers a snapshot).
//! With autopurge on, each new snapshot (written here or installed from the leader) is
//! followed at once by [`DurableStorage::purge`], which deletes old snapshot files and
//! the log segments behind the oldest snapshot kept; `autopurge.purgeInterval` runs it
//! as well.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use protobuf::Message as _;
use raft::prelude::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raft::{GetEntriesContext, RaftState, StorageError};

use crate::store::dirs::{self, DataDirLock, DirError};
use crate::store::meta::{Durability, Meta, MetaError};
use crate::store::snapshot::{LoadedSnapshot, SnapshotDir, SnapshotError};
use crate::store::txnlog::{
    self, AppendBatch, Durable, LogConfig, LogError, LogReader, LogStats, LogWriter, OsDisk,
    Position,
};

/// Where and how the store keeps its files; from `zoo.cfg`.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `dataDir`: snapshots and the meta database.
    pub data_dir: PathBuf,
    /// The txn log, in `dataLogDir`.
    pub log: LogConfig,
    /// This server's id; a data dir recorded for another id is refused.
    pub node_id: u64,
    /// The voters a brand-new data dir starts with; ignored once a conf state is
    /// recorded. Empty for a server that joins an ensemble and learns it from a snapshot.
    pub initial_conf_state: ConfState,
    /// `autopurge.snapRetainCount` when autopurge is on: right after each new snapshot,
    /// keep this many and the log they need. Snapshots come every 64 MiB of log under
    /// load; purging only on `purgeInterval` let disk use grow by that much each time.
    pub purge_after_snapshot: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Dir(#[from] DirError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error("entries from index {first} would overwrite compacted entries (the log starts at {first_index})")]
    OverwriteCompacted { first: u64, first_index: u64 },
    #[error("entries from index {first} would leave a gap after the last entry, {last_index}")]
    Gap { first: u64, last_index: u64 },
    #[error("no entry at index {index} (the cache holds {first_index}..={last_index})")]
    Unavailable {
        index: u64,
        first_index: u64,
        last_index: u64,
    },
    #[error("entries from index {first} would overwrite applied entries (up to {released})")]
    OverwriteApplied { first: u64, released: u64 },
    #[error(transparent)]
    Read(LogError),
    #[error("cannot compact to index {index}: the newest snapshot is at {snapshot}")]
    CompactPastSnapshot { index: u64, snapshot: u64 },
    #[error("the snapshot at index {index} is not newer than the log's start ({compacted})")]
    SnapshotOutOfDate { index: u64, compacted: u64 },
    #[error("the streamed snapshot at index {index} is not in dataDir")]
    SnapshotMissing { index: u64 },
}

/// What the store found of this server's raft state at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaftStateOnDisk {
    /// Hard state and the log it covers are there.
    Intact,
    /// Nothing at all: a new server, or one whose both directories were wiped.
    Blank,
    /// The log survived but the hard state (term, vote) did not: dataDir was lost.
    LostHardState { log_last: u64 },
    /// The hard state records commits past the end of the log: dataLogDir was lost
    /// (or entries fsynced under forceSync=no).
    LostLog { commit: u64, log_last: u64 },
    /// It had lost its state before, and had not caught up when it stopped.
    Rejoining,
}

/// What [`DurableStorage::open`] found on disk.
pub struct Opened {
    /// Whether the raft state (term, vote, log) survived, for the vote guard.
    pub raft_state: RaftStateOnDisk,
    pub storage: DurableStorage,
    /// The snapshot to restore the state machine from; `None` for an empty data dir.
    pub snapshot: Option<LoadedSnapshot>,
    /// Newer snapshots that failed verification and were skipped, newest first: each was
    /// logged at error level; surfaced for the operator as well.
    pub rejected_snapshots: Vec<SnapshotError>,
}

/// A cheap, clonable handle on the durable raft state. The raft loop writes it; any
/// thread may read it or write snapshots.
#[derive(Clone)]
pub struct DurableStorage {
    core: Arc<RwLock<Core>>,
    files: Arc<Files>,
}

struct Files {
    /// Held for as long as any handle lives: no other process opens this dataDir.
    _lock: DataDirLock,
    /// [`StoreConfig::purge_after_snapshot`].
    purge_after_snapshot: Option<usize>,
    writer: LogWriter,
    /// Reads entries no longer in memory back from the log (the raft thread only).
    reader: Mutex<LogReader>,
    meta: Meta,
    snapshots: SnapshotDir,
}

struct Core {
    /// The newest entries, after `released`: recovered from the log, or appended and
    /// queued for the writer (raft reads them back before they are durable).
    entries: VecDeque<Entry>,
    /// The last entry no longer in the log: raft asks for its term to match logs.
    compacted: Position,
    /// Entries up to this index (and after `compacted`) are read back from the log's
    /// files: durable and applied, they were dropped from memory. `compacted.index`
    /// when there are none.
    released: u64,
    /// The terms of the released entries.
    released_terms: TermRuns,
    /// The newest hard state raft gave, durable or not yet.
    hard_state: HardState,
    conf_state: ConfState,
    /// The newest snapshot on disk, which [`raft::Storage::snapshot`] serves.
    snapshot: SnapshotMetadata,
}

impl Core {
    fn first_index(&self) -> u64 {
        self.compacted.index + 1
    }

    /// The first entry in memory.
    fn cached_index(&self) -> u64 {
        self.released + 1
    }

    fn last_index(&self) -> u64 {
        self.released + self.entries.len() as u64
    }

    fn term(&self, index: u64) -> Result<u64, StoreError> {
        if index == self.compacted.index {
            return Ok(self.compacted.term);
        }
        if index > self.compacted.index && index <= self.released {
            if let Some(term) = self.released_terms.term_at(index) {
                return Ok(term);
            }
        }
        index
            .checked_sub(self.cached_index())
            .and_then(|offset| self.entries.get(offset as usize))
            .map(|e| e.term)
            .ok_or(StoreError::Unavailable {
                index,
                first_index: self.first_index(),
                last_index: self.last_index(),
            })
    }
}

impl DurableStorage {
    /// Opens (or creates) the store and starts the log writer. `on_persisted` is called
    /// on the writer thread with each `Ready` number made durable, in increasing order:
    /// forward it to the raft loop for `RawNode::on_persist_ready`.
    pub fn open(
        config: StoreConfig,
        mut on_persisted: impl FnMut(u64) + Send + 'static,
    ) -> Result<Opened, StoreError> {
        dirs::prepare("dataDir", &config.data_dir)?;
        dirs::prepare("dataLogDir", &config.log.dir)?;
        // Must hold the lock before reading anything another process may be writing.
        let lock = dirs::lock(&config.data_dir)?;
        let meta = Meta::open(&config.data_dir.join("meta"))?;
        meta.check_node_id(config.node_id)?;
        let snapshots = SnapshotDir::open(&config.data_dir)?;
        let newest = snapshots.load_newest_valid()?;
        let recorded = meta.snapshot()?;
        let (after, snapshot_metadata) = match &newest.snapshot {
            Some(s) => (
                Position {
                    index: s.metadata.index,
                    term: s.metadata.term,
                },
                s.metadata.clone(),
            ),
            None => (Position::default(), SnapshotMetadata::default()),
        };
        if let Some(recorded) = &recorded {
            if recorded.index > after.index {
                tracing::error!(
                    "the newest snapshot written was at index {}, but the newest usable one \
                     is at {}: recovering from it and the log after it",
                    recorded.index,
                    after.index
                );
            }
        }
        let recorded_hard_state = meta.hard_state()?;
        let mut hard_state = recorded_hard_state.clone().unwrap_or_default();
        let mut flushed_vote = (hard_state.term, hard_state.vote);
        let hook_meta = meta.clone();
        let on_durable = Box::new(move |durable: Durable| {
            if let Some(hs) = durable.hard_state {
                let vote = (hs.term, hs.vote);
                // Must flush a new term or vote before its Ready's messages go out.
                let durability = if vote == flushed_vote {
                    Durability::Background
                } else {
                    Durability::Flushed
                };
                hook_meta.set_hard_state(&hs, durability);
                flushed_vote = vote;
            }
            on_persisted(durable.ready_number);
        });
        let (entries, writer, reader) =
            txnlog::open(Arc::new(OsDisk), config.log.clone(), after, on_durable)?;
        let last_index = after.index + entries.len() as u64;

        // A snapshot newer than the one meta recorded was installed (or written) just
        // before a crash: its conf state is the one that goes with the log after it.
        let snapshot_is_newer =
            newest.snapshot.is_some() && recorded.as_ref().is_none_or(|r| r.index < after.index);
        let conf_state = match (&newest.snapshot, meta.conf_state()?) {
            (Some(s), _) if snapshot_is_newer => s.metadata.get_conf_state().clone(),
            (_, Some(cs)) => cs,
            (Some(s), None) => s.metadata.get_conf_state().clone(),
            (None, None) => {
                meta.set_conf_state(&config.initial_conf_state);
                config.initial_conf_state.clone()
            }
        };
        // The commit index is recorded lazily (see meta): it may lag, but never behind
        // the snapshot, which only holds committed entries.
        let raft_state = match &recorded_hard_state {
            None if newest.snapshot.is_none() && entries.is_empty() => RaftStateOnDisk::Blank,
            None => RaftStateOnDisk::LostHardState {
                log_last: last_index,
            },
            Some(hs) if hs.commit > last_index => RaftStateOnDisk::LostLog {
                commit: hs.commit,
                log_last: last_index,
            },
            Some(_) if meta.rejoining()? => RaftStateOnDisk::Rejoining,
            Some(_) => RaftStateOnDisk::Intact,
        };

        hard_state.term = hard_state.term.max(after.term);
        hard_state.commit = hard_state.commit.max(after.index);
        if hard_state.commit > last_index {
            // Only forceSync=no can lose fsynced entries that the commit index covers.
            tracing::warn!(
                "the recorded commit index {} is past the end of the log at {last_index}: \
                 entries were lost",
                hard_state.commit
            );
            hard_state.commit = last_index;
        }
        let core = Core {
            entries: entries.into(),
            compacted: after,
            released: after.index,
            released_terms: TermRuns::default(),
            hard_state,
            conf_state,
            snapshot: snapshot_metadata,
        };
        Ok(Opened {
            raft_state,
            storage: DurableStorage {
                core: Arc::new(RwLock::new(core)),
                files: Arc::new(Files {
                    purge_after_snapshot: config.purge_after_snapshot,
                    _lock: lock,
                    writer,
                    reader: Mutex::new(reader),
                    meta,
                    snapshots,
                }),
            },
            snapshot: newest.snapshot,
            rejected_snapshots: newest.rejected,
        })
    }

    /// Step 4 of a `Ready`: caches `entries` (cutting a conflicting suffix first) and
    /// queues them with the hard state for the log writer, which reports `ready_number`
    /// once both are durable.
    pub fn append(
        &self,
        ready_number: u64,
        entries: Vec<Entry>,
        hard_state: Option<HardState>,
    ) -> Result<(), StoreError> {
        let mut core = self.core.write();
        if let Some(first) = entries.first().map(|e| e.index) {
            if first < core.first_index() {
                return Err(StoreError::OverwriteCompacted {
                    first,
                    first_index: core.first_index(),
                });
            }
            if first > core.last_index() + 1 {
                return Err(StoreError::Gap {
                    first,
                    last_index: core.last_index(),
                });
            }
            if first < core.cached_index() {
                // Raft never overwrites a committed entry, and only applied ones are
                // released.
                return Err(StoreError::OverwriteApplied {
                    first,
                    released: core.released,
                });
            }
            let keep = (first - core.cached_index()) as usize;
            core.entries.truncate(keep);
            core.entries.extend(entries.iter().cloned());
        }
        if let Some(hs) = &hard_state {
            core.hard_state = hs.clone();
        }
        // Queued under the lock, so the writer sees appends in the cache's order.
        self.files.writer.submit(AppendBatch {
            entries,
            hard_state,
            ready_number,
        });
        Ok(())
    }

    /// A `Ready` with nothing to make durable (no entries, snapshot, term or vote; at
    /// most a new commit index) whose earlier `Ready`s are all durable: the raft loop
    /// finishes it without the writer (step 5'). Its hard state is kept here and not
    /// written: the raft loop hands it to the writer with the next `Ready` (the meta
    /// database records the commit index lazily anyway).
    pub fn note_commit(&self, hard_state: &HardState) {
        let mut core = self.core.write();
        debug_assert_eq!(
            (core.hard_state.term, core.hard_state.vote),
            (hard_state.term, hard_state.vote),
            "only the commit index may change without the writer"
        );
        core.hard_state.commit = core.hard_state.commit.max(hard_state.commit);
    }

    /// Step 2 of a `Ready` that carries a snapshot from the leader: writes it to
    /// `dataDir`, records it, and replaces the log with an empty one that continues it.
    /// The file and meta are durable on return; the log reset is queued before any later
    /// append.
    pub fn apply_snapshot(&self, snapshot: &Snapshot) -> Result<(), StoreError> {
        let metadata = snapshot.get_metadata();
        let index = metadata.index;
        let compacted = self.core.read().compacted.index;
        if index <= compacted {
            return Err(StoreError::SnapshotOutOfDate { index, compacted });
        }
        if snapshot.data.is_empty() {
            // Streamed: the file arrived and was verified before raft saw the message.
            if self.files.snapshots.load_index(index)?.is_none() {
                return Err(StoreError::SnapshotMissing { index });
            }
        } else {
            self.files
                .snapshots
                .create(metadata, |w| w.write_all(&snapshot.data))?;
        }
        self.files.meta.set_snapshot(metadata);
        self.files.meta.set_conf_state(metadata.get_conf_state());
        let after = Position {
            index,
            term: metadata.term,
        };
        {
            let mut core = self.core.write();
            core.entries.clear();
            core.compacted = after;
            core.released = index;
            core.released_terms = TermRuns::default();
            // The log is replaced: its new segment may take an old one's name.
            self.files.reader.lock().forget();
            core.conf_state = metadata.get_conf_state().clone();
            core.snapshot = metadata.clone();
            core.hard_state.term = core.hard_state.term.max(after.term);
            core.hard_state.commit = core.hard_state.commit.max(index);
            self.files.writer.reset(after);
        }
        self.purge_after_snapshot();
        Ok(())
    }

    /// Writes a snapshot of the state machine at the applied `index`: `conf_state` is the
    /// configuration as of that index, `write_payload` serializes the state. Durable on
    /// return; then [`raft::Storage::snapshot`] serves it. Doesn't hold the cache's lock
    /// while the payload is written, so the raft loop goes on meanwhile.
    pub fn create_snapshot(
        &self,
        index: u64,
        conf_state: ConfState,
        write_payload: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<SnapshotMetadata, StoreError> {
        let term = self.core.read().term(index)?;
        let metadata = SnapshotMetadata {
            index,
            term,
            conf_state: Some(conf_state).into(),
            ..Default::default()
        };
        tracing::info!("writing a snapshot at index {index}");
        self.files.snapshots.create(&metadata, write_payload)?;
        self.files.meta.set_snapshot(&metadata);
        {
            let mut core = self.core.write();
            if metadata.index > core.snapshot.index {
                core.snapshot = metadata.clone();
            }
        }
        self.purge_after_snapshot();
        Ok(metadata)
    }

    /// Purges right after a new snapshot, when autopurge is on. A failure leaves extra
    /// files, not a wrong state: it is logged, and the next purge tries again.
    fn purge_after_snapshot(&self) {
        if let Some(retain) = self.files.purge_after_snapshot {
            if let Err(e) = self.purge(retain) {
                tracing::warn!("purging old snapshots and logs: {e}");
            }
        }
    }

    /// Drops cached entries up to `index`, which a snapshot must cover. Files are left
    /// alone: see [`DurableStorage::purge`].
    pub fn compact(&self, index: u64) -> Result<(), StoreError> {
        let mut core = self.core.write();
        if index > core.snapshot.index {
            return Err(StoreError::CompactPastSnapshot {
                index,
                snapshot: core.snapshot.index,
            });
        }
        if index <= core.compacted.index {
            return Ok(());
        }
        let term = core.term(index)?;
        if index > core.released {
            let drop = (index - core.released) as usize;
            core.entries.drain(..drop);
            core.released = index;
        }
        core.released_terms.drop_through(index);
        core.compacted = Position { index, term };
        Ok(())
    }

    /// Drops the in-memory copies of the entries up to `index`, which must be durable
    /// and applied: raft reads them back from the log's files if a follower needs them
    /// (or after a restart, where the log is replayed from the files anyway).
    pub fn release(&self, index: u64) {
        let mut core = self.core.write();
        let index = index.min(core.last_index());
        if index <= core.released {
            return;
        }
        let count = (index - core.released) as usize;
        let Core {
            entries,
            released_terms,
            ..
        } = &mut *core;
        for entry in entries.drain(..count) {
            released_terms.push(entry.index, entry.term);
        }
        core.released = index;
    }

    /// `autopurge`: keeps the newest `retain` snapshots (at least 3) and deletes the log
    /// segments wholly behind the oldest of them, so any kept snapshot can still be
    /// recovered from with the log after it.
    pub fn purge(&self, retain: usize) -> Result<(), StoreError> {
        let kept = self.files.snapshots.purge(retain)?;
        if let Some(oldest) = kept.first() {
            // Never the entries after the compacted index: raft may still read them,
            // and released ones only the files hold.
            let compacted = self.core.read().compacted.index;
            self.files.writer.purge(oldest.index.min(compacted));
        }
        Ok(())
    }

    pub fn conf_state(&self) -> ConfState {
        self.core.read().conf_state.clone()
    }

    /// The last entry no longer kept in memory.
    #[cfg(test)]
    pub fn released(&self) -> u64 {
        self.core.read().released
    }

    /// The snapshot file at `index`, read and verified.
    #[cfg(test)]
    pub fn load_snapshot(&self, index: u64) -> Result<Option<LoadedSnapshot>, StoreError> {
        Ok(self.files.snapshots.load_index(index)?)
    }

    /// Records a conf state (conf changes are not applied yet: the ensemble is static).
    #[cfg(test)]
    pub fn set_conf_state(&self, conf_state: ConfState) {
        self.files.meta.set_conf_state(&conf_state);
        self.core.write().conf_state = conf_state;
    }

    #[cfg(test)]
    pub fn meta(&self) -> &Meta {
        &self.files.meta
    }

    /// Records that this voter is rejoining after a loss of raft state: durable on
    /// return, before it takes part in anything, so that a crash before it has caught
    /// up does not bring it back as an intact voter.
    pub fn rejoining(&self) {
        self.files.meta.set_rejoining(true);
    }

    /// Records that this server caught up after a loss of raft state and votes again.
    /// Durable on return; call it before acting as a voter.
    pub fn rejoined(&self) {
        self.files.meta.set_rejoining(false);
    }

    /// The log writer's counters, for `mntr`.
    pub fn log_stats(&self) -> &Arc<LogStats> {
        self.files.writer.stats()
    }
}

fn raft_error(error: StoreError) -> raft::Error {
    match error {
        StoreError::Unavailable { .. } => raft::Error::Store(StorageError::Unavailable),
        other => raft::Error::Store(StorageError::Other(Box::new(other))),
    }
}

impl raft::Storage for DurableStorage {
    fn initial_state(&self) -> raft::Result<RaftState> {
        let core = self.core.read();
        Ok(RaftState::new(
            core.hard_state.clone(),
            core.conf_state.clone(),
        ))
    }

    /// Entries `[low, high)`, at least one and then as many as fit `max_size` (raft's
    /// `limit_size` rule). Released entries are read from the log's files here, on the
    /// raft thread (a follower that far behind is rare; page cache mostly), so
    /// `context` never needs an async fetch.
    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        let core = self.core.read();
        if low < core.first_index() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > core.last_index() + 1 || low > high {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let max_size = max_size.into().unwrap_or(raft::NO_LIMIT);
        let (mut out, mut size) = (Vec::new(), 0u64);
        if low <= core.released {
            let from_files =
                self.files
                    .reader
                    .lock()
                    .read(low, high.min(core.cached_index()), max_size);
            (out, size) = match from_files {
                Ok(read) => read,
                Err(e) => {
                    return Err(raft::Error::Store(StorageError::Other(Box::new(
                        StoreError::Read(e),
                    ))))
                }
            };
            if size > max_size || (out.len() as u64) < high.min(core.cached_index()) - low {
                return Ok(out);
            }
        }
        let first = core.cached_index();
        let range = (low.max(first) - first) as usize..(high.max(first) - first) as usize;
        out.reserve(range.len().min(1024));
        for entry in core.entries.range(range) {
            size += u64::from(entry.compute_size());
            if !out.is_empty() && size > max_size {
                break;
            }
            out.push(entry.clone());
        }
        Ok(out)
    }

    fn term(&self, index: u64) -> raft::Result<u64> {
        let core = self.core.read();
        if index < core.compacted.index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        core.term(index).map_err(raft_error)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.core.read().first_index())
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.core.read().last_index())
    }

    /// The newest snapshot's metadata, without its payload: the transport streams the
    /// file to the follower in chunks, off the raft thread (see `consensus::transport`).
    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        let core = self.core.read();
        let newest = &core.snapshot;
        if newest.index > 0 && newest.index >= request_index && newest.index >= core.compacted.index
        {
            return Ok(Snapshot {
                metadata: Some(newest.clone()).into(),
                ..Default::default()
            });
        }
        tracing::warn!(
            "no snapshot for server {to}: it needs index {request_index} or later and the log \
             starts after {}; the newest snapshot is at {}",
            core.compacted.index,
            newest.index
        );
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable,
        ))
    }
}

#[cfg(test)]
mod tests;

/// The terms of a stretch of the log, as runs: an entry's term is that of the last run
/// starting at or before it. A term covers many entries, so this is a few words however
/// long the stretch.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct TermRuns(Vec<(u64, u64)>);

impl TermRuns {
    /// Entry `index` (the one after the last pushed) has `term`.
    fn push(&mut self, index: u64, term: u64) {
        if self.0.last().is_none_or(|&(_, last)| last != term) {
            self.0.push((index, term));
        }
    }

    fn term_at(&self, index: u64) -> Option<u64> {
        let after = self.0.partition_point(|&(first, _)| first <= index);
        after.checked_sub(1).map(|run| self.0[run].1)
    }

    /// Forgets the entries up to `index`: the runs that end by then.
    fn drop_through(&mut self, index: u64) {
        let covering = self.0.partition_point(|&(first, _)| first <= index + 1);
        self.0.drain(..covering.saturating_sub(1));
    }
}

//! The group-commit writer. One thread owns the log's files: it appends the entries of
//! queued batches, and fsyncs once for as many batches as it can take — up to
//! `max_batch_entries` entries, or fewer when the queue runs dry — as ZooKeeper's
//! `SyncRequestProcessor` does. After each fsync it reports the newest batch it covers,
//! which the raft loop passes on to `RawNode::on_persist_ready`. The raft loop never
//! waits for the disk, and nothing is acknowledged before the fsync that covers it.
//!
//! The file format is documented in [`super::segment`].

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use raft::prelude::{Entry, HardState};

use super::disk::{Disk, DiskFile};
use super::recovery::{ClosedSegment, OpenSegment, Tail};
use super::segment::{
    decode_header, encode_header, encode_record, scan, segment_name, Header, HEADER_LEN,
};
use super::stats::{LogStats, SLOW_FSYNC};
use super::{LogConfig, LogError, Position};
use crate::store::fatal;

/// The entries and hard state of one raft `Ready`.
#[derive(Debug, Clone, Default)]
pub struct AppendBatch {
    /// In index order, following the log's last entry or overwriting a suffix of it (a new
    /// leader replacing entries this node never committed): the log is cut at the first
    /// one's index before it is written.
    pub entries: Vec<Entry>,
    /// Recorded after the entries are durable, since its commit index may point at them.
    pub hard_state: Option<HardState>,
    /// The `Ready`'s number, reported back in a [`Durable`] once all of this is on disk.
    pub ready_number: u64,
}

/// What the writer has made durable: every batch up to `ready_number`.
#[derive(Debug, Clone, PartialEq)]
pub struct Durable {
    pub ready_number: u64,
    /// The log's last index at the fsync.
    pub last_index: u64,
    /// The newest hard state among the batches covered, to be recorded now.
    pub hard_state: Option<HardState>,
}

/// Called on the writer thread after each fsync that completes at least one batch.
pub type OnDurable = Box<dyn FnMut(Durable) + Send>;

enum Op {
    Append(AppendBatch),
    Reset(Position),
    Purge(u64),
}

/// The handle that queues work for the writer thread. Dropping it makes the thread write
/// and fsync what is queued, then waits for it to end.
pub struct LogWriter {
    ops: Option<Sender<Op>>,
    stats: Arc<LogStats>,
    thread: Option<JoinHandle<()>>,
}

impl LogWriter {
    /// Sets up the recovered log's tail on the caller's thread, then starts the writer.
    pub(super) fn start(
        disk: Arc<dyn Disk>,
        config: LogConfig,
        closed: Vec<ClosedSegment>,
        tail: Tail,
        after: Position,
        on_durable: OnDurable,
    ) -> Result<LogWriter, LogError> {
        if !config.force_sync {
            tracing::warn!(
                "forceSync=no: the txn log in {} is written but never fsynced; \
                 a power loss can lose acknowledged writes",
                config.dir.display()
            );
        }
        let stats = Arc::new(LogStats::default());
        stats.grow_on_disk(closed.iter().map(|s| s.size).sum());
        let dir = Dir {
            disk,
            path: config.dir.clone(),
            pre_alloc_size: config.pre_alloc_size,
            stats: stats.clone(),
        };
        let mut closed = closed;
        let active = match tail {
            Tail::Append(open) => dir.continue_segment(open),
            Tail::Fresh => dir.create_segment(after.index + 1, after.term),
            Tail::Replace => {
                dir.remove_newest_first(closed.drain(..));
                dir.sync();
                dir.create_segment(after.index + 1, after.term)
            }
        };
        stats.set_durable_index(active.last_index());
        let writer = Writer {
            dir,
            config: config.clone(),
            closed,
            active,
            buf: Vec::new(),
            group: Group::default(),
            on_durable,
        };
        let (ops, queue) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("txnlog-writer".into())
            .spawn(move || writer.run(queue))
            .map_err(|source| LogError::Io {
                path: config.dir,
                source,
            })?;
        Ok(LogWriter {
            ops: Some(ops),
            stats,
            thread: Some(thread),
        })
    }

    /// Queues one `Ready`'s entries and hard state; [`Durable`] reports them later.
    pub fn submit(&self, batch: AppendBatch) {
        self.send(Op::Append(batch));
    }

    /// Replaces the whole log with an empty one that continues the snapshot at `after`,
    /// after the batches queued before it. For a snapshot received from the leader, which
    /// supersedes every entry this node has.
    pub fn reset(&self, after: Position) {
        self.send(Op::Reset(after));
    }

    /// Deletes the segments whose entries are all at or below `up_to`. The segment being
    /// appended to is never deleted.
    pub fn purge(&self, up_to: u64) {
        self.send(Op::Purge(up_to));
    }

    pub fn stats(&self) -> &Arc<LogStats> {
        &self.stats
    }

    fn send(&self, op: Op) {
        let sent = self.ops.as_ref().map(|ops| ops.send(op));
        if !matches!(sent, Some(Ok(()))) {
            // Only a panic ends the thread while this handle lives.
            fatal(
                format_args!("queueing a txn log write"),
                &"the writer thread has stopped",
            );
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        drop(self.ops.take());
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the txn log writer thread panicked");
            }
        }
    }
}

/// What has been written since the last fsync.
#[derive(Default)]
struct Group {
    /// Records written (or buffered) since the last fsync.
    entries: u64,
    /// Whether any byte has been written since the last fsync.
    dirty: bool,
    /// The newest batch taken since the last report.
    ready: Option<u64>,
    hard_state: Option<HardState>,
}

impl Group {
    fn is_empty(&self) -> bool {
        !self.dirty && self.ready.is_none() && self.hard_state.is_none()
    }
}

/// The segment being appended to.
struct Active {
    path: PathBuf,
    first_index: u64,
    prev_term: u64,
    file: Box<dyn DiskFile>,
    /// Offset and term of each record, buffered ones included.
    records: Vec<(u64, u64)>,
    /// Where the next record goes.
    end: u64,
    /// The file's length: preallocated space included.
    allocated: u64,
    /// Below this offset the blocks hold written data (records or zeros), not
    /// preallocated-but-unwritten extents; see [`zero_fill`].
    zeroed: u64,
}

impl Active {
    fn last_index(&self) -> u64 {
        self.first_index + self.records.len() as u64 - 1
    }

    fn last_term(&self) -> u64 {
        self.records
            .last()
            .map_or(self.prev_term, |&(_, term)| term)
    }
}

/// How far past the last record the writer zero-fills preallocated space.
const ZERO_FILL_STEP: u64 = 256 * 1024;
static ZEROS: [u8; ZERO_FILL_STEP as usize] = [0; ZERO_FILL_STEP as usize];

/// The zeros to write along with records that end at `end`, if they reach past `zeroed`.
///
/// `fallocate` leaves its blocks *unwritten*: the first fdatasync of data there must
/// also convert the extent and write the inode — a second synchronous I/O, which on
/// ext4 costs half again the CPU and wall time of the fsync (measured on the CI box:
/// 50 against 33 µs CPU, 145 against 95 µs wall per 4 KiB pwrite+fdatasync). Writing
/// zeros up to the next `ZERO_FILL_STEP` boundary makes that conversion happen once per
/// step instead of once per group commit. The zeros read as the end of the log, the
/// same as the unwritten space they replace, and stay inside the preallocation, so they
/// never need new space.
fn zero_fill(zeroed: u64, end: u64, allocated: u64) -> Option<std::ops::Range<u64>> {
    if end <= zeroed {
        return None;
    }
    let until = ((end / ZERO_FILL_STEP + 1) * ZERO_FILL_STEP).min(allocated);
    (until > end).then_some(end..until)
}

/// The log's directory and the file operations on it.
struct Dir {
    disk: Arc<dyn Disk>,
    path: PathBuf,
    pre_alloc_size: u64,
    stats: Arc<LogStats>,
}

impl Dir {
    /// Makes a new segment durable under its final name: header and preallocation go to
    /// a `.tmp` file, which is fsynced, renamed, and the directory fsynced.
    fn create_segment(&self, first_index: u64, prev_term: u64) -> Active {
        let path = self.path.join(segment_name(first_index));
        let tmp = self.path.join(format!("{}.tmp", segment_name(first_index)));
        let header = encode_header(Header {
            first_index,
            prev_term,
        });
        let allocated = self.pre_alloc_size.max(HEADER_LEN);
        let created = self.disk.create(&tmp).and_then(|mut file| {
            file.write_at(0, &header)?;
            file.allocate(allocated)?;
            file.sync_data()?;
            Ok(file)
        });
        let file = match created {
            Ok(file) => file,
            Err(e) => fatal(format_args!("creating {}", tmp.display()), &e),
        };
        if let Err(e) = self.disk.rename(&tmp, &path) {
            fatal(format_args!("renaming {} into place", tmp.display()), &e);
        }
        self.sync();
        self.stats.grow_on_disk(allocated);
        Active {
            path,
            first_index,
            prev_term,
            file,
            records: Vec::new(),
            end: HEADER_LEN,
            allocated,
            zeroed: HEADER_LEN,
        }
    }

    /// Opens the recovered last segment for appending, cutting off a torn tail.
    fn continue_segment(&self, open: OpenSegment) -> Active {
        let mut file = match self.disk.open(&open.path) {
            Ok(file) => file,
            Err(e) => fatal(format_args!("opening {}", open.path.display()), &e),
        };
        if open.torn {
            let cut = file
                .set_len(open.end)
                .and_then(|()| file.sync_data())
                .and_then(|()| file.set_len(open.file_len));
            if let Err(e) = cut {
                fatal(
                    format_args!("truncating the torn tail of {}", open.path.display()),
                    &e,
                );
            }
        }
        self.stats.grow_on_disk(open.file_len);
        Active {
            path: open.path,
            first_index: open.header.first_index,
            prev_term: open.header.prev_term,
            file,
            records: open.records,
            end: open.end,
            allocated: open.file_len,
            zeroed: open.end,
        }
    }

    /// Makes a complete, closed segment appendable again, for a truncation.
    fn reopen(&self, segment: ClosedSegment) -> Active {
        let path = &segment.path;
        let opened = self.disk.open(path).and_then(|mut file| {
            let bytes = file.read_all()?;
            Ok((file, bytes))
        });
        let (file, bytes) = match opened {
            Ok(opened) => opened,
            Err(e) => fatal(format_args!("reopening {}", path.display()), &e),
        };
        let header = match decode_header(&bytes) {
            Ok(header) => header,
            Err(e) => fatal(format_args!("reopening {}", path.display()), &e),
        };
        let scanned = scan(&bytes, header);
        if let Some((offset, damage)) = scanned.damage {
            fatal(
                format_args!("reopening {} at offset {offset}", path.display()),
                &damage,
            );
        }
        Active {
            path: segment.path,
            first_index: header.first_index,
            prev_term: header.prev_term,
            file,
            records: scanned.record_terms(),
            end: scanned.end,
            allocated: bytes.len() as u64,
            zeroed: scanned.end,
        }
    }

    fn remove(&self, path: &Path, size: u64) {
        if let Err(e) = self.disk.remove(path) {
            fatal(format_args!("deleting {}", path.display()), &e);
        }
        self.stats.shrink_on_disk(size);
    }

    /// Removes segments in reverse order, so that a crash midway leaves a prefix of the
    /// log rather than a hole in it.
    fn remove_newest_first(&self, segments: impl DoubleEndedIterator<Item = ClosedSegment>) {
        for segment in segments.rev() {
            self.remove(&segment.path, segment.size);
        }
    }

    fn sync(&self) {
        if let Err(e) = self.disk.sync_dir(&self.path) {
            fatal(format_args!("fsync of {}", self.path.display()), &e);
        }
    }
}

struct Writer {
    dir: Dir,
    config: LogConfig,
    /// Older segments, oldest first.
    closed: Vec<ClosedSegment>,
    active: Active,
    /// Encoded records not yet written: they end at `active.end`.
    buf: Vec<u8>,
    group: Group,
    on_durable: OnDurable,
}

impl Writer {
    fn run(mut self, ops: Receiver<Op>) {
        loop {
            let op = if self.group.is_empty() {
                match ops.recv() {
                    Ok(op) => op,
                    Err(_) => break,
                }
            } else {
                match ops.try_recv() {
                    Ok(op) => op,
                    // The queue ran dry: don't make anyone wait for a fuller batch.
                    Err(TryRecvError::Empty) => {
                        self.commit();
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => break,
                }
            };
            match op {
                Op::Append(batch) => self.append(batch),
                Op::Reset(after) => self.reset(after),
                Op::Purge(up_to) => self.purge(up_to),
            }
            let full = self.group.entries >= self.config.max_batch_entries;
            // Batches a mid-batch fsync already covered need not wait for more.
            let covered = self.group.ready.is_some() && !self.group.dirty;
            if full || covered {
                self.commit();
            }
        }
        self.commit();
    }

    fn append(&mut self, batch: AppendBatch) {
        for entry in &batch.entries {
            let next = self.active.last_index() + 1;
            if entry.index < next {
                self.truncate(entry.index);
            } else if entry.index > next {
                fatal(
                    format_args!("appending entry {} to the txn log", entry.index),
                    &format_args!("the log ends at {}, which would leave a gap", next - 1),
                );
            }
            self.append_entry(entry);
            if self.group.entries >= self.config.max_batch_entries {
                self.sync_data();
            }
        }
        if batch.hard_state.is_some() {
            self.group.hard_state = batch.hard_state;
        }
        self.group.ready = Some(batch.ready_number);
    }

    fn append_entry(&mut self, entry: &Entry) {
        let start = self.buf.len();
        let len = match encode_record(entry, &mut self.buf) {
            Ok(len) => len as u64,
            Err(e) => fatal(format_args!("encoding a txn log record"), &e),
        };
        if !self.active.records.is_empty() && self.active.end + len > self.config.segment_size {
            let record = self.buf.split_off(start);
            self.roll(entry.index);
            self.buf = record;
        }
        self.active.records.push((self.active.end, entry.term));
        self.active.end += len;
        self.group.entries += 1;
        self.group.dirty = true;
    }

    /// Closes the full active segment and starts the next at `first_index`.
    fn roll(&mut self, first_index: u64) {
        self.flush();
        // Fsynced even with forceSync=no: only the last segment may end torn.
        self.fsync();
        let next = self
            .dir
            .create_segment(first_index, self.active.last_term());
        let old = std::mem::replace(&mut self.active, next);
        self.closed.push(ClosedSegment {
            first_index: old.first_index,
            path: old.path,
            size: old.allocated,
        });
    }

    /// Writes the buffered records to the active segment, growing it first if need be.
    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let active = &mut self.active;
        let start = active.end - self.buf.len() as u64;
        if active.end > active.allocated {
            let prealloc = self.config.pre_alloc_size;
            let len = if prealloc > 0 {
                active.end.div_ceil(prealloc) * prealloc
            } else {
                active.end
            };
            if let Err(e) = active.file.allocate(len) {
                fatal(
                    format_args!(
                        "preallocating {} (free space in {}, then restart)",
                        active.path.display(),
                        self.dir.path.display()
                    ),
                    &e,
                );
            }
            self.dir.stats.grow_on_disk(len - active.allocated);
            active.allocated = len;
        }
        if let Err(e) = active.file.write_at(start, &self.buf) {
            fatal(format_args!("writing {}", active.path.display()), &e);
        }
        if let Some(zeros) = zero_fill(active.zeroed, active.end, active.allocated) {
            let len = (zeros.end - zeros.start) as usize;
            if let Err(e) = active.file.write_at(zeros.start, &ZEROS[..len]) {
                fatal(format_args!("writing {}", active.path.display()), &e);
            }
            active.zeroed = zeros.end;
        }
        active.zeroed = active.zeroed.max(active.end);
        self.dir.stats.add_bytes_written(self.buf.len() as u64);
        self.buf.clear();
    }

    /// Makes everything written durable (with forceSync) without reporting anything.
    fn sync_data(&mut self) {
        self.flush();
        if self.config.force_sync {
            self.fsync();
        }
        self.dir.stats.record_batch(self.group.entries);
        self.dir.stats.set_durable_index(self.active.last_index());
        self.group.entries = 0;
        self.group.dirty = false;
    }

    /// The group commit: fsync what was written, then report the batches it covers.
    fn commit(&mut self) {
        if self.group.dirty {
            self.sync_data();
        }
        if let Some(ready_number) = self.group.ready.take() {
            let durable = Durable {
                ready_number,
                last_index: self.active.last_index(),
                hard_state: self.group.hard_state.take(),
            };
            (self.on_durable)(durable);
        }
        self.group = Group::default();
    }

    fn fsync(&mut self) {
        let started = Instant::now();
        if let Err(e) = self.active.file.sync_data() {
            fatal(format_args!("fsync of {}", self.active.path.display()), &e);
        }
        let took = started.elapsed();
        if took > SLOW_FSYNC {
            tracing::warn!(
                "fsync of {} took {} ms",
                self.active.path.display(),
                took.as_millis()
            );
        }
        self.dir.stats.record_fsync(took);
    }

    /// Cuts the log so that `index` is the next entry written.
    fn truncate(&mut self, index: u64) {
        self.flush();
        if index < self.active.first_index {
            let Some(keep) = self.closed.iter().rposition(|s| s.first_index <= index) else {
                fatal(
                    format_args!("overwriting entry {index} of the txn log"),
                    &"the log starts after it",
                );
            };
            // Newest first, so that a crash midway leaves a prefix of the log.
            self.dir.remove(&self.active.path, self.active.allocated);
            self.dir.remove_newest_first(self.closed.drain(keep + 1..));
            let segment = self.closed.remove(keep);
            self.dir.sync();
            self.active = self.dir.reopen(segment);
        }
        let active = &mut self.active;
        let cut = (index - active.first_index) as usize;
        let Some(&(offset, _)) = active.records.get(cut) else {
            return;
        };
        tracing::info!(
            "truncating the txn log at entry {index}: {} entries replaced",
            active.records.len() - cut
        );
        active.records.truncate(cut);
        active.end = offset;
        active.zeroed = active.zeroed.min(offset);
        // Cut, fsync, then grow back: the cut region reads as zeros, so no stale record
        // can follow the new ones after a crash. Fsynced even with forceSync=no.
        let cut_done = active
            .file
            .set_len(offset)
            .and_then(|()| active.file.sync_data())
            .and_then(|()| active.file.set_len(active.allocated));
        if let Err(e) = cut_done {
            fatal(format_args!("truncating {}", active.path.display()), &e);
        }
    }

    /// Replaces the whole log with an empty segment that continues `after`.
    fn reset(&mut self, after: Position) {
        tracing::info!(
            "replacing the txn log: it continues the snapshot at index {} now",
            after.index
        );
        self.buf.clear();
        self.group.entries = 0;
        self.group.dirty = false;
        self.dir.remove(&self.active.path, self.active.allocated);
        self.dir.remove_newest_first(self.closed.drain(..));
        self.dir.sync();
        self.active = self.dir.create_segment(after.index + 1, after.term);
        self.dir.stats.set_durable_index(self.active.last_index());
    }

    fn purge(&mut self, up_to: u64) {
        let mut count = 0;
        while count < self.closed.len() {
            let next_first = self
                .closed
                .get(count + 1)
                .map_or(self.active.first_index, |s| s.first_index);
            if next_first - 1 > up_to {
                break;
            }
            count += 1;
        }
        if count == 0 {
            return;
        }
        // Oldest first: a crash midway leaves a suffix, which recovery skips over.
        for segment in self.closed.drain(..count) {
            tracing::info!("purging {}", segment.path.display());
            self.dir.remove(&segment.path, segment.size);
        }
        self.dir.sync();
    }
}

#[cfg(test)]
mod zero_fill_tests {
    use super::{zero_fill, ZERO_FILL_STEP};

    const STEP: u64 = ZERO_FILL_STEP;

    #[test]
    fn records_past_the_frontier_zero_fill_to_the_next_step() {
        assert_eq!(zero_fill(40, 100, 64 * STEP), Some(100..STEP));
        assert_eq!(
            zero_fill(STEP, STEP + 1, 64 * STEP),
            Some(STEP + 1..2 * STEP)
        );
        // Ending exactly on a boundary fills the whole next step.
        assert_eq!(zero_fill(STEP - 10, STEP, 64 * STEP), Some(STEP..2 * STEP));
    }

    #[test]
    fn records_inside_zeroed_space_write_no_zeros() {
        assert_eq!(zero_fill(STEP, 100, 64 * STEP), None);
        assert_eq!(zero_fill(STEP, STEP, 64 * STEP), None);
    }

    #[test]
    fn zeros_stay_inside_the_preallocation() {
        assert_eq!(zero_fill(40, 100, 1000), Some(100..1000));
        // Sparse growth (no preallocation): the records end the file, nothing to fill.
        assert_eq!(zero_fill(40, 1000, 1000), None);
    }
}

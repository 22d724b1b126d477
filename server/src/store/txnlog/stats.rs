//! Counters the log writer keeps for `mntr`: fsync latency and group-commit batch sizes,
//! and their distributions for `/metrics`. Written by the writer thread alone, read
//! from anywhere.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::metrics::histogram::Histogram;

use crate::metrics::{count_histogram, millis_histogram, observe_millis};

/// fsyncs slower than this are logged at warn, as ZooKeeper's `fsync.warningthresholdms`.
pub const SLOW_FSYNC: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct LogStats {
    /// ZooKeeper's `fsynctime`, in milliseconds.
    pub fsync_time: Histogram,
    /// Entries per group commit (ZooKeeper's `sync_processor_batch_size`).
    pub batch_size: Histogram,
    fsyncs: AtomicU64,
    fsync_nanos_total: AtomicU64,
    fsync_nanos_max: AtomicU64,
    /// Group commits: each ends with one fsync (or none, with `forceSync=no`).
    batches: AtomicU64,
    batch_entries_total: AtomicU64,
    last_batch_entries: AtomicU64,
    max_batch_entries: AtomicU64,
    bytes_written: AtomicU64,
    /// Bytes the segments take on disk, preallocated space included.
    size_on_disk: AtomicU64,
    /// The last index covered by an fsync: what a crash can no longer take away.
    durable_index: AtomicU64,
}

/// A consistent-enough copy of [`LogStats`] for reporting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStatsSnapshot {
    pub fsyncs: u64,
    pub fsync_total: Duration,
    pub fsync_max: Duration,
    pub batches: u64,
    pub last_batch_entries: u64,
    pub max_batch_entries: u64,
    pub entries_written: u64,
    pub bytes_written: u64,
    pub size_on_disk: u64,
    pub durable_index: u64,
}

impl LogStatsSnapshot {
    pub fn avg_fsync(&self) -> Duration {
        match u32::try_from(self.fsyncs) {
            Ok(n) if n > 0 => self.fsync_total / n,
            _ => Duration::ZERO,
        }
    }

    /// Entries per group commit.
    pub fn avg_batch_entries(&self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.entries_written as f64 / self.batches as f64
        }
    }
}

impl Default for LogStats {
    fn default() -> Self {
        LogStats {
            fsync_time: millis_histogram(),
            batch_size: count_histogram(),
            fsyncs: AtomicU64::default(),
            fsync_nanos_total: AtomicU64::default(),
            fsync_nanos_max: AtomicU64::default(),
            batches: AtomicU64::default(),
            batch_entries_total: AtomicU64::default(),
            last_batch_entries: AtomicU64::default(),
            max_batch_entries: AtomicU64::default(),
            bytes_written: AtomicU64::default(),
            size_on_disk: AtomicU64::default(),
            durable_index: AtomicU64::default(),
        }
    }
}

impl LogStats {
    pub fn snapshot(&self) -> LogStatsSnapshot {
        LogStatsSnapshot {
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            fsync_total: Duration::from_nanos(self.fsync_nanos_total.load(Ordering::Relaxed)),
            fsync_max: Duration::from_nanos(self.fsync_nanos_max.load(Ordering::Relaxed)),
            batches: self.batches.load(Ordering::Relaxed),
            last_batch_entries: self.last_batch_entries.load(Ordering::Relaxed),
            max_batch_entries: self.max_batch_entries.load(Ordering::Relaxed),
            entries_written: self.batch_entries_total.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
            size_on_disk: self.size_on_disk.load(Ordering::Relaxed),
            durable_index: self.durable_index.load(Ordering::Relaxed),
        }
    }

    pub(super) fn record_fsync(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        observe_millis(&self.fsync_time, took);
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.fsync_nanos_total.fetch_add(nanos, Ordering::Relaxed);
        self.fsync_nanos_max.fetch_max(nanos, Ordering::Relaxed);
    }

    pub(super) fn record_batch(&self, entries: u64) {
        self.batch_size.observe(entries as f64);
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.batch_entries_total
            .fetch_add(entries, Ordering::Relaxed);
        self.last_batch_entries.store(entries, Ordering::Relaxed);
        self.max_batch_entries.fetch_max(entries, Ordering::Relaxed);
    }

    pub(super) fn add_bytes_written(&self, bytes: u64) {
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn grow_on_disk(&self, bytes: u64) {
        self.size_on_disk.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn shrink_on_disk(&self, bytes: u64) {
        // Saturating: a size read at open may disagree with what is deleted later. The
        // closure always returns Some, so the update cannot fail.
        let _ = self
            .size_on_disk
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |size| {
                Some(size.saturating_sub(bytes))
            });
    }

    pub(super) fn set_durable_index(&self, index: u64) {
        self.durable_index.store(index, Ordering::Relaxed);
    }
}

//! Counters for `srvr`, `stat` and `mntr`: lock-free, updated on the request path;
//! and each connection's own, for `cons`.

use std::sync::atomic::{AtomicU64, Ordering};

use std::collections::VecDeque;

use parking_lot::Mutex;

use crate::conn_stats::ConnStatsTable;

#[derive(Debug, Default)]
pub struct Metrics {
    packets_received: AtomicU64,
    packets_sent: AtomicU64,
    latency_total_ms: AtomicU64,
    latency_count: AtomicU64,
    latency_max_ms: AtomicU64,
    latency_min_ms: AtomicU64,
    /// Connections closed because they held more output than `maxClientOutgoingBytes`
    /// allows (never reset: it counts events an operator must hear of).
    closed_over_backlog: AtomicU64,
    pub connections: ConnStatsTable,
    /// The tree's digest at every 128th zxid, the last 1024 of them, for `hash`
    /// (ZooKeeper's `DataTree.digestLog`): compared across replicas.
    digest_log: Mutex<VecDeque<(i64, u64)>>,
}

/// ZooKeeper's `DIGEST_LOG_INTERVAL` and `DIGEST_LOG_LIMIT`.
const DIGEST_LOG_INTERVAL: i64 = 128;
const DIGEST_LOG_LIMIT: usize = 1024;

impl Metrics {
    pub fn packet_received(&self) {
        self.packets_received.fetch_add(1, Ordering::Relaxed);
    }

    pub fn packet_sent(&self) {
        self.packets_sent.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one request's time from arrival to reply.
    pub fn request_latency(&self, millis: u64) {
        self.latency_total_ms.fetch_add(millis, Ordering::Relaxed);
        let n = self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_max_ms.fetch_max(millis, Ordering::Relaxed);
        if n == 0 {
            self.latency_min_ms.store(millis, Ordering::Relaxed);
        } else {
            self.latency_min_ms.fetch_min(millis, Ordering::Relaxed);
        }
    }

    /// Records the tree's digest after `zxid` was applied, if `zxid` is one `hash` keeps.
    pub fn applied_digest(&self, zxid: i64, digest: u64) {
        if zxid % DIGEST_LOG_INTERVAL != 0 {
            return;
        }
        let mut log = self.digest_log.lock();
        log.push_back((zxid, digest));
        if log.len() > DIGEST_LOG_LIMIT {
            log.pop_front();
        }
    }

    /// `hash`: `zxid: digest` lines, oldest first.
    pub fn digest_log(&self) -> Vec<(i64, u64)> {
        self.digest_log.lock().iter().copied().collect()
    }

    pub fn closed_over_backlog(&self) {
        self.closed_over_backlog.fetch_add(1, Ordering::Relaxed);
    }

    pub fn closed_over_backlog_count(&self) -> u64 {
        self.closed_over_backlog.load(Ordering::Relaxed)
    }

    pub fn received(&self) -> u64 {
        self.packets_received.load(Ordering::Relaxed)
    }

    pub fn sent(&self) -> u64 {
        self.packets_sent.load(Ordering::Relaxed)
    }

    /// (min, avg, max) request latency in milliseconds.
    pub fn latency(&self) -> (u64, f64, u64) {
        let n = self.latency_count.load(Ordering::Relaxed);
        let total = self.latency_total_ms.load(Ordering::Relaxed);
        let avg = if n == 0 { 0.0 } else { total as f64 / n as f64 };
        (
            self.latency_min_ms.load(Ordering::Relaxed),
            avg,
            self.latency_max_ms.load(Ordering::Relaxed),
        )
    }

    pub fn reset(&self) {
        for counter in [
            &self.packets_received,
            &self.packets_sent,
            &self.latency_total_ms,
            &self.latency_count,
            &self.latency_max_ms,
            &self.latency_min_ms,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

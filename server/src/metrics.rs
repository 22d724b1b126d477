//! Counters for `srvr`, `stat` and `mntr`: lock-free, updated on the request path.

use std::sync::atomic::{AtomicU64, Ordering};

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
}

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

//! Counters for `srvr`, `stat` and `mntr`: lock-free, updated on the request path;
//! each connection's own, for `cons`; and the distributions `/metrics` exports
//! (Prometheus histograms, whose quantiles `histogram_quantile` derives).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::collections::VecDeque;

use paddock_wire::OpCode;
use parking_lot::Mutex;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

use crate::conn_stats::ConnStatsTable;

/// Bucket bounds in milliseconds: 1, 2, 3, 5 and 7 of every decade from 10 µs to 30 s,
/// so a quantile is known within a factor of 1.5 to 2.
const MILLIS_BUCKETS: [f64; 33] = [
    0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0,
    30.0, 50.0, 70.0, 100.0, 200.0, 300.0, 500.0, 700.0, 1000.0, 2000.0, 3000.0, 5000.0, 7000.0,
    10000.0, 20000.0, 30000.0,
];

/// A distribution of times in milliseconds, ZooKeeper's unit for its summaries.
pub fn millis_histogram() -> Histogram {
    Histogram::new(MILLIS_BUCKETS)
}

/// A distribution of counts (entries per group commit): 1 to 8192 in powers of two.
pub fn count_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 14))
}

/// Records `took` in a [`millis_histogram`].
pub fn observe_millis(histogram: &Histogram, took: Duration) {
    histogram.observe(took.as_secs_f64() * 1000.0);
}

/// The op a request latency is labelled with, named as ZooKeeper's `Request.op2String`
/// names it (`getData`, `create`, `multi`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpName(pub OpCode);

impl EncodeLabelValue for OpName {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        use std::fmt::Write;
        // ZooKeeper capitalises these acronyms.
        match self.0 {
            OpCode::GetAcl => return encoder.write_str("getACL"),
            OpCode::SetAcl => return encoder.write_str("setACL"),
            OpCode::CreateTtl => return encoder.write_str("createTTL"),
            _ => {}
        }
        let debug = format!("{:?}", self.0);
        let mut chars = debug.chars();
        if let Some(first) = chars.next() {
            encoder.write_char(first.to_ascii_lowercase())?;
        }
        encoder.write_str(chars.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OpLabels {
    pub op: OpName,
}

/// What `/metrics` exports of the request path.
#[derive(Debug)]
pub struct RequestMetrics {
    /// Arrival to reply, per op type.
    pub latency_by_op: Family<OpLabels, Histogram, fn() -> Histogram>,
    /// ZooKeeper's `readlatency`: reads, arrival to reply.
    pub read_latency: Histogram,
    /// ZooKeeper's `updatelatency`: writes, arrival to reply (consensus included).
    pub update_latency: Histogram,
    /// Bytes read from client sockets (ZooKeeper's `bytes_received_count`).
    pub bytes_received: Counter,
    /// Bytes written to client sockets (ZooKeeper's `response_bytes`).
    pub bytes_sent: Counter,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        RequestMetrics {
            latency_by_op: Family::new_with_constructor(millis_histogram),
            read_latency: millis_histogram(),
            update_latency: millis_histogram(),
            bytes_received: Counter::default(),
            bytes_sent: Counter::default(),
        }
    }
}

impl RequestMetrics {
    /// One request answered, `took` after it arrived. Pings and authentication are
    /// session upkeep, not reads.
    pub fn answered(&self, op: OpCode, took: Duration) {
        observe_millis(
            &self
                .latency_by_op
                .get_or_create(&OpLabels { op: OpName(op) }),
            took,
        );
        if op.is_write() {
            observe_millis(&self.update_latency, took);
        } else if !matches!(
            op,
            OpCode::Ping | OpCode::Auth | OpCode::Sasl | OpCode::SetWatches | OpCode::SetWatches2
        ) {
            observe_millis(&self.read_latency, took);
        }
    }
}

/// What `/metrics` exports of the raft loop.
#[derive(Debug)]
pub struct RaftMetrics {
    /// ZooKeeper's `election_time`, in milliseconds: from finding itself without a
    /// leader (at start, or when the leader was lost) to knowing one.
    pub election_time: Histogram,
    /// ZooKeeper's `looking_count`: how often this server found itself without a leader.
    pub looking: Counter,
    /// ZooKeeper's `snapshottime`, in milliseconds: writing one snapshot.
    pub snapshot_time: Histogram,
    /// ZooKeeper's `quorum_ack_latency`, in milliseconds, on the leader: from
    /// appending a batch of proposals to its log to their commit.
    pub quorum_ack_latency: Histogram,
}

impl Default for RaftMetrics {
    fn default() -> Self {
        RaftMetrics {
            election_time: millis_histogram(),
            looking: Counter::default(),
            snapshot_time: millis_histogram(),
            quorum_ack_latency: millis_histogram(),
        }
    }
}

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
    /// Never reset by `srst`: Prometheus expects counters and histograms only to grow.
    pub requests: RequestMetrics,
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

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::registry::Registry;

    #[test]
    fn latency_is_labelled_with_zookeepers_op_names_and_split_into_reads_and_writes() {
        let requests = RequestMetrics::default();
        let ms = Duration::from_millis;
        requests.answered(OpCode::GetData, ms(2));
        requests.answered(OpCode::GetAcl, ms(3));
        requests.answered(OpCode::Create2, ms(40));
        requests.answered(OpCode::Ping, ms(1));
        let mut registry = Registry::default();
        registry.register("by_op", "", requests.latency_by_op.clone());
        registry.register("reads", "", requests.read_latency.clone());
        registry.register("writes", "", requests.update_latency.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "by_op_count{op=\"getData\"} 1",
            "by_op_count{op=\"getACL\"} 1",
            "by_op_count{op=\"create2\"} 1",
            "by_op_count{op=\"ping\"} 1",
            // Pings are session upkeep, not reads.
            "reads_count 2",
            "reads_bucket{le=\"2.0\"} 1",
            "writes_count 1",
            "writes_sum 40.0",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
    }
}

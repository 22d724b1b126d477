//! `/metrics`: the server's metrics in the Prometheus (OpenMetrics) text format,
//! named as ZooKeeper's `PrometheusMetricsProvider` names them where it has them.
//!
//! Two kinds: distributions and counters recorded where things happen (request
//! latency per op, fsync time, group-commit sizes, snapshot and election times, bytes
//! in and out), registered here from the modules that own them; and gauges read from
//! the server's state at each scrape, the values `mntr` reports (`report::monitor`),
//! and the process's CPU time, memory and file descriptors.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::process_stats;
use crate::report;
use crate::server::Server;

/// The content type of [`Exporter::scrape`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `mntr` values exported as gauges: the `mntr` key, the exported name (ZooKeeper's
/// where it has one, `paddock_` otherwise), and the help text. A key `mntr` leaves out
/// on this server (`synced_followers` on a follower) is left out here too.
const GAUGES: &[(&str, &str, &str)] = &[
    ("znode_count", "znode_count", "znodes in the tree"),
    ("watch_count", "watch_count", "watches set, of every kind"),
    ("ephemerals_count", "ephemerals_count", "ephemeral znodes"),
    (
        "approximate_data_size",
        "approximate_data_size",
        "bytes of znode paths and data",
    ),
    (
        "num_alive_connections",
        "num_alive_connections",
        "open client connections",
    ),
    (
        "outstanding_requests",
        "outstanding_requests",
        "requests proposed and not yet applied",
    ),
    (
        "global_sessions",
        "global_sessions",
        "sessions in the replicated session table",
    ),
    (
        "packets_received",
        "packets_received",
        "requests received since the last srst",
    ),
    (
        "packets_sent",
        "packets_sent",
        "replies and notifications sent since the last srst",
    ),
    (
        "avg_latency",
        "avg_latency",
        "mean request latency since the last srst, ms",
    ),
    (
        "min_latency",
        "min_latency",
        "least request latency since the last srst, ms",
    ),
    (
        "max_latency",
        "max_latency",
        "greatest request latency since the last srst, ms",
    ),
    ("uptime", "uptime", "milliseconds since the server started"),
    (
        "quorum_size",
        "quorum_size",
        "voting servers in the ensemble",
    ),
    (
        "followers",
        "learners",
        "on the leader: followers and observers",
    ),
    (
        "synced_followers",
        "synced_followers",
        "on the leader: followers with every entry it has",
    ),
    (
        "open_file_descriptor_count",
        "open_file_descriptor_count",
        "open file descriptors",
    ),
    (
        "max_file_descriptor_count",
        "max_file_descriptor_count",
        "the file descriptor limit",
    ),
    (
        "raft_term",
        "paddock_raft_term",
        "the raft term this server is in",
    ),
    (
        "raft_commit_index",
        "paddock_raft_commit_index",
        "the last raft index known committed",
    ),
    (
        "raft_applied_index",
        "paddock_raft_applied_index",
        "the last raft index applied (the zxid)",
    ),
    (
        "connections_closed_backlog",
        "paddock_connections_closed_backlog",
        "connections closed for holding more than maxClientOutgoingBytes",
    ),
    (
        "log_bytes_written",
        "paddock_log_bytes_written",
        "bytes appended to the txn log",
    ),
    (
        "log_size_bytes",
        "paddock_log_size_bytes",
        "bytes the txn log takes on disk",
    ),
    (
        "snapshot_size_bytes",
        "paddock_snapshot_size_bytes",
        "bytes of snapshots in dataDir",
    ),
];

/// The registry of one server's metrics.
pub struct Exporter {
    registry: Registry,
}

impl Exporter {
    pub fn new(server: Arc<Server>) -> Exporter {
        let mut registry = Registry::default();
        let requests = &server.metrics.requests;
        registry.register(
            "paddock_request_latency_ms",
            "client requests, arrival to reply, by op, in milliseconds",
            requests.latency_by_op.clone(),
        );
        registry.register(
            "readlatency",
            "reads, arrival to reply, in milliseconds",
            requests.read_latency.clone(),
        );
        registry.register(
            "updatelatency",
            "writes, arrival to reply (consensus included), in milliseconds",
            requests.update_latency.clone(),
        );
        registry.register(
            "bytes_received_count",
            "bytes read from client connections",
            requests.bytes_received.clone(),
        );
        registry.register(
            "response_bytes",
            "bytes written to client connections",
            requests.bytes_sent.clone(),
        );
        registry.register(
            "fsynctime",
            "txn log fsyncs, in milliseconds",
            server.log_stats.fsync_time.clone(),
        );
        registry.register(
            "sync_processor_batch_size",
            "txns written per group commit (one fsync)",
            server.log_stats.batch_size.clone(),
        );
        let raft = &server.health.status.metrics;
        registry.register(
            "snapshottime",
            "writing a snapshot, in milliseconds",
            raft.snapshot_time.clone(),
        );
        registry.register(
            "election_time",
            "from losing (or not yet having) a leader to knowing one, in milliseconds",
            raft.election_time.clone(),
        );
        registry.register(
            "quorum_ack_latency",
            "on the leader: from appending a batch of proposals to their commit, in milliseconds",
            raft.quorum_ack_latency.clone(),
        );
        registry.register(
            "looking_count",
            "times this server found itself without a leader",
            raft.looking.clone(),
        );
        registry.register_collector(Box::new(StateCollector { server }));
        Exporter { registry }
    }

    /// The text a scrape returns.
    pub fn scrape(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; a metric that could not encode would be a bug
        // in the encoder, and the scrape then says so rather than lying.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            out = format!("# encoding the metrics failed: {e}\n");
        }
        out
    }
}

/// The gauges read from the state at each scrape.
struct StateCollector {
    server: Arc<Server>,
}

impl std::fmt::Debug for StateCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateCollector")
    }
}

/// A gauge of a whole number (printed as one, not as a float).
fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> std::fmt::Result {
    let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
}

fn float_gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: f64,
) -> std::fmt::Result {
    let gauge = ConstGauge::new(value);
    gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let server = &self.server;
        let rows = report::monitor(server);
        for (key, name, help) in GAUGES {
            match rows.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
                Some(report::Value::Count(n)) => gauge(&mut encoder, name, help, *n)?,
                Some(report::Value::Decimal(x, _)) => float_gauge(&mut encoder, name, help, *x)?,
                Some(report::Value::Text(_)) | None => {}
            }
        }
        gauge(
            &mut encoder,
            "paddock_serving",
            "1 while this server is in touch with a quorum and takes clients",
            u64::from(server.health.is_serving()),
        )?;
        gauge(
            &mut encoder,
            "paddock_ready",
            "1 while /health/ready answers 200: serving and caught up",
            u64::from(server.health.ready_for_clients()),
        )?;
        gauge(
            &mut encoder,
            "paddock_is_leader",
            "1 on the raft leader",
            u64::from(server.health.is_leader()),
        )?;
        if let Some(cpu) = process_stats::cpu_time() {
            let counter = ConstCounter::new(cpu.as_secs_f64());
            counter.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "user and system CPU time, in seconds",
                None,
                counter.metric_type(),
            )?)?;
        }
        if let Some(rss) = process_stats::resident_bytes() {
            gauge(
                &mut encoder,
                "process_resident_memory_bytes",
                "resident memory, in bytes",
                rss,
            )?;
        }
        if let Some(open) = process_stats::open_fds() {
            gauge(
                &mut encoder,
                "process_open_fds",
                "open file descriptors",
                open,
            )?;
        }
        if let Some(max) = process_stats::max_fds() {
            gauge(
                &mut encoder,
                "process_max_fds",
                "the file descriptor limit",
                max,
            )?;
        }
        Ok(())
    }
}

//! What a server reports about itself, computed once as typed values: `fourlw`
//! renders them as ZooKeeper's four-letter-word text, `admin` as its AdminServer's
//! JSON, and `/metrics` exports the monitor values as Prometheus gauges.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::Path;

use crate::config::PeerType;
use crate::conns::ConnId;
use crate::consensus::Role;
use crate::process_stats;
use crate::server::Server;
use crate::tree::DIGEST_VERSION;

/// The version clients see (kazoo and Curator parse the leading digits of `envi`'s
/// `zookeeper.version=`): the ZooKeeper protocol level Paddock speaks, then its own.
pub const VERSION: &str = concat!(
    "3.8.0-paddock-",
    env!("CARGO_PKG_VERSION"),
    ", built on paddock"
);

/// What ZooKeeper answers a command that needs a running server while it has no
/// quorum.
pub const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests";

/// ZooKeeper's name for this server's state: `standalone`, `leader`, `follower`,
/// `observer`, or `looking` while it knows no leader.
pub fn mode(server: &Server) -> &'static str {
    if server.settings.standalone {
        return "standalone";
    }
    match server.health.status.role() {
        Role::Leader => "leader",
        Role::Observer => "observer",
        // ZooKeeper has no word for a candidate; it is looking for a leader.
        Role::Candidate => "looking",
        Role::Follower => "follower",
    }
}

/// `srvr`'s numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStats {
    pub latency_min: u64,
    pub latency_avg: f64,
    pub latency_max: u64,
    pub received: u64,
    pub sent: u64,
    pub connections: usize,
    pub outstanding: usize,
    pub last_zxid: i64,
    pub mode: &'static str,
    pub node_count: usize,
    pub uptime_ms: u64,
}

pub fn server_stats(server: &Server) -> ServerStats {
    let (latency_min, latency_avg, latency_max) = server.metrics.latency();
    let (last_zxid, node_count) = {
        let db = server.replicated.db.read();
        (db.last_zxid, db.tree.node_count())
    };
    ServerStats {
        latency_min,
        latency_avg,
        latency_max,
        received: server.metrics.received(),
        sent: server.metrics.sent(),
        connections: server.conns.count(),
        outstanding: server.writes.outstanding(),
        last_zxid,
        mode: mode(server),
        node_count,
        uptime_ms: u64::try_from(server.started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// One `mntr` value, typed so that JSON gets numbers and text keeps ZooKeeper's
/// formatting.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Count(u64),
    /// A value and the decimals text shows it with.
    Decimal(f64, usize),
    Text(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Decimal(x, places) => write!(f, "{x:.places$}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

fn count(n: impl TryInto<u64>) -> Value {
    Value::Count(n.try_into().unwrap_or(u64::MAX))
}

/// `mntr`'s keys (without text's `zk_` prefix, as ZooKeeper's JSON and Prometheus
/// name them) and values, in text's order.
pub fn monitor(server: &Server) -> Vec<(&'static str, Value)> {
    let stats = server_stats(server);
    // One read of the tree: the digest must be the one at `last_zxid` (replicas are
    // compared on that pair), and a write applied between two reads would pair a zxid
    // with a later digest.
    let (last_zxid, ephemerals, data_size, digest, sessions) = {
        let db = server.replicated.db.read();
        (
            db.last_zxid,
            db.tree.ephemeral_count(),
            db.tree.approximate_data_size(),
            db.tree.digest(),
            db.sessions.len(),
        )
    };
    let watches = server.replicated.watches.lock().summary();
    let mut rows: Vec<(&str, Value)> = vec![
        ("version", Value::Text(VERSION.to_string())),
        ("server_state", Value::Text(stats.mode.to_string())),
        ("avg_latency", Value::Decimal(stats.latency_avg, 4)),
        ("max_latency", count(stats.latency_max)),
        ("min_latency", count(stats.latency_min)),
        ("packets_received", count(stats.received)),
        ("packets_sent", count(stats.sent)),
        ("num_alive_connections", count(stats.connections)),
        ("outstanding_requests", count(stats.outstanding)),
        ("znode_count", count(stats.node_count)),
        ("watch_count", count(watches.watches)),
        (
            "connections_closed_backlog",
            count(server.metrics.closed_over_backlog_count()),
        ),
        ("ephemerals_count", count(ephemerals)),
        ("approximate_data_size", count(data_size)),
        ("global_sessions", count(sessions)),
        ("last_zxid", Value::Text(format!("{last_zxid:#x}"))),
        // The tree's digest at last_zxid: equal on replicas at the same zxid.
        ("tree_digest", Value::Text(format!("{digest:016x}"))),
        // Digests of different formats differ for equal trees (a mixed-version upgrade).
        ("tree_digest_version", count(u64::from(DIGEST_VERSION))),
        ("raft_term", count(server.health.status.term())),
        ("raft_commit_index", count(server.health.status.commit())),
        ("raft_applied_index", count(server.health.status.applied())),
        ("uptime", count(stats.uptime_ms)),
    ];
    if let Some(open) = process_stats::open_fds() {
        rows.push(("open_file_descriptor_count", count(open)));
    }
    if let Some(max) = process_stats::max_fds() {
        rows.push(("max_file_descriptor_count", count(max)));
    }
    {
        let log = server.log_stats.snapshot();
        let ms = |d: std::time::Duration| Value::Decimal(d.as_secs_f64() * 1000.0, 3);
        rows.push(("fsync_count", count(log.fsyncs)));
        rows.push(("fsync_avg_ms", ms(log.avg_fsync())));
        rows.push(("fsync_max_ms", ms(log.fsync_max)));
        rows.push(("log_batches", count(log.batches)));
        rows.push((
            "log_batch_avg_entries",
            Value::Decimal(log.avg_batch_entries(), 1),
        ));
        rows.push(("log_batch_max_entries", count(log.max_batch_entries)));
        rows.push(("log_bytes_written", count(log.bytes_written)));
        rows.push(("log_size_bytes", count(log.size_on_disk)));
        rows.push(("snapshot_size_bytes", count(server.snapshot_bytes())));
    }
    if let Some(ensemble) = &server.settings.ensemble {
        rows.push(("quorum_size", count(ensemble.participants().count())));
    }
    if server.health.status.is_leader() && !server.settings.standalone {
        let (followers, synced) = server.health.status.followers();
        rows.push(("followers", count(followers)));
        rows.push(("synced_followers", count(synced)));
    }
    rows
}

/// ZooKeeper's `conf`: `ZooKeeperServer.dumpConf`, and in an ensemble
/// `QuorumZooKeeperServer.dumpConf` after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conf {
    /// -1 without a plain client port, as ZooKeeper reports it.
    pub client_port: i32,
    /// -1 without a TLS client port.
    pub secure_client_port: i32,
    pub data_dir: String,
    pub data_dir_size: u64,
    pub data_log_dir: String,
    pub data_log_size: u64,
    pub tick_time_ms: u128,
    pub max_client_cnxns: usize,
    pub min_session_timeout_ms: u128,
    pub max_session_timeout_ms: u128,
    /// 0 when standalone, as ZooKeeper reports it.
    pub server_id: u64,
    pub quorum: Option<QuorumConf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumConf {
    pub init_limit: u32,
    pub sync_limit: u32,
    pub election_port: u16,
    pub quorum_port: u16,
    /// LearnerType's ordinal: 0 participant, 1 observer.
    pub peer_type: u8,
    pub membership: String,
}

pub fn conf(server: &Server) -> Conf {
    let s = &server.settings;
    let (data_dir_size, data_log_size) = dirs(server);
    Conf {
        client_port: s.client_addr.map_or(-1, |a| i32::from(a.port())),
        secure_client_port: s.secure_client_addr.map_or(-1, |a| i32::from(a.port())),
        data_dir: s.data_dir.display().to_string(),
        data_dir_size,
        data_log_dir: s.data_log_dir.display().to_string(),
        data_log_size,
        tick_time_ms: s.tick.as_millis(),
        max_client_cnxns: s.max_client_cnxns,
        min_session_timeout_ms: s.min_session_timeout.as_millis(),
        max_session_timeout_ms: s.max_session_timeout.as_millis(),
        server_id: if s.standalone { 0 } else { s.server_id },
        quorum: s.ensemble.as_ref().map(|ensemble| {
            let me = ensemble.servers.get(&s.server_id);
            QuorumConf {
                init_limit: ensemble.init_limit,
                sync_limit: ensemble.sync_limit,
                election_port: me.map_or(0, |me| me.election_port),
                quorum_port: me.map_or(0, |me| me.peer_port),
                peer_type: match me.map(|me| me.role) {
                    Some(PeerType::Observer) => 1,
                    _ => 0,
                },
                membership: ensemble.membership(),
            }
        }),
    }
}

/// The bytes of the files under `dir`, at any depth (0 if it cannot be read).
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => dir_size(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// ZooKeeper's `dirs`: the bytes in dataDir and in dataLogDir.
pub fn dirs(server: &Server) -> (u64, u64) {
    (
        dir_size(&server.settings.data_dir),
        dir_size(&server.settings.data_log_dir),
    )
}

/// ZooKeeper's data-watch table (data, exist and persistent watches; not child
/// watches): each watched path with the sessions watching it.
pub fn watch_table(server: &Server) -> Vec<(String, Vec<i64>)> {
    let sessions: HashMap<ConnId, i64> = server.conns.sessions().into_iter().collect();
    server
        .replicated
        .watches
        .lock()
        .data_table()
        .into_iter()
        .map(|(path, conns)| {
            let ids = conns
                .iter()
                .filter_map(|c| sessions.get(c).copied())
                .collect();
            (path, ids)
        })
        .collect()
}

/// `wchs`: (sessions watching, paths watched, watches) of a [`watch_table`].
pub fn watch_summary(table: &[(String, Vec<i64>)]) -> (usize, usize, usize) {
    let sessions: HashSet<i64> = table
        .iter()
        .flat_map(|(_, ids)| ids.iter().copied())
        .collect();
    let watches = table.iter().map(|(_, ids)| ids.len()).sum();
    (sessions.len(), table.len(), watches)
}

/// `wchc`: a [`watch_table`] by session.
pub fn watches_by_session(table: Vec<(String, Vec<i64>)>) -> BTreeMap<i64, Vec<String>> {
    let mut by_session: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (path, ids) in table {
        for id in ids {
            by_session.entry(id).or_default().push(path.clone());
        }
    }
    by_session
}

/// `dump`: every session with its timeout, and the ephemeral nodes of those that
/// own any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dump {
    pub sessions: Vec<(i64, i32)>,
    pub ephemerals: Vec<(i64, Vec<String>)>,
}

pub fn dump(server: &Server) -> Dump {
    let db = server.replicated.db.read();
    let mut sessions: Vec<(i64, i32)> = db.sessions.iter().map(|s| (s.id, s.timeout)).collect();
    sessions.sort_unstable();
    let ephemerals = sessions
        .iter()
        .map(|(id, _)| (*id, db.tree.get_ephemerals(*id, "/")))
        .filter(|(_, paths)| !paths.is_empty())
        .collect();
    Dump {
        sessions,
        ephemerals,
    }
}

/// `envi`'s keys and values.
pub fn environment() -> Vec<(&'static str, String)> {
    vec![
        ("zookeeper.version", VERSION.to_string()),
        (
            "host.name",
            std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into()),
        ),
        ("os.name", std::env::consts::OS.to_string()),
        ("os.arch", std::env::consts::ARCH.to_string()),
        (
            "user.dir",
            std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        ),
    ]
}

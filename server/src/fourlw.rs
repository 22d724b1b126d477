//! ZooKeeper's four-letter words, answered on the client port: a connection whose first
//! four bytes spell one gets a plain-text answer and is closed. Output formats and key
//! names follow ZooKeeper's, since monitoring tools parse them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::path::Path;

use crate::config::PeerType;
use crate::conns::ConnId;
use crate::consensus::Role;
use crate::server::Server;

/// The version clients see (kazoo and Curator parse the leading digits of `envi`'s
/// `zookeeper.version=`): the ZooKeeper protocol level Paddock speaks, then its own.
pub const VERSION: &str = concat!(
    "3.8.0-paddock-",
    env!("CARGO_PKG_VERSION"),
    ", built on paddock"
);

const COMMANDS: [&str; 16] = [
    "ruok", "srvr", "stat", "mntr", "conf", "cons", "envi", "wchs", "wchc", "wchp", "isro", "dump",
    "srst", "crst", "dirs", "hash",
];

/// The command spelled by a connection's first four bytes, if any. Any other four
/// bytes are a frame length, as in ZooKeeper: an unknown word reads as a length of
/// about 2 GB and the connection is closed without an answer.
pub fn parse(prefix: &[u8; 4]) -> Option<&'static str> {
    COMMANDS.iter().copied().find(|c| c.as_bytes() == prefix)
}

pub fn run(command: &str, server: &Server) -> String {
    if !server.settings.four_letter_words.is_enabled(command) {
        return format!("{command} is not executed because it is not in the whitelist.\n");
    }
    match command {
        "ruok" => "imok".to_string(),
        "srvr" => srvr(server, false),
        "stat" => srvr(server, true),
        "mntr" => mntr(server),
        "conf" if serving(server) => conf(server),
        "cons" if serving(server) => format!("{}\n", server.metrics.connections.dump(false)),
        "envi" => envi(),
        "wchs" if serving(server) => wchs(server),
        "wchc" if serving(server) => wchc(server),
        "wchp" if serving(server) => wchp(server),
        // ZooKeeper's answer when it has no running server (no quorum).
        "isro" if !serving(server) => "null".to_string(),
        "isro" => "rw".to_string(),
        "dump" => dump(server),
        "srst" => {
            server.metrics.reset();
            "Server stats reset.\n".to_string()
        }
        "crst" if serving(server) => {
            server.metrics.connections.reset_all();
            "Connection stats reset.\n".to_string()
        }
        "dirs" if serving(server) => dirs(server),
        "hash" if serving(server) => hash(server),
        _ => NOT_SERVING.to_string(),
    }
}

fn mode(server: &Server) -> &'static str {
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

/// What ZooKeeper answers `srvr`, `stat` and `mntr` with while it has no quorum.
const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests\n";

/// A server out of touch with a quorum (electing, or cut off) serves no clients.
fn serving(server: &Server) -> bool {
    server.health.is_serving()
}

fn srvr(server: &Server, with_clients: bool) -> String {
    if !serving(server) {
        return NOT_SERVING.to_string();
    }
    let (min, avg, max) = server.metrics.latency();
    let (zxid, nodes) = {
        let db = server.replicated.db.read();
        (db.last_zxid, db.tree.node_count())
    };
    let mut out = format!("Zookeeper version: {VERSION}\n");
    if with_clients {
        out.push_str("Clients:\n");
        out.push_str(&server.metrics.connections.dump(true));
        out.push('\n');
    }
    let _ = write!(
        out,
        "Latency min/avg/max: {min}/{avg:.4}/{max}\nReceived: {}\nSent: {}\nConnections: {}\nOutstanding: {}\nZxid: {zxid:#x}\nMode: {}\nNode count: {nodes}\n",
        server.metrics.received(),
        server.metrics.sent(),
        server.conns.count(),
        server.writes.outstanding(),
        mode(server),
    );
    out
}

fn mntr(server: &Server) -> String {
    let (min, avg, max) = server.metrics.latency();
    let (nodes, ephemerals, data_size, zxid, digest) = {
        let db = server.replicated.db.read();
        (
            db.tree.node_count(),
            db.tree.ephemeral_count(),
            db.tree.approximate_data_size(),
            db.last_zxid,
            db.tree.digest(),
        )
    };
    let watches = server.replicated.watches.lock().summary();
    let mut rows: Vec<(&str, String)> = vec![
        ("zk_version", VERSION.to_string()),
        ("zk_server_state", mode(server).to_string()),
        ("zk_avg_latency", format!("{avg:.4}")),
        ("zk_max_latency", max.to_string()),
        ("zk_min_latency", min.to_string()),
        ("zk_packets_received", server.metrics.received().to_string()),
        ("zk_packets_sent", server.metrics.sent().to_string()),
        ("zk_num_alive_connections", server.conns.count().to_string()),
        (
            "zk_outstanding_requests",
            server.writes.outstanding().to_string(),
        ),
        ("zk_znode_count", nodes.to_string()),
        ("zk_watch_count", watches.watches.to_string()),
        (
            "zk_connections_closed_backlog",
            server.metrics.closed_over_backlog_count().to_string(),
        ),
        ("zk_ephemerals_count", ephemerals.to_string()),
        ("zk_approximate_data_size", data_size.to_string()),
        ("zk_last_zxid", format!("{zxid:#x}")),
        // The tree's digest at zk_last_zxid: equal on replicas at the same zxid.
        ("zk_tree_digest", format!("{digest:016x}")),
        ("zk_raft_term", server.health.status.term().to_string()),
        (
            "zk_uptime",
            server.started.elapsed().as_millis().to_string(),
        ),
    ];
    {
        let log = server.log_stats.snapshot();
        let ms = |d: std::time::Duration| format!("{:.3}", d.as_secs_f64() * 1000.0);
        rows.push(("zk_fsync_count", log.fsyncs.to_string()));
        rows.push(("zk_fsync_avg_ms", ms(log.avg_fsync())));
        rows.push(("zk_fsync_max_ms", ms(log.fsync_max)));
        rows.push(("zk_log_batches", log.batches.to_string()));
        rows.push((
            "zk_log_batch_avg_entries",
            format!("{:.1}", log.avg_batch_entries()),
        ));
        rows.push((
            "zk_log_batch_max_entries",
            log.max_batch_entries.to_string(),
        ));
        rows.push(("zk_log_bytes_written", log.bytes_written.to_string()));
        rows.push(("zk_log_size_bytes", log.size_on_disk.to_string()));
        rows.push((
            "zk_snapshot_size_bytes",
            server.snapshot_bytes().to_string(),
        ));
    }
    if server.health.status.is_leader() && !server.settings.standalone {
        let (followers, synced) = server.health.status.followers();
        rows.push(("zk_followers", followers.to_string()));
        rows.push(("zk_synced_followers", synced.to_string()));
    }
    rows.into_iter()
        .map(|(k, v)| format!("{k}\t{v}\n"))
        .collect()
}

/// ZooKeeper's `conf`: `ZooKeeperServer.dumpConf`, and in an ensemble
/// `QuorumZooKeeperServer.dumpConf` after it. The keys and their order are ZooKeeper's,
/// since scripts parse them; a standalone server reports id 0, as ZooKeeper does.
fn conf(server: &Server) -> String {
    let s = &server.settings;
    let mut out = String::new();
    let data_size = dir_size(&s.data_dir);
    let log_size = dir_size(&s.data_log_dir);
    let server_id = if s.standalone { 0 } else { s.server_id };
    let _ = write!(
        out,
        "clientPort={}\nsecureClientPort={}\ndataDir={}\ndataDirSize={data_size}\n\
         dataLogDir={}\ndataLogSize={log_size}\ntickTime={}\nmaxClientCnxns={}\n\
         minSessionTimeout={}\nmaxSessionTimeout={}\nclientPortListenBacklog=-1\n\
         serverId={server_id}\n",
        s.client_addr.map_or(-1, |a| i32::from(a.port())),
        s.secure_client_addr.map_or(-1, |a| i32::from(a.port())),
        s.data_dir.display(),
        s.data_log_dir.display(),
        s.tick.as_millis(),
        s.max_client_cnxns,
        s.min_session_timeout.as_millis(),
        s.max_session_timeout.as_millis(),
    );
    if let Some(ensemble) = &s.ensemble {
        let me = ensemble.servers.get(&s.server_id);
        let _ = write!(
            out,
            "initLimit={}\nsyncLimit={}\nelectionAlg=3\nelectionPort={}\nquorumPort={}\n\
             peerType={}\nmembership: \n{}",
            ensemble.init_limit,
            ensemble.sync_limit,
            me.map_or(0, |me| me.election_port),
            me.map_or(0, |me| me.peer_port),
            // LearnerType's ordinal: PARTICIPANT, OBSERVER.
            match me.map(|me| me.role) {
                Some(PeerType::Observer) => 1,
                _ => 0,
            },
            ensemble.membership(),
        );
    }
    out
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

/// ZooKeeper's `dirs`.
fn dirs(server: &Server) -> String {
    format!(
        "datadir_size: {}\nlogdir_size: {}\n",
        dir_size(&server.settings.data_dir),
        dir_size(&server.settings.data_log_dir)
    )
}

/// ZooKeeper's `hash`: the tree's digest at every 128th zxid, the digest as Java
/// prints a long.
fn hash(server: &Server) -> String {
    server
        .metrics
        .digest_log()
        .into_iter()
        .map(|(zxid, digest)| format!("{zxid:x}: {}\n", digest as i64))
        .collect()
}

fn envi() -> String {
    format!(
        "Environment:\nzookeeper.version={VERSION}\nhost.name={}\nos.name={}\nos.arch={}\nuser.dir={}\n",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into()),
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
    )
}

/// ZooKeeper's data-watch table with each connection's session id.
fn watch_table(server: &Server) -> Vec<(String, Vec<i64>)> {
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

/// `wchs`: ZooKeeper's summary of its data-watch table.
fn wchs(server: &Server) -> String {
    let table = watch_table(server);
    let connections: HashSet<i64> = table
        .iter()
        .flat_map(|(_, ids)| ids.iter().copied())
        .collect();
    let watches: usize = table.iter().map(|(_, ids)| ids.len()).sum();
    format!(
        "{} connections watching {} paths\nTotal watches:{watches}\n",
        connections.len(),
        table.len()
    )
}

/// `wchp`: each watched path, then a tab-indented line per session watching it.
fn wchp(server: &Server) -> String {
    let mut out = String::new();
    for (path, ids) in watch_table(server) {
        let _ = writeln!(out, "{path}");
        for id in ids {
            let _ = writeln!(out, "\t{id:#x}");
        }
    }
    out.push('\n');
    out
}

/// `wchc`: each watching session, then a tab-indented line per path it watches.
fn wchc(server: &Server) -> String {
    let mut by_session: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (path, ids) in watch_table(server) {
        for id in ids {
            by_session.entry(id).or_default().push(path.clone());
        }
    }
    let mut out = String::new();
    for (id, paths) in by_session {
        let _ = writeln!(out, "{id:#x}");
        for path in paths {
            let _ = writeln!(out, "\t{path}");
        }
    }
    out.push('\n');
    out
}

fn dump(server: &Server) -> String {
    let db = server.replicated.db.read();
    let mut out = format!(
        "SessionTracker dump:\nSession Sets ({}):\n",
        db.sessions.len()
    );
    let mut sessions: Vec<_> = db.sessions.iter().collect();
    sessions.sort_by_key(|s| s.id);
    for session in &sessions {
        let _ = writeln!(out, "\t{:#x} (timeout {} ms)", session.id, session.timeout);
    }
    out.push_str("ephemeral nodes dump:\n");
    let with_ephemerals: Vec<_> = sessions
        .iter()
        .map(|s| (s.id, db.tree.get_ephemerals(s.id, "/")))
        .filter(|(_, paths)| !paths.is_empty())
        .collect();
    let _ = writeln!(out, "Sessions with Ephemerals ({}):", with_ephemerals.len());
    for (id, paths) in with_ephemerals {
        let _ = writeln!(out, "{id:#x}:");
        for path in paths {
            let _ = writeln!(out, "\t{path}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_commands() {
        assert_eq!(parse(b"ruok"), Some("ruok"));
        assert_eq!(parse(&[0, 0, 0, 45]), None);
    }
}

//! ZooKeeper's four-letter words, answered on the client port: a connection whose first
//! four bytes spell one gets a plain-text answer and is closed. Output formats and key
//! names follow ZooKeeper's, since monitoring tools parse them.

use std::fmt::Write;

use crate::consensus::Role;
use crate::server::Shared;

/// The version clients see (kazoo and Curator parse the leading digits of `envi`'s
/// `zookeeper.version=`): the ZooKeeper protocol level Paddock speaks, then its own.
pub const VERSION: &str = concat!(
    "3.8.0-paddock-",
    env!("CARGO_PKG_VERSION"),
    ", built on paddock"
);

const COMMANDS: [&str; 12] = [
    "ruok", "srvr", "stat", "mntr", "conf", "cons", "envi", "wchs", "isro", "dump", "srst", "crst",
];

/// The command spelled by a connection's first four bytes, if any.
pub fn parse(prefix: &[u8; 4]) -> Option<&'static str> {
    COMMANDS.iter().copied().find(|c| c.as_bytes() == prefix)
}

pub fn run(command: &str, shared: &Shared) -> String {
    if !shared.settings.four_letter_words.is_enabled(command) {
        return format!("{command} is not executed because it is not in the whitelist.\n");
    }
    match command {
        "ruok" => "imok".to_string(),
        "srvr" => srvr(shared, false),
        "stat" => srvr(shared, true),
        "mntr" => mntr(shared),
        "conf" => conf(shared),
        "cons" => cons(shared),
        "envi" => envi(),
        "wchs" => wchs(shared),
        "isro" => "rw".to_string(),
        "dump" => dump(shared),
        "srst" => {
            shared.metrics.reset();
            "Server stats reset.\n".to_string()
        }
        "crst" => "Connection stats reset.\n".to_string(),
        _ => String::new(),
    }
}

fn mode(shared: &Shared) -> &'static str {
    if shared.settings.standalone {
        return "standalone";
    }
    match shared.status.role() {
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
fn serving(shared: &Shared) -> bool {
    shared.is_serving()
}

fn srvr(shared: &Shared, with_clients: bool) -> String {
    if !serving(shared) {
        return NOT_SERVING.to_string();
    }
    let (min, avg, max) = shared.metrics.latency();
    let (zxid, nodes) = {
        let db = shared.db.read();
        (db.last_zxid, db.tree.node_count())
    };
    let mut out = format!("Zookeeper version: {VERSION}\n");
    if with_clients {
        out.push_str("Clients:\n");
        out.push_str(&cons(shared));
        out.push('\n');
    }
    let _ = write!(
        out,
        "Latency min/avg/max: {min}/{avg:.4}/{max}\nReceived: {}\nSent: {}\nConnections: {}\nOutstanding: {}\nZxid: {zxid:#x}\nMode: {}\nNode count: {nodes}\n",
        shared.metrics.received(),
        shared.metrics.sent(),
        shared.conns.count(),
        shared.waits.len(),
        mode(shared),
    );
    out
}

fn mntr(shared: &Shared) -> String {
    let (min, avg, max) = shared.metrics.latency();
    let (nodes, ephemerals, data_size, zxid, digest) = {
        let db = shared.db.read();
        (
            db.tree.node_count(),
            db.tree.ephemeral_count(),
            db.tree.approximate_data_size(),
            db.last_zxid,
            db.tree.digest(),
        )
    };
    let watches = shared.watches.lock().summary();
    let mut rows: Vec<(&str, String)> = vec![
        ("zk_version", VERSION.to_string()),
        ("zk_server_state", mode(shared).to_string()),
        ("zk_avg_latency", format!("{avg:.4}")),
        ("zk_max_latency", max.to_string()),
        ("zk_min_latency", min.to_string()),
        ("zk_packets_received", shared.metrics.received().to_string()),
        ("zk_packets_sent", shared.metrics.sent().to_string()),
        ("zk_num_alive_connections", shared.conns.count().to_string()),
        ("zk_outstanding_requests", shared.waits.len().to_string()),
        ("zk_znode_count", nodes.to_string()),
        ("zk_watch_count", watches.watches.to_string()),
        (
            "zk_connections_closed_backlog",
            shared.metrics.closed_over_backlog_count().to_string(),
        ),
        ("zk_ephemerals_count", ephemerals.to_string()),
        ("zk_approximate_data_size", data_size.to_string()),
        ("zk_last_zxid", format!("{zxid:#x}")),
        // The tree's digest at zk_last_zxid: equal on replicas at the same zxid.
        ("zk_tree_digest", format!("{digest:016x}")),
        ("zk_raft_term", shared.status.term().to_string()),
        (
            "zk_uptime",
            shared.started.elapsed().as_millis().to_string(),
        ),
    ];
    if let Some(stats) = shared.log_stats.lock().as_ref() {
        let log = stats.snapshot();
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
            shared.snapshot_bytes().to_string(),
        ));
    }
    if shared.status.is_leader() && !shared.settings.standalone {
        let (followers, synced) = shared.status.followers();
        rows.push(("zk_followers", followers.to_string()));
        rows.push(("zk_synced_followers", synced.to_string()));
    }
    rows.into_iter()
        .map(|(k, v)| format!("{k}\t{v}\n"))
        .collect()
}

fn conf(shared: &Shared) -> String {
    let s = &shared.settings;
    format!(
        "clientPort={}\nclientPortAddress={}\nserverId={}\ntickTime={}\nmaxClientCnxns={}\nminSessionTimeout={}\nmaxSessionTimeout={}\nglobalOutstandingLimit={}\njute.maxbuffer={}\n",
        s.client_addr.port(),
        s.client_addr.ip(),
        s.server_id,
        s.tick.as_millis(),
        s.max_client_cnxns,
        s.min_session_timeout.as_millis(),
        s.max_session_timeout.as_millis(),
        s.global_outstanding_limit,
        s.jute_max_buffer,
    )
}

fn cons(shared: &Shared) -> String {
    shared
        .conns
        .sessions()
        .into_iter()
        .map(|(conn, session)| format!(" conn={conn}(sid={session:#x})\n"))
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

fn wchs(shared: &Shared) -> String {
    let summary = shared.watches.lock().summary();
    format!(
        "{} connections watching {} paths\nTotal watches:{}\n",
        summary.connections, summary.paths, summary.watches
    )
}

fn dump(shared: &Shared) -> String {
    let db = shared.db.read();
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

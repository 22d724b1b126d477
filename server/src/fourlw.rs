//! ZooKeeper's four-letter words, answered on the client port: a connection whose first
//! four bytes spell one gets a plain-text answer and is closed. Output formats and key
//! names follow ZooKeeper's, since monitoring tools parse them.

use std::fmt::Write;

use crate::report::{self, NOT_SERVING, VERSION};
use crate::server::Server;

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
        _ => not_serving(),
    }
}

/// A server out of touch with a quorum (electing, or cut off) serves no clients.
fn serving(server: &Server) -> bool {
    server.health.is_serving()
}

fn not_serving() -> String {
    format!("{NOT_SERVING}\n")
}

fn srvr(server: &Server, with_clients: bool) -> String {
    if !serving(server) {
        return not_serving();
    }
    let stats = report::server_stats(server);
    let mut out = format!("Zookeeper version: {VERSION}\n");
    if with_clients {
        out.push_str("Clients:\n");
        out.push_str(&server.metrics.connections.dump(true));
        out.push('\n');
    }
    let _ = write!(
        out,
        "Latency min/avg/max: {}/{:.4}/{}\nReceived: {}\nSent: {}\nConnections: {}\n\
         Outstanding: {}\nZxid: {:#x}\nMode: {}\nNode count: {}\n",
        stats.latency_min,
        stats.latency_avg,
        stats.latency_max,
        stats.received,
        stats.sent,
        stats.connections,
        stats.outstanding,
        stats.last_zxid,
        stats.mode,
        stats.node_count,
    );
    out
}

fn mntr(server: &Server) -> String {
    report::monitor(server)
        .into_iter()
        .map(|(k, v)| format!("zk_{k}\t{v}\n"))
        .collect()
}

/// ZooKeeper's `conf`. The keys and their order are ZooKeeper's, since scripts parse
/// them.
fn conf(server: &Server) -> String {
    let c = report::conf(server);
    let mut out = String::new();
    let _ = write!(
        out,
        "clientPort={}\nsecureClientPort={}\ndataDir={}\ndataDirSize={}\n\
         dataLogDir={}\ndataLogSize={}\ntickTime={}\nmaxClientCnxns={}\n\
         minSessionTimeout={}\nmaxSessionTimeout={}\nclientPortListenBacklog=-1\n\
         serverId={}\n",
        c.client_port,
        c.secure_client_port,
        c.data_dir,
        c.data_dir_size,
        c.data_log_dir,
        c.data_log_size,
        c.tick_time_ms,
        c.max_client_cnxns,
        c.min_session_timeout_ms,
        c.max_session_timeout_ms,
        c.server_id,
    );
    if let Some(q) = &c.quorum {
        let _ = write!(
            out,
            "initLimit={}\nsyncLimit={}\nelectionAlg=3\nelectionPort={}\nquorumPort={}\n\
             peerType={}\nmembership: \n{}",
            q.init_limit, q.sync_limit, q.election_port, q.quorum_port, q.peer_type, q.membership,
        );
    }
    out
}

/// ZooKeeper's `dirs`.
fn dirs(server: &Server) -> String {
    let (data, log) = report::dirs(server);
    format!("datadir_size: {data}\nlogdir_size: {log}\n")
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
    let mut out = String::from("Environment:\n");
    for (key, value) in report::environment() {
        let _ = writeln!(out, "{key}={value}");
    }
    out
}

/// `wchs`: ZooKeeper's summary of its data-watch table.
fn wchs(server: &Server) -> String {
    let (connections, paths, watches) = report::watch_summary(&report::watch_table(server));
    format!("{connections} connections watching {paths} paths\nTotal watches:{watches}\n")
}

/// `wchp`: each watched path, then a tab-indented line per session watching it.
fn wchp(server: &Server) -> String {
    let mut out = String::new();
    for (path, ids) in report::watch_table(server) {
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
    let mut out = String::new();
    for (id, paths) in report::watches_by_session(report::watch_table(server)) {
        let _ = writeln!(out, "{id:#x}");
        for path in paths {
            let _ = writeln!(out, "\t{path}");
        }
    }
    out.push('\n');
    out
}

fn dump(server: &Server) -> String {
    let dump = report::dump(server);
    let mut out = format!(
        "SessionTracker dump:\nSession Sets ({}):\n",
        dump.sessions.len()
    );
    for (id, timeout) in &dump.sessions {
        let _ = writeln!(out, "\t{id:#x} (timeout {timeout} ms)");
    }
    out.push_str("ephemeral nodes dump:\n");
    let _ = writeln!(out, "Sessions with Ephemerals ({}):", dump.ephemerals.len());
    for (id, paths) in dump.ephemerals {
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

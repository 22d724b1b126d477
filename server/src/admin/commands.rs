//! `GET /commands/<name>`: ZooKeeper 3.8's AdminServer commands, as JSON objects with
//! its keys (`Commands.java`): every answer carries `command` (the command's primary
//! name) and `error` (null, or why it could not run). A command that needs a running
//! server answers with an error while this server is out of touch with a quorum, and
//! an unknown command with "Unknown command: NAME", both with status 200, as in 3.8.
//! The values come from `report`, which the four-letter words render as text.

use serde_json::{json, Map, Value};

use crate::conn_stats::ConnInfo;
use crate::report::{self, NOT_SERVING};
use crate::server::Server;

/// One command: its names (the primary one first), whether it needs a running
/// server, and what it adds to the answer.
struct Command {
    names: &'static [&'static str],
    needs_server: bool,
    run: fn(&Server) -> Map<String, Value>,
}

const COMMANDS: &[Command] = &[
    Command {
        names: &["configuration", "conf", "config"],
        needs_server: true,
        run: configuration,
    },
    Command {
        names: &["connection_stat_reset", "crst"],
        needs_server: true,
        run: |server| {
            server.metrics.connections.reset_all();
            Map::new()
        },
    },
    Command {
        names: &["connections", "cons"],
        needs_server: true,
        run: |server| connections(server, false),
    },
    Command {
        names: &["dirs"],
        needs_server: true,
        run: |server| {
            let (data, log) = report::dirs(server);
            object(json!({ "datadir_size": data, "logdir_size": log }))
        },
    },
    Command {
        names: &["dump"],
        needs_server: true,
        run: dump,
    },
    Command {
        names: &["environment", "env", "envi"],
        needs_server: false,
        run: |_| {
            report::environment()
                .into_iter()
                .map(|(key, value)| (key.to_owned(), Value::from(value)))
                .collect()
        },
    },
    Command {
        names: &["hash"],
        needs_server: true,
        run: |server| {
            let digests: Vec<Value> = server
                .metrics
                .digest_log()
                .into_iter()
                .map(|(zxid, digest)| json!({ "zxid": zxid, "digest": digest as i64 }))
                .collect();
            object(json!({ "digests": digests }))
        },
    },
    Command {
        names: &["is_read_only", "isro"],
        needs_server: true,
        run: |_| object(json!({ "read_only": false })),
    },
    Command {
        names: &["leader", "lead"],
        needs_server: true,
        run: leader,
    },
    Command {
        names: &["monitor", "mntr"],
        needs_server: false,
        run: |server| {
            report::monitor(server)
                .into_iter()
                .map(|(key, value)| (key.to_owned(), monitor_value(value)))
                .collect()
        },
    },
    Command {
        names: &["ruok"],
        needs_server: true,
        run: |_| Map::new(),
    },
    Command {
        names: &["server_stats", "srvr"],
        needs_server: true,
        run: server_stats,
    },
    Command {
        names: &["stat_reset", "srst"],
        needs_server: true,
        run: |server| {
            server.metrics.reset();
            Map::new()
        },
    },
    Command {
        names: &["stats", "stat"],
        needs_server: true,
        run: |server| {
            let mut out = server_stats(server);
            out.extend(connections(server, true));
            out
        },
    },
    Command {
        names: &["watch_summary", "wchs"],
        needs_server: true,
        run: |server| {
            let (connections, paths, watches) = report::watch_summary(&report::watch_table(server));
            object(json!({
                "num_connections": connections,
                "num_paths": paths,
                "num_total_watches": watches,
            }))
        },
    },
    Command {
        names: &["watches", "wchc"],
        needs_server: true,
        run: |server| {
            let by_session: Map<String, Value> =
                report::watches_by_session(report::watch_table(server))
                    .into_iter()
                    .map(|(id, paths)| (id.to_string(), Value::from(paths)))
                    .collect();
            object(json!({ "session_id_to_watched_paths": by_session }))
        },
    },
    Command {
        names: &["watches_by_path", "wchp"],
        needs_server: true,
        run: |server| {
            let by_path: Map<String, Value> = report::watch_table(server)
                .into_iter()
                .map(|(path, ids)| (path, Value::from(ids)))
                .collect();
            object(json!({ "path_to_session_ids": by_path }))
        },
    },
];

/// The primary names, sorted, for the index page.
pub fn primary_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = COMMANDS.iter().map(|c| c.names[0]).collect();
    names.sort_unstable();
    names
}

/// Runs the command called `name` (any of its names).
pub fn run(name: &str, server: &Server) -> Value {
    let Some(command) = COMMANDS.iter().find(|c| c.names.contains(&name)) else {
        return json!({ "command": name, "error": format!("Unknown command: {name}") });
    };
    let primary = command.names[0];
    if command.needs_server && !server.health.is_serving() {
        return json!({ "command": primary, "error": NOT_SERVING });
    }
    let mut out = (command.run)(server);
    out.entry("command").or_insert_with(|| primary.into());
    out.entry("error").or_insert(Value::Null);
    Value::Object(out)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn monitor_value(value: report::Value) -> Value {
    match value {
        report::Value::Count(n) => n.into(),
        report::Value::Decimal(x, _) => x.into(),
        report::Value::Text(s) => s.into(),
    }
}

/// `ZooKeeperServerConf.toMap`.
fn configuration(server: &Server) -> Map<String, Value> {
    let c = report::conf(server);
    object(json!({
        "client_port": c.client_port,
        "data_dir": c.data_dir,
        "data_log_dir": c.data_log_dir,
        "tick_time": c.tick_time_ms as u64,
        "max_client_cnxns": c.max_client_cnxns,
        "min_session_timeout": c.min_session_timeout_ms as u64,
        "max_session_timeout": c.max_session_timeout_ms as u64,
        "server_id": c.server_id,
        "client_port_listen_backlog": -1,
    }))
}

/// `ServerCnxn.getConnectionInfo`; `brief` as `stat` lists connections.
fn connection(info: ConnInfo, brief: bool) -> Value {
    let mut out = object(json!({
        "remote_socket_address": info.peer.to_string(),
        "interest_ops": info.interest_ops,
        "outstanding_requests": info.queued,
        "packets_received": info.received,
        "packets_sent": info.sent,
    }));
    if let Some(s) = info.session.filter(|_| !brief) {
        out.extend(object(json!({
            "session_id": s.session_id,
            "last_operation": s.last_op,
            "established": s.established,
            "session_timeout": s.timeout,
            "last_cxid": s.last_cxid,
            "last_zxid": s.last_zxid,
            "last_response_time": s.last_response,
            "last_latency": s.last_latency,
            "min_latency": s.min_latency,
            "avg_latency": s.avg_latency,
            "max_latency": s.max_latency,
        })));
    }
    Value::Object(out)
}

fn connections(server: &Server, brief: bool) -> Map<String, Value> {
    let list: Vec<Value> = server
        .metrics
        .connections
        .infos()
        .into_iter()
        .map(|info| connection(info, brief))
        .collect();
    object(json!({ "connections": list, "secure_connections": [] }))
}

fn server_stats(server: &Server) -> Map<String, Value> {
    let stats = report::server_stats(server);
    let (data, log) = report::dirs(server);
    object(json!({
        "version": report::VERSION,
        "read_only": false,
        "server_stats": {
            "packets_sent": stats.sent,
            "packets_received": stats.received,
            "data_dir_size": data,
            "log_dir_size": log,
            "server_state": stats.mode,
            "last_processed_zxid": stats.last_zxid,
            "outstanding_requests": stats.outstanding,
            "avg_latency": stats.latency_avg,
            "max_latency": stats.latency_max,
            "min_latency": stats.latency_min,
            "num_alive_client_connections": stats.connections,
            "uptime": stats.uptime_ms,
        },
        "node_count": stats.node_count,
    }))
}

/// ZooKeeper's `dump`: the ephemeral nodes by session. Paddock's leader keeps the
/// expiry deadlines in its liveness task, not here, so `expiry_time_to_session_ids`
/// is replaced by each session's negotiated timeout.
fn dump(server: &Server) -> Map<String, Value> {
    let dump = report::dump(server);
    let timeouts: Map<String, Value> = dump
        .sessions
        .into_iter()
        .map(|(id, timeout)| (id.to_string(), timeout.into()))
        .collect();
    let ephemerals: Map<String, Value> = dump
        .ephemerals
        .into_iter()
        .map(|(id, paths)| (id.to_string(), paths.into()))
        .collect();
    object(json!({
        "session_id_to_timeout": timeouts,
        "session_id_to_ephemeral_paths": ephemerals,
    }))
}

/// `leader`: standalone, ZooKeeper's "server is not initialized".
fn leader(server: &Server) -> Map<String, Value> {
    let Some(ensemble) = &server.settings.ensemble else {
        return object(json!({ "error": "server is not initialized" }));
    };
    let leader = server.health.status.leader();
    let (id, ip) = match ensemble.servers.get(&leader) {
        Some(server) => (i64::try_from(leader).unwrap_or(-1), server.host.clone()),
        // No leader known: ZooKeeper's -1.
        None => (-1, String::new()),
    };
    object(json!({
        "is_leader": server.health.is_leader(),
        "leader_id": id,
        "leader_ip": ip,
    }))
}

//! The admin HTTP listener: ZooKeeper's AdminServer commands compared with Apache
//! ZooKeeper 3.8's own, `/metrics`, and the health checks as a quorum comes and goes.

use std::net::SocketAddr;
use std::time::Duration;

use paddock_wire::{Acl, CreateRequest, Data, Request, WatchedPathRequest};
use serde_json::Value;

use crate::support::{free_port, free_ports, http_get, paddock, wait_until, zookeeper_with_admin};
use crate::support::{Ensemble, RawClient, Server};

/// `GET /commands/<name>` as JSON.
fn command(admin: SocketAddr, name: &str) -> Value {
    let (status, body) = http_get(admin, &format!("/commands/{name}"))
        .unwrap_or_else(|| panic!("no answer to /commands/{name} on {admin}"));
    assert_eq!(status, 200, "/commands/{name}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("/commands/{name}: {e}: {body}"))
}

/// What ZooKeeper's answers hold that Paddock's leave out: counters of features
/// Paddock lacks (TLS, SASL, response-size tracking), and the leader's session expiry
/// deadlines, which live in its liveness task (`dump` lists the timeouts instead).
const NOT_IN_PADDOCK: &[&str] = &[
    "fsync_threshold_exceed_count",
    "client_response_stats",
    "client_response",
    "provider_null",
    "auth_failed_count",
    "non_mtlsremote_conn_count",
    "non_mtlslocal_conn_count",
    "expiry_time_to_session_ids",
];

/// Objects whose keys are session ids or paths.
const KEYED_BY_DATA: &[&str] = &[
    "session_id_to_watched_paths",
    "path_to_session_ids",
    "session_id_to_ephemeral_paths",
];

fn first_value(map: &Value) -> Option<&Value> {
    map.as_object().and_then(|m| m.values().next())
}

/// Every key of `theirs` (in nested objects, and in the first element of arrays) that
/// `ours` lacks or holds with another JSON type, as "path: what".
fn missing_keys(ours: &Value, theirs: &Value, at: &str, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(ours), Value::Object(theirs)) => {
            for (key, their_value) in theirs {
                if NOT_IN_PADDOCK.contains(&key.as_str()) {
                    continue;
                }
                let at = format!("{at}.{key}");
                match ours.get(key) {
                    None => out.push(format!("{at}: missing")),
                    // Keyed by session id or path, which differ between the servers:
                    // compare what one entry holds.
                    Some(our_value) if KEYED_BY_DATA.contains(&key.as_str()) => {
                        if let (Some(a), Some(b)) =
                            (first_value(our_value), first_value(their_value))
                        {
                            missing_keys(a, b, &format!("{at}.*"), out);
                        }
                    }
                    Some(our_value) => missing_keys(our_value, their_value, &at, out),
                }
            }
        }
        (Value::Array(ours), Value::Array(theirs)) => {
            if let (Some(a), Some(b)) = (ours.first(), theirs.first()) {
                missing_keys(a, b, &format!("{at}[0]"), out);
            }
        }
        // Both null (an error that is none) or both of one kind.
        (a, b) if std::mem::discriminant(a) == std::mem::discriminant(b) => {}
        (Value::Number(_), Value::Number(_)) => {}
        (a, b) => out.push(format!("{at}: {a} where ZooKeeper has {b}")),
    }
}

/// The same state on either server: a session with an ephemeral node, a data watch on
/// it and an exist watch on a missing node.
fn watched(server: &Server) -> RawClient {
    let mut client = RawClient::connect(server.addr);
    client.call(
        1,
        &Request::Create(CreateRequest {
            path: "/e".into(),
            data: Data::from(&b"x"[..]),
            acl: Acl::open_unsafe(),
            flags: 1,
        }),
    );
    let watch = |path: &str| WatchedPathRequest {
        path: path.into(),
        watch: true,
    };
    client.call(2, &Request::GetData(watch("/e")));
    client.call(3, &Request::Exists(watch("/missing")));
    client
}

#[test]
fn admin_commands_answer_as_zookeepers_admin_server() {
    let ports = free_ports(3);
    let ours = paddock(&format!(
        "admin.serverAddress=127.0.0.1\nadmin.serverPort={}\n\
         metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\n\
         metricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort={}",
        ports[0], ports[1]
    ));
    let theirs = zookeeper_with_admin(ports[2]);
    let (our_admin, their_admin): (SocketAddr, SocketAddr) = (
        ([127, 0, 0, 1], ports[0]).into(),
        ([127, 0, 0, 1], ports[2]).into(),
    );
    // ZooKeeper's Jetty starts after its client port.
    wait_until(
        Duration::from_secs(30),
        "ZooKeeper's AdminServer answering",
        || http_get(their_admin, "/commands/ruok").is_some(),
    );
    let _clients = (watched(&ours), watched(&theirs));

    let names = [
        "ruok",
        "srvr",
        "server_stats",
        "stat",
        "conf",
        "configuration",
        "cons",
        "wchs",
        "wchc",
        "wchp",
        "isro",
        "leader",
        "dump",
        "dirs",
        "nosuchcommand",
    ];
    for name in names {
        let (a, b) = (command(our_admin, name), command(their_admin, name));
        for key in ["command", "error"] {
            assert_eq!(a[key], b[key], "{name}: {key} differs:\n{a:#}\n---\n{b:#}");
        }
        let mut missing = Vec::new();
        missing_keys(&a, &b, name, &mut missing);
        assert!(missing.is_empty(), "{name}: {missing:?}\n{a:#}\n---\n{b:#}");
    }
    // Values that must agree, not only keys.
    for (name, pointer) in [
        ("srvr", "/server_stats/server_state"),
        ("isro", "/read_only"),
        ("wchs", "/num_connections"),
        ("wchs", "/num_paths"),
        ("wchs", "/num_total_watches"),
        ("mntr", "/server_state"),
        ("mntr", "/ephemerals_count"),
        ("mntr", "/watch_count"),
        ("mntr", "/global_sessions"),
        ("mntr", "/num_alive_connections"),
    ] {
        let (a, b) = (command(our_admin, name), command(their_admin, name));
        assert_eq!(a.pointer(pointer), b.pointer(pointer), "{name} {pointer}");
        assert!(a.pointer(pointer).is_some(), "{name} {pointer}");
    }
    let paths = |v: Value| -> Vec<String> {
        let mut keys: Vec<String> = v["path_to_session_ids"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    };
    assert_eq!(paths(command(our_admin, "wchp")), ["/e", "/missing"]);
    assert_eq!(
        paths(command(our_admin, "wchp")),
        paths(command(their_admin, "wchp"))
    );
    let ephemerals = command(our_admin, "dump");
    let ephemerals = ephemerals["session_id_to_ephemeral_paths"]
        .as_object()
        .expect("ephemerals by session");
    assert_eq!(
        ephemerals.values().collect::<Vec<_>>(),
        [&Value::from(vec!["/e"])]
    );
    assert!(command(our_admin, "envi")["zookeeper.version"]
        .as_str()
        .is_some_and(|v| v.starts_with("3.8.0-paddock")));

    // The index lists the commands with links ZooKeeper's way.
    let (status, index) = http_get(our_admin, "/commands").expect("index");
    assert_eq!(status, 200);
    assert!(
        index.contains("<a href=\"/commands/monitor\">monitor</a>"),
        "{index}"
    );

    // Metrics: on the admin port and on the Prometheus provider's.
    for addr in [our_admin, ([127, 0, 0, 1], ports[1]).into()] {
        let (status, text) = http_get(addr, "/metrics").expect("/metrics");
        assert_eq!(status, 200);
        for series in [
            "znode_count 5",
            "ephemerals_count 1",
            "watch_count 2",
            "num_alive_connections 1",
            "paddock_request_latency_ms_count{op=\"create\"} 1",
            "paddock_request_latency_ms_count{op=\"getData\"} 1",
            "updatelatency_count 1",
            "readlatency_count 2",
            "fsynctime_count ",
            "sync_processor_batch_size_bucket{le=\"1.0\"} ",
            "election_time_count 1",
            "quorum_ack_latency_count ",
            "looking_count_total 1",
            "bytes_received_count_total ",
            "response_bytes_total ",
            "process_resident_memory_bytes ",
            "process_open_fds ",
            "process_cpu_seconds_total ",
            "paddock_ready 1",
        ] {
            assert!(
                text.contains(series),
                "{series} missing from /metrics:\n{text}"
            );
        }
        // The leader (a standalone server is one) timed its proposals' commits.
        let quorum_acks = text
            .lines()
            .find_map(|line| line.strip_prefix("quorum_ack_latency_count "))
            .and_then(|count| count.trim().parse::<u64>().ok());
        assert!(quorum_acks.is_some_and(|n| n > 0), "{quorum_acks:?}");
    }
    // The metrics port serves metrics alone.
    assert_eq!(
        http_get(([127, 0, 0, 1], ports[1]).into(), "/commands/ruok").map(|(s, _)| s),
        Some(404)
    );
    assert_eq!(
        http_get(our_admin, "/health/live").map(|(s, _)| s),
        Some(200)
    );
    assert_eq!(
        http_get(our_admin, "/health/ready").map(|(s, _)| s),
        Some(200)
    );
}

#[test]
fn a_configured_admin_port_in_use_stops_the_server_with_a_reason() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let mut server = crate::support::paddock_starting(
        free_port(),
        &format!("admin.serverAddress=127.0.0.1\nadmin.serverPort={port}"),
        None,
    );
    let status = server.wait_exit(Duration::from_secs(30));
    assert!(status.is_some_and(|s| !s.success()), "{status:?}");
    let log = server.log_text();
    assert!(
        log.contains(&format!(
            "cannot listen on 127.0.0.1:{port} (admin.serverPort)"
        )),
        "{log}"
    );
}

fn status(admin: SocketAddr, path: &str) -> Option<u16> {
    http_get(admin, path).map(|(status, _)| status)
}

#[test]
fn readiness_follows_the_quorum() {
    let admin_ports = free_ports(3);
    let mut ensemble = Ensemble::start_each(3, 0, |i| {
        format!(
            "admin.serverAddress=127.0.0.1\nadmin.serverPort={}",
            admin_ports[i]
        )
    });
    let admin: Vec<SocketAddr> = admin_ports
        .iter()
        .map(|port| ([127, 0, 0, 1], *port).into())
        .collect();
    let limit = Duration::from_secs(60);
    for addr in &admin {
        wait_until(limit, "every server ready", || {
            status(*addr, "/health/ready") == Some(200)
        });
    }
    let leader = ensemble.wait_for_leader(limit);
    let answers: Vec<Value> = admin.iter().map(|a| command(*a, "leader")).collect();
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer["is_leader"], Value::from(i == leader), "{answer}");
        assert_eq!(
            answer["leader_id"],
            Value::from(leader as u64 + 1),
            "{answer}"
        );
        assert_eq!(answer["leader_ip"], "127.0.0.1", "{answer}");
    }
    wait_until(limit, "the leader's followers synced", || {
        http_get(admin[leader], "/metrics")
            .is_some_and(|(_, text)| text.contains("\nsynced_followers 2\n"))
    });
    let (_, text) = http_get(admin[leader], "/metrics").expect("/metrics");
    assert!(text.contains("\nquorum_size 3\n"), "{text}");
    assert!(text.contains("\npaddock_is_leader 1\n"), "{text}");

    // Alone, a server is out of touch with a quorum: not ready, still live.
    let alone = (leader + 1) % 3;
    for i in 0..3 {
        if i != alone {
            ensemble.servers[i].kill();
        }
    }
    wait_until(limit, "the lone server unready", || {
        http_get(admin[alone], "/health/ready")
            .is_some_and(|(status, body)| status == 503 && body.contains("\"in_quorum\":false"))
    });
    assert_eq!(status(admin[alone], "/health/live"), Some(200));
    assert_eq!(
        command(admin[alone], "ruok")["error"],
        "This ZooKeeper instance is not currently serving requests"
    );
    // mntr runs without a quorum, as in ZooKeeper.
    assert_eq!(command(admin[alone], "mntr")["error"], Value::Null);

    // A second server back: a quorum again, and ready.
    let back = (alone + 1) % 3;
    ensemble.servers[back].restart();
    for i in [alone, back] {
        wait_until(limit, "ready again with a quorum", || {
            status(admin[i], "/health/ready") == Some(200)
        });
    }
}

/// ZooKeeper's `admin.idleTimeout`: a connection that sends no request is closed.
#[test]
fn idle_admin_connections_are_closed_after_the_idle_timeout() {
    use std::io::Read;
    let port = free_port();
    let _server = paddock(&format!(
        "admin.serverAddress=127.0.0.1\nadmin.serverPort={port}\nadmin.idleTimeout=300"
    ));
    let mut idle = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    // The bound is for a hang; the server closes the connection long before.
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    let mut buf = [0u8; 64];
    let read = idle.read(&mut buf);
    assert!(
        matches!(read, Ok(0)),
        "expected the server to close the idle connection, got {read:?}"
    );
}

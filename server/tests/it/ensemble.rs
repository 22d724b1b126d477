//! Three real server processes replicating with raft on 127.0.0.1 (and an observer).

use std::time::{Duration, Instant};

use bytes::Bytes;
use paddock_wire::{
    Acl, ConnectRequest, CreateMode, CreateRequest, ErrorCode, EventType, Reader, Record,
    ReplyHeader, Request, WatchedPathRequest, WatcherEvent,
};

use crate::support::{
    eventually, four_letter, kazoo_hosts, mntr, read_frame, wait_until, Ensemble, RawClient, Server,
};

/// A create's result; ConnectionLoss when the server closed the connection instead of
/// answering (as it does when a write's outcome is unknown, or it left the quorum).
fn create(client: &mut RawClient, xid: i32, path: &str, mode: CreateMode) -> ErrorCode {
    let request = Request::Create(CreateRequest {
        path: path.into(),
        data: Bytes::from_static(b"v").into(),
        acl: Acl::open_unsafe(),
        flags: mode.flags(),
    });
    client
        .try_call(xid, &request)
        .map_or(ErrorCode::ConnectionLoss, |(header, _)| header.err)
}

/// Creates `path` through `addr` until it is acknowledged, opening a new session
/// whenever the server closes the connection or refuses one; panics after `limit`.
fn create_until_acknowledged(addr: std::net::SocketAddr, path: &str, limit: Duration) -> RawClient {
    let deadline = Instant::now() + limit;
    let mut xid = 1000;
    loop {
        assert!(
            Instant::now() < deadline,
            "{path} not acknowledged within {limit:?}"
        );
        let Some(mut client) = RawClient::try_connect(addr) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        loop {
            xid += 1;
            match create(&mut client, xid, path, CreateMode::Persistent) {
                ErrorCode::Ok => return client,
                ErrorCode::ConnectionLoss => break,
                code => assert!(Instant::now() < deadline, "no recovery: {code:?}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn exists(client: &mut RawClient, xid: i32, path: &str) -> bool {
    let request = Request::Exists(WatchedPathRequest {
        path: path.into(),
        watch: false,
    });
    client.call(xid, &request).0.err == ErrorCode::Ok
}

fn sync(client: &mut RawClient, xid: i32) -> ErrorCode {
    let request = Request::Sync(paddock_wire::PathRequest { path: "/".into() });
    client.call(xid, &request).0.err
}

/// Waits until every running server reports the same last zxid and tree digest; on
/// failure the panic carries every server's log.
fn assert_converges(servers: &[&Server]) {
    if let Err(views) = converges(servers) {
        let logs: Vec<String> = servers.iter().map(|s| s.log_text()).collect();
        panic!("replicas differ: {views}\n{}", logs.join("\n-----\n"));
    }
}

fn converges(servers: &[&Server]) -> Result<(), String> {
    let views = || -> Vec<(String, String)> {
        servers
            .iter()
            .map(|s| {
                let m = mntr(s);
                (
                    m.get("zk_last_zxid").cloned().unwrap_or_default(),
                    m.get("zk_tree_digest").cloned().unwrap_or_default(),
                )
            })
            .collect()
    };
    eventually(Duration::from_secs(20), || {
        let views = views();
        (views.windows(2).all(|w| w[0] == w[1]) && !views[0].1.is_empty()).then_some(())
    })
    .ok_or_else(|| format!("{:?}", views()))
}

#[test]
fn clients_on_different_servers_see_each_others_writes_and_watches() {
    let ensemble = Ensemble::start(3, 0);
    let transcript = kazoo_hosts(
        &format!(
            "{};{};{}",
            ensemble.servers[0].hosts(),
            ensemble.servers[1].hosts(),
            ensemble.servers[2].hosts()
        ),
        "cross_server",
    );
    for line in [
        "child-watch-on-2 CHILD /cross",
        "data-watch-on-3 CHANGED /cross/a",
        "read-on-3-after-sync b'2'",
        "ephemeral-seen-on-2 True",
    ] {
        assert!(
            transcript.iter().any(|l| l == line),
            "missing {line:?}: {transcript:?}"
        );
    }
    let all: Vec<&Server> = ensemble.servers.iter().collect();
    assert_converges(&all);
}

#[test]
fn a_watch_set_on_a_follower_fires_for_a_write_through_another() {
    let ensemble = Ensemble::start(3, 0);
    let mut watcher = RawClient::connect(ensemble.servers[1].addr);
    let mut writer = RawClient::connect(ensemble.servers[2].addr);
    let (header, _) = watcher.call(
        1,
        &Request::Exists(WatchedPathRequest {
            path: "/w".into(),
            watch: true,
        }),
    );
    assert_eq!(header.err, ErrorCode::NoNode);
    assert_eq!(
        create(&mut writer, 1, "/w", CreateMode::Persistent),
        ErrorCode::Ok
    );
    let frame = read_frame(&mut watcher.stream).expect("notification");
    let mut r = Reader::new(frame);
    let header = ReplyHeader::decode(&mut r).expect("header");
    assert_eq!(header.xid, -1);
    assert!(header.zxid > 0, "the notification carries the txn's zxid");
    let event = WatcherEvent::decode(&mut r).expect("event");
    assert_eq!(event.event_type, EventType::NodeCreated);
    assert_eq!(event.path, "/w");
}

#[test]
fn ephemerals_go_after_the_session_timeout_and_not_before() {
    let ensemble = Ensemble::start(3, 0);
    let follower = (ensemble.wait_for_leader(Duration::from_secs(10)) + 1) % 3;
    let (mut doomed, response) = RawClient::handshake(
        ensemble.servers[follower].addr,
        &ConnectRequest {
            timeout: 3000,
            ..RawClient::new_session()
        },
    )
    .expect("handshake");
    assert_eq!(response.timeout, 3000);
    assert_eq!(
        create(&mut doomed, 1, "/eph", CreateMode::Ephemeral),
        ErrorCode::Ok
    );
    // The client dies without closing its session.
    drop(doomed);
    let died = Instant::now();
    let mut observer = RawClient::connect(ensemble.servers[(follower + 1) % 3].addr);
    let mut xid = 0;
    loop {
        xid += 1;
        let present = exists(&mut observer, xid, "/eph");
        let elapsed = died.elapsed();
        if !present {
            assert!(
                elapsed >= Duration::from_millis(2500),
                "ephemeral removed after {elapsed:?}, before the 3 s timeout"
            );
            break;
        }
        assert!(
            elapsed < Duration::from_secs(10),
            "ephemeral still there after {elapsed:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_minority_acknowledges_no_write_and_the_majority_recovers() {
    let ensemble = Ensemble::start(3, 0);
    let mut client = RawClient::connect(ensemble.servers[0].addr);
    assert_eq!(
        create(&mut client, 1, "/before", CreateMode::Persistent),
        ErrorCode::Ok
    );
    ensemble.servers[1].signal("STOP");
    ensemble.servers[2].signal("STOP");
    // Server 0 alone can't commit: the write fails (after the proposal's timeout)
    // instead of being acknowledged.
    let during = create(&mut client, 2, "/during", CreateMode::Persistent);
    assert_ne!(
        during,
        ErrorCode::Ok,
        "a minority acknowledged a write; the servers' logs:\n{}\n---\n{}\n---\n{}",
        ensemble.servers[0].log_text(),
        ensemble.servers[1].log_text(),
        ensemble.servers[2].log_text()
    );
    ensemble.servers[1].signal("CONT");
    ensemble.servers[2].signal("CONT");
    let addr = ensemble.servers[0].addr;
    let mut client = create_until_acknowledged(addr, "/after", Duration::from_secs(20));
    assert!(exists(&mut client, 100, "/before"));
    let all: Vec<&Server> = ensemble.servers.iter().collect();
    assert_converges(&all);
}

#[test]
fn killing_the_leader_elects_another_and_loses_no_acknowledged_write() {
    let mut ensemble = Ensemble::start(3, 0);
    let leader = ensemble.wait_for_leader(Duration::from_secs(10));
    let survivor = (leader + 1) % 3;
    let mut client = RawClient::connect(ensemble.servers[survivor].addr);
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        let path = format!("/k{i}");
        if create(&mut client, i + 1, &path, CreateMode::Persistent) == ErrorCode::Ok {
            acknowledged.push(path);
        }
    }
    ensemble.servers[leader].signal("KILL");
    drop(client);
    let addr = ensemble.servers[survivor].addr;
    let mut client = create_until_acknowledged(addr, "/after-kill", Duration::from_secs(15));
    let new_leader = ensemble.wait_for_leader(Duration::from_secs(10));
    assert_ne!(new_leader, leader);
    assert_eq!(sync(&mut client, 500), ErrorCode::Ok);
    for (i, path) in acknowledged.iter().enumerate() {
        assert!(exists(&mut client, 1000 + i as i32, path), "{path} lost");
    }
    ensemble.servers.remove(leader);
    let survivors: Vec<&Server> = ensemble.servers.iter().collect();
    assert_converges(&survivors);
}

#[test]
fn an_observer_serves_and_forwards_but_does_not_vote() {
    let ensemble = Ensemble::start(3, 1);
    wait_until(
        Duration::from_secs(10),
        "server 4 is not an observer",
        || {
            mntr(&ensemble.servers[3])
                .get("zk_server_state")
                .map(String::as_str)
                == Some("observer")
        },
    );
    let mut client = RawClient::connect(ensemble.servers[3].addr);
    assert_eq!(
        create(&mut client, 1, "/via-observer", CreateMode::Persistent),
        ErrorCode::Ok
    );
    let mut other = RawClient::connect(ensemble.servers[0].addr);
    assert_eq!(sync(&mut other, 1), ErrorCode::Ok);
    assert!(exists(&mut other, 2, "/via-observer"));
    // The leader counts the observer among its followers (polled: under load a
    // leader change may be under way).
    wait_until(
        Duration::from_secs(10),
        "the leader does not report 3 followers",
        || {
            let leader = ensemble.wait_for_leader(Duration::from_secs(10));
            ensemble
                .mntr(leader)
                .get("zk_followers")
                .map(String::as_str)
                == Some("3")
        },
    );
}

/// Writes sequential nodes under /load, moving to the next server whenever its server
/// goes away, until `stop`; returns the acknowledged ids and when each was acknowledged.
fn write_through_failures(
    addrs: &[std::net::SocketAddr],
    stop: &std::sync::atomic::AtomicBool,
    acked: &parking_lot::Mutex<Vec<(String, Instant)>>,
) {
    let mut server = 0;
    let mut xid = 0;
    let mut client: Option<RawClient> = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Some(c) = client.as_mut() else {
            client = RawClient::try_connect(addrs[server % addrs.len()]);
            if client.is_none() {
                server += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            continue;
        };
        xid += 1;
        let id = format!("w{xid}");
        let request = Request::Create(CreateRequest {
            path: "/load/n-".into(),
            data: Bytes::copy_from_slice(id.as_bytes()).into(),
            acl: Acl::open_unsafe(),
            flags: CreateMode::PersistentSequential.flags(),
        });
        match c.try_call(xid, &request) {
            Some((header, _)) if header.err == ErrorCode::Ok => {
                acked.lock().push((id, Instant::now()));
            }
            // Lost with the leader, or refused while there is none: try again elsewhere.
            _ => {
                client = None;
                server += 1;
            }
        }
    }
}

#[test]
fn killing_the_leader_repeatedly_under_write_load_loses_nothing() {
    let mut ensemble = Ensemble::start(3, 0);
    let mut setup = RawClient::connect(ensemble.servers[0].addr);
    assert_eq!(
        create(&mut setup, 1, "/load", CreateMode::Persistent),
        ErrorCode::Ok
    );
    drop(setup);
    let addrs: Vec<_> = ensemble.servers.iter().map(|s| s.addr).collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let acked = parking_lot::Mutex::new(Vec::new());
    let mut failovers = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| write_through_failures(&addrs, &stop, &acked));
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(700));
            let leader = ensemble.wait_for_leader(Duration::from_secs(20));
            ensemble.servers[leader].kill();
            let killed = Instant::now();
            loop {
                let resumed = acked.lock().last().is_some_and(|(_, at)| *at > killed);
                if resumed {
                    failovers.push(killed.elapsed());
                    break;
                }
                assert!(
                    killed.elapsed() < Duration::from_secs(20),
                    "no write acknowledged within 20 s of the leader's death"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            ensemble.servers[leader].restart();
        }
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    failovers.sort();
    eprintln!(
        "leader kill to first acknowledged write: median {:?}, max {:?} ({failovers:?})",
        failovers[failovers.len() / 2],
        failovers.last()
    );
    let acked: Vec<String> = acked.into_inner().into_iter().map(|(id, _)| id).collect();
    assert!(!acked.is_empty());
    // Every acknowledged write is on every server, once.
    let all: Vec<&Server> = ensemble.servers.iter().collect();
    assert_converges(&all);
    let mut client = RawClient::connect(ensemble.servers[0].addr);
    let names = match client.call(
        1,
        &Request::GetChildren(WatchedPathRequest {
            path: "/load".into(),
            watch: false,
        }),
    ) {
        (_, Some(paddock_wire::Response::GetChildren { children })) => children,
        other => panic!("{other:?}"),
    };
    let mut seen = std::collections::HashMap::new();
    for (i, name) in names.iter().enumerate() {
        let request = Request::GetData(WatchedPathRequest {
            path: format!("/load/{name}"),
            watch: false,
        });
        if let (_, Some(paddock_wire::Response::GetData { data, .. })) =
            client.call(10 + i as i32, &request)
        {
            *seen
                .entry(String::from_utf8_lossy(&data).into_owned())
                .or_insert(0) += 1;
        }
    }
    for id in &acked {
        assert_eq!(
            seen.get(id),
            Some(&1),
            "acknowledged write {id} lost or duplicated"
        );
    }
}

#[test]
fn a_wiped_follower_catches_up_through_a_snapshot() {
    // A small snapCount, so the leader's log is compacted behind its snapshots.
    let mut ensemble = Ensemble::start_with(3, 0, "snapCount=100");
    let leader = ensemble.wait_for_leader(Duration::from_secs(10));
    let follower = (leader + 1) % 3;
    let mut client = RawClient::connect(ensemble.servers[leader].addr);
    for i in 0..600 {
        assert_eq!(
            create(
                &mut client,
                i + 1,
                &format!("/s{i}"),
                CreateMode::Persistent
            ),
            ErrorCode::Ok
        );
    }
    ensemble.servers[follower].kill();
    ensemble.servers[follower].wipe();
    ensemble.servers[follower].restart();
    let all: Vec<&Server> = ensemble.servers.iter().collect();
    assert_converges(&all);
    let log = ensemble.servers[follower].log_text();
    assert!(
        log.contains("installed a snapshot"),
        "the wiped follower did not catch up by snapshot:\n{log}"
    );
    let mut check = RawClient::connect(ensemble.servers[follower].addr);
    assert!(exists(&mut check, 1, "/s599"));
}

#[test]
fn a_follower_far_behind_catches_up_from_the_entries_the_leader_reads_back_from_its_log() {
    // More writes than the leader keeps in memory (4,096 applied entries), but no
    // snapshot (snapCount is 100,000): the leader reads the follower's missing entries
    // back from its txn log's files.
    let mut ensemble = Ensemble::start(3, 0);
    let leader = ensemble.wait_for_leader(Duration::from_secs(10));
    let follower = (leader + 1) % 3;
    ensemble.servers[follower].kill();
    let mut client = RawClient::connect(ensemble.servers[leader].addr);
    const WRITES: i32 = 7_000;
    const WINDOW: i32 = 500;
    for start in (0..WRITES).step_by(WINDOW as usize) {
        for i in start..start + WINDOW {
            client.send(
                i + 1,
                &Request::Create(CreateRequest {
                    path: format!("/far{i}"),
                    data: Bytes::from_static(b"v").into(),
                    acl: Acl::open_unsafe(),
                    flags: CreateMode::Persistent.flags(),
                }),
            );
        }
        for _ in 0..WINDOW {
            let frame = read_frame(&mut client.stream).expect("a reply");
            let header = ReplyHeader::decode(&mut Reader::new(frame)).expect("a header");
            assert_eq!(header.err, ErrorCode::Ok, "create {}", header.xid);
        }
    }
    ensemble.servers[follower].restart();
    let all: Vec<&Server> = ensemble.servers.iter().collect();
    assert_converges(&all);
    let log = ensemble.servers[follower].log_text();
    assert!(
        !log.contains("installed a snapshot"),
        "the follower was sent a snapshot instead of entries:\n{log}"
    );
    let mut check = RawClient::connect(ensemble.servers[follower].addr);
    assert!(exists(&mut check, 1, &format!("/far{}", WRITES - 1)));
}

#[test]
fn a_session_that_moves_to_another_server_leaves_its_old_connection() {
    let ensemble = Ensemble::start(3, 0);
    let (mut first, session) =
        RawClient::handshake(ensemble.servers[0].addr, &RawClient::new_session())
            .expect("handshake");
    assert_eq!(
        create(&mut first, 1, "/moved", CreateMode::Ephemeral),
        ErrorCode::Ok
    );
    let (mut second, moved) = RawClient::handshake(
        ensemble.servers[1].addr,
        &ConnectRequest {
            session_id: session.session_id,
            passwd: session.passwd.clone(),
            ..RawClient::new_session()
        },
    )
    .expect("handshake");
    assert_eq!(moved.session_id, session.session_id);
    // Server 0 closes the stale connection once the move is applied there.
    assert!(read_frame(&mut first.stream).is_none());
    // The session, and its ephemeral node, carry on through server 1.
    assert!(exists(&mut second, 1, "/moved"));
}

/// A server cut off from its peers must stop serving: close its clients' connections
/// and take no new session until it is back in a quorum. Otherwise a client there
/// keeps believing in its session (and its ephemeral lock node) while the majority
/// expires it and grants the lock to someone else (found by an outside fault test: a
/// kazoo Lock held by two clients for ~10 s). Here the two peers are paused; the
/// remaining server's clients can still reach it.
#[test]
fn a_server_cut_off_from_its_peers_closes_its_clients_and_refuses_new_ones() {
    let ensemble = Ensemble::start(3, 0);
    let mut client = RawClient::connect(ensemble.servers[0].addr);
    assert_eq!(
        create(&mut client, 1, "/before", CreateMode::Persistent),
        ErrorCode::Ok
    );
    ensemble.servers[1].signal("STOP");
    ensemble.servers[2].signal("STOP");
    // Pings only: an idle client must be told too. Bounded by the 10 s read timeout.
    let mut xid = 1;
    let closed = loop {
        xid += 1;
        match client.try_call(xid, &Request::Ping) {
            None => break true,
            Some(_) if xid > 200 => break false,
            Some(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let refused = RawClient::try_connect(ensemble.servers[0].addr).is_none();
    let srvr = four_letter(ensemble.servers[0].addr, "srvr").unwrap_or_default();
    ensemble.servers[1].signal("CONT");
    ensemble.servers[2].signal("CONT");
    assert!(closed, "a client of the cut-off server was never told");
    assert!(refused, "the cut-off server took a new session");
    // As ZooKeeper answers while it has no quorum.
    assert!(
        srvr.contains("not currently serving requests"),
        "srvr on the cut-off server: {srvr}"
    );
    // Back in the quorum, it serves again.
    let addr = ensemble.servers[0].addr;
    let mut client = create_until_acknowledged(addr, "/after", Duration::from_secs(20));
    assert!(exists(&mut client, 2, "/before"));
}

/// A server whose data was wiped must not vote until it has caught up: otherwise it can
/// help elect a leader that lacks a committed write. Here W is committed by A and B
/// while C is paused; B is wiped and A is killed; C (without W) and the blank B are a
/// majority. Before the vote guard, B voted for C and W was lost once A came back.
#[test]
fn a_wiped_server_does_not_help_elect_a_leader_that_lacks_a_committed_write() {
    let mut ensemble = Ensemble::start(3, 0);
    ensemble.servers[2].signal("STOP");
    let a = ensemble.servers[0].addr;
    drop(create_until_acknowledged(a, "/w", Duration::from_secs(20)));
    ensemble.servers[0].kill();
    ensemble.servers[1].kill();
    ensemble.servers[1].wipe();
    ensemble.servers[2].signal("CONT");
    ensemble.servers[1].restart();
    // B and C must not commit anything between them: try for a while through both.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut xid = 1;
    while Instant::now() < deadline {
        for i in [1, 2] {
            let Some(mut client) = RawClient::try_connect(ensemble.servers[i].addr) else {
                continue;
            };
            xid += 1;
            let code = create(&mut client, xid, "/by-b-and-c", CreateMode::Persistent);
            assert_ne!(
                code,
                ErrorCode::Ok,
                "a wiped server helped server {} lead without the committed write; B's log:\n{}",
                i + 1,
                ensemble.servers[1].log_text()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    ensemble.servers[0].restart();
    let mut client = create_until_acknowledged(a, "/after", Duration::from_secs(30));
    assert_eq!(sync(&mut client, 2), ErrorCode::Ok);
    assert!(exists(&mut client, 3, "/w"), "the committed write was lost");
    let all: Vec<&Server> = ensemble.servers.iter().collect();
    assert_converges(&all);
    // It rejoins as a voter once a majority without it has confirmed the leader's term
    // and it holds what that leader had committed: a few ticks after A is back.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = ensemble.servers[1].log_text();
        if log.contains("votes again") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the wiped server never rejoined as a voter:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A wiped follower's first session sees the ensemble's state, not the empty tree it
/// restarted with, although its snapshot takes a while to arrive (a ZooKeeper follower
/// syncs with its leader before it serves). Two things keep this: a new session is
/// itself a write the follower must apply, and the follower starts serving only once
/// it has applied what the leader had when it acknowledged its report.
#[test]
fn a_wiped_follower_serves_only_once_it_has_caught_up() {
    let mut ensemble = Ensemble::start_with(3, 0, "snapCount=100");
    let leader = ensemble.wait_for_leader(Duration::from_secs(10));
    let follower = (leader + 1) % 3;
    let mut client = RawClient::connect(ensemble.servers[leader].addr);
    // Some 100 MB, so that the snapshot takes a while to stream and decode.
    let data = Bytes::from(vec![b'd'; 400 * 1024]);
    for i in 0..250 {
        let request = Request::Create(CreateRequest {
            path: format!("/s{i}"),
            data: data.clone().into(),
            acl: Acl::open_unsafe(),
            flags: CreateMode::Persistent.flags(),
        });
        let (header, _) = client.call(i + 1, &request);
        assert_eq!(header.err, ErrorCode::Ok);
    }
    ensemble.servers[follower].kill();
    ensemble.servers[follower].wipe();
    ensemble.servers[follower].restart();
    let addr = ensemble.servers[follower].addr;
    let mut first = eventually(Duration::from_secs(30), || RawClient::try_connect(addr))
        .expect("the wiped follower never served");
    assert!(
        exists(&mut first, 1, "/s249"),
        "the wiped follower served a new session from a state behind the ensemble's"
    );
}

//! The durable txn log and snapshots, seen from outside: kill -9 under load, restarts,
//! corrupt files. (Byte-level truncation, bit flips and the simulated crash that drops
//! unsynced writes are unit tests of `store`.)

use std::time::{Duration, Instant};

use bytes::Bytes;
use paddock_wire::{
    Acl, ConnectRequest, CreateMode, CreateRequest, ErrorCode, Request, Response,
    WatchedPathRequest,
};

use crate::support::{paddock, wait_until, RawClient, Server};

fn create_request(path: &str, data: &str, mode: CreateMode) -> Request {
    Request::Create(CreateRequest {
        path: path.into(),
        data: Bytes::copy_from_slice(data.as_bytes()).into(),
        acl: Acl::open_unsafe(),
        flags: mode.flags(),
    })
}

fn get_data(client: &mut RawClient, xid: i32, path: &str) -> Option<Bytes> {
    match client.call(
        xid,
        &Request::GetData(WatchedPathRequest {
            path: path.into(),
            watch: false,
        }),
    ) {
        (_, Some(Response::GetData { data, .. })) => Some(data.bytes()),
        _ => None,
    }
}

fn children(client: &mut RawClient, xid: i32, path: &str) -> Vec<String> {
    match client.call(
        xid,
        &Request::GetChildren(WatchedPathRequest {
            path: path.into(),
            watch: false,
        }),
    ) {
        (_, Some(Response::GetChildren { children })) => children,
        other => panic!("getChildren {path}: {other:?}"),
    }
}

/// Writes sequential nodes under /seq until the connection breaks or `limit` passes;
/// returns the ids of the acknowledged writes.
fn write_until_broken(server: &Server, round: usize, limit: Duration) -> Vec<String> {
    let mut client = RawClient::connect(server.addr);
    let mut acknowledged = Vec::new();
    let deadline = Instant::now() + limit;
    let mut xid = 0;
    while Instant::now() < deadline {
        xid += 1;
        let id = format!("r{round}-{xid}");
        match client.try_call(
            xid,
            &create_request("/seq/n-", &id, CreateMode::PersistentSequential),
        ) {
            Some((header, _)) if header.err == ErrorCode::Ok => acknowledged.push(id),
            Some((header, _)) => panic!("write refused: {header:?}"),
            None => break,
        }
    }
    acknowledged
}

/// Every write acknowledged before a kill -9 is there after the restart, exactly once.
#[test]
fn acknowledged_writes_survive_kill_9_many_times() {
    let mut server = paddock("forceSync=yes");
    let mut setup = RawClient::connect(server.addr);
    assert_eq!(
        setup
            .call(1, &create_request("/seq", "", CreateMode::Persistent))
            .0
            .err,
        ErrorCode::Ok
    );
    drop(setup);
    let mut acknowledged: Vec<String> = Vec::new();
    for round in 0..5 {
        let victim = server.pid();
        let writer = {
            let server_ref = &server;
            std::thread::scope(|s| {
                let writer =
                    s.spawn(move || write_until_broken(server_ref, round, Duration::from_secs(10)));
                // Kill while the writer is mid-stream.
                std::thread::sleep(Duration::from_millis(300 + 150 * round as u64));
                let status = std::process::Command::new("kill")
                    .arg("-9")
                    .arg(victim.to_string())
                    .status()
                    .expect("kill");
                assert!(status.success());
                writer.join().expect("writer")
            })
        };
        assert!(
            !writer.is_empty(),
            "round {round}: nothing was acknowledged"
        );
        acknowledged.extend(writer);
        server.restart();
    }
    let mut client = RawClient::connect(server.addr);
    let names = children(&mut client, 1, "/seq");
    let mut seen = std::collections::HashMap::new();
    for (i, name) in names.iter().enumerate() {
        let data = get_data(&mut client, 10 + i as i32, &format!("/seq/{name}")).expect("data");
        *seen
            .entry(String::from_utf8_lossy(&data).into_owned())
            .or_insert(0) += 1;
    }
    for id in &acknowledged {
        assert_eq!(
            seen.get(id),
            Some(&1),
            "acknowledged write {id} lost or duplicated"
        );
    }
    assert!(seen.values().all(|n| *n == 1), "a write was applied twice");
}

/// Sessions are replicated state: a restart keeps them and their ephemerals, and a
/// session whose client is gone still expires afterwards.
#[test]
fn sessions_and_ephemerals_survive_a_restart() {
    let mut server = paddock("");
    let (mut client, session) = RawClient::handshake(
        server.addr,
        &ConnectRequest {
            timeout: 4000,
            ..RawClient::new_session()
        },
    )
    .expect("handshake");
    assert_eq!(
        client
            .call(1, &create_request("/mine", "", CreateMode::Ephemeral))
            .0
            .err,
        ErrorCode::Ok
    );
    drop(client);
    server.restart();
    let (mut again, reattached) = RawClient::handshake(
        server.addr,
        &ConnectRequest {
            session_id: session.session_id,
            passwd: session.passwd.clone(),
            timeout: 4000,
            ..RawClient::new_session()
        },
    )
    .expect("handshake");
    assert_eq!(
        reattached.session_id, session.session_id,
        "the session survived"
    );
    assert!(
        get_data(&mut again, 1, "/mine").is_some(),
        "its ephemeral survived"
    );
    drop(again);
    // The client is gone for good: the session expires and takes the node with it.
    let mut observer = RawClient::connect(server.addr);
    let mut xid = 1;
    wait_until(
        Duration::from_secs(20),
        "the ephemeral outlived its session",
        || {
            xid += 1;
            get_data(&mut observer, xid, "/mine").is_none()
        },
    );
}

/// A CRC mismatch in the middle of the log, with no snapshot to skip it, stops the
/// server with a message naming the file: data is never skipped silently.
#[test]
fn a_corrupt_log_refuses_to_start_naming_the_file() {
    let mut server = paddock("");
    let mut client = RawClient::connect(server.addr);
    for i in 0..50 {
        let path = format!("/n{i}");
        assert_eq!(
            client
                .call(
                    i + 1,
                    &create_request(&path, "some data", CreateMode::Persistent)
                )
                .0
                .err,
            ErrorCode::Ok
        );
    }
    drop(client);
    server.kill();
    let segment = server.data_dir().join("log.0000000000000001");
    let mut bytes = std::fs::read(&segment).expect("log segment");
    // Inside an early record: valid records follow it.
    bytes[200] ^= 0x40;
    std::fs::write(&segment, bytes).expect("corrupt");
    let status = crate::support::run_bounded(
        std::process::Command::new(env!("CARGO_BIN_EXE_paddock"))
            .arg("--config")
            .arg(server.data_dir().join("../zoo.cfg")),
        Duration::from_secs(30),
    );
    assert!(!status.status.success(), "started on a corrupt log");
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(stderr.contains("log.0000000000000001"), "{stderr}");
}

/// The newest snapshot is corrupt: the server says so and recovers from an older one
/// and the log after it, losing nothing.
#[test]
fn a_corrupt_newest_snapshot_falls_back_to_an_older_one() {
    let mut server = paddock("snapCount=40");
    let mut client = RawClient::connect(server.addr);
    for i in 0..200 {
        let path = format!("/s{i}");
        assert_eq!(
            client
                .call(i + 1, &create_request(&path, "x", CreateMode::Persistent))
                .0
                .err,
            ErrorCode::Ok
        );
    }
    drop(client);
    let list = |server: &Server| {
        let mut snapshots: Vec<_> = std::fs::read_dir(server.data_dir())
            .expect("data dir")
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    // Finished snapshots only: one being written is `snapshot.<index>.tmp`.
                    .is_some_and(|n| n.starts_with("snapshot.") && !n.ends_with(".tmp"))
            })
            .collect();
        snapshots.sort();
        snapshots
    };
    // Snapshots are written in the background: wait for at least two.
    wait_until(Duration::from_secs(10), "no snapshots written", || {
        list(&server).len() >= 2
    });
    server.kill();
    // Listed again after the kill: one may have been finished meanwhile.
    let snapshots = list(&server);
    let newest = snapshots.last().expect("newest");
    let mut bytes = std::fs::read(newest).expect("snapshot");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(newest, bytes).expect("corrupt");
    server.restart();
    let log = server.log_text();
    assert!(log.contains("corrupt snapshot"), "{log}");
    let mut client = RawClient::connect(server.addr);
    for i in 0..200 {
        assert!(
            get_data(&mut client, i + 1, &format!("/s{i}")).is_some(),
            "/s{i} lost"
        );
    }
}

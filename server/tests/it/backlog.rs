//! Bounded memory per connection: clients that never read their replies or events
//! cannot make the server buffer without limit, and the clients that do read keep
//! being served meanwhile. Latency is printed, not asserted (timing belongs in
//! benchmarks); the server's resident memory is asserted.

use std::time::{Duration, Instant};

use bytes::Bytes;
use paddock_wire::{
    Acl, AddWatchRequest, ConnectRequest, CreateRequest, Request, SetDataRequest,
    WatchedPathRequest,
};

use crate::support::{four_letter, mntr, paddock, wait_until, RawClient, Server};

/// The bound the test runs with (`maxClientOutgoingBytes`).
const LIMIT: usize = 4 << 20;
/// A node as large as jute.maxbuffer allows.
const BIG: usize = 1_000_000;

fn create(path: &str, data: Bytes) -> Request {
    Request::Create(CreateRequest {
        path: path.into(),
        data: data.into(),
        acl: Acl::open_unsafe(),
        flags: 0,
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(rank).copied().unwrap_or_default()
}

/// Peak RSS while `work` runs, sampled every 20 ms.
fn peak_rss_during(server: &Server, work: impl FnOnce() + Send) -> u64 {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(server.rss_kib());
                std::thread::sleep(Duration::from_millis(20));
            }
            peak.max(server.rss_kib())
        });
        work();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        sampler.join().expect("sampler")
    })
}

fn closed_over_backlog(server: &Server) -> u64 {
    mntr(server)
        .get("zk_connections_closed_backlog")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[test]
fn clients_that_never_read_cannot_exhaust_memory() {
    let server = paddock(&format!("maxClientOutgoingBytes={LIMIT}"));
    let mut setup = RawClient::connect(server.addr);
    setup.call(1, &create("/big", Bytes::from(vec![7u8; BIG])));
    setup.call(2, &create("/flood", Bytes::new()));
    // Long names make each event large, so the watcher's backlog grows fast.
    let names: Vec<String> = (0..8)
        .map(|i| format!("/flood/{i}-{}", "x".repeat(2000)))
        .collect();
    for name in &names {
        setup.call(3, &create(name, Bytes::new()));
    }
    setup.call(4, &create("/small", Bytes::from_static(b"s")));
    let baseline = server.rss_kib();

    // Pipelines 400 reads of the 1 MB node (400 MB of replies) and reads none; a
    // short session timeout, so its stalled connection is closed soon.
    let connect = ConnectRequest {
        timeout: 2_000,
        ..RawClient::new_session()
    };
    let (mut reader_flooder, reader_session) =
        RawClient::handshake(server.addr, &connect).expect("session");
    for xid in 1..=400 {
        reader_flooder.send(
            xid,
            &Request::GetData(WatchedPathRequest {
                path: "/big".into(),
                watch: false,
            }),
        );
    }
    // Watches everything, then reads nothing.
    let mut watch_flooder = RawClient::connect(server.addr);
    watch_flooder.call(
        1,
        &Request::AddWatch(AddWatchRequest {
            path: "/".into(),
            mode: 1,
        }),
    );

    let mut latencies = Vec::new();
    let peak = peak_rss_during(&server, || {
        let mut writer = RawClient::connect(server.addr);
        let mut reader = RawClient::connect(server.addr);
        for i in 0..3_000 {
            let started = Instant::now();
            let set = Request::SetData(SetDataRequest {
                path: names[i % names.len()].clone(),
                data: Bytes::from_static(b"v").into(),
                version: -1,
            });
            let (header, _) = writer.call(i32::try_from(i).unwrap_or(0) + 10, &set);
            assert!(header.err.is_ok(), "setData: {:?}", header.err);
            let get = Request::GetData(WatchedPathRequest {
                path: "/small".into(),
                watch: false,
            });
            let (header, _) = reader.call(i32::try_from(i).unwrap_or(0) + 10, &get);
            assert!(header.err.is_ok(), "getData: {:?}", header.err);
            latencies.push(started.elapsed());
        }
    });
    latencies.sort_unstable();
    println!(
        "other clients, setData+getData round trips: p50 {:?} p99 {:?} max {:?}; \
         server RSS {baseline} KiB before the flood, {peak} KiB at its peak",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
    );
    let growth_mib = peak.saturating_sub(baseline) / 1024;
    assert!(
        growth_mib < 64,
        "the server grew by {growth_mib} MiB for two clients that read nothing"
    );

    // Both flooders are closed. The watcher when its events overflowed the bound. The
    // reader when its output did not move for its session timeout — or by the expiry
    // of its session, which falls due at the same moment (it sends no pings, and the
    // server reads nothing more from a connection whose output is full): under load
    // either comes first, and both end the connection.
    wait_until(
        Duration::from_secs(20),
        "the watcher that reads nothing was not closed over its backlog",
        || closed_over_backlog(&server) >= 1,
    );
    let sid = format!("sid=0x{:x}", reader_session.session_id);
    wait_until(
        Duration::from_secs(20),
        "the reader that reads nothing is still connected",
        || four_letter(server.addr, "cons").is_some_and(|cons| !cons.contains(&sid)),
    );
    // What was buffered for it is bounded, and then its socket is closed.
    reader_flooder
        .stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut drained = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let closed = loop {
        match std::io::Read::read(&mut reader_flooder.stream, &mut buf) {
            Ok(0) => break true,
            Ok(n) => drained += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
    };
    assert!(closed, "the reader's socket was not closed");
    assert!(
        drained <= LIMIT + (32 << 20),
        "{drained} bytes were held for a client that read nothing"
    );
    drop(watch_flooder);
}

/// Sets `count` exists watches on missing paths from `first`, pipelined in batches.
fn watch_missing(client: &mut RawClient, first: usize, count: usize) {
    const BATCH: usize = 1_000;
    for start in (first..first + count).step_by(BATCH) {
        let end = (start + BATCH).min(first + count);
        for i in start..end {
            client.send(
                i32::try_from(i).unwrap_or(0),
                &Request::Exists(WatchedPathRequest {
                    path: format!("/missing/w{i:07}"),
                    watch: true,
                }),
            );
        }
        for _ in start..end {
            crate::support::read_frame(&mut client.stream).expect("exists reply");
        }
    }
}

/// A session's watches cost memory in proportion to their number — ZooKeeper puts no
/// cap on them either, so this is what an operator sizes for (README, "Limits").
#[test]
fn memory_per_watch_stays_proportional() {
    const STEP: usize = 100_000;
    let server = paddock("");
    let mut client = RawClient::connect(server.addr);
    watch_missing(&mut client, 0, 1_000);
    let mut rss = vec![server.rss_kib()];
    for step in 0..2 {
        watch_missing(&mut client, 1_000 + step * STEP, STEP);
        rss.push(server.rss_kib());
    }
    let per_watch: Vec<u64> = rss
        .windows(2)
        .map(|w| (w[1] - w[0]) * 1024 / STEP as u64)
        .collect();
    let stats = mntr(&server);
    println!(
        "bytes per watch on a 17-byte path, two steps of {STEP}: {per_watch:?} (zk_watch_count {:?})",
        stats.get("zk_watch_count")
    );
    assert_eq!(
        stats.get("zk_watch_count").map(String::as_str),
        Some("201000")
    );
    for bytes in &per_watch {
        assert!(*bytes < 1024, "{per_watch:?} bytes per watch");
    }
}

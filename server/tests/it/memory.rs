//! Memory per znode, measured (a benchmark, not part of the suite): N znodes of 100
//! bytes with 40-byte names under four parents (`/bench/p0/…` to `/bench/p3/…`), created
//! one request at a time as a kazoo script would (many in flight), in a standalone
//! Paddock, in a three-server Paddock ensemble and in Apache ZooKeeper 3.8; each
//! server's resident memory (`VmRSS`) once the load is done and has settled, and for
//! Paddock again after a restart from its snapshot and log. Figures go to
//! BENCHMARKS.md:
//!
//! ```sh
//! cargo test -p paddock-server --release --test it -- --ignored --nocapture memory_per_znode
//! ```
//!
//! ZooKeeper runs with the JVM's default heap limit (a quarter of the machine's memory)
//! unless `SERVER_JVMFLAGS` says otherwise (`SERVER_JVMFLAGS=-Xmx2g`, as
//! `loadgen/bench/compare.sh` runs it); its live heap after a full GC is printed too.
//! `PADDOCK_MEMORY_ZNODES` changes N (default 1,000,000); `PADDOCK_MEMORY_SYSTEMS` picks
//! the systems (a comma list of `standalone`, `ensemble`, `zookeeper`; default all).
//! `PADDOCK_MEMORY_TRIM=1` also has gdb call glibc's `malloc_trim(0)` in each Paddock
//! server once it has settled and reports RSS again: what that gives back was free heap
//! (freed chunks between live ones), not live data.

use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;
use paddock_client::{Client, ConnectOptions, CreateMode, Error};
use paddock_wire::ErrorCode;

use crate::support::{mntr, run_bounded, zookeeper, zookeeper_installed, Ensemble, Server};

const DEFAULT_ZNODES: usize = 1_000_000;
const DATA: usize = 100;
const PARENTS: usize = 4;
/// Creates in flight at once: enough to keep the server busy, like many kazoo async calls.
const IN_FLIGHT: usize = 256;

fn znodes() -> usize {
    std::env::var("PADDOCK_MEMORY_ZNODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_ZNODES)
}

fn wanted(system: &str) -> bool {
    std::env::var("PADDOCK_MEMORY_SYSTEMS")
        .map_or(true, |list| list.split(',').any(|s| s == system))
}

/// A 40-character name that looks random (splitmix64 of the index, in hex), so the
/// nodes arrive in no particular key order, as uuid-like names would.
fn name(i: usize) -> String {
    let mut state = i as u64;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    format!("{:016x}{:016x}{:08x}", next(), next(), next() as u32)
}

fn path(i: usize) -> String {
    format!("/bench/p{}/{}", i % PARENTS, name(i))
}

/// Creates the N znodes through `hosts`, one create per request.
fn fill(hosts: &str, n: usize) -> Duration {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let options = ConnectOptions::with_session_timeout(Duration::from_secs(30));
        let client = Client::connect(hosts, options).await.expect("connect");
        client
            .create("/bench", b"", CreateMode::Persistent)
            .await
            .expect("create /bench");
        for p in 0..PARENTS {
            client
                .create(&format!("/bench/p{p}"), b"", CreateMode::Persistent)
                .await
                .expect("create a parent");
        }
        let started = Instant::now();
        let data = [b'x'; DATA];
        let client = &client;
        let creates = futures::stream::iter(0..n).map(|i| async move {
            // A connection lost under this load (an election, a slow follower) leaves
            // the create's fate unknown: retry it, and take NodeExists as done.
            let mut tries = 0;
            loop {
                match client.create(&path(i), &data, CreateMode::Persistent).await {
                    Ok(_) => return Ok(()),
                    Err(Error::Keeper(ErrorCode::NodeExists)) if tries > 0 => return Ok(()),
                    Err(Error::ConnectionLoss) if tries < 100 => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Err(e) => return Err(e),
                }
            }
        });
        let mut results = creates.buffer_unordered(IN_FLIGHT);
        while let Some(result) = results.next().await {
            result.expect("create");
        }
        started.elapsed()
    })
}

fn znode_count(server: &Server) -> usize {
    mntr(server)
        .get("zk_znode_count")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Waits (up to 10 minutes) until the server holds at least `n` znodes: a restarted
/// server answers before it has restored everything, a follower lags its leader.
fn wait_for_znodes(server: &Server, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while znode_count(server) < n {
        assert!(
            Instant::now() < deadline,
            "the server never held {n} znodes"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// RSS once it has stopped moving (snapshots written, buffers released), in KiB.
fn settled_rss(server: &Server) -> u64 {
    let mut last = server.rss_kib();
    for _ in 0..30 {
        std::thread::sleep(Duration::from_secs(2));
        let now = server.rss_kib();
        if now.abs_diff(last) < 1024 {
            return now;
        }
        last = now;
    }
    last
}

/// With `PADDOCK_MEMORY_TRIM=1`: RSS after glibc gives its free pages back, in KiB.
fn trimmed_rss(server: &Server) -> Option<u64> {
    if std::env::var("PADDOCK_MEMORY_TRIM").is_err() {
        return None;
    }
    let pid = server.pid().to_string();
    let out = run_bounded(
        Command::new("gdb").args([
            "--batch",
            "-p",
            pid.as_str(),
            "-ex",
            "call (int) malloc_trim(0)",
        ]),
        Duration::from_secs(120),
    );
    if !out.status.success() {
        println!(
            "memory: gdb could not trim: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(settled_rss(server))
}

/// Reports the settled RSS, and the trimmed one if asked for.
fn report_settled(system: &str, when: &str, server: &Server, n: usize) {
    report(system, when, settled_rss(server), n);
    if let Some(trimmed) = trimmed_rss(server) {
        report(system, &format!("{when}, trim"), trimmed, n);
    }
}

fn report(system: &str, when: &str, rss_kib: u64, n: usize) {
    println!(
        "memory: {system:<22} {when:<14} RSS {:>6} MiB  {:>5} B/znode",
        rss_kib / 1024,
        rss_kib * 1024 / n as u64
    );
}

/// The JVM's heap line after a full GC (`jcmd GC.run`, then `GC.heap_info`): how much
/// of ZooKeeper's RSS is live data rather than heap the JVM keeps for later.
fn java_live_heap(server: &Server) -> Option<String> {
    let jcmd = |command: &str| {
        run_bounded(
            Command::new("jcmd")
                .arg(server.pid().to_string())
                .arg(command),
            Duration::from_secs(120),
        )
    };
    jcmd("GC.run");
    let info = String::from_utf8_lossy(&jcmd("GC.heap_info").stdout).into_owned();
    info.lines()
        .find(|l| l.contains("total") && l.contains("used"))
        .map(|l| l.trim().to_owned())
}

#[test]
#[ignore = "a benchmark: minutes and gigabytes; see the module docs"]
fn memory_per_znode() {
    let n = znodes();
    if wanted("standalone") {
        let mut server = crate::support::paddock("");
        let took = fill(&server.hosts(), n);
        println!("memory: standalone paddock: {n} creates in {took:?}");
        wait_for_znodes(&server, n);
        report_settled("paddock standalone", "after load", &server, n);
        server.restart();
        wait_for_znodes(&server, n);
        report_settled("paddock standalone", "after restart", &server, n);
    }
    if wanted("ensemble") {
        let ensemble = Ensemble::start(3, 0);
        let leader = ensemble.wait_for_leader(Duration::from_secs(30));
        let hosts: Vec<String> = ensemble.servers.iter().map(Server::hosts).collect();
        let took = fill(&hosts.join(","), n);
        println!("memory: paddock ensemble: {n} creates in {took:?}");
        for (i, server) in ensemble.servers.iter().enumerate() {
            let role = if i == leader { "leader" } else { "follower" };
            wait_for_znodes(server, n);
            report_settled(&format!("paddock 3-node {role}"), "after load", server, n);
        }
    }
    if wanted("zookeeper") && zookeeper_installed() {
        let server = zookeeper("");
        let took = fill(&server.hosts(), n);
        println!("memory: zookeeper standalone: {n} creates in {took:?}");
        wait_for_znodes(&server, n);
        report(
            "zookeeper standalone",
            "after load",
            settled_rss(&server),
            n,
        );
        if let Some(live) = java_live_heap(&server) {
            println!("memory: zookeeper live heap after a full GC: {live}");
        }
    }
}

//! A big state, measured (a benchmark, not part of the suite): 1,000,000 znodes of
//! 256 bytes (some 330 MB of state) in a three-server ensemble; the snapshot write
//! time, streaming a snapshot to a wiped follower and its catch-up, a restart's
//! recovery time, and the p99.9 of a client's writes while snapshots are written and
//! while one is streamed. snapCount is small (200 txns of 1,000 creates), so that the
//! leader's log is compacted past the wiped follower and it needs a snapshot. Figures
//! go to BENCHMARKS.md:
//!
//! ```sh
//! cargo test -p paddock-server --release --test it -- --ignored --nocapture big_state
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use paddock_client::{Client, ConnectOptions, CreateMode};

use crate::support::{four_letter, mntr, wait_until, Ensemble, Server};

const NODES: usize = 1_000_000;
const BATCH: usize = 1_000;
const DATA: usize = 256;

fn seconds_of_day(time: SystemTime) -> f64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    since.as_secs_f64() % 86_400.0
}

/// The time of day a log line was written ("...T10:01:19.307665Z ...").
fn line_time(line: &str) -> Option<f64> {
    let t = line.find('T')?;
    let clock = line.get(t + 1..t + 16)?;
    let h: f64 = clock.get(0..2)?.parse().ok()?;
    let m: f64 = clock.get(3..5)?.parse().ok()?;
    let s: f64 = clock.get(6..15)?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// A `Duration`'s Debug form ("1.5s", "20.3ms", "850µs") in seconds.
fn debug_seconds(text: &str) -> Option<f64> {
    let text = text.trim().trim_end_matches([')', ',']);
    for (unit, scale) in [("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)] {
        if let Some(number) = text.strip_suffix(unit) {
            return number.parse::<f64>().ok().map(|n| n * scale);
        }
    }
    None
}

/// (start, end, seconds) of each log line that ends with "... in <duration>" and holds
/// `marker`.
fn windows(log: &str, marker: &str) -> Vec<(f64, f64, f64)> {
    log.lines()
        .filter(|l| l.contains(marker))
        .filter_map(|l| {
            let end = line_time(l)?;
            let took = debug_seconds(l.rsplit(" in ").next()?.split_whitespace().next()?)?;
            Some((end - took, end, took))
        })
        .collect()
}

fn p999(mut latencies: Vec<f64>) -> Option<f64> {
    if latencies.is_empty() {
        return None;
    }
    latencies.sort_by(f64::total_cmp);
    let at = ((latencies.len() as f64) * 0.999).ceil() as usize;
    Some(latencies[at.clamp(1, latencies.len()) - 1])
}

/// (time of day sent, latency s) of each write of a client that sets one node in a loop.
fn probe(addr: String, stop: Arc<AtomicBool>) -> Vec<(f64, f64)> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let options = ConnectOptions::with_session_timeout(Duration::from_secs(30));
        let client = Client::connect(&addr, options).await.expect("connect");
        let _ = client.create("/probe", b"", CreateMode::Persistent).await;
        let mut samples = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let sent = SystemTime::now();
            let started = Instant::now();
            if client.set_data("/probe", &[b'p'; DATA], None).await.is_ok() {
                samples.push((seconds_of_day(sent), started.elapsed().as_secs_f64()));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        samples
    })
}

fn fill(server: &Server) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let options = ConnectOptions::with_session_timeout(Duration::from_secs(30));
        let client = Client::connect(&server.hosts(), options)
            .await
            .expect("connect");
        client
            .create("/big", b"", CreateMode::Persistent)
            .await
            .expect("create /big");
        let batches = (0..NODES / BATCH).map(|b| {
            (0..BATCH).fold(client.transaction(), |txn, i| {
                txn.create(
                    &format!("/big/n{:07}", b * BATCH + i),
                    &[b'x'; DATA],
                    CreateMode::Persistent,
                )
            })
        });
        let commits = futures::stream::iter(batches.map(|txn| txn.commit()));
        let results: Vec<_> =
            futures::StreamExt::collect(futures::StreamExt::buffer_unordered(commits, 4)).await;
        for result in results {
            result.expect("multi");
        }
    });
}

fn serving(server: &Server) -> bool {
    four_letter(server.addr, "srvr").is_some_and(|s| s.contains("Zxid"))
}

fn same_state(a: &Server, b: &Server) -> bool {
    let (ma, mb) = (mntr(a), mntr(b));
    let key = |m: &std::collections::HashMap<String, String>| {
        (
            m.get("zk_last_zxid").cloned(),
            m.get("zk_tree_digest").cloned(),
        )
    };
    !ma.is_empty() && key(&ma) == key(&mb)
}

fn wait(limit: Duration, what: &str, done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    wait_until(limit, format_args!("{what} took too long"), done);
    started.elapsed()
}

#[test]
#[ignore = "a benchmark: minutes and gigabytes; see the module docs"]
fn big_state() {
    let mut ensemble = Ensemble::start_with(3, 0, "snapCount=200\nforceSync=yes");
    let leader = ensemble.wait_for_leader(Duration::from_secs(30));
    let follower = (leader + 1) % 3;
    let stop = Arc::new(AtomicBool::new(false));
    let probe_addr = ensemble.servers[leader].hosts();
    let probing = {
        let stop = stop.clone();
        std::thread::spawn(move || probe(probe_addr, stop))
    };
    let started = Instant::now();
    fill(&ensemble.servers[leader]);
    let load = started.elapsed();
    let state = mntr(&ensemble.servers[leader])
        .get("zk_approximate_data_size")
        .cloned()
        .unwrap_or_default();
    // A wiped follower: it catches up from the newest snapshot, streamed.
    ensemble.servers[follower].kill();
    ensemble.servers[follower].wipe();
    let restarted = Instant::now();
    ensemble.servers[follower].restart();
    let (leader_server, follower_server) = (&ensemble.servers[leader], &ensemble.servers[follower]);
    wait(Duration::from_secs(600), "catch-up", || {
        same_state(leader_server, follower_server)
    });
    let catch_up = restarted.elapsed();
    // Recovery: kill -9 a server with the whole state and restart it.
    ensemble.servers[follower].kill();
    let restarted = Instant::now();
    ensemble.servers[follower].restart();
    let follower_server = &ensemble.servers[follower];
    wait(Duration::from_secs(600), "recovery", || {
        serving(follower_server)
    });
    let recovery = restarted.elapsed();
    stop.store(true, Ordering::Relaxed);
    let samples = probing.join().expect("probe");
    let leader_log = ensemble.servers[leader].log_text();
    let snapshots = windows(&leader_log, "written in");
    let streams = windows(&leader_log, "sent snapshot");
    let within = |ws: &[(f64, f64, f64)]| {
        p999(
            samples
                .iter()
                .filter(|(t, _)| ws.iter().any(|(a, b, _)| t >= a && t <= b))
                .map(|(_, l)| *l)
                .collect(),
        )
    };
    let all = p999(samples.iter().map(|(_, l)| *l).collect());
    let last_snapshot = snapshots.last().map(|w| w.2);
    let stream_time = streams.last().map(|w| w.2);
    let stream_line = leader_log
        .lines()
        .rev()
        .find(|l| l.contains("sent snapshot"))
        .unwrap_or_default()
        .to_owned();
    let recovery_line = ensemble.servers[follower]
        .log_text()
        .lines()
        .rev()
        .find(|l| l.contains("restored"))
        .unwrap_or_default()
        .to_owned();
    println!(
        "big state: {NODES} znodes of {DATA} B, loaded in {load:?} (approximate data size {state})\n\
         snapshots written on the leader: {} (the last, of the full state: {last_snapshot:?} s)\n\
         wiped follower: catch-up (restart to same zxid and digest) {catch_up:?}; \
         snapshot streamed in {stream_time:?} s: {stream_line}\n\
         recovery after kill -9 (restart to serving) {recovery:?}: {recovery_line}\n\
         probe writes: {} samples, p99.9 overall {all:?} s, while a snapshot was written \
         {:?} s, while one was streamed {:?} s",
        snapshots.len(),
        samples.len(),
        within(&snapshots),
        within(&streams),
    );
    assert!(
        !streams.is_empty(),
        "the wiped follower got no streamed snapshot"
    );
}

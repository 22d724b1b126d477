//! SIGTERM ends the process in bounded time in every phase: restoring a large snapshot,
//! replaying a long log, writing a snapshot, and waiting for an election that cannot be
//! won. (A server once kept replaying for more than ten minutes after "shutting down".)
//! Each test also checks that the graceful path did the work, not the 20 s backstop
//! that exits whatever the phase.

use std::time::Duration;

use paddock_client::{Client, ConnectOptions, CreateMode};

use crate::support::{eventually, free_ports, mntr, paddock, paddock_starting, Server};

/// Generous: the graceful path takes well under a second, the backstop 20 s.
const EXIT_LIMIT: Duration = Duration::from_secs(60);
/// Nodes per multi, so that a large state takes few log entries to build.
const BATCH: usize = 1_000;
/// Enough that restoring or replaying them takes seconds in a debug build.
const NODES: usize = 200_000;
const BACKSTOP: &str = "shutdown did not finish";

/// Creates `/big/<round>-<i>` for `count` nodes, in multis of [`BATCH`], a few in flight.
fn fill(server: &Server, round: usize, count: usize) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let options = ConnectOptions::with_session_timeout(Duration::from_secs(30));
        let client = tokio::time::timeout(
            Duration::from_secs(30),
            Client::connect(&server.hosts(), options),
        )
        .await
        .expect("connected in time")
        .expect("connect");
        match client.create("/big", b"", CreateMode::Persistent).await {
            Ok(_) | Err(paddock_client::Error::Keeper(paddock_client::ErrorCode::NodeExists)) => {}
            Err(e) => panic!("create /big: {e}"),
        }
        let batches: Vec<_> = (0..count / BATCH)
            .map(|b| {
                (0..BATCH).fold(client.transaction(), |txn, i| {
                    txn.create(
                        &format!("/big/{round}-{}", b * BATCH + i),
                        &[b'x'; 100],
                        CreateMode::Persistent,
                    )
                })
            })
            .collect();
        let commits = futures::stream::iter(batches.into_iter().map(|txn| txn.commit()));
        let results: Vec<_> = tokio::time::timeout(
            Duration::from_secs(600),
            futures::StreamExt::collect::<Vec<_>>(futures::StreamExt::buffer_unordered(commits, 4)),
        )
        .await
        .expect("filled within 10 minutes");
        for result in results {
            result.expect("multi");
        }
        client.close().await.expect("close");
    });
}

/// The number of children of /big, from a fresh session.
fn count_big(server: &Server) -> usize {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let options = ConnectOptions::with_session_timeout(Duration::from_secs(30));
        let client = Client::connect(&server.hosts(), options)
            .await
            .expect("connect");
        // The list of names itself would pass the client's frame limit.
        let stat = client.exists("/big").await.expect("exists").expect("/big");
        let n = usize::try_from(stat.num_children).expect("a count");
        client.close().await.expect("close");
        n
    })
}

/// SIGTERM, then the process must be gone within [`EXIT_LIMIT`], without the backstop.
fn term_and_expect_exit(server: &mut Server, phase: &str) {
    server.signal("TERM");
    let status = server.wait_exit(EXIT_LIMIT);
    let log = server.log_text();
    assert!(
        status.is_some(),
        "paddock still runs {EXIT_LIMIT:?} after SIGTERM during {phase}:\n{log}"
    );
    assert!(
        !log.contains(BACKSTOP),
        "during {phase} only the backstop ended the process:\n{log}"
    );
}

#[test]
fn sigterm_ends_snapshot_writing_and_restore_in_bounded_time() {
    // Snapshots are due every 50 to 100 entries, so one is written now and then while
    // the state grows.
    let mut server = paddock("snapCount=100");
    fill(&server, 0, NODES);

    // Writing a snapshot: more writes until one starts, then SIGTERM at once.
    let mark = server.log_len();
    let mut round = 1;
    while !server.wait_for_log("writing a snapshot", mark, Duration::ZERO) {
        assert!(round < 50, "no snapshot started:\n{}", server.log_text());
        fill(&server, round, 10 * BATCH);
        round += 1;
    }
    term_and_expect_exit(&mut server, "a snapshot");

    // Restoring: SIGTERM once the restore has begun.
    let mark = server.log_len();
    server.start_again();
    assert!(
        server.wait_for_log("restoring the state", mark, EXIT_LIMIT),
        "no restore:\n{}",
        server.log_text()
    );
    term_and_expect_exit(&mut server, "start-up");
    let log = server.log_text();
    assert!(
        log[mark..].contains("shutting down during start-up"),
        "the restore was over before the signal; make the state larger:\n{log}"
    );

    // Nothing acknowledged was lost to either interruption.
    server.restart();
    assert_eq!(count_big(&server), NODES + (round - 1) * 10 * BATCH);
}

#[test]
fn sigterm_ends_log_replay_in_bounded_time() {
    // No snapshot (by count or by size) while the state is built: all of it is in the
    // log, which a restart replays.
    let mut server = paddock("snapCount=100000000");
    fill(&server, 0, NODES);
    term_and_expect_exit(&mut server, "serving");

    let mark = server.log_len();
    server.start_again();
    assert!(
        server.wait_for_log("serving clients", mark, EXIT_LIMIT),
        "did not start:\n{}",
        server.log_text()
    );
    term_and_expect_exit(&mut server, "replay");
    let log = server.log_text();
    assert!(
        log[mark..].contains("shutting down while replaying the log"),
        "the replay was over before the signal; make the log longer:\n{log}"
    );
    // It stopped between two slices of the replay rather than after the whole log.
    assert!(
        log[mark..].contains("stopped before the replay finished"),
        "the shutdown waited for the replay:\n{log}"
    );
    server.restart();
    assert_eq!(count_big(&server), NODES);
}

#[test]
fn sigterm_ends_an_election_without_quorum_in_bounded_time() {
    // Server 1 of three, the other two never started: it waits for a quorum for ever
    // (a new server does not even campaign until it hears that its peers are new too).
    let ports = free_ports(7);
    let servers: String = (0..3)
        .map(|i| {
            format!(
                "server.{}=127.0.0.1:{}:{}\n",
                i + 1,
                ports[2 * i],
                ports[2 * i + 1]
            )
        })
        .collect();
    let mut server = paddock_starting(
        ports[6],
        &format!("initLimit=10\nsyncLimit=5\n{servers}"),
        Some(1),
    );
    let waiting = eventually(EXIT_LIMIT, || {
        let looking = mntr(&server).get("zk_server_state").map(String::as_str) == Some("looking")
            || server.log_text().contains("It votes once a majority");
        (looking || !server.is_running()).then_some(looking)
    });
    if waiting != Some(true) {
        panic!("never waited for a quorum:\n{}", server.log_text());
    }
    term_and_expect_exit(&mut server, "an election");
}

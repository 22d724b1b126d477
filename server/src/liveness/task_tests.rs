//! The liveness task itself (not just its core), on tokio's paused clock: the task's
//! windows are stepped through without waiting, and what it does to the rest of the
//! server (the serving flag, the connections) is observed.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::conns::{ConnRegistry, Outbound};
use crate::consensus::{self, Status};
use crate::monotonic::AtomicInstant;
use crate::outbox;
use crate::wait::WaitRegistry;

const TICK_TIME: Duration = Duration::from_millis(2000);
const LEADER: u64 = 2;

struct Follower {
    health: Arc<Health>,
    liveness: Liveness,
    client: outbox::OutboxRx,
    shutdown: CancellationToken,
}

/// A follower of server 2 with one client connected, its liveness task running.
fn follower() -> Follower {
    let status = Arc::new(Status::default());
    status.set_follower_of(LEADER);
    let health = Arc::new(Health::new(status, false, 0));
    let conns = Arc::new(ConnRegistry::default());
    let (tx, client) = outbox::channel(1 << 20);
    conns.attach(7, 0x70, tx, Arc::new(AtomicInstant::default()));
    let (proposer, _proposals) = consensus::channel().expect("inbox");
    let writes = Arc::new(Writes::new(
        1,
        proposer,
        Arc::new(WaitRegistry::new(1)),
        100,
    ));
    let (liveness, events) = channel();
    let shutdown = CancellationToken::new();
    let task = LivenessTask {
        tick_time: TICK_TIME,
        standalone: false,
        health: health.clone(),
        conns,
        replicated: Arc::new(Replicated::new()),
        writes,
        transport: None,
        shutdown: shutdown.clone(),
    };
    tokio::spawn(run(task, events));
    Follower {
        health,
        liveness,
        client,
        shutdown,
    }
}

/// Lets the task run for `d` of virtual time. The test starts off the task's tick
/// times (see `follower`), so the task's tick at an instant is never raced by the
/// test's check at the same instant.
async fn pass(d: Duration) {
    tokio::time::sleep(d).await;
}

/// How far the test runs out of phase with the task's ticks.
const OFF_PHASE: Duration = Duration::from_millis(50);

#[tokio::test(start_paused = true)]
async fn a_follower_serves_while_the_leader_answers_and_stops_when_it_does_not() {
    let mut f = follower();
    pass(TICK_TIME + OFF_PHASE).await;
    assert!(!f.health.is_serving(), "no answer yet: not serving");

    // The leader answers the reports sent so far (the task numbers them from 1, one
    // every tickTime/10).
    for seq in 1..=10 {
        f.liveness.send(LivenessEvent::Ack {
            from: LEADER,
            seq,
            commit: 0,
        });
    }
    pass(TICK_TIME / 10).await;
    assert!(f.health.is_serving(), "answered within the window: serving");
    assert!(f.client.try_recv().is_none(), "its client stays connected");

    // Within the window (0.8 tickTime) after the last answered report it keeps serving.
    pass(TICK_TIME / 2).await;
    assert!(f.health.is_serving());

    // Past it, the follower stops serving and closes its client's connection.
    pass(TICK_TIME).await;
    assert!(
        !f.health.is_serving(),
        "unanswered past the window: not serving"
    );
    assert!(matches!(f.client.try_recv(), Some(Outbound::Close)));
    f.shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn an_answer_from_a_server_that_is_not_the_leader_does_not_count() {
    let f = follower();
    pass(TICK_TIME + OFF_PHASE).await;
    for seq in 1..=10 {
        f.liveness.send(LivenessEvent::Ack {
            from: 3,
            seq,
            commit: 0,
        });
    }
    pass(TICK_TIME / 10).await;
    assert!(!f.health.is_serving());
    f.shutdown.cancel();
}

//! Scenario 2: pub/sub with watches. A group is one publisher connection and
//! `subs_per_path` subscriber connections over the publisher's paths. Each round, the
//! subscribers leave an exists-watch on `<path>/n<round>` for every path, then the
//! publisher creates those ephemeral nodes, noting the (intended) send time of each
//! create. Only the publishes are the scenario's requests (its TPS); the subscribers'
//! exists and getData calls are timed as reads of their own.
//!
//! A subscriber takes each event as the client library received it off the socket
//! ([`WatchedEvent::received_at`]), in arrival order, so eventStat is the create's
//! send to the event's arrival and owes nothing to the other paths' events or reads.
//! With --get-after-notify it reads the node as soon as the event is in (reads run
//! concurrently), and dataStat is the create's send to the read's return. An event
//! that does not arrive within --event-timeout is missed (an eventStat failure).
//!
//! Rounds are kept in step with two barriers, so a watch is always armed before the
//! create it waits for; the publisher alone decides whether another round starts, so
//! no party is left waiting at a barrier when the run stops.
//!
//! [`WatchedEvent::received_at`]: paddock_client::WatchedEvent::received_at

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use paddock_client::Client;
use paddock_wire::{CreateMode, EventType};
use tokio::sync::Barrier;

use super::{ensure, timed, Ctx};
use crate::stats::Op;

/// What a group's publisher and subscribers share.
pub struct Group {
    barrier: Barrier,
    /// Set by the publisher before each round: whether it runs.
    go: AtomicBool,
    /// Per path, when the current round's create was (meant to be) sent, µs after
    /// `epoch`.
    sent_at: Vec<AtomicU64>,
    epoch: Instant,
    paths: Vec<String>,
    /// The group's index, which is also its publisher's pacing slot.
    index: usize,
}

impl Group {
    pub fn new(ctx: &Ctx, group: usize) -> Arc<Group> {
        let paths: Vec<String> = (0..ctx.plan.paths_per_conn)
            .map(|j| ctx.path(&format!("g{group}-{j}")))
            .collect();
        Arc::new(Group {
            barrier: Barrier::new(ctx.plan.subs_per_path + 1),
            go: AtomicBool::new(true),
            sent_at: paths.iter().map(|_| AtomicU64::new(0)).collect(),
            // Before any send: every send time is after it.
            epoch: ctx.load_start.min(Instant::now()),
            paths,
            index: group,
        })
    }

    fn mark_sent(&self, path: usize, at: Instant) {
        let micros =
            u64::try_from(at.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX);
        self.sent_at[path].store(micros, Ordering::Release);
    }

    fn sent(&self, path: usize) -> Instant {
        self.epoch + Duration::from_micros(self.sent_at[path].load(Ordering::Acquire))
    }
}

pub async fn publisher(ctx: Ctx, client: Client, group: Arc<Group>) {
    let data = ctx.data();
    for path in &group.paths {
        if let Err(e) = ensure(&client, path, b"").await {
            tracing::warn!("cannot create {path}: {e}");
        }
    }
    let mut pacer = ctx.pacer(group.index);
    let mut round = 0u64;
    loop {
        let go = !ctx.stop.is_cancelled();
        group.go.store(go, Ordering::Release);
        group.barrier.wait().await; // round start: everyone reads `go`
        if !go {
            return;
        }
        group.barrier.wait().await; // the subscribers' watches are armed
        for (j, path) in group.paths.iter().enumerate() {
            // A started round is finished, so that no subscriber waits out its events.
            let at = pacer.next().await;
            group.mark_sent(j, at);
            timed(
                &ctx.stats,
                Op::Create,
                at,
                client.create(&format!("{path}/n{round}"), &data, CreateMode::Ephemeral),
            )
            .await;
        }
        round += 1;
    }
}

pub async fn subscriber(ctx: Ctx, client: Client, group: Arc<Group>) {
    let timeout = Duration::try_from_secs_f64(ctx.plan.event_timeout).unwrap_or(Duration::MAX);
    let mut round = 0u64;
    loop {
        group.barrier.wait().await;
        if !group.go.load(Ordering::Acquire) {
            return;
        }
        let mut armed = Vec::with_capacity(group.paths.len());
        for (j, path) in group.paths.iter().enumerate() {
            let node = format!("{path}/n{round}");
            let sent = Instant::now();
            if let Some((_, watch)) =
                timed(&ctx.stats, Op::Exists, sent, client.exists_w(&node)).await
            {
                armed.push((j, node, watch));
            }
        }
        group.barrier.wait().await;
        take_events(&ctx, &client, &group, armed, timeout).await;
        round += 1;
    }
}

/// Records each armed watch's event as it arrives, and with --get-after-notify reads
/// the node then; returns when every event is in (or missed) and every read is back.
async fn take_events(
    ctx: &Ctx,
    client: &Client,
    group: &Group,
    armed: Vec<(usize, String, paddock_client::WatchFuture)>,
    timeout: Duration,
) {
    let mut events: FuturesUnordered<_> = armed
        .into_iter()
        .map(
            |(j, node, watch)| async move { (j, node, tokio::time::timeout(timeout, watch).await) },
        )
        .collect();
    let mut reads = FuturesUnordered::new();
    loop {
        tokio::select! {
            Some((j, node, outcome)) = events.next() => match outcome {
                Ok(Ok(event)) if event.event_type == EventType::NodeCreated => {
                    let sent = group.sent(j);
                    ctx.stats
                        .record(Op::Event, event.received_at.saturating_duration_since(sent));
                    if ctx.plan.get_after_notify {
                        reads.push(async move {
                            let read = Instant::now();
                            (sent, timed(&ctx.stats, Op::GetData, read, client.get_data(&node)).await)
                        });
                    }
                }
                Ok(other) => {
                    tracing::debug!("unexpected watch outcome on {node}: {other:?}");
                    ctx.stats.fail(Op::Event);
                }
                Err(_) => {
                    tracing::debug!("no event for {node} within {timeout:?}");
                    ctx.stats.fail(Op::Event);
                }
            },
            Some((sent, read)) = reads.next() => match read {
                Some(_) => ctx.stats.record(Op::Data, sent.elapsed()),
                None => ctx.stats.fail(Op::Data),
            },
            else => return,
        }
    }
}

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

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use paddock_client::{Client, WatchedEvent};
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
        let read = |node: String| {
            let client = &client;
            async move { client.get_data(&node).await.map(drop) }
        };
        take_events(&ctx, &group, armed, timeout, read).await;
        round += 1;
    }
}

/// Records each armed watch's event as it arrives, and with --get-after-notify `read`s
/// the node then; returns when every event is in (or missed) and every read is back.
async fn take_events<Watch, Read, ReadFuture>(
    ctx: &Ctx,
    group: &Group,
    armed: Vec<(usize, String, Watch)>,
    timeout: Duration,
    read: Read,
) where
    Watch: Future<Output = Result<WatchedEvent, paddock_client::Error>>,
    Read: Fn(String) -> ReadFuture,
    ReadFuture: Future<Output = Result<(), paddock_client::Error>>,
{
    let read = &read;
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
                            let start = Instant::now();
                            (sent, timed(&ctx.stats, Op::GetData, start, read(node)).await)
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
                Some(()) => ctx.stats.record(Op::Data, sent.elapsed()),
                None => ctx.stats.fail(Op::Data),
            },
            else => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use clap::Parser;
    use paddock_wire::KeeperState;
    use parking_lot::Mutex;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::plan::Plan;
    use crate::stats::Stats;

    /// Three events arriving 10, 20 and 30 ms after their creates, each read taking
    /// 100 ms: eventStat is the arrival, whatever the reads cost, and each read is sent
    /// as its event arrives (not after the previous path's read).
    #[tokio::test(start_paused = true)]
    async fn events_are_timed_on_arrival_and_read_at_once() {
        let plan = Plan::parse_from([
            "paddock-loadgen",
            "--scenario",
            "pubsub",
            "--get-after-notify",
            "--paths-per-conn",
            "3",
            "--subs-per-path",
            "1",
        ]);
        let ctx = Ctx {
            plan: Arc::new(plan),
            stats: Arc::new(Stats::default()),
            stop: CancellationToken::new(),
            base: "/t".into(),
            load_start: Instant::now(),
        };
        let group = Group::new(&ctx, 0);
        let sent = Instant::now();
        for j in 0..3 {
            group.mark_sent(j, sent);
        }
        let ms = Duration::from_millis;
        let armed: Vec<_> = (0..3u64)
            .map(|j| {
                let after = ms(10 * (j + 1));
                let event = WatchedEvent {
                    event_type: EventType::NodeCreated,
                    state: KeeperState::SyncConnected,
                    path: format!("/t/g0-{j}/n0"),
                    zxid: 1,
                    received_at: sent + after,
                };
                let watch = async move {
                    tokio::time::sleep(after).await;
                    Ok(event)
                };
                (j as usize, format!("/t/g0-{j}/n0"), watch)
            })
            .collect();
        let t0 = tokio::time::Instant::now();
        let reads_sent = Mutex::new(Vec::new());
        take_events(&ctx, &group, armed, ms(10_000), |_node| {
            reads_sent.lock().push(t0.elapsed());
            async {
                tokio::time::sleep(ms(100)).await;
                Ok(())
            }
        })
        .await;

        assert_eq!(*reads_sent.lock(), [ms(10), ms(20), ms(30)]);
        let taken = ctx.stats.take(0.0, 1.0);
        let events = taken.hist(Op::Event);
        assert_eq!(events.len(), 3);
        // 3 significant figures: 10 ms and 30 ms within 0.1 %.
        assert!((9_990..=10_010).contains(&events.min()), "{}", events.min());
        assert!(
            (29_970..=30_030).contains(&events.max()),
            "{}",
            events.max()
        );
        assert_eq!(taken.hist(Op::GetData).len(), 3);
        assert_eq!(taken.hist(Op::Data).len(), 3);
        assert_eq!(taken.failures(Op::Event), 0);
    }
}

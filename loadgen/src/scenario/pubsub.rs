//! Scenario 2: pub/sub with watches. A group is one publisher connection and
//! `subs_per_path` subscriber connections over the publisher's paths. Each round, the
//! subscribers leave an exists-watch on `<path>/n<round>` for every path, then the
//! publisher creates those ephemeral nodes, noting the time just before each create.
//! A subscriber records when each event arrives (eventStat) and, with
//! --get-after-notify, when the data read after it returns (dataStat). An event that
//! does not arrive within --event-timeout is missed.
//!
//! Rounds are kept in step with two barriers, so a watch is always armed before the
//! create it waits for; the publisher alone decides whether another round starts, so
//! no party is left waiting at a barrier when the run stops.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_client::Client;
use paddock_wire::{CreateMode, EventType};
use tokio::sync::Barrier;

use super::{ensure, timed, Ctx};

/// What a group's publisher and subscribers share.
pub struct Group {
    barrier: Barrier,
    /// Set by the publisher before each round: whether it runs.
    go: AtomicBool,
    /// Per path, when the current round's create was sent (µs since `epoch`).
    sent_at: Vec<AtomicU64>,
    epoch: Instant,
    paths: Vec<String>,
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
            epoch: Instant::now(),
            paths,
        })
    }

    fn now_micros(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn since_sent(&self, path: usize) -> Duration {
        let sent = self.sent_at[path].load(Ordering::Acquire);
        Duration::from_micros(self.now_micros().saturating_sub(sent))
    }
}

pub async fn publisher(ctx: Ctx, client: Client, group: Arc<Group>) {
    let data = ctx.data();
    for path in &group.paths {
        if let Err(e) = ensure(&client, path, b"").await {
            tracing::warn!("cannot create {path}: {e}");
        }
    }
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
            group.sent_at[j].store(group.now_micros(), Ordering::Release);
            timed(
                &ctx.stats.requests,
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
            if let Some((_, watch)) = timed(&ctx.stats.requests, client.exists_w(&node)).await {
                armed.push((j, node, watch));
            }
        }
        group.barrier.wait().await;
        for (j, node, watch) in armed {
            match tokio::time::timeout(timeout, watch).await {
                Ok(Ok(event)) if event.event_type == EventType::NodeCreated => {
                    ctx.stats.events.record(group.since_sent(j));
                    if ctx.plan.get_after_notify
                        && timed(&ctx.stats.requests, client.get_data(&node))
                            .await
                            .is_some()
                    {
                        ctx.stats.data.record(group.since_sent(j));
                    }
                }
                Ok(other) => {
                    tracing::debug!("unexpected watch outcome on {node}: {other:?}");
                    ctx.stats.events_missed.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    tracing::debug!("no event for {node} within {timeout:?}");
                    ctx.stats.events_missed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        round += 1;
    }
}

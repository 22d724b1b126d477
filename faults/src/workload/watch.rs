//! One-shot watches: every change to a watched node fires each watch exactly once,
//! across reconnects too, and never after the client already read newer data.
//!
//! Writers (one per server) keep setting `/watch/n`. Watchers (one per server) loop:
//! `getData` with a watch (armed at the version read), then wait for the event while
//! reading the node plainly every ~100 ms on the same session. Checks per armed watch:
//! - it fires, with `NodeDataChanged` (nothing else happens to the node), unless its
//!   session ended; after the run a last write is made, so every watch still armed
//!   while its session lives must fire within a session timeout and a bit;
//! - no plain read on the same session returns a newer version before the event is
//!   delivered (ZooKeeper: a client sees the watch event before the new data);
//! - the event's zxid (when the server stamps one) is newer than the data it was armed
//!   on, and the re-read after it returns a newer version: an event without a change
//!   (a duplicate notification, or one replayed after a reconnect) fails this.

use paddock_client::{EventType, SessionState};
use tokio::task::JoinHandle;

use super::{ensure, worker_rng, Checked, Ctx};
use crate::history::{ms, History, Micros, Op, Outcome, Violation};

/// The watched node.
pub const NODE: &str = "/watch/n";

/// One armed watch and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    /// The version (and mzxid) the watch was armed on.
    pub version: i32,
    /// The node's mzxid when armed.
    pub mzxid: i64,
    /// When it was armed.
    pub at: Micros,
    /// The version the previous watch of this session was armed on, if that one fired.
    pub after_fired_at_version: Option<i32>,
    /// When it fired, the event type and the event's zxid (-1 if unstamped).
    pub fired: Option<(Micros, EventType, i64)>,
    /// A plain read that returned a newer version before the event: when, which, and
    /// whether the session had reconnected since the watch was armed.
    pub newer_read_first: Option<(Micros, i32, bool)>,
    /// The session ended before it fired (how).
    pub ended: Option<String>,
    /// The session's state when the harness stopped waiting, if it never fired.
    pub state_at_end: Option<SessionState>,
}

/// The workload.
#[derive(Clone, Default)]
pub struct Watches {
    arms: History<Arm, ()>,
    writes: History<i64, ()>,
}

impl Watches {
    /// Makes the node.
    pub async fn prepare(client: &paddock_client::Client) -> Result<(), paddock_client::Error> {
        ensure(client, NODE).await
    }

    /// A writer pinned to `server`.
    pub fn spawn_writer(&self, ctx: Ctx, server: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 6, server);
            while let Some((process, client)) = ctx.session(server).await {
                let mut n = 0i64;
                while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                    n += 1;
                    let invoke = ctx.clock.now();
                    let result = ctx
                        .bounded(client.set_data(NODE, n.to_string().as_bytes(), None))
                        .await;
                    this.writes.push(Op {
                        process,
                        invoke,
                        complete: ctx.clock.now(),
                        input: n,
                        outcome: result.map_or_else(
                            |e| crate::history::outcome_of_error(&e),
                            |_| Outcome::Ok(()),
                        ),
                    });
                    ctx.pause(rng.millis(100, 250)).await;
                }
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// A watcher pinned to `server`. After the run stops it keeps waiting up to
    /// `final_wait` for its last watch (the runner makes a last write meanwhile).
    pub fn spawn_watcher(
        &self,
        ctx: Ctx,
        server: usize,
        seed: u64,
        final_wait: std::time::Duration,
    ) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 7, server);
            'sessions: while let Some((process, client)) = ctx.session(server).await {
                let mut fired_at_version = None;
                while !client.state().is_terminal() {
                    if ctx.stop.is_cancelled() {
                        break 'sessions;
                    }
                    let Ok((_, stat, mut watch)) = ctx.bounded(client.get_data_w(NODE)).await
                    else {
                        ctx.pause(rng.millis(50, 150)).await;
                        continue;
                    };
                    let mut arm = Arm {
                        version: stat.version,
                        mzxid: stat.mzxid,
                        at: ctx.clock.now(),
                        after_fired_at_version: fired_at_version.take(),
                        fired: None,
                        newer_read_first: None,
                        ended: None,
                        state_at_end: None,
                    };
                    let mut states = client.state_watcher();
                    states.borrow_and_update();
                    let mut deadline = None;
                    loop {
                        if deadline.is_none() && ctx.stop.is_cancelled() {
                            deadline = Some(tokio::time::Instant::now() + final_wait);
                        }
                        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                            arm.state_at_end = Some(client.state());
                            break;
                        }
                        tokio::select! {
                            event = &mut watch => {
                                match event {
                                    Ok(event) => {
                                        arm.fired = Some((ctx.clock.now(), event.event_type, event.zxid));
                                        fired_at_version = Some(arm.version);
                                    }
                                    Err(err) => arm.ended = Some(err.to_string()),
                                }
                                break;
                            }
                            () = tokio::time::sleep(rng.millis(50, 150)) => {
                                let read = tokio::time::timeout(ctx.op_limit(), client.get_data(NODE)).await;
                                if let Ok(Ok((_, newer))) = read {
                                    // The event, if sent first, is already resolved.
                                    if newer.version > arm.version && arm.newer_read_first.is_none() {
                                        if let Some(event) = futures::FutureExt::now_or_never(&mut watch) {
                                            if let Ok(event) = event {
                                                arm.fired = Some((ctx.clock.now(), event.event_type, event.zxid));
                                                fired_at_version = Some(arm.version);
                                            }
                                            break;
                                        }
                                        let reconnected = states.has_changed().unwrap_or(true);
                                        arm.newer_read_first = Some((ctx.clock.now(), newer.version, reconnected));
                                    }
                                }
                            }
                        }
                    }
                    this.arms.push(Op {
                        process,
                        invoke: arm.at,
                        complete: ctx.clock.now(),
                        input: arm,
                        outcome: Outcome::Ok(()),
                    });
                }
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// Checks the watches.
    pub fn check(&self) -> Checked {
        let mut checked = check(&self.arms.snapshot());
        checked.count(&self.writes.snapshot());
        checked
    }
}

/// The checker.
pub fn check(arms: &[Op<Arm, ()>]) -> Checked {
    let mut checked = Checked::new("watches", arms);
    for op in arms {
        let arm = &op.input;
        let mut flag = |check: &'static str, at: Micros, detail: String| {
            checked.violations.push(Violation {
                check,
                at,
                detail: format!(
                    "p{} watch armed at version {} ({:.0} ms): {detail}",
                    op.process,
                    arm.version,
                    ms(arm.at)
                ),
            });
        };
        if let Some((at, version, reconnected)) = arm.newer_read_first {
            let fired = arm.fired.map_or("never".to_owned(), |(t, ..)| {
                format!("{:.0} ms later", ms(t.saturating_sub(at)))
            });
            flag(
                "watch-order",
                at,
                format!(
                    "a read returned version {version} before the event was delivered \
                     (the event came {fired}; session {})",
                    if reconnected {
                        "had reconnected since arming"
                    } else {
                        "stayed Connected throughout"
                    }
                ),
            );
        }
        match (arm.fired, &arm.ended) {
            (Some((at, event_type, zxid)), _) => {
                if event_type != EventType::NodeDataChanged {
                    flag("watch-event", at, format!("fired with {event_type:?}"));
                }
                if zxid >= 0 && zxid <= arm.mzxid {
                    flag(
                        "watch-duplicate",
                        at,
                        format!(
                            "event zxid {zxid:#x} is not newer than the data read (mzxid {:#x})",
                            arm.mzxid
                        ),
                    );
                }
            }
            (None, Some(_)) => {}
            (None, None) => flag(
                "watch-missed",
                op.complete,
                format!(
                    "never fired although the node changed after it (session {:?} when the \
                     harness stopped waiting)",
                    arm.state_at_end
                ),
            ),
        }
        if let Some(before) = arm.after_fired_at_version {
            if arm.version <= before {
                flag(
                    "watch-duplicate",
                    arm.at,
                    format!("the previous watch (version {before}) fired but no newer version was read after it"),
                );
            }
        }
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(version: i32, fired: Option<(Micros, EventType, i64)>) -> Op<Arm, ()> {
        Op {
            process: 2,
            invoke: 0,
            complete: 10,
            input: Arm {
                version,
                mzxid: 100,
                at: 0,
                after_fired_at_version: None,
                fired,
                newer_read_first: None,
                ended: None,
                state_at_end: None,
            },
            outcome: Outcome::Ok(()),
        }
    }

    #[test]
    fn fired_and_ended_watches_pass() {
        let mut ended = arm(3, None);
        ended.input.ended = Some("session expired".into());
        let mut next = arm(4, Some((20, EventType::NodeDataChanged, -1)));
        next.input.after_fired_at_version = Some(3);
        let ops = [
            arm(3, Some((5, EventType::NodeDataChanged, 101))),
            ended,
            next,
        ];
        let checked = check(&ops);
        assert!(checked.violations.is_empty(), "{:?}", checked.violations);
    }

    #[test]
    fn missed_early_read_stale_event_and_refire_fail() {
        let missed = arm(3, None);
        let mut early = arm(3, Some((5, EventType::NodeDataChanged, 101)));
        early.input.newer_read_first = Some((4, 4, false));
        let stale = arm(3, Some((5, EventType::NodeDataChanged, 100)));
        let mut refire = arm(3, Some((5, EventType::NodeDataChanged, -1)));
        refire.input.after_fired_at_version = Some(3);
        let checked = check(&[missed, early, stale, refire]);
        let kinds: Vec<&str> = checked.violations.iter().map(|v| v.check).collect();
        assert_eq!(
            kinds,
            [
                "watch-missed",
                "watch-order",
                "watch-duplicate",
                "watch-duplicate"
            ]
        );
    }
}

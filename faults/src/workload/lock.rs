//! The lock recipe ([`paddock_client::recipes::Lock`]): believed holds never overlap,
//! and fencing tokens grow with the order of acquisition.
//!
//! A client *believes* it holds the lock from the moment `acquire` returns until it
//! starts releasing, or until its session state leaves `Connected`, whichever comes
//! first: ZooKeeper's recipe guidance is that on `Disconnected` a holder must assume
//! the lock may be lost, since the quorum may expire its session meanwhile. So the
//! check is fair to the client: it asks only that the service never lets a second
//! client acquire while the first still has every reason to believe it holds.
//!
//! Checks: no two believed holds overlap in real time; sorted by grant time, fencing
//! tokens strictly increase.

use std::time::Duration;

use paddock_client::recipes::Lock as LockRecipe;
use paddock_client::{Error as ClientError, SessionState};
use tokio::task::JoinHandle;

use super::{worker_rng, Checked, Ctx};
use crate::history::{ms, History, Micros, Op, Outcome, Violation};

/// Independent locks, each contended by one worker per server: with several, a
/// fault is likely to find some lock held by a client of the server it cuts off.
pub const LOCKS: usize = 3;

/// How long a worker waits for a lock before giving up (and removing its node).
const ACQUIRE_LIMIT: Duration = Duration::from_secs(10);

/// The path of lock `i`.
pub fn lock_path(i: usize) -> String {
    format!("/lock/l{i}")
}

/// One believed hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// Which lock.
    pub lock: usize,
    /// The grant's fencing token.
    pub token: i64,
    /// When `acquire` returned.
    pub start: Micros,
    /// When the holder stopped believing (release began or the session left Connected).
    pub end: Micros,
    /// Why the belief ended.
    pub why: &'static str,
}

/// The workload.
#[derive(Clone, Default)]
pub struct Locks {
    history: History<(), Hold>,
}

impl Locks {
    /// One worker pinned to `server`, contending for lock `lock`. A third of its holds
    /// are short; the rest last seconds, long enough to straddle a session expiry.
    pub fn spawn(&self, ctx: Ctx, server: usize, lock: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 4 + 100 * lock as u64, server);
            while let Some((process, client)) = ctx.session(server).await {
                let recipe =
                    LockRecipe::new(&client, &lock_path(lock)).identifier(&format!("p{process}"));
                while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                    let invoke = ctx.clock.now();
                    let acquired = tokio::time::timeout(
                        ACQUIRE_LIMIT + ctx.op_limit(),
                        recipe.acquire_timeout(ACQUIRE_LIMIT),
                    )
                    .await
                    .unwrap_or(Err(ClientError::Closed));
                    let guard = match acquired {
                        Ok(guard) => guard,
                        Err(err) => {
                            let outcome = match err {
                                // The recipe gave up and removed its node.
                                ClientError::Timeout => Outcome::Fail("timed out".into()),
                                ClientError::Closed => Outcome::Info("no answer".into()),
                                other => Outcome::Info(other.to_string()),
                            };
                            this.history.push(Op {
                                process,
                                invoke,
                                complete: ctx.clock.now(),
                                input: (),
                                outcome,
                            });
                            ctx.pause(rng.millis(50, 150)).await;
                            continue;
                        }
                    };
                    let start = ctx.clock.now();
                    let mut states = client.state_watcher();
                    let connected = *states.borrow_and_update() == SessionState::Connected;
                    let hold = if rng.below(10) < 3 {
                        rng.millis(100, 500)
                    } else {
                        rng.millis(4_000, 12_000)
                    };
                    let why = if connected {
                        tokio::select! {
                            () = tokio::time::sleep(hold) => "released",
                            _ = states.wait_for(|s| *s != SessionState::Connected) => "session left Connected",
                            () = ctx.stop.cancelled() => "run stopped",
                        }
                    } else {
                        "not Connected when granted"
                    };
                    let end = if connected { ctx.clock.now() } else { start };
                    this.history.push(Op {
                        process,
                        invoke,
                        complete: start,
                        input: (),
                        outcome: Outcome::Ok(Hold {
                            lock,
                            token: guard.fencing_token(),
                            start,
                            end,
                            why,
                        }),
                    });
                    // Best effort: an unreleased node goes with the session.
                    let _ = ctx.bounded(guard.release()).await;
                    ctx.pause(rng.millis(20, 100)).await;
                }
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// Checks the holds.
    pub fn check(&self) -> Checked {
        check(&self.history.snapshot())
    }
}

/// The checker.
pub fn check(ops: &[Op<(), Hold>]) -> Checked {
    let mut holds: Vec<(u64, Hold)> = ops
        .iter()
        .filter_map(|op| match op.outcome {
            Outcome::Ok(hold) => Some((op.process, hold)),
            _ => None,
        })
        .collect();
    holds.sort_by_key(|(_, h)| (h.lock, h.start, h.token));
    let mut checked = Checked::new("lock", ops);
    for (i, (p, a)) in holds.iter().enumerate() {
        for (q, b) in holds[i + 1..]
            .iter()
            .take_while(|(_, b)| b.lock == a.lock && b.start < a.end)
        {
            if b.start == b.end {
                continue;
            }
            checked.violations.push(Violation {
                check: "lock-overlap",
                at: b.start,
                detail: format!(
                    "lock {}: p{p} believed it held (token {:#x}, {:.0}..{:.0} ms, ended: {}) while p{q} \
                     was granted (token {:#x}, {:.0}..{:.0} ms): overlap {:.0} ms",
                    a.lock,
                    a.token,
                    ms(a.start),
                    ms(a.end),
                    a.why,
                    b.token,
                    ms(b.start),
                    ms(b.end),
                    ms(a.end.min(b.end) - b.start)
                ),
            });
        }
    }
    for pair in holds.windows(2) {
        let ((p, a), (q, b)) = (&pair[0], &pair[1]);
        if a.lock == b.lock && b.token <= a.token {
            checked.violations.push(Violation {
                check: "lock-token",
                at: b.start,
                detail: format!(
                    "p{q} was granted token {:#x} at {:.0} ms after p{p} got {:#x} at {:.0} ms",
                    b.token,
                    ms(b.start),
                    a.token,
                    ms(a.start)
                ),
            });
        }
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(process: u64, token: i64, start: Micros, end: Micros) -> Op<(), Hold> {
        on(0, process, token, start, end)
    }

    fn on(lock: usize, process: u64, token: i64, start: Micros, end: Micros) -> Op<(), Hold> {
        Op {
            process,
            invoke: start,
            complete: start,
            input: (),
            outcome: Outcome::Ok(Hold {
                lock,
                token,
                start,
                end,
                why: "released",
            }),
        }
    }

    #[test]
    fn back_to_back_holds_pass() {
        let ops = [
            hold(1, 10, 0, 100),
            hold(2, 11, 100, 200),
            hold(3, 12, 300, 300),
            hold(1, 15, 400, 500),
        ];
        let checked = check(&ops);
        assert!(checked.violations.is_empty(), "{:?}", checked.violations);
        assert_eq!(checked.tally.acked, 4);
    }

    #[test]
    fn overlapping_holds_fail() {
        let ops = [hold(1, 10, 0, 10_000), hold(2, 11, 5_000, 6_000)];
        let checked = check(&ops);
        assert_eq!(checked.violations.len(), 1, "{:?}", checked.violations);
        assert_eq!(checked.violations[0].check, "lock-overlap");
    }

    #[test]
    fn different_locks_may_be_held_at_once() {
        let ops = [
            on(0, 1, 10, 0, 10_000),
            on(1, 2, 11, 5_000, 6_000),
            on(1, 2, 12, 7_000, 8_000),
        ];
        let checked = check(&ops);
        assert!(checked.violations.is_empty(), "{:?}", checked.violations);
    }

    #[test]
    fn tokens_going_backwards_or_repeating_fail() {
        let ops = [
            hold(1, 10, 0, 100),
            hold(2, 9, 200, 300),
            hold(3, 9, 400, 500),
        ];
        let checked = check(&ops);
        assert_eq!(checked.violations.len(), 2, "{:?}", checked.violations);
        assert!(checked.violations.iter().all(|v| v.check == "lock-token"));
    }
}

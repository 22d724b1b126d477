//! Per-session order: the writes a session had executed are a prefix of those it sent.
//!
//! Each worker creates a batch node `/order/p<process>b<n>`, then streams `BATCH`
//! creates `…/n000`, `…/n001`, … on its session, one every `SPACING`, without waiting
//! for replies (so a fault or a leader change can fall in the middle of a batch). ZooKeeper applies one session's requests in the order
//! sent, and a request it cannot apply ends the connection (the client then fails
//! everything still pending), so the children that exist afterwards must be
//! `{n000..n<k>}` for some k: no holes.
//!
//! One caveat belongs to this client, not the server: a request that the session task
//! had not yet taken off its channel when the connection broke is sent after the
//! reconnect, so a batch that saw its session state change can legitimately have a
//! hole. Such batches ("disturbed") are reported as notes; holes in batches whose
//! session stayed Connected throughout are violations. Acknowledged creates must exist
//! and definitely failed ones must not, in every batch.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use paddock_client::{Client, CreateMode, Error as ClientError};
use tokio::task::JoinHandle;

use super::{worker_rng, Checked, Ctx};
use crate::history::{outcome_of_error, History, Op, Outcome, Violation};

/// Creates per batch.
pub const BATCH: usize = 60;

/// Time between two sends of a batch: a batch spans 3 s, longer than a leader election,
/// so one can straddle a lost proposal and the new leader's first commits.
const SPACING: std::time::Duration = std::time::Duration::from_millis(50);

/// One pipelined batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The batch node; its children are the creates.
    pub parent: String,
    /// The session state changed while the batch was out.
    pub disturbed: bool,
    /// Outcome of create `j`, in sending order.
    pub outcomes: Vec<Outcome<()>>,
}

/// The workload.
#[derive(Clone, Default)]
pub struct Order {
    history: History<Batch, ()>,
}

type Pending<'a> = Pin<Box<dyn Future<Output = Result<String, ClientError>> + Send + 'a>>;

/// Polls every unfinished future in index order (a future's first poll hands its request
/// to the session); `done[i]` is filled as future `i` completes. `once`: a single pass,
/// else until all are done.
async fn in_order<'a>(
    futures: &mut [Pending<'a>],
    done: &mut [Option<Result<String, ClientError>>],
    once: bool,
) {
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, fut) in done.iter_mut().zip(futures.iter_mut()) {
            if slot.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(result) => *slot = Some(result),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending && !once {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
}

impl Order {
    /// One worker pinned to `server`.
    pub fn spawn(&self, ctx: Ctx, server: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 3, server);
            while let Some((process, client)) = ctx.session(server).await {
                let mut n = 0u64;
                while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                    n += 1;
                    let parent = format!("/order/p{process}b{n}");
                    if ctx
                        .bounded(client.create(&parent, b"", CreateMode::Persistent))
                        .await
                        .is_ok()
                    {
                        this.batch(&ctx, &client, process, parent).await;
                    }
                    ctx.pause(rng.millis(30, 120)).await;
                }
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    async fn batch(&self, ctx: &Ctx, client: &Client, process: u64, parent: String) {
        let mut states = client.state_watcher();
        states.borrow_and_update();
        let mut futures: Vec<Pending<'_>> = Vec::with_capacity(BATCH);
        let mut done: Vec<Option<Result<String, ClientError>>> = vec![None; BATCH];
        let invoke = ctx.clock.now();
        for j in 0..BATCH {
            let path = format!("{parent}/n{j:03}");
            futures.push(Box::pin(async move {
                client.create(&path, b"", CreateMode::Persistent).await
            }));
            in_order(&mut futures, &mut done[..=j], true).await;
            tokio::time::sleep(SPACING).await;
        }
        // Whatever has not completed by the limit has an unknown outcome.
        let _ =
            tokio::time::timeout(ctx.op_limit(), in_order(&mut futures, &mut done, false)).await;
        let disturbed = states.has_changed().unwrap_or(true);
        let outcomes = done
            .into_iter()
            .map(|result| match result {
                Some(Ok(_)) => Outcome::Ok(()),
                Some(Err(err)) => outcome_of_error(&err),
                None => Outcome::Info("timed out".into()),
            })
            .collect();
        self.history.push(Op {
            process,
            invoke,
            complete: ctx.clock.now(),
            input: Batch {
                parent,
                disturbed,
                outcomes,
            },
            outcome: Outcome::Ok(()),
        });
    }

    /// The batch nodes to list after the run.
    pub fn parents(&self) -> Vec<String> {
        self.history
            .snapshot()
            .into_iter()
            .map(|op| op.input.parent)
            .collect()
    }

    /// Checks against the children found under each batch node.
    pub fn check(&self, executed: &HashMap<String, Vec<String>>) -> Checked {
        check(&self.history.snapshot(), executed)
    }
}

/// The checker.
pub fn check(batches: &[Op<Batch, ()>], executed: &HashMap<String, Vec<String>>) -> Checked {
    let mut checked = Checked::new::<(), ()>("session-order", &[]);
    let mut disturbed_holes = 0;
    for op in batches {
        let batch = &op.input;
        let creates: Vec<Op<(), ()>> = batch
            .outcomes
            .iter()
            .map(|o| Op {
                process: op.process,
                invoke: op.invoke,
                complete: op.complete,
                input: (),
                outcome: o.clone(),
            })
            .collect();
        checked.count(&creates);
        let children = executed.get(&batch.parent).map_or(&[][..], Vec::as_slice);
        let present: Vec<usize> = children
            .iter()
            .filter_map(|c| c.strip_prefix('n').and_then(|n| n.parse().ok()))
            .collect();
        let mut flag = |detail: String| {
            checked.violations.push(Violation {
                check: "session-order",
                at: op.invoke,
                detail: format!("p{} {}: {detail}", op.process, batch.parent),
            });
        };
        for (j, outcome) in batch.outcomes.iter().enumerate() {
            match outcome {
                Outcome::Ok(()) if !present.contains(&j) => {
                    flag(format!("acknowledged create n{j:03} is missing"))
                }
                Outcome::Fail(why) if present.contains(&j) => {
                    flag(format!("create n{j:03} failed ({why}) but exists"))
                }
                _ => {}
            }
        }
        let Some(&last) = present.iter().max() else {
            continue;
        };
        let holes: Vec<usize> = (0..last).filter(|j| !present.contains(j)).collect();
        if holes.is_empty() {
            continue;
        }
        if batch.disturbed {
            disturbed_holes += 1;
            continue;
        }
        let mut replies: Vec<(String, usize)> = Vec::new();
        for &j in &holes {
            let reply = match batch.outcomes.get(j) {
                Some(Outcome::Info(why) | Outcome::Fail(why)) => why.clone(),
                Some(Outcome::Ok(())) => "ok".to_owned(),
                None => "not sent".to_owned(),
            };
            match replies.iter_mut().find(|(r, _)| *r == reply) {
                Some((_, n)) => *n += 1,
                None => replies.push((reply, 1)),
            }
        }
        let replies: Vec<String> = replies.iter().map(|(r, n)| format!("{r} x{n}")).collect();
        flag(format!(
            "executed n{last:03} but skipped {} earlier create(s) (first n{:03}) on a session \
             that stayed Connected; their replies: {}",
            holes.len(),
            holes[0],
            replies.join(", ")
        ));
    }
    if disturbed_holes > 0 {
        checked.notes.push(format!(
            "{disturbed_holes} batch(es) with holes whose session reconnected mid-batch \
             (the client resends what it had not yet taken; not counted)"
        ));
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(disturbed: bool, outcomes: Vec<Outcome<()>>) -> Op<Batch, ()> {
        Op {
            process: 7,
            invoke: 0,
            complete: 1,
            input: Batch {
                parent: "/order/p7b1".into(),
                disturbed,
                outcomes,
            },
            outcome: Outcome::Ok(()),
        }
    }

    fn executed(names: &[&str]) -> HashMap<String, Vec<String>> {
        HashMap::from([(
            "/order/p7b1".to_owned(),
            names.iter().map(|n| (*n).to_owned()).collect(),
        )])
    }

    fn info() -> Outcome<()> {
        Outcome::Info("ConnectionLoss".into())
    }

    #[test]
    fn a_prefix_passes() {
        let ops = [batch(false, vec![Outcome::Ok(()), info(), info()])];
        let checked = check(&ops, &executed(&["n000", "n001"]));
        assert!(checked.violations.is_empty(), "{:?}", checked.violations);
        assert_eq!(checked.tally.ops, 3);
        assert_eq!(checked.tally.acked, 1);
    }

    #[test]
    fn a_hole_on_a_steady_session_fails() {
        let ops = [batch(false, vec![Outcome::Ok(()), info(), Outcome::Ok(())])];
        let checked = check(&ops, &executed(&["n000", "n002"]));
        assert_eq!(checked.violations.len(), 1, "{:?}", checked.violations);
        assert!(checked.violations[0].detail.contains("skipped 1 earlier"));
    }

    #[test]
    fn a_hole_in_a_disturbed_batch_is_a_note() {
        let ops = [batch(true, vec![info(), Outcome::Ok(())])];
        let checked = check(&ops, &executed(&["n001"]));
        assert!(checked.violations.is_empty());
        assert_eq!(checked.notes.len(), 1);
    }

    #[test]
    fn lost_acknowledged_and_present_failed_creates_fail() {
        let ops = [batch(
            true,
            vec![
                Outcome::Ok(()),
                Outcome::Ok(()),
                Outcome::Fail("NodeExists".into()),
            ],
        )];
        let checked = check(&ops, &executed(&["n000", "n002"]));
        assert_eq!(checked.violations.len(), 2, "{:?}", checked.violations);
    }
}

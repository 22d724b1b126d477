//! Ephemerals live exactly as long as their sessions.
//!
//! Each worker's session creates `/eph/p<process>` (ephemeral), then every few hundred
//! ms asks, on that session, `sync` + `exists` of its own node. Checks:
//! - while a session is alive, its ephemeral exists: a server that answers the session
//!   (after `sync`, so up to date with the leader) and finds its node gone has either
//!   deleted the ephemeral of a live session or is serving a session the quorum already
//!   expired without telling its client;
//! - once every session has ended (expired, or closed by the harness at the end) and a
//!   session timeout has passed, no ephemeral is left.
//!
//! How long a client on a cut-off server takes to learn its session is in danger is
//! measured for every client of the run in [`crate::sessions`].

use paddock_client::CreateMode;
use tokio::task::JoinHandle;

use super::{worker_rng, Checked, Ctx};
use crate::history::{ms, outcome_of_error, History, Op, Outcome, Violation};

/// What an owner did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EphOp {
    /// Created its ephemeral.
    Create(String),
    /// `sync` + `exists` of its own ephemeral; the output says whether it was there.
    Check(String),
    /// The session ended (`Expired`, or closed by the harness).
    End(String, String),
}

/// The workload.
#[derive(Clone, Default)]
pub struct Ephemerals {
    history: History<EphOp, bool>,
}

impl Ephemerals {
    /// One owner pinned to `server`.
    pub fn spawn(&self, ctx: Ctx, server: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 5, server);
            while let Some((process, client)) = ctx.session(server).await {
                let path = format!("/eph/p{process}");
                let record = |op: EphOp, invoke, outcome| {
                    this.history.push(Op {
                        process,
                        invoke,
                        complete: ctx.clock.now(),
                        input: op,
                        outcome,
                    });
                };
                let invoke = ctx.clock.now();
                let created = ctx
                    .bounded(client.create(&path, b"", CreateMode::Ephemeral))
                    .await;
                record(
                    EphOp::Create(path.clone()),
                    invoke,
                    created
                        .as_ref()
                        .map_or_else(outcome_of_error, |_| Outcome::Ok(true)),
                );
                if created.is_ok() {
                    while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                        ctx.pause(rng.millis(300, 600)).await;
                        let invoke = ctx.clock.now();
                        let seen = ctx
                            .bounded(async {
                                client.sync("/eph").await?;
                                client.exists(&path).await
                            })
                            .await;
                        let outcome = seen.map_or_else(
                            |e| outcome_of_error(&e),
                            |stat| Outcome::Ok(stat.is_some()),
                        );
                        record(EphOp::Check(path.clone()), invoke, outcome);
                    }
                }
                let state = client.state();
                let ended = if state.is_terminal() {
                    format!("{state:?}")
                } else {
                    // The run stopped (or the create failed): end the session ourselves.
                    let _ = ctx.bounded(async { client.close().await }).await;
                    "closed by the harness".to_owned()
                };
                record(EphOp::End(path, ended), ctx.clock.now(), Outcome::Ok(true));
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// Checks the history and the children of `/eph` listed once every session ended.
    pub fn check(&self, leftovers: &[String]) -> Checked {
        check(&self.history.snapshot(), leftovers)
    }
}

/// The checker.
pub fn check(ops: &[Op<EphOp, bool>], leftovers: &[String]) -> Checked {
    let mut checked = Checked::new("ephemerals", ops);
    for op in ops {
        if let (EphOp::Check(path), Outcome::Ok(false)) = (&op.input, &op.outcome) {
            checked.violations.push(Violation {
                check: "ephemeral-live",
                at: op.invoke,
                detail: format!(
                    "p{}'s session answered sync+exists at {:.0} ms but its ephemeral {path} \
                     was gone",
                    op.process,
                    ms(op.invoke)
                ),
            });
        }
    }
    for name in leftovers {
        let path = format!("/eph/{name}");
        let ended = ops.iter().find_map(|op| match &op.input {
            EphOp::End(p, how) if *p == path => Some((op.invoke, how.as_str())),
            _ => None,
        });
        checked.violations.push(Violation {
            check: "ephemeral-leftover",
            at: ended.map_or(0, |(at, _)| at),
            detail: match ended {
                Some((at, how)) => format!(
                    "{path} still exists after its session ended ({how} at {:.0} ms)",
                    ms(at)
                ),
                None => format!("{path} still exists and no owner ever ended"),
            },
        });
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(input: EphOp, outcome: Outcome<bool>) -> Op<EphOp, bool> {
        Op {
            process: 3,
            invoke: 1_000,
            complete: 2_000,
            input,
            outcome,
        }
    }

    #[test]
    fn a_clean_life_passes() {
        let ops = [
            op(EphOp::Create("/eph/p3".into()), Outcome::Ok(true)),
            op(EphOp::Check("/eph/p3".into()), Outcome::Ok(true)),
            op(EphOp::Check("/eph/p3".into()), Outcome::Info("lost".into())),
            op(
                EphOp::End("/eph/p3".into(), "Expired".into()),
                Outcome::Ok(true),
            ),
        ];
        assert!(check(&ops, &[]).violations.is_empty());
    }

    #[test]
    fn missing_while_alive_and_leftover_after_the_end_fail() {
        let ops = [
            op(EphOp::Create("/eph/p3".into()), Outcome::Ok(true)),
            op(EphOp::Check("/eph/p3".into()), Outcome::Ok(false)),
            op(
                EphOp::End("/eph/p3".into(), "Expired".into()),
                Outcome::Ok(true),
            ),
        ];
        let checked = check(&ops, &["p3".to_owned()]);
        let kinds: Vec<&str> = checked.violations.iter().map(|v| v.check).collect();
        assert_eq!(kinds, ["ephemeral-live", "ephemeral-leftover"]);
    }
}

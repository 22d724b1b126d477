//! Compare-and-set registers, checked for linearizability.
//!
//! Each register is a znode holding a decimal integer; its state is `(value, version)`.
//! Operations: `Write(v)` is `setData(v, -1)` and returns the new version; `Cas` is
//! `setData(v, expected version)`, which succeeds or fails with `BadVersion` (both are
//! results, checked); `Read` is `sync` then `getData`, invoked when the `sync` is.
//!
//! What is checked, and why: ZooKeeper promises linearizable *writes* only; a plain
//! read is served by the client's server from its own replica and may be stale, so a
//! history with plain reads is not linearizable even on a correct ensemble. A read
//! after `sync` reflects every write committed before the sync was invoked, which makes
//! sync+read linearizable too, so that is the only read in the history. Writes and CAS
//! results carry the new version, which pins each acknowledged write's place in the
//! order. The whole history (writes, CAS, sync-reads) is checked with [`crate::lin`].
//!
//! Registers are independent keys, fresh for every nemesis cycle (`/reg/e<epoch>k<j>`):
//! each key's history stays short enough to check, and operations whose outcome is
//! unknown cannot pile up across cycles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use paddock_client::{Client, CreateMode, Error as ClientError, ErrorCode};
use tokio::task::JoinHandle;

use super::{ensure, worker_rng, Checked, Ctx};
use crate::history::{ms, outcome_of_error, History, Op, Outcome, Violation};
use crate::lin::{self, Entry, Model, Verdict};

/// Registers written in each cycle.
pub const KEYS_PER_EPOCH: usize = 2;

/// Search steps allowed per key before the verdict is "unknown".
const BUDGET: usize = 2_000_000;

/// What an operation asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegOp {
    /// `sync` + `getData`.
    Read,
    /// `setData` with any version.
    Write(i64),
    /// `setData` with version `expect`.
    Cas {
        /// The version the register must have.
        expect: i32,
        /// The value to set.
        value: i64,
    },
}

/// An operation on one register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegInput {
    /// The znode.
    pub key: String,
    /// What to do.
    pub op: RegOp,
}

/// What an acknowledged operation returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegOutput {
    /// A read's value and version.
    Read {
        /// The value.
        value: i64,
        /// The node's version.
        version: i32,
    },
    /// A write or successful CAS: the version it created.
    Written {
        /// The new version.
        version: i32,
    },
    /// A CAS refused with `BadVersion`.
    CasFailed,
}

/// The sequential specification: a register with a version counter, `(0, 0)` at first.
pub struct RegisterModel;

impl Model for RegisterModel {
    type State = (i64, i32);
    type Input = RegOp;
    type Output = RegOutput;

    fn init(&self) -> (i64, i32) {
        (0, 0)
    }

    fn step(
        &self,
        &(value, version): &(i64, i32),
        input: &RegOp,
        output: Option<&RegOutput>,
    ) -> Option<(i64, i32)> {
        match (input, output) {
            (
                RegOp::Read,
                Some(RegOutput::Read {
                    value: v,
                    version: n,
                }),
            ) => (*v == value && *n == version).then_some((value, version)),
            (RegOp::Read, None) => Some((value, version)),
            (RegOp::Write(v), Some(RegOutput::Written { version: n })) => {
                (*n == version + 1).then_some((*v, version + 1))
            }
            (RegOp::Write(v), None) => Some((*v, version + 1)),
            (RegOp::Cas { expect, value: v }, Some(RegOutput::Written { version: n })) => {
                (*expect == version && *n == version + 1).then_some((*v, version + 1))
            }
            (RegOp::Cas { expect, .. }, Some(RegOutput::CasFailed)) => {
                (*expect != version).then_some((value, version))
            }
            (RegOp::Cas { expect, value: v }, None) => Some(if *expect == version {
                (*v, version + 1)
            } else {
                (value, version)
            }),
            _ => None,
        }
    }
}

/// The workload: its history and the current cycle's keys.
#[derive(Clone, Default)]
pub struct Register {
    history: History<RegInput, RegOutput>,
    /// The cycle whose keys are in use; 0 until the first are made.
    epoch: Arc<AtomicU64>,
}

impl Register {
    /// The znode of register `j` of cycle `epoch`.
    pub fn key(epoch: u64, j: usize) -> String {
        format!("/reg/e{epoch}k{j}")
    }

    /// Creates cycle `epoch`'s registers (value 0, version 0) and switches to them.
    pub async fn prepare_epoch(&self, client: &Client, epoch: u64) -> Result<(), ClientError> {
        ensure(client, "/reg").await?;
        for j in 0..KEYS_PER_EPOCH {
            match client
                .create(&Self::key(epoch, j), b"0", CreateMode::Persistent)
                .await
            {
                Ok(_) | Err(ClientError::Keeper(ErrorCode::NodeExists)) => {}
                Err(err) => return Err(err),
            }
        }
        self.epoch.store(epoch, Ordering::SeqCst);
        Ok(())
    }

    /// One worker pinned to `server`.
    pub fn spawn(&self, ctx: Ctx, server: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move { this.work(ctx, server, seed).await })
    }

    async fn work(self, ctx: Ctx, server: usize, seed: u64) {
        let mut rng = worker_rng(seed, 1, server);
        let mut versions: HashMap<String, i32> = HashMap::new();
        while let Some((process, client)) = ctx.session(server).await {
            let mut counter = 0i64;
            while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                let epoch = self.epoch.load(Ordering::SeqCst);
                if epoch == 0 {
                    ctx.pause(std::time::Duration::from_millis(50)).await;
                    continue;
                }
                counter += 1;
                let key = Self::key(epoch, rng.index(KEYS_PER_EPOCH));
                let value = i64::try_from(process).unwrap_or(0) * 1_000_000 + counter;
                let op = match rng.below(10) {
                    0..=3 => RegOp::Read,
                    4..=7 => RegOp::Cas {
                        expect: versions.get(&key).copied().unwrap_or(0),
                        value,
                    },
                    _ => RegOp::Write(value),
                };
                let invoke = ctx.clock.now();
                let result = ctx.bounded(apply(&client, &key, &op)).await;
                let outcome = match result {
                    Ok(output) => {
                        match output {
                            RegOutput::Read { version, .. } | RegOutput::Written { version } => {
                                versions.insert(key.clone(), version);
                            }
                            RegOutput::CasFailed => {}
                        }
                        Outcome::Ok(output)
                    }
                    Err(err) => outcome_of_error(&err),
                };
                self.history.push(Op {
                    process,
                    invoke,
                    complete: ctx.clock.now(),
                    input: RegInput { key, op },
                    outcome,
                });
                ctx.pause(rng.millis(10, 50)).await;
            }
            if ctx.stop.is_cancelled() {
                break;
            }
        }
    }

    /// Checks every key's history.
    pub fn check(&self) -> Checked {
        check(&self.history.snapshot())
    }
}

async fn apply(client: &Client, key: &str, op: &RegOp) -> Result<RegOutput, ClientError> {
    match op {
        RegOp::Read => {
            client.sync(key).await?;
            let (data, stat) = client.get_data(key).await?;
            // Data that is not a number cannot match any state: the checker reports it.
            let value = std::str::from_utf8(&data)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(i64::MIN);
            Ok(RegOutput::Read {
                value,
                version: stat.version,
            })
        }
        RegOp::Write(v) => client
            .set_data(key, v.to_string().as_bytes(), None)
            .await
            .map(|stat| RegOutput::Written {
                version: stat.version,
            }),
        RegOp::Cas { expect, value } => {
            match client
                .set_data(key, value.to_string().as_bytes(), Some(*expect))
                .await
            {
                Ok(stat) => Ok(RegOutput::Written {
                    version: stat.version,
                }),
                Err(ClientError::Keeper(ErrorCode::BadVersion)) => Ok(RegOutput::CasFailed),
                Err(err) => Err(err),
            }
        }
    }
}

/// The checker: per key, drop what cannot matter (reads and definite failures that
/// had no effect), give unknown outcomes an open end, and search for a linearization.
pub fn check(ops: &[Op<RegInput, RegOutput>]) -> Checked {
    let mut by_key: HashMap<&str, Vec<&Op<RegInput, RegOutput>>> = HashMap::new();
    for op in ops {
        let keep = match (&op.input.op, &op.outcome) {
            (_, Outcome::Ok(_)) => true,
            (RegOp::Read, _) | (_, Outcome::Fail(_)) => false,
            (_, Outcome::Info(_)) => true,
        };
        if keep {
            by_key.entry(&op.input.key).or_default().push(op);
        }
    }
    let mut checked = Checked::new("register", ops);
    let mut keys: Vec<_> = by_key.into_iter().collect();
    keys.sort_by(|a, b| a.0.cmp(b.0));
    for (key, ops) in keys {
        let entries: Vec<Entry<RegOp, RegOutput>> = ops
            .iter()
            .map(|op| match &op.outcome {
                Outcome::Ok(out) => Entry {
                    invoke: op.invoke,
                    complete: Some(op.complete),
                    input: op.input.op.clone(),
                    output: Some(*out),
                },
                _ => Entry {
                    invoke: op.invoke,
                    complete: None,
                    input: op.input.op.clone(),
                    output: None,
                },
            })
            .collect();
        match lin::check(&RegisterModel, &entries, BUDGET) {
            Verdict::Linearizable => {}
            Verdict::Unknown => checked.notes.push(format!(
                "{key}: linearizability undecided within {BUDGET} steps ({} ops)",
                entries.len()
            )),
            Verdict::NotLinearizable { stuck, prefix } => {
                let op = ops[stuck];
                let around: Vec<String> = ops
                    .iter()
                    .filter(|o| {
                        o.invoke <= op.complete + 1_000_000 && o.complete + 1_000_000 >= op.invoke
                    })
                    .take(8)
                    .map(|o| describe(o))
                    .collect();
                checked.violations.push(Violation {
                    check: "linearizable",
                    at: op.invoke,
                    detail: format!(
                        "{key}: no linearization of {} ops; stuck at {} after {} placed; \
                         nearby: {}",
                        entries.len(),
                        describe(op),
                        prefix.len(),
                        around.join("; ")
                    ),
                });
            }
        }
    }
    checked
}

fn describe(op: &Op<RegInput, RegOutput>) -> String {
    format!(
        "p{} {:?} [{:.0}..{:.0} ms] -> {:?}",
        op.process,
        op.input.op,
        ms(op.invoke),
        ms(op.complete),
        op.outcome
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(
        invoke: u64,
        complete: u64,
        op: RegOp,
        outcome: Outcome<RegOutput>,
    ) -> Op<RegInput, RegOutput> {
        Op {
            process: 1,
            invoke,
            complete,
            input: RegInput {
                key: "/reg/e1k0".into(),
                op,
            },
            outcome,
        }
    }

    fn written(version: i32) -> Outcome<RegOutput> {
        Outcome::Ok(RegOutput::Written { version })
    }

    fn read(value: i64, version: i32) -> Outcome<RegOutput> {
        Outcome::Ok(RegOutput::Read { value, version })
    }

    #[test]
    fn a_correct_history_passes() {
        let ops = [
            op(0, 10, RegOp::Write(5), written(1)),
            op(
                5,
                20,
                RegOp::Cas {
                    expect: 1,
                    value: 6,
                },
                written(2),
            ),
            op(
                6,
                25,
                RegOp::Cas {
                    expect: 1,
                    value: 7,
                },
                Outcome::Ok(RegOutput::CasFailed),
            ),
            op(30, 40, RegOp::Read, read(6, 2)),
            op(
                50,
                60,
                RegOp::Cas {
                    expect: 2,
                    value: 8,
                },
                Outcome::Info("lost".into()),
            ),
            op(70, 80, RegOp::Read, read(8, 3)),
            op(90, 95, RegOp::Read, Outcome::Info("lost".into())),
        ];
        let checked = check(&ops);
        assert!(checked.violations.is_empty(), "{:?}", checked.violations);
        assert_eq!(checked.tally.ops, 7);
    }

    #[test]
    fn two_cas_on_one_version_both_acknowledged_fail() {
        let ops = [
            op(
                0,
                10,
                RegOp::Cas {
                    expect: 0,
                    value: 1,
                },
                written(1),
            ),
            op(
                20,
                30,
                RegOp::Cas {
                    expect: 0,
                    value: 2,
                },
                written(1),
            ),
        ];
        let checked = check(&ops);
        assert_eq!(checked.violations.len(), 1);
        assert_eq!(checked.violations[0].check, "linearizable");
    }

    #[test]
    fn a_lost_acknowledged_write_fails() {
        let ops = [
            op(0, 10, RegOp::Write(3), written(1)),
            op(20, 30, RegOp::Read, read(0, 0)),
        ];
        assert_eq!(check(&ops).violations.len(), 1);
    }

    #[test]
    fn a_stale_synced_read_fails() {
        let ops = [
            op(0, 10, RegOp::Write(3), written(1)),
            op(20, 30, RegOp::Write(4), written(2)),
            op(40, 50, RegOp::Read, read(3, 1)),
        ];
        assert_eq!(check(&ops).violations.len(), 1);
    }

    #[test]
    fn a_cas_refused_although_the_version_matched_fails() {
        let ops = [op(
            0,
            10,
            RegOp::Cas {
                expect: 0,
                value: 1,
            },
            Outcome::Ok(RegOutput::CasFailed),
        )];
        assert_eq!(check(&ops).violations.len(), 1);
    }

    #[test]
    fn keys_are_checked_apart() {
        let mut other = op(20, 30, RegOp::Read, read(0, 0));
        other.input.key = "/reg/e1k1".into();
        let ops = [op(0, 10, RegOp::Write(3), written(1)), other];
        assert!(check(&ops).violations.is_empty());
    }
}

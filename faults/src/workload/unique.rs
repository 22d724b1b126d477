//! Unique creates: every acknowledged create is present afterwards, exactly once.
//!
//! Workers alternate `create /uniq/<tag>` (a path of their own) and
//! `create /uniq/seq-` in sequential mode with the tag as data, never retrying. After
//! the run the children of `/uniq` are listed (after `sync`, once the servers agree)
//! and checked: each acknowledged create's tag is present; no tag appears twice (a
//! request applied twice); no definitely failed create's tag appears; no node carries a
//! tag nobody sent. Creates with unknown outcome may be present or not.

use std::collections::HashMap;

use paddock_client::CreateMode;
use tokio::task::JoinHandle;

use super::{worker_rng, Checked, Ctx};
use crate::history::{outcome_of_error, History, Op, Outcome, Violation};

/// What a create asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Create {
    /// Unique per create: `w<process>-<n>`.
    pub tag: String,
    /// Sequential mode under `/uniq/seq-` (tag in the data), else `/uniq/<tag>`.
    pub sequential: bool,
}

/// The workload.
#[derive(Clone, Default)]
pub struct Unique {
    history: History<Create, String>,
}

impl Unique {
    /// One worker pinned to `server`.
    pub fn spawn(&self, ctx: Ctx, server: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 2, server);
            while let Some((process, client)) = ctx.session(server).await {
                let mut n = 0u64;
                while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                    n += 1;
                    let tag = format!("w{process}-{n}");
                    let sequential = n.is_multiple_of(2);
                    let invoke = ctx.clock.now();
                    let result = if sequential {
                        ctx.bounded(client.create(
                            "/uniq/seq-",
                            tag.as_bytes(),
                            CreateMode::PersistentSequential,
                        ))
                        .await
                    } else {
                        ctx.bounded(client.create(
                            &format!("/uniq/{tag}"),
                            tag.as_bytes(),
                            CreateMode::Persistent,
                        ))
                        .await
                    };
                    let outcome = result.map_or_else(|e| outcome_of_error(&e), Outcome::Ok);
                    this.history.push(Op {
                        process,
                        invoke,
                        complete: ctx.clock.now(),
                        input: Create { tag, sequential },
                        outcome,
                    });
                    ctx.pause(rng.millis(20, 60)).await;
                }
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// Checks the history against the final children of `/uniq` (name, data).
    pub fn check(&self, listing: &[(String, Vec<u8>)]) -> Checked {
        check(&self.history.snapshot(), listing)
    }
}

/// The checker.
pub fn check(ops: &[Op<Create, String>], listing: &[(String, Vec<u8>)]) -> Checked {
    let mut present: HashMap<String, Vec<&str>> = HashMap::new();
    for (name, data) in listing {
        present
            .entry(String::from_utf8_lossy(data).into_owned())
            .or_default()
            .push(name);
    }
    let mut checked = Checked::new("unique-creates", ops);
    let mut sent: HashMap<&str, &Op<Create, String>> = HashMap::new();
    for op in ops {
        sent.insert(&op.input.tag, op);
        let nodes = present.get(&op.input.tag).map_or(&[][..], Vec::as_slice);
        let problem = match (&op.outcome, nodes.len()) {
            (Outcome::Ok(path), 0) => Some(format!("acknowledged create {path} is missing")),
            (Outcome::Fail(why), n) if n > 0 => {
                Some(format!("create failed ({why}) but is present as {nodes:?}"))
            }
            (_, n) if n > 1 => Some(format!("present {n} times: {nodes:?}")),
            _ => None,
        };
        if let Some(problem) = problem {
            checked.violations.push(Violation {
                check: "unique-creates",
                at: op.invoke,
                detail: format!("p{} {}: {problem}", op.process, op.input.tag),
            });
        }
    }
    for (tag, nodes) in &present {
        if !sent.contains_key(tag.as_str()) {
            checked.violations.push(Violation {
                check: "unique-creates",
                at: 0,
                detail: format!("{nodes:?} carry tag {tag:?} that no client sent"),
            });
        }
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(tag: &str, outcome: Outcome<String>) -> Op<Create, String> {
        Op {
            process: 1,
            invoke: 0,
            complete: 1,
            input: Create {
                tag: tag.into(),
                sequential: true,
            },
            outcome,
        }
    }

    fn node(name: &str, tag: &str) -> (String, Vec<u8>) {
        (name.into(), tag.as_bytes().to_vec())
    }

    #[test]
    fn acknowledged_present_and_unknown_either_way_pass() {
        let ops = [
            op("a", Outcome::Ok("/uniq/seq-0000000001".into())),
            op("b", Outcome::Info("lost".into())),
            op("c", Outcome::Info("lost".into())),
            op("d", Outcome::Fail("exists".into())),
        ];
        let listing = [node("seq-0000000001", "a"), node("seq-0000000002", "b")];
        let checked = check(&ops, &listing);
        assert!(checked.violations.is_empty(), "{:?}", checked.violations);
    }

    #[test]
    fn missing_duplicate_failed_and_unsent_fail() {
        let ops = [
            op("a", Outcome::Ok("/uniq/seq-0000000001".into())),
            op("b", Outcome::Info("lost".into())),
            op("c", Outcome::Fail("NodeExists".into())),
        ];
        let listing = [
            node("seq-0000000002", "b"),
            node("seq-0000000003", "b"),
            node("seq-0000000004", "c"),
            node("seq-0000000005", "z"),
        ];
        let checked = check(&ops, &listing);
        let details: Vec<&str> = checked
            .violations
            .iter()
            .map(|v| v.detail.as_str())
            .collect();
        assert_eq!(checked.violations.len(), 4, "{details:?}");
        assert!(details.iter().any(|d| d.contains("missing")));
        assert!(details.iter().any(|d| d.contains("2 times")));
        assert!(details.iter().any(|d| d.contains("failed")));
        assert!(details.iter().any(|d| d.contains("no client sent")));
    }
}

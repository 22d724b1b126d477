//! Convergence: after a heal, every server catches up, and servers at the same zxid
//! have the same tree (`mntr`'s `zk_last_zxid` and `zk_tree_digest`).
//!
//! While the workloads still write, the servers are never all at one zxid at the same
//! instant, so the check is split: a server reporting a digest that differs from
//! another's at the same zxid is a divergence (checked on every poll); and "caught up"
//! means every server reached the highest zxid any server had when the wait began.
//! Once the workloads have stopped, all three must report the very same zxid and digest.

use std::collections::HashMap;
use std::time::Duration;

use crate::cluster::Topology;
use crate::history::{micros, Clock, Micros, Violation};
use crate::net::SERVERS;

/// What a wait for convergence found.
#[derive(Debug, Clone, Default)]
pub struct Convergence {
    /// How long it took; `None` if it did not happen within the limit.
    pub took: Option<Micros>,
    /// Divergences, and a failure to converge in time.
    pub violations: Vec<Violation>,
}

fn zxid_digest(m: &HashMap<String, String>) -> Option<(u64, String)> {
    let zxid = m.get("zk_last_zxid")?;
    let zxid = u64::from_str_radix(zxid.trim_start_matches("0x"), 16).ok()?;
    Some((zxid, m.get("zk_tree_digest")?.clone()))
}

/// Polls the servers until they converge (see the module docs) or `limit` passes.
/// `quiet`: the workloads have stopped, so exact agreement is required.
pub async fn wait(topology: &Topology, clock: &Clock, limit: Duration, quiet: bool) -> Convergence {
    let start = clock.now();
    let mut seen: HashMap<u64, (usize, String)> = HashMap::new();
    let mut reported: Vec<u64> = Vec::new();
    let mut target: Option<u64> = None;
    let mut out = Convergence::default();
    let mut last: Vec<Option<(u64, String)>> = vec![None; SERVERS];
    while clock.now() - start < micros(limit) {
        for (i, slot) in last.iter_mut().enumerate() {
            *slot = topology.mntr(i).await.as_ref().and_then(zxid_digest);
        }
        for (i, state) in last.iter().enumerate() {
            let Some((zxid, digest)) = state else {
                continue;
            };
            let (first, theirs) = seen.entry(*zxid).or_insert((i, digest.clone()));
            if theirs != digest && !reported.contains(zxid) {
                reported.push(*zxid);
                out.violations.push(Violation {
                    check: "convergence",
                    at: clock.now(),
                    detail: format!(
                        "divergence at zxid {zxid:#x}: s{} has digest {theirs}, s{} has {digest}",
                        *first + 1,
                        i + 1
                    ),
                });
            }
        }
        let answered: Vec<&(u64, String)> = last.iter().flatten().collect();
        if target.is_none() && !answered.is_empty() {
            target = answered.iter().map(|(z, _)| *z).max();
        }
        let done = answered.len() == SERVERS
            && if quiet {
                answered.iter().all(|s| *s == answered[0])
            } else {
                answered.iter().all(|(z, _)| Some(*z) >= target)
            };
        if done {
            out.took = Some(clock.now() - start);
            return out;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let states: Vec<String> = last
        .iter()
        .enumerate()
        .map(|(i, s)| match s {
            Some((z, d)) => format!("s{}: zxid {z:#x} digest {d}", i + 1),
            None => format!("s{}: no answer", i + 1),
        })
        .collect();
    out.violations.push(Violation {
        check: "convergence",
        at: clock.now(),
        detail: format!(
            "servers did not {} within {limit:?}{}: {}",
            if quiet { "agree" } else { "catch up" },
            target.map_or(String::new(), |t| format!(" (to zxid {t:#x})")),
            states.join("; ")
        ),
    });
    out
}

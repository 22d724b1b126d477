//! Steady writes through every server, to measure how long writes stall when the
//! leader is cut off: from the cut until the first write invoked after it, through a
//! server on the majority side, is acknowledged.

use tokio::task::JoinHandle;

use super::{worker_rng, Ctx};
use crate::history::{outcome_of_error, History, Micros, Op, Outcome, Tally};
use crate::sessions::CutOff;

/// The workload: one writer per server, each on its own node.
#[derive(Clone, Default)]
pub struct Probe {
    history: History<usize, ()>,
}

impl Probe {
    /// A writer pinned to `server`.
    pub fn spawn(&self, ctx: Ctx, server: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 8, server);
            let node = format!("/probe/s{server}");
            while let Some((process, client)) = ctx.session(server).await {
                while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                    let invoke = ctx.clock.now();
                    let result = ctx.bounded(client.set_data(&node, b"x", None)).await;
                    this.history.push(Op {
                        process,
                        invoke,
                        complete: ctx.clock.now(),
                        input: server,
                        outcome: result.map_or_else(|e| outcome_of_error(&e), |_| Outcome::Ok(())),
                    });
                    ctx.pause(rng.millis(80, 120)).await;
                }
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// Operations and acknowledgements.
    pub fn tally(&self) -> Tally {
        Tally::of(&self.history.snapshot())
    }

    /// The stall of each leader cut-off.
    pub fn stalls(&self, cuts: &[CutOff]) -> Vec<Micros> {
        stalls(&self.history.snapshot(), cuts)
    }
}

/// For each cut-off of a leader: the time from the cut to the first acknowledgement of
/// a write invoked after it on another server (to the heal, if there was none by then).
pub fn stalls(ops: &[Op<usize, ()>], cuts: &[CutOff]) -> Vec<Micros> {
    cuts.iter()
        .map(|cut| {
            ops.iter()
                .filter(|op| op.input != cut.server && op.invoke >= cut.start && op.outcome.is_ok())
                .map(|op| op.complete)
                .min()
                .unwrap_or(cut.end)
                - cut.start
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(server: usize, invoke: Micros, complete: Micros, ok: bool) -> Op<usize, ()> {
        Op {
            process: 1,
            invoke,
            complete,
            input: server,
            outcome: if ok {
                Outcome::Ok(())
            } else {
                Outcome::Info("lost".into())
            },
        }
    }

    #[test]
    fn the_stall_ends_at_the_first_majority_ack_after_the_cut() {
        let cut = CutOff {
            server: 0,
            start: 1_000,
            end: 9_000,
        };
        let ops = [
            write(1, 500, 900, true),     // before the cut
            write(0, 1_100, 1_200, true), // on the cut-off leader
            write(2, 1_100, 2_000, false),
            write(1, 1_500, 4_000, true),
            write(2, 2_000, 3_000, true),
        ];
        assert_eq!(stalls(&ops, &[cut]), vec![2_000]);
        assert_eq!(stalls(&ops[..3], &[cut]), vec![8_000]);
    }
}

//! Workloads: each runs its clients against the cluster while the nemesis works,
//! records a history, and has a pure checker over it (unit-tested beside it, with
//! histories that must pass and histories that must fail).
//!
//! - [`register`]: compare-and-set registers, checked for linearizability.
//! - [`unique`]: unique and sequential creates, each acknowledged one present once.
//! - [`order`]: pipelined creates per session; what executed is a prefix of what was sent.
//! - [`lock`]: the lock recipe; believed holds never overlap, tokens grow.
//! - [`ephemeral`]: ephemerals live exactly as long as their sessions.
//! - [`watch`]: one-shot watches fire once per change, before newer data is read.
//! - [`cache`]: tree caches miss, repeat and reorder no change.
//! - [`probe`]: steady writes on every server, to measure how long writes stall.
//!
//! Every client is pinned to one server; a worker whose session ends starts a new one
//! (a new process id, as Jepsen does after a crash).

pub mod cache;
pub mod ephemeral;
pub mod lock;
pub mod order;
pub mod probe;
pub mod register;
pub mod unique;
pub mod watch;

use std::future::Future;
use std::time::Duration;

use paddock_client::{Client, Error as ClientError, ReadOp};
use tokio_util::sync::CancellationToken;

use crate::cluster::Topology;
use crate::history::{Clock, Micros, Op, Tally, Violation};
use crate::rng::Rng;
use crate::sessions::Sessions;

/// What every workload task gets.
#[derive(Clone)]
pub struct Ctx {
    /// The run's clock.
    pub clock: Clock,
    /// Server addresses.
    pub topology: Topology,
    /// Connects clients and records their states.
    pub sessions: Sessions,
    /// Cancelled when the workloads must stop issuing operations.
    pub stop: CancellationToken,
}

impl Ctx {
    /// How long an operation may take before it is recorded as `Info`.
    pub fn op_limit(&self) -> Duration {
        self.sessions.timeout() + Duration::from_secs(2)
    }

    /// A session on `server`, retrying until one is made or the run stops.
    pub async fn session(&self, server: usize) -> Option<(u64, Client)> {
        for _ in 0..10_000 {
            if self.stop.is_cancelled() {
                return None;
            }
            match self.sessions.connect(server).await {
                Ok(session) => return Some(session),
                Err(err) => tracing::debug!(server, %err, "connect failed; retrying"),
            }
            self.pause(Duration::from_millis(300)).await;
        }
        None
    }

    /// Sleeps, or returns early when the run stops.
    pub async fn pause(&self, d: Duration) {
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            () = self.stop.cancelled() => {}
        }
    }

    /// Runs `op` with the operation time limit; a timeout is an unknown outcome.
    pub async fn bounded<T>(
        &self,
        op: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        tokio::time::timeout(self.op_limit(), op)
            .await
            .unwrap_or(Err(ClientError::Timeout))
    }
}

/// What a workload's checker concluded.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// The workload's name.
    pub workload: &'static str,
    /// Operations and acknowledgements.
    pub tally: Tally,
    /// What went wrong.
    pub violations: Vec<Violation>,
    /// Things worth knowing that are not violations (undecided checks, client quirks).
    pub notes: Vec<String>,
    /// Each operation's invocation time and whether it was acknowledged, to attribute
    /// operations to the nemesis cycle they ran in.
    pub timeline: Vec<(Micros, bool)>,
}

impl Checked {
    /// An empty verdict on `ops`, counted.
    pub fn new<I, O>(workload: &'static str, ops: &[Op<I, O>]) -> Checked {
        let mut checked = Checked {
            workload,
            ..Checked::default()
        };
        checked.count(ops);
        checked
    }

    /// Counts more operations.
    pub fn count<I, O>(&mut self, ops: &[Op<I, O>]) {
        self.tally = self.tally + Tally::of(ops);
        self.timeline
            .extend(ops.iter().map(|op| (op.invoke, op.outcome.is_ok())));
    }
}

/// Creates `path` (and its parents) as persistent nodes, tolerating `NodeExists`.
pub async fn ensure(client: &Client, path: &str) -> Result<(), ClientError> {
    client.ensure_path(path).await
}

/// The children of `parent` with their data, read after a `sync` (so as of the leader's
/// latest commit), in batches of `multiRead`.
pub async fn listing(client: &Client, parent: &str) -> Result<Vec<(String, Vec<u8>)>, ClientError> {
    client.sync(parent).await?;
    let mut names = client.get_children(parent).await?;
    names.sort();
    let mut out = Vec::with_capacity(names.len());
    for chunk in names.chunks(200) {
        let ops = chunk
            .iter()
            .map(|name| ReadOp::GetData(format!("{parent}/{name}")));
        let results = client.multi_read(ops).await?;
        for (name, result) in chunk.iter().zip(results) {
            if let paddock_client::OpResult::GetData { data, .. } = result {
                out.push((name.clone(), data.to_vec()));
            }
        }
    }
    Ok(out)
}

/// A seeded generator per worker, so a seed replays the same choices.
pub fn worker_rng(seed: u64, workload: u64, worker: usize) -> Rng {
    Rng::new(seed ^ workload.wrapping_mul(0x9e37_79b9) ^ (worker as u64) << 32)
}

//! The workers of each scenario: one per connection, each on its own paths.

pub mod create_delete;
pub mod pubsub;
pub mod set_data;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_client::{Client, Error};
use tokio_util::sync::CancellationToken;

use crate::plan::Plan;
use crate::stats::{Op, Stats};

/// What every worker gets.
#[derive(Clone)]
pub struct Ctx {
    pub plan: Arc<Plan>,
    pub stats: Arc<Stats>,
    /// Cancelled when the run ends; workers finish the request in hand and return.
    pub stop: CancellationToken,
    /// This process's own parent node, `<root>/<client-id>`: processes never share a
    /// path.
    pub base: Arc<str>,
    /// When the load starts: open-loop schedules count from here.
    pub load_start: Instant,
}

impl Ctx {
    /// The data every write carries.
    pub fn data(&self) -> Vec<u8> {
        vec![b'x'; self.plan.data_size]
    }

    pub fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// The send schedule of pacing worker `worker` (of `--conns`): as fast as replies
    /// come back (closed loop), or its share of `--rate`, the workers' slots
    /// interleaved evenly (open loop).
    pub fn pacer(&self, worker: usize) -> Pacer {
        match self.plan.rate {
            None => Pacer::Closed,
            Some(rate) => {
                let conns = self.plan.conns.max(1) as f64;
                let every = Duration::from_secs_f64(conns / rate);
                let offset = Duration::from_secs_f64(worker as f64 / rate);
                Pacer::Open {
                    next: self.load_start + offset,
                    every,
                }
            }
        }
    }
}

/// When a worker sends its next request, and the instant its latency counts from.
#[derive(Debug, Clone, Copy)]
pub enum Pacer {
    /// Send when the previous reply is in; latency from the send.
    Closed,
    /// Send at fixed slots; latency from the slot, even when the worker is late for it,
    /// so a stalled server is charged for the requests it kept from being sent
    /// (coordinated omission).
    Open { next: Instant, every: Duration },
}

impl Pacer {
    /// The intended send time of the next request, waited for.
    pub async fn next(&mut self) -> Instant {
        match self {
            Pacer::Closed => Instant::now(),
            Pacer::Open { next, every } => {
                let at = *next;
                *next += *every;
                tokio::time::sleep_until(at.into()).await;
                at
            }
        }
    }

    /// Like [`Pacer::next`], or `None` once `stop` is cancelled.
    pub async fn next_or_stop(&mut self, stop: &CancellationToken) -> Option<Instant> {
        if stop.is_cancelled() {
            return None;
        }
        tokio::select! {
            at = self.next() => Some(at),
            () = stop.cancelled() => None,
        }
    }
}

/// Runs one request, recording its response time from `since` (the send, or the
/// intended send in open loop), or a failure.
pub async fn timed<T>(
    stats: &Stats,
    op: Op,
    since: Instant,
    request: impl Future<Output = Result<T, Error>>,
) -> Option<T> {
    match request.await {
        Ok(value) => {
            stats.record(op, since.elapsed());
            Some(value)
        }
        Err(e) => {
            tracing::debug!("{} failed: {e}", op.name());
            stats.fail(op);
            None
        }
    }
}

/// Creates a persistent node, accepting one that already exists.
pub async fn ensure(client: &Client, path: &str, data: &[u8]) -> Result<(), Error> {
    match client
        .create(path, data, paddock_wire::CreateMode::Persistent)
        .await
    {
        Ok(_) | Err(Error::Keeper(paddock_wire::ErrorCode::NodeExists)) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn open_loop_slots_do_not_slip_when_a_request_is_late() {
        let start = Instant::now();
        let mut pacer = Pacer::Open {
            next: start,
            every: Duration::from_millis(10),
        };
        assert_eq!(pacer.next().await, start);
        // A reply that takes 35 ms: the next slots are still 10 ms apart, so their
        // latencies include the time they waited to be sent.
        tokio::time::sleep(Duration::from_millis(35)).await;
        assert_eq!(pacer.next().await, start + Duration::from_millis(10));
        assert_eq!(pacer.next().await, start + Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_pacer_yields_nothing() {
        let stop = CancellationToken::new();
        let mut pacer = Pacer::Open {
            next: Instant::now() + Duration::from_secs(3600),
            every: Duration::from_secs(1),
        };
        stop.cancel();
        assert_eq!(pacer.next_or_stop(&stop).await, None);
    }
}

//! The workers of each scenario: one per connection, each on its own paths.

pub mod create_delete;
pub mod pubsub;
pub mod set_data;

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use paddock_client::{Client, Error};
use tokio_util::sync::CancellationToken;

use crate::plan::Plan;
use crate::stats::{Latency, Stats};

/// What every worker gets.
#[derive(Clone)]
pub struct Ctx {
    pub plan: Arc<Plan>,
    pub stats: Arc<Stats>,
    /// Cancelled when the run ends; workers finish the request in hand and return.
    pub stop: CancellationToken,
}

impl Ctx {
    /// The data every write carries.
    pub fn data(&self) -> Vec<u8> {
        vec![b'x'; self.plan.data_size]
    }

    pub fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.plan.root)
    }
}

/// Runs one request, recording its response time, or a failure.
pub async fn timed<T>(
    latency: &Latency,
    request: impl Future<Output = Result<T, Error>>,
) -> Option<T> {
    let start = Instant::now();
    match request.await {
        Ok(value) => {
            latency.record(start.elapsed());
            Some(value)
        }
        Err(e) => {
            tracing::debug!("request failed: {e}");
            latency.fail();
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

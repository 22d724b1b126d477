//! A counting semaphore in kazoo's `Semaphore` layout: the leases are ephemeral children
//! `<path>/<32 hex digits>`; the node `<path>` holds the maximum number of leases as
//! decimal text; a [`Lock`] on `<path>-__lock__` admits one acquirer at a time, and only
//! that one watches the lease pool, so releases wake no herd.

use std::time::Duration;

use tokio::time::{timeout_at, Instant};

use crate::client::validate;
use crate::recipes::lock::Lock;
use crate::recipes::{
    delete_if_exists, ensure_path, join, random_hex, spawn_cleanup, Abandon, Cleanup,
};
use crate::{Client, CreateMode, Error, ErrorCode};

/// At most `max_leases` holders at once.
#[derive(Debug, Clone)]
pub struct Semaphore {
    client: Client,
    path: String,
    max_leases: usize,
    identifier: Vec<u8>,
}

impl Semaphore {
    /// A semaphore of `max_leases` on `path`; every user of the path must agree on it.
    pub fn new(client: &Client, path: &str, max_leases: usize) -> Self {
        Semaphore {
            client: client.clone(),
            path: path.to_owned(),
            max_leases,
            identifier: Vec::new(),
        }
    }

    /// Names this holder in its lease node's data.
    pub fn identifier(mut self, identifier: &str) -> Self {
        self.identifier = identifier.as_bytes().to_vec();
        self
    }

    /// Waits for a lease.
    pub async fn acquire(&self) -> Result<SemaphoreLease, Error> {
        self.acquire_until(None).await
    }

    /// Waits for a lease at most `timeout`, then fails with [`Error::Timeout`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<SemaphoreLease, Error> {
        self.acquire_until(Some(Instant::now() + timeout)).await
    }

    /// The identifiers of the current holders, in no particular order.
    pub async fn lease_holders(&self) -> Result<Vec<String>, Error> {
        let children = match self.client.get_children(&self.path).await {
            Ok(children) => children,
            Err(Error::Keeper(ErrorCode::NoNode)) => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let mut holders = Vec::new();
        for child in children {
            match self.client.get_data(&join(&self.path, &child)).await {
                Ok((data, _)) => holders.push(String::from_utf8_lossy(&data).into_owned()),
                Err(Error::Keeper(ErrorCode::NoNode)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(holders)
    }

    async fn acquire_until(&self, deadline: Option<Instant>) -> Result<SemaphoreLease, Error> {
        validate(&self.path, false)?;
        self.check_max_leases().await?;
        let lease = join(&self.path, &random_hex());
        let lock = Lock::new(&self.client, &format!("{}-__lock__", self.path))
            .identifier(&String::from_utf8_lossy(&self.identifier));
        let guard = match deadline {
            Some(deadline) => {
                lock.acquire_timeout(deadline.saturating_duration_since(Instant::now()))
                    .await?
            }
            None => lock.acquire().await?,
        };
        // Dropped half-way, the attempt removes its lease.
        let mut abandon = Abandon::new(&self.client, Cleanup::Node(lease.clone()));
        let wait = self.take_lease(&lease);
        let taken = match deadline {
            Some(deadline) => timeout_at(deadline, wait)
                .await
                .unwrap_or(Err(Error::Timeout)),
            None => wait.await,
        };
        // The admission lock goes back whatever happened.
        let released = guard.release().await;
        match taken.and(released) {
            Ok(()) => {
                abandon.disarm();
                Ok(SemaphoreLease {
                    client: self.client.clone(),
                    node: lease,
                    released: false,
                })
            }
            Err(err) => {
                abandon.run_now().await;
                Err(err)
            }
        }
    }

    /// Holding the admission lock: take a lease as soon as the pool has room.
    async fn take_lease(&self, lease: &str) -> Result<(), Error> {
        loop {
            let (children, changed) = self.client.get_children_w(&self.path).await?;
            if children.len() < self.max_leases {
                match self
                    .client
                    .create(lease, &self.identifier, CreateMode::Ephemeral)
                    .await
                {
                    Ok(_) | Err(Error::Keeper(ErrorCode::NodeExists)) => {}
                    Err(err) => return Err(err),
                }
            }
            if self.client.exists(lease).await?.is_some() {
                return Ok(());
            }
            changed.await?;
        }
    }

    /// Creates the pool with our maximum, or checks that an existing pool agrees with it
    /// (kazoo raises on a mismatch, and ignores data that is not a number).
    async fn check_max_leases(&self) -> Result<(), Error> {
        if self.client.exists(&self.path).await?.is_none() {
            ensure_path(&self.client, &self.path).await?;
            let _ = self
                .client
                .set_data(&self.path, self.max_leases.to_string().as_bytes(), Some(0))
                .await;
        }
        let (data, _) = self.client.get_data(&self.path).await?;
        match std::str::from_utf8(&data)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
        {
            Some(leases) if leases != self.max_leases => Err(Error::BadArguments(format!(
                "inconsistent max leases: {leases}, expected {}",
                self.max_leases
            ))),
            _ => Ok(()),
        }
    }
}

/// A held lease. Give it back with [`release`](SemaphoreLease::release); dropping it
/// gives it back too, in a spawned task.
#[derive(Debug)]
#[must_use = "the lease is released when dropped"]
pub struct SemaphoreLease {
    client: Client,
    node: String,
    released: bool,
}

impl SemaphoreLease {
    /// The lease node's path.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Gives the lease back by deleting its node.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        delete_if_exists(&self.client, &self.node).await
    }
}

impl Drop for SemaphoreLease {
    fn drop(&mut self) {
        if !self.released {
            spawn_cleanup(self.client.clone(), Cleanup::Node(self.node.clone()));
        }
    }
}

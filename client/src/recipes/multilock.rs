//! Several locks taken as one (Curator's `InterProcessMultiLock`): acquired in the
//! order given, released in the reverse order; if one cannot be had, those already
//! taken are given back, so a failed acquire holds nothing.
//!
//! Two processes that take overlapping sets must list them in the same order, or
//! they can deadlock, as with any set of locks.

use std::time::Duration;

use tokio::time::Instant;

use crate::recipes::lock::{Lock, LockGuard};
use crate::Error;

/// A set of locks taken together.
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::{Lock, MultiLock};
/// let both = MultiLock::new(vec![
///     Lock::new(&client, "/locks/account-1"),
///     Lock::new(&client, "/locks/account-2"),
/// ]);
/// let held = both.acquire().await?;
/// // ... move money between the two accounts ...
/// held.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MultiLock {
    locks: Vec<Lock>,
}

impl MultiLock {
    /// The locks, in the order they are taken.
    pub fn new(locks: Vec<Lock>) -> Self {
        MultiLock { locks }
    }

    /// Waits until every lock is held.
    pub async fn acquire(&self) -> Result<MultiLockGuard, Error> {
        self.acquire_until(None).await
    }

    /// Like [`acquire`](MultiLock::acquire), but gives up with [`Error::Timeout`] after
    /// `timeout`, holding none of the locks.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<MultiLockGuard, Error> {
        self.acquire_until(Some(Instant::now() + timeout)).await
    }

    async fn acquire_until(&self, deadline: Option<Instant>) -> Result<MultiLockGuard, Error> {
        let mut guards = Vec::with_capacity(self.locks.len());
        for lock in &self.locks {
            let taken = match deadline {
                Some(deadline) => {
                    lock.acquire_timeout(deadline.saturating_duration_since(Instant::now()))
                        .await
                }
                None => lock.acquire().await,
            };
            match taken {
                Ok(guard) => guards.push(guard),
                Err(err) => {
                    // Give back what was taken, last first; the acquire's error is the
                    // one worth reporting, and a failed release leaves an ephemeral
                    // node that the session's end removes.
                    let _ = MultiLockGuard { guards }.release().await;
                    return Err(err);
                }
            }
        }
        Ok(MultiLockGuard { guards })
    }
}

/// Every lock of a [`MultiLock`], held. Dropping it releases them (in spawned tasks).
#[derive(Debug)]
#[must_use = "the locks are released when the guard is dropped"]
pub struct MultiLockGuard {
    guards: Vec<LockGuard>,
}

impl MultiLockGuard {
    /// The fencing tokens of the locks, in the order they were taken.
    pub fn fencing_tokens(&self) -> Vec<i64> {
        self.guards.iter().map(LockGuard::fencing_token).collect()
    }

    /// Releases every lock, last taken first; the first error, once all were tried.
    pub async fn release(mut self) -> Result<(), Error> {
        let mut result = Ok(());
        while let Some(guard) = self.guards.pop() {
            let released = guard.release().await;
            if result.is_ok() {
                result = released;
            }
        }
        result
    }
}

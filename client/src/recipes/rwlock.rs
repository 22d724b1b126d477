//! A shared/exclusive lock in kazoo's `ReadLock`/`WriteLock` layout: readers create
//! `__rlock__` nodes and wait only for earlier writers; writers create `__lock__` nodes
//! and wait for every earlier contender. An exclusive [`Lock`] on the same path blocks
//! the readers behind it like a writer, but, as in kazoo, does not itself wait for
//! readers: use the write side to exclude them.

use crate::recipes::lock::{Lock, LockKind};
use crate::Client;

/// The two sides of a read/write lock on one path.
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::ReadWriteLock;
/// let rw = ReadWriteLock::new(&client, "/locks/table");
/// let shared = rw.read_lock().acquire().await?; // many readers at once
/// shared.release().await?;
/// let exclusive = rw.write_lock().acquire().await?; // alone
/// exclusive.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    client: Client,
    path: String,
}

impl ReadWriteLock {
    /// The lock on `path`.
    pub fn new(client: &Client, path: &str) -> Self {
        ReadWriteLock {
            client: client.clone(),
            path: path.to_owned(),
        }
    }

    /// The shared side (kazoo `ReadLock`).
    pub fn read_lock(&self) -> Lock {
        Lock::with_kind(&self.client, &self.path, LockKind::Read)
    }

    /// The exclusive side (kazoo `WriteLock`).
    pub fn write_lock(&self) -> Lock {
        Lock::with_kind(&self.client, &self.path, LockKind::Write)
    }
}

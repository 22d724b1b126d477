//! Coordination recipes, laid out in ZooKeeper as kazoo lays them out, so a kazoo
//! process and a Paddock one on the same path cooperate.
//!
//! - [`lock`]: an exclusive [`Lock`] and the read/write variants, each waiter watching
//!   only its predecessor; every grant carries a fencing token.
//! - [`rwlock`]: [`ReadWriteLock`], the shared/exclusive pair on one path.
//! - [`election`]: [`Election`], leadership as holding a lock, with a loss signal.
//! - [`leader_latch`]: [`LeaderLatch`], Curator's latch: leader or not at any moment,
//!   with a listener.
//! - [`multilock`]: [`MultiLock`], several locks taken as one.
//! - [`party`]: [`Party`] and [`ShallowParty`], group membership.
//! - [`partitioner`]: [`SetPartitioner`], a set divided among a party's members.
//! - [`persistent_node`]: [`PersistentNode`], a node kept in existence.
//! - [`ttl_node`]: [`TtlNode`], a node that outlives its owner by a TTL at most.
//! - [`semaphore`]: [`Semaphore`], a lease pool.
//! - [`barrier`]: [`Barrier`] and [`DoubleBarrier`].
//! - [`queue`]: [`Queue`], a priority FIFO.
//! - [`locking_queue`]: [`LockingQueue`], entries locked while worked on.
//! - [`counter`]: [`Counter`], compare-and-set on the node's version.
//! - [`watchers`]: [`DataWatch`] and [`ChildrenWatch`], a node's data or children after
//!   every change.

pub mod barrier;
pub mod counter;
pub mod election;
pub mod leader_latch;
pub mod lock;
pub mod locking_queue;
pub mod multilock;
pub mod partitioner;
pub mod party;
pub mod persistent_node;
pub mod queue;
pub mod rwlock;
pub mod semaphore;
pub mod ttl_node;
pub mod watchers;

pub use barrier::{Barrier, DoubleBarrier};
pub use counter::Counter;
pub use election::{Election, Leadership};
pub use leader_latch::{LatchState, LeaderLatch};
pub use lock::{Lock, LockGuard};
pub use locking_queue::{LockedEntry, LockingQueue};
pub use multilock::{MultiLock, MultiLockGuard};
pub use partitioner::{Partition, SetPartitioner};
pub use party::{Party, ShallowParty};
pub use persistent_node::{NodeState, PersistentNode};
pub use queue::Queue;
pub use rwlock::ReadWriteLock;
pub use semaphore::{Semaphore, SemaphoreLease};
pub use ttl_node::TtlNode;
pub use watchers::{ChildrenWatch, DataWatch};

use crate::{Client, Error, ErrorCode};

/// Creates `path` and any missing ancestors (kazoo's `ensure_path`); the same as
/// [`Client::ensure_path`].
pub async fn ensure_path(client: &Client, path: &str) -> Result<(), Error> {
    client.ensure_path(path).await
}

/// 32 random hex digits, like Python's `uuid.uuid4().hex` that kazoo puts in its node
/// names (only the uniqueness matters, not the UUID version bits).
pub(crate) fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::getrandom(&mut bytes).is_err() {
        // No OS randomness: fall back on the clock and a counter, unique per process.
        use std::sync::atomic::{AtomicU64, Ordering};
        static FALLBACK: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = FALLBACK.fetch_add(1, Ordering::Relaxed);
        bytes[..8].copy_from_slice(&(nanos as u64).to_be_bytes());
        bytes[8..].copy_from_slice(&(n ^ u64::from(std::process::id())).to_be_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Best-effort removal of a recipe's node after its owner went away without awaiting
/// the removal (a dropped future or guard). Needs a tokio runtime; without one the node
/// stays until the session ends, as ephemeral nodes do anyway.
pub(crate) fn spawn_cleanup(client: Client, cleanup: Cleanup) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    handle.spawn(async move {
        // Failures leave an ephemeral node that the session's end removes.
        let _ = cleanup.run(&client).await;
    });
}

/// What to remove when a recipe is abandoned.
#[derive(Debug, Clone)]
pub(crate) enum Cleanup {
    /// The node is known.
    Node(String),
    /// A create may be in flight: remove whatever child of `parent` starts with
    /// `prefix`. The session's requests are handled in order, so a listing sent after
    /// the create sees its node.
    Prefixed { parent: String, prefix: String },
}

impl Cleanup {
    pub(crate) async fn run(&self, client: &Client) -> Result<(), Error> {
        match self {
            Cleanup::Node(node) => delete_if_exists(client, node).await,
            Cleanup::Prefixed { parent, prefix } => {
                let children = match client.get_children(parent).await {
                    Ok(children) => children,
                    Err(Error::Keeper(ErrorCode::NoNode)) => return Ok(()),
                    Err(err) => return Err(err),
                };
                for child in children.iter().filter(|c| c.starts_with(prefix.as_str())) {
                    delete_if_exists(client, &join(parent, child)).await?;
                }
                Ok(())
            }
        }
    }
}

/// Deletes `node`, retrying after a connection loss (a retry that finds it gone means
/// the lost attempt went through).
pub(crate) async fn delete_if_exists(client: &Client, node: &str) -> Result<(), Error> {
    loop {
        match client.delete(node, None).await {
            Ok(()) | Err(Error::Keeper(ErrorCode::NoNode)) => return Ok(()),
            Err(err) if err.is_retryable() => {}
            Err(err) => return Err(err),
        }
    }
}

/// Removes a recipe's node if its future is dropped half-way: what makes acquiring
/// cancellation-safe. Disarm it once the node belongs to a guard.
pub(crate) struct Abandon {
    client: Client,
    cleanup: Option<Cleanup>,
}

impl Abandon {
    pub(crate) fn new(client: &Client, cleanup: Cleanup) -> Self {
        Abandon {
            client: client.clone(),
            cleanup: Some(cleanup),
        }
    }

    /// What to remove from now on (the node became known).
    pub(crate) fn set(&mut self, cleanup: Cleanup) {
        self.cleanup = Some(cleanup);
    }

    pub(crate) fn disarm(&mut self) {
        self.cleanup = None;
    }

    /// Removes the node now rather than on drop. Best effort: the error that ended the
    /// attempt is the one worth reporting, and an ephemeral node goes with its session.
    pub(crate) async fn run_now(&mut self) {
        if let Some(cleanup) = self.cleanup.take() {
            let _ = cleanup.run(&self.client).await;
        }
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(cleanup) = self.cleanup.take() {
            spawn_cleanup(self.client.clone(), cleanup);
        }
    }
}

/// `parent/child`, minding the root.
pub(crate) fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_hex_is_32_hex_digits_and_varies() {
        let a = random_hex();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, random_hex());
    }

    #[test]
    fn join_minds_the_root() {
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }
}

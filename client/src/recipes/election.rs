//! Leader election in kazoo's `Election` layout: leadership is holding a [`Lock`] on the
//! election path, so contenders queue as `__lock__` nodes and the leader is the first.

use crate::recipes::lock::{Lock, LockGuard};
use crate::{Client, Error};

/// An election on a path.
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::Election;
/// let election = Election::new(&client, "/election/scheduler", "node-1");
/// let leadership = election.campaign().await?;
/// tokio::select! {
///     reason = leadership.lost() => eprintln!("leadership lost: {reason}"),
///     () = async { /* lead, stamping writes with leadership.fencing_token() */ } => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    lock: Lock,
}

impl Election {
    /// `identifier` names this contender in [`contenders`](Election::contenders).
    pub fn new(client: &Client, path: &str, identifier: &str) -> Self {
        Election {
            lock: Lock::new(client, path).identifier(identifier),
        }
    }

    /// Waits until this contender leads. Dropping the future withdraws from the
    /// election.
    pub async fn campaign(&self) -> Result<Leadership, Error> {
        self.lock.acquire().await.map(|guard| Leadership { guard })
    }

    /// The contenders' identifiers, leader first.
    pub async fn contenders(&self) -> Result<Vec<String>, Error> {
        self.lock.contenders().await
    }

    /// The leader's identifier, if anybody leads.
    pub async fn leader(&self) -> Result<Option<String>, Error> {
        Ok(self.contenders().await?.into_iter().next())
    }
}

/// Being the leader. Ends with [`resign`](Leadership::resign), by dropping it, or when
/// the session ends.
#[derive(Debug)]
#[must_use = "leadership is given up when dropped"]
pub struct Leadership {
    guard: LockGuard,
}

impl Leadership {
    /// The czxid of the leader's node; it grows with every new leader, so followers of
    /// the leader's orders can refuse a deposed leader's stale ones.
    pub fn fencing_token(&self) -> i64 {
        self.guard.fencing_token()
    }

    /// Resolves when leadership is lost without resigning: the session ended
    /// (`SessionExpired`, `Closed`, `AuthFailed`) or the leader's node was deleted
    /// (`NoNode`). Stop acting as leader at once when it does.
    pub async fn lost(&self) -> Error {
        self.guard.lost().await
    }

    /// Steps down, letting the next contender lead.
    pub async fn resign(self) -> Result<(), Error> {
        self.guard.release().await
    }
}

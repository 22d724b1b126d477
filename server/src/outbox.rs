//! A connection's inbox of notifications, with a byte budget.
//!
//! The state machine cannot wait for a slow client, so notifications go on an
//! unbounded channel; what bounds it is the budget: each queued notification is
//! charged its size in memory, and the one that would take the connection over its
//! limit (`maxClientOutgoingBytes`) is not queued — the connection is marked as
//! overflowed instead and closes before it sends another reply. Dropping the event
//! is safe because the client never sees a reply after it: it reconnects, and its
//! `setWatches` re-arms its watches and hears of what changed meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::conns::Outbound;

/// The budget a connection's sender and receiver share.
#[derive(Debug)]
struct Budget {
    /// Bytes charged for notifications queued and not yet taken by the connection.
    queued: AtomicUsize,
    limit: usize,
    /// Cancelled once a notification had to be dropped: the connection must close.
    overflowed: CancellationToken,
}

/// The sending side, held by the connection registry.
#[derive(Debug, Clone)]
pub struct OutboxTx {
    tx: mpsc::UnboundedSender<Outbound>,
    budget: Arc<Budget>,
}

/// The receiving side, owned by the connection task.
#[derive(Debug)]
pub struct OutboxRx {
    rx: mpsc::UnboundedReceiver<Outbound>,
    budget: Arc<Budget>,
}

/// The receiver is gone: the connection is closing anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("connection closed")]
pub struct Closed;

/// A channel whose queued notifications may hold up to `limit` bytes.
pub fn channel(limit: usize) -> (OutboxTx, OutboxRx) {
    let (tx, rx) = mpsc::unbounded_channel();
    let budget = Arc::new(Budget {
        queued: AtomicUsize::new(0),
        limit,
        overflowed: CancellationToken::new(),
    });
    (
        OutboxTx {
            tx,
            budget: budget.clone(),
        },
        OutboxRx { rx, budget },
    )
}

/// What a message holds in memory while queued: the message itself and its path.
fn cost(message: &Outbound) -> usize {
    match message {
        Outbound::Notification { event, .. } => std::mem::size_of::<Outbound>() + event.path.len(),
        Outbound::Close => 0,
    }
}

impl OutboxTx {
    /// Queues `message`, unless it is a notification over the budget: then the
    /// connection is marked overflowed and the notification dropped.
    pub fn send(&self, message: Outbound) -> Result<(), Closed> {
        let cost = cost(&message);
        if cost > 0 {
            let before = self.budget.queued.fetch_add(cost, Ordering::AcqRel);
            if before + cost > self.budget.limit {
                self.budget.queued.fetch_sub(cost, Ordering::AcqRel);
                self.budget.overflowed.cancel();
                return Ok(());
            }
        }
        self.tx.send(message).map_err(|_| Closed)
    }
}

impl OutboxRx {
    pub async fn recv(&mut self) -> Option<Outbound> {
        let message = self.rx.recv().await?;
        self.release(&message);
        Some(message)
    }

    /// The next queued message, if any, without waiting.
    pub fn try_recv(&mut self) -> Option<Outbound> {
        let message = self.rx.try_recv().ok()?;
        self.release(&message);
        Some(message)
    }

    fn release(&self, message: &Outbound) {
        self.budget
            .queued
            .fetch_sub(cost(message), Ordering::AcqRel);
    }

    /// Whether a notification was dropped: nothing more may be sent on the connection.
    pub fn is_overflowed(&self) -> bool {
        self.budget.overflowed.is_cancelled()
    }

    /// Resolves once a notification has been dropped. Borrows nothing, so it can be
    /// awaited alongside [`OutboxRx::recv`].
    pub fn overflowed(&self) -> impl std::future::Future<Output = ()> + 'static {
        let token = self.budget.overflowed.clone();
        async move { token.cancelled().await }
    }

    /// Bytes charged for the notifications queued now.
    #[cfg(test)]
    pub fn queued_bytes(&self) -> usize {
        self.budget.queued.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_wire::{EventType, KeeperState, WatcherEvent};

    fn event(path: &str) -> Outbound {
        Outbound::Notification {
            zxid: 1,
            event: WatcherEvent {
                event_type: EventType::NodeDataChanged,
                state: KeeperState::SyncConnected,
                path: path.to_owned(),
            },
            acl: Vec::new().into(),
        }
    }

    #[test]
    fn the_notification_over_the_budget_is_dropped_and_marks_the_connection() {
        let one = cost(&event("/a"));
        let (tx, mut rx) = channel(2 * one);
        assert_eq!(tx.send(event("/a")), Ok(()));
        assert_eq!(tx.send(event("/b")), Ok(()));
        assert!(!rx.is_overflowed());
        assert_eq!(rx.queued_bytes(), 2 * one);
        // The third does not fit: dropped, and the connection must go.
        assert_eq!(tx.send(event("/c")), Ok(()));
        assert!(rx.is_overflowed());
        assert_eq!(rx.queued_bytes(), 2 * one);
        // Close is never charged nor refused.
        assert_eq!(tx.send(Outbound::Close), Ok(()));
        let mut paths = Vec::new();
        while let Some(message) = rx.try_recv() {
            if let Outbound::Notification { event, .. } = message {
                paths.push(event.path);
            }
        }
        assert_eq!(paths, ["/a", "/b"]);
        assert_eq!(rx.queued_bytes(), 0);
        drop(rx);
        assert_eq!(tx.send(event("/d")), Err(Closed));
    }
}

//! Request id → the task waiting for that write's result. Replies are matched to
//! requests by id (the txn's origin), never by queue order.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use paddock_wire::{ErrorCode, Response};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::ids::UniqueIds;
use crate::txn::Origin;

/// What a write came to: the zxid it was applied at, and its reply.
#[derive(Debug)]
pub struct Completion {
    pub zxid: i64,
    pub result: Result<Response, ErrorCode>,
}

pub struct WaitRegistry {
    server: u64,
    /// Unique across this server's incarnations, so that a commit or a read-index
    /// confirmation meant for a request of an earlier incarnation completes nothing.
    next: UniqueIds,
    waiting: Mutex<HashMap<u64, (Instant, oneshot::Sender<Completion>)>>,
}

impl WaitRegistry {
    pub fn new(server: u64) -> Self {
        WaitRegistry {
            server,
            next: UniqueIds::new(),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// A fresh origin for a txn this server proposes, and the receiver of its result.
    pub fn register(&self) -> (Origin, oneshot::Receiver<Completion>) {
        let request = self.next.next();
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(request, (Instant::now(), tx));
        (
            Origin {
                server: self.server,
                request,
            },
            rx,
        )
    }

    /// Hands a result to its waiter, if this server proposed the txn and the waiter is
    /// still there (a closed connection drops its receivers).
    pub fn complete(&self, origin: Origin, applied: Completion) {
        if origin.server != self.server {
            return;
        }
        if let Some((_, tx)) = self.waiting.lock().remove(&origin.request) {
            // The receiver is gone when the client disconnected: nothing to tell.
            let _ = tx.send(applied);
        }
    }

    /// Fails the waiters registered more than `limit` ago with ConnectionLoss: their
    /// proposal was lost (no leader, or a leader change dropped it). As with a
    /// ZooKeeper connection loss, the write's outcome is then unknown to the client.
    pub fn expire_older_than(&self, limit: Duration) -> usize {
        let now = Instant::now();
        let mut waiting = self.waiting.lock();
        let stale: Vec<u64> = waiting
            .iter()
            .filter(|(_, (since, _))| now.duration_since(*since) > limit)
            .map(|(request, _)| *request)
            .collect();
        for request in &stale {
            if let Some((_, tx)) = waiting.remove(request) {
                let _ = tx.send(Completion {
                    zxid: 0,
                    result: Err(ErrorCode::ConnectionLoss),
                });
            }
        }
        stale.len()
    }

    pub fn len(&self) -> usize {
        self.waiting.lock().len()
    }
}

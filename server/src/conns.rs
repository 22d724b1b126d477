//! This server's client connections: who to send notifications to, which connection
//! holds each session here, and when each was last heard from.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use paddock_wire::{Acl, WatcherEvent};
use parking_lot::Mutex;

use crate::ids::UniqueIds;
use crate::monotonic::AtomicInstant;
use crate::outbox::OutboxTx;

/// Identifies one client connection, unique across servers and their incarnations
/// (watches belong to connections, and a session executes one connection's writes).
pub type ConnId = u64;

/// What the rest of the server sends a connection task.
#[derive(Debug)]
pub enum Outbound {
    /// A watch fired: written with xid -1 and the zxid of the txn that fired it, if
    /// the connection's identities hold READ in `acl`, the changed node's ACL at the
    /// time of the change (the parent's, for `NodeChildrenChanged`).
    Notification {
        zxid: i64,
        event: WatcherEvent,
        acl: Arc<[Acl]>,
    },
    /// The session ended (expired, or moved to another connection).
    Close,
}

/// Open connections: who to send notifications to, which connection holds each
/// session on this server, and when each was last heard from.
#[derive(Default)]
pub struct ConnRegistry {
    next: UniqueIds,
    inner: Mutex<ConnTable>,
}

#[derive(Default)]
struct ConnTable {
    conns: HashMap<ConnId, ConnEntry>,
    by_session: HashMap<i64, ConnId>,
}

struct ConnEntry {
    tx: OutboxTx,
    session: i64,
    /// Written by the connection on every packet, read for the liveness reports.
    heard: Arc<AtomicInstant>,
}

impl ConnRegistry {
    pub fn next_id(&self) -> ConnId {
        self.next.next()
    }

    /// Records that `conn` now holds `session`; a connection that held it before is
    /// told to close (the client moved).
    pub fn attach(&self, conn: ConnId, session: i64, tx: OutboxTx, heard: Arc<AtomicInstant>) {
        let mut table = self.inner.lock();
        table.conns.insert(conn, ConnEntry { tx, session, heard });
        if let Some(old) = table.by_session.insert(session, conn) {
            if let Some(old) = table.conns.get(&old) {
                let _ = old.tx.send(Outbound::Close);
            }
        }
    }

    pub fn detach(&self, conn: ConnId, session: i64) {
        let mut table = self.inner.lock();
        table.conns.remove(&conn);
        if table.by_session.get(&session) == Some(&conn) {
            table.by_session.remove(&session);
        }
    }

    pub fn send(&self, conn: ConnId, message: Outbound) {
        if let Some(entry) = self.inner.lock().conns.get(&conn) {
            // A closed receiver means the connection is going away anyway.
            let _ = entry.tx.send(message);
        }
    }

    /// Tells the connection holding `session`, if on this server, to close.
    pub fn close_session(&self, session: i64) {
        self.close_session_unless(session, 0);
    }

    /// Tells the connection holding `session` on this server to close, unless it is
    /// `keep` (the session moved to connection `keep`).
    pub fn close_session_unless(&self, session: i64, keep: ConnId) {
        let table = self.inner.lock();
        if let Some(conn) = table.by_session.get(&session) {
            if *conn != keep {
                if let Some(entry) = table.conns.get(conn) {
                    let _ = entry.tx.send(Outbound::Close);
                }
            }
        }
    }

    /// Tells every connection to close (this server stopped serving).
    pub fn close_all(&self) -> usize {
        let table = self.inner.lock();
        for entry in table.conns.values() {
            let _ = entry.tx.send(Outbound::Close);
        }
        table.conns.len()
    }

    /// Each session held here, and when its client was last heard from.
    pub fn heard(&self) -> Vec<(i64, Instant)> {
        let table = self.inner.lock();
        table
            .conns
            .values()
            .filter_map(|entry| Some((entry.session, entry.heard.load()?)))
            .collect()
    }

    pub fn count(&self) -> usize {
        self.inner.lock().conns.len()
    }

    /// (connection, session) pairs, for `cons`.
    pub fn sessions(&self) -> Vec<(ConnId, i64)> {
        let table = self.inner.lock();
        let mut pairs: Vec<(ConnId, i64)> =
            table.by_session.iter().map(|(s, c)| (*c, *s)).collect();
        pairs.sort_unstable();
        pairs
    }
}

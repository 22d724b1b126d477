//! The replicated state as this server has applied it: written only by the state
//! machine, read by the request path, the liveness task and the housekeeping.

use parking_lot::{Mutex, RwLock};

use crate::conns::ConnId;
use crate::session::SessionTable;
use crate::tree::DataTree;
use crate::watch::WatchRegistry;

/// The replicated state: changed only by the state machine, read by everyone.
pub struct Db {
    pub tree: DataTree,
    pub sessions: SessionTable,
    /// The zxid of the last applied txn.
    pub last_zxid: i64,
}

impl Db {
    pub fn new() -> Self {
        Db {
            tree: DataTree::new(),
            sessions: SessionTable::default(),
            last_zxid: 0,
        }
    }
}

/// The tree and sessions, and the watches set on them by this server's connections.
pub struct Replicated {
    pub db: RwLock<Db>,
    /// Locked after `db` when both are held, never before: the state machine fires a
    /// txn's watches under `db`'s write lock, so no read sees a change before its event
    /// is queued.
    pub watches: Mutex<WatchRegistry<ConnId>>,
}

impl Replicated {
    pub fn new() -> Self {
        Replicated {
            db: RwLock::new(Db::new()),
            watches: Mutex::new(WatchRegistry::new()),
        }
    }

    pub fn last_zxid(&self) -> i64 {
        self.db.read().last_zxid
    }

    /// The connection that holds `session` now (0 if there is no such session): an
    /// expiry names it, so that it is void if the client reattached meanwhile.
    pub fn session_conn(&self, session: i64) -> ConnId {
        self.db
            .read()
            .sessions
            .get(session)
            .map_or(0, |session| session.conn)
    }
}

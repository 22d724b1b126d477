//! Sessions: the replicated table of live sessions, the leader's expiry clock, and the
//! identities a connection has authenticated as.

mod caller;
mod expiry;

pub use caller::Caller;
pub use expiry::ExpiryTracker;

use std::collections::HashMap;

use bytes::Bytes;

/// A session as every replica knows it. Changed only by applied txns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    /// The negotiated timeout, milliseconds.
    pub timeout: i32,
    /// What a client must present to reattach; random, made when the session was
    /// proposed, so only the service can know it.
    pub passwd: Bytes,
    /// The server holding the session's connection: writes proposed by any other
    /// server for it are refused with SessionMoved.
    pub owner: u64,
    /// The connection (on `owner`) whose writes the session executes now. A write
    /// from an earlier connection is refused: its client has already been told that
    /// connection's outcome is unknown.
    pub conn: u64,
    /// The sequence number the next write of `conn` must carry. A gap means a write of
    /// that connection was lost on its way; executing a later one would break the rule
    /// that what a session executed is a prefix of what it sent.
    pub next_seq: u64,
}

impl Session {
    /// Whether a write sent by `conn` as its `seq`-th is the one this session executes
    /// next.
    pub fn admits(&self, conn: u64, seq: u64) -> bool {
        self.conn == conn && self.next_seq == seq
    }
}

/// The replicated session table.
#[derive(Debug, Clone, Default)]
pub struct SessionTable {
    sessions: HashMap<i64, Session>,
}

impl SessionTable {
    pub fn insert(&mut self, session: Session) {
        self.sessions.insert(session.id, session);
    }

    pub fn get_mut(&mut self, id: i64) -> Option<&mut Session> {
        self.sessions.get_mut(&id)
    }

    pub fn remove(&mut self, id: i64) -> Option<Session> {
        self.sessions.remove(&id)
    }

    pub fn get(&self, id: i64) -> Option<&Session> {
        self.sessions.get(&id)
    }

    #[cfg(test)]
    pub fn contains(&self, id: i64) -> bool {
        self.sessions.contains_key(&id)
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }
}

/// Compares passwords without an early exit, so timing doesn't tell how much matched.
pub fn passwd_matches(expected: &[u8], given: &[u8]) -> bool {
    expected.len() == given.len()
        && expected
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

//! The request path's way into consensus: proposing writes and waiting for them to be
//! applied (or for a `sync` barrier to hold), matched back through `wait` by id.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use paddock_wire::{ErrorCode, Request};
use tokio::sync::oneshot;

use crate::conns::ConnId;
use crate::consensus::Proposer;
use crate::server::now_millis;
use crate::session::Caller;
use crate::txn::{self, TxnKind};
use crate::wait::{Completion, WaitRegistry};

/// Why a client could not reattach to its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reattach {
    /// Unknown or expired session, or the wrong password: the session is gone for the
    /// client.
    Refused,
    /// The move could not be committed now (no leader): try again, here or elsewhere.
    Unavailable,
}

/// Where a write stands among its connection's writes: the session executes them in
/// `seq` order with no gap (see `Session::admits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteSlot {
    pub conn: ConnId,
    pub seq: u64,
}

impl WriteSlot {
    /// The txn that makes `conn` the session's holder; its writes count from 0.
    pub fn first(conn: ConnId) -> Self {
        WriteSlot { conn, seq: 0 }
    }
}

/// Session ids start from the server id in the top byte and the time below it, as
/// ZooKeeper's `initializeNextSession` does, so ids differ across servers and restarts.
fn first_session_id(server_id: u64) -> i64 {
    let now = now_millis();
    let time_part = ((now << 24) as u64 >> 8) as i64;
    time_part | ((server_id as i64) << 56)
}

pub struct Writes {
    proposer: Proposer,
    /// Shared with the state machine, which completes the waiters.
    waits: Arc<WaitRegistry>,
    next_session: AtomicI64,
    /// `globalOutstandingLimit`: writes and barriers in flight before the server stops
    /// reading from its sockets.
    outstanding_limit: usize,
}

impl Writes {
    pub fn new(
        server_id: u64,
        proposer: Proposer,
        waits: Arc<WaitRegistry>,
        outstanding_limit: usize,
    ) -> Self {
        Writes {
            proposer,
            waits,
            next_session: AtomicI64::new(first_session_id(server_id)),
            outstanding_limit,
        }
    }

    /// Whether the server takes more requests in, or pushes back on its sockets.
    pub fn admits_more(&self) -> bool {
        self.waits.len() < self.outstanding_limit
    }

    /// Writes in flight, for `mntr`.
    pub fn outstanding(&self) -> usize {
        self.waits.len()
    }

    /// Fails the writes whose proposal has not been applied within `limit`: a proposal
    /// lost on its way to the leader is never applied, and its connection closes (the
    /// client learns the outcome is unknown) rather than waiting for ever.
    pub fn expire_lost(&self, limit: Duration) -> usize {
        self.waits.expire_older_than(limit)
    }

    /// Proposes a new session held by connection `conn`, and waits until it is applied.
    pub async fn create_session(
        &self,
        conn: ConnId,
        timeout: i32,
        caller: &Caller,
    ) -> Result<(i64, Bytes), ErrorCode> {
        let session_id = self.next_session.fetch_add(1, Ordering::Relaxed);
        let mut passwd = [0u8; 16];
        getrandom::getrandom(&mut passwd).map_err(|_| ErrorCode::SystemError)?;
        let passwd = Bytes::copy_from_slice(&passwd);
        let kind = TxnKind::CreateSession {
            timeout,
            passwd: passwd.clone(),
        };
        let applied = self
            .propose(session_id, WriteSlot::first(conn), caller, kind)
            .await?;
        applied.result?;
        Ok((session_id, passwd))
    }

    /// Makes connection `conn` the holder of `session_id` (whose credentials the caller
    /// checked), and waits until that is applied.
    pub async fn move_session(&self, conn: ConnId, session_id: i64) -> Result<(), Reattach> {
        // Committed even when the session stays on this server: from here on the
        // session executes this connection's writes only, so a write of the old
        // connection still in flight can never run after the client was told its
        // outcome is unknown. Elsewhere, the old connection is closed and its writes
        // are refused with SessionMoved.
        let applied = self
            .propose(
                session_id,
                WriteSlot::first(conn),
                &Caller::internal(),
                TxnKind::MoveSession,
            )
            .await
            .map_err(|_| Reattach::Unavailable)?;
        match applied.result {
            Ok(_) => Ok(()),
            Err(ErrorCode::SessionExpired) => Err(Reattach::Refused),
            Err(_) => Err(Reattach::Unavailable),
        }
    }

    /// A `sync` barrier: resolves once this server has applied every write committed
    /// before the call (a raft ReadIndex).
    pub fn sync_barrier(&self) -> oneshot::Receiver<Completion> {
        let (origin, rx) = self.waits.register();
        if self.proposer.read_index(origin.request).is_err() {
            self.waits.complete(
                origin,
                Completion {
                    zxid: 0,
                    result: Err(ErrorCode::ConnectionLoss),
                },
            );
        }
        rx
    }

    /// Proposes a client's write, the `slot.seq`-th write of its connection; its result
    /// arrives on the receiver once applied.
    pub fn propose_client_write(
        &self,
        session_id: i64,
        xid: i32,
        slot: WriteSlot,
        caller: &Caller,
        request: Request,
    ) -> oneshot::Receiver<Completion> {
        let kind = match request {
            Request::CloseSession => TxnKind::CloseSession,
            request => TxnKind::Client(request),
        };
        self.propose_kind(session_id, xid, slot, caller, kind)
    }

    async fn propose(
        &self,
        session_id: i64,
        slot: WriteSlot,
        caller: &Caller,
        kind: TxnKind,
    ) -> Result<Completion, ErrorCode> {
        self.propose_kind(session_id, 0, slot, caller, kind)
            .await
            .map_err(|_| ErrorCode::ConnectionLoss)
    }

    fn propose_kind(
        &self,
        session_id: i64,
        xid: i32,
        slot: WriteSlot,
        caller: &Caller,
        kind: TxnKind,
    ) -> oneshot::Receiver<Completion> {
        let (origin, rx) = self.waits.register();
        let head = txn::Head {
            origin,
            session_id,
            xid,
            conn: slot.conn,
            seq: slot.seq,
            time: now_millis(),
        };
        if self
            .proposer
            .propose(txn::encode(&head, caller.ids(), &kind))
            .is_err()
        {
            self.waits.complete(
                origin,
                Completion {
                    zxid: 0,
                    result: Err(ErrorCode::ConnectionLoss),
                },
            );
        }
        rx
    }

    /// Proposes a txn nobody waits for (the leader's expiry and cleanup). An expiry
    /// names `conn`, the connection the session was held by when the leader decided: if
    /// the client reattached since, the expiry is void (see `apply`).
    pub fn propose_internal(&self, session_id: i64, conn: ConnId, kind: TxnKind) {
        let head = txn::Head {
            session_id,
            conn,
            time: now_millis(),
            ..txn::Head::default()
        };
        if self
            .proposer
            .propose(txn::encode(&head, &[], &kind))
            .is_err()
        {
            tracing::warn!("consensus stopped; internal txn dropped");
        }
    }
}

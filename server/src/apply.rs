//! Applying one committed txn: a pure function of the replicated state, the txn and
//! its zxid. It changes the state and returns the reply and the effects; the caller
//! (the state machine) carries the effects out — watch triggers to fan out, sessions
//! whose expiry clocks start or stop, connections to close.
//!
//! Every replica runs this on the same txns in the same order and reaches the same
//! state: each write is validated here, when applied, against the state as it is then.

use paddock_wire::{ErrorCode, OpResult, Request, Response};

use crate::replicated::Db;
use crate::session::Session;
use crate::tree::{TxnContext, WatchTrigger};
use crate::txn::{Txn, TxnKind};

/// ZooKeeper's `znode.container.maxNeverUsedIntervalMs` default: a container that
/// never had a child is kept.
const CONTAINER_MAX_NEVER_USED_MS: i64 = 0;

/// The replicated rules that come from the config (the same on every server).
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// `extendedTypesEnabled`: TTL nodes exist only with it.
    pub extended_types: bool,
    /// `enforceQuota`: hard quota limits refuse writes (QuotaExceeded).
    pub enforce_quota: bool,
}

/// What applying a txn asks of the world outside the replicated state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // all about sessions so far; the names read at the call site
pub enum Effect {
    /// A session was created: its expiry clock starts, with this timeout (ms).
    SessionOpened { session: i64, timeout: i32 },
    /// The session is now held by connection `conn` on server `server`: a connection
    /// holding it anywhere else closes.
    SessionMoved {
        session: i64,
        server: u64,
        conn: u64,
    },
    /// The session ended; `expired` when the leader expired it (its connection, if
    /// still open, closes so the client learns it on reconnect).
    SessionEnded { session: i64, expired: bool },
}

/// What one txn came to.
#[derive(Debug)]
pub struct Outcome {
    pub result: Result<Response, ErrorCode>,
    pub triggers: Vec<WatchTrigger>,
    pub effects: Vec<Effect>,
}

impl Outcome {
    fn reply(result: Result<Response, ErrorCode>) -> Self {
        Outcome {
            result,
            triggers: Vec::new(),
            effects: Vec::new(),
        }
    }

    fn with_triggers(result: Result<Response, ErrorCode>, triggers: Vec<WatchTrigger>) -> Self {
        Outcome {
            result,
            triggers,
            effects: Vec::new(),
        }
    }

    fn effect(mut self, effect: Effect) -> Self {
        self.effects.push(effect);
        self
    }
}

/// Applies `txn` at `zxid` to `db`.
pub fn apply(rules: Rules, db: &mut Db, txn: &Txn, zxid: i64) -> Outcome {
    let ctx = TxnContext {
        zxid,
        time: txn.head.time,
        session_id: txn.head.session_id,
        caller: &txn.caller,
        enforce_quota: rules.enforce_quota,
    };
    let outcome = match &txn.kind {
        TxnKind::Client(request) => match admit(db, txn) {
            Err(code) => Outcome::reply(Err(code)),
            Ok(()) => apply_request(rules, db, request, &ctx),
        },
        TxnKind::MoveSession => match db.sessions.get_mut(txn.head.session_id) {
            None => Outcome::reply(Err(ErrorCode::SessionExpired)),
            Some(session) => {
                session.owner = txn.head.origin.server;
                session.conn = txn.head.conn;
                // This txn is the connection's write 0.
                session.next_seq = txn.head.seq + 1;
                Outcome::reply(Ok(Response::Empty)).effect(Effect::SessionMoved {
                    session: txn.head.session_id,
                    server: txn.head.origin.server,
                    conn: txn.head.conn,
                })
            }
        },
        TxnKind::CreateSession { timeout, passwd } => {
            db.sessions.insert(Session {
                id: txn.head.session_id,
                timeout: *timeout,
                // A copy: the txn's bytes may be a slice of a whole batch of entries
                // received from the leader, which a session would keep alive.
                passwd: bytes::Bytes::copy_from_slice(passwd),
                owner: txn.head.origin.server,
                conn: txn.head.conn,
                // This txn is the connection's write 0.
                next_seq: txn.head.seq + 1,
            });
            Outcome::reply(Ok(Response::Empty)).effect(Effect::SessionOpened {
                session: txn.head.session_id,
                timeout: *timeout,
            })
        }
        TxnKind::CloseSession | TxnKind::ExpireSession => {
            let expired = matches!(txn.kind, TxnKind::ExpireSession);
            let Some(session) = db.sessions.get(txn.head.session_id) else {
                return Outcome::reply(Ok(Response::Empty));
            };
            if expired && txn.head.conn != 0 && session.conn != txn.head.conn {
                // The client reattached after the leader decided to expire the session
                // (the reattach counts as hearing from it): the expiry is void.
                return Outcome::reply(Ok(Response::Empty));
            }
            if !expired {
                if let Err(code) = admit(db, txn) {
                    return Outcome::reply(Err(code));
                }
            }
            db.sessions.remove(txn.head.session_id);
            let killed = db.tree.kill_session(txn.head.session_id, zxid);
            Outcome::with_triggers(Ok(Response::Empty), killed.triggers).effect(
                Effect::SessionEnded {
                    session: txn.head.session_id,
                    expired,
                },
            )
        }
        TxnKind::DeleteContainer { path } => {
            match db
                .tree
                .delete_container(path, CONTAINER_MAX_NEVER_USED_MS, &ctx)
            {
                Ok(applied) => Outcome::with_triggers(Ok(Response::Empty), applied.triggers),
                // A child arrived, or the node is gone: nothing to do.
                Err(code) => Outcome::reply(Err(code)),
            }
        }
    };
    db.last_zxid = zxid;
    outcome
}

/// Checks that a session's write comes from the connection that holds the session
/// now, as the next one that connection sent, and counts it as executed.
///
/// A write proposed for a connection the session has left is refused with
/// SessionMoved (another server) or ConnectionLoss (an earlier connection here); one
/// that arrives after a gap — an earlier write of its connection was lost on the way —
/// with ConnectionLoss, which closes that connection: the client then knows the outcome
/// of everything it had in flight is unknown, and the session never executes a write
/// that follows a skipped one.
fn admit(db: &mut Db, txn: &Txn) -> Result<(), ErrorCode> {
    let session = db
        .sessions
        .get_mut(txn.head.session_id)
        .ok_or(ErrorCode::SessionExpired)?;
    if session.owner != txn.head.origin.server {
        return Err(ErrorCode::SessionMoved);
    }
    if !session.admits(txn.head.conn, txn.head.seq) {
        return Err(ErrorCode::ConnectionLoss);
    }
    session.next_seq += 1;
    Ok(())
}

fn apply_request(rules: Rules, db: &mut Db, request: &Request, ctx: &TxnContext<'_>) -> Outcome {
    if uses_extended_types(request) && !rules.extended_types {
        // As ZooKeeper: TTL nodes exist only with extendedTypesEnabled=true.
        return Outcome::reply(Err(ErrorCode::Unimplemented));
    }
    match request {
        Request::Multi(ops) => {
            let applied = db.tree.multi(ops, ctx);
            Outcome::with_triggers(Ok(Response::Multi(applied.result)), applied.triggers)
        }
        Request::SetAcl(r) => match db.tree.set_acl(&r.path, &r.acl, r.version, ctx) {
            Ok(applied) => {
                Outcome::with_triggers(Ok(Response::Stat(applied.result)), applied.triggers)
            }
            Err(code) => Outcome::reply(Err(code)),
        },
        op => match db.tree.apply_op(op, ctx) {
            Ok(applied) => {
                Outcome::with_triggers(Ok(single_response(applied.result)), applied.triggers)
            }
            Err(code) => Outcome::reply(Err(code)),
        },
    }
}

fn uses_extended_types(request: &Request) -> bool {
    match request {
        Request::CreateTtl(_) => true,
        Request::Multi(ops) => ops.iter().any(uses_extended_types),
        _ => false,
    }
}

/// The reply to a write made outside a multi, from the result it would have in one.
fn single_response(result: OpResult) -> Response {
    match result {
        OpResult::Create { path } => Response::Create { path },
        OpResult::Create2 { path, stat } => Response::Create2 { path, stat },
        OpResult::SetData { stat } => Response::Stat(stat),
        OpResult::GetData { data, stat } => Response::GetData { data, stat },
        OpResult::GetChildren { children } => Response::GetChildren { children },
        OpResult::Delete | OpResult::Check | OpResult::Error(_) => Response::Empty,
    }
}

#[cfg(test)]
#[path = "apply/tests.rs"]
mod tests;

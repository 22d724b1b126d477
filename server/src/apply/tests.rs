use super::*;

use bytes::Bytes;
use paddock_wire::{Acl, CreateRequest};

use crate::session::SessionTable;
use crate::tree::DataTree;
use crate::txn::Origin;

const RULES: Rules = Rules {
    extended_types: false,
    enforce_quota: false,
};
const SESSION: i64 = 0x0100_0000_0000_0001;

fn db() -> Db {
    Db {
        tree: DataTree::new(),
        sessions: SessionTable::default(),
        last_zxid: 0,
    }
}

fn txn(server: u64, conn: u64, seq: u64, kind: TxnKind) -> Txn {
    Txn {
        head: crate::txn::Head {
            origin: Origin { server, request: 1 },
            session_id: SESSION,
            xid: 1,
            conn,
            seq,
            time: 1_000,
        },
        caller: Vec::new(),
        kind,
    }
}

fn create(path: &str, flags: i32) -> TxnKind {
    TxnKind::Client(Request::Create(CreateRequest {
        path: path.into(),
        data: Bytes::new().into(),
        acl: Acl::open_unsafe(),
        flags,
    }))
}

fn open_session(db: &mut Db, server: u64, conn: u64) -> Outcome {
    let kind = TxnKind::CreateSession {
        timeout: 4000,
        passwd: Bytes::from_static(&[1; 16]),
    };
    apply(RULES, db, &txn(server, conn, 0, kind), 1)
}

/// A write that follows a lost one of the same connection must not run: what a session
/// executed is always a prefix of what it sent (ZooKeeper's FIFO client order). Before
/// connections' writes carried sequence numbers, `/b` was created here although `/a`'s
/// proposal had been dropped.
#[test]
fn a_write_after_a_lost_one_of_its_connection_is_refused() {
    let mut db = db();
    open_session(&mut db, 1, 10);
    // Write 1 (/a) was lost on its way; write 2 arrives.
    let outcome = apply(RULES, &mut db, &txn(1, 10, 2, create("/b", 0)), 2);
    assert_eq!(outcome.result.unwrap_err(), ErrorCode::ConnectionLoss);
    assert!(db.tree.node("/b").is_none());
    // Nothing later of that connection runs either, even the lost write's late copy
    // after the gap was seen... until the client reattaches.
    let outcome = apply(RULES, &mut db, &txn(1, 10, 3, create("/c", 0)), 3);
    assert_eq!(outcome.result.unwrap_err(), ErrorCode::ConnectionLoss);
    assert_eq!(db.last_zxid, 3);
}

#[test]
fn a_connections_writes_run_in_order() {
    let mut db = db();
    open_session(&mut db, 1, 10);
    for (seq, path) in [(1, "/a"), (2, "/b"), (3, "/a")] {
        let outcome = apply(
            RULES,
            &mut db,
            &txn(1, 10, seq, create(path, 0)),
            1 + seq as i64,
        );
        // The second /a fails as NodeExists, but it was executed: the next one counts on.
        if seq == 3 {
            assert_eq!(outcome.result.unwrap_err(), ErrorCode::NodeExists);
        } else {
            assert!(outcome.result.is_ok());
        }
    }
    let outcome = apply(RULES, &mut db, &txn(1, 10, 4, create("/c", 0)), 5);
    assert!(outcome.result.is_ok());
}

/// Once a client reattached (on this server or another), a write still in flight from
/// its old connection is refused: the client was told its outcome is unknown, and a
/// later write of the new connection may already have run.
#[test]
fn a_reattached_session_refuses_its_old_connections_writes() {
    let mut db = db();
    open_session(&mut db, 1, 10);
    let moved = apply(RULES, &mut db, &txn(1, 11, 0, TxnKind::MoveSession), 2);
    assert_eq!(
        moved.effects,
        vec![Effect::SessionMoved {
            session: SESSION,
            server: 1,
            conn: 11
        }]
    );
    let stale = apply(RULES, &mut db, &txn(1, 10, 1, create("/old", 0)), 3);
    assert_eq!(stale.result.unwrap_err(), ErrorCode::ConnectionLoss);
    let fresh = apply(RULES, &mut db, &txn(1, 11, 1, create("/new", 0)), 4);
    assert!(fresh.result.is_ok());
    // Moved to server 2: server 1's proposals for it are SessionMoved, as in ZooKeeper.
    apply(RULES, &mut db, &txn(2, 20, 0, TxnKind::MoveSession), 5);
    let elsewhere = apply(RULES, &mut db, &txn(1, 11, 2, create("/x", 0)), 6);
    assert_eq!(elsewhere.result.unwrap_err(), ErrorCode::SessionMoved);
    let close = apply(RULES, &mut db, &txn(1, 11, 2, TxnKind::CloseSession), 7);
    assert_eq!(close.result.unwrap_err(), ErrorCode::SessionMoved);
    assert!(db.sessions.contains(SESSION));
}

#[test]
fn sessions_open_and_end_as_effects() {
    let mut db = db();
    let opened = open_session(&mut db, 1, 10);
    assert_eq!(
        opened.effects,
        vec![Effect::SessionOpened {
            session: SESSION,
            timeout: 4000
        }]
    );
    // An ephemeral node (flags 1) goes with its session.
    apply(RULES, &mut db, &txn(1, 10, 1, create("/e", 1)), 2);
    let expired = apply(RULES, &mut db, &txn(0, 0, 0, TxnKind::ExpireSession), 3);
    assert_eq!(
        expired.effects,
        vec![Effect::SessionEnded {
            session: SESSION,
            expired: true
        }]
    );
    assert!(db.tree.node("/e").is_none());
    assert!(!db.sessions.contains(SESSION));
    // A write for the gone session.
    let late = apply(RULES, &mut db, &txn(1, 10, 2, create("/f", 0)), 4);
    assert_eq!(late.result.unwrap_err(), ErrorCode::SessionExpired);
}

/// The leader decides to expire a session at the moment its client reattaches: the
/// expiry, ordered after the reattach, must not kill the session the client was just
/// told it still has (found by the simulated ensemble).
#[test]
fn an_expiry_decided_before_a_reattach_is_void() {
    let mut db = db();
    open_session(&mut db, 1, 10);
    apply(RULES, &mut db, &txn(2, 20, 0, TxnKind::MoveSession), 2);
    // The leader saw connection 10 holding the session when it decided.
    let mut expire = txn(0, 10, 0, TxnKind::ExpireSession);
    expire.head.origin = Origin::default();
    let void = apply(RULES, &mut db, &expire, 3);
    assert!(void.effects.is_empty());
    assert!(db.sessions.contains(SESSION));
    // Decided with the current connection, it takes effect.
    let mut expire = txn(0, 20, 0, TxnKind::ExpireSession);
    expire.head.origin = Origin::default();
    let done = apply(RULES, &mut db, &expire, 4);
    assert!(!done.effects.is_empty());
    assert!(!db.sessions.contains(SESSION));
}

/// A session keeps its password for its whole life; if that were a slice of the buffer
/// the txn was decoded from (on a follower, a whole batch of entries from the leader),
/// every session would keep such a buffer alive.
#[test]
fn a_session_keeps_no_slice_of_the_txn_it_was_opened_by() {
    let kind = TxnKind::CreateSession {
        timeout: 4000,
        passwd: Bytes::from_static(&[7; 16]),
    };
    let mut batch = txn(1, 10, 0, kind).encode();
    let len = batch.len();
    batch.extend_from_slice(&[0; 4096]); // the rest of a batch
    let batch = Bytes::from(batch);
    let decoded = Txn::decode(batch.slice(..len)).expect("decode");
    let mut db = db();
    apply(RULES, &mut db, &decoded, 1);
    drop(decoded);
    assert!(db.sessions.contains(SESSION));
    assert!(
        batch.is_unique(),
        "the session's password keeps the batch it came in alive"
    );
}

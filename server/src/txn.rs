//! The replicated command. A client write becomes a [`Txn`] once, on the server that
//! proposes it, which stamps everything that must not differ between replicas (the
//! time, the session's identities, a new session's id and password). Every replica then
//! validates and applies the txn from its bytes alone.
//!
//! Encoding (jute primitives, big-endian), one raft entry's data:
//! `origin.server i64 | origin.request i64 | session_id i64 | xid i32 | conn i64 |
//!  seq i64 | time i64 | caller vector<Id> | kind i32 | body`, where the body of kind
//! 0 (client request) is `op i32` + the request record as the client sent it,
//! 1 (create session) is `timeout i32 | passwd buffer`, 2 (close session) is empty,
//! 3 (expire session) is empty, 4 (delete container) is `path ustring`, and 5 (move
//! session) is empty.

use bytes::{Bytes, BytesMut};
use paddock_wire::jute::{write_i32, write_i64, write_records, Reader, Record};
use paddock_wire::{DecodeError, Id, OpCode, Request};

/// Who is waiting for a txn's result: the proposing server and its request counter.
/// A server answers only the txns it proposed itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Origin {
    pub server: u64,
    pub request: u64,
}

/// The bytes that start every encoded txn: its origin.
pub const ORIGIN_LEN: usize = 16;

impl Origin {
    /// The origin at the head of an encoded txn, from its first [`ORIGIN_LEN`] bytes.
    pub fn from_txn_head(head: &[u8]) -> Option<Origin> {
        let (server, request) = head.get(..ORIGIN_LEN)?.split_at(ORIGIN_LEN / 2);
        Some(Origin {
            server: u64::from_be_bytes(server.try_into().ok()?),
            request: u64::from_be_bytes(request.try_into().ok()?),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    pub head: Head,
    /// The session's identities when the request was made (ip, digest, super), so ACLs
    /// are checked the same way on every replica.
    pub caller: Vec<Id>,
    pub kind: TxnKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnKind {
    /// A client's write: create*, delete, setData, setACL, check or multi.
    Client(Request),
    CreateSession {
        timeout: i32,
        /// Random, made by the proposer: what a client must show to reattach.
        passwd: Bytes,
    },
    /// The client closed its session.
    CloseSession,
    /// The leader found the session silent for longer than its timeout. `conn` names
    /// the connection that held it then: void if the client has reattached since.
    ExpireSession,
    /// The leader's cleanup of an empty container or an expired TTL node; re-checked
    /// when applied, since a child may have been added meanwhile.
    DeleteContainer { path: String },
    /// The session's client (re)attached on the proposing server's connection `conn`:
    /// that server owns the session now, and its writes are executed from `seq` 0.
    MoveSession,
}

/// The `kind` field's values (see the module docs).
mod kind {
    pub const CLIENT: i32 = 0;
    pub const CREATE_SESSION: i32 = 1;
    pub const CLOSE_SESSION: i32 = 2;
    pub const EXPIRE_SESSION: i32 = 3;
    pub const DELETE_CONTAINER: i32 = 4;
    pub const MOVE_SESSION: i32 = 5;
}

/// A txn's fixed fields: all but the caller's identities and the kind, which are
/// kept apart so the proposer can encode a write from borrowed ones ([`encode`])
/// rather than copy its session's identities into a [`Txn`] only to serialize them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Head {
    pub origin: Origin,
    pub session_id: i64,
    /// The client's xid, echoed in the reply.
    pub xid: i32,
    /// The client connection that sent it (unique across servers' incarnations), and
    /// its place among that connection's writes: applied only in that order, with no
    /// gap (see `Session::admits`). Both 0 for the leader's own txns.
    pub conn: u64,
    pub seq: u64,
    /// Milliseconds since the epoch, stamped once by the proposer: ctime and mtime.
    pub time: i64,
}

impl Txn {
    /// What [`Txn::decode`] reads back; the servers themselves encode with [`encode`],
    /// from the parts they have.
    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        encode(&self.head, &self.caller, &self.kind)
    }

    pub fn decode(data: Bytes) -> Result<Txn, DecodeError> {
        let mut r = Reader::new(data);
        let head = Head {
            origin: Origin {
                server: r.read_i64()? as u64,
                request: r.read_i64()? as u64,
            },
            session_id: r.read_i64()?,
            xid: r.read_i32()?,
            conn: r.read_i64()? as u64,
            seq: r.read_i64()? as u64,
            time: r.read_i64()?,
        };
        let caller = Vec::<Id>::decode(&mut r)?;
        let kind = match r.read_i32()? {
            kind::CLIENT => {
                let op = OpCode::try_from(r.read_i32()?)?;
                TxnKind::Client(Request::decode(op, &mut r)?)
            }
            kind::CREATE_SESSION => TxnKind::CreateSession {
                timeout: r.read_i32()?,
                passwd: r.read_buffer()?,
            },
            kind::CLOSE_SESSION => TxnKind::CloseSession,
            kind::EXPIRE_SESSION => TxnKind::ExpireSession,
            kind::DELETE_CONTAINER => TxnKind::DeleteContainer {
                path: r.read_ustring()?,
            },
            kind::MOVE_SESSION => TxnKind::MoveSession,
            other => {
                return Err(DecodeError::InvalidValue {
                    field: "txn kind",
                    value: other.into(),
                })
            }
        };
        r.finish()?;
        Ok(Txn { head, caller, kind })
    }
}

/// The head's fields as [`encode`] writes them: six i64 and one i32.
const HEAD_BYTES: usize = 6 * 8 + 4;

/// One raft entry's data: the txn of `head`, `caller` and `kind`, as [`Txn::decode`]
/// reads it back.
pub fn encode(head: &Head, caller: &[Id], kind: &TxnKind) -> Vec<u8> {
    // One allocation: a create's path and data would outgrow a fixed guess.
    let kind_hint = match kind {
        TxnKind::Client(request) => request.size_hint(),
        _ => 64,
    };
    let caller_hint: usize = caller
        .iter()
        .map(|id| 16 + id.scheme.len() + id.id.len())
        .sum();
    let mut buf = BytesMut::with_capacity(HEAD_BYTES + 4 + caller_hint + 8 + kind_hint);
    write_i64(&mut buf, head.origin.server as i64);
    write_i64(&mut buf, head.origin.request as i64);
    write_i64(&mut buf, head.session_id);
    write_i32(&mut buf, head.xid);
    write_i64(&mut buf, head.conn as i64);
    write_i64(&mut buf, head.seq as i64);
    write_i64(&mut buf, head.time);
    write_records(&mut buf, caller);
    match kind {
        TxnKind::Client(request) => {
            write_i32(&mut buf, kind::CLIENT);
            write_i32(&mut buf, request.op_code().as_i32());
            request.encode(&mut buf);
        }
        TxnKind::CreateSession { timeout, passwd } => {
            write_i32(&mut buf, kind::CREATE_SESSION);
            write_i32(&mut buf, *timeout);
            passwd.encode(&mut buf);
        }
        TxnKind::CloseSession => write_i32(&mut buf, kind::CLOSE_SESSION),
        TxnKind::ExpireSession => write_i32(&mut buf, kind::EXPIRE_SESSION),
        TxnKind::DeleteContainer { path } => {
            write_i32(&mut buf, kind::DELETE_CONTAINER);
            path.encode(&mut buf);
        }
        TxnKind::MoveSession => write_i32(&mut buf, kind::MOVE_SESSION),
    }
    // A fresh buffer's allocation becomes the Vec as it is, without a copy.
    Vec::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_wire::{Acl, CreateRequest, PathVersionRequest};

    #[test]
    fn txns_round_trip() {
        let base = Txn {
            head: Head {
                origin: Origin {
                    server: 3,
                    request: 99,
                },
                session_id: 0x0100_0000_0000_0001,
                xid: 12,
                conn: 0xdead_beef_0000_0007,
                seq: 41,
                time: 1_700_000_000_000,
            },
            caller: vec![Id::new("ip", "127.0.0.1"), Id::new("digest", "u:h")],
            kind: TxnKind::CloseSession,
        };
        let kinds = [
            TxnKind::Client(Request::Multi(vec![
                Request::Create(CreateRequest {
                    path: "/a".into(),
                    data: Bytes::from_static(b"x").into(),
                    acl: Acl::open_unsafe(),
                    flags: 1,
                }),
                Request::Delete(PathVersionRequest {
                    path: "/a".into(),
                    version: 0,
                }),
            ])),
            // Null data is logged as null, not as empty.
            TxnKind::Client(Request::Create(CreateRequest {
                path: "/n".into(),
                data: paddock_wire::Data::NULL,
                acl: Acl::open_unsafe(),
                flags: 0,
            })),
            TxnKind::CreateSession {
                timeout: 4000,
                passwd: Bytes::from_static(&[7; 16]),
            },
            TxnKind::CloseSession,
            TxnKind::ExpireSession,
            TxnKind::DeleteContainer { path: "/c".into() },
            TxnKind::MoveSession,
        ];
        for kind in kinds {
            let txn = Txn {
                kind,
                ..base.clone()
            };
            assert_eq!(Txn::decode(Bytes::from(txn.encode())), Ok(txn));
        }
    }

    #[test]
    fn the_origin_is_read_from_a_txns_head_alone() {
        let origin = Origin {
            server: 2,
            request: 0x1234_5678_9abc,
        };
        let txn = Txn {
            head: Head {
                origin,
                session_id: 1,
                xid: 1,
                conn: 3,
                seq: 4,
                time: 5,
            },
            caller: Vec::new(),
            kind: TxnKind::CloseSession,
        };
        let encoded = txn.encode();
        assert_eq!(Origin::from_txn_head(&encoded[..ORIGIN_LEN]), Some(origin));
        assert_eq!(Origin::from_txn_head(&encoded[..ORIGIN_LEN - 1]), None);
    }

    #[test]
    fn corrupt_txns_are_errors() {
        assert!(Txn::decode(Bytes::from_static(b"short")).is_err());
    }
}

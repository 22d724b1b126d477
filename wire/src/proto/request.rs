//! Request records and the typed [`Request`] they make up, one variant per op.

use bytes::{Bytes, BytesMut};

use crate::error::DecodeError;
use crate::jute::{write_i32, Reader, Record};
use crate::jute_record;
use crate::opcode::OpCode;
use crate::proto::data::{Acl, Data};
use crate::proto::header::{MultiHeader, RequestHeader};
use crate::proto::watch::{SetWatches, SetWatches2};

jute_record! {
    /// `CreateRequest`: create, create2 and createContainer share this layout.
    pub struct CreateRequest {
        pub path: String,
        pub data: Data,
        pub acl: Vec<Acl>,
        /// The `CreateMode`, raw so the server can answer an unknown one with an error.
        pub flags: i32,
    }
}

jute_record! {
    /// `CreateTTLRequest`: a create whose node is removed once it has had no children
    /// and no change for `ttl` milliseconds.
    pub struct CreateTtlRequest {
        pub path: String,
        pub data: Data,
        pub acl: Vec<Acl>,
        pub flags: i32,
        pub ttl: i64,
    }
}

jute_record! {
    /// `DeleteRequest` and `CheckVersionRequest`: a path and the version it must have
    /// (-1 for any).
    pub struct PathVersionRequest {
        pub path: String,
        pub version: i32,
    }
}

jute_record! {
    /// `ExistsRequest`, `GetDataRequest`, `GetChildrenRequest` and
    /// `GetChildren2Request`: a path and whether to leave a one-shot watch on it.
    pub struct WatchedPathRequest {
        pub path: String,
        pub watch: bool,
    }
}

jute_record! {
    /// `SetDataRequest`.
    pub struct SetDataRequest {
        pub path: String,
        pub data: Data,
        pub version: i32,
    }
}

jute_record! {
    /// `GetACLRequest`, `SyncRequest`, `GetAllChildrenNumberRequest` and
    /// `GetEphemeralsRequest` (whose path is a prefix, not necessarily a node).
    pub struct PathRequest {
        pub path: String,
    }
}

jute_record! {
    /// `SetACLRequest`: `version` is the expected `aversion`.
    pub struct SetAclRequest {
        pub path: String,
        pub acl: Vec<Acl>,
        pub version: i32,
    }
}

jute_record! {
    /// `ReconfigRequest`: dynamic membership changes.
    pub struct ReconfigRequest {
        pub joining_servers: String,
        pub leaving_servers: String,
        pub new_members: String,
        pub cur_config_id: i64,
    }
}

jute_record! {
    /// `CheckWatchesRequest` and `RemoveWatchesRequest`.
    pub struct WatchesRequest {
        pub path: String,
        /// A `WatcherType`, raw so the server can answer an unknown one with an error.
        pub watcher_type: i32,
    }
}

jute_record! {
    /// `AddWatchRequest`: a persistent watch, recursive or not.
    pub struct AddWatchRequest {
        pub path: String,
        /// An `AddWatchMode`, raw so the server can answer an unknown one with an error.
        pub mode: i32,
    }
}

jute_record! {
    /// `AuthPacket` (`addauth`): `auth_type` is always 0 in practice.
    pub struct AuthPacket {
        pub auth_type: i32,
        pub scheme: String,
        pub auth: Bytes,
    }
}

/// One request of any op: what follows a [`RequestHeader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Create(CreateRequest),
    Create2(CreateRequest),
    CreateContainer(CreateRequest),
    CreateTtl(CreateTtlRequest),
    Delete(PathVersionRequest),
    Exists(WatchedPathRequest),
    GetData(WatchedPathRequest),
    SetData(SetDataRequest),
    GetAcl(PathRequest),
    SetAcl(SetAclRequest),
    GetChildren(WatchedPathRequest),
    GetChildren2(WatchedPathRequest),
    Sync(PathRequest),
    Ping,
    Check(PathVersionRequest),
    /// All-or-nothing writes: create*, delete, setData and check ops.
    Multi(Vec<Request>),
    /// Independent reads in one round trip: getData and getChildren ops.
    MultiRead(Vec<Request>),
    Reconfig(ReconfigRequest),
    CheckWatches(WatchesRequest),
    RemoveWatches(WatchesRequest),
    Auth(AuthPacket),
    SetWatches(SetWatches),
    SetWatches2(SetWatches2),
    /// A SASL token (`GetSASLRequest`); decoded so it can be refused cleanly.
    Sasl(Bytes),
    GetEphemerals(PathRequest),
    GetAllChildrenNumber(PathRequest),
    AddWatch(AddWatchRequest),
    WhoAmI,
    CloseSession,
}

impl Request {
    pub fn op_code(&self) -> OpCode {
        match self {
            Request::Create(_) => OpCode::Create,
            Request::Create2(_) => OpCode::Create2,
            Request::CreateContainer(_) => OpCode::CreateContainer,
            Request::CreateTtl(_) => OpCode::CreateTtl,
            Request::Delete(_) => OpCode::Delete,
            Request::Exists(_) => OpCode::Exists,
            Request::GetData(_) => OpCode::GetData,
            Request::SetData(_) => OpCode::SetData,
            Request::GetAcl(_) => OpCode::GetAcl,
            Request::SetAcl(_) => OpCode::SetAcl,
            Request::GetChildren(_) => OpCode::GetChildren,
            Request::GetChildren2(_) => OpCode::GetChildren2,
            Request::Sync(_) => OpCode::Sync,
            Request::Ping => OpCode::Ping,
            Request::Check(_) => OpCode::Check,
            Request::Multi(_) => OpCode::Multi,
            Request::MultiRead(_) => OpCode::MultiRead,
            Request::Reconfig(_) => OpCode::Reconfig,
            Request::CheckWatches(_) => OpCode::CheckWatches,
            Request::RemoveWatches(_) => OpCode::RemoveWatches,
            Request::Auth(_) => OpCode::Auth,
            Request::SetWatches(_) => OpCode::SetWatches,
            Request::SetWatches2(_) => OpCode::SetWatches2,
            Request::Sasl(_) => OpCode::Sasl,
            Request::GetEphemerals(_) => OpCode::GetEphemerals,
            Request::GetAllChildrenNumber(_) => OpCode::GetAllChildrenNumber,
            Request::AddWatch(_) => OpCode::AddWatch,
            Request::WhoAmI => OpCode::WhoAmI,
            Request::CloseSession => OpCode::CloseSession,
        }
    }

    /// The znode path the request is about, if it has one.
    pub fn path(&self) -> Option<&str> {
        Some(match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => &r.path,
            Request::CreateTtl(r) => &r.path,
            Request::Delete(r) | Request::Check(r) => &r.path,
            Request::Exists(r)
            | Request::GetData(r)
            | Request::GetChildren(r)
            | Request::GetChildren2(r) => &r.path,
            Request::SetData(r) => &r.path,
            Request::GetAcl(r)
            | Request::Sync(r)
            | Request::GetEphemerals(r)
            | Request::GetAllChildrenNumber(r) => &r.path,
            Request::SetAcl(r) => &r.path,
            Request::CheckWatches(r) | Request::RemoveWatches(r) => &r.path,
            Request::AddWatch(r) => &r.path,
            _ => return None,
        })
    }

    /// Bytes of znode data the request carries (a multi's, summed).
    pub fn data_len(&self) -> usize {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => r.data.len(),
            Request::CreateTtl(r) => r.data.len(),
            Request::SetData(r) => r.data.len(),
            Request::Multi(ops) => ops.iter().map(Request::data_len).sum(),
            _ => 0,
        }
    }

    /// About as many bytes as [`Request::encode`] writes, or somewhat more: its data
    /// and path, plus room for the fixed fields and a short ACL. For buffers sized once.
    pub fn size_hint(&self) -> usize {
        const FIXED_AND_SHORT_ACL: usize = 96;
        match self {
            Request::Multi(ops) => {
                FIXED_AND_SHORT_ACL + ops.iter().map(Request::size_hint).sum::<usize>()
            }
            _ => FIXED_AND_SHORT_ACL + self.data_len() + self.path().map_or(0, str::len),
        }
    }

    /// Encodes the body (everything after the [`RequestHeader`]).
    pub fn encode(&self, buf: &mut BytesMut) {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => r.encode(buf),
            Request::CreateTtl(r) => r.encode(buf),
            Request::Delete(r) | Request::Check(r) => r.encode(buf),
            Request::Exists(r)
            | Request::GetData(r)
            | Request::GetChildren(r)
            | Request::GetChildren2(r) => r.encode(buf),
            Request::SetData(r) => r.encode(buf),
            Request::GetAcl(r)
            | Request::Sync(r)
            | Request::GetEphemerals(r)
            | Request::GetAllChildrenNumber(r) => r.encode(buf),
            Request::SetAcl(r) => r.encode(buf),
            Request::Multi(ops) | Request::MultiRead(ops) => {
                for op in ops {
                    MultiHeader {
                        op: op.op_code().as_i32(),
                        done: false,
                        err: -1,
                    }
                    .encode(buf);
                    op.encode(buf);
                }
                MultiHeader::END.encode(buf);
            }
            Request::Reconfig(r) => r.encode(buf),
            Request::CheckWatches(r) | Request::RemoveWatches(r) => r.encode(buf),
            Request::Auth(r) => r.encode(buf),
            Request::SetWatches(r) => r.encode(buf),
            Request::SetWatches2(r) => r.encode(buf),
            Request::Sasl(token) => token.encode(buf),
            Request::AddWatch(r) => r.encode(buf),
            Request::Ping | Request::WhoAmI | Request::CloseSession => {}
        }
    }

    /// Encodes a header and this request as one frame payload.
    pub fn encode_with_header(&self, xid: i32, buf: &mut BytesMut) {
        write_i32(buf, xid);
        write_i32(buf, self.op_code().as_i32());
        self.encode(buf);
    }

    /// Decodes the body of an `op` request. Bytes after the body are left unread, as
    /// ZooKeeper ignores them.
    pub fn decode(op: OpCode, r: &mut Reader) -> Result<Request, DecodeError> {
        Ok(match op {
            OpCode::Create => Request::Create(Record::decode(r)?),
            OpCode::Create2 => Request::Create2(Record::decode(r)?),
            OpCode::CreateContainer => Request::CreateContainer(Record::decode(r)?),
            OpCode::CreateTtl => Request::CreateTtl(Record::decode(r)?),
            OpCode::Delete => Request::Delete(Record::decode(r)?),
            OpCode::Exists => Request::Exists(Record::decode(r)?),
            OpCode::GetData => Request::GetData(Record::decode(r)?),
            OpCode::SetData => Request::SetData(Record::decode(r)?),
            OpCode::GetAcl => Request::GetAcl(Record::decode(r)?),
            OpCode::SetAcl => Request::SetAcl(Record::decode(r)?),
            OpCode::GetChildren => Request::GetChildren(Record::decode(r)?),
            OpCode::GetChildren2 => Request::GetChildren2(Record::decode(r)?),
            OpCode::Sync => Request::Sync(Record::decode(r)?),
            OpCode::Ping => Request::Ping,
            OpCode::Check => Request::Check(Record::decode(r)?),
            OpCode::Multi => Request::Multi(decode_ops(r, is_multi_write_op)?),
            OpCode::MultiRead => Request::MultiRead(decode_ops(r, is_multi_read_op)?),
            OpCode::Reconfig => Request::Reconfig(Record::decode(r)?),
            OpCode::CheckWatches => Request::CheckWatches(Record::decode(r)?),
            OpCode::RemoveWatches => Request::RemoveWatches(Record::decode(r)?),
            OpCode::Auth => Request::Auth(Record::decode(r)?),
            OpCode::SetWatches => Request::SetWatches(Record::decode(r)?),
            OpCode::SetWatches2 => Request::SetWatches2(Record::decode(r)?),
            OpCode::Sasl => Request::Sasl(Record::decode(r)?),
            OpCode::GetEphemerals => Request::GetEphemerals(Record::decode(r)?),
            OpCode::GetAllChildrenNumber => Request::GetAllChildrenNumber(Record::decode(r)?),
            OpCode::AddWatch => Request::AddWatch(Record::decode(r)?),
            OpCode::WhoAmI => Request::WhoAmI,
            OpCode::CloseSession => Request::CloseSession,
            OpCode::Notification
            | OpCode::DeleteContainer
            | OpCode::CreateSession
            | OpCode::Error => return Err(DecodeError::UnexpectedOpCode(op.as_i32())),
        })
    }

    /// Decodes a whole request frame payload: header, then body.
    pub fn decode_frame(frame: Bytes) -> Result<(RequestHeader, Request), DecodeError> {
        let mut r = Reader::new(frame);
        let header = RequestHeader::decode(&mut r)?;
        let op = OpCode::try_from(header.op)?;
        Ok((header, Request::decode(op, &mut r)?))
    }
}

fn is_multi_write_op(op: OpCode) -> bool {
    matches!(
        op,
        OpCode::Create
            | OpCode::Create2
            | OpCode::CreateContainer
            | OpCode::CreateTtl
            | OpCode::Delete
            | OpCode::SetData
            | OpCode::Check
    )
}

fn is_multi_read_op(op: OpCode) -> bool {
    matches!(op, OpCode::GetData | OpCode::GetChildren)
}

/// The ops of a multi: (header, op) pairs until a header with `done` set.
fn decode_ops(r: &mut Reader, allowed: fn(OpCode) -> bool) -> Result<Vec<Request>, DecodeError> {
    let mut ops = Vec::new();
    loop {
        let header = MultiHeader::decode(r)?;
        if header.done {
            return Ok(ops);
        }
        let op = OpCode::try_from(header.op)?;
        if !allowed(op) {
            return Err(DecodeError::UnexpectedOpCode(header.op));
        }
        ops.push(Request::decode(op, r)?);
    }
}

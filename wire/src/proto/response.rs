//! The typed [`Response`]: what follows a [`ReplyHeader`] whose `err` is 0.
//!
//! A reply carries no op code, so decoding needs the op of the request it answers; the
//! client keeps that by xid.

use bytes::{Bytes, BytesMut};

use crate::error::{DecodeError, ErrorCode};
use crate::jute::{write_i32, Reader, Record};
use crate::opcode::OpCode;
use crate::proto::data::{Acl, ClientInfo, Data, Stat};
use crate::proto::multi::{decode_results, encode_results, OpResult};

/// The body of a successful reply, one variant per response record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// No body: delete, check, ping, auth, setWatches, checkWatches, removeWatches,
    /// closeSession, and every error reply.
    Empty,
    /// `ErrorResponse`, a bare result code: ZooKeeper answers addWatch with one (0).
    Code(ErrorCode),
    /// `CreateResponse`: the created path.
    Create {
        path: String,
    },
    /// `Create2Response`: for create2, createContainer and createTTL.
    Create2 {
        path: String,
        stat: Stat,
    },
    /// `ExistsResponse`, `SetDataResponse`, `SetACLResponse`.
    Stat(Stat),
    /// `GetDataResponse`, also the reply to reconfig.
    GetData {
        data: Data,
        stat: Stat,
    },
    GetAcl {
        acl: Vec<Acl>,
        stat: Stat,
    },
    GetChildren {
        children: Vec<String>,
    },
    GetChildren2 {
        children: Vec<String>,
        stat: Stat,
    },
    Sync {
        path: String,
    },
    /// `MultiResponse`, for both multi and multiRead.
    Multi(Vec<OpResult>),
    Ephemerals(Vec<String>),
    AllChildrenNumber(i32),
    WhoAmI(Vec<ClientInfo>),
    Sasl(Bytes),
}

impl Response {
    pub fn encode(&self, buf: &mut BytesMut) {
        match self {
            Response::Empty => {}
            Response::Create { path } | Response::Sync { path } => path.encode(buf),
            Response::Create2 { path, stat } => {
                path.encode(buf);
                stat.encode(buf);
            }
            Response::Stat(stat) => stat.encode(buf),
            Response::GetData { data, stat } => {
                data.encode(buf);
                stat.encode(buf);
            }
            Response::GetAcl { acl, stat } => {
                acl.encode(buf);
                stat.encode(buf);
            }
            Response::GetChildren { children } | Response::Ephemerals(children) => {
                children.encode(buf)
            }
            Response::GetChildren2 { children, stat } => {
                children.encode(buf);
                stat.encode(buf);
            }
            Response::Multi(results) => encode_results(results, buf),
            Response::AllChildrenNumber(n) => write_i32(buf, *n),
            Response::Code(code) => write_i32(buf, code.as_i32()),
            Response::WhoAmI(infos) => infos.encode(buf),
            Response::Sasl(token) => token.encode(buf),
        }
    }

    /// Decodes the body of a successful reply to an `op` request.
    pub fn decode(op: OpCode, r: &mut Reader) -> Result<Response, DecodeError> {
        Ok(match op {
            OpCode::Create => Response::Create {
                path: Record::decode(r)?,
            },
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => Response::Create2 {
                path: Record::decode(r)?,
                stat: Record::decode(r)?,
            },
            OpCode::Exists | OpCode::SetData | OpCode::SetAcl => Response::Stat(Record::decode(r)?),
            OpCode::GetData | OpCode::Reconfig => Response::GetData {
                data: Record::decode(r)?,
                stat: Record::decode(r)?,
            },
            OpCode::GetAcl => Response::GetAcl {
                acl: Record::decode(r)?,
                stat: Record::decode(r)?,
            },
            OpCode::GetChildren => Response::GetChildren {
                children: Record::decode(r)?,
            },
            OpCode::GetChildren2 => Response::GetChildren2 {
                children: Record::decode(r)?,
                stat: Record::decode(r)?,
            },
            OpCode::Sync => Response::Sync {
                path: Record::decode(r)?,
            },
            OpCode::Multi | OpCode::MultiRead => Response::Multi(decode_results(r)?),
            OpCode::GetEphemerals => Response::Ephemerals(Record::decode(r)?),
            OpCode::GetAllChildrenNumber => Response::AllChildrenNumber(r.read_i32()?),
            OpCode::WhoAmI => Response::WhoAmI(Record::decode(r)?),
            OpCode::AddWatch => Response::Code(ErrorCode::from_i32(r.read_i32()?)),
            OpCode::Sasl => Response::Sasl(Record::decode(r)?),
            OpCode::Delete
            | OpCode::Check
            | OpCode::Ping
            | OpCode::Auth
            | OpCode::SetWatches
            | OpCode::SetWatches2
            | OpCode::CheckWatches
            | OpCode::RemoveWatches
            | OpCode::CloseSession => Response::Empty,
            OpCode::Notification
            | OpCode::DeleteContainer
            | OpCode::CreateSession
            | OpCode::Error => return Err(DecodeError::UnexpectedOpCode(op.as_i32())),
        })
    }
}

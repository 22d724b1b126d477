//! The results of `multi` and `multiRead`, encoded as ZooKeeper's `MultiResponse` writes
//! them: a [`MultiHeader`] before each result, then a header with `done` set.

use bytes::BytesMut;

use crate::error::{DecodeError, ErrorCode};
use crate::jute::{write_i32, Reader, Record};
use crate::opcode::OpCode;
use crate::proto::data::{Data, Stat};
use crate::proto::header::MultiHeader;

/// The result of one op of a multi (`OpResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// A `create` op: the created path (with its sequence suffix).
    Create {
        path: String,
    },
    /// A `create2`, `createContainer` or `createTTL` op: the path and the new node's stat.
    Create2 {
        path: String,
        stat: Stat,
    },
    Delete,
    SetData {
        stat: Stat,
    },
    Check,
    GetData {
        data: Data,
        stat: Stat,
    },
    GetChildren {
        children: Vec<String>,
    },
    /// The op failed (its own error), or did not run because another op failed: ops
    /// before the failing one report `Ok`, ops after it `RuntimeInconsistency`.
    Error(ErrorCode),
}

impl OpResult {
    fn header(&self) -> MultiHeader {
        let (op, err) = match self {
            OpResult::Create { .. } => (OpCode::Create.as_i32(), 0),
            OpResult::Create2 { .. } => (OpCode::Create2.as_i32(), 0),
            OpResult::Delete => (OpCode::Delete.as_i32(), 0),
            OpResult::SetData { .. } => (OpCode::SetData.as_i32(), 0),
            OpResult::Check => (OpCode::Check.as_i32(), 0),
            OpResult::GetData { .. } => (OpCode::GetData.as_i32(), 0),
            OpResult::GetChildren { .. } => (OpCode::GetChildren.as_i32(), 0),
            OpResult::Error(code) => (OpCode::Error.as_i32(), code.as_i32()),
        };
        MultiHeader {
            op,
            done: false,
            err,
        }
    }

    fn encode(&self, buf: &mut BytesMut) {
        self.header().encode(buf);
        match self {
            OpResult::Create { path } => path.encode(buf),
            OpResult::Create2 { path, stat } => {
                path.encode(buf);
                stat.encode(buf);
            }
            OpResult::Delete | OpResult::Check => {}
            OpResult::SetData { stat } => stat.encode(buf),
            OpResult::GetData { data, stat } => {
                data.encode(buf);
                stat.encode(buf);
            }
            OpResult::GetChildren { children } => children.encode(buf),
            OpResult::Error(code) => write_i32(buf, code.as_i32()),
        }
    }

    fn decode(header: MultiHeader, r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(match OpCode::try_from(header.op)? {
            OpCode::Create => OpResult::Create {
                path: Record::decode(r)?,
            },
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => OpResult::Create2 {
                path: Record::decode(r)?,
                stat: Record::decode(r)?,
            },
            OpCode::Delete => OpResult::Delete,
            OpCode::SetData => OpResult::SetData {
                stat: Record::decode(r)?,
            },
            OpCode::Check => OpResult::Check,
            OpCode::GetData => OpResult::GetData {
                data: Record::decode(r)?,
                stat: Record::decode(r)?,
            },
            OpCode::GetChildren => OpResult::GetChildren {
                children: Record::decode(r)?,
            },
            OpCode::Error => OpResult::Error(ErrorCode::from_i32(r.read_i32()?)),
            _ => return Err(DecodeError::UnexpectedOpCode(header.op)),
        })
    }
}

/// Encodes a multi reply body.
pub(crate) fn encode_results(results: &[OpResult], buf: &mut BytesMut) {
    for result in results {
        result.encode(buf);
    }
    MultiHeader::END.encode(buf);
}

/// Decodes a multi reply body.
pub(crate) fn decode_results(r: &mut Reader) -> Result<Vec<OpResult>, DecodeError> {
    let mut results = Vec::new();
    loop {
        let header = MultiHeader::decode(r)?;
        if header.done {
            return Ok(results);
        }
        results.push(OpResult::decode(header, r)?);
    }
}

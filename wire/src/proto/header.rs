//! The headers in front of every request, reply and multi op.

use bytes::BytesMut;

use crate::error::{DecodeError, ErrorCode};
use crate::jute::{write_bool, write_i32, write_i64, Reader, Record};
use crate::jute_record;

jute_record! {
    /// In front of every request after the connect: the client's request counter and
    /// the op code.
    pub struct RequestHeader {
        pub xid: i32,
        /// The op code (`OpCode`), kept raw so an unknown op can still be answered.
        pub op: i32,
    }
}

/// In front of every reply and notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHeader {
    /// The request's xid, or a reserved one (-1 notification, -2 ping, ...).
    pub xid: i32,
    /// The zxid of the last txn the server had applied when it replied; for a
    /// notification, the zxid of the txn that fired it.
    pub zxid: i64,
    pub err: ErrorCode,
}

impl Record for ReplyHeader {
    fn encode(&self, buf: &mut BytesMut) {
        write_i32(buf, self.xid);
        write_i64(buf, self.zxid);
        write_i32(buf, self.err.as_i32());
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(ReplyHeader {
            xid: r.read_i32()?,
            zxid: r.read_i64()?,
            err: ErrorCode::from_i32(r.read_i32()?),
        })
    }
}

/// In front of each op of a multi request and each result of its reply; a header with
/// `done` set ends the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultiHeader {
    /// The op code of the op or result that follows; -1 for an error result and the end.
    pub op: i32,
    pub done: bool,
    pub err: i32,
}

impl MultiHeader {
    /// The header that ends a multi request or reply.
    pub const END: MultiHeader = MultiHeader {
        op: -1,
        done: true,
        err: -1,
    };
}

impl Record for MultiHeader {
    fn encode(&self, buf: &mut BytesMut) {
        write_i32(buf, self.op);
        write_bool(buf, self.done);
        write_i32(buf, self.err);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(MultiHeader {
            op: r.read_i32()?,
            done: r.read_bool()?,
            err: r.read_i32()?,
        })
    }
}

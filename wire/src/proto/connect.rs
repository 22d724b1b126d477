//! The session handshake: the first frame each way, sent without a request or reply
//! header.

use bytes::{Bytes, BytesMut};

use crate::error::DecodeError;
use crate::jute::{write_bool, write_buffer, write_i32, write_i64, Reader, Record};

/// A client's request to create a session, or to reattach to one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    pub protocol_version: i32,
    /// The newest zxid the client has seen; a server behind it must refuse the client.
    pub last_zxid_seen: i64,
    /// Requested session timeout in milliseconds.
    pub timeout: i32,
    /// 0 for a new session.
    pub session_id: i64,
    pub passwd: Bytes,
    /// `Some` when the client sent the trailing readOnly byte (3.4+ clients do); the
    /// server then appends one to its response too.
    pub read_only: Option<bool>,
}

impl Record for ConnectRequest {
    fn encode(&self, buf: &mut BytesMut) {
        write_i32(buf, self.protocol_version);
        write_i64(buf, self.last_zxid_seen);
        write_i32(buf, self.timeout);
        write_i64(buf, self.session_id);
        write_buffer(buf, &self.passwd);
        if let Some(read_only) = self.read_only {
            write_bool(buf, read_only);
        }
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(ConnectRequest {
            protocol_version: r.read_i32()?,
            last_zxid_seen: r.read_i64()?,
            timeout: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?,
            read_only: r.read_trailing_bool()?,
        })
    }
}

/// The server's answer to a [`ConnectRequest`]. A timeout of 0 means the session is
/// expired or the password was wrong: the client must give the session up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    pub protocol_version: i32,
    /// The negotiated session timeout in milliseconds.
    pub timeout: i32,
    pub session_id: i64,
    pub passwd: Bytes,
    /// Present exactly when the request carried the readOnly byte.
    pub read_only: Option<bool>,
}

impl ConnectResponse {
    /// ZooKeeper's refusal: timeout 0, session 0 and a zeroed 16-byte password.
    pub fn refused(read_only: Option<bool>) -> Self {
        ConnectResponse {
            protocol_version: 0,
            timeout: 0,
            session_id: 0,
            passwd: Bytes::from_static(&[0; 16]),
            read_only: read_only.map(|_| false),
        }
    }
}

impl Record for ConnectResponse {
    fn encode(&self, buf: &mut BytesMut) {
        write_i32(buf, self.protocol_version);
        write_i32(buf, self.timeout);
        write_i64(buf, self.session_id);
        write_buffer(buf, &self.passwd);
        if let Some(read_only) = self.read_only {
            write_bool(buf, read_only);
        }
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(ConnectResponse {
            protocol_version: r.read_i32()?,
            timeout: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?,
            read_only: r.read_trailing_bool()?,
        })
    }
}

//! Apache ZooKeeper's client wire protocol, as of ZooKeeper 3.5–3.9.
//!
//! Pure encode/decode: no sockets, no clocks. The server, the client library and the
//! load generator all speak through these types, so one definition of every record
//! serves both directions.
//!
//! # Layout
//! - [`jute`]: the primitives (int, long, bool, buffer, ustring, vector) and the
//!   [`Record`] trait. Every length is checked before anything is allocated.
//! - [`codec`]: 4-byte length-prefixed frames for tokio-util, with a maximum size.
//! - [`opcode`]: op codes and the reserved xids.
//! - [`error`]: ZooKeeper's error codes ([`ErrorCode`]) and decode errors.
//! - [`path`]: znode path validation, shared by client and server.
//! - [`proto`]: the records, named as in `zookeeper.jute`, and the typed
//!   [`Request`]/[`Response`] enums.

pub mod codec;
pub mod error;
pub mod jute;
pub mod opcode;
pub mod path;
pub mod proto;

pub use codec::{FrameCodec, DEFAULT_MAX_FRAME};
pub use error::{DecodeError, ErrorCode};
pub use jute::{Reader, Record};
pub use opcode::{OpCode, Xid};
pub use proto::*;

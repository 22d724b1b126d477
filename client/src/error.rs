//! The client's one error type, and its mapping onto ZooKeeper's numeric codes.

use std::sync::Arc;

use paddock_wire::path::PathError;
use paddock_wire::{DecodeError, ErrorCode, OpResult};

/// Why an operation failed.
///
/// Errors the server reported are [`Error::Keeper`]; the others arise in the client.
/// [`Error::code`] maps every variant onto the ZooKeeper code a Java client would report.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The server answered with this error code (`NoNode`, `NodeExists`, `BadVersion`, ...).
    #[error("server error: {0}")]
    Keeper(ErrorCode),
    /// The connection broke while the request was in flight: it may or may not have been
    /// applied. The session survives if the client reconnects within its timeout.
    #[error("connection to the server was lost")]
    ConnectionLoss,
    /// The session is gone (the server said so on reconnect, or no server was reachable for
    /// a whole session timeout). Its ephemeral nodes and watches are gone with it; make a
    /// new [`Client`](crate::Client).
    #[error("session expired")]
    SessionExpired,
    /// The server refused an `addauth`; the session is unusable.
    #[error("authentication failed")]
    AuthFailed,
    /// A client-side deadline passed (connecting, acquiring a lock, ...).
    #[error("operation timed out")]
    Timeout,
    /// The client was closed with [`Client::close`](crate::Client::close).
    #[error("client closed")]
    Closed,
    /// The path is not a valid znode path; nothing was sent.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// The rule it breaks.
        reason: PathError,
    },
    /// An argument was rejected before anything was sent.
    #[error("bad arguments: {0}")]
    BadArguments(String),
    /// Every server of the connect string refused the connection (with
    /// [`ConnectOptions::fail_fast_when_refused`](crate::ConnectOptions)).
    #[error("no server accepted the connection; tried {}", tried.join(", "))]
    Refused {
        /// Each address tried, with the error it gave.
        tried: Vec<String>,
    },
    /// The connect string could not be parsed.
    #[error("invalid connect string {0:?}")]
    InvalidConnectString(String),
    /// A multi (transaction) was rolled back because op `index` failed with `code`.
    /// `results` holds every op's result as the server reported it.
    #[error("transaction op {index} failed: {code}")]
    MultiFailed {
        /// The position of the failing op.
        index: usize,
        /// Its error.
        code: ErrorCode,
        /// Every op's result.
        results: Vec<OpResult>,
    },
    /// The server sent something that is not ZooKeeper's protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Connecting failed at the socket level.
    #[error("i/o error: {0}")]
    Io(Arc<std::io::Error>),
}

impl Error {
    /// The ZooKeeper code for this error, as `KeeperException.code()` would give it.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Keeper(code) => *code,
            Error::ConnectionLoss | Error::Io(_) | Error::Refused { .. } => {
                ErrorCode::ConnectionLoss
            }
            // A closed Java client answers SESSIONEXPIRED as well (ClientCnxn.conLossPacket).
            Error::SessionExpired | Error::Closed => ErrorCode::SessionExpired,
            Error::AuthFailed => ErrorCode::AuthFailed,
            Error::Timeout => ErrorCode::OperationTimeout,
            Error::InvalidPath { .. } | Error::BadArguments(_) | Error::InvalidConnectString(_) => {
                ErrorCode::BadArguments
            }
            Error::MultiFailed { code, .. } => *code,
            Error::Protocol(_) => ErrorCode::MarshallingError,
        }
    }

    /// True for errors after which the same call may succeed if simply retried on the same
    /// client (the session is still alive).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::ConnectionLoss | Error::Io(_))
    }

    /// True once the session can no longer be used.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Error::SessionExpired | Error::Closed | Error::AuthFailed
        )
    }

    pub(crate) fn from_code(code: ErrorCode) -> Error {
        match code {
            ErrorCode::SessionExpired => Error::SessionExpired,
            ErrorCode::AuthFailed => Error::AuthFailed,
            other => Error::Keeper(other),
        }
    }
}

impl From<DecodeError> for Error {
    fn from(err: DecodeError) -> Self {
        Error::Protocol(err.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::Io(Arc::new(err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_java_client() {
        assert_eq!(Error::Keeper(ErrorCode::NoNode).code(), ErrorCode::NoNode);
        assert_eq!(Error::Closed.code(), ErrorCode::SessionExpired);
        assert_eq!(Error::ConnectionLoss.code(), ErrorCode::ConnectionLoss);
        assert_eq!(
            Error::BadArguments("x".into()).code(),
            ErrorCode::BadArguments
        );
        assert!(matches!(
            Error::from_code(ErrorCode::SessionExpired),
            Error::SessionExpired
        ));
    }
}

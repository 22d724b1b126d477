//! ZooKeeper's error codes (the numbers of `KeeperException.Code`) and the errors of
//! decoding bytes off the wire.

use std::fmt;

/// Why bytes could not be decoded. A decode error means the peer sent something that is
/// not ZooKeeper's protocol: the connection that carried it is closed, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("record truncated: needed {needed} more bytes, {remaining} remain")]
    Truncated { needed: usize, remaining: usize },
    #[error("negative length {0}")]
    NegativeLength(i32),
    #[error("length {len} exceeds the {remaining} bytes that remain")]
    LengthBeyondInput { len: usize, remaining: usize },
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    #[error("unknown op code {0}")]
    UnknownOpCode(i32),
    #[error("op code {0} is not allowed here")]
    UnexpectedOpCode(i32),
    #[error("invalid {field}: {value}")]
    InvalidValue { field: &'static str, value: i64 },
    #[error("{0} unexpected bytes after the record")]
    TrailingBytes(usize),
}

macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = $value:expr, $text:expr;)*) => {
        /// A ZooKeeper result code, as carried in `ReplyHeader.err` and in multi results.
        ///
        /// Codes this crate does not know survive a round trip as [`ErrorCode::Unknown`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $name,)*
            /// A code from a newer or foreign server; the number is kept as sent.
            Unknown(i32),
        }

        impl ErrorCode {
            pub fn from_i32(code: i32) -> Self {
                match code {
                    $($value => ErrorCode::$name,)*
                    other => ErrorCode::Unknown(other),
                }
            }

            pub fn as_i32(self) -> i32 {
                match self {
                    $(ErrorCode::$name => $value,)*
                    ErrorCode::Unknown(code) => code,
                }
            }

            /// ZooKeeper's wording for the code, as in `KeeperException.getCodeMessage`.
            pub fn message(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $text,)*
                    ErrorCode::Unknown(_) => "Unknown error",
                }
            }
        }
    };
}

error_codes! {
    Ok = 0, "ok";
    SystemError = -1, "SystemError";
    RuntimeInconsistency = -2, "RuntimeInconsistency";
    DataInconsistency = -3, "DataInconsistency";
    ConnectionLoss = -4, "ConnectionLoss";
    MarshallingError = -5, "MarshallingError";
    Unimplemented = -6, "Unimplemented";
    OperationTimeout = -7, "OperationTimeout";
    BadArguments = -8, "BadArguments";
    UnknownSession = -12, "Unknown session";
    NewConfigNoQuorum = -13, "New config no quorum";
    ReconfigInProgress = -14, "Reconfig in progress";
    ApiError = -100, "APIError";
    NoNode = -101, "NoNode";
    NoAuth = -102, "NoAuth";
    BadVersion = -103, "BadVersion";
    NoChildrenForEphemerals = -108, "NoChildrenForEphemerals";
    NodeExists = -110, "NodeExists";
    NotEmpty = -111, "Directory not empty";
    SessionExpired = -112, "Session expired";
    InvalidCallback = -113, "Invalid callback";
    InvalidAcl = -114, "InvalidACL";
    AuthFailed = -115, "AuthFailed";
    SessionMoved = -118, "Session moved";
    NotReadOnly = -119, "Not a read-only call";
    EphemeralOnLocalSession = -120, "Ephemeral node on local session";
    NoWatcher = -121, "No such watcher";
    RequestTimeout = -122, "Request timeout";
    ReconfigDisabled = -123, "Reconfig is disabled";
    SessionClosedRequireSaslAuth = -124, "Session closed because client failed to authenticate";
    QuotaExceeded = -125, "Quota has exceeded";
    Throttled = -127, "Op throttled due to high load";
}

impl ErrorCode {
    pub fn is_ok(self) -> bool {
        self == ErrorCode::Ok
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.as_i32())
    }
}

impl std::error::Error for ErrorCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_including_unknown() {
        for code in [0, -1, -101, -110, -112, -118, -127, -9999, 42] {
            assert_eq!(ErrorCode::from_i32(code).as_i32(), code);
        }
        assert_eq!(ErrorCode::from_i32(-101), ErrorCode::NoNode);
        assert_eq!(ErrorCode::from_i32(-9999), ErrorCode::Unknown(-9999));
    }
}

//! Op codes (`ZooDefs.OpCode`) and the xids ZooKeeper reserves for its own traffic.

use crate::error::DecodeError;

macro_rules! op_codes {
    ($($name:ident = $value:expr,)*) => {
        /// The `type` of a `RequestHeader`, and of a `MultiHeader`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum OpCode {
            $($name = $value,)*
        }

        impl TryFrom<i32> for OpCode {
            type Error = DecodeError;
            fn try_from(code: i32) -> Result<Self, DecodeError> {
                match code {
                    $($value => Ok(OpCode::$name),)*
                    other => Err(DecodeError::UnknownOpCode(other)),
                }
            }
        }
    };
}

op_codes! {
    Notification = 0,
    Create = 1,
    Delete = 2,
    Exists = 3,
    GetData = 4,
    SetData = 5,
    GetAcl = 6,
    SetAcl = 7,
    GetChildren = 8,
    Sync = 9,
    Ping = 11,
    GetChildren2 = 12,
    Check = 13,
    Multi = 14,
    Create2 = 15,
    Reconfig = 16,
    CheckWatches = 17,
    RemoveWatches = 18,
    CreateContainer = 19,
    DeleteContainer = 20,
    CreateTtl = 21,
    MultiRead = 22,
    Auth = 100,
    SetWatches = 101,
    Sasl = 102,
    GetEphemerals = 103,
    GetAllChildrenNumber = 104,
    SetWatches2 = 105,
    AddWatch = 106,
    WhoAmI = 107,
    CreateSession = -10,
    CloseSession = -11,
    Error = -1,
}

impl OpCode {
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// Ops that change the tree or the session table, and so go through consensus.
    /// `reconfig` is not among them: dynamic reconfiguration is off (as in a default
    /// ZooKeeper), so a server answers it ReconfigDisabled at once, with no txn.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            OpCode::Create
                | OpCode::Create2
                | OpCode::CreateContainer
                | OpCode::CreateTtl
                | OpCode::DeleteContainer
                | OpCode::Delete
                | OpCode::SetData
                | OpCode::SetAcl
                | OpCode::Check
                | OpCode::Multi
                | OpCode::CreateSession
                | OpCode::CloseSession
        )
    }
}

/// Xids that are not a client's request counter but mark ZooKeeper's own packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Xid {
    /// A watch event pushed by the server.
    Notification = -1,
    Ping = -2,
    Auth = -4,
    /// The client's re-arming of its watches after a reconnect.
    SetWatches = -8,
}

impl Xid {
    pub fn reserved(xid: i32) -> Option<Xid> {
        match xid {
            -1 => Some(Xid::Notification),
            -2 => Some(Xid::Ping),
            -4 => Some(Xid::Auth),
            -8 => Some(Xid::SetWatches),
            _ => None,
        }
    }

    pub fn as_i32(self) -> i32 {
        self as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_codes_round_trip() {
        for code in -11..=110 {
            if let Ok(op) = OpCode::try_from(code) {
                assert_eq!(op.as_i32(), code);
            }
        }
        assert_eq!(OpCode::try_from(106), Ok(OpCode::AddWatch));
        assert_eq!(OpCode::try_from(10), Err(DecodeError::UnknownOpCode(10)));
    }

    #[test]
    fn reserved_xids() {
        assert_eq!(Xid::reserved(-8), Some(Xid::SetWatches));
        assert_eq!(Xid::reserved(7), None);
    }
}

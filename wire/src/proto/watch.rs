//! Watch events and the records that arm, re-arm and remove watches.

use bytes::BytesMut;

use crate::error::DecodeError;
use crate::jute::{write_i32, write_ustring, Reader, Record};
use crate::jute_record;

/// What happened to a watched node (`Watcher.Event.EventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum EventType {
    /// A change of session state rather than of a node.
    None = -1,
    NodeCreated = 1,
    NodeDeleted = 2,
    NodeDataChanged = 3,
    NodeChildrenChanged = 4,
    DataWatchRemoved = 5,
    ChildWatchRemoved = 6,
    PersistentWatchRemoved = 7,
}

impl EventType {
    pub fn from_i32(value: i32) -> Result<Self, DecodeError> {
        Ok(match value {
            -1 => EventType::None,
            1 => EventType::NodeCreated,
            2 => EventType::NodeDeleted,
            3 => EventType::NodeDataChanged,
            4 => EventType::NodeChildrenChanged,
            5 => EventType::DataWatchRemoved,
            6 => EventType::ChildWatchRemoved,
            7 => EventType::PersistentWatchRemoved,
            other => {
                return Err(DecodeError::InvalidValue {
                    field: "event type",
                    value: other.into(),
                })
            }
        })
    }
}

/// The session's state as an event reports it (`Watcher.Event.KeeperState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum KeeperState {
    Disconnected = 0,
    SyncConnected = 3,
    AuthFailed = 4,
    ConnectedReadOnly = 5,
    SaslAuthenticated = 6,
    Closed = 7,
    Expired = -112,
}

impl KeeperState {
    pub fn from_i32(value: i32) -> Result<Self, DecodeError> {
        Ok(match value {
            0 => KeeperState::Disconnected,
            3 => KeeperState::SyncConnected,
            4 => KeeperState::AuthFailed,
            5 => KeeperState::ConnectedReadOnly,
            6 => KeeperState::SaslAuthenticated,
            7 => KeeperState::Closed,
            -112 => KeeperState::Expired,
            other => {
                return Err(DecodeError::InvalidValue {
                    field: "keeper state",
                    value: other.into(),
                })
            }
        })
    }
}

/// A notification: sent with xid -1, carrying the zxid of the txn that fired it in its
/// reply header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatcherEvent {
    pub event_type: EventType,
    pub state: KeeperState,
    pub path: String,
}

impl Record for WatcherEvent {
    fn encode(&self, buf: &mut BytesMut) {
        write_i32(buf, self.event_type as i32);
        write_i32(buf, self.state as i32);
        write_ustring(buf, &self.path);
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(WatcherEvent {
            event_type: EventType::from_i32(r.read_i32()?)?,
            state: KeeperState::from_i32(r.read_i32()?)?,
            path: r.read_ustring()?,
        })
    }
}

/// The mode of `addWatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum AddWatchMode {
    /// Fires on every data change and child change of the node, until removed.
    Persistent = 0,
    /// Fires on every change to the node or any node below it, until removed.
    PersistentRecursive = 1,
}

impl AddWatchMode {
    pub fn from_i32(value: i32) -> Result<Self, DecodeError> {
        match value {
            0 => Ok(AddWatchMode::Persistent),
            1 => Ok(AddWatchMode::PersistentRecursive),
            other => Err(DecodeError::InvalidValue {
                field: "add watch mode",
                value: other.into(),
            }),
        }
    }
}

/// Which watches `checkWatches` / `removeWatches` address (`Watcher.WatcherType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum WatcherType {
    Children = 1,
    Data = 2,
    Any = 3,
    Persistent = 4,
    PersistentRecursive = 5,
}

impl WatcherType {
    pub fn from_i32(value: i32) -> Result<Self, DecodeError> {
        Ok(match value {
            1 => WatcherType::Children,
            2 => WatcherType::Data,
            3 => WatcherType::Any,
            4 => WatcherType::Persistent,
            5 => WatcherType::PersistentRecursive,
            other => {
                return Err(DecodeError::InvalidValue {
                    field: "watcher type",
                    value: other.into(),
                })
            }
        })
    }
}

jute_record! {
    /// Re-arms one-shot watches after a reconnect (op 101). The server fires at once any
    /// watch whose node changed after `relative_zxid`.
    pub struct SetWatches {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
    }
}

jute_record! {
    /// [`SetWatches`] plus persistent watches (op 105, ZooKeeper 3.6+).
    pub struct SetWatches2 {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
        pub persistent_watches: Vec<String>,
        pub persistent_recursive_watches: Vec<String>,
    }
}

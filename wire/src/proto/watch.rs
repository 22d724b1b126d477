//! Watch events and the records that arm, re-arm and remove watches.

use bytes::BytesMut;

use crate::error::DecodeError;
use crate::jute::{write_i32, write_ustring, Reader, Record};
use crate::{int_enum, jute_record};

int_enum! {
    /// What happened to a watched node (`Watcher.Event.EventType`).
    pub enum EventType ("event type") {
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
}

int_enum! {
    /// The session's state as an event reports it (`Watcher.Event.KeeperState`).
    pub enum KeeperState ("keeper state") {
        Disconnected = 0,
        SyncConnected = 3,
        AuthFailed = 4,
        ConnectedReadOnly = 5,
        SaslAuthenticated = 6,
        Closed = 7,
        Expired = -112,
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

int_enum! {
    /// The mode of `addWatch`.
    pub enum AddWatchMode ("add watch mode") {
        /// Fires on every data change and child change of the node, until removed.
        Persistent = 0,
        /// Fires on every change to the node or any node below it, until removed.
        PersistentRecursive = 1,
    }
}

int_enum! {
    /// Which watches `checkWatches` / `removeWatches` address (`Watcher.WatcherType`).
    pub enum WatcherType ("watcher type") {
        Children = 1,
        Data = 2,
        Any = 3,
        Persistent = 4,
        PersistentRecursive = 5,
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

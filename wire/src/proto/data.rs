//! The data records: `Stat`, `Id`, `ACL`, create modes and `ClientInfo`, and znode
//! [`Data`].

use std::ops::Deref;

use bytes::{Bytes, BytesMut};

use crate::error::DecodeError;
use crate::jute::{write_opt_buffer, Reader, Record};
use crate::{int_enum, jute_record};

/// A znode's data: bytes, or null. A client may create or set a node with a null
/// buffer (length -1 on the wire) and ZooKeeper keeps it null — it reads back as null,
/// not as empty — so both are kept apart everywhere data travels or is stored. Derefs
/// to the bytes (none for null).
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct Data(Option<Bytes>);

impl Data {
    /// The null buffer.
    pub const NULL: Data = Data(None);

    pub fn is_null(&self) -> bool {
        self.0.is_none()
    }

    /// The bytes; empty for null.
    pub fn bytes(&self) -> Bytes {
        self.0.clone().unwrap_or_default()
    }

    pub fn as_option(&self) -> Option<&Bytes> {
        self.0.as_ref()
    }
}

impl Deref for Data {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl From<Bytes> for Data {
    fn from(bytes: Bytes) -> Self {
        Data(Some(bytes))
    }
}

impl From<Option<Bytes>> for Data {
    fn from(bytes: Option<Bytes>) -> Self {
        Data(bytes)
    }
}

impl From<&'static [u8]> for Data {
    fn from(bytes: &'static [u8]) -> Self {
        Data(Some(Bytes::from_static(bytes)))
    }
}

impl From<Vec<u8>> for Data {
    fn from(bytes: Vec<u8>) -> Self {
        Data(Some(Bytes::from(bytes)))
    }
}

impl Record for Data {
    fn encode(&self, buf: &mut BytesMut) {
        write_opt_buffer(buf, self.0.as_deref());
    }
    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        r.read_opt_buffer().map(Data)
    }
}

jute_record! {
    /// A znode's metadata, as every read and write reply reports it.
    pub struct Stat {
        /// The zxid of the txn that created the node.
        pub czxid: i64,
        /// The zxid of the txn that last changed the node's data.
        pub mzxid: i64,
        /// Creation time, milliseconds since the epoch, stamped by the leader.
        pub ctime: i64,
        pub mtime: i64,
        /// Number of data changes.
        pub version: i32,
        /// Number of child changes (creates and deletes of children).
        pub cversion: i32,
        /// Number of ACL changes.
        pub aversion: i32,
        /// The owning session of an ephemeral node, 0 otherwise (and the TTL for TTL nodes
        /// is kept server-side, not here).
        pub ephemeral_owner: i64,
        pub data_length: i32,
        pub num_children: i32,
        /// The zxid of the txn that last changed the node's children.
        pub pzxid: i64,
    }
}

jute_record! {
    /// An identity in an ACL scheme: `world:anyone`, `digest:user:hash`, `ip:10.0.0.0/8`.
    pub struct Id {
        pub scheme: String,
        pub id: String,
    }
}

jute_record! {
    /// One ACL entry: a permission bit set for an identity.
    pub struct Acl {
        pub perms: i32,
        pub id: Id,
    }
}

jute_record! {
    /// One of the caller's authenticated identities, as `whoAmI` reports them.
    pub struct ClientInfo {
        pub auth_scheme: String,
        pub user: String,
    }
}

/// Permission bits (`ZooDefs.Perms`).
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const CREATE: i32 = 4;
    pub const DELETE: i32 = 8;
    pub const ADMIN: i32 = 16;
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}

impl Id {
    pub fn new(scheme: impl Into<String>, id: impl Into<String>) -> Self {
        Id {
            scheme: scheme.into(),
            id: id.into(),
        }
    }
}

impl Acl {
    /// `world:anyone` with every permission (`ZooDefs.Ids.OPEN_ACL_UNSAFE`).
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: perms::ALL,
            id: Id::new("world", "anyone"),
        }]
    }

    /// `world:anyone` may read (`ZooDefs.Ids.READ_ACL_UNSAFE`).
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: perms::READ,
            id: Id::new("world", "anyone"),
        }]
    }

    /// Every permission for whoever created the node (`ZooDefs.Ids.CREATOR_ALL_ACL`).
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl {
            perms: perms::ALL,
            id: Id::new("auth", ""),
        }]
    }
}

int_enum! {
    /// How a node is created: the `flags` of a create request.
    pub enum CreateMode ("create flags") {
        Persistent = 0,
        Ephemeral = 1,
        PersistentSequential = 2,
        EphemeralSequential = 3,
        Container = 4,
        PersistentWithTtl = 5,
        PersistentSequentialWithTtl = 6,
    }
}

impl CreateMode {
    pub fn from_flags(flags: i32) -> Result<Self, DecodeError> {
        Self::from_i32(flags)
    }

    pub fn flags(self) -> i32 {
        self.as_i32()
    }

    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    pub fn is_container(self) -> bool {
        self == CreateMode::Container
    }

    pub fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }
}

#[cfg(test)]
mod data_tests {
    use super::*;

    #[test]
    fn null_data_stays_null_on_the_wire() {
        // kazoo's create(path, None): the buffer's length is -1.
        let mut buf = BytesMut::new();
        Data::NULL.encode(&mut buf);
        assert_eq!(&buf[..], [0xff, 0xff, 0xff, 0xff]);
        let decoded = Data::decode(&mut Reader::new(buf.freeze())).unwrap();
        assert!(decoded.is_null());
        assert_eq!(decoded.len(), 0);

        let mut buf = BytesMut::new();
        Data::from(Bytes::new()).encode(&mut buf);
        assert_eq!(&buf[..], [0, 0, 0, 0]);
        let decoded = Data::decode(&mut Reader::new(buf.freeze())).unwrap();
        assert!(!decoded.is_null());
    }
}

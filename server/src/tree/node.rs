//! One znode: its data, ACL, persisted stat and child count, and the wire [`Stat`]
//! derived from them.

use std::sync::Arc;

use bytes::Bytes;
use paddock_wire::{Acl, Data, Stat};

use super::digest;

/// `ephemeralOwner` of a container node (`EphemeralType.CONTAINER_EPHEMERAL_OWNER`).
pub const CONTAINER_EPHEMERAL_OWNER: i64 = i64::MIN;

/// The longest TTL ZooKeeper accepts: the 40 bits left below the extended-type bits
/// (about 34 years of milliseconds).
pub const MAX_TTL_MS: i64 = 0xff_ffff_ffff;

/// High byte set on an `ephemeralOwner` that encodes an extended type; the next two
/// bytes name the type (0 = TTL) and the low 40 bits carry its value.
const EXTENDED_MASK: u64 = 0xff00_0000_0000_0000;

/// What kind of node the `ephemeralOwner` field says this is (`EphemeralType`, with
/// extended types enabled). Session ids never have the high byte 0xff (ZooKeeper caps
/// the server id at 254 for this reason), so the encodings cannot collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Persistent,
    /// Deleted when the owning session ends.
    Ephemeral {
        session_id: i64,
    },
    /// Deleted once it has had children and has none left.
    Container,
    /// Deleted once it has no children and has not been modified for `ttl_ms`.
    Ttl {
        ttl_ms: i64,
    },
}

impl NodeKind {
    pub fn from_ephemeral_owner(owner: i64) -> Self {
        // Reinterpreting the bits: the encoding is defined on the unsigned pattern.
        let bits = owner as u64;
        if bits & EXTENDED_MASK == EXTENDED_MASK {
            // TTL is the only extended type ZooKeeper defines; its reserved bits are 0.
            NodeKind::Ttl {
                ttl_ms: owner & MAX_TTL_MS,
            }
        } else if owner == CONTAINER_EPHEMERAL_OWNER {
            NodeKind::Container
        } else if owner == 0 {
            NodeKind::Persistent
        } else {
            NodeKind::Ephemeral { session_id: owner }
        }
    }

    /// The persisted `ephemeralOwner`. `ttl_ms` must be within `1..=MAX_TTL_MS`.
    pub fn ephemeral_owner(self) -> i64 {
        match self {
            NodeKind::Persistent => 0,
            NodeKind::Ephemeral { session_id } => session_id,
            NodeKind::Container => CONTAINER_EPHEMERAL_OWNER,
            NodeKind::Ttl { ttl_ms } => (EXTENDED_MASK | (ttl_ms & MAX_TTL_MS) as u64) as i64,
        }
    }

    /// What clients see in `Stat.ephemeralOwner`: the session for an ephemeral node,
    /// 0 for the others (containers and TTL nodes included, as ZooKeeper's
    /// `DataNode.getClientEphemeralOwner`; verified on 3.8).
    pub fn client_ephemeral_owner(self) -> i64 {
        match self {
            NodeKind::Ephemeral { session_id } => session_id,
            _ => 0,
        }
    }
}

/// The stat fields a node stores (`StatPersisted`); the rest of the wire [`Stat`] is
/// derived.
///
/// Packed to 4-byte alignment: 60 bytes instead of 64, so that in a [`Node`] the child
/// count takes the place of the padding, and a node with its `Arc` header fits a
/// 144-byte heap chunk rather than a 160-byte one (16 MB per million znodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C, packed(4))]
pub struct StatPersisted {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    /// The number of children ever *created* under the node. ZooKeeper stores this,
    /// names sequential children after it, and reports `2 * cversion - numChildren`
    /// (creates plus deletes) to clients.
    pub cversion: i32,
    pub aversion: i32,
    pub ephemeral_owner: i64,
    pub pzxid: i64,
}

impl StatPersisted {
    /// A new node's stat (`DataTree.createStat`).
    pub fn new_node(zxid: i64, time: i64, ephemeral_owner: i64) -> Self {
        StatPersisted {
            czxid: zxid,
            mzxid: zxid,
            ctime: time,
            mtime: time,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner,
            pzxid: zxid,
        }
    }
}

/// A znode. Cloning is cheap: data and ACL are shared. Its children are not listed
/// here: the tree's index keeps them under their parent (see `index`), and the node
/// counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Null kept apart from empty, as ZooKeeper keeps it. Always an allocation of its
    /// own (see [`own_allocation`]).
    data: Data,
    /// Shared so watch triggers can carry it for their READ check without a copy, and
    /// between nodes with equal ACLs (see `shared_acl`).
    acl: Arc<[Acl]>,
    stat: StatPersisted,
    num_children: u32,
    /// The digest of `data`, kept so a change to the stat or the children does not
    /// rehash large data.
    data_hash: u64,
}

impl Node {
    pub fn new(data: Data, acl: Arc<[Acl]>, stat: StatPersisted) -> Self {
        let data_hash = digest::of_bytes(&data);
        Node {
            data: own_allocation(data),
            acl,
            stat,
            num_children: 0,
            data_hash,
        }
    }

    pub fn data(&self) -> &Data {
        &self.data
    }

    pub fn acl(&self) -> &Arc<[Acl]> {
        &self.acl
    }

    pub fn stat(&self) -> &StatPersisted {
        &self.stat
    }

    pub fn kind(&self) -> NodeKind {
        NodeKind::from_ephemeral_owner(self.stat.ephemeral_owner)
    }

    pub fn num_children(&self) -> u32 {
        self.num_children
    }

    pub fn has_children(&self) -> bool {
        self.num_children > 0
    }

    /// The stat clients see (`DataNode.copyStat`).
    pub fn to_stat(&self) -> Stat {
        let num_children = i32::try_from(self.num_children()).unwrap_or(i32::MAX);
        Stat {
            czxid: self.stat.czxid,
            mzxid: self.stat.mzxid,
            ctime: self.stat.ctime,
            mtime: self.stat.mtime,
            version: self.stat.version,
            // Java int arithmetic: wraps rather than fails.
            cversion: self
                .stat
                .cversion
                .wrapping_mul(2)
                .wrapping_sub(num_children),
            aversion: self.stat.aversion,
            ephemeral_owner: self.kind().client_ephemeral_owner(),
            data_length: i32::try_from(self.data.len()).unwrap_or(i32::MAX),
            num_children,
            pzxid: self.stat.pzxid,
        }
    }

    pub(super) fn set_data(&mut self, data: Data) {
        self.data_hash = digest::of_bytes(&data);
        self.data = own_allocation(data);
    }

    pub(super) fn set_acl(&mut self, acl: Arc<[Acl]>) {
        self.acl = acl;
    }

    pub(super) fn stat_mut(&mut self) -> &mut StatPersisted {
        &mut self.stat
    }

    /// Counts a child the tree linked under this node.
    pub(super) fn add_child(&mut self) {
        self.num_children += 1;
    }

    /// Counts a child the tree unlinked from this node.
    pub(super) fn remove_child(&mut self) {
        self.num_children = self.num_children.saturating_sub(1);
    }

    pub(super) fn clear_children(&mut self) {
        self.num_children = 0;
    }

    /// This node's share of the tree digest.
    pub(super) fn digest(&self, path: &str) -> u64 {
        digest::of_node(path, self.data_hash, &self.stat, &self.acl)
    }
}

/// The data in an allocation of its own. Data decoded from a request, a txn or a
/// snapshot is a slice of the buffer it came in (a whole txn, a multi of thousands of
/// creates, a whole snapshot), and keeping the slice would keep all of it.
fn own_allocation(data: Data) -> Data {
    match data.as_option() {
        Some(bytes) if !bytes.is_empty() => Bytes::copy_from_slice(bytes).into(),
        Some(_) => Bytes::new().into(),
        None => Data::NULL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_and_its_arc_header_fit_a_144_byte_heap_chunk() {
        // glibc's chunk for n bytes is n + 8 rounded up to 16: 16 + 120 -> 144, where
        // 16 + 128 took 160.
        assert_eq!(std::mem::size_of::<StatPersisted>(), 60);
        assert_eq!(std::mem::size_of::<Node>(), 120);
    }

    #[test]
    fn ephemeral_owner_encodings_round_trip() {
        // The TTL encoding of EphemeralType.TTL.toEphemeralOwner: 0xff00..| ttl.
        assert_eq!(
            NodeKind::Ttl { ttl_ms: 1 }.ephemeral_owner() as u64,
            0xff00_0000_0000_0001
        );
        assert_eq!(NodeKind::Container.ephemeral_owner(), i64::MIN);
        for kind in [
            NodeKind::Persistent,
            NodeKind::Ephemeral {
                session_id: 0x0100_000b_2f0c_0001,
            },
            NodeKind::Container,
            NodeKind::Ttl { ttl_ms: 1 },
            NodeKind::Ttl { ttl_ms: MAX_TTL_MS },
        ] {
            assert_eq!(NodeKind::from_ephemeral_owner(kind.ephemeral_owner()), kind);
        }
        // A session id with the high byte 0xff would read back as a TTL: create
        // refuses ephemerals for such sessions.
        assert!(matches!(
            NodeKind::from_ephemeral_owner(-5),
            NodeKind::Ttl { .. }
        ));
    }

    #[test]
    fn client_stat_reports_creates_plus_deletes() {
        // ZooKeeper 3.8: after creating a and b and deleting a, the parent reports
        // cversion 3 (2 creates * 2 - 1 child), numChildren 1.
        let mut node = Node::new(
            Bytes::from_static(b"xy").into(),
            Arc::from(Acl::open_unsafe()),
            StatPersisted::new_node(4, 10, 0),
        );
        node.stat_mut().cversion = 2;
        node.add_child();
        let stat = node.to_stat();
        assert_eq!(
            (stat.cversion, stat.num_children, stat.data_length),
            (3, 1, 2)
        );
        assert_eq!(
            (stat.czxid, stat.mzxid, stat.pzxid, stat.ctime, stat.mtime),
            (4, 4, 4, 10, 10)
        );

        let ttl = Node::new(
            Bytes::new().into(),
            Arc::from(Acl::open_unsafe()),
            StatPersisted::new_node(1, 1, NodeKind::Ttl { ttl_ms: 5 }.ephemeral_owner()),
        );
        assert_eq!(
            ttl.to_stat().ephemeral_owner,
            0,
            "TTL and container owners are hidden"
        );
    }
}

//! The tree digest replicas compare to detect divergence (ZooKeeper's `DigestCalculator`
//! plays the same role).
//!
//! Format, fixed because replicas running different builds compare it:
//! - hash: 64-bit FNV-1a;
//! - data digest: the hash of the data bytes;
//! - node digest: the hash of, in order, the path (u64 big-endian length, then bytes),
//!   the data digest (u64 BE), the nine persisted stat fields in `zookeeper.jute` order
//!   (czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, pzxid;
//!   big-endian, i32 or i64), the ACL length (u64 BE) and each entry (perms i32 BE,
//!   scheme and id as length-prefixed strings);
//! - tree digest: the wrapping sum of all node digests, so it is independent of order
//!   and updated in O(1) per changed node. Children are covered by their own paths.

use paddock_wire::Acl;

use super::node::StatPersisted;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Self {
        Fnv1a(FNV_OFFSET)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }

    fn len(&mut self, len: usize) {
        self.bytes(&(len as u64).to_be_bytes());
    }
}

pub(super) fn of_bytes(data: &[u8]) -> u64 {
    let mut h = Fnv1a::new();
    h.bytes(data);
    h.0
}

pub(super) fn of_node(path: &str, data_hash: u64, stat: &StatPersisted, acl: &[Acl]) -> u64 {
    let mut h = Fnv1a::new();
    h.str(path);
    h.bytes(&data_hash.to_be_bytes());
    for field in [stat.czxid, stat.mzxid, stat.ctime, stat.mtime] {
        h.bytes(&field.to_be_bytes());
    }
    for field in [stat.version, stat.cversion, stat.aversion] {
        h.bytes(&field.to_be_bytes());
    }
    for field in [stat.ephemeral_owner, stat.pzxid] {
        h.bytes(&field.to_be_bytes());
    }
    h.len(acl.len());
    for entry in acl {
        h.bytes(&entry.perms.to_be_bytes());
        h.str(&entry.id.scheme);
        h.str(&entry.id.id);
    }
    h.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_reference_values() {
        // Published FNV-1a 64 test vectors: the format must not drift.
        assert_eq!(of_bytes(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(of_bytes(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(of_bytes(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn every_field_counts() {
        let stat = StatPersisted::new_node(1, 2, 0);
        let base = of_node("/a", 7, &stat, &Acl::open_unsafe());
        assert_ne!(base, of_node("/b", 7, &stat, &Acl::open_unsafe()));
        assert_ne!(base, of_node("/a", 8, &stat, &Acl::open_unsafe()));
        assert_ne!(base, of_node("/a", 7, &stat, &Acl::read_unsafe()));
        let bumped = StatPersisted {
            cversion: 1,
            ..stat
        };
        assert_ne!(base, of_node("/a", 7, &bumped, &Acl::open_unsafe()));
    }
}

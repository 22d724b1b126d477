//! The tree digest replicas compare to detect divergence (ZooKeeper's `DigestCalculator`
//! plays the same role).
//!
//! Format (version [`VERSION`]), fixed because operators compare it across replicas,
//! which may run different builds:
//! - hash: XXH3-64 with seed 0, a specified algorithm, so its output does not depend on
//!   the build or the platform;
//! - data digest: the hash of the data bytes;
//! - node digest: the hash of, in order, the path (u64 big-endian length, then bytes),
//!   the data digest (u64 BE), the nine persisted stat fields in `zookeeper.jute` order
//!   (czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, pzxid;
//!   big-endian, i32 or i64), the ACL length (u64 BE) and each entry (perms i32 BE,
//!   scheme and id as length-prefixed strings);
//! - tree digest: the wrapping sum of all node digests, so it is independent of order
//!   and updated in O(1) per changed node. Children are covered by their own paths.
//!
//! Version 1 hashed with 64-bit FNV-1a, one multiply per byte: hashing each write's
//! data on every replica was 13.6 % of the servers' CPU with 4 KiB of data. A replica
//! reports the version beside the digest (`zk_tree_digest_version`), so during an
//! upgrade a different digest from a server of another version is not a divergence.

use paddock_wire::Acl;
use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

use super::node::StatPersisted;

/// Which format [`of_node`] and [`of_bytes`] compute.
pub const VERSION: u32 = 2;

struct Hasher(Xxh3Default);

impl Hasher {
    fn bytes(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
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
    xxh3_64(data)
}

pub(super) fn of_node(path: &str, data_hash: u64, stat: &StatPersisted, acl: &[Acl]) -> u64 {
    let mut h = Hasher(Xxh3Default::new());
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
    h.0.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PINNED_FOOBAR: u64 = 0xd78f_da63_144c_5c84;
    const PINNED_NODE: u64 = 0xad41_a133_80d1_d0d4;

    #[test]
    fn xxh3_reference_values() {
        // XXH3-64's published value for the empty input, and values pinned from this
        // format: a change to any of them changes every replica's digest.
        assert_eq!(of_bytes(b""), 0x2d06_8005_38d3_94c2);
        assert_eq!(of_bytes(b"foobar"), PINNED_FOOBAR);
        let stat = StatPersisted::new_node(1, 2, 0);
        assert_eq!(of_node("/a", 7, &stat, &Acl::open_unsafe()), PINNED_NODE);
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

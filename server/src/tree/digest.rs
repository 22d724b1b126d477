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
use xxhash_rust::xxh3::xxh3_64;

use super::node::StatPersisted;

/// Which format [`of_node`] and [`of_bytes`] compute.
pub const VERSION: u32 = 2;

/// A node's hashed bytes fit here unless its path or ACL is unusually long; XXH3 over
/// one buffer gives what it gives streamed, at a fraction of the cost of streaming a
/// few bytes at a time (that was 7 % of a write's instructions).
const INLINE: usize = 512;

/// The bytes [`of_node`] hashes, written into a buffer of exactly their length.
struct NodeBytes<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl NodeBytes<'_> {
    fn bytes(&mut self, bytes: &[u8]) {
        self.buf[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }

    fn len(&mut self, len: usize) {
        self.bytes(&(len as u64).to_be_bytes());
    }
}

/// How many bytes [`of_node`] hashes.
fn node_bytes_len(path: &str, acl: &[Acl]) -> usize {
    // Path length, data digest, four i64 and three i32 stat fields, two more i64, and
    // the ACL's length.
    let fixed = 8 + 8 + 4 * 8 + 3 * 4 + 2 * 8 + 8;
    let acl_bytes: usize = acl
        .iter()
        .map(|entry| 4 + 8 + entry.id.scheme.len() + 8 + entry.id.id.len())
        .sum();
    fixed + path.len() + acl_bytes
}

fn write_node_bytes(
    out: &mut NodeBytes<'_>,
    path: &str,
    data_hash: u64,
    stat: &StatPersisted,
    acl: &[Acl],
) {
    out.str(path);
    out.bytes(&data_hash.to_be_bytes());
    for field in [stat.czxid, stat.mzxid, stat.ctime, stat.mtime] {
        out.bytes(&field.to_be_bytes());
    }
    for field in [stat.version, stat.cversion, stat.aversion] {
        out.bytes(&field.to_be_bytes());
    }
    for field in [stat.ephemeral_owner, stat.pzxid] {
        out.bytes(&field.to_be_bytes());
    }
    out.len(acl.len());
    for entry in acl {
        out.bytes(&entry.perms.to_be_bytes());
        out.str(&entry.id.scheme);
        out.str(&entry.id.id);
    }
}

pub(super) fn of_bytes(data: &[u8]) -> u64 {
    xxh3_64(data)
}

pub(super) fn of_node(path: &str, data_hash: u64, stat: &StatPersisted, acl: &[Acl]) -> u64 {
    let len = node_bytes_len(path, acl);
    let mut inline = [0u8; INLINE];
    let mut heap = Vec::new();
    let buf = if len <= INLINE {
        &mut inline[..len]
    } else {
        heap.resize(len, 0);
        &mut heap[..]
    };
    let mut out = NodeBytes { buf, at: 0 };
    write_node_bytes(&mut out, path, data_hash, stat, acl);
    debug_assert_eq!(out.at, len, "node_bytes_len and write_node_bytes disagree");
    xxh3_64(out.buf)
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
    fn a_long_path_or_acl_hashes_as_the_streamed_format_does() {
        use xxhash_rust::xxh3::Xxh3Default;
        let stat = StatPersisted::new_node(3, 4, 5);
        let long_path = format!("/{}", "p".repeat(INLINE));
        let mut acl = Acl::open_unsafe();
        acl.extend(Acl::read_unsafe());
        for path in ["/a", "/", long_path.as_str()] {
            // The format streamed field by field, as version 2 was first written.
            let mut streamed = Xxh3Default::new();
            let str_ = |h: &mut Xxh3Default, s: &str| {
                h.update(&(s.len() as u64).to_be_bytes());
                h.update(s.as_bytes());
            };
            str_(&mut streamed, path);
            streamed.update(&9u64.to_be_bytes());
            for field in [stat.czxid, stat.mzxid, stat.ctime, stat.mtime] {
                streamed.update(&field.to_be_bytes());
            }
            for field in [stat.version, stat.cversion, stat.aversion] {
                streamed.update(&field.to_be_bytes());
            }
            for field in [stat.ephemeral_owner, stat.pzxid] {
                streamed.update(&field.to_be_bytes());
            }
            streamed.update(&(acl.len() as u64).to_be_bytes());
            for entry in &acl {
                streamed.update(&entry.perms.to_be_bytes());
                str_(&mut streamed, &entry.id.scheme);
                str_(&mut streamed, &entry.id.id);
            }
            assert_eq!(
                of_node(path, 9, &stat, &acl),
                streamed.digest(),
                "{}",
                path.len()
            );
        }
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

//! The state machine's image: what a snapshot holds of the replicated state — the last
//! applied zxid, the session table and every znode — and how it is rebuilt.
//!
//! Format (jute primitives, big-endian), inside the snapshot file's payload:
//! `magic "PDKI" | version i32 (2) | last_zxid i64 |
//!  sessions: count i32, then per session id i64 | timeout i32 | passwd buffer | owner i64 |
//!  conn i64 | next_seq i64 |
//!  nodes: count i64, then per node (parents first) path ustring | data buffer (-1:
//!  null data, kept apart from empty) |
//!  acl vector<ACL> | czxid i64 | mzxid i64 | ctime i64 | mtime i64 | version i32 |
//!  cversion i32 | aversion i32 | ephemeral_owner i64 | pzxid i64`.
//! Integrity is the snapshot file's business (it carries a checksum over all of this).

use std::io::{self, Write};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use paddock_wire::jute::{write_i32, write_i64, Reader, Record};
use paddock_wire::{Data, DecodeError};

use crate::replicated::Db;
use crate::session::{Session, SessionTable};
use crate::tree::{DataTree, Node, RecentAcls, RestoreError, StatPersisted};

const MAGIC: &[u8; 4] = b"PDKI";
const VERSION: i32 = 2;
/// Bytes buffered before each write to the sink.
const CHUNK: usize = 256 * 1024;

/// A consistent copy of the replicated state, cheap to take under the lock (the tree is
/// a persistent map) and written out later, off the write path.
#[derive(Clone)]
pub struct Image {
    pub last_zxid: i64,
    pub sessions: SessionTable,
    pub tree: DataTree,
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("not a Paddock state image")]
    BadMagic,
    #[error("unsupported image version {0}")]
    Version(i32),
    #[error("malformed image: {0}")]
    Decode(#[from] DecodeError),
    #[error("inconsistent tree in image: {0}")]
    Tree(#[from] RestoreError),
}

impl Image {
    pub fn of(db: &Db) -> Image {
        Image {
            last_zxid: db.last_zxid,
            sessions: db.sessions.clone(),
            tree: db.tree.clone(),
        }
    }

    /// Streams the image to `out` in chunks.
    pub fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut buf = BytesMut::with_capacity(CHUNK + 4096);
        buf.extend_from_slice(MAGIC);
        write_i32(&mut buf, VERSION);
        write_i64(&mut buf, self.last_zxid);
        write_i32(&mut buf, self.sessions.len() as i32);
        let mut sessions: Vec<&Session> = self.sessions.iter().collect();
        sessions.sort_by_key(|s| s.id);
        for session in sessions {
            write_i64(&mut buf, session.id);
            write_i32(&mut buf, session.timeout);
            session.passwd.encode(&mut buf);
            write_i64(&mut buf, session.owner as i64);
            write_i64(&mut buf, session.conn as i64);
            write_i64(&mut buf, session.next_seq as i64);
        }
        write_i64(&mut buf, self.tree.node_count() as i64);
        for (path, node) in self.tree.iter() {
            path.encode(&mut buf);
            node.data().encode(&mut buf);
            node.acl().to_vec().encode(&mut buf);
            let stat = node.stat();
            for v in [stat.czxid, stat.mzxid, stat.ctime, stat.mtime] {
                write_i64(&mut buf, v);
            }
            for v in [stat.version, stat.cversion, stat.aversion] {
                write_i32(&mut buf, v);
            }
            write_i64(&mut buf, stat.ephemeral_owner);
            write_i64(&mut buf, stat.pzxid);
            if buf.len() >= CHUNK {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)
    }

    pub fn read_from(bytes: Bytes) -> Result<Image, ImageError> {
        if bytes.len() < 4 || &bytes[..4] != MAGIC {
            return Err(ImageError::BadMagic);
        }
        let mut r = Reader::new(bytes.slice(4..));
        let version = r.read_i32()?;
        if version != VERSION {
            return Err(ImageError::Version(version));
        }
        let last_zxid = r.read_i64()?;
        let mut sessions = SessionTable::default();
        let session_count = r.read_i32()?;
        for _ in 0..session_count.max(0) {
            sessions.insert(Session {
                id: r.read_i64()?,
                timeout: r.read_i32()?,
                // A copy: a slice would keep the whole snapshot in memory.
                passwd: Bytes::copy_from_slice(&r.read_buffer()?),
                owner: r.read_i64()? as u64,
                conn: r.read_i64()? as u64,
                next_seq: r.read_i64()? as u64,
            });
        }
        let node_count = r.read_i64()?;
        let mut acls = RecentAcls::default();
        // Decoded as the tree takes them, not listed first: a list of a million nodes
        // would double the memory a restart needs at its peak.
        let mut failed = None;
        let mut left = node_count.max(0);
        let nodes = std::iter::from_fn(|| {
            if left == 0 || failed.is_some() {
                return None;
            }
            left -= 1;
            read_node(&mut r, &mut acls)
                .map_err(|err| failed = Some(err))
                .ok()
        });
        let tree = DataTree::from_nodes(nodes);
        if let Some(err) = failed {
            return Err(err.into());
        }
        let tree = tree?;
        r.finish()?;
        Ok(Image {
            last_zxid,
            sessions,
            tree,
        })
    }
}

/// One node of a snapshot. The path and the data are slices of the snapshot until the
/// node is made, after the ACL has been decoded and dropped for a shared one: the
/// node's own allocations then reuse that memory instead of leaving a hole per node.
fn read_node(r: &mut Reader, acls: &mut RecentAcls) -> Result<(Arc<str>, Node), DecodeError> {
    let path = r.read_buffer()?;
    let data = Data::decode(r)?;
    let acl = acls.share(Record::decode(r)?);
    let stat = StatPersisted {
        czxid: r.read_i64()?,
        mzxid: r.read_i64()?,
        ctime: r.read_i64()?,
        mtime: r.read_i64()?,
        version: r.read_i32()?,
        cversion: r.read_i32()?,
        aversion: r.read_i32()?,
        ephemeral_owner: r.read_i64()?,
        pzxid: r.read_i64()?,
    };
    let path = std::str::from_utf8(&path).map_err(|_| DecodeError::InvalidUtf8)?;
    Ok((Arc::from(path), Node::new(data, acl, stat)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::TxnContext;
    use paddock_wire::{Acl, CreateMode, Id};

    #[test]
    fn images_round_trip() {
        let caller = [Id::new("ip", "127.0.0.1")];
        let ctx = TxnContext {
            zxid: 5,
            time: 1000,
            session_id: 0x100,
            caller: &caller,
            enforce_quota: false,
        };
        let mut tree = DataTree::new();
        tree.create(
            "/a",
            Bytes::from_static(b"x").into(),
            &Acl::open_unsafe(),
            CreateMode::Persistent,
            None,
            &ctx,
        )
        .unwrap();
        tree.create(
            "/a/e",
            Bytes::new().into(),
            &Acl::open_unsafe(),
            CreateMode::Ephemeral,
            None,
            &ctx,
        )
        .unwrap();
        tree.create(
            "/a/null",
            Data::NULL,
            &Acl::open_unsafe(),
            CreateMode::Persistent,
            None,
            &ctx,
        )
        .unwrap();
        let mut sessions = SessionTable::default();
        sessions.insert(Session {
            id: 0x100,
            timeout: 4000,
            passwd: Bytes::from_static(&[3; 16]),
            owner: 2,
            conn: 9,
            next_seq: 4,
        });
        let image = Image {
            last_zxid: 5,
            sessions,
            tree,
        };
        let mut out = Vec::new();
        image.write_to(&mut out).unwrap();
        let snapshot = Bytes::from(out);
        let back = Image::read_from(snapshot.clone()).unwrap();
        assert!(
            snapshot.is_unique(),
            "the image read keeps a slice of the snapshot alive (and with it all of it)"
        );
        assert_eq!(back.last_zxid, 5);
        assert_eq!(back.tree.digest(), image.tree.digest());
        assert_eq!(back.tree, image.tree);
        let data = |tree: &DataTree, path| tree.node(path).map(|n| n.data().is_null());
        assert_eq!(data(&back.tree, "/a/null"), Some(true), "null stays null");
        assert_eq!(data(&back.tree, "/a/e"), Some(false), "empty stays empty");
        assert_eq!(back.sessions.get(0x100), image.sessions.get(0x100));
        assert_eq!(
            back.tree.get_ephemerals(0x100, "/"),
            vec!["/a/e".to_string()]
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Image::read_from(Bytes::from_static(b"nope")).is_err());
        assert!(Image::read_from(Bytes::from_static(b"PDKI\x00\x00\x00\x01\x00")).is_err());
    }
}

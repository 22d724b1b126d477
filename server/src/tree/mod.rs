//! The znode tree: pure, synchronous, deterministic. No I/O, no clocks — every write
//! takes its zxid and time from the replicated txn, so each replica applying the same
//! txns holds the same tree (compare [`DataTree::digest`]).
//!
//! Semantics are Apache ZooKeeper 3.9's (`DataTree`, the checks of
//! `PrepRequestProcessor` and the reads of `FinalRequestProcessor`), with one
//! difference by design: every write is validated when it is applied, on every replica,
//! rather than against speculative state on the leader.
//!
//! The tree is a persistent map, so [`Clone`] is O(1): `multi` rolls back by restoring
//! a clone, and a snapshot is written from a clone while writes go on.
//!
//! # Layout
//! - `index`: where the nodes are kept: per parent, its children by name, so no node
//!   lists its children or stores its full path.
//! - `dir`: one parent's children by name: a sorted vector while few, a B-tree when
//!   many.
//! - `ephemerals`: each session's ephemeral paths, in one set of (session, path hash,
//!   path).
//! - `node`: one znode, its persisted stat, the `ephemeralOwner` encodings
//!   ([`NodeKind`]) and the wire `Stat`.
//! - `write`: create, delete, setData, setACL, check and session close, each returning
//!   the watch triggers it causes.
//! - `multi`: all-or-nothing batches of write requests.
//! - `read`: getData, exists, getChildren, getACL, getEphemerals, getAllChildrenNumber.
//! - `reap`: which containers and TTL nodes are due for deletion, and their deletion.
//! - `digest`: the tree hash replicas compare.
//! - `quota`: the counts under `/zookeeper/quota` kept current, and hard limits.
//! - `shared_acl`: one allocation for the many nodes with equal ACLs.

mod digest;
mod dir;
mod ephemerals;
mod index;
mod multi;
mod node;
mod quota;
mod read;
mod reap;
mod shared_acl;
mod write;

use std::sync::Arc;

use bytes::Bytes;
use ephemerals::Ephemerals;
use imbl::OrdSet;
use index::{InsertError, NodeIndex};
use paddock_wire::path::parent;
use paddock_wire::Acl;

pub use digest::VERSION as DIGEST_VERSION;
pub use node::{Node, NodeKind, StatPersisted};
pub use shared_acl::RecentAcls;
pub use write::{TxnContext, WatchTrigger};

/// The nodes ZooKeeper itself owns; they cannot be deleted (`DataTree.isSpecialPath`).
const SPECIAL_PATHS: [&str; 4] = ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

/// All znodes, with indexes by session and by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataTree {
    /// Every node, by parent and name (see `index`). Nodes are behind an `Arc` so the
    /// maps' 64-entry chunks hold 24 bytes per node rather than the whole node (about
    /// 130 bytes): the chunks are a third empty on average, and a chunk is copied
    /// whole when changed while a snapshot shares it.
    nodes: NodeIndex,
    /// The paths of each session's ephemeral nodes, for session close and expiry.
    ephemerals: Ephemerals,
    /// Container and TTL node paths, the candidates for reaping.
    containers: OrdSet<String>,
    ttls: OrdSet<String>,
    /// Sum of path and data lengths (ZooKeeper's `approximate_data_size` metric).
    data_size: u64,
    /// Wrapping sum of node digests, kept current by the three mutators below.
    digest: u64,
}

/// Why a list of nodes cannot be made into a tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error("the root node / is missing")]
    MissingRoot,
    #[error("node {0} is listed twice")]
    Duplicate(String),
    #[error("node {0} has no parent node")]
    Orphan(String),
}

impl Default for DataTree {
    fn default() -> Self {
        DataTree::new()
    }
}

impl DataTree {
    /// A fresh tree as ZooKeeper starts one: `/`, `/zookeeper` and `/zookeeper/quota`
    /// open to everyone, `/zookeeper/config` read-only (ZOOKEEPER-2014), all with a
    /// zero stat. They are linked without counting as creates, so `/` reports cversion
    /// -1 and `/zookeeper` -2, and `/zookeeper/config` has aversion -1 from ZooKeeper's
    /// internal setACL (all as a fresh ZooKeeper 3.8 reports them).
    pub fn new() -> Self {
        let mut tree = DataTree::empty();
        let open = shared_acl::open_unsafe();
        let blank = StatPersisted::default();
        let root = tree.insert("/", Node::new(Bytes::new().into(), open.clone(), blank));
        debug_assert!(root.is_ok(), "a new tree is empty");
        for path in ["/zookeeper", "/zookeeper/quota"] {
            tree.insert_linked(path, Node::new(Bytes::new().into(), open.clone(), blank));
        }
        let config_stat = StatPersisted {
            aversion: -1,
            ..blank
        };
        tree.insert_linked(
            "/zookeeper/config",
            Node::new(Bytes::new().into(), Acl::read_unsafe().into(), config_stat),
        );
        tree
    }

    fn empty() -> Self {
        DataTree {
            nodes: NodeIndex::new(),
            ephemerals: Ephemerals::default(),
            containers: OrdSet::new(),
            ttls: OrdSet::new(),
            data_size: 0,
            digest: 0,
        }
    }

    /// Rebuilds a tree from its nodes as a snapshot lists them, in any order. Child
    /// sets and indexes are derived (any children the given nodes carry are ignored).
    pub fn from_nodes<P: AsRef<str>>(
        nodes: impl IntoIterator<Item = (P, Node)>,
    ) -> Result<DataTree, RestoreError> {
        let mut tree = DataTree::empty();
        // Nodes whose parent had not come yet; a snapshot lists parents first, so
        // normally none (a list of every path would cost a copy of each).
        let mut unlinked = Vec::new();
        for (path, mut node) in nodes {
            let path = path.as_ref();
            node.clear_children();
            match tree.insert(path, node) {
                Ok(()) => {}
                Err(InsertError::Exists) => return Err(RestoreError::Duplicate(path.to_owned())),
                Err(InsertError::NotAPath) => return Err(RestoreError::Orphan(path.to_owned())),
            }
            if path != "/" {
                let parent_path = parent(path).unwrap_or("/");
                if tree.update(parent_path, Node::add_child).is_none() {
                    unlinked.push(path.to_owned());
                }
            }
        }
        if !tree.nodes.contains("/") {
            return Err(RestoreError::MissingRoot);
        }
        unlinked.sort_unstable();
        for path in unlinked {
            let parent_path = parent(&path).unwrap_or("/");
            let linked = tree.update(parent_path, Node::add_child);
            if linked.is_none() {
                return Err(RestoreError::Orphan(path));
            }
        }
        Ok(tree)
    }

    /// Every node with its path, parents before children (the order a snapshot
    /// writes them in).
    pub fn iter(&self) -> impl Iterator<Item = (String, &Node)> + '_ {
        self.nodes.walk()
    }

    /// The names of `path`'s children, in byte order (none if there is no such node).
    pub fn children<'a>(&'a self, path: &str) -> impl Iterator<Item = &'a str> + 'a {
        self.nodes.children(path).map(|(name, _)| name)
    }

    /// Every node below `path` at any depth, with its path, parents first.
    fn descendants(&self, path: &str) -> impl Iterator<Item = (String, &Node)> + '_ {
        self.nodes.descendants(path)
    }

    /// The number of znodes, the root included.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Sum of path and data lengths in bytes, as ZooKeeper's `approximate_data_size`.
    pub fn approximate_data_size(&self) -> u64 {
        self.data_size
    }

    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.len()
    }

    /// Sessions that own at least one ephemeral node.
    #[cfg(test)]
    pub fn sessions_with_ephemerals(&self) -> Vec<i64> {
        let mut sessions: Vec<i64> = self.ephemerals.iter().map(|(session, _)| session).collect();
        sessions.dedup();
        sessions
    }

    /// A hash of every path, data, persisted stat and ACL, independent of the order
    /// the nodes were written in: equal trees have equal digests. See `digest.rs` for
    /// the format.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// Adds a node whose path is new and records it in the indexes. Linking it into
    /// its parent's children is the caller's job.
    fn insert(&mut self, path: &str, node: Node) -> Result<(), InsertError> {
        let (digest, size, kind) = (node.digest(path), size_of_node(path, &node), node.kind());
        self.nodes.insert(path, node)?;
        self.digest = self.digest.wrapping_add(digest);
        self.data_size += size;
        match kind {
            NodeKind::Persistent => {}
            NodeKind::Ephemeral { session_id } => {
                self.ephemerals.insert(session_id, path);
            }
            NodeKind::Container => {
                self.containers.insert(path.to_owned());
            }
            NodeKind::Ttl { .. } => {
                self.ttls.insert(path.to_owned());
            }
        }
        Ok(())
    }

    /// Inserts a node and adds it to its parent's children without touching the
    /// parent's stat: how ZooKeeper links its own nodes.
    fn insert_linked(&mut self, path: &str, node: Node) {
        let parent_path = parent(path).unwrap_or("/");
        self.update(parent_path, Node::add_child);
        let inserted = self.insert(path, node);
        debug_assert!(inserted.is_ok(), "{path} is one of a new tree's own nodes");
    }

    /// Removes a node from the map and the indexes. Unlinking it from its parent is
    /// the caller's job.
    fn remove(&mut self, path: &str) -> Option<Node> {
        let node = Arc::unwrap_or_clone(self.nodes.remove(path)?);
        self.digest = self.digest.wrapping_sub(node.digest(path));
        self.data_size -= size_of_node(path, &node);
        match node.kind() {
            NodeKind::Persistent => {}
            NodeKind::Ephemeral { session_id } => {
                self.ephemerals.remove(session_id, path);
            }
            NodeKind::Container => {
                self.containers.remove(path);
            }
            NodeKind::Ttl { .. } => {
                self.ttls.remove(path);
            }
        }
        Some(node)
    }

    /// Changes a node in place, keeping the digest and size current. The node's kind
    /// must not change (it never does: `ephemeralOwner` is fixed at create).
    fn update<R>(&mut self, path: &str, change: impl FnOnce(&mut Node) -> R) -> Option<R> {
        let node = self.nodes.get_mut(path)?;
        let (digest_before, size_before) = (node.digest(path), size_of_node(path, node));
        let result = change(node);
        self.digest = self
            .digest
            .wrapping_sub(digest_before)
            .wrapping_add(node.digest(path));
        self.data_size = self.data_size - size_before + size_of_node(path, node);
        Some(result)
    }
}

fn size_of_node(path: &str, node: &Node) -> u64 {
    (path.len() + node.data().len()) as u64
}

/// Whether ZooKeeper refuses to delete the path.
fn is_special_path(path: &str) -> bool {
    SPECIAL_PATHS.contains(&path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_wire::path::basename;
    use paddock_wire::{perms, Data};

    #[test]
    fn a_new_tree_is_what_zookeeper_starts_with() {
        // Read off a fresh ZooKeeper 3.8 with kazoo (verify/t1.py): zero stats, root
        // cversion -1 with one child, /zookeeper -2 with two, config aversion -1 and
        // world:anyone READ.
        let tree = DataTree::new();
        let caller = [];
        let (children, root) = tree.get_children("/", &caller).unwrap();
        assert_eq!(children, ["zookeeper"]);
        assert_eq!(
            (root.cversion, root.num_children, root.czxid, root.pzxid),
            (-1, 1, 0, 0)
        );
        let (children, zk) = tree.get_children("/zookeeper", &caller).unwrap();
        assert_eq!(children, ["config", "quota"]);
        assert_eq!(zk.cversion, -2);
        let (acl, config) = tree.get_acl("/zookeeper/config", &caller).unwrap();
        assert_eq!(config.aversion, -1);
        assert_eq!(acl, Acl::read_unsafe());
        assert_eq!(
            tree.get_acl("/zookeeper/quota", &caller).unwrap().0,
            Acl::open_unsafe()
        );
        assert_eq!(tree.node_count(), 4);
        assert_eq!(tree.approximate_data_size(), (1 + 10 + 16 + 17) as u64);
        assert_eq!(perms::ALL, tree.get_acl("/", &caller).unwrap().0[0].perms);
    }

    /// The invariants every write must keep: parent and child links agree, the
    /// indexes and counters match the nodes, the digest matches a recomputation.
    fn assert_invariants(tree: &DataTree) {
        let mut digest = 0u64;
        let mut size = 0u64;
        let (mut ephemerals, mut containers, mut ttls) = (Vec::new(), Vec::new(), Vec::new());
        for (path, node) in tree.iter() {
            let path = path.as_str();
            digest = digest.wrapping_add(node.digest(path));
            size += size_of_node(path, node);
            let children: Vec<&str> = tree.children(path).collect();
            assert_eq!(
                children.len(),
                node.num_children() as usize,
                "{path}'s count"
            );
            for child in children {
                let child_path = if path == "/" {
                    format!("/{child}")
                } else {
                    format!("{path}/{child}")
                };
                assert!(
                    tree.node(&child_path).is_some(),
                    "{child_path} listed but missing"
                );
            }
            if path != "/" {
                let parent_node = tree
                    .node(parent(path).unwrap_or("/"))
                    .expect("parent exists");
                assert!(
                    tree.children(parent(path).unwrap_or("/"))
                        .any(|c| c == basename(path)),
                    "{path} not linked"
                );
                assert!(
                    !matches!(parent_node.kind(), NodeKind::Ephemeral { .. }),
                    "{path} under an ephemeral"
                );
            }
            match node.kind() {
                NodeKind::Persistent => {}
                NodeKind::Ephemeral { session_id } => {
                    ephemerals.push((session_id, path.to_owned()))
                }
                NodeKind::Container => containers.push(path.to_owned()),
                NodeKind::Ttl { .. } => ttls.push(path.to_owned()),
            }
        }
        assert_eq!(tree.digest(), digest);
        assert_eq!(tree.approximate_data_size(), size);
        assert_eq!(tree.ephemeral_count(), ephemerals.len());
        let mut indexed: Vec<(i64, String)> = tree
            .ephemerals
            .iter()
            .map(|(session, path)| (session, path.to_owned()))
            .collect();
        indexed.sort();
        ephemerals.sort();
        // `iter` walks parents first, not in string order; the indexes are sorted sets.
        containers.sort();
        ttls.sort();
        assert_eq!(indexed, ephemerals);
        assert_eq!(
            tree.containers.iter().cloned().collect::<Vec<_>>(),
            containers
        );
        assert_eq!(tree.ttls.iter().cloned().collect::<Vec<_>>(), ttls);
    }

    /// A deterministic pseudo-random workload (a 64-bit LCG: no test dependency) of
    /// every write, checking the invariants after each step and that a failed write
    /// changes nothing.
    #[test]
    fn random_writes_keep_the_invariants() {
        use paddock_wire::{CreateMode, CreateRequest, PathVersionRequest, Request};
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(state >> 33).unwrap() % n
        };
        let paths = [
            "/a",
            "/b",
            "/a/a",
            "/a/b",
            "/b/a",
            "/a/a/a",
            "/a/b/",
            "/zookeeper/quota/a",
        ];
        let modes = [
            CreateMode::Persistent,
            CreateMode::Ephemeral,
            CreateMode::PersistentSequential,
            CreateMode::EphemeralSequential,
            CreateMode::Container,
            CreateMode::PersistentWithTtl,
        ];
        let mut tree = DataTree::new();
        for zxid in 1..3_000i64 {
            let session_id = 1 + i64::try_from(next(3)).unwrap();
            let ctx = TxnContext {
                zxid,
                time: zxid * 10,
                session_id,
                caller: &[],
                enforce_quota: false,
            };
            let path = paths[next(paths.len())];
            let before = tree.clone();
            let outcome: Result<(), paddock_wire::ErrorCode> = match next(7) {
                0 | 1 => {
                    let mode = modes[next(modes.len())];
                    let ttl = mode.is_ttl().then_some(50);
                    tree.create(
                        path,
                        Bytes::from(vec![0u8; next(4)]).into(),
                        &Acl::open_unsafe(),
                        mode,
                        ttl,
                        &ctx,
                    )
                    .map(|_| ())
                }
                2 => tree
                    .delete(path, i32::try_from(next(2)).unwrap() - 1, &ctx)
                    .map(|_| ()),
                3 => tree
                    .set_data(path, Bytes::from(vec![1u8; next(4)]).into(), -1, &ctx)
                    .map(|_| ()),
                4 => {
                    let create = |p: &str| {
                        Request::Create(CreateRequest {
                            path: p.into(),
                            data: Bytes::new().into(),
                            acl: Acl::open_unsafe(),
                            flags: 0,
                        })
                    };
                    let delete = |p: &str| {
                        Request::Delete(PathVersionRequest {
                            path: p.into(),
                            version: -1,
                        })
                    };
                    let ops = [
                        create(path),
                        delete(paths[next(paths.len())]),
                        create(paths[next(paths.len())]),
                    ];
                    let applied = tree.multi(&ops[..1 + next(3)], &ctx);
                    if applied
                        .result
                        .iter()
                        .any(|r| matches!(r, paddock_wire::OpResult::Error(_)))
                    {
                        assert_eq!(tree, before, "a failed multi changes nothing");
                    }
                    Ok(())
                }
                5 => {
                    tree.kill_session(session_id, zxid);
                    Ok(())
                }
                _ => {
                    let due = tree.expired_containers_and_ttls(ctx.time, 0);
                    match due.first() {
                        Some(p) => tree.delete_container(p, 0, &ctx).map(|_| ()),
                        None => Ok(()),
                    }
                }
            };
            if outcome.is_err() {
                assert_eq!(tree, before, "a failed write changes nothing");
            }
            assert_invariants(&tree);
        }
        assert!(tree.node_count() > 4, "the workload built something");
    }

    /// Resident memory of this process in bytes, from /proc.
    fn rss_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
        let pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        pages * 4096
    }

    /// `PADDOCK_MEMORY_ZNODES`, by default 1,000,000.
    fn bench_znodes() -> usize {
        std::env::var("PADDOCK_MEMORY_ZNODES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1_000_000)
    }

    /// The tree of `memory_per_znode` (server/tests/it/memory.rs): `n` creates of 100
    /// bytes with 40-character names under four parents, each create's data sliced
    /// from a buffer of its own as a decoded txn's is.
    fn bench_tree(n: usize) -> DataTree {
        use paddock_wire::CreateMode;
        let ctx = |zxid| TxnContext {
            zxid,
            time: zxid,
            session_id: 1,
            caller: &[],
            enforce_quota: false,
        };
        let open = Acl::open_unsafe();
        let mut tree = DataTree::new();
        for parent in ["/bench", "/bench/p0", "/bench/p1", "/bench/p2", "/bench/p3"] {
            let created = tree.create(
                parent,
                Data::NULL,
                &open,
                CreateMode::Persistent,
                None,
                &ctx(1),
            );
            created.unwrap();
        }
        let mut state = 0u64;
        for i in 0..n {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = (state ^ (state >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            let path = format!(
                "/bench/p{}/{:016x}{:016x}{:08x}",
                i % 4,
                z,
                z.rotate_left(17),
                i
            );
            let txn = Bytes::from(vec![b'x'; 200]);
            let data = Data::from(txn.slice(50..150));
            let created = tree.create(&path, data, &open, CreateMode::Persistent, None, &ctx(2));
            created.unwrap();
        }
        tree
    }

    /// The quick, in-process form of `memory_per_znode`: the tree alone.
    /// `cargo test -p paddock-server --release --lib -- --ignored --nocapture bytes_per_znode`
    #[test]
    #[ignore = "a measurement: prints bytes per znode"]
    fn bytes_per_znode() {
        let n = bench_znodes();
        let before = rss_bytes();
        let tree = bench_tree(n);
        let grown = rss_bytes().saturating_sub(before);
        println!(
            "tree: {n} znodes, {} MiB, {} bytes per znode (size_of Node {})",
            grown >> 20,
            grown / n as u64,
            std::mem::size_of::<Node>()
        );
        assert_eq!(tree.node_count(), n + 9);
    }

    #[test]
    fn restore_rebuilds_children_indexes_and_digest() {
        let mut tree = DataTree::new();
        let ctx = TxnContext {
            zxid: 5,
            time: 100,
            session_id: 7,
            caller: &[],
            enforce_quota: false,
        };
        tree.create(
            "/a",
            Bytes::from_static(b"x").into(),
            &Acl::open_unsafe(),
            paddock_wire::CreateMode::Persistent,
            None,
            &ctx,
        )
        .unwrap();
        tree.create(
            "/a/e",
            Bytes::new().into(),
            &Acl::open_unsafe(),
            paddock_wire::CreateMode::Ephemeral,
            None,
            &ctx,
        )
        .unwrap();

        // Reverse order: restore must not depend on parents coming first.
        let mut listed: Vec<(String, Node)> = tree
            .iter()
            .map(|(p, n)| (p.to_owned(), n.clone()))
            .collect();
        listed.reverse();
        let restored = DataTree::from_nodes(listed.clone()).unwrap();
        assert_eq!(restored, tree);
        assert_eq!(restored.digest(), tree.digest());
        assert_eq!(restored.get_ephemerals(7, "/"), ["/a/e"]);

        let without_root: Vec<_> = listed.iter().filter(|(p, _)| p != "/").cloned().collect();
        assert_eq!(
            DataTree::from_nodes(without_root),
            Err(RestoreError::MissingRoot)
        );
        let orphan: Vec<_> = listed.iter().filter(|(p, _)| p != "/a").cloned().collect();
        assert_eq!(
            DataTree::from_nodes(orphan),
            Err(RestoreError::Orphan("/a/e".into()))
        );
        let twice = listed.iter().chain(&listed[..1]).cloned();
        assert!(matches!(
            DataTree::from_nodes(twice),
            Err(RestoreError::Duplicate(_))
        ));
    }
}

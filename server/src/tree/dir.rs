//! The children of one node, by name: a sorted vector while there are few, a
//! persistent B-tree once there are many.
//!
//! Most directories are small (a lock's parent with its one holder, a session's
//! handful of ephemerals, a config node's few keys), and many of them empty and fill
//! again on every write. An `imbl::OrdMap` allocates a whole B-tree chunk (~2 KiB)
//! even for one entry, so such a directory made and dropped 2 KiB on every create and
//! delete under it; the vector allocates 24 bytes per child. Both forms are shared by a
//! clone of the tree (snapshots are written from clones) and copied only on the first
//! write after one.

use std::sync::Arc;

use ecow::EcoString;
use imbl::shared_ptr::DefaultSharedPtr;
use imbl::OrdMap;

use super::node::Node;

/// A child's name, in 16 bytes as an `Arc<str>` is, but kept inline when it is short
/// (up to 15 bytes: `n42`, `c7-123`, `lock-0000000012`), so a lookup compares bytes
/// inside the directory's own array instead of following a pointer per step, a cache
/// miss each in a big tree; a longer one is one shared allocation, as before.
type Name = EcoString;

type Entry = (Name, Arc<Node>);

/// Above this many children a directory becomes a B-tree: inserting into a sorted
/// vector moves the entries after it, and a copy on write copies them all.
const SMALL_MAX: usize = 32;
/// A B-tree that shrinks to this many becomes a vector again; the gap keeps a
/// directory that hovers at the limit from converting on every write.
const SMALL_AGAIN: usize = SMALL_MAX / 2;

#[derive(Debug, Clone)]
pub(super) enum Dir {
    /// Sorted by name (byte order, as the B-tree's), at most `SMALL_MAX`; empty only
    /// between the removal of its last child and the index dropping it.
    Small(Arc<Vec<Entry>>),
    Large(OrdMap<Name, Arc<Node>>),
}

impl Dir {
    pub fn unit(name: Name, node: Arc<Node>) -> Dir {
        Dir::Small(Arc::new(vec![(name, node)]))
    }

    pub fn len(&self) -> usize {
        match self {
            Dir::Small(entries) => entries.len(),
            Dir::Large(map) => map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Node>> {
        match self {
            Dir::Small(entries) => {
                let at = position(entries, name).ok()?;
                Some(&entries[at].1)
            }
            Dir::Large(map) => map.get(name),
        }
    }

    /// The child's slot, to change in place (the vector copied first if shared).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Arc<Node>> {
        match self {
            Dir::Small(entries) => {
                let at = position(entries, name).ok()?;
                Some(&mut Arc::make_mut(entries)[at].1)
            }
            Dir::Large(map) => map.get_mut(name),
        }
    }

    /// Adds or replaces the child called `name`, returning the one it replaced.
    pub fn insert(&mut self, name: Name, node: Arc<Node>) -> Option<Arc<Node>> {
        match self {
            Dir::Small(entries) => match position(entries, &name) {
                Ok(at) => Some(std::mem::replace(&mut Arc::make_mut(entries)[at].1, node)),
                Err(_) if entries.len() == SMALL_MAX => {
                    let mut map: OrdMap<_, _> = entries.iter().cloned().collect();
                    map.insert(name, node);
                    *self = Dir::Large(map);
                    None
                }
                Err(at) => {
                    Arc::make_mut(entries).insert(at, (name, node));
                    None
                }
            },
            Dir::Large(map) => map.insert(name, node),
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<Arc<Node>> {
        match self {
            Dir::Small(entries) => {
                let at = position(entries, name).ok()?;
                Some(Arc::make_mut(entries).remove(at).1)
            }
            Dir::Large(map) => {
                let node = map.remove(name)?;
                if map.len() <= SMALL_AGAIN && !map.is_empty() {
                    let entries: Vec<Entry> =
                        map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    *self = Dir::Small(Arc::new(entries));
                }
                Some(node)
            }
        }
    }

    /// The children by name in byte order.
    pub fn iter(&self) -> DirIter<'_> {
        match self {
            Dir::Small(entries) => DirIter::Small(entries.iter()),
            Dir::Large(map) => DirIter::Large(map.iter()),
        }
    }
}

/// Where `name` is in a sorted vector, or where it would go.
fn position(entries: &[Entry], name: &str) -> Result<usize, usize> {
    entries.binary_search_by(|(child, _)| child.as_str().cmp(name))
}

/// Equal when they hold the same children, whichever form each is in.
impl PartialEq for Dir {
    fn eq(&self, other: &Dir) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Dir {}

/// What is left to list of one directory.
pub(super) enum DirIter<'a> {
    Small(std::slice::Iter<'a, Entry>),
    Large(imbl::ordmap::Iter<'a, Name, Arc<Node>, DefaultSharedPtr>),
}

impl<'a> Iterator for DirIter<'a> {
    type Item = (&'a Name, &'a Arc<Node>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            DirIter::Small(entries) => entries.next().map(|(name, node)| (name, node)),
            DirIter::Large(map) => map.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::tree::node::StatPersisted;
    use paddock_wire::Acl;

    fn node(version: i32) -> Arc<Node> {
        let stat = StatPersisted {
            version,
            ..StatPersisted::default()
        };
        Arc::new(Node::new(
            Bytes::new().into(),
            Acl::open_unsafe().into(),
            stat,
        ))
    }

    fn names(dir: &Dir) -> Vec<String> {
        dir.iter().map(|(name, _)| name.to_string()).collect()
    }

    fn is_small(dir: &Dir) -> bool {
        matches!(dir, Dir::Small(_))
    }

    #[test]
    fn grows_into_a_tree_and_shrinks_back_keeping_byte_order() {
        // Inserted in a scrambled order; names whose byte order differs from numeric.
        let order: Vec<usize> = (0..=SMALL_MAX).map(|i| (i * 7) % (SMALL_MAX + 1)).collect();
        let mut dir = Dir::unit(format!("n{}", order[0]).into(), node(order[0] as i32));
        for &i in &order[1..] {
            assert!(is_small(&dir));
            assert!(dir.insert(format!("n{i}").into(), node(i as i32)).is_none());
        }
        assert!(!is_small(&dir), "more than {SMALL_MAX} children is a tree");
        let mut expected: Vec<String> = (0..=SMALL_MAX).map(|i| format!("n{i}")).collect();
        expected.sort();
        assert_eq!(names(&dir), expected);
        for i in 0..=SMALL_MAX {
            assert_eq!(
                dir.get(&format!("n{i}")).map(|n| n.stat().version),
                Some(i as i32)
            );
        }
        // Shrinking: still a tree down to just above SMALL_AGAIN, a vector at it.
        for i in 0..(SMALL_MAX + 1 - SMALL_AGAIN) {
            assert!(!is_small(&dir));
            assert!(dir.remove(&format!("n{i}")).is_some());
        }
        assert!(is_small(&dir));
        assert_eq!(dir.len(), SMALL_AGAIN);
        let left: Vec<String> = expected
            .into_iter()
            .filter(|name| dir.get(name).is_some())
            .collect();
        assert_eq!(names(&dir), left);
    }

    #[test]
    fn replaces_removes_and_leaves_a_clone_untouched() {
        let mut dir = Dir::unit("b".into(), node(1));
        dir.insert("a".into(), node(2));
        let clone = dir.clone();
        assert_eq!(
            dir.insert("b".into(), node(3)).map(|n| n.stat().version),
            Some(1)
        );
        Arc::make_mut(dir.get_mut("a").unwrap()).stat_mut().version = 4;
        assert_eq!(dir.remove("a").map(|n| n.stat().version), Some(4));
        assert!(dir.remove("a").is_none());
        assert!(dir.get_mut("zz").is_none());
        assert_eq!(names(&dir), ["b"]);
        assert_eq!(names(&clone), ["a", "b"]);
        assert_eq!(clone.get("a").map(|n| n.stat().version), Some(2));
        assert_eq!(clone.get("b").map(|n| n.stat().version), Some(1));
    }

    #[test]
    fn a_name_is_no_bigger_than_a_shared_str_and_short_ones_are_inline() {
        // Every child costs one entry per directory: a wider name is more bytes per znode.
        assert_eq!(std::mem::size_of::<Name>(), std::mem::size_of::<Arc<str>>());
        assert!(Name::from("lock-0000000012").is_inline());
        assert!(!Name::from("member_0000000012").is_inline());
    }

    #[test]
    fn equal_by_content_in_either_form() {
        let entries: Vec<Entry> = (0..4).map(|i| (format!("n{i}").into(), node(i))).collect();
        let small = Dir::Small(Arc::new(entries.clone()));
        let large = Dir::Large(entries.into_iter().collect());
        assert_eq!(small, large);
        let mut other = small.clone();
        other.remove("n0");
        assert_ne!(other, large);
    }
}

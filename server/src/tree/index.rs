//! Where the tree keeps its nodes: the root, and for every node that has children a
//! map of them by name, found by the node's path in a hash map.
//!
//! A lookup hashes the parent's path once and then compares names within one
//! directory, where a single ordered map of full paths compared long shared prefixes
//! on every step (with 100 k nodes, 17 steps of 30-byte compares on each of the five
//! lookups of a create). A node's children are its directory's map, in name order, so
//! no node lists them, and each node stores only its name, not its full path. The
//! directories are in a persistent map and each one is shared until written (see
//! [`Dir`]), so a clone is O(1), as the tree's clone must be.
//!
//! Paths split at the last `/`: `/a/b` is `b` in directory `/a`, `/a` is `a` in
//! directory `` (the root's children), and `/` is the root, in no directory.

use std::sync::Arc;

use imbl::HashMap;

use super::dir::{Dir, DirIter};
use super::node::Node;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NodeIndex {
    root: Option<Arc<Node>>,
    /// By the directory's key ([`dir_key`] of the parent's path); only non-empty ones.
    dirs: HashMap<Arc<str>, Dir>,
    len: usize,
}

/// The directory a node's children are kept under.
fn dir_key(path: &str) -> &str {
    if path == "/" {
        ""
    } else {
        path
    }
}

/// `(directory, name)` of a path other than the root; `None` for the root and for a
/// string with no `/`, which names no node.
fn split(path: &str) -> Option<(&str, &str)> {
    if path == "/" {
        return None;
    }
    path.rsplit_once('/')
}

/// Why [`NodeIndex::insert`] refused a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InsertError {
    /// The path is taken.
    Exists,
    /// The path has no `/`: it cannot be placed in the tree.
    NotAPath,
}

impl NodeIndex {
    pub fn new() -> Self {
        NodeIndex {
            root: None,
            dirs: HashMap::new(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, path: &str) -> Option<&Node> {
        match split(path) {
            None if path == "/" => self.root.as_deref(),
            None => None,
            Some((dir, name)) => self.dirs.get(dir)?.get(name).map(|node| &**node),
        }
    }

    pub fn contains(&self, path: &str) -> bool {
        self.get(path).is_some()
    }

    /// The node to change in place (copied first if a clone of the tree shares it).
    pub fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        let node = match split(path) {
            None if path == "/" => self.root.as_mut()?,
            None => return None,
            Some((dir, name)) => self.dirs.get_mut(dir)?.get_mut(name)?,
        };
        Some(Arc::make_mut(node))
    }

    /// Adds a node at a free path; its parent need not be there yet.
    pub fn insert(&mut self, path: &str, node: Node) -> Result<(), InsertError> {
        if self.contains(path) {
            return Err(InsertError::Exists);
        }
        match split(path) {
            None if path == "/" => self.root = Some(Arc::new(node)),
            None => return Err(InsertError::NotAPath),
            Some((dir, name)) => {
                let node = Arc::new(node);
                match self.dirs.get_mut(dir) {
                    Some(children) => {
                        children.insert(name.into(), node);
                    }
                    None => {
                        self.dirs.insert(dir.into(), Dir::unit(name.into(), node));
                    }
                }
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Takes a node out (its children, if any, stay under its path).
    pub fn remove(&mut self, path: &str) -> Option<Arc<Node>> {
        let node = match split(path) {
            None if path == "/" => self.root.take()?,
            None => return None,
            Some((dir, name)) => {
                let children = self.dirs.get_mut(dir)?;
                let node = children.remove(name)?;
                if children.is_empty() {
                    self.dirs.remove(dir);
                }
                node
            }
        };
        self.len -= 1;
        Some(node)
    }

    /// The children of the node at `path`, by name in byte order.
    pub fn children<'a>(&'a self, path: &str) -> impl Iterator<Item = (&'a str, &'a Node)> + 'a {
        self.dirs
            .get(dir_key(path))
            .into_iter()
            .flat_map(|children| children.iter())
            .map(|(name, node)| (name.as_str(), &**node))
    }

    /// Every node below `path` (not `path` itself), each parent before its children.
    pub fn descendants<'a>(&'a self, path: &str) -> Walk<'a> {
        let mut walk = Walk {
            index: self,
            pending: Vec::new(),
        };
        walk.descend(path.to_owned());
        walk
    }

    /// Every node, the root first and each parent before its children (the order
    /// snapshots are written in, so that a restore finds each parent in place).
    pub fn walk(&self) -> impl Iterator<Item = (String, &Node)> + '_ {
        let root = self.root.as_deref().map(|root| ("/".to_owned(), root));
        let below = self.root.as_ref().map(|_| self.descendants("/"));
        root.into_iter().chain(below.into_iter().flatten())
    }
}

/// A depth-first walk below a node, paths built as it goes.
pub(super) struct Walk<'a> {
    index: &'a NodeIndex,
    /// The directories still being listed: each one's path and what is left of it.
    pending: Vec<(String, DirIter<'a>)>,
}

impl<'a> Walk<'a> {
    fn descend(&mut self, path: String) {
        if let Some(children) = self.index.dirs.get(dir_key(&path)) {
            self.pending.push((path, children.iter()));
        }
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = (String, &'a Node);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (dir, children) = self.pending.last_mut()?;
            let Some((name, node)) = children.next() else {
                self.pending.pop();
                continue;
            };
            let path = format!("{}/{name}", dir_key(dir));
            self.descend(path.clone());
            return Some((path, node));
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::tree::node::StatPersisted;
    use paddock_wire::Acl;

    fn node(version: i32) -> Node {
        let stat = StatPersisted {
            version,
            ..StatPersisted::default()
        };
        Node::new(Bytes::new().into(), Acl::open_unsafe().into(), stat)
    }

    fn index_of(paths: &[&str]) -> NodeIndex {
        let mut index = NodeIndex::new();
        for (i, path) in paths.iter().enumerate() {
            index.insert(path, node(i as i32)).unwrap();
        }
        index
    }

    #[test]
    fn lookups_find_exactly_the_inserted_paths() {
        let index = index_of(&["/", "/a", "/a/b", "/a-x", "/a/b/c"]);
        assert_eq!(index.len(), 5);
        for (i, path) in ["/", "/a", "/a/b", "/a-x", "/a/b/c"].iter().enumerate() {
            assert_eq!(index.get(path).map(|n| n.stat().version), Some(i as i32));
        }
        for missing in ["", "a", "/b", "/a/", "//", "/a/b/c/d", "/a/c"] {
            assert!(!index.contains(missing), "{missing:?}");
        }
    }

    #[test]
    fn insert_refuses_taken_paths_and_non_paths() {
        let mut index = index_of(&["/", "/a"]);
        assert_eq!(index.insert("/a", node(9)), Err(InsertError::Exists));
        assert_eq!(index.insert("/", node(9)), Err(InsertError::Exists));
        assert_eq!(index.insert("a", node(9)), Err(InsertError::NotAPath));
        assert_eq!(index.len(), 2);
        assert_eq!(index.get("/a").map(|n| n.stat().version), Some(1));
    }

    #[test]
    fn children_are_by_name_and_walks_put_parents_first() {
        let index = index_of(&["/a/b/c", "/a-x/y", "/a/c", "/a", "/b", "/", "/a/b", "/a-x"]);
        let names: Vec<&str> = index.children("/").map(|(name, _)| name).collect();
        assert_eq!(names, ["a", "a-x", "b"]);
        let names: Vec<&str> = index.children("/a").map(|(name, _)| name).collect();
        assert_eq!(names, ["b", "c"]);
        assert_eq!(index.children("/b").count(), 0);
        let walked: Vec<String> = index.walk().map(|(path, _)| path).collect();
        assert_eq!(
            walked,
            ["/", "/a", "/a/b", "/a/b/c", "/a/c", "/a-x", "/a-x/y", "/b"]
        );
        let below: Vec<String> = index.descendants("/a").map(|(path, _)| path).collect();
        assert_eq!(below, ["/a/b", "/a/b/c", "/a/c"]);
    }

    #[test]
    fn removing_the_last_child_drops_its_directory() {
        let mut index = index_of(&["/", "/a", "/a/b"]);
        let clone = index.clone();
        assert_eq!(index.remove("/a/b").map(|n| n.stat().version), Some(2));
        assert!(index.remove("/a/b").is_none());
        assert!(!index.dirs.contains_key("/a"));
        assert_eq!(index.len(), 2);
        // A clone taken before is untouched (snapshots are written from clones).
        assert!(clone.contains("/a/b"));
        assert_eq!(clone.len(), 3);
        index.get_mut("/a").unwrap().stat_mut().version = 7;
        assert_eq!(clone.get("/a").map(|n| n.stat().version), Some(1));
        let mut expected = index_of(&["/", "/a"]);
        if let Some(node) = expected.get_mut("/a") {
            node.stat_mut().version = 7;
        }
        assert_eq!(index, expected);
    }
}

//! The cache's pure core: the mirrored nodes, and the events that an observation of
//! the server (a node read, a node found missing, a children listing) makes.
//!
//! Observations must be fed in the order the server answered them (the order the reads
//! were sent on one session), so each is of a state no older than the one before; the
//! rules below then never step a node back: a read whose `mzxid` is not newer than the
//! mirror's changes nothing, one whose `czxid` is newer means the node was deleted and
//! created again.

use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;

use bytes::Bytes;
use paddock_wire::Stat;

/// A mirrored node: its data and the `Stat` read with it.
///
/// The stat is the one read when the node's data last changed (or the node appeared):
/// its data fields (`czxid`, `mzxid`, `version`, `ctime`, `mtime`, `ephemeral_owner`,
/// `data_length`) are current; its children fields (`cversion`, `num_children`,
/// `pzxid`) are as of that read. The cache's own children listing is current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedNode {
    /// The node's data (null reads as empty).
    pub data: Bytes,
    /// The node's `Stat` as read with that data.
    pub stat: Stat,
}

/// A change the cache saw, with the node before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheEvent {
    /// The node appeared (also sent for every node found by the first load, before
    /// [`Initialized`](CacheEvent::Initialized)).
    Created {
        /// The node's path (relative to the client's chroot, like every client path).
        path: String,
        /// The node as read.
        node: CachedNode,
    },
    /// The node's data changed (its `mzxid` grew).
    Changed {
        /// The node's path.
        path: String,
        /// The node as the cache held it.
        old: CachedNode,
        /// The node as read now.
        new: CachedNode,
    },
    /// The node is gone (a node deleted and created again is reported as `Deleted`
    /// then `Created`).
    Deleted {
        /// The node's path.
        path: String,
        /// The node as the cache held it.
        old: CachedNode,
    },
    /// The first load is complete: the events so far describe the whole subtree.
    Initialized,
}

impl CacheEvent {
    /// The node the event is about; `None` for `Initialized`.
    pub fn path(&self) -> Option<&str> {
        match self {
            CacheEvent::Created { path, .. }
            | CacheEvent::Changed { path, .. }
            | CacheEvent::Deleted { path, .. } => Some(path),
            CacheEvent::Initialized => None,
        }
    }
}

/// A mirrored node and what the mirror knows of its children.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    node: CachedNode,
    /// The newest `pzxid` read for this incarnation of the node (from its data or its
    /// listing): a child created at or before it was created under this incarnation.
    children_through: i64,
}

/// Why an observation of a node was not applied: the mirror cannot tell that the
/// node's parent, as mirrored, is the incarnation the node was created under (the
/// parent may have been deleted and created again since it was read, with this node
/// created under the new one). The parent must be read first, then the node again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadParentFirst(pub String);

/// The mirrored nodes by path, under the cache's root. Paths sort so that a node's
/// descendants follow it (`/a`, `/a/b`, `/a/b/c`, `/a0`), which makes a subtree a range.
///
/// A node comes in only under a parent known to be the incarnation it was created
/// under (the parent's `children_through` covers its `czxid`). So a mirrored subtree
/// is always of one incarnation of the tree, and when a node turns out to be created
/// again, everything mirrored below it belongs to the old one and is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mirror {
    root: String,
    nodes: BTreeMap<String, Held>,
    /// Paths left out because the session may not read them or an ancestor (NoAuth):
    /// a node under one of them is not waited for.
    left_out: HashSet<String>,
}

impl Mirror {
    pub fn new(root: &str) -> Mirror {
        Mirror {
            root: root.to_owned(),
            nodes: BTreeMap::new(),
            left_out: HashSet::new(),
        }
    }

    pub fn get(&self, path: &str) -> Option<&CachedNode> {
        self.nodes.get(path).map(|held| &held.node)
    }

    /// Every mirrored node, by path.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &CachedNode)> {
        self.nodes.iter().map(|(path, held)| (path, &held.node))
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The names of `parent`'s mirrored children, sorted.
    pub fn children(&self, parent: &str) -> Vec<String> {
        self.descendants(parent)
            .filter_map(|path| child_name(parent, path))
            .map(str::to_owned)
            .collect()
    }

    /// The node was read with this data and stat. Fails, changing nothing, when the
    /// node is new to the mirror and its parent must be read first.
    pub fn present(
        &mut self,
        path: &str,
        data: Bytes,
        stat: Stat,
    ) -> Result<Vec<CacheEvent>, ReadParentFirst> {
        let (czxid, mzxid, pzxid) = (stat.czxid, stat.mzxid, stat.pzxid);
        let new = CachedNode { data, stat };
        if !self.left_out.is_empty() {
            // Readable (again).
            self.left_out.remove(path);
        }
        let held_czxid = match self.nodes.get_mut(path) {
            Some(held) if held.node.stat.czxid == czxid => {
                held.children_through = held.children_through.max(pzxid);
                if mzxid <= held.node.stat.mzxid {
                    // The state we hold, or (defensively) an older one.
                    return Ok(Vec::new());
                }
                let old = std::mem::replace(&mut held.node, new.clone());
                return Ok(vec![CacheEvent::Changed {
                    path: path.to_owned(),
                    old,
                    new,
                }]);
            }
            // An older incarnation, read late.
            Some(held) if czxid < held.node.stat.czxid => return Ok(Vec::new()),
            Some(held) => Some(held.node.stat.czxid),
            None => None,
        };
        if !self.parent_covers(path, czxid)? {
            return Ok(Vec::new());
        }
        // Created again since we saw it: the old one, and all below it, went first.
        let mut events = match held_czxid {
            Some(_) => self.absent(path),
            None => Vec::new(),
        };
        self.nodes.insert(
            path.to_owned(),
            Held {
                node: new.clone(),
                children_through: pzxid,
            },
        );
        events.push(CacheEvent::Created {
            path: path.to_owned(),
            node: new,
        });
        Ok(events)
    }

    /// Whether a node created at `czxid` may come in under its mirrored parent: `Ok(false)`
    /// if it is left out with its parent, an error if the parent must be read first.
    fn parent_covers(&mut self, path: &str, czxid: i64) -> Result<bool, ReadParentFirst> {
        let Some(parent) = parent_in(&self.root, path) else {
            return Ok(true);
        };
        match self.nodes.get(parent) {
            // The parent's incarnation existed from its `czxid` until it was read with
            // `children_through`: a node created in between (or with it, in one
            // transaction) was created under it.
            Some(held) if held.node.stat.czxid <= czxid && czxid <= held.children_through => {
                Ok(true)
            }
            // Reading the parent would not help.
            _ if self.left_out.contains(parent) => {
                self.left_out.insert(path.to_owned());
                Ok(false)
            }
            _ => Err(ReadParentFirst(parent.to_owned())),
        }
    }

    /// The node was found missing: it and everything mirrored below it are gone,
    /// reported deepest first.
    pub fn absent(&mut self, path: &str) -> Vec<CacheEvent> {
        self.left_out.remove(path);
        let mut gone: Vec<String> = self.descendants(path).map(str::to_owned).collect();
        if self.nodes.contains_key(path) {
            gone.push(path.to_owned());
        }
        self.remove(gone)
    }

    /// Removes `gone` from the mirror, reporting the deepest first, so no event leaves a
    /// node without its parent.
    fn remove(&mut self, mut gone: Vec<String>) -> Vec<CacheEvent> {
        gone.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        gone.into_iter()
            .filter_map(|p| {
                self.nodes.remove(&p).map(|held| CacheEvent::Deleted {
                    path: p,
                    old: held.node,
                })
            })
            .collect()
    }

    /// `parent`'s children were listed as `listed`, with the parent's `stat`: mirrored
    /// children missing from it are gone.
    pub fn listed(&mut self, parent: &str, listed: &[String], stat: &Stat) -> Vec<CacheEvent> {
        if let Some(held) = self.nodes.get_mut(parent) {
            if held.node.stat.czxid == stat.czxid {
                held.children_through = held.children_through.max(stat.pzxid);
            }
        }
        let missing: Vec<String> = self
            .children(parent)
            .into_iter()
            .filter(|name| !listed.contains(name))
            .collect();
        missing
            .iter()
            .flat_map(|name| self.absent(&join(parent, name)))
            .collect()
    }

    /// The session may not read the node (NoAuth): it is left out, and so is what a
    /// read finds below it (its parent cannot vouch for it). A node mirrored before
    /// stays as it was.
    pub fn unreadable(&mut self, path: &str) {
        self.left_out.insert(path.to_owned());
    }

    /// Every mirrored path strictly below `path`.
    fn descendants<'a>(&'a self, path: &str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range::<String, _>((Bound::Included(prefix.clone()), Bound::Unbounded))
            .map(|(p, _)| p.as_str())
            .take_while(move |p| p.starts_with(prefix.as_str()))
            .filter(|p| *p != "/")
    }
}

/// `path`'s parent, if `path` lies strictly below `root`.
pub(crate) fn parent_in<'a>(root: &str, path: &'a str) -> Option<&'a str> {
    depth_below(root, path).filter(|depth| *depth > 0)?;
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// `path`'s name if it is a direct child of `parent`.
fn child_name<'a>(parent: &str, path: &'a str) -> Option<&'a str> {
    let rest = if parent == "/" {
        path.strip_prefix('/')?
    } else {
        path.strip_prefix(parent)?.strip_prefix('/')?
    };
    (!rest.is_empty() && !rest.contains('/')).then_some(rest)
}

/// `parent/child`, minding the root.
pub(crate) fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// How many levels `path` lies below `root` (0 for the root itself); `None` if it is
/// not in `root`'s subtree.
pub(crate) fn depth_below(root: &str, path: &str) -> Option<usize> {
    if path == root {
        return Some(0);
    }
    let rest = if root == "/" {
        path.strip_prefix('/')?
    } else {
        path.strip_prefix(root)?.strip_prefix('/')?
    };
    (!rest.is_empty()).then(|| rest.split('/').count())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node's stat at creation: children fields as a fresh node's.
    fn stat(czxid: i64, mzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ..Stat::default()
        }
    }

    /// A stat read once children were created up to `pzxid`.
    fn parent_stat(czxid: i64, mzxid: i64, pzxid: i64) -> Stat {
        Stat {
            pzxid,
            ..stat(czxid, mzxid)
        }
    }

    fn paths(events: &[CacheEvent]) -> Vec<(char, String)> {
        events
            .iter()
            .map(|e| match e {
                CacheEvent::Created { path, .. } => ('+', path.clone()),
                CacheEvent::Changed { path, .. } => ('~', path.clone()),
                CacheEvent::Deleted { path, .. } => ('-', path.clone()),
                CacheEvent::Initialized => ('!', String::new()),
            })
            .collect()
    }

    fn ev(list: &[(char, &str)]) -> Vec<(char, String)> {
        list.iter().map(|(c, p)| (*c, (*p).to_owned())).collect()
    }

    fn present(m: &mut Mirror, path: &str, stat: Stat) -> Vec<CacheEvent> {
        m.present(path, Bytes::new(), stat)
            .unwrap_or_else(|wait| panic!("{path} waits for {}", wait.0))
    }

    #[test]
    fn reads_create_then_change_only_when_mzxid_grows() {
        let mut m = Mirror::new("/");
        present(&mut m, "/", parent_stat(0, 0, 5));
        let e = present(&mut m, "/a", stat(5, 5));
        assert_eq!(paths(&e), ev(&[('+', "/a")]));
        // The same state again, or an older one: nothing.
        assert!(present(&mut m, "/a", stat(5, 5)).is_empty());
        assert!(m
            .present("/a", Bytes::from_static(b"0"), stat(5, 4))
            .unwrap()
            .is_empty());
        let e = m
            .present("/a", Bytes::from_static(b"2"), stat(5, 9))
            .unwrap();
        match &e[..] {
            [CacheEvent::Changed { old, new, .. }] => {
                assert_eq!((&old.data[..], &new.data[..]), (&b""[..], &b"2"[..]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_node_created_again_is_deleted_with_its_subtree_then_created() {
        let mut m = Mirror::new("/");
        present(&mut m, "/", parent_stat(0, 0, 10));
        present(&mut m, "/a", parent_stat(1, 1, 2));
        present(&mut m, "/a/b", parent_stat(2, 2, 3));
        present(&mut m, "/a/b/c", stat(3, 3));
        present(&mut m, "/a0", stat(4, 4));
        let e = present(&mut m, "/a", stat(10, 10));
        assert_eq!(
            paths(&e),
            ev(&[('-', "/a/b/c"), ('-', "/a/b"), ('-', "/a"), ('+', "/a")])
        );
        assert_eq!(m.len(), 3);
        // An older incarnation read late changes nothing.
        assert!(present(&mut m, "/a", stat(1, 1)).is_empty());
        assert!(m.get("/a0").is_some());
    }

    #[test]
    fn absence_and_listings_remove_subtrees_once() {
        let mut m = Mirror::new("/");
        present(&mut m, "/", parent_stat(0, 0, 4));
        present(&mut m, "/x", parent_stat(2, 2, 3));
        present(&mut m, "/x/y", stat(3, 3));
        present(&mut m, "/z", stat(4, 4));
        assert_eq!(m.children("/"), ["x", "z"]);
        let e = m.listed("/", &["z".to_owned()], &parent_stat(0, 0, 5));
        assert_eq!(paths(&e), ev(&[('-', "/x/y"), ('-', "/x")]));
        assert!(m.absent("/x").is_empty());
        assert_eq!(paths(&m.absent("/")), ev(&[('-', "/z"), ('-', "/")]));
        assert_eq!(m.len(), 0);
    }

    /// The race CI caught (`cache_kill`): `/r/k/c` is deleted, `/r/k` deleted and
    /// created again, and a new `/r/k/c` created under it; a read queued for the first
    /// event sees the new child while the mirror still holds the old parent. Taken in,
    /// the child was dropped with the old parent once that was read, then reported
    /// created a second time with the same `czxid`.
    #[test]
    fn a_node_newer_than_its_mirrored_parent_waits_for_the_parent() {
        let mut m = Mirror::new("/r");
        present(&mut m, "/r", parent_stat(1, 1, 2));
        present(&mut m, "/r/k", parent_stat(2, 2, 3));
        present(&mut m, "/r/k/c", stat(3, 3));
        // The new child (czxid 10), read before the new parent (czxid 8).
        let wait = m.present("/r/k/c", Bytes::new(), stat(10, 10));
        assert_eq!(wait, Err(ReadParentFirst("/r/k".to_owned())));
        assert_eq!(m.get("/r/k/c").map(|n| n.stat.czxid), Some(3));
        // The parent, read again after the child's creation: it is new too, so it
        // waits for its own parent, the root.
        let wait = m.present("/r/k", Bytes::new(), parent_stat(8, 8, 10));
        assert_eq!(wait, Err(ReadParentFirst("/r".to_owned())));
        assert!(present(&mut m, "/r", parent_stat(1, 1, 8)).is_empty());
        let e = present(&mut m, "/r/k", parent_stat(8, 8, 10));
        assert_eq!(
            paths(&e),
            ev(&[('-', "/r/k/c"), ('-', "/r/k"), ('+', "/r/k")])
        );
        let e = present(&mut m, "/r/k/c", stat(10, 10));
        assert_eq!(paths(&e), ev(&[('+', "/r/k/c")]));
        // The event that read stays: the same state again is nothing.
        assert!(present(&mut m, "/r/k/c", stat(10, 10)).is_empty());
        // Both created again in one transaction (one zxid): the child is the parent's.
        assert!(present(&mut m, "/r", parent_stat(1, 1, 12)).is_empty());
        let e = present(&mut m, "/r/k", parent_stat(12, 12, 12));
        assert_eq!(
            paths(&e),
            ev(&[('-', "/r/k/c"), ('-', "/r/k"), ('+', "/r/k")])
        );
        assert_eq!(
            paths(&present(&mut m, "/r/k/c", stat(12, 12))),
            ev(&[('+', "/r/k/c")])
        );
    }

    #[test]
    fn a_parent_read_before_its_child_was_created_is_read_again() {
        let mut m = Mirror::new("/r");
        present(&mut m, "/r", parent_stat(1, 1, 2));
        present(&mut m, "/r/k", stat(2, 2));
        // A child of the root: the root was read before it came.
        let wait = m.present("/r/j", Bytes::new(), stat(5, 5));
        assert_eq!(wait, Err(ReadParentFirst("/r".to_owned())));
        // A listing of the root vouches for it as a read of its data would.
        assert!(m
            .listed(
                "/r",
                &["j".to_owned(), "k".to_owned()],
                &parent_stat(1, 1, 5)
            )
            .is_empty());
        assert_eq!(
            paths(&present(&mut m, "/r/j", stat(5, 5))),
            ev(&[('+', "/r/j")])
        );
        // A listing of another incarnation of the parent vouches for nothing.
        m.listed(
            "/r",
            &["j".to_owned(), "k".to_owned()],
            &parent_stat(7, 7, 9),
        );
        assert!(m.present("/r/k/x", Bytes::new(), stat(6, 6)).is_err());
        // Nor does a parent missing from the mirror.
        let wait = m.present("/r/q/x", Bytes::new(), stat(6, 6));
        assert_eq!(wait, Err(ReadParentFirst("/r/q".to_owned())));
        // The root itself needs no parent.
        assert!(m.present("/r", Bytes::new(), stat(1, 1)).is_ok());
    }

    #[test]
    fn a_node_under_an_unreadable_parent_is_left_out() {
        let mut m = Mirror::new("/r");
        present(&mut m, "/r", parent_stat(1, 1, 3));
        m.unreadable("/r/secret");
        assert!(present(&mut m, "/r/secret/x", stat(3, 3)).is_empty());
        assert!(present(&mut m, "/r/secret/x/y", stat(4, 4)).is_empty());
        assert_eq!(m.len(), 1);
        // Readable again: it comes in, and so does what is below it.
        present(&mut m, "/r/secret", parent_stat(2, 2, 3));
        assert_eq!(
            paths(&present(&mut m, "/r/secret/x", stat(3, 3))),
            ev(&[('+', "/r/secret/x")])
        );
        // A mirrored node that turns unreadable stays as it was, and a node new under
        // it is left out rather than waited for (reading the parent would not help).
        m.unreadable("/r/secret");
        assert!(m.get("/r/secret").is_some());
        assert!(present(&mut m, "/r/secret/z", stat(9, 9)).is_empty());
        assert!(m.get("/r/secret/z").is_none());
    }

    #[test]
    fn depths_and_joins() {
        assert_eq!(depth_below("/a", "/a"), Some(0));
        assert_eq!(depth_below("/a", "/a/b/c"), Some(2));
        assert_eq!(depth_below("/a", "/ab"), None);
        assert_eq!(depth_below("/", "/x/y"), Some(2));
        assert_eq!(depth_below("/", "/"), Some(0));
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(child_name("/a", "/a/b"), Some("b"));
        assert_eq!(child_name("/a", "/a/b/c"), None);
        assert_eq!(child_name("/", "/a"), Some("a"));
    }
}

//! The cache's pure core: the mirrored nodes, and the events that an observation of
//! the server (a node read, a node found missing, a children listing) makes.
//!
//! Observations must be fed in the order the server answered them (the order the reads
//! were sent on one session), so each is of a state no older than the one before; the
//! rules below then never step a node back: a read whose `mzxid` is not newer than the
//! mirror's changes nothing, one whose `czxid` is newer means the node was deleted and
//! created again.

use std::collections::BTreeMap;
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

/// The mirrored nodes by path. Paths sort so that a node's descendants follow it
/// (`/a`, `/a/b`, `/a/b/c`, `/a0`), which makes a subtree a range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mirror {
    nodes: BTreeMap<String, CachedNode>,
}

impl Mirror {
    pub fn get(&self, path: &str) -> Option<&CachedNode> {
        self.nodes.get(path)
    }

    pub fn nodes(&self) -> &BTreeMap<String, CachedNode> {
        &self.nodes
    }

    /// The names of `parent`'s mirrored children, sorted.
    pub fn children(&self, parent: &str) -> Vec<String> {
        self.descendants(parent)
            .filter_map(|path| child_name(parent, path))
            .map(str::to_owned)
            .collect()
    }

    /// The node was read with this data and stat.
    pub fn present(&mut self, path: &str, data: Bytes, stat: Stat) -> Vec<CacheEvent> {
        let (czxid, mzxid) = (stat.czxid, stat.mzxid);
        let new = CachedNode { data, stat };
        let Some(old) = self.nodes.get(path) else {
            self.nodes.insert(path.to_owned(), new.clone());
            return vec![CacheEvent::Created {
                path: path.to_owned(),
                node: new,
            }];
        };
        if czxid == old.stat.czxid {
            if mzxid <= old.stat.mzxid {
                // The state we hold, or (defensively) an older one.
                return Vec::new();
            }
            let old = old.clone();
            self.nodes.insert(path.to_owned(), new.clone());
            return vec![CacheEvent::Changed {
                path: path.to_owned(),
                old,
                new,
            }];
        }
        if czxid < old.stat.czxid {
            return Vec::new();
        }
        // Created again since we saw it: the old one, and all below it, went first.
        let mut events = self.absent(path);
        self.nodes.insert(path.to_owned(), new.clone());
        events.push(CacheEvent::Created {
            path: path.to_owned(),
            node: new,
        });
        events
    }

    /// The node was found missing: it and everything mirrored below it are gone,
    /// reported deepest first.
    pub fn absent(&mut self, path: &str) -> Vec<CacheEvent> {
        let mut gone: Vec<String> = self.descendants(path).map(str::to_owned).collect();
        if self.nodes.contains_key(path) {
            gone.push(path.to_owned());
        }
        // Deepest first, so no event leaves a node without its parent.
        gone.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        gone.into_iter()
            .filter_map(|p| {
                self.nodes
                    .remove(&p)
                    .map(|old| CacheEvent::Deleted { path: p, old })
            })
            .collect()
    }

    /// `parent`'s children were listed as `listed`: mirrored children missing from it
    /// are gone.
    pub fn listed(&mut self, parent: &str, listed: &[String]) -> Vec<CacheEvent> {
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

    fn stat(czxid: i64, mzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            ..Stat::default()
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

    #[test]
    fn reads_create_then_change_only_when_mzxid_grows() {
        let mut m = Mirror::default();
        let e = m.present("/a", Bytes::from_static(b"1"), stat(5, 5));
        assert_eq!(paths(&e), ev(&[('+', "/a")]));
        // The same state again, or an older one: nothing.
        assert!(m
            .present("/a", Bytes::from_static(b"1"), stat(5, 5))
            .is_empty());
        assert!(m
            .present("/a", Bytes::from_static(b"0"), stat(5, 4))
            .is_empty());
        let e = m.present("/a", Bytes::from_static(b"2"), stat(5, 9));
        match &e[..] {
            [CacheEvent::Changed { old, new, .. }] => {
                assert_eq!((&old.data[..], &new.data[..]), (&b"1"[..], &b"2"[..]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_node_created_again_is_deleted_with_its_subtree_then_created() {
        let mut m = Mirror::default();
        m.present("/a", Bytes::new(), stat(1, 1));
        m.present("/a/b", Bytes::new(), stat(2, 2));
        m.present("/a/b/c", Bytes::new(), stat(3, 3));
        m.present("/a0", Bytes::new(), stat(4, 4));
        let e = m.present("/a", Bytes::new(), stat(10, 10));
        assert_eq!(
            paths(&e),
            ev(&[('-', "/a/b/c"), ('-', "/a/b"), ('-', "/a"), ('+', "/a")])
        );
        // An older incarnation read late changes nothing.
        assert!(m.present("/a", Bytes::new(), stat(1, 1)).is_empty());
        assert!(m.get("/a0").is_some());
    }

    #[test]
    fn absence_and_listings_remove_subtrees_once() {
        let mut m = Mirror::default();
        for (i, p) in ["/", "/x", "/x/y", "/z"].iter().enumerate() {
            let zxid = i64::try_from(i).unwrap() + 1;
            m.present(p, Bytes::new(), stat(zxid, zxid));
        }
        assert_eq!(m.children("/"), ["x", "z"]);
        let e = m.listed("/", &["z".to_owned()]);
        assert_eq!(paths(&e), ev(&[('-', "/x/y"), ('-', "/x")]));
        assert!(m.absent("/x").is_empty());
        assert_eq!(paths(&m.absent("/")), ev(&[('-', "/z"), ('-', "/")]));
        assert!(m.nodes().is_empty());
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

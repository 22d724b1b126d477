//! The order the tree's map keeps its paths in: by parent directory, then by name, so
//! a node's children are one contiguous key range and no node stores a list of them.
//!
//! Paths compare as `(dir, name)`, split at the last `/`: `/a/b` is `("/a", "b")`, `/a`
//! is `("", "a")` and the root `/` is `("", "")`. A parent's `dir` is a strict prefix of
//! its children's, so parents still come before their children (the order snapshots
//! are written in), and every child of `/a` lies between the probes `("/a", "")` and
//! `("/a/", "")`, ahead of anything else that starts with `/a`.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use ref_cast::RefCast;

/// A path as the map orders it; borrowed from a [`TreeKey`] or made from any `&str`.
#[derive(Debug, RefCast, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct TreePath(str);

impl TreePath {
    pub fn new(path: &str) -> &TreePath {
        TreePath::ref_cast(path)
    }

    /// The part before the last `/` (empty for `/` and for the root's children).
    pub fn dir(&self) -> &str {
        self.split().0
    }

    fn split(&self) -> (&str, &str) {
        self.0.rsplit_once('/').unwrap_or(("", &self.0))
    }
}

impl Ord for TreePath {
    /// `(dir, name)` order without splitting both paths first (the map compares keys
    /// on every step of every lookup, and finding each last `/` was most of the cost):
    /// where the two first differ, only whether a `/` follows in each decides.
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (self.0.as_bytes(), other.0.as_bytes());
        if a.first() != Some(&b'/') || b.first() != Some(&b'/') {
            // Not a znode path (the map holds none): the definition itself.
            return self.split().cmp(&other.split());
        }
        let common = common_prefix(a, b);
        // The last `/` of each at or after `common`, as an offset from it.
        let last_slash = |s: &[u8]| s[common..].iter().rposition(|&c| c == b'/');
        match (last_slash(a), last_slash(b)) {
            // Both last `/`s are in the common part: one dir, the names decide.
            (None, None) => a.cmp(b),
            // Only `b`'s dir reaches past the common part: `a`'s is a prefix of it.
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            // Both do, so neither ended there. A dir that ends exactly there is a
            // prefix of the other; otherwise the dirs differ at `common`.
            (Some(0), Some(_)) => Ordering::Less,
            (Some(_), Some(0)) => Ordering::Greater,
            (Some(_), Some(_)) => a[common].cmp(&b[common]),
        }
    }
}

/// The length of the longest common prefix of `a` and `b`, eight bytes at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let mut at = 0;
    while let (Some((x, _)), Some((y, _))) = (
        a[at..len].split_first_chunk::<8>(),
        b[at..len].split_first_chunk::<8>(),
    ) {
        let differ = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if differ != 0 {
            return at + (differ.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

impl PartialOrd for TreePath {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An owned path: the tree map's key. Shared, not boxed: the map clones keys when it
/// copies a chunk that a snapshot still holds, and when it splits one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeKey(Arc<str>);

impl TreeKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for TreeKey {
    fn from(path: &str) -> Self {
        TreeKey(Arc::from(path))
    }
}

impl From<Arc<str>> for TreeKey {
    fn from(path: Arc<str>) -> Self {
        TreeKey(path)
    }
}

impl Borrow<TreePath> for TreeKey {
    fn borrow(&self) -> &TreePath {
        TreePath::new(&self.0)
    }
}

impl Ord for TreeKey {
    fn cmp(&self, other: &Self) -> Ordering {
        TreePath::new(&self.0).cmp(TreePath::new(&other.0))
    }
}

impl PartialOrd for TreeKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The probes around a directory's entries: `("dir", "")` and `("dir/", "")`, as
/// strings `dir/` and `dir//`. Keys between them have `dir` itself as their dir, or one
/// of `dir`'s siblings that sorts before `dir/` (`dir!x`): stop at the first key whose
/// dir is not `dir`.
pub struct DirProbes {
    start: String,
    /// `None`: up to the end of the map.
    end: Option<String>,
}

/// The dir of `parent`'s children: `parent` itself, or empty for the root's.
pub fn children_dir(parent: &str) -> &str {
    if parent == "/" {
        ""
    } else {
        parent
    }
}

impl DirProbes {
    /// For the children of `parent` (`/` for the root's).
    pub fn children_of(parent: &str) -> Self {
        let dir = children_dir(parent);
        DirProbes {
            start: format!("{dir}/"),
            end: Some(format!("{dir}//")),
        }
    }

    /// For the nodes below the children of `parent`: their dirs are exactly the
    /// strings that start with `parent/`, which sort from `parent/` up to, not
    /// including, `parent0` ('0' follows '/'). Below the root's children: every dir
    /// from `/` on.
    pub fn below_children_of(parent: &str) -> Self {
        if parent == "/" {
            return DirProbes {
                start: "//".to_owned(),
                end: None,
            };
        }
        DirProbes {
            start: format!("{parent}//"),
            end: Some(format!("{parent}0/")),
        }
    }

    pub fn range(&self) -> (Bound<&TreePath>, Bound<&TreePath>) {
        (
            // The start probe names an empty child, which no node has; the root's
            // probe `/` is the root itself, which is not its own child.
            Bound::Excluded(TreePath::new(&self.start)),
            self.end
                .as_deref()
                .map_or(Bound::Unbounded, |end| Bound::Excluded(TreePath::new(end))),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn sorted(paths: &[&str]) -> Vec<String> {
        let mut keys: Vec<TreeKey> = paths.iter().map(|p| TreeKey::from(*p)).collect();
        keys.sort();
        keys.iter().map(|k| k.as_str().to_owned()).collect()
    }

    fn defined(path: &str) -> (&str, &str) {
        path.rsplit_once('/').unwrap_or(("", path))
    }

    /// Every path of up to five characters from `/`, a letter, and bytes either side
    /// of `/` (`-` and `.` before it, `0` after), against the order's definition.
    #[test]
    fn the_fast_comparison_is_the_dir_then_name_order() {
        let alphabet = ['/', 'a', '-', '.', '0'];
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = paths
                .iter()
                .filter(|p| p.len() == paths.last().map_or(0, |l| l.len()))
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            paths.extend(longer);
        }
        let paths: Vec<String> = paths.iter().map(|p| format!("/{p}")).collect();
        for a in &paths {
            for b in &paths {
                assert_eq!(
                    TreePath::new(a).cmp(TreePath::new(b)),
                    defined(a).cmp(&defined(b)),
                    "{a:?} against {b:?}"
                );
            }
        }
        // Long shared prefixes take the eight-byte steps.
        let long = "/0123456789abcdef/0123456789abcdef";
        for (a, b) in [
            (format!("{long}/x"), format!("{long}-y")),
            (format!("{long}x/y"), format!("{long}/z")),
            (format!("{long}a"), format!("{long}b")),
            (long.to_owned(), format!("{long}/")),
        ] {
            assert_eq!(
                TreePath::new(&a).cmp(TreePath::new(&b)),
                defined(&a).cmp(&defined(&b)),
                "{a:?} against {b:?}"
            );
        }
    }

    #[test]
    fn siblings_are_together_and_parents_come_first() {
        assert_eq!(
            sorted(&["/a/b/c", "/a-x/y", "/a/c", "/a", "/b", "/", "/a/b", "/a-x"]),
            ["/", "/a", "/a-x", "/b", "/a/b", "/a/c", "/a-x/y", "/a/b/c"]
        );
    }

    #[test]
    fn probes_cover_children_and_deeper_nodes_exactly() {
        let paths = [
            "/", "/a", "/a!", "/a!/z", "/a-x", "/a-x/y", "/a/b", "/a/b/c", "/a/b/c/d", "/a/c",
            "/a0", "/a0/q", "/b",
        ];
        let map: BTreeMap<TreeKey, ()> = paths.iter().map(|p| (TreeKey::from(*p), ())).collect();
        let collect = |probes: DirProbes, dir: Option<&str>| -> Vec<&str> {
            map.range::<TreePath, _>(probes.range())
                .map(|(k, ())| k.as_str())
                .take_while(|p| dir.is_none_or(|d| TreePath::new(p).dir() == d))
                .collect()
        };
        assert_eq!(
            collect(DirProbes::children_of("/a"), Some("/a")),
            ["/a/b", "/a/c"]
        );
        assert_eq!(
            collect(DirProbes::children_of("/"), Some("")),
            ["/a", "/a!", "/a-x", "/a0", "/b"]
        );
        assert_eq!(
            collect(DirProbes::below_children_of("/a"), None),
            ["/a/b/c", "/a/b/c/d"]
        );
        assert!(collect(DirProbes::children_of("/b"), Some("/b")).is_empty());
        assert_eq!(
            collect(DirProbes::below_children_of("/"), None),
            ["/a/b", "/a/c", "/a!/z", "/a-x/y", "/a/b/c", "/a/b/c/d", "/a0/q"]
        );
    }
}

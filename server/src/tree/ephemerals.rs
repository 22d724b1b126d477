//! The ephemeral nodes by owner, for session close and expiry and `getEphemerals`.
//!
//! One persistent set of (session, path hash, path) for all sessions, rather than a
//! set per session: `imbl` allocates a whole B-tree chunk (about 2 KiB) for every new
//! set, even an empty one, and a session whose only ephemeral comes and goes (a lock,
//! a create/delete loop) made and dropped one on every write. Entries sort by session
//! first, so a session's paths are one range. Within it they sort by the path's hash,
//! so a search compares two integers held in the set's own nodes at each step and
//! reads a path (a pointer away, a cache miss in a big tree) only on a tie; paths of
//! one session share long prefixes, which made every step a long compare as well.

use std::ops::Bound;

use imbl::OrdSet;

use super::digest;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Ephemerals(OrdSet<(i64, u64, String)>);

fn entry(session_id: i64, path: &str) -> (i64, u64, String) {
    (
        session_id,
        digest::of_bytes(path.as_bytes()),
        path.to_owned(),
    )
}

impl Ephemerals {
    pub(super) fn insert(&mut self, session_id: i64, path: &str) {
        self.0.insert(entry(session_id, path));
    }

    pub(super) fn remove(&mut self, session_id: i64, path: &str) {
        self.0.remove(&entry(session_id, path));
    }

    /// Ephemeral nodes in all.
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// A session's ephemeral paths, in byte order.
    pub(super) fn of_session(&self, session_id: i64) -> Vec<&str> {
        let from = Bound::Included((session_id, 0, String::new()));
        let to = match session_id.checked_add(1) {
            Some(next) => Bound::Excluded((next, 0, String::new())),
            None => Bound::Unbounded,
        };
        let mut paths: Vec<&str> = self
            .0
            .range((from, to))
            .map(|(_, _, path)| path.as_str())
            .collect();
        paths.sort_unstable();
        paths
    }

    /// Every (session, path), sessions in order (a session's paths by hash).
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = (i64, &str)> + '_ {
        self.0
            .iter()
            .map(|(session, _, path)| (*session, path.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_sees_only_its_own_paths_in_order() {
        let mut ephemerals = Ephemerals::default();
        for (session, path) in [(7, "/b"), (7, "/a"), (8, "/c"), (6, "/z"), (i64::MAX, "/m")] {
            ephemerals.insert(session, path);
        }
        assert_eq!(ephemerals.of_session(7), ["/a", "/b"]);
        assert_eq!(ephemerals.of_session(i64::MAX), ["/m"]);
        assert_eq!(ephemerals.of_session(9).len(), 0);
        assert_eq!(ephemerals.len(), 5);

        ephemerals.remove(7, "/a");
        ephemerals.remove(7, "/nope");
        ephemerals.remove(8, "/b");
        assert_eq!(ephemerals.of_session(7), ["/b"]);
        assert_eq!(ephemerals.len(), 4);
    }

    #[test]
    fn negative_session_ids_keep_their_own_range() {
        let mut ephemerals = Ephemerals::default();
        ephemerals.insert(-1, "/neg");
        ephemerals.insert(0, "/zero");
        ephemerals.insert(i64::MIN, "/min");
        assert_eq!(ephemerals.of_session(-1), ["/neg"]);
        assert_eq!(ephemerals.of_session(i64::MIN), ["/min"]);
        assert_eq!(ephemerals.of_session(0), ["/zero"]);
    }
}

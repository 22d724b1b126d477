//! The watch registry: which connections watch which znodes, and who hears of each change.
//!
//! Pure bookkeeping, no I/O and no tree: the state machine reports each change
//! ([`WatchRegistry::trigger`] or the `node_*` helpers) and gets back the events to
//! deliver; the connection tasks register, re-arm and remove watches. Watches are local to
//! the server a client is connected to and are never replicated.
//!
//! The rules are ZooKeeper's server-side ones (`DataTree` with two `WatchManager`s, one for
//! data and one for children, plus persistent watches from ZOOKEEPER-1416), as of 3.9,
//! which fixed two 3.8 shortcomings that matter here: a connection may hold a one-shot and
//! a persistent watch on the same path at once (ZOOKEEPER-4466), and persistent watches
//! can be removed by type (ZOOKEEPER-4472).
//!
//! | change at a path                 | fires there                        | fires there and above |
//! |----------------------------------|------------------------------------|-----------------------|
//! | `NodeCreated`, `NodeDataChanged` | data (spent), persistent           | persistent-recursive  |
//! | `NodeDeleted`                    | data, child (spent), persistent    | persistent-recursive  |
//! | `NodeChildrenChanged` (a parent) | child (spent), persistent          | —                     |
//!
//! A connection hears of one change at most once, however many of its watches match.
//! An exist watch (`exists` on a missing node) is a data watch here, as in ZooKeeper's
//! server: only the client tells the two apart.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::Hash;

use paddock_wire::path::parent;
use paddock_wire::{
    AddWatchMode, ErrorCode, EventType, KeeperState, SetWatches, SetWatches2, WatcherEvent,
    WatcherType,
};

/// How a watch was set, which decides what fires it and whether it survives firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WatchKind {
    /// One-shot, set by `getData`, or by `exists` whether or not the node exists.
    Data,
    /// One-shot, set by `getChildren`.
    Child,
    /// `addWatch` in mode `PERSISTENT`: data and child changes of one node, until removed.
    Persistent,
    /// `addWatch` in mode `PERSISTENT_RECURSIVE`: creations, deletions and data changes of
    /// a node and every node below it, until removed.
    PersistentRecursive,
}

impl WatchKind {
    #[cfg(test)]
    const ALL: [WatchKind; 4] = [
        WatchKind::Data,
        WatchKind::Child,
        WatchKind::Persistent,
        WatchKind::PersistentRecursive,
    ];

    fn bit(self) -> u8 {
        match self {
            WatchKind::Data => DATA,
            WatchKind::Child => CHILD,
            WatchKind::Persistent => PERSISTENT,
            WatchKind::PersistentRecursive => RECURSIVE,
        }
    }

    /// The event a ZooKeeper client delivers to its own watcher of this kind once a
    /// `removeWatches` succeeds.
    #[cfg(test)]
    pub fn removed_event_type(self) -> EventType {
        match self {
            WatchKind::Data => EventType::DataWatchRemoved,
            WatchKind::Child => EventType::ChildWatchRemoved,
            WatchKind::Persistent | WatchKind::PersistentRecursive => {
                EventType::PersistentWatchRemoved
            }
        }
    }
}

impl From<AddWatchMode> for WatchKind {
    fn from(mode: AddWatchMode) -> Self {
        match mode {
            AddWatchMode::Persistent => WatchKind::Persistent,
            AddWatchMode::PersistentRecursive => WatchKind::PersistentRecursive,
        }
    }
}

/// The kinds of watch one connection holds on one path: a bit set, so a second
/// registration of the same kind is a no-op and one change fires one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Kinds(u8);

impl Kinds {
    const fn of(bits: u8) -> Self {
        Kinds(bits)
    }

    fn with(self, kind: WatchKind) -> Self {
        Kinds(self.0 | kind.bit())
    }

    fn has(self, kind: WatchKind) -> bool {
        self.0 & kind.bit() != 0
    }

    fn intersects(self, other: Kinds) -> bool {
        self.0 & other.0 != 0
    }

    fn common(self, other: Kinds) -> Self {
        Kinds(self.0 & other.0)
    }

    fn without(self, other: Kinds) -> Self {
        Kinds(self.0 & !other.0)
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    #[cfg(test)]
    fn iter(self) -> impl Iterator<Item = WatchKind> {
        WatchKind::ALL
            .into_iter()
            .filter(move |&kind| self.has(kind))
    }
}

const DATA: u8 = 1;
const CHILD: u8 = 2;
const PERSISTENT: u8 = 4;
const RECURSIVE: u8 = 8;

/// A change to the tree that can fire watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(clippy::enum_variant_names)] // ZooKeeper's event names, kept for readers of the spec
pub enum Change {
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    /// Reported on the parent whose child list changed.
    NodeChildrenChanged,
}

impl Change {
    /// The change a tree event is, if it can fire watches.
    pub fn of(event: EventType) -> Option<Change> {
        Some(match event {
            EventType::NodeCreated => Change::NodeCreated,
            EventType::NodeDeleted => Change::NodeDeleted,
            EventType::NodeDataChanged => Change::NodeDataChanged,
            EventType::NodeChildrenChanged => Change::NodeChildrenChanged,
            _ => return None,
        })
    }

    pub fn event_type(self) -> EventType {
        match self {
            Change::NodeCreated => EventType::NodeCreated,
            Change::NodeDeleted => EventType::NodeDeleted,
            Change::NodeDataChanged => EventType::NodeDataChanged,
            Change::NodeChildrenChanged => EventType::NodeChildrenChanged,
        }
    }

    /// Which kinds at the changed path fire, and which of those are spent by firing.
    fn at_path(self) -> (Kinds, Kinds) {
        match self {
            Change::NodeCreated | Change::NodeDataChanged => {
                (Kinds::of(DATA | PERSISTENT | RECURSIVE), Kinds::of(DATA))
            }
            Change::NodeDeleted => (
                Kinds::of(DATA | CHILD | PERSISTENT | RECURSIVE),
                Kinds::of(DATA | CHILD),
            ),
            // Recursive watches live only in ZooKeeper's data table, which never sees
            // NodeChildrenChanged: a child's own create/delete event covers it.
            Change::NodeChildrenChanged => (Kinds::of(CHILD | PERSISTENT), Kinds::of(CHILD)),
        }
    }
}

/// One change's event and the connections to send it to.
///
/// The event is the same for every connection, so it can be encoded once. Before sending,
/// the caller drops connections whose auth lacks READ on the changed node, as ZooKeeper's
/// `ServerCnxn.process(event, acl)` does; the event goes out with xid -1 and the zxid of
/// the txn that made the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired<C> {
    pub event: WatcherEvent,
    /// Each connection once, in ascending order.
    pub watchers: Vec<C>,
}

/// The zxids of an existing node that decide whether a re-armed watch missed a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeZxids {
    /// The zxid of the node's last data change (`Stat.mzxid`).
    pub mzxid: i64,
    /// The zxid of the node's last child-list change (`Stat.pzxid`).
    pub pzxid: i64,
}

/// The watches a reconnecting client re-arms: the body of `SetWatches` (op 101) or
/// `SetWatches2` (op 105), borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rearm<'a> {
    /// The last zxid the client saw; a change after it was missed while disconnected.
    pub relative_zxid: i64,
    pub data: &'a [String],
    pub exist: &'a [String],
    pub child: &'a [String],
    pub persistent: &'a [String],
    pub persistent_recursive: &'a [String],
}

impl<'a> From<&'a SetWatches> for Rearm<'a> {
    fn from(request: &'a SetWatches) -> Self {
        Rearm {
            relative_zxid: request.relative_zxid,
            data: &request.data_watches,
            exist: &request.exist_watches,
            child: &request.child_watches,
            persistent: &[],
            persistent_recursive: &[],
        }
    }
}

impl<'a> From<&'a SetWatches2> for Rearm<'a> {
    fn from(request: &'a SetWatches2) -> Self {
        Rearm {
            relative_zxid: request.relative_zxid,
            data: &request.data_watches,
            exist: &request.exist_watches,
            child: &request.child_watches,
            persistent: &request.persistent_watches,
            persistent_recursive: &request.persistent_recursive_watches,
        }
    }
}

/// What a successful `removeWatches` took away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removed(Kinds);

impl Removed {
    #[cfg(test)]
    pub fn kinds(self) -> impl Iterator<Item = WatchKind> {
        self.0.iter()
    }

    /// The events a ZooKeeper client delivers *locally* to the watchers it removed, once
    /// the server has answered OK: `DataWatchRemoved`, `ChildWatchRemoved`,
    /// `PersistentWatchRemoved`. The server itself sends none of them (the Java client
    /// fails on such an event from the wire, `ZKWatchManager.materialize`); this is for
    /// tests and logs.
    #[cfg(test)]
    pub fn client_event_types(self) -> Vec<EventType> {
        let mut types: Vec<EventType> = self.kinds().map(WatchKind::removed_event_type).collect();
        types.dedup();
        types
    }
}

/// Why `checkWatches` / `removeWatches` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchError {
    /// The connection holds no watch of that type on that path.
    #[error("no watcher for {path} (type: {watcher_type:?})")]
    NoWatcher {
        path: String,
        watcher_type: WatcherType,
    },
}

impl WatchError {
    pub fn code(&self) -> ErrorCode {
        match self {
            WatchError::NoWatcher { .. } => ErrorCode::NoWatcher,
        }
    }
}

/// Watch counts over (connection, path) pairs holding any kind of watch: `mntr`'s
/// `zk_watch_count`. `wchs` reports only ZooKeeper's data-watch table
/// ([`WatchRegistry::data_table`]), as ZooKeeper does, where a connection with nothing
/// but child watches is invisible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WatchSummary {
    pub connections: usize,
    pub paths: usize,
    pub watches: usize,
}

impl fmt::Display for WatchSummary {
    /// ZooKeeper's `wchs` text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} connections watching {} paths\nTotal watches:{}",
            self.connections, self.paths, self.watches
        )
    }
}

/// Every watch of every connection on this server.
///
/// `C` identifies a connection (not a session: when a session moves to a new connection,
/// the old one's watches go with [`remove_connection`](Self::remove_connection) and the
/// client re-arms them with [`set_watches`](Self::set_watches)). `Ord` gives listings and
/// deliveries a stable order.
#[derive(Debug)]
pub struct WatchRegistry<C> {
    /// Path → connection → kinds: the source of truth, so a change looks up one path.
    by_path: HashMap<String, HashMap<C, Kinds>>,
    /// Connection → its paths, so closing a connection does not scan every path.
    by_conn: HashMap<C, HashSet<String>>,
    /// Path → connections with a recursive watch there, so a change walks its ancestors
    /// through this small index instead of every watch on every ancestor.
    recursive: HashMap<String, HashSet<C>>,
}

impl<C> Default for WatchRegistry<C> {
    fn default() -> Self {
        WatchRegistry {
            by_path: HashMap::new(),
            by_conn: HashMap::new(),
            recursive: HashMap::new(),
        }
    }
}

impl<C: Copy + Eq + Hash + Ord> WatchRegistry<C> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a watch; false if the connection already held that kind on that path.
    pub fn add_watch(&mut self, conn: C, path: &str, kind: WatchKind) -> bool {
        let watchers = match self.by_path.get_mut(path) {
            Some(watchers) => watchers,
            None => self.by_path.entry(path.to_owned()).or_default(),
        };
        let kinds = watchers.entry(conn).or_default();
        let before = *kinds;
        *kinds = before.with(kind);
        if *kinds == before {
            return false;
        }
        if before.is_empty() {
            self.by_conn
                .entry(conn)
                .or_default()
                .insert(path.to_owned());
        }
        if kind == WatchKind::PersistentRecursive {
            match self.recursive.get_mut(path) {
                Some(conns) => conns.insert(conn),
                None => self
                    .recursive
                    .entry(path.to_owned())
                    .or_default()
                    .insert(conn),
            };
        }
        true
    }

    /// Fires the watches that `change` at `path` matches and spends the one-shot ones;
    /// `None` when nobody was watching.
    pub fn trigger(&mut self, path: &str, change: Change) -> Option<Fired<C>> {
        let mut watchers = Vec::new();
        let (fires, spends) = change.at_path();
        if let Some(at_path) = self.by_path.get_mut(path) {
            let mut emptied = Vec::new();
            at_path.retain(|conn, kinds| {
                if kinds.intersects(fires) {
                    watchers.push(*conn);
                }
                *kinds = kinds.without(spends);
                if kinds.is_empty() {
                    emptied.push(*conn);
                }
                !kinds.is_empty()
            });
            if at_path.is_empty() {
                self.by_path.remove(path);
            }
            for conn in emptied {
                self.forget_path_of(conn, path);
            }
        }
        // Recursive watches at the path itself were collected above.
        if change != Change::NodeChildrenChanged && !self.recursive.is_empty() {
            let mut ancestor = parent(path);
            while let Some(dir) = ancestor {
                if let Some(conns) = self.recursive.get(dir) {
                    watchers.extend(conns.iter().copied());
                }
                ancestor = parent(dir);
            }
        }
        if watchers.is_empty() {
            return None;
        }
        watchers.sort_unstable();
        watchers.dedup();
        Some(Fired {
            event: event(change.event_type(), path),
            watchers,
        })
    }

    /// A node was created: `NodeCreated` on it, then `NodeChildrenChanged` on its parent,
    /// in ZooKeeper's order.
    #[cfg(test)]
    pub fn node_created(&mut self, path: &str) -> Vec<Fired<C>> {
        self.with_parent(path, Change::NodeCreated)
    }

    /// A node was deleted: `NodeDeleted` on it, then `NodeChildrenChanged` on its parent.
    #[cfg(test)]
    pub fn node_deleted(&mut self, path: &str) -> Vec<Fired<C>> {
        self.with_parent(path, Change::NodeDeleted)
    }

    /// A node's data was set: `NodeDataChanged` on it.
    #[cfg(test)]
    pub fn node_data_changed(&mut self, path: &str) -> Vec<Fired<C>> {
        self.trigger(path, Change::NodeDataChanged)
            .into_iter()
            .collect()
    }

    #[cfg(test)]
    fn with_parent(&mut self, path: &str, change: Change) -> Vec<Fired<C>> {
        let own = self.trigger(path, change);
        let parents = parent(path).and_then(|dir| self.trigger(dir, Change::NodeChildrenChanged));
        own.into_iter().chain(parents).collect()
    }

    /// `checkWatches`: does the connection hold a watch of this type on exactly this path?
    pub fn check_watches(
        &self,
        conn: C,
        path: &str,
        watcher_type: WatcherType,
    ) -> Result<(), WatchError> {
        let held = self
            .by_path
            .get(path)
            .and_then(|watchers| watchers.get(&conn))
            .copied()
            .unwrap_or_default();
        if held.intersects(matching(watcher_type)) {
            Ok(())
        } else {
            Err(no_watcher(path, watcher_type))
        }
    }

    /// `removeWatches`: drops the connection's watches of this type on exactly this path.
    /// `Any` takes every kind, persistent ones included.
    pub fn remove_watches(
        &mut self,
        conn: C,
        path: &str,
        watcher_type: WatcherType,
    ) -> Result<Removed, WatchError> {
        let wanted = matching(watcher_type);
        let Some(watchers) = self.by_path.get_mut(path) else {
            return Err(no_watcher(path, watcher_type));
        };
        let Some(kinds) = watchers.get_mut(&conn) else {
            return Err(no_watcher(path, watcher_type));
        };
        let taken = kinds.common(wanted);
        if taken.is_empty() {
            return Err(no_watcher(path, watcher_type));
        }
        *kinds = kinds.without(taken);
        if kinds.is_empty() {
            watchers.remove(&conn);
            if watchers.is_empty() {
                self.by_path.remove(path);
            }
            self.forget_path_of(conn, path);
        }
        if taken.has(WatchKind::PersistentRecursive) {
            self.forget_recursive(conn, path);
        }
        Ok(Removed(taken))
    }

    /// Drops every watch of a closed connection.
    pub fn remove_connection(&mut self, conn: C) {
        let Some(paths) = self.by_conn.remove(&conn) else {
            return;
        };
        for path in paths {
            let mut had_recursive = false;
            if let Some(watchers) = self.by_path.get_mut(&path) {
                had_recursive = watchers
                    .remove(&conn)
                    .is_some_and(|kinds| kinds.has(WatchKind::PersistentRecursive));
                if watchers.is_empty() {
                    self.by_path.remove(&path);
                }
            }
            if had_recursive {
                self.forget_recursive(conn, &path);
            }
        }
    }

    /// Re-arms a reconnecting client's watches, as ZooKeeper's `DataTree.setWatches` does,
    /// and returns the events the client missed while away; they go out before the reply.
    ///
    /// `node` looks a path up in the tree: `None` if the node does not exist. A data watch
    /// fires `NodeDeleted` if the node is gone or `NodeDataChanged` if it changed after
    /// `relative_zxid`; an exist watch fires `NodeCreated` if the node exists; a child
    /// watch fires `NodeDeleted` or `NodeChildrenChanged` (by `pzxid`). A watch that does
    /// not fire is registered. Persistent watches are registered as they are.
    pub fn set_watches<'a>(
        &mut self,
        conn: C,
        request: impl Into<Rearm<'a>>,
        node: impl Fn(&str) -> Option<NodeZxids>,
    ) -> Vec<WatcherEvent> {
        let request = request.into();
        let relative = request.relative_zxid;
        let mut missed = Vec::new();
        for path in request.data {
            match node(path) {
                None => missed.push(event(EventType::NodeDeleted, path)),
                Some(zxids) if zxids.mzxid > relative => {
                    missed.push(event(EventType::NodeDataChanged, path));
                }
                Some(_) => {
                    self.add_watch(conn, path, WatchKind::Data);
                }
            }
        }
        for path in request.exist {
            match node(path) {
                Some(_) => missed.push(event(EventType::NodeCreated, path)),
                None => {
                    self.add_watch(conn, path, WatchKind::Data);
                }
            }
        }
        for path in request.child {
            match node(path) {
                None => missed.push(event(EventType::NodeDeleted, path)),
                Some(zxids) if zxids.pzxid > relative => {
                    missed.push(event(EventType::NodeChildrenChanged, path));
                }
                Some(_) => {
                    self.add_watch(conn, path, WatchKind::Child);
                }
            }
        }
        for path in request.persistent {
            self.add_watch(conn, path, WatchKind::Persistent);
        }
        for path in request.persistent_recursive {
            self.add_watch(conn, path, WatchKind::PersistentRecursive);
        }
        missed
    }

    /// The counts over every kind of watch.
    pub fn summary(&self) -> WatchSummary {
        WatchSummary {
            connections: self.by_conn.len(),
            paths: self.by_path.len(),
            watches: self.by_conn.values().map(HashSet::len).sum(),
        }
    }

    /// The `wchp` listing: each watched path (sorted) with its connections (sorted).
    #[cfg(test)]
    pub fn by_path(&self) -> Vec<(String, Vec<C>)> {
        let mut listing: Vec<(String, Vec<C>)> = self
            .by_path
            .iter()
            .map(|(path, watchers)| {
                let mut conns: Vec<C> = watchers.keys().copied().collect();
                conns.sort_unstable();
                (path.clone(), conns)
            })
            .collect();
        listing.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        listing
    }

    /// The `wchc` listing: each watching connection (sorted) with its paths (sorted).
    #[cfg(test)]
    pub fn by_connection(&self) -> Vec<(C, Vec<String>)> {
        let mut listing: Vec<(C, Vec<String>)> = self
            .by_conn
            .iter()
            .map(|(conn, paths)| {
                let mut paths: Vec<String> = paths.iter().cloned().collect();
                paths.sort_unstable();
                (*conn, paths)
            })
            .collect();
        listing.sort_unstable_by_key(|(conn, _)| *conn);
        listing
    }

    /// ZooKeeper's data-watch table, which its `wchs`, `wchc` and `wchp` report: one-shot
    /// data and exist watches and persistent ones of both modes (child watches live in a
    /// second table those words never show). Each path (sorted) with its connections
    /// (sorted).
    pub fn data_table(&self) -> Vec<(String, Vec<C>)> {
        let table = Kinds::of(DATA | PERSISTENT | RECURSIVE);
        let mut listing: Vec<(String, Vec<C>)> = self
            .by_path
            .iter()
            .filter_map(|(path, watchers)| {
                let mut conns: Vec<C> = watchers
                    .iter()
                    .filter(|(_, kinds)| kinds.intersects(table))
                    .map(|(conn, _)| *conn)
                    .collect();
                conns.sort_unstable();
                (!conns.is_empty()).then(|| (path.clone(), conns))
            })
            .collect();
        listing.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        listing
    }

    /// The kinds of watch a connection holds on exactly this path, in [`WatchKind`] order.
    #[cfg(test)]
    pub fn kinds(&self, conn: C, path: &str) -> Vec<WatchKind> {
        self.by_path
            .get(path)
            .and_then(|watchers| watchers.get(&conn))
            .map(|kinds| kinds.iter().collect())
            .unwrap_or_default()
    }

    fn forget_path_of(&mut self, conn: C, path: &str) {
        if let Some(paths) = self.by_conn.get_mut(&conn) {
            paths.remove(path);
            if paths.is_empty() {
                self.by_conn.remove(&conn);
            }
        }
    }

    fn forget_recursive(&mut self, conn: C, path: &str) {
        if let Some(conns) = self.recursive.get_mut(path) {
            conns.remove(&conn);
            if conns.is_empty() {
                self.recursive.remove(path);
            }
        }
    }
}

/// The kinds a `WatcherType` addresses (ZooKeeper 3.9's `DataTree.removeWatch`).
fn matching(watcher_type: WatcherType) -> Kinds {
    match watcher_type {
        WatcherType::Data => Kinds::of(DATA),
        WatcherType::Children => Kinds::of(CHILD),
        WatcherType::Persistent => Kinds::of(PERSISTENT),
        WatcherType::PersistentRecursive => Kinds::of(RECURSIVE),
        WatcherType::Any => Kinds::of(DATA | CHILD | PERSISTENT | RECURSIVE),
    }
}

fn no_watcher(path: &str, watcher_type: WatcherType) -> WatchError {
    WatchError::NoWatcher {
        path: path.to_owned(),
        watcher_type,
    }
}

fn event(event_type: EventType, path: &str) -> WatcherEvent {
    WatcherEvent {
        event_type,
        state: KeeperState::SyncConnected,
        path: path.to_owned(),
    }
}

#[cfg(test)]
mod tests;

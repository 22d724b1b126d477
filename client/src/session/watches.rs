//! The session's table of armed watches: what a notification fires, what is re-armed
//! after a reconnect, and what is failed when the session ends.
//!
//! Paths here are server paths (chroot included); events leave with client paths.
//! Dispatch follows ZooKeeper's `ZKWatchManager.materialize`.

use std::collections::HashMap;
use std::time::Instant;

use paddock_wire::{AddWatchMode, EventType, KeeperState, SetWatches2, WatcherEvent, WatcherType};

use crate::connect_string::Chroot;
use crate::error::Error;
use crate::watch::{OneShotSender, StreamSender, WatchedEvent};

/// ZooKeeper's client splits `setWatches` so no packet carries more than this many bytes
/// of paths (`ClientCnxn.SET_WATCHES_MAX_LENGTH`).
const SET_WATCHES_MAX_LENGTH: usize = 128 * 1024;

/// Which table a one-shot watch lives in, as ZooKeeper's client keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OneShotKind {
    /// From getData, or exists on a node that exists: fires on data change and delete.
    Data,
    /// From exists on a node that does not exist: fires on create.
    Exist,
    /// From getChildren: fires on child change and delete.
    Child,
}

#[derive(Debug, Default)]
pub(crate) struct WatchTable {
    data: HashMap<String, Vec<OneShotSender>>,
    exist: HashMap<String, Vec<OneShotSender>>,
    child: HashMap<String, Vec<OneShotSender>>,
    persistent: HashMap<String, Vec<(u64, StreamSender)>>,
    recursive: HashMap<String, Vec<(u64, StreamSender)>>,
}

impl WatchTable {
    pub fn add_one_shot(&mut self, kind: OneShotKind, path: String, tx: OneShotSender) {
        let table = match kind {
            OneShotKind::Data => &mut self.data,
            OneShotKind::Exist => &mut self.exist,
            OneShotKind::Child => &mut self.child,
        };
        table.entry(path).or_default().push(tx);
    }

    pub fn add_persistent(&mut self, mode: AddWatchMode, path: String, id: u64, tx: StreamSender) {
        self.persistent_table(mode)
            .entry(path)
            .or_default()
            .push((id, tx));
    }

    fn persistent_table(
        &mut self,
        mode: AddWatchMode,
    ) -> &mut HashMap<String, Vec<(u64, StreamSender)>> {
        match mode {
            AddWatchMode::Persistent => &mut self.persistent,
            AddWatchMode::PersistentRecursive => &mut self.recursive,
        }
    }

    pub fn has_persistent(&self, mode: AddWatchMode, path: &str) -> bool {
        let table = match mode {
            AddWatchMode::Persistent => &self.persistent,
            AddWatchMode::PersistentRecursive => &self.recursive,
        };
        table.contains_key(path)
    }

    /// Forgets one persistent stream (it was dropped). True if it was the last one on
    /// that path and mode, so the server's watch should be removed too.
    pub fn drop_persistent(&mut self, mode: AddWatchMode, path: &str, id: u64) -> bool {
        let table = self.persistent_table(mode);
        let Some(streams) = table.get_mut(path) else {
            return false;
        };
        let before = streams.len();
        streams.retain(|(other, _)| *other != id);
        let removed = streams.len() < before;
        if streams.is_empty() {
            table.remove(path);
        }
        removed && !table.contains_key(path)
    }

    /// Delivers a notification to every watch it fires; one-shot watches are used up.
    pub fn dispatch(&mut self, event: &WatcherEvent, zxid: i64, chroot: &Chroot) {
        let path = event.path.as_str();
        let out = WatchedEvent {
            event_type: event.event_type,
            state: event.state,
            path: chroot.strip(path),
            zxid,
            received_at: Instant::now(),
        };
        let mut fired = Vec::new();
        match event.event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                fired.extend(self.data.remove(path).into_iter().flatten());
                fired.extend(self.exist.remove(path).into_iter().flatten());
            }
            EventType::NodeChildrenChanged => {
                fired.extend(self.child.remove(path).into_iter().flatten());
            }
            EventType::NodeDeleted => {
                fired.extend(self.data.remove(path).into_iter().flatten());
                fired.extend(self.exist.remove(path).into_iter().flatten());
                fired.extend(self.child.remove(path).into_iter().flatten());
            }
            // Session events and removals are the client's own business, never a
            // server notification's.
            EventType::None
            | EventType::DataWatchRemoved
            | EventType::ChildWatchRemoved
            | EventType::PersistentWatchRemoved => return,
        }
        for tx in fired {
            // A dropped WatchFuture just means nobody waits any more.
            let _ = tx.send(Ok(out.clone()));
        }
        for (_, tx) in self.persistent.get(path).into_iter().flatten() {
            let _ = tx.send(Ok(out.clone()));
        }
        // Recursive watches promise no child events (ZooKeeper 3.6 docs, addWatch).
        if event.event_type == EventType::NodeChildrenChanged {
            return;
        }
        for ancestor in self_and_ancestors(path) {
            for (_, tx) in self.recursive.get(ancestor).into_iter().flatten() {
                let _ = tx.send(Ok(out.clone()));
            }
        }
    }

    /// Removes local watches after the server removed its own (`removeWatches`), telling
    /// each one with a `*WatchRemoved` event.
    pub fn remove(&mut self, path: &str, watcher_type: WatcherType, chroot: &Chroot) {
        let event = |event_type| WatchedEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: chroot.strip(path),
            zxid: -1,
            received_at: Instant::now(),
        };
        let any = watcher_type == WatcherType::Any;
        if any || watcher_type == WatcherType::Data {
            let removed = event(EventType::DataWatchRemoved);
            for tx in [self.data.remove(path), self.exist.remove(path)]
                .into_iter()
                .flatten()
                .flatten()
            {
                let _ = tx.send(Ok(removed.clone()));
            }
        }
        if any || watcher_type == WatcherType::Children {
            let removed = event(EventType::ChildWatchRemoved);
            for tx in self.child.remove(path).into_iter().flatten() {
                let _ = tx.send(Ok(removed.clone()));
            }
        }
        let removed = event(EventType::PersistentWatchRemoved);
        if any || watcher_type == WatcherType::Persistent {
            for (_, tx) in self.persistent.remove(path).into_iter().flatten() {
                let _ = tx.send(Ok(removed.clone()));
            }
        }
        if any || watcher_type == WatcherType::PersistentRecursive {
            for (_, tx) in self.recursive.remove(path).into_iter().flatten() {
                let _ = tx.send(Ok(removed.clone()));
            }
        }
    }

    /// The `setWatches2` packets that re-arm every watch somebody still waits on, relative
    /// to the last zxid seen: the server fires at once any watch whose node changed since.
    pub fn rearm(&mut self, relative_zxid: i64) -> Vec<SetWatches2> {
        fn live_one_shots(table: &mut HashMap<String, Vec<OneShotSender>>) -> Vec<String> {
            table.retain(|_, txs| {
                txs.retain(|tx| !tx.is_closed());
                !txs.is_empty()
            });
            table.keys().cloned().collect()
        }
        fn live_streams(table: &HashMap<String, Vec<(u64, StreamSender)>>) -> Vec<String> {
            table
                .iter()
                .filter(|(_, txs)| txs.iter().any(|(_, tx)| !tx.is_closed()))
                .map(|(path, _)| path.clone())
                .collect()
        }
        let lists = [
            live_one_shots(&mut self.data),
            live_one_shots(&mut self.exist),
            live_one_shots(&mut self.child),
            live_streams(&self.persistent),
            live_streams(&self.recursive),
        ];
        let mut packets = Vec::new();
        let mut current = empty_set_watches(relative_zxid);
        let mut size = 0;
        for (list, paths) in lists.into_iter().enumerate() {
            for path in paths {
                if size + path.len() > SET_WATCHES_MAX_LENGTH && size > 0 {
                    packets.push(std::mem::replace(
                        &mut current,
                        empty_set_watches(relative_zxid),
                    ));
                    size = 0;
                }
                size += path.len();
                match list {
                    0 => current.data_watches.push(path),
                    1 => current.exist_watches.push(path),
                    2 => current.child_watches.push(path),
                    3 => current.persistent_watches.push(path),
                    _ => current.persistent_recursive_watches.push(path),
                }
            }
        }
        if size > 0 {
            packets.push(current);
        }
        packets
    }

    /// A `setWatches2` for the live watches of one path, if it has any.
    pub fn rearm_path(&mut self, path: &str, relative_zxid: i64) -> Option<SetWatches2> {
        fn live(table: &mut HashMap<String, Vec<OneShotSender>>, path: &str) -> Vec<String> {
            let Some(txs) = table.get_mut(path) else {
                return Vec::new();
            };
            txs.retain(|tx| !tx.is_closed());
            if txs.is_empty() {
                table.remove(path);
                return Vec::new();
            }
            vec![path.to_owned()]
        }
        fn live_stream(
            table: &HashMap<String, Vec<(u64, StreamSender)>>,
            path: &str,
        ) -> Vec<String> {
            table
                .get(path)
                .filter(|txs| txs.iter().any(|(_, tx)| !tx.is_closed()))
                .map(|_| vec![path.to_owned()])
                .unwrap_or_default()
        }
        let packet = SetWatches2 {
            relative_zxid,
            data_watches: live(&mut self.data, path),
            exist_watches: live(&mut self.exist, path),
            child_watches: live(&mut self.child, path),
            persistent_watches: live_stream(&self.persistent, path),
            persistent_recursive_watches: live_stream(&self.recursive, path),
        };
        let empty = packet.data_watches.is_empty()
            && packet.exist_watches.is_empty()
            && packet.child_watches.is_empty()
            && packet.persistent_watches.is_empty()
            && packet.persistent_recursive_watches.is_empty();
        (!empty).then_some(packet)
    }

    /// Ends every watch with the session's final error.
    pub fn fail_all(&mut self, error: &Error) {
        for (_, txs) in self
            .data
            .drain()
            .chain(self.exist.drain())
            .chain(self.child.drain())
        {
            for tx in txs {
                let _ = tx.send(Err(error.clone()));
            }
        }
        for (_, txs) in self.persistent.drain().chain(self.recursive.drain()) {
            for (_, tx) in txs {
                let _ = tx.send(Err(error.clone()));
            }
        }
    }
}

fn empty_set_watches(relative_zxid: i64) -> SetWatches2 {
    SetWatches2 {
        relative_zxid,
        ..SetWatches2::default()
    }
}

/// `/a/b/c`, `/a/b`, `/a`, `/`.
fn self_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            _ if current == "/" => None,
            Some(0) => Some("/"),
            Some(i) => Some(&current[..i]),
            None => None,
        };
        Some(current)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::{mpsc, oneshot};

    fn event(event_type: EventType, path: &str) -> WatcherEvent {
        WatcherEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: path.to_owned(),
        }
    }

    #[test]
    fn ancestors() {
        let all: Vec<_> = self_and_ancestors("/a/b/c").collect();
        assert_eq!(all, ["/a/b/c", "/a/b", "/a", "/"]);
        assert_eq!(self_and_ancestors("/").collect::<Vec<_>>(), ["/"]);
    }

    #[test]
    fn one_shot_watches_fire_once_on_matching_events() {
        let mut table = WatchTable::default();
        let chroot = Chroot::new("/app").unwrap();
        let (data_tx, mut data_rx) = oneshot::channel();
        let (child_tx, mut child_rx) = oneshot::channel();
        table.add_one_shot(OneShotKind::Data, "/app/n".into(), data_tx);
        table.add_one_shot(OneShotKind::Child, "/app/n".into(), child_tx);

        let before = Instant::now();
        table.dispatch(&event(EventType::NodeDataChanged, "/app/n"), 7, &chroot);
        let after = Instant::now();
        let fired = data_rx.try_recv().unwrap().unwrap();
        assert_eq!(fired.path, "/n");
        assert_eq!(fired.zxid, 7);
        // Stamped as dispatched, not when the receiver is read.
        assert!(before <= fired.received_at && fired.received_at <= after);
        assert!(child_rx.try_recv().is_err());

        table.dispatch(&event(EventType::NodeDeleted, "/app/n"), -1, &chroot);
        assert_eq!(
            child_rx.try_recv().unwrap().unwrap().event_type,
            EventType::NodeDeleted
        );
        assert!(table.rearm(0).is_empty());
    }

    #[test]
    fn recursive_watches_see_descendants_but_no_child_events() {
        let mut table = WatchTable::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        table.add_persistent(AddWatchMode::PersistentRecursive, "/a".into(), 1, tx);
        let none = Chroot::none();
        table.dispatch(&event(EventType::NodeCreated, "/a/b/c"), -1, &none);
        table.dispatch(&event(EventType::NodeChildrenChanged, "/a"), -1, &none);
        table.dispatch(&event(EventType::NodeDataChanged, "/ab"), -1, &none);
        assert_eq!(rx.try_recv().unwrap().unwrap().path, "/a/b/c");
        assert!(rx.try_recv().is_err());
        assert!(table.drop_persistent(AddWatchMode::PersistentRecursive, "/a", 1));
        assert!(!table.drop_persistent(AddWatchMode::PersistentRecursive, "/a", 1));
    }

    #[test]
    fn rearm_skips_abandoned_watches_and_splits_large_sets() {
        let mut table = WatchTable::default();
        let (tx, rx) = oneshot::channel();
        table.add_one_shot(OneShotKind::Exist, "/gone".into(), tx);
        drop(rx);
        let mut keep = Vec::new();
        for i in 0..3000 {
            let (tx, rx) = oneshot::channel();
            keep.push(rx);
            table.add_one_shot(OneShotKind::Data, format!("/{i:0>60}"), tx);
        }
        let packets = table.rearm(42);
        assert!(packets.len() > 1);
        assert!(packets.iter().all(|p| p.relative_zxid == 42));
        let total: usize = packets.iter().map(|p| p.data_watches.len()).sum();
        assert_eq!(total, 3000);
        assert!(packets.iter().all(|p| p.exist_watches.is_empty()));
    }
}

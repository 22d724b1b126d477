use super::*;

type Registry = WatchRegistry<u32>;

fn conns(fired: &Option<Fired<u32>>) -> Vec<u32> {
    fired.as_ref().map_or_else(Vec::new, |f| f.watchers.clone())
}

/// (event type, path, connections) of each delivery, for compact assertions.
fn deliveries(all: &[Fired<u32>]) -> Vec<(EventType, &str, Vec<u32>)> {
    all.iter()
        .map(|f| {
            (
                f.event.event_type,
                f.event.path.as_str(),
                f.watchers.clone(),
            )
        })
        .collect()
}

#[test]
fn data_watch_fires_once_on_data_change_then_is_gone() {
    let mut reg = Registry::new();
    assert!(reg.add_watch(1, "/a", WatchKind::Data));
    let fired = reg.trigger("/a", Change::NodeDataChanged).unwrap();
    assert_eq!(
        fired.event,
        WatcherEvent {
            event_type: EventType::NodeDataChanged,
            state: KeeperState::SyncConnected,
            path: "/a".into(),
        }
    );
    assert_eq!(fired.watchers, [1]);
    assert!(reg.trigger("/a", Change::NodeDataChanged).is_none());
    assert_eq!(reg.summary(), WatchSummary::default());
}

#[test]
fn exist_watch_on_missing_node_fires_on_creation() {
    // exists() on a missing node registers a data watch (DataTree.statNode).
    let mut reg = Registry::new();
    reg.add_watch(7, "/later", WatchKind::Data);
    let all = reg.node_created("/later");
    assert_eq!(
        deliveries(&all),
        [(EventType::NodeCreated, "/later", vec![7])]
    );
    assert!(reg.node_created("/later").is_empty());
}

#[test]
fn deletion_fires_data_and_child_watches_once_per_connection() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::Data);
    reg.add_watch(1, "/a", WatchKind::Child);
    reg.add_watch(2, "/a", WatchKind::Child);
    reg.add_watch(3, "/", WatchKind::Child);
    let all = reg.node_deleted("/a");
    assert_eq!(
        deliveries(&all),
        [
            (EventType::NodeDeleted, "/a", vec![1, 2]),
            (EventType::NodeChildrenChanged, "/", vec![3]),
        ]
    );
    assert_eq!(reg.summary(), WatchSummary::default());
}

#[test]
fn creation_fires_child_watch_on_parent_not_its_data_watch() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/p", WatchKind::Child);
    reg.add_watch(2, "/p", WatchKind::Data);
    let all = reg.node_created("/p/c");
    assert_eq!(
        deliveries(&all),
        [(EventType::NodeChildrenChanged, "/p", vec![1])]
    );
    assert_eq!(reg.kinds(2, "/p"), [WatchKind::Data]);
    assert!(reg.kinds(1, "/p").is_empty());
}

#[test]
fn data_change_leaves_child_watches_alone() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::Child);
    assert!(reg.node_data_changed("/a").is_empty());
    assert_eq!(reg.kinds(1, "/a"), [WatchKind::Child]);
}

#[test]
fn registering_twice_yields_one_event() {
    let mut reg = Registry::new();
    assert!(reg.add_watch(1, "/a", WatchKind::Data));
    assert!(!reg.add_watch(1, "/a", WatchKind::Data));
    assert_eq!(reg.summary().watches, 1);
    assert_eq!(conns(&reg.trigger("/a", Change::NodeDataChanged)), [1]);
}

#[test]
fn persistent_watch_fires_on_every_change_of_the_node_and_stays() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::Persistent);
    let mut seen = Vec::new();
    seen.extend(reg.node_created("/a"));
    seen.extend(reg.node_data_changed("/a"));
    seen.extend(reg.node_created("/a/b"));
    seen.extend(reg.node_data_changed("/a/b"));
    seen.extend(reg.node_deleted("/a/b"));
    seen.extend(reg.node_deleted("/a"));
    assert_eq!(
        deliveries(&seen),
        [
            (EventType::NodeCreated, "/a", vec![1]),
            (EventType::NodeDataChanged, "/a", vec![1]),
            (EventType::NodeChildrenChanged, "/a", vec![1]),
            (EventType::NodeChildrenChanged, "/a", vec![1]),
            (EventType::NodeDeleted, "/a", vec![1]),
        ]
    );
    // Persistent watches outlive the node (ZooKeeper keeps them until removed).
    assert_eq!(reg.kinds(1, "/a"), [WatchKind::Persistent]);
}

#[test]
fn recursive_watch_covers_descendants_but_not_child_list_changes() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::PersistentRecursive);
    let mut seen = Vec::new();
    seen.extend(reg.node_created("/a"));
    seen.extend(reg.node_created("/a/b"));
    seen.extend(reg.node_created("/a/b/c"));
    seen.extend(reg.node_data_changed("/a/b/c"));
    seen.extend(reg.node_deleted("/a/b/c"));
    seen.extend(reg.node_created("/ab"));
    assert_eq!(
        deliveries(&seen),
        [
            (EventType::NodeCreated, "/a", vec![1]),
            (EventType::NodeCreated, "/a/b", vec![1]),
            (EventType::NodeCreated, "/a/b/c", vec![1]),
            (EventType::NodeDataChanged, "/a/b/c", vec![1]),
            (EventType::NodeDeleted, "/a/b/c", vec![1]),
        ]
    );
    assert!(reg.trigger("/a", Change::NodeChildrenChanged).is_none());
    assert_eq!(reg.kinds(1, "/a"), [WatchKind::PersistentRecursive]);
}

#[test]
fn recursive_watch_on_root_sees_everything() {
    let mut reg = Registry::new();
    reg.add_watch(9, "/", WatchKind::PersistentRecursive);
    assert_eq!(conns(&reg.trigger("/x/y/z", Change::NodeDataChanged)), [9]);
    assert_eq!(conns(&reg.trigger("/", Change::NodeDataChanged)), [9]);
}

#[test]
fn one_shot_and_persistent_on_one_path_give_one_event_and_the_persistent_stays() {
    // ZOOKEEPER-4466: both modes coexist; firing spends only the one-shot.
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::Data);
    reg.add_watch(1, "/a", WatchKind::Persistent);
    reg.add_watch(1, "/a", WatchKind::PersistentRecursive);
    reg.add_watch(1, "/", WatchKind::PersistentRecursive);
    assert_eq!(conns(&reg.trigger("/a", Change::NodeDataChanged)), [1]);
    assert_eq!(
        reg.kinds(1, "/a"),
        [WatchKind::Persistent, WatchKind::PersistentRecursive]
    );
    assert_eq!(conns(&reg.trigger("/a", Change::NodeDataChanged)), [1]);
}

#[test]
fn check_and_remove_follow_the_watcher_type() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::Data);
    reg.add_watch(1, "/a", WatchKind::Persistent);
    assert!(reg.check_watches(1, "/a", WatcherType::Data).is_ok());
    assert!(reg.check_watches(1, "/a", WatcherType::Any).is_ok());
    let err = reg
        .check_watches(1, "/a", WatcherType::Children)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoWatcher);
    assert_eq!(err.to_string(), "no watcher for /a (type: Children)");
    assert!(reg.check_watches(2, "/a", WatcherType::Any).is_err());
    assert!(reg.check_watches(1, "/b", WatcherType::Any).is_err());

    // Data takes only the one-shot watch.
    let removed = reg.remove_watches(1, "/a", WatcherType::Data).unwrap();
    assert_eq!(removed.kinds().collect::<Vec<_>>(), [WatchKind::Data]);
    assert_eq!(removed.client_event_types(), [EventType::DataWatchRemoved]);
    assert!(reg.remove_watches(1, "/a", WatcherType::Data).is_err());
    assert!(reg
        .remove_watches(1, "/a", WatcherType::PersistentRecursive)
        .is_err());
    assert_eq!(reg.kinds(1, "/a"), [WatchKind::Persistent]);

    // Any takes the rest, persistent included.
    reg.add_watch(1, "/a", WatchKind::Child);
    let removed = reg.remove_watches(1, "/a", WatcherType::Any).unwrap();
    assert_eq!(
        removed.client_event_types(),
        [
            EventType::ChildWatchRemoved,
            EventType::PersistentWatchRemoved
        ]
    );
    assert_eq!(reg.summary(), WatchSummary::default());
    assert!(reg.remove_watches(1, "/a", WatcherType::Any).is_err());
}

#[test]
fn removing_a_recursive_watch_stops_descendant_events() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::PersistentRecursive);
    reg.add_watch(2, "/a", WatchKind::PersistentRecursive);
    reg.remove_watches(1, "/a", WatcherType::PersistentRecursive)
        .unwrap();
    assert_eq!(conns(&reg.trigger("/a/b", Change::NodeCreated)), [2]);
    reg.remove_watches(2, "/a", WatcherType::Any).unwrap();
    assert!(reg.trigger("/a/b", Change::NodeCreated).is_none());
    assert!(reg.recursive.is_empty());
}

#[test]
fn closing_a_connection_drops_all_its_watches() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/a", WatchKind::Data);
    reg.add_watch(1, "/b", WatchKind::Child);
    reg.add_watch(1, "/c", WatchKind::PersistentRecursive);
    reg.add_watch(2, "/a", WatchKind::Data);
    reg.remove_connection(1);
    reg.remove_connection(1);
    assert_eq!(
        reg.summary(),
        WatchSummary {
            connections: 1,
            paths: 1,
            watches: 1
        }
    );
    assert!(reg.trigger("/c/d", Change::NodeCreated).is_none());
    assert_eq!(conns(&reg.trigger("/a", Change::NodeDeleted)), [2]);
    assert!(reg.recursive.is_empty());
}

#[test]
fn listings_for_the_four_letter_words() {
    let mut reg = Registry::new();
    reg.add_watch(2, "/b", WatchKind::Data);
    reg.add_watch(1, "/b", WatchKind::Child);
    reg.add_watch(1, "/a", WatchKind::Data);
    reg.add_watch(1, "/a", WatchKind::Child);
    let summary = reg.summary();
    assert_eq!(
        summary,
        WatchSummary {
            connections: 2,
            paths: 2,
            watches: 3
        }
    );
    assert_eq!(
        summary.to_string(),
        "2 connections watching 2 paths\nTotal watches:3"
    );
    assert_eq!(
        reg.by_path(),
        [("/a".to_owned(), vec![1]), ("/b".to_owned(), vec![1, 2])]
    );
    assert_eq!(
        reg.by_connection(),
        [
            (1, vec!["/a".to_owned(), "/b".to_owned()]),
            (2, vec!["/b".to_owned()])
        ]
    );
}

#[test]
fn triggers_without_watchers_leave_no_trace() {
    let mut reg = Registry::new();
    reg.add_watch(1, "/x", WatchKind::Child);
    assert!(reg.node_deleted("/y/z").is_empty());
    assert_eq!(reg.by_path(), [("/x".to_owned(), vec![1])]);
}

#[test]
fn set_watches_fires_what_was_missed_and_arms_the_rest() {
    // DataTree.setWatches: the client saw everything up to zxid 10.
    let tree = |path: &str| match path {
        "/same" => Some(NodeZxids { mzxid: 5, pzxid: 5 }),
        "/data-changed" => Some(NodeZxids {
            mzxid: 11,
            pzxid: 5,
        }),
        "/kids-changed" => Some(NodeZxids {
            mzxid: 5,
            pzxid: 12,
        }),
        _ => None,
    };
    let strings = |paths: &[&str]| paths.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let request = SetWatches2 {
        relative_zxid: 10,
        data_watches: strings(&["/same", "/data-changed", "/gone"]),
        exist_watches: strings(&["/same", "/gone"]),
        child_watches: strings(&["/same", "/kids-changed", "/data-changed", "/gone"]),
        persistent_watches: strings(&["/gone"]),
        persistent_recursive_watches: strings(&["/tree"]),
    };
    let mut reg = Registry::new();
    let missed = reg.set_watches(1, &request, tree);
    let missed: Vec<(EventType, &str)> = missed
        .iter()
        .map(|e| (e.event_type, e.path.as_str()))
        .collect();
    assert_eq!(
        missed,
        [
            (EventType::NodeDataChanged, "/data-changed"),
            (EventType::NodeDeleted, "/gone"),
            (EventType::NodeCreated, "/same"),
            (EventType::NodeChildrenChanged, "/kids-changed"),
            (EventType::NodeDeleted, "/gone"),
        ]
    );
    assert_eq!(reg.kinds(1, "/same"), [WatchKind::Data, WatchKind::Child]);
    assert_eq!(reg.kinds(1, "/data-changed"), [WatchKind::Child]);
    assert_eq!(
        reg.kinds(1, "/gone"),
        [WatchKind::Data, WatchKind::Persistent]
    );
    assert_eq!(reg.kinds(1, "/tree"), [WatchKind::PersistentRecursive]);
    assert_eq!(conns(&reg.trigger("/tree/x", Change::NodeCreated)), [1]);

    // Op 101 carries no persistent watches.
    let v1 = SetWatches {
        relative_zxid: 10,
        data_watches: strings(&["/same"]),
        exist_watches: Vec::new(),
        child_watches: Vec::new(),
    };
    assert!(reg.set_watches(2, &v1, tree).is_empty());
    assert_eq!(reg.kinds(2, "/same"), [WatchKind::Data]);
}

/// A tiny xorshift generator, so the model test is repeatable without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// ZooKeeper's rules, written out case by case and apart from the registry's masks.
fn fires_at_path(change: Change, kind: WatchKind) -> bool {
    use WatchKind::*;
    match change {
        Change::NodeCreated | Change::NodeDataChanged => kind != Child,
        Change::NodeDeleted => true,
        Change::NodeChildrenChanged => matches!(kind, Child | Persistent),
    }
}

fn spent_by(change: Change, kind: WatchKind) -> bool {
    use WatchKind::*;
    match change {
        Change::NodeCreated | Change::NodeDataChanged => kind == Data,
        Change::NodeDeleted => matches!(kind, Data | Child),
        Change::NodeChildrenChanged => kind == Child,
    }
}

fn addressed_by(watcher_type: WatcherType, kind: WatchKind) -> bool {
    match watcher_type {
        WatcherType::Children => kind == WatchKind::Child,
        WatcherType::Data => kind == WatchKind::Data,
        WatcherType::Persistent => kind == WatchKind::Persistent,
        WatcherType::PersistentRecursive => kind == WatchKind::PersistentRecursive,
        WatcherType::Any => true,
    }
}

fn is_at_or_below(path: &str, base: &str) -> bool {
    path == base
        || base == "/"
        || (path.starts_with(base) && path.as_bytes().get(base.len()) == Some(&b'/'))
}

/// The registry against a naive list of (connection, path, kind): every trigger, removal
/// and close must agree, which pins the indexes (`by_conn`, `recursive`) to the truth.
#[test]
fn agrees_with_a_naive_model() {
    const PATHS: [&str; 7] = ["/", "/a", "/a/b", "/a/b/c", "/ab", "/x", "/x/y"];
    const KINDS: [WatchKind; 4] = WatchKind::ALL;
    const CHANGES: [Change; 4] = [
        Change::NodeCreated,
        Change::NodeDeleted,
        Change::NodeDataChanged,
        Change::NodeChildrenChanged,
    ];
    const TYPES: [WatcherType; 5] = [
        WatcherType::Children,
        WatcherType::Data,
        WatcherType::Any,
        WatcherType::Persistent,
        WatcherType::PersistentRecursive,
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut reg = Registry::new();
    let mut model: Vec<(u32, &str, WatchKind)> = Vec::new();
    for _ in 0..20_000 {
        let conn = rng.below(4) as u32;
        let path = PATHS[rng.below(PATHS.len())];
        match rng.below(10) {
            0..=4 => {
                let kind = KINDS[rng.below(4)];
                let new = !model.contains(&(conn, path, kind));
                if new {
                    model.push((conn, path, kind));
                }
                assert_eq!(reg.add_watch(conn, path, kind), new);
            }
            5..=7 => {
                let change = CHANGES[rng.below(4)];
                let mut expected: Vec<u32> = model
                    .iter()
                    .filter(|(_, p, k)| {
                        (*p == path && fires_at_path(change, *k))
                            || (*k == WatchKind::PersistentRecursive
                                && change != Change::NodeChildrenChanged
                                && is_at_or_below(path, p))
                    })
                    .map(|(c, _, _)| *c)
                    .collect();
                expected.sort_unstable();
                expected.dedup();
                model.retain(|(_, p, k)| !(*p == path && spent_by(change, *k)));
                assert_eq!(conns(&reg.trigger(path, change)), expected);
            }
            8 => {
                let watcher_type = TYPES[rng.below(5)];
                let before = model.len();
                model.retain(|(c, p, k)| {
                    !(*c == conn && *p == path && addressed_by(watcher_type, *k))
                });
                let result = reg.remove_watches(conn, path, watcher_type);
                assert_eq!(result.is_ok(), model.len() < before);
            }
            _ => {
                if rng.below(4) == 0 {
                    model.retain(|(c, _, _)| *c != conn);
                    reg.remove_connection(conn);
                }
            }
        }
        let mut pairs: Vec<(u32, &str)> = model.iter().map(|(c, p, _)| (*c, *p)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(reg.summary().watches, pairs.len());
        let mut by_connection: Vec<(u32, Vec<String>)> = Vec::new();
        for (c, p) in &pairs {
            match by_connection.last_mut() {
                Some((last, paths)) if last == c => paths.push(p.to_string()),
                _ => by_connection.push((*c, vec![p.to_string()])),
            }
        }
        assert_eq!(reg.by_connection(), by_connection);
        let recursive = model
            .iter()
            .filter(|(_, _, k)| *k == WatchKind::PersistentRecursive)
            .count();
        assert_eq!(
            reg.recursive.values().map(HashSet::len).sum::<usize>(),
            recursive
        );
    }
}

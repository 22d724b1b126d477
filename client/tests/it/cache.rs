//! Caches (`paddock_client::cache`): the mirror and its events, across a dropped
//! connection and an expired session. Every test checks the cache's guarantees with
//! [`Replay`]: the events, applied in order to an empty map, give the mirror; each
//! event is of a real state and moves its node forward; once writes stop the mirror
//! equals the server's subtree.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use paddock_client::cache::{
    CacheEvent, CacheEvents, CachedNode, ChildrenCache, NodeCache, TreeCache,
};
use paddock_client::{
    Acl, Bytes, Client, CreateMode, CreateOptions, Error, ErrorCode, SessionState,
};

use crate::support::{connect_with, options, sandbox, server, wait_for_state, within};

const LIMIT: Duration = Duration::from_secs(60);

/// The events seen so far, applied to an empty map, with every rule checked on the way.
#[derive(Debug, Default)]
pub struct Replay {
    pub nodes: BTreeMap<String, CachedNode>,
    /// The largest czxid each path was created with, to see re-creations go forward.
    created: HashMap<String, i64>,
    pub initialized: bool,
    pub events: Vec<CacheEvent>,
}

impl Replay {
    pub fn apply(&mut self, event: CacheEvent) {
        match &event {
            CacheEvent::Created { path, node } => {
                assert!(
                    !self.nodes.contains_key(path),
                    "{path} created twice: {event:?}"
                );
                if let Some(parent) = parent(path) {
                    assert!(
                        self.nodes.contains_key(parent) || !self.has_any_node_above(path),
                        "{path} created before its parent"
                    );
                }
                if let Some(before) = self.created.get(path) {
                    assert!(
                        node.stat.czxid > *before,
                        "{path} created again with an older czxid ({:#x}, was {before:#x}): \
                         {event:?}\nafter these events (latest last):\n{}",
                        node.stat.czxid,
                        self.recent()
                    );
                }
                self.created.insert(path.clone(), node.stat.czxid);
                self.nodes.insert(path.clone(), node.clone());
            }
            CacheEvent::Changed { path, old, new } => {
                let held = self.nodes.get(path).expect("changed a node not held");
                assert_eq!(held, old, "{path}: old is not what was held");
                assert_eq!(
                    new.stat.czxid, old.stat.czxid,
                    "{path}: changed across a re-creation"
                );
                assert!(
                    new.stat.mzxid > old.stat.mzxid,
                    "{path}: mzxid went back or stayed"
                );
                self.nodes.insert(path.clone(), new.clone());
            }
            CacheEvent::Deleted { path, old } => {
                let held = self.nodes.remove(path).expect("deleted a node not held");
                assert_eq!(&held, old, "{path}: old is not what was held");
                let prefix = format!("{path}/");
                assert!(
                    !self.nodes.keys().any(|p| p.starts_with(&prefix)),
                    "{path} deleted before its children"
                );
            }
            CacheEvent::Initialized => {
                assert!(!self.initialized, "initialized twice");
                self.initialized = true;
            }
        }
        self.events.push(event);
    }

    /// Takes events until the replayed mirror is `want` (the server's subtree once
    /// writes stopped: the cache must get there, whatever order a resync reports in).
    /// Then a node created under `root` must be the very next event: nothing stray
    /// (a duplicate, a late stale state) was left in the stream.
    pub async fn converge(&mut self, events: &mut CacheEvents, client: &Client, root: &str) {
        let want = server_tree(client, root).await;
        while tree_of(&self.nodes) != want {
            let event = within(Duration::from_secs(30), events.next_event())
                .await
                .expect("event stream ended")
                .unwrap_or_else(|err| {
                    panic!("cache failed: {err}; have {:?} want {want:?}", self.nodes)
                });
            self.apply(event);
        }
        let probe = format!(
            "{}/probe-{}",
            if root == "/" { "" } else { root },
            self.events.len()
        );
        client
            .create(&probe, b"", CreateMode::Persistent)
            .await
            .expect("create probe");
        let next = within(Duration::from_secs(30), events.next_event())
            .await
            .expect("event stream ended")
            .expect("cache failed");
        assert!(
            is_event(&next, '+', &probe),
            "stray event {next:?} before the probe"
        );
        self.apply(next);
        client.delete(&probe, None).await.expect("delete probe");
        let next = within(Duration::from_secs(30), events.next_event())
            .await
            .expect("event stream ended")
            .expect("cache failed");
        assert!(
            is_event(&next, '-', &probe),
            "stray event {next:?} after the probe"
        );
        self.apply(next);
    }

    /// The last events applied, one per line, for a failure's message.
    fn recent(&self) -> String {
        let start = self.events.len().saturating_sub(40);
        self.events[start..]
            .iter()
            .map(|event| format!("{event:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether the replay holds anything: the cache's root may have no parent held.
    fn has_any_node_above(&self, path: &str) -> bool {
        self.nodes
            .keys()
            .any(|p| path.starts_with(&format!("{p}/")))
    }

    /// Takes events until `until` says stop (it sees each event after it is applied).
    pub async fn take_until(
        &mut self,
        events: &mut CacheEvents,
        mut until: impl FnMut(&CacheEvent) -> bool,
    ) {
        loop {
            let event = within(Duration::from_secs(30), events.next_event())
                .await
                .expect("event stream ended")
                .expect("cache failed");
            let stop = until(&event);
            self.apply(event);
            if stop {
                return;
            }
        }
    }
}

fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}

/// What a cache promises to match: path → data and the data fields of the stat.
pub type Tree = BTreeMap<String, (Bytes, i64, i64, i32)>;

pub fn tree_of(nodes: &BTreeMap<String, CachedNode>) -> Tree {
    nodes
        .iter()
        .map(|(p, n)| {
            (
                p.clone(),
                (n.data.clone(), n.stat.czxid, n.stat.mzxid, n.stat.version),
            )
        })
        .collect()
}

/// The server's subtree at `root`, read after a `sync`; read again from the start
/// when the connection breaks meanwhile (a server of a loaded ensemble may close its
/// clients' connections while it is out of touch with the quorum, as it must).
pub async fn server_tree(client: &Client, root: &str) -> Tree {
    const ATTEMPTS: usize = 20;
    for _ in 1..ATTEMPTS {
        match try_server_tree(client, root).await {
            Ok(tree) => return tree,
            Err(err) if err.is_retryable() => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => panic!("reading the subtree {root}: {err}"),
        }
    }
    try_server_tree(client, root)
        .await
        .unwrap_or_else(|err| panic!("reading the subtree {root}: {err}"))
}

async fn try_server_tree(client: &Client, root: &str) -> Result<Tree, Error> {
    client.sync(root).await?;
    let mut tree = Tree::new();
    let mut todo = vec![root.to_owned()];
    while let Some(path) = todo.pop() {
        let (data, stat) = match client.get_data(&path).await {
            Ok(read) => read,
            Err(Error::Keeper(ErrorCode::NoNode)) => continue,
            Err(err) => return Err(err),
        };
        let children = match client.get_children(&path).await {
            Ok(children) => children,
            Err(Error::Keeper(ErrorCode::NoNode)) => continue,
            Err(err) => return Err(err),
        };
        tree.insert(path.clone(), (data, stat.czxid, stat.mzxid, stat.version));
        let base = if path == "/" { String::new() } else { path };
        todo.extend(children.iter().map(|c| format!("{base}/{c}")));
    }
    Ok(tree)
}

fn is_event(event: &CacheEvent, kind: char, path: &str) -> bool {
    match event {
        CacheEvent::Created { path: p, .. } => kind == '+' && p == path,
        CacheEvent::Changed { path: p, .. } => kind == '~' && p == path,
        CacheEvent::Deleted { path: p, .. } => kind == '-' && p == path,
        CacheEvent::Initialized => kind == '!',
    }
}

fn summary(events: &[CacheEvent]) -> Vec<(char, String)> {
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

fn expected(list: &[(char, &str)]) -> Vec<(char, String)> {
    list.iter().map(|(c, p)| (*c, (*p).to_owned())).collect()
}

async fn create(client: &Client, path: &str, data: &str) {
    client
        .create(path, data.as_bytes(), CreateMode::Persistent)
        .await
        .unwrap_or_else(|err| panic!("create {path}: {err}"));
}

/// A tree cache as the tests start it: on a persistent recursive watch, or on one-shot
/// watches (the mode for servers before ZooKeeper 3.6).
fn tree_cache(client: &Client, path: &str, one_shot: bool) -> (TreeCache, CacheEvents) {
    TreeCache::builder(client, path)
        .one_shot_watches(one_shot)
        .start()
        .expect("start the cache")
}

#[tokio::test]
async fn a_tree_cache_mirrors_the_subtree_and_reports_each_change() {
    mirrors_the_subtree_and_reports_each_change(false).await;
}

#[tokio::test]
async fn a_one_shot_tree_cache_mirrors_the_subtree_and_reports_each_change() {
    mirrors_the_subtree_and_reports_each_change(true).await;
}

// A test body, run by two tests (one per watch mode).
#[allow(clippy::unwrap_used)]
async fn mirrors_the_subtree_and_reports_each_change(one_shot: bool) {
    within(LIMIT, async {
        let (client, _root) = sandbox("tree-cache").await;
        create(&client, "/t", "root").await;
        create(&client, "/t/a", "a0").await;
        create(&client, "/t/a/x", "x0").await;
        let (cache, mut events) = tree_cache(&client, "/t", one_shot);
        within(Duration::from_secs(30), cache.initialized())
            .await
            .unwrap();
        let mut replay = Replay::default();
        replay
            .take_until(&mut events, |e| *e == CacheEvent::Initialized)
            .await;
        // The first load: parents before children, then Initialized.
        assert_eq!(
            summary(&replay.events),
            expected(&[('+', "/t"), ('+', "/t/a"), ('+', "/t/a/x"), ('!', "")])
        );
        assert_eq!(cache.children("/t"), ["a"]);

        client.set_data("/t/a", b"a1", None).await.unwrap();
        create(&client, "/t/b", "b0").await;
        client.delete("/t/a/x", None).await.unwrap();
        client.set_data("/t", b"root1", None).await.unwrap();
        replay.converge(&mut events, &client, "/t").await;
        // Each change once (their order across nodes depends on when the reads ran).
        let mut changes = summary(&replay.events[4..replay.events.len() - 2]);
        changes.sort();
        assert_eq!(
            changes,
            expected(&[('+', "/t/b"), ('-', "/t/a/x"), ('~', "/t"), ('~', "/t/a")])
        );
        let changed_a = replay.events.iter().find_map(|e| match e {
            CacheEvent::Changed { path, old, new } if path == "/t/a" => Some((old, new)),
            _ => None,
        });
        let (old, new) = changed_a.expect("/t/a changed");
        assert_eq!((&old.data[..], &new.data[..]), (&b"a0"[..], &b"a1"[..]));
        assert_eq!(new.stat.version, 1);
        assert_eq!(replay.nodes, cache.snapshot());
        assert_eq!(tree_of(&cache.snapshot()), server_tree(&client, "/t").await);

        // Deleting the root reports the whole subtree gone, children first.
        client.delete_all("/t").await.unwrap();
        replay
            .take_until(&mut events, |e| is_event(e, '-', "/t"))
            .await;
        assert!(cache.is_empty());
        assert!(replay.nodes.is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_tree_cache_follows_nodes_deleted_and_created_again_in_one_transaction() {
    follows_nodes_created_again_at_once(false).await;
}

#[tokio::test]
async fn a_one_shot_tree_cache_follows_nodes_deleted_and_created_again_in_one_transaction() {
    follows_nodes_created_again_at_once(true).await;
}

// A test body, run by two tests (one per watch mode). A parent and its child deleted
// and created again in one transaction: every event of it reaches the cache before
// any of its reads is answered, so the read for the first event (the old child
// deleted) sees the new child while the cache still holds the old parent. The cache
// once took that child in under the old parent, dropped it with the parent, and
// reported it created again with the same czxid (CI, `cache_kill`).
#[allow(clippy::unwrap_used)]
async fn follows_nodes_created_again_at_once(one_shot: bool) {
    const ROUNDS: usize = 10;
    within(LIMIT, async {
        let (client, _root) = sandbox("created-again").await;
        create(&client, "/t", "root").await;
        create(&client, "/t/k", "k").await;
        create(&client, "/t/k/c", "c").await;
        let (cache, mut events) = tree_cache(&client, "/t", one_shot);
        let mut replay = Replay::default();
        replay
            .take_until(&mut events, |e| *e == CacheEvent::Initialized)
            .await;
        for round in 0..ROUNDS {
            client
                .transaction()
                .delete("/t/k/c", None)
                .delete("/t/k", None)
                .create(
                    "/t/k",
                    format!("k{round}").as_bytes(),
                    CreateMode::Persistent,
                )
                .create(
                    "/t/k/c",
                    format!("c{round}").as_bytes(),
                    CreateMode::Persistent,
                )
                .commit()
                .await
                .unwrap();
        }
        replay.converge(&mut events, &client, "/t").await;
        let last = format!("c{}", ROUNDS - 1);
        assert_eq!(cache.get("/t/k/c").unwrap().data, last.as_bytes());
        assert_eq!(replay.nodes, cache.snapshot());
    })
    .await;
}

#[tokio::test]
async fn a_tree_cache_leaves_out_what_its_session_may_not_read() {
    leaves_out_what_its_session_may_not_read(false).await;
}

#[tokio::test]
async fn a_one_shot_tree_cache_leaves_out_what_its_session_may_not_read() {
    leaves_out_what_its_session_may_not_read(true).await;
}

// A test body, run by two tests (one per watch mode). A node the cache's session may
// not read is left out with everything below it, even a readable child that a
// persistent watch reports: the cache cannot place it under a parent it holds.
#[allow(clippy::unwrap_used)]
async fn leaves_out_what_its_session_may_not_read(one_shot: bool) {
    within(LIMIT, async {
        let (client, root) = sandbox("cache-acl").await;
        let owner = Client::connect(&format!("{}{root}", server().await), options(10_000))
            .await
            .unwrap();
        owner.add_auth("digest", b"owner:pw").await.unwrap();
        create(&client, "/t", "root").await;
        let private = CreateOptions::new(CreateMode::Persistent).acl(Acl::creator_all());
        owner.create("/t/secret", b"s", private).await.unwrap();
        owner
            .create("/t/secret/x", b"x", CreateMode::Persistent)
            .await
            .unwrap();
        let (cache, mut events) = tree_cache(&client, "/t", one_shot);
        let mut replay = Replay::default();
        replay
            .take_until(&mut events, |e| *e == CacheEvent::Initialized)
            .await;
        owner
            .create("/t/secret/y", b"y", CreateMode::Persistent)
            .await
            .unwrap();
        owner.set_data("/t/secret/x", b"x1", None).await.unwrap();
        create(&client, "/t/open", "o").await;
        replay
            .take_until(&mut events, |e| is_event(e, '+', "/t/open"))
            .await;
        let held: Vec<&str> = replay.nodes.keys().map(String::as_str).collect();
        assert_eq!(held, ["/t", "/t/open"]);
        assert_eq!(replay.nodes, cache.snapshot());
        owner.close().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_cache_reports_exactly_what_changed_while_it_was_disconnected() {
    reports_exactly_what_changed_while_disconnected(false).await;
}

#[tokio::test]
async fn a_one_shot_cache_reports_exactly_what_changed_while_it_was_disconnected() {
    reports_exactly_what_changed_while_disconnected(true).await;
}

// A test body, run by two tests (one per watch mode).
#[allow(clippy::unwrap_used)]
async fn reports_exactly_what_changed_while_disconnected(one_shot: bool) {
    within(LIMIT, async {
        let (client, root) = sandbox("cache-gap").await;
        let writer = connect_with(options(10_000)).await;
        let w = |p: &str| format!("{root}{p}");
        for (path, data) in [("/g", ""), ("/g/a", "a0"), ("/g/b", "b0"), ("/g/d", "d0")] {
            create(&client, path, data).await;
        }
        let (cache, mut events) = tree_cache(&client, "/g", one_shot);
        let mut replay = Replay::default();
        replay
            .take_until(&mut events, |e| *e == CacheEvent::Initialized)
            .await;
        let loaded = replay.events.len();

        // Cut the cache off; change the subtree while it cannot see anything.
        let pause = Duration::from_secs(4);
        let cut = std::time::Instant::now();
        client.debug_drop_connection(pause);
        wait_for_state(&client, SessionState::Disconnected, Duration::from_secs(10)).await;
        writer.set_data(&w("/g/a"), b"a1", None).await.unwrap();
        writer.set_data(&w("/g/a"), b"a2", None).await.unwrap();
        writer.delete(&w("/g/b"), None).await.unwrap();
        create(&writer, &w("/g/c"), "c0").await;
        writer.delete(&w("/g/d"), None).await.unwrap();
        create(&writer, &w("/g/d"), "d1").await;
        create(&writer, &w("/g/e"), "e0").await;
        writer.delete(&w("/g/e"), None).await.unwrap();
        create(&writer, &w("/g/done"), "").await;
        assert!(
            cut.elapsed() < pause,
            "the writer took longer than the cache's pause; the test needs it done first"
        );

        replay.converge(&mut events, &client, "/g").await;
        // Without the probe's two events.
        let mut gap = summary(&replay.events[loaded..replay.events.len() - 2]);
        gap.sort();
        // The newest state of each node, once: a1 skipped, /g/e never seen, /g/d
        // deleted and created again.
        assert_eq!(
            gap,
            expected(&[
                ('+', "/g/c"),
                ('+', "/g/d"),
                ('+', "/g/done"),
                ('-', "/g/b"),
                ('-', "/g/d"),
                ('~', "/g/a"),
            ])
        );
        let a = cache.get("/g/a").unwrap();
        assert_eq!((&a.data[..], a.stat.version), (&b"a2"[..], 2));
        assert_eq!(&cache.get("/g/d").unwrap().data[..], b"d1");
        assert_eq!(replay.nodes, cache.snapshot());
        assert_eq!(tree_of(&cache.snapshot()), server_tree(&client, "/g").await);
    })
    .await;
}

#[tokio::test]
async fn a_cache_resumes_on_a_new_session_and_reports_only_the_differences() {
    resumes_on_a_new_session(false).await;
}

#[tokio::test]
async fn a_one_shot_cache_resumes_on_a_new_session_and_reports_only_the_differences() {
    resumes_on_a_new_session(true).await;
}

// A test body, run by two tests (one per watch mode).
#[allow(clippy::unwrap_used)]
async fn resumes_on_a_new_session(one_shot: bool) {
    within(LIMIT, async {
        let (client, root) = sandbox("cache-expiry").await;
        create(&client, "/r", "").await;
        create(&client, "/r/keep", "k").await;
        create(&client, "/r/old", "o").await;
        let short = connect_with(options(2_000)).await;
        let (cache, mut events) = tree_cache(&short, &format!("{root}/r"), one_shot);
        let mut replay = Replay::default();
        replay
            .take_until(&mut events, |e| *e == CacheEvent::Initialized)
            .await;
        let loaded = replay.events.len();

        // The session expires: the stream says so, the mirror stays.
        short.debug_drop_connection(Duration::from_secs(3600));
        let ended = within(Duration::from_secs(30), events.next_event())
            .await
            .expect("stream ended");
        assert!(matches!(ended, Err(Error::SessionExpired)), "{ended:?}");
        wait_for_state(&short, SessionState::Expired, Duration::from_secs(10)).await;
        assert!(matches!(cache.error(), Some(Error::SessionExpired)));
        assert_eq!(cache.len(), 3);

        client.delete("/r/old", None).await.unwrap();
        create(&client, "/r/new", "n").await;
        client.set_data("/r/keep", b"k2", None).await.unwrap();
        create(&client, "/r/done", "").await;

        let fresh = Client::connect(&server().await, options(10_000))
            .await
            .unwrap();
        cache.restart(&fresh).unwrap();
        replay
            .converge(&mut events, &fresh, &format!("{root}/r"))
            .await;
        let mut gap = summary(&replay.events[loaded..replay.events.len() - 2]);
        gap.sort();
        let r = |p: &str| format!("{root}/r{p}");
        assert_eq!(
            gap,
            vec![
                ('+', r("/done")),
                ('+', r("/new")),
                ('-', r("/old")),
                ('~', r("/keep")),
            ]
        );
        assert_eq!(replay.nodes, cache.snapshot());
        assert_eq!(
            tree_of(&cache.snapshot()),
            server_tree(&fresh, &r("")).await
        );
    })
    .await;
}

#[tokio::test]
async fn a_node_cache_follows_one_node_through_its_life() {
    within(LIMIT, async {
        let (client, _root) = sandbox("node-cache").await;
        let (cache, mut events) = NodeCache::start(&client, "/n").unwrap();
        cache.initialized().await.unwrap();
        assert_eq!(cache.node(), None);
        let mut replay = Replay::default();
        replay
            .take_until(&mut events, |e| *e == CacheEvent::Initialized)
            .await;
        // Each change waits for its event: a read made for one event may already see
        // the next change, which is then (rightly) reported once.
        create(&client, "/n", "1").await;
        replay
            .take_until(&mut events, |e| is_event(e, '+', "/n"))
            .await;
        client.set_data("/n", b"2", None).await.unwrap();
        replay
            .take_until(&mut events, |e| is_event(e, '~', "/n"))
            .await;
        // Children are not the node cache's business.
        create(&client, "/n/child", "").await;
        client.delete("/n/child", None).await.unwrap();
        client.delete("/n", None).await.unwrap();
        replay
            .take_until(&mut events, |e| is_event(e, '-', "/n"))
            .await;
        assert_eq!(
            summary(&replay.events),
            expected(&[('!', ""), ('+', "/n"), ('~', "/n"), ('-', "/n")])
        );
        assert_eq!(cache.node(), None);
    })
    .await;
}

#[tokio::test]
async fn a_children_cache_mirrors_the_children_only() {
    within(LIMIT, async {
        let (client, _root) = sandbox("children-cache").await;
        create(&client, "/p", "parent").await;
        create(&client, "/p/a", "a").await;
        let (cache, mut events) = ChildrenCache::start(&client, "/p").unwrap();
        let mut replay = Replay::default();
        replay
            .take_until(&mut events, |e| *e == CacheEvent::Initialized)
            .await;
        create(&client, "/p/a/deep", "").await;
        create(&client, "/p/b", "b").await;
        client.set_data("/p", b"parent2", None).await.unwrap();
        client.set_data("/p/a", b"a2", None).await.unwrap();
        replay
            .take_until(&mut events, |e| is_event(e, '~', "/p/a"))
            .await;
        assert_eq!(
            summary(&replay.events),
            expected(&[('+', "/p/a"), ('!', ""), ('+', "/p/b"), ('~', "/p/a")])
        );
        let children = cache.children();
        assert_eq!(children.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(&children["a"].data[..], b"a2");
        assert_eq!(&cache.child("b").unwrap().data[..], b"b");
    })
    .await;
}

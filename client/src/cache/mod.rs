//! Caches: an in-memory mirror of a node ([`NodeCache`]), of a node's children
//! ([`ChildrenCache`]) or of a whole subtree ([`TreeCache`]), kept current by a
//! persistent watch (ZooKeeper 3.6+; one-shot watches on older servers), with a
//! stream of what changed
//! ([`CacheEvents`]), as Curator's `CuratorCache` (and its older `NodeCache`,
//! `PathChildrenCache`, `TreeCache`) offer.
//!
//! ```no_run
//! # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
//! use paddock_client::cache::{CacheEvent, TreeCache};
//! let (cache, mut events) = TreeCache::start(&client, "/services")?;
//! while let Some(event) = events.next_event().await {
//!     match event? {
//!         CacheEvent::Created { path, node } => println!("+ {path} {:?}", node.data),
//!         CacheEvent::Changed { path, new, .. } => println!("~ {path} {:?}", new.data),
//!         CacheEvent::Deleted { path, .. } => println!("- {path}"),
//!         CacheEvent::Initialized => println!("{} nodes", cache.len()),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # What a cache guarantees
//!
//! A cache sees the server only through reads and notifications, so the states a node
//! passed through while the client was disconnected (or between two reads) are not
//! observable: a node changed twice in a gap is reported changed once, to its newest
//! value; a node created and deleted in a gap is not reported at all. What is promised:
//!
//! 1. **The events are the mirror.** Applying the events, in order, to an empty map
//!    (`Created` inserts, `Changed` replaces, `Deleted` removes) gives exactly the
//!    cache's mirror once they are consumed. The first load reports every node as
//!    `Created`, then `Initialized`. So no event is duplicated or lost: a `Created`
//!    only for a node the mirror lacks, a `Changed` or `Deleted` only for one it holds,
//!    carrying the node as it was held.
//! 2. **Every event is a real state, and a node's events go forward.** Each `Created`
//!    or `Changed` carries data and `Stat` the server returned for that node; for one
//!    node, each `Changed` has a larger `mzxid` than the state it replaces, a node is
//!    only re-`Created` with a larger `czxid`, and nothing is reported about a state
//!    older than one already reported. A parent is created before its children and
//!    deleted after them, and a node is only taken in under the incarnation of its
//!    parent it was created under: when a read shows a node newer than the parent's
//!    last read (the parent may have been deleted and created again since), the
//!    parent is read again first. A created node's event reads both at once.
//! 3. **Nothing is missed.** Across disconnects, reconnects to another server and
//!    leader changes, the cache re-reads the subtree after every reconnect, before it
//!    applies anything reported on the new connection, and reports exactly the
//!    differences (compared by `czxid` and `mzxid`). Once writes stop and the session
//!    is connected, the mirror equals the server's subtree (every path, its data and
//!    its data `Stat` fields).
//!
//! When the session ends (expired, closed) the stream yields the error and the cache
//! keeps its last mirror; [`TreeCache::restart`] on a new client resumes from it, and
//! the resync reports only what changed meanwhile, under the same rules.
//!
//! A consumer that does not keep up slows the cache (the stream is bounded), so the
//! cache holds what it mirrors plus a bounded queue, never a history; notifications wait
//! in the client meanwhile. Dropping the stream is fine: the mirror stays current.
//! Dropping the cache stops it.
//!
//! The mirrored `Stat` is the one read with the node's data: its data fields are
//! current, its children fields (`cversion`, `num_children`, `pzxid`) are as of that
//! read; [`TreeCache::children`] is the current listing.
//!
//! # Layout
//! - `mirror`: the pure core, the nodes and the events each observation makes.
//! - `sync`: the task: the watch, the pipelined reads, the resyncs.
//! - `one_shot`: the same task on one-shot watches, for servers before ZooKeeper 3.6.

mod mirror;
mod one_shot;
mod sync;

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::{mpsc, watch};

use crate::client::validate;
use crate::{Client, Error};
use mirror::{depth_below, Mirror};
pub use mirror::{CacheEvent, CachedNode};
use sync::{EventSender, Scope, Shared, Status, Syncer};

/// Events a stream holds before the cache waits for its consumer.
const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// A mirror of a subtree (Curator's `CuratorCache`, `TreeCache`): see the
/// [module](crate::cache) for what it guarantees.
#[derive(Debug)]
pub struct TreeCache {
    shared: Arc<Shared>,
    scope: Scope,
    events: EventSender,
    /// Dropped with the cache, which stops its task.
    stop: watch::Sender<()>,
}

/// Options for a [`TreeCache`], from [`TreeCache::builder`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until started"]
pub struct TreeCacheBuilder {
    client: Client,
    path: String,
    max_depth: usize,
    capacity: usize,
    one_shot: bool,
}

impl TreeCacheBuilder {
    /// Mirror only this many levels below the path (0: the node alone). Unlimited by
    /// default.
    pub fn max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// How many events the stream holds before the cache waits (1024 by default).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// Use one-shot watches (a data watch per node, a child watch per parent, as
    /// Curator's older `TreeCache`) instead of one persistent recursive watch. The cache
    /// falls back to them by itself on a server without persistent watches (ZooKeeper
    /// before 3.6); the guarantees are the same, at the cost of a watch per node.
    pub fn one_shot_watches(mut self, one_shot: bool) -> Self {
        self.one_shot = one_shot;
        self
    }

    /// Starts the cache (a tokio task; needs a runtime). Returns at once: wait for
    /// [`TreeCache::initialized`], or for `Initialized` on the stream.
    pub fn start(self) -> Result<(TreeCache, CacheEvents), Error> {
        let scope = Scope {
            root: self.path,
            max_depth: self.max_depth,
            root_events: true,
            one_shot: self.one_shot,
        };
        TreeCache::spawn(&self.client, scope, self.capacity)
    }
}

impl TreeCache {
    /// A cache of `path` and everything below it.
    pub fn builder(client: &Client, path: &str) -> TreeCacheBuilder {
        TreeCacheBuilder {
            client: client.clone(),
            path: path.to_owned(),
            max_depth: usize::MAX,
            capacity: DEFAULT_EVENT_CAPACITY,
            one_shot: false,
        }
    }

    /// Starts a cache of `path` and everything below it, with the default options.
    pub fn start(client: &Client, path: &str) -> Result<(TreeCache, CacheEvents), Error> {
        TreeCache::builder(client, path).start()
    }

    fn spawn(
        client: &Client,
        scope: Scope,
        capacity: usize,
    ) -> Result<(TreeCache, CacheEvents), Error> {
        validate(&scope.root, false)?;
        let (events, rx) = mpsc::channel(capacity);
        let (status, _) = watch::channel(Status::Loading);
        let shared = Arc::new(Shared {
            mirror: Mutex::new(Mirror::new(&scope.root)),
            status,
        });
        let (stop, _) = watch::channel(());
        let cache = TreeCache {
            shared,
            scope,
            events,
            stop,
        };
        cache.launch(client, false);
        Ok((cache, CacheEvents { rx }))
    }

    fn launch(&self, client: &Client, initialized: bool) {
        let syncer = Syncer {
            client: client.clone(),
            scope: self.scope.clone(),
            shared: self.shared.clone(),
            events: self.events.clone(),
            stop: self.stop.subscribe(),
            initialized,
        };
        tokio::spawn(syncer.run());
    }

    /// Waits until the first load is complete; fails if the cache ended before.
    pub async fn initialized(&self) -> Result<(), Error> {
        let mut status = self.shared.status.subscribe();
        let status = status
            .wait_for(|s| !matches!(s, Status::Loading))
            .await
            .map_err(|_| Error::Closed)?
            .clone();
        match status {
            Status::Ended(err) => Err(err),
            _ => Ok(()),
        }
    }

    /// Why the cache stopped following the server, if it did (its session ended).
    pub fn error(&self) -> Option<Error> {
        match &*self.shared.status.borrow() {
            Status::Ended(err) => Some(err.clone()),
            _ => None,
        }
    }

    /// Resumes a cache whose session ended on a new client's session: the mirror is
    /// kept, and the resync reports only the differences. Fails with `BadArguments` if
    /// the cache is still running.
    pub fn restart(&self, client: &Client) -> Result<(), Error> {
        if self.error().is_none() {
            return Err(Error::BadArguments("the cache is still running".to_owned()));
        }
        self.shared.status.send_replace(Status::Ready);
        self.launch(client, true);
        Ok(())
    }

    /// The mirrored node at `path`.
    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.shared.mirror().get(path).cloned()
    }

    /// The names of the mirrored children of `path`, sorted.
    pub fn children(&self, path: &str) -> Vec<String> {
        self.shared.mirror().children(path)
    }

    /// Every mirrored node by path.
    pub fn snapshot(&self) -> BTreeMap<String, CachedNode> {
        let mirror = self.shared.mirror();
        mirror
            .iter()
            .map(|(path, node)| (path.clone(), node.clone()))
            .collect()
    }

    /// How many nodes are mirrored.
    pub fn len(&self) -> usize {
        self.shared.mirror().len()
    }

    /// Whether no node is mirrored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The path the cache mirrors.
    pub fn path(&self) -> &str {
        &self.scope.root
    }
}

/// A mirror of one node (Curator's `NodeCache`, `CuratorCache` with `SINGLE_NODE_CACHE`).
#[derive(Debug)]
pub struct NodeCache {
    tree: TreeCache,
}

impl NodeCache {
    /// Starts a cache of the node at `path` (which need not exist). Its events are the
    /// node's `Created`, `Changed` and `Deleted`.
    pub fn start(client: &Client, path: &str) -> Result<(NodeCache, CacheEvents), Error> {
        let scope = Scope {
            root: path.to_owned(),
            max_depth: 0,
            root_events: true,
            one_shot: false,
        };
        let (tree, events) = TreeCache::spawn(client, scope, DEFAULT_EVENT_CAPACITY)?;
        Ok((NodeCache { tree }, events))
    }

    /// The node, if it exists.
    pub fn node(&self) -> Option<CachedNode> {
        self.tree.get(&self.tree.scope.root)
    }

    /// See [`TreeCache::initialized`].
    pub async fn initialized(&self) -> Result<(), Error> {
        self.tree.initialized().await
    }

    /// See [`TreeCache::error`].
    pub fn error(&self) -> Option<Error> {
        self.tree.error()
    }

    /// See [`TreeCache::restart`].
    pub fn restart(&self, client: &Client) -> Result<(), Error> {
        self.tree.restart(client)
    }
}

/// A mirror of a node's children, their data and stats (Curator's
/// `PathChildrenCache`). The parent itself is not reported.
#[derive(Debug)]
pub struct ChildrenCache {
    tree: TreeCache,
}

impl ChildrenCache {
    /// Starts a cache of the children of `path` (which need not exist).
    pub fn start(client: &Client, path: &str) -> Result<(ChildrenCache, CacheEvents), Error> {
        let scope = Scope {
            root: path.to_owned(),
            max_depth: 1,
            root_events: false,
            one_shot: false,
        };
        let (tree, events) = TreeCache::spawn(client, scope, DEFAULT_EVENT_CAPACITY)?;
        Ok((ChildrenCache { tree }, events))
    }

    /// The children by name.
    pub fn children(&self) -> BTreeMap<String, CachedNode> {
        let root = &self.tree.scope.root;
        self.tree
            .shared
            .mirror()
            .iter()
            .filter(|(path, _)| depth_below(root, path) == Some(1))
            .map(|(path, node)| {
                let name = path.rsplit('/').next().unwrap_or_default();
                (name.to_owned(), node.clone())
            })
            .collect()
    }

    /// One child by name.
    pub fn child(&self, name: &str) -> Option<CachedNode> {
        self.tree.get(&mirror::join(&self.tree.scope.root, name))
    }

    /// See [`TreeCache::initialized`].
    pub async fn initialized(&self) -> Result<(), Error> {
        self.tree.initialized().await
    }

    /// See [`TreeCache::error`].
    pub fn error(&self) -> Option<Error> {
        self.tree.error()
    }

    /// See [`TreeCache::restart`].
    pub fn restart(&self, client: &Client) -> Result<(), Error> {
        self.tree.restart(client)
    }
}

/// The changes a cache reports, in order (see the [module](crate::cache)). When the
/// cache's session ends it yields that error; after [`TreeCache::restart`] events
/// follow again.
#[derive(Debug)]
#[must_use = "a stream does nothing unless polled"]
pub struct CacheEvents {
    rx: mpsc::Receiver<Result<CacheEvent, Error>>,
}

impl CacheEvents {
    /// The next event; `None` once the cache is dropped and the events are consumed.
    pub async fn next_event(&mut self) -> Option<Result<CacheEvent, Error>> {
        self.rx.recv().await
    }
}

impl Stream for CacheEvents {
    type Item = Result<CacheEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

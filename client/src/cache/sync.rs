//! The task that keeps a cache's mirror in step with the server.
//!
//! A persistent (recursive) watch says *which* node changed; a read says *how*. Every
//! read goes out on the cache's one session at once (pipelined, up to [`WINDOW`]) and
//! its answer is applied in the order sent, so the answers are of ever newer states and
//! the mirror never steps back (see `mirror`). A persistent watch is re-armed after a
//! reconnect but not told what changed meanwhile, so whenever the session's connection
//! count grows the task re-reads the whole subtree (a *resync*) before it applies
//! anything that arrived on the new connection.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use paddock_wire::{AddWatchMode, ErrorCode, EventType, Stat};
use tokio::sync::{mpsc, watch};

use crate::cache::mirror::{depth_below, join, parent_in, CacheEvent, Mirror, ReadParentFirst};
use crate::error::Error;
use crate::watch::WatchedEvent;
use crate::Client;

/// Reads in flight at most: enough to keep a link busy, few enough that a burst of
/// events waits in the watch's queue rather than as requests.
pub(super) const WINDOW: usize = 256;
/// Nodes read at once by a resync.
const WALK_BATCH: usize = 256;

/// Where a cache stands, for its handles.
#[derive(Debug, Clone)]
pub(crate) enum Status {
    /// The first load is under way.
    Loading,
    /// The mirror holds the subtree (as of the last resync plus the events since).
    Ready,
    /// The task ended: the session ended, or the cache was stopped.
    Ended(Error),
}

/// What the handles and the task share: the mirror and the status. The task is the
/// only writer; nobody holds the lock across an await.
#[derive(Debug)]
pub(crate) struct Shared {
    pub mirror: Mutex<Mirror>,
    pub status: watch::Sender<Status>,
}

impl Shared {
    pub fn mirror(&self) -> std::sync::MutexGuard<'_, Mirror> {
        // A poisoned lock only means a panic elsewhere; the map is still whole.
        self.mirror
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What a cache mirrors.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub root: String,
    /// Levels below the root that are mirrored (0: the root alone).
    pub max_depth: usize,
    /// Whether the root's own events are reported (a children cache leaves them out).
    pub root_events: bool,
    /// One-shot watches instead of a persistent one (see `one_shot`).
    pub one_shot: bool,
}

pub(crate) type EventSender = mpsc::Sender<Result<CacheEvent, Error>>;

/// Why the task stopped.
pub(super) enum End {
    /// Every handle is gone, or the event receiver was dropped and the handles too.
    Stopped,
    Failed(Error),
}

impl From<Error> for End {
    fn from(err: Error) -> Self {
        End::Failed(err)
    }
}

type Read = Pin<Box<dyn Future<Output = Result<(Bytes, Stat), Error>> + Send>>;

/// A node a resync reads.
#[derive(Debug, Clone)]
struct Visit {
    path: String,
    /// Levels below the cache's root.
    depth: usize,
    /// Its data only, not its children: a parent read again before its child (see
    /// [`ReadParentFirst`]).
    data_only: bool,
}

pub(crate) struct Syncer {
    pub client: Client,
    pub scope: Scope,
    pub shared: Arc<Shared>,
    pub events: EventSender,
    /// Changes (to `Err`) when the last handle is dropped.
    pub stop: watch::Receiver<()>,
    /// Whether `Initialized` was sent (a restarted cache does not send it again).
    pub initialized: bool,
}

impl Syncer {
    pub async fn run(mut self) {
        let error = match self.serve().await {
            End::Stopped => Error::Closed,
            End::Failed(err) => err,
        };
        tracing::debug!(root = %self.scope.root, %error, "cache stopped");
        // Must publish the end before the stream tells it: a consumer told asks the
        // cache next.
        self.shared
            .status
            .send_replace(Status::Ended(error.clone()));
        // The consumer learns why the events stop, once it has read the rest; a cache
        // dropped meanwhile need not wait for it.
        tokio::select! {
            _ = self.events.send(Err(error)) => {}
            _ = self.stop.changed() => {}
        }
    }

    async fn serve(&mut self) -> End {
        if self.scope.one_shot {
            return self.serve_one_shot().await;
        }
        let mut states = self.client.state_watcher();
        loop {
            // The watch first, then the read: a change after the read fires the watch.
            let epoch = self.client.connection_epoch();
            let mut watch = match self.client.add_watch(&self.scope.root, self.mode()).await {
                Ok(watch) => watch,
                Err(err) if err.is_retryable() => continue,
                // A server before ZooKeeper 3.6 knows no persistent watches.
                Err(Error::Keeper(ErrorCode::Unimplemented)) => {
                    tracing::info!(root = %self.scope.root, "no persistent watches: the cache uses one-shot watches");
                    return self.serve_one_shot().await;
                }
                Err(err) => return End::Failed(err),
            };
            let mut epoch = match self.resync(epoch).await {
                Ok(epoch) => epoch,
                Err(end) => return end,
            };
            let mut inflight: VecDeque<(String, Read)> = VecDeque::new();
            loop {
                tokio::select! {
                    biased;
                    _ = self.stop.changed() => return End::Stopped,
                    answer = front(&mut inflight), if !inflight.is_empty() => {
                        if let Some((path, _)) = inflight.pop_front() {
                            if let Err(end) = self.apply_read(&mut inflight, path, answer).await {
                                return end;
                            }
                        }
                    }
                    event = watch.next_event(), if inflight.len() < WINDOW => match event {
                        Some(Ok(event)) => {
                            // Must resync before applying anything the new connection
                            // reported: what happened in between was never reported.
                            if self.client.connection_epoch() != epoch {
                                epoch = match self.catch_up(&mut inflight).await {
                                    Ok(epoch) => epoch,
                                    Err(end) => return end,
                                };
                            }
                            if let Some(path) = self.relevant(&event) {
                                // A new node comes in only under a parent read after it
                                // was created (see `mirror`): both reads go out at once.
                                if event.event_type == EventType::NodeCreated {
                                    if let Some(parent) = parent_in(&self.scope.root, &path) {
                                        self.queue_read(&mut inflight, parent.to_owned());
                                    }
                                }
                                self.queue_read(&mut inflight, path);
                            }
                        }
                        Some(Err(err)) => return End::Failed(err),
                        // The watch was removed (by a removeWatches on this session):
                        // add it again and resync.
                        None => {
                            if let Err(end) = self.drain(&mut inflight).await {
                                return end;
                            }
                            break;
                        }
                    },
                    changed = states.changed() => {
                        let state = *states.borrow_and_update();
                        if changed.is_err() || state.is_terminal() {
                            return End::Failed(state.terminal_error());
                        }
                        if self.client.connection_epoch() != epoch {
                            epoch = match self.catch_up(&mut inflight).await {
                                Ok(epoch) => epoch,
                                Err(end) => return end,
                            };
                        }
                    }
                }
            }
        }
    }

    fn mode(&self) -> AddWatchMode {
        if self.scope.max_depth == 0 {
            AddWatchMode::Persistent
        } else {
            AddWatchMode::PersistentRecursive
        }
    }

    /// The node to read for this event, if it is one the cache mirrors.
    fn relevant(&self, event: &WatchedEvent) -> Option<String> {
        match event.event_type {
            EventType::NodeCreated | EventType::NodeDataChanged | EventType::NodeDeleted => {}
            // A persistent watch's child events: the children are not mirrored.
            _ => return None,
        }
        let depth = depth_below(&self.scope.root, &event.path)?;
        (depth <= self.scope.max_depth).then(|| event.path.clone())
    }

    /// Sends a read of `path`'s data, applied in turn.
    fn queue_read(&self, inflight: &mut VecDeque<(String, Read)>, path: String) {
        let read = Box::pin(self.client.get_data_now(&path));
        inflight.push_back((path, read));
    }

    /// Applies the reads in flight, then resyncs.
    async fn catch_up(&mut self, inflight: &mut VecDeque<(String, Read)>) -> Result<u64, End> {
        self.drain(inflight).await?;
        let epoch = self.client.connection_epoch();
        self.resync(epoch).await
    }

    async fn drain(&mut self, inflight: &mut VecDeque<(String, Read)>) -> Result<(), End> {
        while let Some((path, read)) = inflight.pop_front() {
            let answer = read.await;
            self.apply_read(inflight, path, answer).await?;
        }
        Ok(())
    }

    /// Reads the whole subtree until a walk completes; returns the connection count it
    /// started under (a later reconnect calls for another).
    async fn resync(&mut self, mut epoch: u64) -> Result<u64, End> {
        loop {
            match self.walk().await {
                Ok(()) => break,
                // The connection broke under the walk: its reads wait for the next one.
                Err(End::Failed(err)) if err.is_retryable() => {
                    epoch = self.client.connection_epoch();
                }
                Err(end) => return Err(end),
            }
        }
        if !self.initialized {
            self.initialized = true;
            self.send(CacheEvent::Initialized).await?;
            self.shared.status.send_replace(Status::Ready);
        }
        Ok(epoch)
    }

    /// One pass over the subtree, level by level: each node's data, then its children,
    /// whose listing also tells which mirrored children are gone.
    async fn walk(&mut self) -> Result<(), End> {
        let mut level = vec![Visit {
            path: self.scope.root.clone(),
            depth: 0,
            data_only: false,
        }];
        while !level.is_empty() {
            let mut next = Vec::new();
            for batch in level.chunks(WALK_BATCH) {
                // Sent together, in order, so the answers come back in order.
                let reads: Vec<_> = batch
                    .iter()
                    .map(|visit| {
                        let data = self.client.get_data_now(&visit.path);
                        let list = !visit.data_only && visit.depth < self.scope.max_depth;
                        let children = list.then(|| self.client.get_children2_now(&visit.path));
                        (data, children)
                    })
                    .collect();
                for (visit, (data, children)) in batch.iter().zip(reads) {
                    let path = &visit.path;
                    let data = data.await;
                    let children = match children {
                        Some(children) => Some(children.await),
                        None => None,
                    };
                    match data {
                        Ok((data, stat)) => {
                            if let Some(ReadParentFirst(parent)) =
                                self.observe(path, data, stat).await?
                            {
                                // Both again, the parent first, after this batch's
                                // answers (which are older).
                                next.push(Visit {
                                    path: parent,
                                    depth: visit.depth.saturating_sub(1),
                                    data_only: true,
                                });
                                next.push(visit.clone());
                                continue;
                            }
                        }
                        Err(Error::Keeper(ErrorCode::NoNode)) => {
                            self.change(|m| m.absent(path)).await?;
                            continue;
                        }
                        Err(err) => {
                            self.pass_over(path, &err)?;
                            continue;
                        }
                    }
                    match children {
                        None => {}
                        Some(Ok((names, stat))) => {
                            self.change(|m| m.listed(path, &names, &stat)).await?;
                            next.extend(names.iter().map(|name| Visit {
                                path: join(path, name),
                                depth: visit.depth + 1,
                                data_only: false,
                            }));
                        }
                        Some(Err(Error::Keeper(ErrorCode::NoNode))) => {
                            self.change(|m| m.absent(path)).await?;
                        }
                        Some(Err(err)) => self.pass_over(path, &err)?,
                    }
                }
            }
            level = next;
        }
        Ok(())
    }

    /// Applies one read of `path` in the order sent. A node that cannot come in before
    /// its parent is read again (see `mirror`) is asked for again behind a read of the
    /// parent.
    async fn apply_read(
        &mut self,
        inflight: &mut VecDeque<(String, Read)>,
        path: String,
        answer: Result<(Bytes, Stat), Error>,
    ) -> Result<(), End> {
        match answer {
            Ok((data, stat)) => {
                if let Some(ReadParentFirst(parent)) = self.observe(&path, data, stat).await? {
                    self.queue_read(inflight, parent);
                    self.queue_read(inflight, path);
                }
                Ok(())
            }
            Err(Error::Keeper(ErrorCode::NoNode)) => self.change(|m| m.absent(&path)).await,
            // A lost connection means a reconnect, hence a resync that covers this node.
            Err(err) if err.is_retryable() => Ok(()),
            Err(err) => self.pass_over(&path, &err),
        }
    }

    /// Applies a read of a node, unless its parent must be read first.
    pub(super) async fn observe(
        &mut self,
        path: &str,
        data: Bytes,
        stat: Stat,
    ) -> Result<Option<ReadParentFirst>, End> {
        // The guard goes with the statement: never held across the sends.
        let observed = self.shared.mirror().present(path, data, stat);
        match observed {
            Ok(events) => {
                self.report(events).await?;
                Ok(None)
            }
            Err(wait) => Ok(Some(wait)),
        }
    }

    /// Passes over a node this session may not read (NoAuth), leaving it out; any other
    /// error ends the cache (a lost connection too: the caller starts over once
    /// reconnected).
    pub(super) fn pass_over(&mut self, path: &str, err: &Error) -> Result<(), End> {
        match err {
            Error::Keeper(ErrorCode::NoAuth) => {
                tracing::debug!(%path, "cache: a node is not readable by this session, left out");
                self.shared.mirror().unreadable(path);
                Ok(())
            }
            err => Err(End::Failed(err.clone())),
        }
    }

    /// Applies a change to the mirror and sends its events, in order.
    pub(super) async fn change(
        &mut self,
        change: impl FnOnce(&mut Mirror) -> Vec<CacheEvent>,
    ) -> Result<(), End> {
        let events = change(&mut self.shared.mirror());
        self.report(events).await
    }

    /// Sends a change's events, in order, minding which the scope reports.
    async fn report(&mut self, events: Vec<CacheEvent>) -> Result<(), End> {
        for event in events {
            let reported = self.scope.root_events || event.path() != Some(self.scope.root.as_str());
            if reported {
                self.send(event).await?;
            }
        }
        Ok(())
    }

    /// Sends one event, waiting while the consumer is behind (so the cache holds no
    /// history of its own); a consumer that went away is no reason to stop mirroring.
    pub(super) async fn send(&mut self, event: CacheEvent) -> Result<(), End> {
        tokio::select! {
            _ = self.events.send(Ok(event)) => Ok(()),
            _ = self.stop.changed() => Err(End::Stopped),
        }
    }
}

/// The answer of the oldest read in flight.
async fn front(inflight: &mut VecDeque<(String, Read)>) -> Result<(Bytes, Stat), Error> {
    match inflight.front_mut() {
        Some((_, read)) => read.await,
        None => std::future::pending().await,
    }
}

//! The fallback for servers without persistent watches (ZooKeeper before 3.6), also
//! chosen with [`TreeCacheBuilder::one_shot_watches`](super::TreeCacheBuilder): a
//! one-shot data watch on every mirrored node and a child watch on every node whose
//! children are mirrored, as Curator's older `TreeCache` keeps them. Each watch that
//! fires is re-armed by the read that follows it.
//!
//! The same rules hold as with a persistent watch: every read is sent at once and its
//! answer applied in the order sent, so the mirror never steps back. After a reconnect
//! no re-read is needed: the session re-arms one-shot watches from the last zxid it
//! saw, and the server fires at once every watch whose node changed meanwhile (a
//! deleted node's data watch, a parent's child watch for a node created or deleted).
//! What this mode adds is bookkeeping: a watch must be armed on every mirrored node,
//! so a read whose watch could not be armed (the node was missing, the connection
//! broke) is made again.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use paddock_wire::{ErrorCode, Stat};

use crate::cache::mirror::{depth_below, join, ReadParentFirst};
use crate::cache::sync::{End, Status, Syncer, WINDOW};
use crate::cache::CacheEvent;
use crate::error::Error;
use crate::watch::{WatchFuture, WatchedEvent};

/// Which kind of watch a read arms, or a fired watch was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data,
    Child,
    /// On the root while it does not exist: fires when it is created.
    Exist,
}

enum Answer {
    Data(Result<(Bytes, Stat), Error>),
    Children(Result<(Vec<String>, Stat), Error>),
    Exists(Result<Option<Stat>, Error>),
}

/// A read on the wire, in the order sent.
struct Op {
    kind: Kind,
    path: String,
    /// The watch the read arms, if it was sent with one.
    watch: Option<WatchFuture>,
    answer: Pin<Box<dyn Future<Output = Answer> + Send>>,
}

type Fired = Pin<Box<dyn Future<Output = (String, Kind, Result<WatchedEvent, Error>)> + Send>>;

/// The watches armed (or asked for by a read in flight), by path.
#[derive(Default)]
struct Armed {
    data: HashSet<String>,
    child: HashSet<String>,
    exist: HashSet<String>,
    fired: FuturesUnordered<Fired>,
}

impl Armed {
    fn set(&mut self, kind: Kind) -> &mut HashSet<String> {
        match kind {
            Kind::Data => &mut self.data,
            Kind::Child => &mut self.child,
            Kind::Exist => &mut self.exist,
        }
    }

    fn register(&mut self, kind: Kind, path: String, watch: WatchFuture) {
        self.fired
            .push(Box::pin(watch.map(move |event| (path, kind, event))));
    }
}

impl Syncer {
    /// Mirrors with one-shot watches until the session ends or the cache is dropped.
    pub(super) async fn serve_one_shot(&mut self) -> End {
        let mut states = self.client.state_watcher();
        let mut armed = Armed::default();
        let mut ops: VecDeque<Op> = VecDeque::new();
        let root = self.scope.root.clone();
        if let Err(end) = self.look(&mut ops, &mut armed, &root) {
            return end;
        }
        loop {
            if ops.is_empty() && !self.initialized {
                self.initialized = true;
                if let Err(end) = self.send(CacheEvent::Initialized).await {
                    return end;
                }
                self.shared.status.send_replace(Status::Ready);
            }
            tokio::select! {
                biased;
                _ = self.stop.changed() => return End::Stopped,
                answer = front(&mut ops), if !ops.is_empty() => {
                    if let Some(op) = ops.pop_front() {
                        if let Err(end) = self.apply(op, answer, &mut ops, &mut armed).await {
                            return end;
                        }
                    }
                }
                fired = armed.fired.next(), if !armed.fired.is_empty() && ops.len() < WINDOW => {
                    let Some((path, kind, event)) = fired else { continue };
                    if let Err(err) = event {
                        return End::Failed(err);
                    }
                    armed.set(kind).remove(&path);
                    let sent = match kind {
                        Kind::Data => self.read(&mut ops, &mut armed, Kind::Data, &path),
                        Kind::Child => self.read(&mut ops, &mut armed, Kind::Child, &path),
                        Kind::Exist => self.look(&mut ops, &mut armed, &path),
                    };
                    if let Err(end) = sent {
                        return end;
                    }
                }
                changed = states.changed() => {
                    let state = *states.borrow_and_update();
                    if changed.is_err() || state.is_terminal() {
                        return End::Failed(state.terminal_error());
                    }
                }
            }
        }
    }

    /// Reads a node's data, and its children if they are mirrored, arming what is not
    /// armed yet.
    fn look(&self, ops: &mut VecDeque<Op>, armed: &mut Armed, path: &str) -> Result<(), End> {
        self.read(ops, armed, Kind::Data, path)?;
        if depth_below(&self.scope.root, path).is_some_and(|d| d < self.scope.max_depth) {
            self.read(ops, armed, Kind::Child, path)?;
        }
        Ok(())
    }

    /// Sends one read, with a watch of its kind unless one is armed already.
    fn read(
        &self,
        ops: &mut VecDeque<Op>,
        armed: &mut Armed,
        kind: Kind,
        path: &str,
    ) -> Result<(), End> {
        let arm = armed.set(kind).insert(path.to_owned());
        let (answer, watch): (Pin<Box<dyn Future<Output = Answer> + Send>>, _) = match (kind, arm) {
            (Kind::Data, true) => {
                let (read, watch) = self.client.get_data_w_now(path)?;
                (Box::pin(read.map(Answer::Data)), Some(watch))
            }
            (Kind::Data, false) => (
                Box::pin(self.client.get_data_now(path).map(Answer::Data)),
                None,
            ),
            (Kind::Child, true) => {
                let (read, watch) = self.client.get_children2_w_now(path)?;
                (Box::pin(read.map(Answer::Children)), Some(watch))
            }
            (Kind::Child, false) => (
                Box::pin(self.client.get_children2_now(path).map(Answer::Children)),
                None,
            ),
            (Kind::Exist, true) => {
                let (read, watch) = self.client.exists_w_now(path)?;
                (Box::pin(read.map(Answer::Exists)), Some(watch))
            }
            (Kind::Exist, false) => return Ok(()),
        };
        ops.push_back(Op {
            kind,
            path: path.to_owned(),
            watch,
            answer,
        });
        Ok(())
    }

    async fn apply(
        &mut self,
        op: Op,
        answer: Answer,
        ops: &mut VecDeque<Op>,
        armed: &mut Armed,
    ) -> Result<(), End> {
        let Op {
            kind, path, watch, ..
        } = op;
        // Whether the read answered with the node there (its watch is then armed).
        let found = matches!(
            &answer,
            Answer::Data(Ok(_)) | Answer::Children(Ok(_)) | Answer::Exists(Ok(_))
        );
        match watch {
            Some(watch) if found => armed.register(kind, path.clone(), watch),
            // The server armed nothing: the next read of this kind asks again.
            Some(_) => {
                armed.set(kind).remove(&path);
            }
            None => {}
        }
        match answer {
            Answer::Data(Ok((data, stat))) => {
                if let Some(ReadParentFirst(parent)) = self.observe(&path, data, stat).await? {
                    // Both again, the parent first (see `mirror`); this read armed
                    // the node's watch if it needed one.
                    self.read(ops, armed, Kind::Data, &parent)?;
                    self.read(ops, armed, Kind::Data, &path)?;
                } else if !armed.data.contains(&path) {
                    self.read(ops, armed, Kind::Data, &path)?;
                }
            }
            Answer::Children(Ok((names, stat))) => {
                self.change(|m| m.listed(&path, &names, &stat)).await?;
                if !armed.child.contains(&path) {
                    self.read(ops, armed, Kind::Child, &path)?;
                }
                // Every child needs its watches: a new one, and, after a restart on a
                // new session, each one mirrored before.
                for name in names {
                    let child = join(&path, &name);
                    if !armed.data.contains(&child) {
                        self.look(ops, armed, &child)?;
                    }
                }
            }
            Answer::Exists(Ok(stat)) => {
                if stat.is_some() {
                    self.look(ops, armed, &path)?;
                }
            }
            Answer::Data(Err(Error::Keeper(ErrorCode::NoNode)))
            | Answer::Children(Err(Error::Keeper(ErrorCode::NoNode))) => {
                self.change(|m| m.absent(&path)).await?;
                // A missing child comes back through its parent's child watch; the
                // root has none, so it is watched for creation.
                if path == self.scope.root {
                    self.read(ops, armed, Kind::Exist, &path)?;
                }
            }
            Answer::Data(Err(err)) | Answer::Children(Err(err)) | Answer::Exists(Err(err)) => {
                match err {
                    // Asked again; it goes out once reconnected.
                    err if err.is_retryable() => self.read(ops, armed, kind, &path)?,
                    err => self.pass_over(&path, &err)?,
                }
            }
        }
        Ok(())
    }
}

/// The answer of the oldest read in flight.
async fn front(ops: &mut VecDeque<Op>) -> Answer {
    match ops.front_mut() {
        Some(op) => (&mut op.answer).await,
        None => std::future::pending().await,
    }
}

//! What the application holds for a watch: a future for a one-shot watch, a stream for a
//! persistent one.
//!
//! Both are fed by the session task, which dispatches a notification before it completes
//! any reply that arrived after it: when a read that reflects a change returns, the
//! watch that the change fired is already resolved.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use futures::Stream;
use paddock_wire::{AddWatchMode, EventType, KeeperState};
use tokio::sync::{mpsc, oneshot};

use crate::error::Error;
use crate::session::Command;

/// A change to a watched node (`WatchedEvent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// Always `SyncConnected` for node events: session changes are reported through
    /// [`Client::state_watcher`](crate::Client::state_watcher) and as errors instead.
    pub state: KeeperState,
    /// The node the event is about, relative to the chroot.
    pub path: String,
    /// The zxid the server stamped on the notification; -1 when the server sends none
    /// (ZooKeeper before 3.9) and for events made by the client itself (watch removal).
    pub zxid: i64,
    /// When the session task read the notification off the socket (or made the event
    /// itself), so that latency can be measured to the event's arrival rather than to
    /// whenever the application got round to awaiting it.
    pub received_at: Instant,
}

pub(crate) type OneShotSender = oneshot::Sender<Result<WatchedEvent, Error>>;
pub(crate) type StreamSender = mpsc::UnboundedSender<Result<WatchedEvent, Error>>;

/// A one-shot watch left by [`Client::get_data_w`](crate::Client::get_data_w),
/// [`Client::exists_w`](crate::Client::exists_w) or
/// [`Client::get_children_w`](crate::Client::get_children_w).
///
/// Resolves once, with the first event on the node, even across reconnects (the watch is
/// re-armed with the last zxid seen, so a change made while disconnected fires it). A
/// mere disconnect does not resolve it; the end of the session resolves it with
/// [`Error::SessionExpired`], [`Error::Closed`] or [`Error::AuthFailed`]. Dropping it
/// leaves the server-side watch to fire into nothing.
#[derive(Debug)]
#[must_use = "a watch does nothing unless awaited"]
pub struct WatchFuture {
    rx: oneshot::Receiver<Result<WatchedEvent, Error>>,
}

impl WatchFuture {
    pub(crate) fn new(rx: oneshot::Receiver<Result<WatchedEvent, Error>>) -> Self {
        WatchFuture { rx }
    }
}

impl Future for WatchFuture {
    type Output = Result<WatchedEvent, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The session always sends before dropping a registered watch; a bare drop means
        // the session task is gone.
        Poll::Ready(ready!(Pin::new(&mut self.rx).poll(cx)).unwrap_or(Err(Error::Closed)))
    }
}

/// A persistent watch from [`Client::add_watch`](crate::Client::add_watch): a stream of
/// every event on the node (and, if recursive, on every node below it).
///
/// It survives reconnects: it is re-armed before the state turns `Connected` again. Unlike
/// a one-shot watch it cannot catch up on changes made while the client was
/// disconnected (ZooKeeper re-arms persistent watches without replaying events), so a
/// reader that must not miss any should re-read after a `Disconnected` → `Connected`
/// transition. When the session ends it yields the error once and ends; when
/// the watch is removed with [`Client::remove_watches`](crate::Client::remove_watches) it
/// yields a `PersistentWatchRemoved` event and ends. Dropping it removes the watch from
/// the server once no other stream watches the same path in the same mode.
#[derive(Debug)]
#[must_use = "a watch does nothing unless polled"]
pub struct PersistentWatch {
    rx: mpsc::UnboundedReceiver<Result<WatchedEvent, Error>>,
    /// Tells the session on drop; weak so that a watch alone does not keep the session
    /// open after every client handle is gone.
    commands: mpsc::WeakUnboundedSender<Command>,
    /// The server path and mode, and this stream's id among the streams on them.
    path: String,
    mode: AddWatchMode,
    id: u64,
}

impl PersistentWatch {
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<Result<WatchedEvent, Error>>,
        commands: mpsc::WeakUnboundedSender<Command>,
        path: String,
        mode: AddWatchMode,
        id: u64,
    ) -> Self {
        PersistentWatch {
            rx,
            commands,
            path,
            mode,
            id,
        }
    }

    /// The next event; `None` once the watch has ended.
    pub async fn next_event(&mut self) -> Option<Result<WatchedEvent, Error>> {
        self.rx.recv().await
    }

    /// Persistent or persistent-recursive.
    pub fn mode(&self) -> AddWatchMode {
        self.mode
    }
}

impl Stream for PersistentWatch {
    type Item = Result<WatchedEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for PersistentWatch {
    fn drop(&mut self) {
        if let Some(commands) = self.commands.upgrade() {
            // A closed channel means the session is over and its watches with it.
            let _ = commands.send(Command::Unwatch {
                path: std::mem::take(&mut self.path),
                mode: self.mode,
                id: self.id,
            });
        }
    }
}

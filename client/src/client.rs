//! [`Client`]: a cheap, cloneable handle with one async method per ZooKeeper op.
//!
//! Each method validates its path, applies the chroot, and hands a typed request to the
//! session task; the reply comes back on a oneshot channel. Many requests can be in
//! flight at once from many tasks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use paddock_wire::path::validate_path;
use paddock_wire::{
    Acl, AddWatchMode, AddWatchRequest, ClientInfo, CreateRequest, CreateTtlRequest, OpResult,
    PathRequest, PathVersionRequest, ReconfigRequest, Request, Response, SetAclRequest,
    SetDataRequest, Stat, WatchedPathRequest, WatcherType, WatchesRequest,
};
use tokio::sync::{mpsc, oneshot, watch};

use crate::connect_string::{Chroot, ConnectString};
use crate::error::Error;
use crate::options::{ConnectOptions, CreateOptions, SessionCredentials};
use crate::session::{Command, Effect, EffectKind, OneShotKind, Session, SessionView};
use crate::state::SessionState;
use crate::transaction::{ReadOp, Transaction};
use crate::watch::{PersistentWatch, WatchFuture};

/// ZooKeeper's largest TTL (`EphemeralType.MAX_TTL`, 2^40 - 1 ms).
const MAX_TTL_MS: u128 = (1 << 40) - 1;

/// The node ZooKeeper keeps its dynamic configuration in; outside any chroot.
const CONFIG_NODE: &str = "/zookeeper/config";

/// The reply to a request already sent, boxed so that it can be named.
pub(crate) type Answer<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, Error>> + Send + 'static>>;

/// A node's children with its `Stat` (`getChildren2`).
pub(crate) type Listing = (Vec<String>, Stat);

/// Ids for persistent watch streams, so a dropped stream can be told from its siblings.
static NEXT_WATCH_ID: AtomicU64 = AtomicU64::new(1);

/// A handle to one ZooKeeper session.
///
/// Cloning is cheap and every clone talks to the same session. The session is closed
/// when [`close`](Client::close) is called or the last clone is dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), paddock_client::Error> {
/// use paddock_client::{Client, ConnectOptions, CreateMode};
/// let client = Client::connect("127.0.0.1:2181/app", ConnectOptions::default()).await?;
/// client.create("/greeting", b"hello", CreateMode::Persistent).await?;
/// let (data, stat) = client.get_data("/greeting").await?;
/// assert_eq!(&data[..], b"hello");
/// assert_eq!(stat.version, 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    commands: mpsc::UnboundedSender<Command>,
    view: Arc<SessionView>,
    chroot: Chroot,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &format_args!("{:#x}", self.session_id()))
            .field("state", &self.state())
            .field("chroot", &self.inner.chroot.as_str())
            .finish()
    }
}

impl Client {
    /// Connects to one of the servers of `connect_string` (`host:port,host:port[/chroot]`,
    /// tried in shuffled order) and establishes a session.
    ///
    /// Returns once the session is established and the credentials of
    /// [`ConnectOptions::auth`] are accepted; fails with [`Error::Timeout`] (or the last
    /// connection error) if no server answers within the connect timeout.
    pub async fn connect(connect_string: &str, options: ConnectOptions) -> Result<Client, Error> {
        let ConnectString { servers, chroot } = ConnectString::parse(connect_string)?;
        let (commands, rx) = mpsc::unbounded_channel();
        let (session, conn) = Session::connect(servers, chroot.clone(), &options, rx).await?;
        let view = session.view();
        tokio::spawn(session.run(conn));
        Ok(Client {
            inner: Arc::new(Inner {
                commands,
                view,
                chroot,
            }),
        })
    }

    /// The session's current state.
    pub fn state(&self) -> SessionState {
        *self.inner.view.state.borrow()
    }

    /// A receiver that sees every change of [`state`](Client::state). A `watch` channel
    /// keeps only the newest value, so a slow reader may miss a short-lived state (a
    /// `Disconnected` healed at once), never a terminal one.
    pub fn state_watcher(&self) -> watch::Receiver<SessionState> {
        self.inner.view.state.subscribe()
    }

    /// The session id the server assigned.
    pub fn session_id(&self) -> i64 {
        self.inner.view.info().session_id
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.inner.view.info().timeout
    }

    /// The address of the server this client is (or was last) connected to.
    pub fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.inner.view.info().server
    }

    /// Id and password: enough to reattach to this session with
    /// [`ConnectOptions::session`].
    pub fn session_credentials(&self) -> SessionCredentials {
        let info = self.inner.view.info();
        SessionCredentials {
            session_id: info.session_id,
            password: info.password,
        }
    }

    /// The chroot of the connect string, `""` if none.
    pub fn chroot(&self) -> &str {
        self.inner.chroot.as_str()
    }

    /// Creates a node and returns its path (with the sequence suffix for sequential
    /// modes). `options` is a [`CreateMode`](crate::CreateMode) or [`CreateOptions`].
    pub async fn create(
        &self,
        path: &str,
        data: &[u8],
        options: impl Into<CreateOptions>,
    ) -> Result<String, Error> {
        let options = options.into();
        let request = self.create_request(path, data, &options, false)?;
        match self.call(request, None).await? {
            Response::Create { path } | Response::Create2 { path, .. } => Ok(self.strip(&path)),
            other => Err(unexpected(other)),
        }
    }

    /// Creates a node and returns its path and its `Stat` (`create2`).
    pub async fn create2(
        &self,
        path: &str,
        data: &[u8],
        options: impl Into<CreateOptions>,
    ) -> Result<(String, Stat), Error> {
        let options = options.into();
        let request = self.create_request(path, data, &options, true)?;
        match self.call(request, None).await? {
            Response::Create2 { path, stat } => Ok((self.strip(&path), stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Deletes a node; `version` `None` deletes whatever its version.
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), Error> {
        let request = Request::Delete(PathVersionRequest {
            path: self.server_path(path)?,
            version: version.unwrap_or(-1),
        });
        self.call(request, None).await.map(drop)
    }

    /// The node's `Stat`, or `None` if it does not exist.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>, Error> {
        let request = Request::Exists(self.watched(path, false)?);
        match self.call(request, None).await {
            Ok(Response::Stat(stat)) => Ok(Some(stat)),
            Ok(other) => Err(unexpected(other)),
            Err(Error::Keeper(paddock_wire::ErrorCode::NoNode)) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// [`exists`](Client::exists) leaving a one-shot watch: it fires on the node's
    /// creation if it does not exist, else on its next data change or deletion.
    pub async fn exists_w(&self, path: &str) -> Result<(Option<Stat>, WatchFuture), Error> {
        let request = Request::Exists(self.watched(path, true)?);
        let (tx, rx) = oneshot::channel();
        let effect = self.effect(&request, EffectKind::Exists(tx));
        match self.call(request, effect).await {
            Ok(Response::Stat(stat)) => Ok((Some(stat), WatchFuture::new(rx))),
            Ok(other) => Err(unexpected(other)),
            Err(Error::Keeper(paddock_wire::ErrorCode::NoNode)) => Ok((None, WatchFuture::new(rx))),
            Err(err) => Err(err),
        }
    }

    /// The node's data and `Stat`. Data a client stored as null (which ZooKeeper keeps
    /// apart from empty) reads as empty here.
    pub async fn get_data(&self, path: &str) -> Result<(Bytes, Stat), Error> {
        let request = Request::GetData(self.watched(path, false)?);
        match self.call(request, None).await? {
            Response::GetData { data, stat } => Ok((data.bytes(), stat)),
            other => Err(unexpected(other)),
        }
    }

    /// [`get_data`](Client::get_data) leaving a one-shot watch that fires on the node's
    /// next data change or deletion.
    pub async fn get_data_w(&self, path: &str) -> Result<(Bytes, Stat, WatchFuture), Error> {
        let request = Request::GetData(self.watched(path, true)?);
        let (tx, rx) = oneshot::channel();
        let effect = self.effect(&request, EffectKind::OneShot(OneShotKind::Data, tx));
        match self.call(request, effect).await? {
            Response::GetData { data, stat } => Ok((data.bytes(), stat, WatchFuture::new(rx))),
            other => Err(unexpected(other)),
        }
    }

    /// Replaces the node's data if its version is `version` (any version if `None`);
    /// returns the new `Stat`.
    pub async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        let request = Request::SetData(SetDataRequest {
            path: self.server_path(path)?,
            data: Bytes::copy_from_slice(data).into(),
            version: version.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::Stat(stat) => Ok(stat),
            other => Err(unexpected(other)),
        }
    }

    /// The node's ACL and `Stat`.
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat), Error> {
        let request = Request::GetAcl(PathRequest {
            path: self.server_path(path)?,
        });
        match self.call(request, None).await? {
            Response::GetAcl { acl, stat } => Ok((acl, stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Replaces the node's ACL if its ACL version (`aversion`) is `version`.
    pub async fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        let request = Request::SetAcl(SetAclRequest {
            path: self.server_path(path)?,
            acl: acl.to_vec(),
            version: version.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::Stat(stat) => Ok(stat),
            other => Err(unexpected(other)),
        }
    }

    /// The names (not paths) of the node's children, in no particular order.
    pub async fn get_children(&self, path: &str) -> Result<Vec<String>, Error> {
        let request = Request::GetChildren(self.watched(path, false)?);
        match self.call(request, None).await? {
            Response::GetChildren { children } => Ok(children),
            other => Err(unexpected(other)),
        }
    }

    /// [`get_children`](Client::get_children) leaving a one-shot watch that fires when
    /// a child is created or deleted, or the node is deleted.
    pub async fn get_children_w(&self, path: &str) -> Result<(Vec<String>, WatchFuture), Error> {
        let request = Request::GetChildren(self.watched(path, true)?);
        let (tx, rx) = oneshot::channel();
        let effect = self.effect(&request, EffectKind::OneShot(OneShotKind::Child, tx));
        match self.call(request, effect).await? {
            Response::GetChildren { children } => Ok((children, WatchFuture::new(rx))),
            other => Err(unexpected(other)),
        }
    }

    /// The node's children and its `Stat` (`getChildren2`).
    pub async fn get_children2(&self, path: &str) -> Result<(Vec<String>, Stat), Error> {
        let request = Request::GetChildren2(self.watched(path, false)?);
        match self.call(request, None).await? {
            Response::GetChildren2 { children, stat } => Ok((children, stat)),
            other => Err(unexpected(other)),
        }
    }

    /// [`get_children2`](Client::get_children2) leaving a child watch.
    pub async fn get_children2_w(
        &self,
        path: &str,
    ) -> Result<(Vec<String>, Stat, WatchFuture), Error> {
        let request = Request::GetChildren2(self.watched(path, true)?);
        let (tx, rx) = oneshot::channel();
        let effect = self.effect(&request, EffectKind::OneShot(OneShotKind::Child, tx));
        match self.call(request, effect).await? {
            Response::GetChildren2 { children, stat } => Ok((children, stat, WatchFuture::new(rx))),
            other => Err(unexpected(other)),
        }
    }

    /// Waits until the server this client is connected to has caught up with the leader
    /// on `path`, so a following read sees every write committed before the sync.
    pub async fn sync(&self, path: &str) -> Result<(), Error> {
        let request = Request::Sync(PathRequest {
            path: self.server_path(path)?,
        });
        self.call(request, None).await.map(drop)
    }

    /// Fails with `BadVersion` unless the node's version is `version` (a one-op multi
    /// with a `check`); `NoNode` if it does not exist.
    pub async fn check(&self, path: &str, version: i32) -> Result<(), Error> {
        self.transaction()
            .check(path, version)
            .commit()
            .await
            .map(drop)
            .map_err(|err| match err {
                Error::MultiFailed { code, .. } => Error::Keeper(code),
                other => other,
            })
    }

    /// A builder for a multi: ops applied all together or not at all.
    ///
    /// ```no_run
    /// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
    /// use paddock_client::CreateMode;
    /// let results = client
    ///     .transaction()
    ///     .create("/job", b"", CreateMode::Persistent)
    ///     .set_data("/config", b"v2", Some(3))
    ///     .check("/leader", 7)
    ///     .delete("/stale", None)
    ///     .commit()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn transaction(&self) -> Transaction {
        Transaction::new(self.clone())
    }

    /// Several reads (getData / getChildren) in one round trip (`multiRead`); each op has
    /// its own result, an `OpResult::Error` for the ones that failed.
    pub async fn multi_read(
        &self,
        ops: impl IntoIterator<Item = ReadOp>,
    ) -> Result<Vec<OpResult>, Error> {
        let mut requests = Vec::new();
        for op in ops {
            requests.push(match op {
                ReadOp::GetData(path) => Request::GetData(self.watched(&path, false)?),
                ReadOp::GetChildren(path) => Request::GetChildren(self.watched(&path, false)?),
            });
        }
        match self.call(Request::MultiRead(requests), None).await? {
            Response::Multi(results) => Ok(results),
            other => Err(unexpected(other)),
        }
    }

    /// Adds a persistent watch (ZooKeeper 3.6+): unlike a one-shot watch it stays until
    /// removed, and a recursive one also covers every node below `path`. Returns the
    /// stream of its events.
    pub async fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> Result<PersistentWatch, Error> {
        let server_path = self.server_path(path)?;
        let request = Request::AddWatch(AddWatchRequest {
            path: server_path.clone(),
            mode: mode as i32,
        });
        let id = NEXT_WATCH_ID.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let effect = Effect {
            path: server_path.clone(),
            kind: EffectKind::Persistent { mode, id, tx },
        };
        self.call(request, Some(effect)).await?;
        Ok(PersistentWatch::new(
            rx,
            self.inner.commands.downgrade(),
            server_path,
            mode,
            id,
        ))
    }

    /// Removes this session's watches of `watcher_type` on `path`, on the server and
    /// locally: each removed watch gets a `DataWatchRemoved`, `ChildWatchRemoved` or
    /// `PersistentWatchRemoved` event. `NoWatcher` if there was none.
    ///
    /// ZooKeeper 3.8 removes a path's watches more coarsely than asked (`Data` also takes
    /// a persistent watch's data events, and it knows no `Persistent*` types at all), so
    /// the client asks for `Any` where needed and re-arms the path's other watches
    /// straight after, relative to the last zxid seen: no event is lost in between.
    pub async fn remove_watches(&self, path: &str, watcher_type: WatcherType) -> Result<(), Error> {
        let server_path = self.server_path(path)?;
        let on_wire = match watcher_type {
            WatcherType::Persistent | WatcherType::PersistentRecursive => WatcherType::Any,
            other => other,
        };
        let request = Request::RemoveWatches(WatchesRequest {
            path: server_path.clone(),
            watcher_type: on_wire as i32,
        });
        let effect = Effect {
            path: server_path,
            kind: EffectKind::Remove(watcher_type),
        };
        self.call(request, Some(effect)).await.map(drop)
    }

    /// Whether the server holds a watch of `watcher_type` on `path` for this session
    /// (`checkWatches`): `Ok` if so, `NoWatcher` if not. ZooKeeper 3.8 answers the
    /// `Persistent*` types with `MarshallingError`; `Any` covers persistent watches too.
    pub async fn check_watches(&self, path: &str, watcher_type: WatcherType) -> Result<(), Error> {
        let request = Request::CheckWatches(WatchesRequest {
            path: self.server_path(path)?,
            watcher_type: watcher_type as i32,
        });
        self.call(request, None).await.map(drop)
    }

    /// The paths of this session's ephemeral nodes under `prefix` (a path prefix, not
    /// necessarily a node; `/` for all).
    pub async fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>, Error> {
        let request = Request::GetEphemerals(PathRequest {
            path: self.server_path(prefix)?,
        });
        match self.call(request, None).await? {
            Response::Ephemerals(paths) => Ok(paths
                .iter()
                .filter_map(|path| self.inner.chroot.strip_within(path))
                .collect()),
            other => Err(unexpected(other)),
        }
    }

    /// The number of nodes below `path`, at any depth.
    pub async fn get_all_children_number(&self, path: &str) -> Result<i32, Error> {
        let request = Request::GetAllChildrenNumber(PathRequest {
            path: self.server_path(path)?,
        });
        match self.call(request, None).await? {
            Response::AllChildrenNumber(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    /// The identities this session is authenticated as.
    pub async fn who_am_i(&self) -> Result<Vec<ClientInfo>, Error> {
        match self.call(Request::WhoAmI, None).await? {
            Response::WhoAmI(infos) => Ok(infos),
            other => Err(unexpected(other)),
        }
    }

    /// Adds credentials to the session (`addauth`), e.g. `("digest", b"user:password")`.
    /// They are sent again after every reconnect. If the server refuses them the session
    /// ends in [`SessionState::AuthFailed`].
    pub async fn add_auth(&self, scheme: &str, auth: &[u8]) -> Result<(), Error> {
        let (reply, rx) = oneshot::channel();
        let command = Command::Auth {
            scheme: scheme.to_owned(),
            auth: Bytes::copy_from_slice(auth),
            reply,
        };
        if self.inner.commands.send(command).is_err() {
            return Err(self.terminal_error());
        }
        rx.await.unwrap_or_else(|_| Err(self.terminal_error()))
    }

    /// The ensemble's dynamic configuration (`/zookeeper/config`, read outside any
    /// chroot) and its `Stat`.
    pub async fn get_config(&self) -> Result<(Bytes, Stat), Error> {
        let request = Request::GetData(WatchedPathRequest {
            path: CONFIG_NODE.to_owned(),
            watch: false,
        });
        match self.call(request, None).await? {
            Response::GetData { data, stat } => Ok((data.bytes(), stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Changes the ensemble's membership (`reconfig`); returns the new configuration.
    /// `from_config` is the expected current config version, -1 for any.
    pub async fn reconfig(
        &self,
        joining: &str,
        leaving: &str,
        new_members: &str,
        from_config: i64,
    ) -> Result<(Bytes, Stat), Error> {
        let request = Request::Reconfig(ReconfigRequest {
            joining_servers: joining.to_owned(),
            leaving_servers: leaving.to_owned(),
            new_members: new_members.to_owned(),
            cur_config_id: from_config,
        });
        match self.call(request, None).await? {
            Response::GetData { data, stat } => Ok((data.bytes(), stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Closes the session: the server deletes its ephemeral nodes at once. Every clone of
    /// this handle fails with [`Error::Closed`] afterwards. Closing twice is fine.
    pub async fn close(&self) -> Result<(), Error> {
        let (reply, rx) = oneshot::channel();
        if self.inner.commands.send(Command::Close { reply }).is_ok() {
            // An error only means the task is gone, which is what we want.
            let _ = rx.await;
        }
        Ok(())
    }

    /// Test hook: drops the connection as if the network failed, and keeps the client
    /// from reconnecting for `pause`. A pause longer than the session timeout expires the
    /// session (locally, and on the server for want of pings).
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn debug_drop_connection(&self, pause: Duration) {
        let _ = self.inner.commands.send(Command::DropConnection { pause });
    }

    /// How many connections the session has had so far (1 after `connect`): it grows on
    /// every reconnect, which a cache compares to know when to resync.
    pub(crate) fn connection_epoch(&self) -> u64 {
        self.inner.view.info().connections
    }

    /// `getData` sent now, not when first polled: pipelined reads then reach the server
    /// in the order they were made, and their replies reflect states in that order.
    pub(crate) fn get_data_now(
        &self,
        path: &str,
    ) -> impl std::future::Future<Output = Result<(Bytes, Stat), Error>> + Send + 'static {
        let reply = self
            .watched(path, false)
            .map(|request| self.send_now(Request::GetData(request)));
        async move {
            match reply?.await? {
                Response::GetData { data, stat } => Ok((data.bytes(), stat)),
                other => Err(unexpected(other)),
            }
        }
    }

    /// `getChildren` sent now, not when first polled: pipelined listings then reach
    /// the server in the order they were made.
    pub(crate) fn get_children_now(
        &self,
        path: &str,
    ) -> impl std::future::Future<Output = Result<Vec<String>, Error>> + Send + 'static {
        let reply = self
            .watched(path, false)
            .map(|request| self.send_now(Request::GetChildren(request)));
        async move {
            match reply?.await? {
                Response::GetChildren { children } => Ok(children),
                other => Err(unexpected(other)),
            }
        }
    }

    /// `getChildren2` sent now: the listing with the parent's `Stat` (its `pzxid` tells
    /// which incarnation of the parent the children belong to).
    pub(crate) fn get_children2_now(
        &self,
        path: &str,
    ) -> impl std::future::Future<Output = Result<(Vec<String>, Stat), Error>> + Send + 'static
    {
        let reply = self
            .watched(path, false)
            .map(|request| self.send_now(Request::GetChildren2(request)));
        async move {
            match reply?.await? {
                Response::GetChildren2 { children, stat } => Ok((children, stat)),
                other => Err(unexpected(other)),
            }
        }
    }

    /// `getData` with a watch, sent now; the watch is armed if the node exists.
    pub(crate) fn get_data_w_now(
        &self,
        path: &str,
    ) -> Result<(Answer<(Bytes, Stat)>, WatchFuture), Error> {
        let request = Request::GetData(self.watched(path, true)?);
        let (tx, rx) = oneshot::channel();
        let effect = self.effect(&request, EffectKind::OneShot(OneShotKind::Data, tx));
        let reply = self.send_now_with(request, effect);
        let read = async move {
            match reply.await? {
                Response::GetData { data, stat } => Ok((data.bytes(), stat)),
                other => Err(unexpected(other)),
            }
        };
        Ok((Box::pin(read), WatchFuture::new(rx)))
    }

    /// `getChildren2` with a watch, sent now; the watch is armed if the node exists.
    pub(crate) fn get_children2_w_now(
        &self,
        path: &str,
    ) -> Result<(Answer<Listing>, WatchFuture), Error> {
        let request = Request::GetChildren2(self.watched(path, true)?);
        let (tx, rx) = oneshot::channel();
        let effect = self.effect(&request, EffectKind::OneShot(OneShotKind::Child, tx));
        let reply = self.send_now_with(request, effect);
        let read = async move {
            match reply.await? {
                Response::GetChildren2 { children, stat } => Ok((children, stat)),
                other => Err(unexpected(other)),
            }
        };
        Ok((Box::pin(read), WatchFuture::new(rx)))
    }

    /// `exists` with a watch, sent now: the watch fires on creation, or on the next
    /// change if the node exists.
    pub(crate) fn exists_w_now(
        &self,
        path: &str,
    ) -> Result<(Answer<Option<Stat>>, WatchFuture), Error> {
        let request = Request::Exists(self.watched(path, true)?);
        let (tx, rx) = oneshot::channel();
        let effect = self.effect(&request, EffectKind::Exists(tx));
        let reply = self.send_now_with(request, effect);
        let read = async move {
            match reply.await {
                Ok(Response::Stat(stat)) => Ok(Some(stat)),
                Ok(other) => Err(unexpected(other)),
                Err(Error::Keeper(paddock_wire::ErrorCode::NoNode)) => Ok(None),
                Err(err) => Err(err),
            }
        };
        Ok((Box::pin(read), WatchFuture::new(rx)))
    }

    /// Hands `request` to the session at once and returns the wait for its reply.
    fn send_now(
        &self,
        request: Request,
    ) -> impl std::future::Future<Output = Result<Response, Error>> + Send + 'static {
        self.send_now_with(request, None)
    }

    /// [`send_now`](Client::send_now) with a change to the watch table.
    fn send_now_with(
        &self,
        request: Request,
        effect: Option<Effect>,
    ) -> impl std::future::Future<Output = Result<Response, Error>> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let command = Command::Request {
            request,
            reply,
            effect,
        };
        let sent = self.inner.commands.send(command).is_ok();
        let view = self.inner.view.clone();
        let terminal = move || view.state.borrow().terminal_error();
        async move {
            if !sent {
                return Err(terminal());
            }
            rx.await.unwrap_or_else(|_| Err(terminal()))
        }
    }

    /// Sends one request and waits for its reply.
    pub(crate) async fn call(
        &self,
        request: Request,
        effect: Option<Effect>,
    ) -> Result<Response, Error> {
        let (reply, rx) = oneshot::channel();
        let command = Command::Request {
            request,
            reply,
            effect,
        };
        if self.inner.commands.send(command).is_err() {
            return Err(self.terminal_error());
        }
        rx.await.unwrap_or_else(|_| Err(self.terminal_error()))
    }

    /// Why the session task no longer answers: it set the state before it went.
    fn terminal_error(&self) -> Error {
        self.state().terminal_error()
    }

    /// Validates a client path and turns it into a server path.
    pub(crate) fn server_path(&self, path: &str) -> Result<String, Error> {
        validate(path, false)?;
        Ok(self.inner.chroot.apply(path))
    }

    pub(crate) fn strip(&self, server_path: &str) -> String {
        self.inner.chroot.strip(server_path)
    }

    fn watched(&self, path: &str, watch: bool) -> Result<WatchedPathRequest, Error> {
        Ok(WatchedPathRequest {
            path: self.server_path(path)?,
            watch,
        })
    }

    fn effect(&self, request: &Request, kind: EffectKind) -> Option<Effect> {
        request.path().map(|path| Effect {
            path: path.to_owned(),
            kind,
        })
    }

    /// The create request for `options`: create or create2, createContainer for
    /// containers, createTTL for TTL modes.
    pub(crate) fn create_request(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
        with_stat: bool,
    ) -> Result<Request, Error> {
        let mode = options.mode;
        validate(path, mode.is_sequential())?;
        let path = if mode.is_sequential() && path.ends_with('/') {
            // "/" + sequence under the chroot's root: keep the slash.
            format!("{}{path}", self.inner.chroot.as_str())
        } else {
            self.inner.chroot.apply(path)
        };
        let data = Bytes::copy_from_slice(data);
        let acl = options.acl.clone();
        let flags = mode.flags();
        if mode.is_ttl() {
            let ttl = options
                .ttl
                .map(|ttl| ttl.as_millis())
                .filter(|ms| (1..=MAX_TTL_MS).contains(ms))
                .ok_or_else(|| {
                    Error::BadArguments(format!("{mode:?} needs a TTL between 1 ms and 2^40-1 ms"))
                })?;
            return Ok(Request::CreateTtl(CreateTtlRequest {
                path,
                data: data.into(),
                acl,
                flags,
                ttl: i64::try_from(ttl).unwrap_or(i64::MAX),
            }));
        }
        if options.ttl.is_some() {
            return Err(Error::BadArguments(format!("{mode:?} takes no TTL")));
        }
        let request = CreateRequest {
            path,
            data: data.into(),
            acl,
            flags,
        };
        Ok(if mode.is_container() {
            Request::CreateContainer(request)
        } else if with_stat {
            Request::Create2(request)
        } else {
            Request::Create(request)
        })
    }
}

pub(crate) fn validate(path: &str, sequential: bool) -> Result<(), Error> {
    validate_path(path, sequential).map_err(|reason| Error::InvalidPath {
        path: path.to_owned(),
        reason,
    })
}

/// A reply whose shape does not fit the request: the server broke the protocol.
pub(crate) fn unexpected(response: Response) -> Error {
    Error::Protocol(format!("unexpected reply {response:?}"))
}

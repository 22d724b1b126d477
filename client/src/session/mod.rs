//! The session task: the one task that owns the socket.
//!
//! Client handles send it [`Command`]s over a channel. It gives each request an xid,
//! writes queued requests in batches (one buffer, one write syscall), matches replies to
//! requests by xid, dispatches notifications to the watch table, pings when the
//! connection has been idle for a third of the session timeout, and on connection loss
//! reconnects to the next server with the session id, password and last zxid seen, then
//! re-arms every watch with `setWatches2` and replays `addauth`s.
//!
//! Ordering rules it keeps:
//! - frames are handled in arrival order, so a notification reaches its watch before
//!   any later reply completes;
//! - on a new connection, `setWatches2` and auth go out before any queued request;
//! - a reply registers its watch before the next frame is read.

mod conn;
mod watches;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use paddock_wire::codec::write_frame;
use paddock_wire::{
    AddWatchMode, AuthPacket, ConnectRequest, ConnectResponse, ErrorCode, OpCode, Reader, Record,
    ReplyHeader, Request, Response, SetWatches2, WatcherEvent, WatcherType, WatchesRequest, Xid,
};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{sleep_until, timeout_at, Instant};

use crate::backoff::Backoff;
use crate::connect_string::Chroot;
use crate::error::Error;
use crate::options::{ConnectOptions, SessionCredentials};
use crate::state::SessionState;
use crate::tls::TlsOptions;
use crate::watch::{OneShotSender, StreamSender};
use conn::{handshake, Conn, HostList};
pub(crate) use watches::OneShotKind;
use watches::WatchTable;

/// Stop taking commands while this much is waiting to be written: the channel then
/// holds the rest, and the socket sets the pace.
const WRITE_BATCH_LIMIT: usize = 256 * 1024;

/// The first pause between two rounds of connection attempts; it doubles each round.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// The longest pause between two rounds of connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

pub(crate) type ReplySender = oneshot::Sender<Result<Response, Error>>;

/// What a client handle asks of the session task.
pub(crate) enum Command {
    Request {
        request: Request,
        reply: ReplySender,
        /// What to do to the watch table when the reply comes back.
        effect: Option<Effect>,
    },
    /// `addauth`, sent with xid -4 and replayed on every reconnect.
    Auth {
        scheme: String,
        auth: Bytes,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// A [`PersistentWatch`](crate::PersistentWatch) was dropped.
    Unwatch {
        path: String,
        mode: AddWatchMode,
        id: u64,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
    /// Test hook: drop the socket as if the network failed, and make no attempt to
    /// reconnect for `pause`.
    #[cfg(feature = "test-hooks")]
    DropConnection {
        pause: Duration,
    },
}

/// A change to the watch table that a successful reply makes. `path` is a server path.
pub(crate) struct Effect {
    pub path: String,
    pub kind: EffectKind,
}

pub(crate) enum EffectKind {
    /// getData / getChildren with a watch: armed if the read succeeded.
    OneShot(OneShotKind, OneShotSender),
    /// exists with a watch: a data watch if the node exists, an exist watch if not.
    Exists(OneShotSender),
    /// addWatch.
    Persistent {
        mode: AddWatchMode,
        id: u64,
        tx: StreamSender,
    },
    /// removeWatches: drop the local watches of this type, then re-arm the others on the
    /// path (ZooKeeper 3.8 removes more than asked: see [`Client::remove_watches`]).
    ///
    /// [`Client::remove_watches`]: crate::Client::remove_watches
    Remove(WatcherType),
    /// The session's own removeWatches of a dropped persistent watch: re-arm whatever
    /// else is watched on the path.
    Rearm,
}

/// A packet the session sends on its own behalf.
enum Outgoing {
    Request(Request, Option<Effect>),
    /// `setWatches2` (xid -8) for the watches of one path.
    Rearm(SetWatches2),
}

/// A request on the wire, waiting for its reply.
struct Pending {
    op: OpCode,
    /// `None` for the session's own requests (closeSession, removing dropped watches).
    reply: Option<ReplySender>,
    effect: Option<Effect>,
}

/// The session as client handles see it, without asking the task: its state and the
/// id, password and timeout of the current session. Only the session task writes it.
#[derive(Debug)]
pub(crate) struct SessionView {
    pub state: watch::Sender<SessionState>,
    pub info: Mutex<SessionInfo>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct SessionInfo {
    pub session_id: i64,
    pub password: Bytes,
    pub timeout: Duration,
    /// The server of the current (or last) connection.
    pub server: Option<SocketAddr>,
    /// How many connections the session has had: a reader that sees it grow knows it
    /// may have missed what persistent watches do not replay (the caches resync on it).
    pub connections: u64,
}

impl SessionView {
    pub fn info(&self) -> SessionInfo {
        // A poisoned lock only means a panic elsewhere; the data is plain values.
        self.info
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// Why [`Session::find_server`] found no server for the session.
enum NoServer {
    /// No server took it by the deadline, every one refused the connection, or one
    /// declared the session expired: the error says which.
    Failed(Error),
    /// A close was asked for meanwhile (or every handle was dropped).
    Ended(SessionState),
}

/// Why [`Session::serve`] returned.
enum ConnEnd {
    /// The connection broke; the session may live on.
    Lost,
    /// The session is over.
    Terminal(SessionState),
}

pub(crate) struct Session {
    view: Arc<SessionView>,
    commands: mpsc::UnboundedReceiver<Command>,
    hosts: HostList,
    chroot: Chroot,
    requested_timeout: Duration,
    read_only: bool,
    max_frame: usize,
    /// TLS for every connection, when the servers' port is a secure one.
    tls: Option<TlsOptions>,
    session_id: i64,
    password: Bytes,
    /// The negotiated session timeout.
    timeout: Duration,
    /// The zxid of the newest reply; sent on reconnect so that no server behind it takes
    /// the session, and as the point from which re-armed watches fire.
    last_zxid: i64,
    /// ZooKeeper's client asks a read-write server for a fresh session until it has
    /// seen one, since a read-only server's session id is only local to it.
    seen_rw_server: bool,
    next_xid: i32,
    pending: HashMap<i32, Pending>,
    /// Auth replies come back in order, with xid -4; `None` for replayed auths.
    auth_waiters: VecDeque<Option<oneshot::Sender<Result<(), Error>>>>,
    auth_data: Vec<(String, Bytes)>,
    watches: WatchTable,
    /// The connected state to publish once this connection's `setWatches2` packets are
    /// answered: a client that sees `Connected` can count on its watches being armed.
    announce: Option<SessionState>,
    /// `setWatches2` packets (xid -8) sent on this connection and not yet answered.
    rearming: usize,
    /// The session's own packets, decided while handling a frame, to write next.
    outbox: Vec<Outgoing>,
    /// Commands that arrived while disconnected, sent after the next handshake.
    backlog: VecDeque<Command>,
    /// When the last frame arrived from any server: the session cannot outlive this by
    /// more than its timeout.
    last_heard: Instant,
    /// Close was asked for; these handles wait for it.
    closing: Option<Vec<oneshot::Sender<()>>>,
    #[cfg(feature = "test-hooks")]
    paused_until: Option<Instant>,
}

impl Session {
    /// Connects for the first time, trying every server until `deadline`, and sends the
    /// configured credentials. The task is spawned only once this succeeds.
    pub async fn connect(
        servers: Vec<String>,
        chroot: Chroot,
        options: &ConnectOptions,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> Result<(Session, Conn), Error> {
        let credentials = options.session.clone().unwrap_or(SessionCredentials {
            session_id: 0,
            password: Bytes::from_static(&[0; 16]),
        });
        let (state, _) = watch::channel(SessionState::Disconnected);
        let mut session = Session {
            view: Arc::new(SessionView {
                state,
                info: Mutex::new(SessionInfo::default()),
            }),
            commands,
            hosts: HostList::new(servers),
            chroot,
            requested_timeout: options.session_timeout,
            read_only: options.read_only,
            max_frame: options.max_frame,
            tls: options.tls.clone(),
            session_id: credentials.session_id,
            password: credentials.password,
            timeout: options.session_timeout,
            last_zxid: 0,
            seen_rw_server: credentials.session_id != 0,
            next_xid: 1,
            pending: HashMap::new(),
            auth_waiters: VecDeque::new(),
            auth_data: Vec::new(),
            watches: WatchTable::default(),
            announce: None,
            rearming: 0,
            outbox: Vec::new(),
            backlog: VecDeque::new(),
            last_heard: Instant::now(),
            closing: None,
            #[cfg(feature = "test-hooks")]
            paused_until: None,
        };
        let deadline = Instant::now() + options.connect_timeout.unwrap_or(options.session_timeout);
        let mut conn = match session
            .find_server(deadline, options.fail_fast_when_refused)
            .await
        {
            Ok(conn) => conn,
            Err(NoServer::Failed(err)) => return Err(err),
            // Nothing can ask for a close before `connect` returns the handle.
            Err(NoServer::Ended(state)) => return Err(state.terminal_error()),
        };
        session
            .authenticate(&mut conn, &options.auth, deadline)
            .await?;
        session.announce_if_armed();
        Ok((session, conn))
    }

    pub fn view(&self) -> Arc<SessionView> {
        self.view.clone()
    }

    /// The task: serves connections and reconnects until the session ends.
    pub async fn run(mut self, mut conn: Conn) {
        loop {
            match self.serve(conn).await {
                ConnEnd::Lost => {}
                ConnEnd::Terminal(state) => return self.finish(state),
            }
            self.fail_pending(&Error::ConnectionLoss);
            // Whatever this connection still meant to send or announce is moot: the next
            // one re-arms every watch from scratch.
            self.outbox.clear();
            self.announce = None;
            self.set_state(SessionState::Disconnected);
            conn = match self.reconnect().await {
                Ok(conn) => conn,
                Err(state) => return self.finish(state),
            };
        }
    }

    fn connect_request(&self) -> ConnectRequest {
        let (session_id, passwd) = if self.seen_rw_server {
            (self.session_id, self.password.clone())
        } else {
            (0, Bytes::from_static(&[0; 16]))
        };
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            timeout: duration_ms(self.requested_timeout),
            session_id,
            passwd,
            read_only: Some(self.read_only),
        }
    }

    /// Takes the session the server handed out; false if it refused (timeout 0: the
    /// session expired, or the password was wrong).
    fn accept(&mut self, response: &ConnectResponse, server: SocketAddr) -> bool {
        if response.timeout <= 0 {
            return false;
        }
        let read_only = response.read_only == Some(true);
        self.session_id = response.session_id;
        self.password = response.passwd.clone();
        self.timeout = Duration::from_millis(u64::try_from(response.timeout).unwrap_or(0));
        self.seen_rw_server |= !read_only;
        self.last_heard = Instant::now();
        let mut info = self
            .view
            .info
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *info = SessionInfo {
            session_id: self.session_id,
            password: self.password.clone(),
            timeout: self.timeout,
            server: Some(server),
            connections: info.connections + 1,
        };
        drop(info);
        self.announce = Some(if read_only {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::Connected
        });
        tracing::debug!(
            session_id = format_args!("{:#x}", self.session_id),
            timeout_ms = response.timeout,
            read_only,
            "session established"
        );
        true
    }

    /// Sends the connect options' credentials on the first connection and waits for the
    /// server's verdict, so `connect` fails if they are refused.
    async fn authenticate(
        &mut self,
        conn: &mut Conn,
        auth: &[(String, Vec<u8>)],
        deadline: Instant,
    ) -> Result<(), Error> {
        if auth.is_empty() {
            return Ok(());
        }
        let mut out = BytesMut::new();
        for (scheme, data) in auth {
            let auth = Bytes::from(data.clone());
            self.encode_auth(&mut out, scheme, &auth)?;
            self.auth_data.push((scheme.clone(), auth));
        }
        conn.writer.write_all(&out).await?;
        conn.writer.flush().await?;
        for _ in auth {
            let frame = match timeout_at(deadline, conn.frames.next()).await {
                Ok(Some(Ok(frame))) => frame,
                Ok(_) => return Err(Error::ConnectionLoss),
                Err(_) => return Err(Error::Timeout),
            };
            let header = ReplyHeader::decode(&mut Reader::new(frame))?;
            if header.xid == Xid::Auth.as_i32() && !header.err.is_ok() {
                self.set_state(SessionState::AuthFailed);
                return Err(Error::from_code(header.err));
            }
        }
        self.last_heard = Instant::now();
        Ok(())
    }

    /// One connection's life: prime it, then read, write, ping and take commands until
    /// it breaks or the session ends.
    async fn serve(&mut self, conn: Conn) -> ConnEnd {
        let Conn {
            mut frames,
            mut writer,
            addr,
        } = conn;
        let mut out = BytesMut::new();
        if let Err(end) = self.prime(&mut out) {
            return end;
        }
        let ping_after = self.timeout / 3;
        let read_timeout = self.timeout * 2 / 3;
        let mut last_send = Instant::now();
        let mut last_recv = Instant::now();
        let mut unflushed = false;
        // One timer for both deadlines, moved only when it fires: the deadlines only
        // move later as frames come and go, so it never fires late, and a busy
        // connection does not register and cancel a timer on every frame.
        let keepalive = sleep_until(last_send + ping_after.min(read_timeout));
        tokio::pin!(keepalive);
        loop {
            let take_commands = out.len() < WRITE_BATCH_LIMIT && self.closing.is_none();
            tokio::select! {
                // Reading first keeps replies and notifications flowing under load.
                biased;
                frame = frames.next() => match frame {
                    Some(Ok(frame)) => {
                        last_recv = Instant::now();
                        self.last_heard = last_recv;
                        if let Some(end) = self.on_frame(frame) {
                            return end;
                        }
                        self.flush_outbox(&mut out);
                    }
                    // A reset or broken socket is a lost connection, not bad data.
                    Some(Err(paddock_wire::codec::FrameError::Io(err))) => {
                        tracing::info!(%addr, %err, "connection to the server lost");
                        return self.connection_lost();
                    }
                    Some(Err(err)) => {
                        tracing::warn!(%addr, %err, "bad frame from server");
                        return self.connection_lost();
                    }
                    None => {
                        tracing::debug!(%addr, "server closed the connection");
                        return self.connection_lost();
                    }
                },
                // A TLS session may hold back what was written until it is flushed.
                sent = send(&mut writer, &out), if !out.is_empty() || unflushed => match sent {
                    Ok(Sent::Wrote(n)) if n > 0 => {
                        out.advance(n);
                        last_send = Instant::now();
                        unflushed = true;
                    }
                    Ok(Sent::Flushed) => unflushed = false,
                    Ok(Sent::Wrote(_)) => return self.connection_lost(),
                    Err(err) => {
                        tracing::debug!(%addr, %err, "write failed");
                        return self.connection_lost();
                    }
                },
                command = self.commands.recv(), if take_commands => {
                    let Some(command) = command else {
                        // Every handle is gone: close the session politely.
                        self.begin_close(None, &mut out);
                        continue;
                    };
                    if let Err(end) = self.submit(command, &mut out) {
                        return end;
                    }
                    // Batch whatever else is queued into the same write.
                    while out.len() < WRITE_BATCH_LIMIT && self.closing.is_none() {
                        let Ok(command) = self.commands.try_recv() else { break };
                        if let Err(end) = self.submit(command, &mut out) {
                            return end;
                        }
                    }
                },
                () = &mut keepalive => {
                    let now = Instant::now();
                    let silent_until = last_recv + read_timeout;
                    if now >= silent_until {
                        tracing::info!(
                            %addr,
                            "no reply from the server in {} ms, reconnecting",
                            read_timeout.as_millis()
                        );
                        return self.connection_lost();
                    }
                    let ping_at = last_send + ping_after;
                    // Output still queued will move `last_send` when it goes out: no
                    // ping is needed behind it.
                    if now >= ping_at && out.is_empty() {
                        self.encode(&mut out, Xid::Ping.as_i32(), &Request::Ping);
                    }
                    // Once a ping is queued (or output is stuck), the next one is due a
                    // full interval after whatever is written next, so no earlier than this.
                    let next_ping = if ping_at > now { ping_at } else { now + ping_after };
                    keepalive.as_mut().reset(next_ping.min(silent_until));
                },
            }
        }
    }

    /// What opens every connection: the watches to re-arm (xid -8), the auths to replay
    /// (xid -4), then the requests that waited for the connection.
    fn prime(&mut self, out: &mut BytesMut) -> Result<(), ConnEnd> {
        self.rearming = 0;
        // Must re-arm watches before any request goes out: a read sent first could see a
        // change whose event the unarmed watch would miss.
        for packet in self.watches.rearm(self.last_zxid) {
            self.encode(out, Xid::SetWatches.as_i32(), &Request::SetWatches2(packet));
            self.rearming += 1;
        }
        self.announce_if_armed();
        // Must replay auth before the backlog: its requests may need the identities.
        for (scheme, auth) in self.auth_data.clone() {
            if self.encode_auth(out, &scheme, &auth).is_ok() {
                self.auth_waiters.push_back(None);
            }
        }
        while let Some(command) = self.backlog.pop_front() {
            self.submit(command, out)?;
        }
        Ok(())
    }

    /// Handles one command while connected.
    fn submit(&mut self, command: Command, out: &mut BytesMut) -> Result<(), ConnEnd> {
        match command {
            Command::Request {
                request,
                reply,
                effect,
            } => {
                if let Some(Effect {
                    path,
                    kind: EffectKind::Remove(watcher_type),
                }) = &effect
                {
                    // Persistent watches go out as `Any` (ZooKeeper 3.8 knows no finer
                    // type); only a local one makes that worth sending.
                    let mode = match watcher_type {
                        WatcherType::Persistent => Some(AddWatchMode::Persistent),
                        WatcherType::PersistentRecursive => Some(AddWatchMode::PersistentRecursive),
                        _ => None,
                    };
                    if mode.is_some_and(|mode| !self.watches.has_persistent(mode, path)) {
                        let _ = reply.send(Err(Error::Keeper(ErrorCode::NoWatcher)));
                        return Ok(());
                    }
                }
                let xid = self.take_xid();
                let op = request.op_code();
                if let Err(err) = self.try_encode(out, xid, &request) {
                    let _ = reply.send(Err(err));
                    return Ok(());
                }
                self.pending.insert(
                    xid,
                    Pending {
                        op,
                        reply: Some(reply),
                        effect,
                    },
                );
            }
            Command::Auth {
                scheme,
                auth,
                reply,
            } => match self.encode_auth(out, &scheme, &auth) {
                Ok(()) => {
                    self.auth_data.push((scheme, auth));
                    self.auth_waiters.push_back(Some(reply));
                }
                Err(err) => {
                    let _ = reply.send(Err(err));
                }
            },
            Command::Unwatch { path, mode, id } => {
                if self.watches.drop_persistent(mode, &path, id) {
                    self.unwatch_server(path);
                    self.flush_outbox(out);
                }
            }
            Command::Close { reply } => self.begin_close(Some(reply), out),
            #[cfg(feature = "test-hooks")]
            Command::DropConnection { pause } => {
                self.paused_until = Some(Instant::now() + pause);
                return Err(ConnEnd::Lost);
            }
        }
        Ok(())
    }

    /// Queues the removal of a persistent watch nobody listens to any more. ZooKeeper 3.8
    /// can only remove a path's watches all together (`Any`), so the reply re-arms the
    /// path's other watches, from the last zxid seen so nothing in between is missed.
    fn unwatch_server(&mut self, path: String) {
        let request = Request::RemoveWatches(WatchesRequest {
            path: path.clone(),
            watcher_type: WatcherType::Any as i32,
        });
        let effect = Effect {
            path,
            kind: EffectKind::Rearm,
        };
        self.outbox.push(Outgoing::Request(request, Some(effect)));
    }

    fn flush_outbox(&mut self, out: &mut BytesMut) {
        for outgoing in std::mem::take(&mut self.outbox) {
            match outgoing {
                Outgoing::Request(request, effect) => {
                    let xid = self.take_xid();
                    self.encode(out, xid, &request);
                    self.pending.insert(
                        xid,
                        Pending {
                            op: request.op_code(),
                            reply: None,
                            effect,
                        },
                    );
                }
                Outgoing::Rearm(packet) => {
                    self.encode(out, Xid::SetWatches.as_i32(), &Request::SetWatches2(packet));
                    self.rearming += 1;
                }
            }
        }
    }

    fn begin_close(&mut self, reply: Option<oneshot::Sender<()>>, out: &mut BytesMut) {
        let waiters = self.closing.get_or_insert_with(Vec::new);
        waiters.extend(reply);
        if waiters.len() > 1 {
            return;
        }
        self.outbox
            .push(Outgoing::Request(Request::CloseSession, None));
        self.flush_outbox(out);
    }

    fn connection_lost(&self) -> ConnEnd {
        if self.closing.is_some() {
            ConnEnd::Terminal(SessionState::Closed)
        } else {
            ConnEnd::Lost
        }
    }

    /// Handles one frame from the server; `Some` ends the connection.
    fn on_frame(&mut self, frame: Bytes) -> Option<ConnEnd> {
        let mut reader = Reader::new(frame);
        let header = match ReplyHeader::decode(&mut reader) {
            Ok(header) => header,
            Err(err) => {
                tracing::warn!(%err, "undecodable reply header");
                return Some(self.connection_lost());
            }
        };
        tracing::trace!(xid = header.xid, zxid = header.zxid, err = %header.err, "frame");
        match Xid::reserved(header.xid) {
            // Dispatched as it arrives, so before any later reply completes.
            Some(Xid::Notification) => match WatcherEvent::decode(&mut reader) {
                Ok(event) => self.watches.dispatch(&event, header.zxid, &self.chroot),
                Err(err) => {
                    tracing::warn!(%err, "undecodable notification");
                    return Some(self.connection_lost());
                }
            },
            Some(Xid::Ping) => {}
            Some(Xid::Auth) => {
                let waiter = self.auth_waiters.pop_front().flatten();
                let failed = header.err == ErrorCode::AuthFailed;
                let result = if header.err.is_ok() {
                    Ok(())
                } else {
                    Err(Error::from_code(header.err))
                };
                if let Some(waiter) = waiter {
                    let _ = waiter.send(result);
                }
                if failed {
                    tracing::warn!("authentication failed");
                    return Some(ConnEnd::Terminal(SessionState::AuthFailed));
                }
            }
            Some(Xid::SetWatches) => {
                if !header.err.is_ok() {
                    tracing::warn!(err = %header.err, "re-arming watches failed");
                }
                self.rearming = self.rearming.saturating_sub(1);
                self.announce_if_armed();
            }
            None => return self.on_reply(header, reader),
        }
        None
    }

    fn on_reply(&mut self, header: ReplyHeader, mut reader: Reader) -> Option<ConnEnd> {
        if header.zxid > self.last_zxid {
            self.last_zxid = header.zxid;
        }
        let Some(pending) = self.pending.remove(&header.xid) else {
            tracing::warn!(xid = header.xid, "reply to no request");
            return None;
        };
        if pending.reply.is_none() && !header.err.is_ok() {
            tracing::debug!(op = ?pending.op, err = %header.err, "internal request failed");
        }
        if pending.op == OpCode::CloseSession {
            return Some(ConnEnd::Terminal(SessionState::Closed));
        }
        let mut broken = false;
        let result = if header.err.is_ok() {
            Response::decode(pending.op, &mut reader).map_err(|err| {
                tracing::warn!(%err, op = ?pending.op, "undecodable reply");
                broken = true;
                Error::from(err)
            })
        } else {
            Err(Error::from_code(header.err))
        };
        // Must arm the watch before the next frame is read: that frame may be its event.
        if let Some(effect) = pending.effect {
            self.apply(effect, &result);
        }
        if let Some(reply) = pending.reply {
            let _ = reply.send(result);
        }
        broken.then_some(ConnEnd::Lost)
    }

    /// Arms or removes watches as a reply allows: ZooKeeper arms a watch only when the
    /// read succeeded, or for exists also when the node is missing.
    fn apply(&mut self, effect: Effect, result: &Result<Response, Error>) {
        let ok = result.is_ok();
        let no_node = matches!(result, Err(Error::Keeper(ErrorCode::NoNode)));
        let Effect { path, kind } = effect;
        match kind {
            EffectKind::OneShot(kind, tx) if ok => self.watches.add_one_shot(kind, path, tx),
            EffectKind::Exists(tx) if ok => self.watches.add_one_shot(OneShotKind::Data, path, tx),
            EffectKind::Exists(tx) if no_node => {
                self.watches.add_one_shot(OneShotKind::Exist, path, tx)
            }
            EffectKind::Persistent { mode, id, tx } if ok => {
                if !tx.is_closed() {
                    self.watches.add_persistent(mode, path, id, tx);
                } else if !self.watches.has_persistent(mode, &path) {
                    // The caller gave up waiting for the watch: take it back.
                    self.unwatch_server(path);
                }
            }
            EffectKind::Remove(watcher_type) if ok => {
                self.watches.remove(&path, watcher_type, &self.chroot);
                self.rearm_path(&path);
            }
            EffectKind::Rearm => self.rearm_path(&path),
            _ => {}
        }
    }

    fn rearm_path(&mut self, path: &str) {
        if let Some(packet) = self.watches.rearm_path(path, self.last_zxid) {
            self.outbox.push(Outgoing::Rearm(packet));
        }
    }

    /// Finds a server for the session again, within the session timeout.
    async fn reconnect(&mut self) -> Result<Conn, SessionState> {
        let expiry = self.last_heard + self.timeout;
        #[cfg(feature = "test-hooks")]
        if let Some(until) = self.paused_until.take() {
            self.while_disconnected(sleep_until(until.min(expiry)))
                .await?;
        }
        match self.find_server(expiry, false).await {
            Ok(conn) => Ok(conn),
            Err(NoServer::Failed(Error::SessionExpired)) => Err(SessionState::Expired),
            Err(NoServer::Failed(_)) => {
                tracing::warn!(
                    "no server reachable for the session timeout ({} ms): session expired",
                    self.timeout.as_millis()
                );
                Err(SessionState::Expired)
            }
            Err(NoServer::Ended(state)) => Err(state),
        }
    }

    /// Tries the servers round-robin, pausing between rounds, until one takes the
    /// session or `deadline` passes: the one loop behind the first connect and every
    /// reconnect. Commands that arrive meanwhile are queued; a close ends the search.
    /// With `fail_fast_when_refused`, a round in which every server refused the
    /// connection ends it too.
    async fn find_server(
        &mut self,
        deadline: Instant,
        fail_fast_when_refused: bool,
    ) -> Result<Conn, NoServer> {
        let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        // A refused connection says more than the deadline that cut the next attempt.
        let mut last_error = None;
        // This round's hosts, while every one of them has refused.
        let mut refused: Option<Vec<String>> = Some(Vec::new());
        // Checked before each attempt (a reconnect may start late) and after it (so a
        // deadline passed takes precedence over the round's verdict).
        let out_of_time = |last_error: &mut Option<Error>| {
            (Instant::now() >= deadline)
                .then(|| NoServer::Failed(last_error.take().unwrap_or(Error::Timeout)))
        };
        loop {
            if let Some(end) = out_of_time(&mut last_error) {
                return Err(end);
            }
            let host = self.hosts.next_host().to_owned();
            let request = self.connect_request();
            let tls = self.tls.clone();
            let attempt = timeout_at(
                self.attempt_deadline(deadline),
                handshake(&host, &request, self.max_frame, tls.as_ref()),
            );
            match self
                .while_disconnected(attempt)
                .await
                .map_err(NoServer::Ended)?
            {
                Ok(Ok((conn, response))) => {
                    if !self.accept(&response, conn.addr) {
                        tracing::warn!(%host, "server reports the session expired");
                        return Err(NoServer::Failed(Error::SessionExpired));
                    }
                    return Ok(conn);
                }
                Ok(Err(err)) => {
                    tracing::debug!(%host, %err, "connection attempt failed");
                    refused = match (refused, &err) {
                        // tokio-rustls reports a failed handshake as InvalidData.
                        (Some(mut tried), Error::Io(io))
                            if io.kind() == std::io::ErrorKind::ConnectionRefused
                                || (self.tls.is_some()
                                    && io.kind() == std::io::ErrorKind::InvalidData) =>
                        {
                            tried.push(format!("{host} ({io})"));
                            Some(tried)
                        }
                        _ => None,
                    };
                    last_error = Some(err);
                }
                Err(_) => {
                    tracing::debug!(%host, "connection attempt timed out");
                    refused = None;
                }
            }
            if let Some(end) = out_of_time(&mut last_error) {
                return Err(end);
            }
            if self.hosts.at_round_end() {
                if let Some(tried) = refused.take() {
                    if fail_fast_when_refused && !tried.is_empty() {
                        return Err(NoServer::Failed(Error::Refused { tried }));
                    }
                }
                refused = Some(Vec::new());
                let wake = (Instant::now() + backoff.next_delay()).min(deadline);
                self.while_disconnected(sleep_until(wake))
                    .await
                    .map_err(NoServer::Ended)?;
            }
        }
    }

    /// Like ZooKeeper's client, each attempt gets an equal share of the session timeout
    /// (`sessionTimeout / number of servers`), and never runs past `deadline`.
    fn attempt_deadline(&self, deadline: Instant) -> Instant {
        let servers = u32::try_from(self.hosts.len().max(1)).unwrap_or(u32::MAX);
        let share = (self.timeout / servers).max(Duration::from_millis(100));
        (Instant::now() + share).min(deadline)
    }

    /// Runs `fut` while queueing the commands that arrive meanwhile; a close ends it.
    async fn while_disconnected<F: Future>(&mut self, fut: F) -> Result<F::Output, SessionState> {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                output = &mut fut => return Ok(output),
                command = self.commands.recv() => match command {
                    None => return Err(SessionState::Closed),
                    Some(Command::Close { reply }) => {
                        self.closing.get_or_insert_with(Vec::new).push(reply);
                        return Err(SessionState::Closed);
                    }
                    Some(Command::Unwatch { path, mode, id }) => {
                        // Not re-armed, so the new connection's server never has it.
                        self.watches.drop_persistent(mode, &path, id);
                    }
                    #[cfg(feature = "test-hooks")]
                    Some(Command::DropConnection { .. }) => {}
                    Some(command) => self.backlog.push_back(command),
                },
            }
        }
    }

    /// Ends the session: every waiter learns why, and later calls fail the same way.
    fn finish(mut self, state: SessionState) {
        tracing::debug!(?state, "session ended");
        let error = state.terminal_error();
        // Must set the state before any waiter wakes: handles read it to explain a
        // closed channel.
        self.set_state(state);
        self.fail_pending(&error);
        self.watches.fail_all(&error);
        self.commands.close();
        let leftovers: Vec<Command> = self
            .backlog
            .drain(..)
            .chain(std::iter::from_fn(|| self.commands.try_recv().ok()))
            .collect();
        for command in leftovers {
            match command {
                Command::Request { reply, .. } => {
                    let _ = reply.send(Err(error.clone()));
                }
                Command::Auth { reply, .. } => {
                    let _ = reply.send(Err(error.clone()));
                }
                Command::Close { reply } => {
                    let _ = reply.send(());
                }
                Command::Unwatch { .. } => {}
                #[cfg(feature = "test-hooks")]
                Command::DropConnection { .. } => {}
            }
        }
        for waiter in self.closing.take().into_iter().flatten() {
            let _ = waiter.send(());
        }
    }

    /// Fails every request on the wire: nobody can know whether the server applied it.
    fn fail_pending(&mut self, error: &Error) {
        for (_, pending) in self.pending.drain() {
            if let Some(reply) = pending.reply {
                let _ = reply.send(Err(error.clone()));
            }
        }
        for waiter in self.auth_waiters.drain(..).flatten() {
            let _ = waiter.send(Err(error.clone()));
        }
    }

    fn announce_if_armed(&mut self) {
        if self.rearming == 0 {
            if let Some(state) = self.announce.take() {
                self.set_state(state);
            }
        }
    }

    fn set_state(&self, state: SessionState) {
        self.view.state.send_if_modified(|current| {
            let changed = *current != state;
            *current = state;
            changed
        });
    }

    fn take_xid(&mut self) -> i32 {
        let xid = self.next_xid;
        self.next_xid = if xid == i32::MAX { 1 } else { xid + 1 };
        xid
    }

    fn try_encode(&self, out: &mut BytesMut, xid: i32, request: &Request) -> Result<(), Error> {
        write_frame(out, self.max_frame, |buf| {
            request.encode_with_header(xid, buf)
        })
        .map_err(|err| Error::BadArguments(format!("request not sent: {err}")))
    }

    /// For the session's own small packets, which always fit in a frame.
    fn encode(&self, out: &mut BytesMut, xid: i32, request: &Request) {
        if let Err(err) = self.try_encode(out, xid, request) {
            tracing::error!(%err, "internal packet not sent");
        }
    }

    fn encode_auth(&self, out: &mut BytesMut, scheme: &str, auth: &Bytes) -> Result<(), Error> {
        let packet = Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: scheme.to_owned(),
            auth: auth.clone(),
        });
        self.try_encode(out, Xid::Auth.as_i32(), &packet)
    }
}

/// What one turn of the writing branch did.
enum Sent {
    Wrote(usize),
    Flushed,
}

/// Writes what is pending, or flushes once nothing is.
async fn send(writer: &mut conn::WriteHalf, out: &[u8]) -> std::io::Result<Sent> {
    if out.is_empty() {
        writer.flush().await.map(|()| Sent::Flushed)
    } else {
        writer.write(out).await.map(Sent::Wrote)
    }
}

fn duration_ms(duration: Duration) -> i32 {
    i32::try_from(duration.as_millis()).unwrap_or(i32::MAX)
}

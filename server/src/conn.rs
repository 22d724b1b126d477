//! One task per client connection: the handshake, then requests in, replies and
//! notifications out.
//!
//! Ordering rules (ZooKeeper's): a session's requests complete in the order they were
//! sent; a read queued behind one of the session's pending writes waits for it; a watch
//! event reaches the client before the reply of any later read that reflects the
//! change. The queue below enforces the first two; the third holds because the state
//! machine queues notifications on this connection's channel under the tree's write
//! lock, before it completes the write's waiter, and this task drains that channel
//! after taking the read lock for a read, and after a write's result arrives.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use futures::FutureExt;
use paddock_wire::codec::{write_frame, FrameError};
use paddock_wire::jute::Record;
use paddock_wire::{
    perms, Acl, ConnectRequest, ConnectResponse, ErrorCode, FrameCodec, OpCode, ReplyHeader,
    Request, RequestHeader, Response, Xid,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_util::codec::Decoder;

use crate::acl;
use crate::conn_stats::ConnStats;
use crate::conns::{ConnId, Outbound};
use crate::fourlw;
use crate::monotonic::AtomicInstant;
use crate::outbox::{self, OutboxRx, OutboxTx};
use crate::query::Outcome;
use crate::replicated::Db;
use crate::server::Server;
use crate::session::Caller;
use crate::wait::Completion;
use crate::writes::{Reattach, WriteSlot};

/// Requests one connection may have in flight before the server stops reading it.
const MAX_OUTSTANDING_PER_CONN: usize = 1000;

/// The largest reply: its length must fit the frame's i32 prefix. jute.maxbuffer
/// bounds what the server accepts, not what it answers — ZooKeeper sends a
/// getChildren reply of any size, and the client's own limit decides (the Java
/// client's jute.maxbuffer; kazoo has none).
const MAX_REPLY_FRAME: usize = i32::MAX as usize;

/// The output buffer a connection keeps between turns; a larger one, grown by a
/// burst, is given back once written.
const RETAINED_OUTPUT_CAPACITY: usize = 64 * 1024;

/// Why a connection ended, for the log.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("client closed the connection")]
    Eof,
    #[error("malformed frame: {0}")]
    Frame(#[from] FrameError),
    #[error("malformed packet: {0}")]
    Decode(#[from] paddock_wire::DecodeError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("no handshake within {0:?}")]
    HandshakeTimeout(Duration),
    #[error("{0}")]
    Refused(&'static str),
    #[error("session closed")]
    SessionClosed,
    #[error("server shutting down")]
    Shutdown,
    /// A write's (or sync's) outcome is unknown: its proposal was lost, or the session
    /// refused it because an earlier write of this connection was. ZooKeeper never
    /// answers that with a reply: the connection closes, so the client learns that
    /// everything it had in flight has an unknown outcome, and no later write of the
    /// connection runs after a skipped one.
    #[error("a write's outcome is unknown (lost proposal); closing")]
    WriteLost,
    #[error("watch events overflowed maxClientOutgoingBytes: the client is not reading")]
    Overflow,
    #[error("no output taken for {0:?} with replies waiting: the client is not reading")]
    Stalled(Duration),
}

/// A client connection's two directions: a TCP socket's, or a TLS session's over one.
pub struct ClientStream {
    reader: Box<dyn AsyncRead + Send + Sync + Unpin>,
    writer: Box<dyn AsyncWrite + Send + Sync + Unpin>,
}

impl ClientStream {
    pub fn plain(stream: TcpStream) -> Self {
        let (reader, writer) = stream.into_split();
        ClientStream {
            reader: Box::new(reader),
            writer: Box::new(writer),
        }
    }

    pub fn tls(stream: tokio_rustls::server::TlsStream<TcpStream>) -> Self {
        let (reader, writer) = tokio::io::split(stream);
        ClientStream {
            reader: Box::new(reader),
            writer: Box::new(writer),
        }
    }
}

/// Serves one client connection; `caller` holds what the connection proves of its
/// client (its address, and a TLS client certificate's subject).
pub async fn serve(stream: ClientStream, peer: SocketAddr, caller: Caller, server: Arc<Server>) {
    let conn_id = server.conns.next_id();
    let stats = server
        .metrics
        .connections
        .open(conn_id, peer, server.started);
    let mut conn = Conn {
        id: conn_id,
        peer,
        server: server.clone(),
        reader: stream.reader,
        writer: stream.writer,
        inbuf: BytesMut::with_capacity(4096),
        out: BytesMut::with_capacity(4096),
        codec: FrameCodec::new(server.settings.max_frame),
        session_id: 0,
        heard: Arc::new(AtomicInstant::default()),
        next_write_seq: 1,
        caller,
        queue: VecDeque::new(),
        closing: None,
        stall_limit: server.settings.min_session_timeout,
        stats,
    };
    let result = conn.run().await;
    match &result {
        Ok(()) | Err(ConnError::Eof) | Err(ConnError::SessionClosed) => {
            tracing::debug!(%peer, session = format_args!("{:#x}", conn.session_id), "connection closed")
        }
        Err(e @ (ConnError::Overflow | ConnError::Stalled(_))) => {
            server.metrics.closed_over_backlog();
            tracing::warn!(%peer, session = format_args!("{:#x}", conn.session_id), "closing connection: {e}");
        }
        Err(e) => tracing::info!(%peer, "closing connection: {e}"),
    }
    server.metrics.connections.close(conn_id);
    server.connection_closed(conn_id, conn.session_id);
}

struct Conn {
    id: ConnId,
    peer: SocketAddr,
    server: Arc<Server>,
    reader: Box<dyn AsyncRead + Send + Sync + Unpin>,
    writer: Box<dyn AsyncWrite + Send + Sync + Unpin>,
    inbuf: BytesMut,
    /// Replies and notifications not yet written: flushed once per turn of the loop,
    /// so a burst of replies costs one write.
    out: BytesMut,
    codec: FrameCodec,
    session_id: i64,
    /// When the client was last heard from: the liveness reports read it.
    heard: Arc<AtomicInstant>,
    /// The sequence number of this connection's next write (0 is the txn that made it
    /// the session's holder).
    next_write_seq: u64,
    caller: Caller,
    queue: VecDeque<Pending>,
    /// Set when the connection must close once its replies are written (a failed
    /// `addauth`, which ZooKeeper answers with AuthFailed and a disconnect).
    closing: Option<&'static str>,
    /// How long a write may take no bytes before the connection is closed: the
    /// session timeout, since the session's pings are not read meanwhile either.
    stall_limit: Duration,
    /// What `cons` shows of this connection.
    stats: Arc<ConnStats>,
}

/// A request whose reply has not been written yet, in arrival order.
enum Pending {
    /// Proposed through consensus (or a sync barrier); the result arrives on `rx`.
    Write {
        xid: i32,
        op: OpCode,
        rx: oneshot::Receiver<Completion>,
        arrived: Instant,
    },
    /// A `sync`: answered with its path once the barrier holds.
    Sync {
        xid: i32,
        path: String,
        rx: oneshot::Receiver<Completion>,
        arrived: Instant,
    },
    /// A read (or other local request) behind a pending write of this session.
    Local {
        xid: i32,
        request: Request,
        arrived: Instant,
    },
    /// Refused before it went anywhere; answered in its turn.
    Rejected { xid: i32, code: ErrorCode },
}

impl Conn {
    async fn run(&mut self) -> Result<(), ConnError> {
        let handshake_timeout = self.server.settings.min_session_timeout;
        let first = tokio::time::timeout(handshake_timeout, self.read_exact_prefix())
            .await
            .map_err(|_| ConnError::HandshakeTimeout(handshake_timeout))??;
        if let Some(command) = fourlw::parse(&first) {
            self.stats.received();
            let text = fourlw::run(command, &self.server);
            self.writer.write_all(text.as_bytes()).await?;
            self.writer.shutdown().await?;
            return Ok(());
        }
        let connect = tokio::time::timeout(handshake_timeout, self.read_frame())
            .await
            .map_err(|_| ConnError::HandshakeTimeout(handshake_timeout))??;
        self.stats.received();
        self.wait_until_ready(handshake_timeout).await?;
        let request = ConnectRequest::decode(&mut paddock_wire::Reader::new(connect))?;
        let (outbound_tx, outbound_rx) = outbox::channel(self.server.settings.max_client_outgoing);
        self.handshake(request, outbound_tx).await?;
        self.serve_requests(outbound_rx).await
    }

    /// Holds a new client until the server has replayed its log and knows a leader;
    /// closes the connection (the client tries another server) if that takes too long.
    async fn wait_until_ready(&self, limit: Duration) -> Result<(), ConnError> {
        let deadline = tokio::time::Instant::now() + limit;
        while !self.server.health.ready_for_clients() {
            if tokio::time::Instant::now() >= deadline {
                return Err(ConnError::Refused(
                    "not serving yet: replaying or no leader",
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    /// Counts `n` bytes read from the client; `n`.
    fn received(&self, n: usize) -> usize {
        self.server.metrics.requests.bytes_received.inc_by(n as u64);
        n
    }

    /// The first four bytes: either a frame length or a four-letter word.
    async fn read_exact_prefix(&mut self) -> Result<[u8; 4], ConnError> {
        while self.inbuf.len() < 4 {
            let read = self.reader.read_buf(&mut self.inbuf).await?;
            if self.received(read) == 0 {
                return Err(ConnError::Eof);
            }
        }
        Ok([self.inbuf[0], self.inbuf[1], self.inbuf[2], self.inbuf[3]])
    }

    async fn read_frame(&mut self) -> Result<Bytes, ConnError> {
        loop {
            if let Some(frame) = self.codec.decode(&mut self.inbuf)? {
                return Ok(frame);
            }
            let read = self.reader.read_buf(&mut self.inbuf).await?;
            if self.received(read) == 0 {
                return Err(ConnError::Eof);
            }
        }
    }

    async fn handshake(
        &mut self,
        request: ConnectRequest,
        outbound: OutboxTx,
    ) -> Result<(), ConnError> {
        let last_zxid = self.server.replicated.last_zxid();
        if request.last_zxid_seen > last_zxid {
            // ZooKeeper closes without a reply, so the client tries another server.
            tracing::info!(
                peer = %self.peer,
                "refusing session: client has seen zxid {:#x}, ours is {:#x}",
                request.last_zxid_seen,
                last_zxid
            );
            return Err(ConnError::Refused("client is ahead of this server"));
        }
        let response = if request.session_id == 0 {
            let timeout = self.server.negotiate_timeout(request.timeout);
            match self
                .server
                .writes
                .create_session(self.id, timeout, &self.caller)
                .await
            {
                Ok((session_id, passwd)) => ConnectResponse {
                    protocol_version: 0,
                    timeout,
                    session_id,
                    passwd,
                    read_only: request.read_only.map(|_| false),
                },
                Err(code) => {
                    // No quorum to commit the session (ZooKeeper doesn't serve then
                    // either): close without an answer, so the client tries another
                    // server instead of taking its session for expired.
                    tracing::info!(peer = %self.peer, "cannot create a session now: {code}");
                    return Err(ConnError::Refused("no quorum to create the session"));
                }
            }
        } else {
            match self
                .server
                .reattach_session(self.id, request.session_id, &request.passwd)
                .await
            {
                Ok(timeout) => ConnectResponse {
                    protocol_version: 0,
                    timeout,
                    session_id: request.session_id,
                    passwd: request.passwd.clone(),
                    read_only: request.read_only.map(|_| false),
                },
                Err(Reattach::Refused) => ConnectResponse::refused(request.read_only),
                Err(Reattach::Unavailable) => {
                    return Err(ConnError::Refused("no quorum to move the session here"))
                }
            }
        };
        let accepted = response.timeout > 0;
        write_frame(&mut self.out, self.codec.max_frame(), |b| {
            response.encode(b)
        })?;
        self.flush(None).await?;
        if !accepted {
            return Err(ConnError::Refused("session expired or wrong password"));
        }
        self.session_id = response.session_id;
        self.stats.sent();
        self.stats.established(
            self.session_id,
            response.timeout,
            crate::server::now_millis(),
        );
        self.stall_limit = Duration::from_millis(u64::try_from(response.timeout).unwrap_or(0));
        self.heard.store(Instant::now());
        self.server
            .conns
            .attach(self.id, self.session_id, outbound, self.heard.clone());
        Ok(())
    }

    async fn serve_requests(&mut self, mut outbound: OutboxRx) -> Result<(), ConnError> {
        let server = self.server.clone();
        // Made once: each one made anew registers with its token (a lock) on every turn.
        let mut shutdown = pin!(server.shutdown.clone().cancelled_owned());
        let mut overflowed = pin!(outbound.overflowed());
        loop {
            // Work a turn left when its output reached the bound: the reads queued
            // behind it, then the requests already buffered. Output is flushed before
            // anything more is read, so a client that does not read stops being read.
            self.run_ready_locals(&mut outbound)?;
            self.take_frames(&mut outbound)?;
            self.stats.queued(self.queue.len());
            self.flush(Some(&outbound)).await?;
            if let Some(reason) = self.closing {
                return Err(ConnError::Refused(reason));
            }
            let can_read =
                self.queue.len() < MAX_OUTSTANDING_PER_CONN && server.writes.admits_more();
            tokio::select! {
                biased;
                message = outbound.recv() => match message {
                    Some(Outbound::Notification { zxid, event, acl }) => self.deliver(zxid, &event, &acl)?,
                    Some(Outbound::Close) | None => {
                        self.flush(Some(&outbound)).await?;
                        return Err(ConnError::SessionClosed);
                    }
                },
                () = &mut overflowed => return Err(ConnError::Overflow),
                applied = head_write(&mut self.queue) => {
                    if applied.result == Err(ErrorCode::ConnectionLoss) {
                        self.flush(Some(&outbound)).await?;
                        return Err(ConnError::WriteLost);
                    }
                    self.drain_notifications(&mut outbound)?;
                    match self.queue.pop_front() {
                        Some(Pending::Write { xid, op, arrived, .. }) => {
                            self.push_applied(xid, op, arrived, applied.zxid, applied.result)?;
                            if op == OpCode::CloseSession {
                                self.flush(Some(&outbound)).await?;
                                return Ok(());
                            }
                        }
                        Some(Pending::Sync { xid, path, arrived, .. }) => {
                            let result = applied.result.map(|_| Response::Sync { path });
                            self.push_applied(xid, OpCode::Sync, arrived, applied.zxid, result)?;
                        }
                        _ => {}
                    }
                    self.run_ready_locals(&mut outbound)?;
                },
                read = self.reader.read_buf(&mut self.inbuf), if can_read => {
                    if self.received(read?) == 0 {
                        return Err(ConnError::Eof);
                    }
                    self.take_frames(&mut outbound)?;
                },
                () = &mut shutdown => return Err(ConnError::Shutdown),
            }
            self.flush(Some(&outbound)).await?;
            if let Some(reason) = self.closing {
                return Err(ConnError::Refused(reason));
            }
        }
    }

    /// Whether this turn's output has reached the bound: stop producing until it is
    /// written.
    fn output_full(&self) -> bool {
        self.out.len() >= self.server.settings.max_client_outgoing
    }

    /// Handles the complete requests buffered from the socket, until the queue or the
    /// output is full.
    fn take_frames(&mut self, outbound: &mut OutboxRx) -> Result<(), ConnError> {
        while self.queue.len() < MAX_OUTSTANDING_PER_CONN && !self.output_full() {
            let Some(frame) = self.codec.decode(&mut self.inbuf)? else {
                break;
            };
            self.on_frame(frame, outbound)?;
        }
        Ok(())
    }

    fn on_frame(&mut self, frame: Bytes, outbound: &mut OutboxRx) -> Result<(), ConnError> {
        self.server.metrics.packet_received();
        self.stats.received();
        self.heard.store(Instant::now());
        let mut r = paddock_wire::Reader::new(frame);
        let header = RequestHeader::decode(&mut r)?;
        let request = match OpCode::try_from(header.op) {
            Ok(op) => Request::decode(op, &mut r)?,
            Err(_) => {
                // ZooKeeper answers an unknown op with an error, not a disconnect; in
                // its turn, like every reply.
                self.queue.push_back(Pending::Rejected {
                    xid: header.xid,
                    code: ErrorCode::Unimplemented,
                });
                self.run_ready_locals(outbound)?;
                return Ok(());
            }
        };
        let op = request.op_code();
        let arrived = Instant::now();
        if request.data_len() > self.server.settings.jute_max_buffer {
            // Data over jute.maxbuffer could be stored but never read back.
            self.queue.push_back(Pending::Rejected {
                xid: header.xid,
                code: ErrorCode::BadArguments,
            });
            self.run_ready_locals(outbound)?;
            return Ok(());
        }
        if let Request::Sync(sync) = request {
            let rx = self.server.writes.sync_barrier();
            self.queue.push_back(Pending::Sync {
                xid: header.xid,
                path: sync.path,
                rx,
                arrived,
            });
        } else if op.is_write() {
            let slot = WriteSlot {
                conn: self.id,
                seq: self.next_write_seq,
            };
            self.next_write_seq += 1;
            let rx = self.server.writes.propose_client_write(
                self.session_id,
                header.xid,
                slot,
                &self.caller,
                request,
            );
            self.queue.push_back(Pending::Write {
                xid: header.xid,
                op,
                rx,
                arrived,
            });
        } else {
            self.queue.push_back(Pending::Local {
                xid: header.xid,
                request,
                arrived,
            });
            self.run_ready_locals(outbound)?;
        }
        Ok(())
    }

    /// Runs the local requests at the head of the queue, up to the first pending write
    /// or until the output is full.
    fn run_ready_locals(&mut self, outbound: &mut OutboxRx) -> Result<(), ConnError> {
        while !self.output_full()
            && matches!(
                self.queue.front(),
                Some(Pending::Local { .. } | Pending::Rejected { .. })
            )
        {
            let (xid, request, arrived) = match self.queue.pop_front() {
                Some(Pending::Local {
                    xid,
                    request,
                    arrived,
                }) => (xid, request, arrived),
                Some(Pending::Rejected { xid, code }) => {
                    let server = self.server.clone();
                    let db = server.replicated.db.read();
                    // As for a read: the events of what the reply's zxid covers go
                    // first.
                    self.drain_notifications(outbound)?;
                    let zxid = db.last_zxid;
                    drop(db);
                    self.push_error(xid, zxid, code)?;
                    continue;
                }
                _ => break,
            };
            let server = self.server.clone();
            let db = server.replicated.db.read();
            // Must drain after taking the read view and before replying: the state
            // machine queues a txn's notifications under the write lock, so every
            // event of what this view shows is in the channel by now.
            self.drain_notifications(outbound)?;
            let op = request.op_code();
            let outcome = self.run_local(&db, request);
            drop(db);
            for event in &outcome.events {
                self.push_notification(outcome.zxid, event)?;
            }
            self.push_applied(xid, op, arrived, outcome.zxid, outcome.result)?;
        }
        Ok(())
    }

    /// Runs a local request against `db`, which the caller holds locked (so nothing
    /// here may lock it again).
    fn run_local(&mut self, db: &Db, request: Request) -> Outcome {
        let result = match request {
            Request::Ping => Ok(Response::Empty),
            Request::Auth(auth) => {
                let result = self.caller.add_auth(
                    &auth.scheme,
                    &auth.auth,
                    self.server.settings.super_digest.as_deref(),
                );
                if result.is_err() {
                    self.closing = Some("authentication failed");
                }
                result.map(|()| Response::Empty)
            }
            // SASL is not offered; Kerberos-configured clients get a clear refusal.
            Request::Sasl(_) => Err(ErrorCode::AuthFailed),
            request => {
                return self
                    .server
                    .read(db, self.id, self.session_id, &self.caller, request)
            }
        };
        Outcome {
            zxid: db.last_zxid,
            result,
            events: Vec::new(),
        }
    }

    /// Moves the queued notifications to the output, before a reply.
    fn drain_notifications(&mut self, outbound: &mut OutboxRx) -> Result<(), ConnError> {
        // An event was dropped for this connection: no reply may follow it, since the
        // reply could show the change whose event the client never gets.
        if outbound.is_overflowed() {
            return Err(ConnError::Overflow);
        }
        while let Some(message) = outbound.try_recv() {
            match message {
                Outbound::Notification { zxid, event, acl } => self.deliver(zxid, &event, &acl)?,
                // Seen again by the select loop's recv after this turn.
                Outbound::Close => return Err(ConnError::SessionClosed),
            }
        }
        Ok(())
    }

    /// Sends a fired watch's event if this connection may READ the changed node
    /// (CVE-2024-23944: a watch, recursive ones above all, must not reveal the paths
    /// of nodes its holder cannot read). The identities are the current ones, as
    /// ZooKeeper's `ServerCnxn.process(event, acl)` checks them.
    fn deliver(
        &mut self,
        zxid: i64,
        event: &paddock_wire::WatcherEvent,
        acl: &[Acl],
    ) -> Result<(), ConnError> {
        if !acl::is_allowed(acl, perms::READ, self.caller.ids()) {
            tracing::trace!(path = %event.path, "event filtered by ACL");
            return Ok(());
        }
        self.push_notification(zxid, event)
    }

    fn push_notification(
        &mut self,
        zxid: i64,
        event: &paddock_wire::WatcherEvent,
    ) -> Result<(), ConnError> {
        let header = ReplyHeader {
            xid: Xid::Notification.as_i32(),
            zxid,
            err: ErrorCode::Ok,
        };
        write_frame(&mut self.out, self.codec.max_frame(), |b| {
            header.encode(b);
            event.encode(b);
        })?;
        Ok(())
    }

    /// Writes a request's reply and records how long the request took.
    fn push_applied(
        &mut self,
        xid: i32,
        op: OpCode,
        arrived: Instant,
        zxid: i64,
        result: Result<Response, ErrorCode>,
    ) -> Result<(), ConnError> {
        self.server.metrics.packet_sent();
        self.stats.sent();
        let took = arrived.elapsed();
        let millis = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        self.server.metrics.request_latency(millis);
        self.server.metrics.requests.answered(op, took);
        // Authentication is answered before ZooKeeper's request pipeline, which is
        // what keeps these.
        if !matches!(op, OpCode::Auth | OpCode::Sasl) {
            self.stats.response(xid, zxid, op, millis);
        }
        let (err, body) = match result {
            Ok(body) => (ErrorCode::Ok, Some(body)),
            Err(code) => (code, None),
        };
        let header = ReplyHeader { xid, zxid, err };
        let written = write_frame(&mut self.out, MAX_REPLY_FRAME, |b| {
            header.encode(b);
            if let Some(body) = &body {
                body.encode(b);
            }
        });
        if let Err(FrameError::TooLarge { len, .. }) = written {
            // A reply no frame can carry: answer with an error instead.
            tracing::warn!(xid, len, "reply exceeds the largest frame");
            self.push_error(xid, zxid, ErrorCode::MarshallingError)?;
        }
        Ok(())
    }

    fn push_error(&mut self, xid: i32, zxid: i64, code: ErrorCode) -> Result<(), ConnError> {
        let header = ReplyHeader {
            xid,
            zxid,
            err: code,
        };
        write_frame(&mut self.out, self.codec.max_frame(), |b| header.encode(b))?;
        Ok(())
    }

    /// Writes the output. Closes the connection when no byte of it goes out for the
    /// stall limit, or (once `outbound` is given) when events overflow meanwhile.
    async fn flush(&mut self, outbound: Option<&OutboxRx>) -> Result<(), ConnError> {
        while !self.out.is_empty() {
            // Almost every write goes straight into the socket: the stall timer and the
            // overflow watch (a timer-wheel entry and a token registration, each taken
            // and dropped) are armed only for one that has to wait.
            let written = match self.writer.write(&self.out).now_or_never() {
                Some(written) => written?,
                None => {
                    let overflowed = async {
                        match outbound {
                            Some(outbound) => outbound.overflowed().await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        written = self.writer.write(&self.out) => written?,
                        () = overflowed => return Err(ConnError::Overflow),
                        () = tokio::time::sleep(self.stall_limit) => {
                            return Err(ConnError::Stalled(self.stall_limit))
                        }
                    }
                }
            };
            if written == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into());
            }
            self.server
                .metrics
                .requests
                .bytes_sent
                .inc_by(written as u64);
            self.out.advance(written);
        }
        // A TLS session may hold encrypted bytes the socket did not take yet; a plain
        // socket holds none.
        match self.writer.flush().now_or_never() {
            Some(flushed) => flushed?,
            None => tokio::select! {
                flushed = self.writer.flush() => flushed?,
                () = tokio::time::sleep(self.stall_limit) => {
                    return Err(ConnError::Stalled(self.stall_limit))
                }
            },
        }
        if self.out.capacity() > RETAINED_OUTPUT_CAPACITY {
            // One large reply must not pin its buffer for the connection's lifetime.
            self.out = BytesMut::with_capacity(RETAINED_OUTPUT_CAPACITY);
        }
        Ok(())
    }
}

/// Resolves when the write at the head of the queue has been applied; pends forever
/// when the head is not a write (the select loop then waits on the other branches).
async fn head_write(queue: &mut VecDeque<Pending>) -> Completion {
    match queue.front_mut() {
        Some(Pending::Write { rx, .. } | Pending::Sync { rx, .. }) => match rx.await {
            Ok(applied) => applied,
            // The waiter was dropped without an answer: the write's fate is unknown.
            Err(_) => Completion {
                zxid: 0,
                result: Err(ErrorCode::ConnectionLoss),
            },
        },
        _ => std::future::pending().await,
    }
}

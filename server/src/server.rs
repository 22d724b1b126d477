//! The state every connection task shares, and the operations they call on it: the one
//! place where a request forks into a local read or a proposed write.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use paddock_wire::{Acl, ErrorCode, Request, WatcherEvent};
use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::consensus::{Proposer, Status};
use crate::ids::UniqueIds;
use crate::liveness::Liveness;
use crate::metrics::Metrics;
use crate::monotonic::AtomicInstant;
use crate::outbox::OutboxTx;
use crate::query;
use crate::session::{passwd_matches, Caller, SessionTable};
use crate::store::txnlog::LogStats;
use crate::tree::DataTree;
use crate::txn::{Txn, TxnKind};
use crate::wait::{Completion, WaitRegistry};
use crate::watch::WatchRegistry;

/// Why a client could not reattach to its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reattach {
    /// Unknown or expired session, or the wrong password: the session is gone for the
    /// client.
    Refused,
    /// The move could not be committed now (no leader): try again, here or elsewhere.
    Unavailable,
}

/// Identifies one client connection, unique across servers and their incarnations
/// (watches belong to connections, and a session executes one connection's writes).
pub type ConnId = u64;

/// Where a write stands among its connection's writes: the session executes them in
/// `seq` order with no gap (see `Session::admits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteSlot {
    pub conn: ConnId,
    pub seq: u64,
}

impl WriteSlot {
    /// The txn that makes `conn` the session's holder; its writes count from 0.
    pub fn first(conn: ConnId) -> Self {
        WriteSlot { conn, seq: 0 }
    }
}

/// What the rest of the server sends a connection task.
#[derive(Debug)]
pub enum Outbound {
    /// A watch fired: written with xid -1 and the zxid of the txn that fired it, if
    /// the connection's identities hold READ in `acl`, the changed node's ACL at the
    /// time of the change (the parent's, for `NodeChildrenChanged`).
    Notification {
        zxid: i64,
        event: WatcherEvent,
        acl: Arc<[Acl]>,
    },
    /// The session ended (expired, or moved to another connection).
    Close,
}

/// The settings the request path needs, taken from the config once.
#[derive(Debug, Clone)]
pub struct Settings {
    pub server_id: u64,
    /// No `server.N` lines: `srvr` reports `Mode: standalone`.
    pub standalone: bool,
    /// The plain client port's address, if there is one.
    pub client_addr: Option<SocketAddr>,
    /// The TLS client port's address (`secureClientPort`), if there is one.
    pub secure_client_addr: Option<SocketAddr>,
    pub tick: Duration,
    pub min_session_timeout: Duration,
    pub max_session_timeout: Duration,
    pub max_client_cnxns: usize,
    pub global_outstanding_limit: usize,
    /// `jute.maxbuffer`: the most znode data a write may carry.
    pub jute_max_buffer: usize,
    /// The largest frame: `jute.maxbuffer` plus ZooKeeper's header allowance.
    pub max_frame: usize,
    /// `maxClientOutgoingBytes`: what one connection may hold waiting to go out.
    pub max_client_outgoing: usize,
    pub extended_types: bool,
    /// `enforceQuota`: hard quotas refuse writes.
    pub enforce_quota: bool,
    pub super_digest: Option<String>,
    pub four_letter_words: crate::config::FourLetterWords,
    pub data_dir: std::path::PathBuf,
    /// For `conf` and `dirs`.
    pub data_log_dir: std::path::PathBuf,
    /// The `server.N` lines, for `/zookeeper/config` and `conf`; `None` standalone.
    pub ensemble: Option<crate::config::Ensemble>,
}

/// What the request path needs of the store, known once it is open.
pub struct StoreView {
    /// The last log index at start-up: no clients until it is applied.
    pub replay_to: u64,
    /// The txn log's counters, for `mntr`.
    pub log_stats: Arc<LogStats>,
}

/// The replicated state: changed only by the state machine, read by everyone.
pub struct Db {
    pub tree: DataTree,
    pub sessions: SessionTable,
    /// The zxid of the last applied txn.
    pub last_zxid: i64,
}

pub struct Shared {
    pub settings: Settings,
    pub db: RwLock<Db>,
    /// Locked after `db` when both are held, never before.
    pub watches: Mutex<WatchRegistry<ConnId>>,
    pub conns: ConnRegistry,
    pub waits: WaitRegistry,
    /// The session liveness task: session clocks and the reports that feed them.
    pub liveness: Liveness,
    /// Whether this server is in touch with a quorum (always, standalone): set by the
    /// liveness task, which closes every client connection when it stops being so.
    pub serving: AtomicBool,
    pub metrics: Metrics,
    pub shutdown: CancellationToken,
    /// The raft role and leader, kept current by the raft thread.
    pub status: Arc<Status>,
    proposer: Proposer,
    next_session: AtomicI64,
    pub started: Instant,
    /// The last log index this server had when it started: it takes no sessions until
    /// it has applied that far, so that a restarted server never answers from a state
    /// older than the one it had already acknowledged.
    pub replay_to: u64,
    /// The txn log's counters, for `mntr` (set once the store is open).
    pub log_stats: Arc<LogStats>,
}

impl Shared {
    pub fn new(
        settings: Settings,
        proposer: Proposer,
        status: Arc<Status>,
        liveness: Liveness,
        store: StoreView,
    ) -> Self {
        let server_id = settings.server_id;
        Shared {
            db: RwLock::new(Db {
                tree: DataTree::new(),
                sessions: SessionTable::default(),
                last_zxid: 0,
            }),
            watches: Mutex::new(WatchRegistry::new()),
            conns: ConnRegistry::default(),
            waits: WaitRegistry::new(server_id),
            liveness,
            serving: AtomicBool::new(settings.standalone),
            metrics: Metrics::default(),
            shutdown: CancellationToken::new(),
            status,
            proposer,
            next_session: AtomicI64::new(first_session_id(server_id)),
            started: Instant::now(),
            log_stats: store.log_stats,
            replay_to: store.replay_to,
            settings,
        }
    }

    pub fn last_zxid(&self) -> i64 {
        self.db.read().last_zxid
    }

    pub fn is_leader(&self) -> bool {
        self.status.is_leader()
    }

    /// Whether this server may take clients: it has replayed its own log, and is in
    /// touch with a quorum.
    pub fn ready_for_clients(&self) -> bool {
        self.status.applied() >= self.replay_to && self.is_serving()
    }

    /// Whether this server is in touch with a quorum (see `liveness`).
    pub fn is_serving(&self) -> bool {
        self.serving.load(Ordering::Acquire)
    }

    /// The total size of the snapshot files in dataDir.
    pub fn snapshot_bytes(&self) -> u64 {
        std::fs::read_dir(&self.settings.data_dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.starts_with("snapshot.") && !name.ends_with(".tmp")
                    })
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// Clamps a requested session timeout into [min, max], as ZooKeeper does.
    pub fn negotiate_timeout(&self, requested: i32) -> i32 {
        let min = millis(self.settings.min_session_timeout);
        let max = millis(self.settings.max_session_timeout);
        requested.clamp(min, max)
    }

    /// Whether the server takes more requests in, or pushes back on its sockets.
    pub fn admits_more(&self) -> bool {
        self.waits.len() < self.settings.global_outstanding_limit
    }

    /// Proposes a new session held by connection `conn`, and waits until it is applied.
    pub async fn create_session(
        &self,
        conn: ConnId,
        timeout: i32,
        caller: &Caller,
    ) -> Result<(i64, Bytes), ErrorCode> {
        let session_id = self.next_session.fetch_add(1, Ordering::Relaxed);
        let mut passwd = [0u8; 16];
        getrandom::getrandom(&mut passwd).map_err(|_| ErrorCode::SystemError)?;
        let passwd = Bytes::copy_from_slice(&passwd);
        let kind = TxnKind::CreateSession {
            timeout,
            passwd: passwd.clone(),
        };
        let applied = self
            .propose(session_id, WriteSlot::first(conn), caller, kind)
            .await?;
        applied.result?;
        Ok((session_id, passwd))
    }

    /// Checks a reattaching client's credentials and makes connection `conn` the
    /// session's holder; the session's negotiated timeout if that worked.
    pub async fn reattach_session(
        &self,
        conn: ConnId,
        session_id: i64,
        passwd: &[u8],
    ) -> Result<i32, Reattach> {
        let timeout = {
            let db = self.db.read();
            let session = db.sessions.get(session_id).ok_or(Reattach::Refused)?;
            if !passwd_matches(&session.passwd, passwd) {
                return Err(Reattach::Refused);
            }
            session.timeout
        };
        // Committed even when the session stays on this server: from here on the
        // session executes this connection's writes only, so a write of the old
        // connection still in flight can never run after the client was told its
        // outcome is unknown. Elsewhere, the old connection is closed and its writes
        // are refused with SessionMoved.
        let applied = self
            .propose(
                session_id,
                WriteSlot::first(conn),
                &Caller::internal(),
                TxnKind::MoveSession,
            )
            .await
            .map_err(|_| Reattach::Unavailable)?;
        match applied.result {
            Ok(_) => Ok(timeout),
            Err(ErrorCode::SessionExpired) => Err(Reattach::Refused),
            Err(_) => Err(Reattach::Unavailable),
        }
    }

    /// A `sync` barrier: resolves once this server has applied every write committed
    /// before the call (a raft ReadIndex).
    pub fn sync_barrier(&self) -> oneshot::Receiver<Completion> {
        let (origin, rx) = self.waits.register();
        if self.proposer.read_index(origin.request).is_err() {
            self.waits.complete(
                origin,
                Completion {
                    zxid: 0,
                    result: Err(ErrorCode::ConnectionLoss),
                },
            );
        }
        rx
    }

    /// Proposes a client's write, the `slot.seq`-th write of its connection; its result
    /// arrives on the receiver once applied.
    pub fn propose_client_write(
        &self,
        session_id: i64,
        xid: i32,
        slot: WriteSlot,
        caller: &Caller,
        request: Request,
    ) -> oneshot::Receiver<Completion> {
        let kind = match request {
            Request::CloseSession => TxnKind::CloseSession,
            request => TxnKind::Client(request),
        };
        self.propose_kind(session_id, xid, slot, caller, kind)
    }

    async fn propose(
        &self,
        session_id: i64,
        slot: WriteSlot,
        caller: &Caller,
        kind: TxnKind,
    ) -> Result<Completion, ErrorCode> {
        self.propose_kind(session_id, 0, slot, caller, kind)
            .await
            .map_err(|_| ErrorCode::ConnectionLoss)
    }

    fn propose_kind(
        &self,
        session_id: i64,
        xid: i32,
        slot: WriteSlot,
        caller: &Caller,
        kind: TxnKind,
    ) -> oneshot::Receiver<Completion> {
        let (origin, rx) = self.waits.register();
        let txn = Txn {
            origin,
            session_id,
            xid,
            conn: slot.conn,
            seq: slot.seq,
            time: now_millis(),
            caller: caller.ids().to_vec(),
            kind,
        };
        if self.proposer.propose(txn.encode()).is_err() {
            self.waits.complete(
                origin,
                Completion {
                    zxid: 0,
                    result: Err(ErrorCode::ConnectionLoss),
                },
            );
        }
        rx
    }

    /// Proposes a txn nobody waits for (the leader's expiry and cleanup).
    pub fn propose_internal(&self, session_id: i64, kind: TxnKind) {
        // An expiry names the connection the session was held by when the leader
        // decided: if the client reattached since, the expiry is void (see `apply`).
        let conn = match kind {
            TxnKind::ExpireSession => self
                .db
                .read()
                .sessions
                .get(session_id)
                .map_or(0, |session| session.conn),
            _ => 0,
        };
        let txn = Txn {
            origin: Default::default(),
            session_id,
            xid: 0,
            conn,
            seq: 0,
            time: now_millis(),
            caller: Vec::new(),
            kind,
        };
        if self.proposer.propose(txn.encode()).is_err() {
            tracing::warn!("consensus stopped; internal txn dropped");
        }
    }

    /// Runs a read (or a local, per-connection request) against `db`, this server's
    /// tree as the caller holds it locked.
    pub fn read(
        &self,
        db: &Db,
        conn: ConnId,
        session_id: i64,
        caller: &Caller,
        request: Request,
    ) -> query::Outcome {
        query::run(self, db, conn, session_id, caller, request)
    }

    pub fn connection_closed(&self, conn: ConnId, session_id: i64) {
        self.conns.detach(conn, session_id);
        self.watches.lock().remove_connection(conn);
    }
}

/// Open connections: who to send notifications to, which connection holds each
/// session on this server, and when each was last heard from.
#[derive(Default)]
pub struct ConnRegistry {
    next: UniqueIds,
    inner: Mutex<ConnTable>,
}

#[derive(Default)]
struct ConnTable {
    conns: HashMap<ConnId, ConnEntry>,
    by_session: HashMap<i64, ConnId>,
}

struct ConnEntry {
    tx: OutboxTx,
    session: i64,
    /// Written by the connection on every packet, read for the liveness reports.
    heard: Arc<AtomicInstant>,
}

impl ConnRegistry {
    pub fn next_id(&self) -> ConnId {
        self.next.next()
    }

    /// Records that `conn` now holds `session`; a connection that held it before is
    /// told to close (the client moved).
    pub fn attach(&self, conn: ConnId, session: i64, tx: OutboxTx, heard: Arc<AtomicInstant>) {
        let mut table = self.inner.lock();
        table.conns.insert(conn, ConnEntry { tx, session, heard });
        if let Some(old) = table.by_session.insert(session, conn) {
            if let Some(old) = table.conns.get(&old) {
                let _ = old.tx.send(Outbound::Close);
            }
        }
    }

    pub fn detach(&self, conn: ConnId, session: i64) {
        let mut table = self.inner.lock();
        table.conns.remove(&conn);
        if table.by_session.get(&session) == Some(&conn) {
            table.by_session.remove(&session);
        }
    }

    pub fn send(&self, conn: ConnId, message: Outbound) {
        if let Some(entry) = self.inner.lock().conns.get(&conn) {
            // A closed receiver means the connection is going away anyway.
            let _ = entry.tx.send(message);
        }
    }

    /// Tells the connection holding `session`, if on this server, to close.
    pub fn close_session(&self, session: i64) {
        self.close_session_unless(session, 0);
    }

    /// Tells the connection holding `session` on this server to close, unless it is
    /// `keep` (the session moved to connection `keep`).
    pub fn close_session_unless(&self, session: i64, keep: ConnId) {
        let table = self.inner.lock();
        if let Some(conn) = table.by_session.get(&session) {
            if *conn != keep {
                if let Some(entry) = table.conns.get(conn) {
                    let _ = entry.tx.send(Outbound::Close);
                }
            }
        }
    }

    /// Tells every connection to close (this server stopped serving).
    pub fn close_all(&self) -> usize {
        let table = self.inner.lock();
        for entry in table.conns.values() {
            let _ = entry.tx.send(Outbound::Close);
        }
        table.conns.len()
    }

    /// Each session held here, and when its client was last heard from.
    pub fn heard(&self) -> Vec<(i64, Instant)> {
        let table = self.inner.lock();
        table
            .conns
            .values()
            .filter_map(|entry| Some((entry.session, entry.heard.load()?)))
            .collect()
    }

    pub fn count(&self) -> usize {
        self.inner.lock().conns.len()
    }

    /// (connection, session) pairs, for `cons`.
    pub fn sessions(&self) -> Vec<(ConnId, i64)> {
        let table = self.inner.lock();
        let mut pairs: Vec<(ConnId, i64)> =
            table.by_session.iter().map(|(s, c)| (*c, *s)).collect();
        pairs.sort_unstable();
        pairs
    }
}

/// Session ids start from the server id in the top byte and the time below it, as
/// ZooKeeper's `initializeNextSession` does, so ids differ across servers and restarts.
fn first_session_id(server_id: u64) -> i64 {
    let now = now_millis();
    let time_part = ((now << 24) as u64 >> 8) as i64;
    time_part | ((server_id as i64) << 56)
}

pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

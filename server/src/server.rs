//! What a connection task works with: the parts of the server on the request path, and
//! the operations that span them (reattaching a session, running a read). The other
//! tasks get only the parts they need (see `daemon`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use paddock_wire::Request;
use tokio_util::sync::CancellationToken;

use crate::conns::{ConnId, ConnRegistry};
use crate::health::Health;
use crate::metrics::Metrics;
use crate::query;
use crate::replicated::{Db, Replicated};
use crate::session::{passwd_matches, Caller};
use crate::store::txnlog::LogStats;
use crate::writes::{Reattach, Writes};

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

/// The request path's view of the server. Each part has one owner that writes it (see
/// each part's docs); a connection task reads them and proposes through `writes`.
pub struct Server {
    pub settings: Settings,
    pub replicated: Arc<Replicated>,
    pub writes: Arc<Writes>,
    pub conns: Arc<ConnRegistry>,
    pub health: Arc<Health>,
    pub metrics: Arc<Metrics>,
    /// The txn log's counters, for `mntr`.
    pub log_stats: Arc<LogStats>,
    pub shutdown: CancellationToken,
    pub started: Instant,
}

impl Server {
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

    /// Checks a reattaching client's credentials and makes connection `conn` the
    /// session's holder; the session's negotiated timeout if that worked.
    pub async fn reattach_session(
        &self,
        conn: ConnId,
        session_id: i64,
        passwd: &[u8],
    ) -> Result<i32, Reattach> {
        let timeout = {
            let db = self.replicated.db.read();
            let session = db.sessions.get(session_id).ok_or(Reattach::Refused)?;
            if !passwd_matches(&session.passwd, passwd) {
                return Err(Reattach::Refused);
            }
            session.timeout
        };
        self.writes.move_session(conn, session_id).await?;
        Ok(timeout)
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
        self.replicated.watches.lock().remove_connection(conn);
    }
}

pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

//! Per-connection statistics, ZooKeeper's `ServerCnxn` counters: kept by each
//! connection task, listed by `cons` and `stat`, reset by `crst`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use paddock_wire::OpCode;
use parking_lot::Mutex;

use crate::conns::ConnId;

/// Every open connection's statistics, the four-letter-word ones included.
#[derive(Debug, Default)]
pub struct ConnStatsTable {
    conns: Mutex<BTreeMap<ConnId, Arc<ConnStats>>>,
}

impl ConnStatsTable {
    /// Registers a new connection; it is listed until [`ConnStatsTable::close`].
    pub fn open(&self, conn: ConnId, peer: SocketAddr, epoch: Instant) -> Arc<ConnStats> {
        let stats = Arc::new(ConnStats {
            peer,
            epoch,
            inner: Mutex::new(Counters::default()),
        });
        self.conns.lock().insert(conn, stats.clone());
        stats
    }

    pub fn close(&self, conn: ConnId) {
        self.conns.lock().remove(&conn);
    }

    /// `crst`.
    pub fn reset_all(&self) {
        for stats in self.conns.lock().values() {
            stats.inner.lock().reset();
        }
    }

    /// Every connection, by id.
    pub fn infos(&self) -> Vec<ConnInfo> {
        self.conns
            .lock()
            .values()
            .map(|stats| stats.info())
            .collect()
    }

    /// `cons` (`brief` false) and `stat`'s client list (`brief` true): one line per
    /// connection, as `ServerCnxn.dumpConnectionInfo` writes it.
    pub fn dump(&self, brief: bool) -> String {
        let mut out = String::new();
        for stats in self.conns.lock().values() {
            stats.dump(&mut out, brief);
            out.push('\n');
        }
        out
    }
}

/// One connection's statistics.
#[derive(Debug)]
pub struct ConnStats {
    peer: SocketAddr,
    /// What `lresp` counts from (ZooKeeper's is a monotonic clock too).
    epoch: Instant,
    inner: Mutex<Counters>,
}

#[derive(Debug)]
struct Counters {
    session_id: i64,
    timeout: i32,
    /// When the session was established, milliseconds since the Unix epoch.
    established: i64,
    queued: usize,
    received: u64,
    sent: u64,
    last_op: &'static str,
    /// The last request's xid; -1 until one, or after a reset.
    last_cxid: i64,
    last_zxid: i64,
    /// Milliseconds since `epoch`.
    last_response: u64,
    last_latency: u64,
    min_latency: u64,
    max_latency: u64,
    count: u64,
    total_latency: u64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            session_id: 0,
            timeout: 0,
            established: 0,
            queued: 0,
            received: 0,
            sent: 0,
            last_op: "NA",
            last_cxid: -1,
            last_zxid: -1,
            last_response: 0,
            last_latency: 0,
            min_latency: u64::MAX,
            max_latency: 0,
            count: 0,
            total_latency: 0,
        }
    }
}

impl Counters {
    /// `ServerCnxn.resetStats`: the session stays, the counters restart.
    fn reset(&mut self) {
        *self = Counters {
            session_id: self.session_id,
            timeout: self.timeout,
            established: self.established,
            queued: self.queued,
            ..Counters::default()
        };
    }
}

impl ConnStats {
    pub fn received(&self) {
        self.inner.lock().received += 1;
    }

    pub fn sent(&self) {
        self.inner.lock().sent += 1;
    }

    pub fn established(&self, session_id: i64, timeout: i32, now_ms: i64) {
        let mut c = self.inner.lock();
        c.session_id = session_id;
        c.timeout = timeout;
        c.established = now_ms;
    }

    /// Requests read and not yet answered.
    pub fn queued(&self, queued: usize) {
        self.inner.lock().queued = queued;
    }

    /// A request answered (`ServerCnxn.updateStatsForResponse`).
    pub fn response(&self, xid: i32, zxid: i64, op: OpCode, latency_ms: u64) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut c = self.inner.lock();
        // Special xids (pings, auth) do not replace the client's last real operation.
        if xid >= 0 {
            c.last_cxid = xid.into();
        }
        c.last_zxid = zxid;
        c.last_op = last_op(op);
        c.last_response = now;
        c.last_latency = latency_ms;
        c.min_latency = c.min_latency.min(latency_ms);
        c.max_latency = c.max_latency.max(latency_ms);
        c.count += 1;
        c.total_latency += latency_ms;
    }

    /// What `cons` shows of this connection (`ServerCnxn.getConnectionInfo`).
    pub fn info(&self) -> ConnInfo {
        let c = self.inner.lock();
        let session = (c.session_id != 0).then(|| SessionInfo {
            session_id: c.session_id,
            last_op: c.last_op,
            established: c.established,
            timeout: c.timeout,
            last_cxid: c.last_cxid,
            last_zxid: c.last_zxid,
            last_response: c.last_response,
            last_latency: c.last_latency,
            min_latency: if c.min_latency == u64::MAX {
                0
            } else {
                c.min_latency
            },
            avg_latency: c.total_latency.checked_div(c.count).unwrap_or(0),
            max_latency: c.max_latency,
        });
        ConnInfo {
            peer: self.peer,
            // Reading (1) once the session is established, as ZooKeeper's selector.
            interest_ops: u8::from(session.is_some()),
            queued: c.queued,
            received: c.received,
            sent: c.sent,
            session,
        }
    }

    fn dump(&self, out: &mut String, brief: bool) {
        let info = self.info();
        // Java's InetSocketAddress.toString() of an address without a host name.
        let _ = write!(
            out,
            " /{}:{}[{}](queued={},recved={},sent={}",
            info.peer.ip(),
            info.peer.port(),
            info.interest_ops,
            info.queued,
            info.received,
            info.sent
        );
        if let Some(s) = info.session.filter(|_| !brief) {
            let _ = write!(
                out,
                ",sid={:#x},lop={},est={},to={}",
                s.session_id, s.last_op, s.established, s.timeout
            );
            if s.last_cxid >= 0 {
                let _ = write!(out, ",lcxid={:#x}", s.last_cxid);
            }
            let _ = write!(
                out,
                ",lzxid={:#x},lresp={},llat={},minlat={},avglat={},maxlat={}",
                s.last_zxid,
                s.last_response,
                s.last_latency,
                s.min_latency,
                s.avg_latency,
                s.max_latency
            );
        }
        out.push(')');
    }
}

/// One connection as `cons` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub interest_ops: u8,
    pub queued: usize,
    pub received: u64,
    pub sent: u64,
    /// Once the connection holds a session.
    pub session: Option<SessionInfo>,
}

/// What `cons` lists of a connection's session and its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub session_id: i64,
    pub last_op: &'static str,
    /// Milliseconds since the Unix epoch.
    pub established: i64,
    pub timeout: i32,
    /// -1 until a request, or after a reset.
    pub last_cxid: i64,
    pub last_zxid: i64,
    pub last_response: u64,
    pub last_latency: u64,
    pub min_latency: u64,
    pub avg_latency: u64,
    pub max_latency: u64,
}

/// ZooKeeper's name for an op in `lop` (`FinalRequestProcessor`'s `lastOp`).
fn last_op(op: OpCode) -> &'static str {
    match op {
        OpCode::Ping => "PING",
        OpCode::CreateSession => "SESS",
        OpCode::Multi => "MULT",
        OpCode::MultiRead => "MLTR",
        OpCode::Create | OpCode::Create2 | OpCode::CreateTtl | OpCode::CreateContainer => "CREA",
        OpCode::Delete | OpCode::DeleteContainer => "DELE",
        OpCode::SetData => "SETD",
        OpCode::Reconfig => "RECO",
        OpCode::SetAcl => "SETA",
        OpCode::CloseSession => "CLOS",
        OpCode::Sync => "SYNC",
        OpCode::Check => "CHEC",
        OpCode::Exists => "EXIS",
        OpCode::GetData => "GETD",
        OpCode::SetWatches => "SETW",
        OpCode::SetWatches2 => "STW2",
        OpCode::AddWatch => "ADDW",
        OpCode::GetAcl => "GETA",
        OpCode::GetChildren | OpCode::GetChildren2 => "GETC",
        OpCode::GetAllChildrenNumber => "GETACN",
        OpCode::CheckWatches => "CHKW",
        OpCode::RemoveWatches => "REMW",
        OpCode::WhoAmI => "HOMI",
        OpCode::GetEphemerals => "GETE",
        _ => "NA",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cons_lines_as_zookeeper_writes_them() {
        let table = ConnStatsTable::default();
        let epoch = Instant::now();
        let fourlw = table.open(2, "127.0.0.1:4000".parse().unwrap(), epoch);
        fourlw.received();
        let client = table.open(1, "127.0.0.1:3000".parse().unwrap(), epoch);
        client.established(0x1000_0000_0001, 10_000, 1_700_000_000_000);
        for _ in 0..3 {
            client.received();
            client.sent();
        }
        client.response(7, 0x20, OpCode::GetChildren, 4);
        client.response(-2, 0x20, OpCode::Ping, 0);
        let text = table.dump(false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split(",lresp=").next(),
            Some(
                " /127.0.0.1:3000[1](queued=0,recved=3,sent=3,sid=0x100000000001,lop=PING,\
                 est=1700000000000,to=10000,lcxid=0x7,lzxid=0x20"
            )
        );
        assert!(
            lines[0].ends_with(",llat=0,minlat=0,avglat=2,maxlat=4)"),
            "{}",
            lines[0]
        );
        assert_eq!(lines[1], " /127.0.0.1:4000[0](queued=0,recved=1,sent=0)");
        assert_eq!(
            table.dump(true).lines().next(),
            Some(" /127.0.0.1:3000[1](queued=0,recved=3,sent=3)")
        );

        table.reset_all();
        assert_eq!(
            table.dump(false).lines().next(),
            Some(
                " /127.0.0.1:3000[1](queued=0,recved=0,sent=0,sid=0x100000000001,lop=NA,\
                 est=1700000000000,to=10000,lzxid=0xffffffffffffffff,lresp=0,llat=0,\
                 minlat=0,avglat=0,maxlat=0)"
            )
        );
        table.close(1);
        table.close(2);
        assert_eq!(table.dump(false), "");
    }
}

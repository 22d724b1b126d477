//! Peer traffic: raft messages and session liveness between the servers of an
//! ensemble, over TCP to each peer's `peerPort` (the first port of `server.N`; the
//! election port is not used, since raft elects over the same connection).
//!
//! Wire format, one frame per message: `length u32 | kind u8 | payload`, where kind
//! 1 is a raft `Message` (protobuf); 2 a liveness report to the leader
//! (`seq u64 | count u32 | (session i64 | age_ms u32)…`: each session this server holds
//! and how long ago its client was last heard from); 3 a hello (`server id u64 |
//! flags u8`, bit 0: the sender has raft state), the first frame on every connection;
//! 4 the leader's acknowledgement of a report (`seq u64 | commit u64`: the index the
//! leader had applied); 5 a keepalive (empty).
//!
//! Snapshots travel on a connection of their own, so heartbeats and appends go on
//! meanwhile: after the hello, 6 begins one (`file_len u64 | the raft MsgSnapshot`,
//! protobuf, metadata only), 7 carries the next chunk of the snapshot file (up to 1
//! MiB, in order), 8 ends it; the receiver writes the file to dataDir, fsyncs and
//! verifies it (the file carries its own CRC), then answers 9 (`ok u8`) and hands the
//! message to raft. The leader reports the outcome to raft (`report_snapshot`): a
//! failed or stalled transfer starts again from the beginning when raft retries.
//!
//! Receiving: the accepting task reads a connection's hello; a plain-TCP message
//! link is then handed to the raft thread (`Handover`), which reads it itself
//! (`adopted`, `consensus::inbox`): one wake-up per message instead of a tokio
//! worker's and then the raft thread's. Snapshot streams and TLS links stay here.
//!
//! Sending never blocks the raft loop: a frame for an idle plain-TCP link is written
//! at once by the sending thread, without blocking; the rest waits in the peer's
//! bounded queue (`queue`), drained by the link's task, which batches what waits into
//! one write and reconnects with backoff. A full queue drops the message; raft
//! retransmits.
//!
//! A cut link must be noticed quickly, or a healed server would wait out TCP's
//! retransmission back-off (tens of seconds) before it hears its peers again: an idle
//! sender writes a keepalive every half tick, so a dead connection always has unacked
//! data, and `TCP_USER_TIMEOUT` fails it after two tickTimes; connects and writes are
//! bounded too, and a receiver drops a connection that has been silent for four.
//!
//! With `sslQuorum=true` every connection is TLS, mutually authenticated
//! (`crate::tls::PeerTls`): the connecting end presents its certificate and checks the
//! peer's against the quorum trust store (and its `server.N` host), and the accepting
//! end refuses, and logs, a connection whose certificate the trust store does not
//! vouch for, before reading a byte of it. A stranger on the network can then neither
//! join the raft group nor forge messages or liveness reports. The frames inside are
//! the same.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use protobuf::{CodedOutputStream, Message as _};
use raft::prelude::{Message, MessageType};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub use self::adopted::{AdoptedPeer, PeerSocket};
use self::queue::PeerQueue;
use crate::store::snapshot::{snapshot_name, LoadedSnapshot, SnapshotDir};
use crate::tls::PeerTls;

/// A peer connection: TCP, or TLS over TCP.
trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> PeerIo for T {}
type PeerStream = Box<dyn PeerIo>;

/// The largest peer frame accepted: a raft append of up to `max_size_per_msg` plus slack.
const MAX_PEER_FRAME: usize = 64 * 1024 * 1024;

const KIND_RAFT: u8 = 1;
const KIND_REPORT: u8 = 2;
const KIND_HELLO: u8 = 3;
const KIND_ACK: u8 = 4;
const KIND_KEEPALIVE: u8 = 5;
const KIND_SNAPSHOT_BEGIN: u8 = 6;
const KIND_SNAPSHOT_CHUNK: u8 = 7;
const KIND_SNAPSHOT_END: u8 = 8;
const KIND_SNAPSHOT_DONE: u8 = 9;

/// Bytes of snapshot file per chunk frame.
const SNAPSHOT_CHUNK: usize = 1024 * 1024;

/// How long a link may be silent or stuck, all derived from tickTime.
#[derive(Debug, Clone, Copy)]
pub struct LinkTiming {
    /// An idle sender writes a keepalive this often.
    pub keepalive: Duration,
    /// Data unacknowledged by the peer's TCP this long fails the connection.
    pub unacked_limit: Duration,
    /// A connect or a write that takes longer is abandoned and retried.
    pub stall_limit: Duration,
    /// A receiver that hears nothing this long drops the connection.
    pub silence_limit: Duration,
    /// The longest wait between reconnect attempts.
    pub max_backoff: Duration,
}

impl LinkTiming {
    pub fn from_tick_time(tick_time: Duration) -> Self {
        LinkTiming {
            keepalive: tick_time / 2,
            unacked_limit: tick_time * 2,
            stall_limit: tick_time * 2,
            silence_limit: tick_time * 4,
            max_backoff: tick_time.min(Duration::from_secs(1)),
        }
    }
}

/// A follower's report of the sessions it holds, for the leader's expiry clock. Each
/// report says everything (not what changed since the last), so a lost one is made
/// good by the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivenessReport {
    pub seq: u64,
    /// (session, milliseconds since its client was last heard from).
    pub sessions: Vec<(i64, u32)>,
}

/// Something a peer sent us.
#[derive(Debug)]
pub enum PeerEvent {
    Raft(Message),
    /// The first frame of a connection: who the peer is, and whether it has raft state.
    Hello {
        from: u64,
        has_state: bool,
    },
    Report {
        from: u64,
        report: LivenessReport,
    },
    /// The leader applied our report `seq`, having applied the log up to `commit`.
    Ack {
        from: u64,
        seq: u64,
        commit: u64,
    },
    /// A snapshot streamed from the leader arrived whole and verified, now under its
    /// final name in dataDir; `message` is raft's MsgSnapshot (metadata only). The
    /// leader hears that it was delivered once `prepared` is answered (the state image
    /// decoded and the message handed to raft), so it does not send another meanwhile.
    Snapshot {
        message: Message,
        snapshot: LoadedSnapshot,
        prepared: tokio::sync::oneshot::Sender<bool>,
    },
    /// Our stream of a snapshot to `to` ended: raft must hear of it
    /// (`report_snapshot`), or it never sends that follower anything again.
    SnapshotSent {
        to: u64,
        ok: bool,
    },
}

/// The sending side: a bounded queue per peer.
#[derive(Clone)]
pub struct Transport {
    peers: Arc<HashMap<u64, Arc<PeerQueue>>>,
    streams: Arc<SnapshotStreams>,
}

/// What streaming a snapshot to a peer needs.
struct SnapshotStreams {
    /// The raft thread asks for streams; they run on the server's runtime.
    runtime: tokio::runtime::Handle,
    links: HashMap<u64, Link>,
    snapshots: SnapshotDir,
    deliver: Deliver,
    shutdown: CancellationToken,
}

type Deliver = Arc<dyn Fn(PeerEvent) + Send + Sync>;

/// Takes over plain-TCP message links from the transport's tasks (the raft thread,
/// which then reads them itself: `consensus::inbox`).
pub type Handover = Arc<dyn Fn(AdoptedPeer) + Send + Sync>;

/// Who this server is on its peer links.
#[derive(Debug, Clone)]
pub struct Identity {
    pub id: u64,
    /// Sent in every hello (read when each connection opens): a server that lost its
    /// raft state uses its peers' answers to tell a new ensemble from one it must
    /// rejoin carefully.
    pub has_state: Arc<AtomicBool>,
    /// The certificates of TLS peer links (`sslQuorum=true`); `None`: plain TCP.
    pub tls: Option<PeerTls>,
}

impl Transport {
    /// Starts a sender task per peer and the listener for incoming peer connections;
    /// what peers send is handed to `deliver`, and plain-TCP message links, once open,
    /// to `handover` if there is one.
    // Each argument is a separate part the daemon wires in; a struct for them would
    // only rename the list.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        me: Identity,
        listen: SocketAddr,
        peers: HashMap<u64, SocketAddr>,
        timing: LinkTiming,
        snapshots: SnapshotDir,
        deliver: impl Fn(PeerEvent) + Send + Sync + 'static,
        handover: Option<Handover>,
        shutdown: CancellationToken,
    ) -> std::io::Result<Transport> {
        let deliver: Deliver = Arc::new(deliver);
        let listener = TcpListener::bind(listen).await?;
        tokio::spawn(accept_loop(
            listener,
            me.tls.clone(),
            deliver.clone(),
            handover,
            timing,
            snapshots.clone(),
            shutdown.clone(),
        ));
        let mut senders = HashMap::new();
        let mut links = HashMap::new();
        for (id, addr) in peers {
            if id == me.id {
                continue;
            }
            let queue = Arc::new(PeerQueue::default());
            let link = Link {
                me: me.clone(),
                peer: id,
                addr,
                timing,
            };
            links.insert(id, link.clone());
            tokio::spawn(link.run(queue.clone(), shutdown.clone()));
            senders.insert(id, queue);
        }
        Ok(Transport {
            peers: Arc::new(senders),
            streams: Arc::new(SnapshotStreams {
                runtime: tokio::runtime::Handle::current(),
                links,
                snapshots,
                deliver,
                shutdown,
            }),
        })
    }

    /// Queues raft messages for their peers; never blocks. A snapshot goes on a
    /// connection of its own (see the module docs).
    pub fn send(&self, messages: Vec<Message>) {
        for message in messages {
            if message.get_msg_type() == MessageType::MsgSnapshot {
                self.stream_snapshot(message);
                continue;
            }
            if let Some(peer) = self.peers.get(&message.to) {
                // Full: dropped, raft retransmits what matters.
                peer.push(|out| encode_raft(out, &message));
            }
        }
        // One write per peer for the lot.
        for peer in self.peers.values() {
            peer.flush();
        }
    }

    /// Sends a liveness report to `leader`. Best effort: the next one repeats it.
    pub fn report(&self, leader: u64, report: LivenessReport) {
        if let Some(peer) = self.peers.get(&leader) {
            peer.push(|out| encode_report(out, &report));
            peer.flush();
        }
    }

    /// Acknowledges report `seq` to the follower that sent it. Best effort: the
    /// follower counts on the next one.
    pub fn ack(&self, follower: u64, seq: u64, commit: u64) {
        if let Some(peer) = self.peers.get(&follower) {
            peer.push(|out| encode_ack(out, seq, commit));
            peer.flush();
        }
    }
}

impl Transport {
    /// Streams the snapshot file `message` names to its peer, in the background, and
    /// reports the outcome as [`PeerEvent::SnapshotSent`].
    fn stream_snapshot(&self, message: Message) {
        let streams = self.streams.clone();
        let to = message.to;
        let Some(link) = streams.links.get(&to).cloned() else {
            return;
        };
        let runtime = streams.runtime.clone();
        runtime.spawn(async move {
            let index = message.get_snapshot().get_metadata().index;
            let path = streams.snapshots.path().join(snapshot_name(index));
            let started = std::time::Instant::now();
            let sent = tokio::select! {
                sent = link.send_snapshot(message, &path) => sent,
                _ = streams.shutdown.cancelled() => return,
            };
            let ok = match sent {
                Ok(bytes) => {
                    tracing::info!(
                        peer = to,
                        "sent snapshot {index} ({bytes} bytes) in {:?}",
                        started.elapsed()
                    );
                    true
                }
                Err(e) => {
                    tracing::warn!(peer = to, "sending snapshot {index} failed: {e}");
                    false
                }
            };
            (streams.deliver)(PeerEvent::SnapshotSent { to, ok });
        });
    }
}

fn encode(out: &mut BytesMut, kind: u8, payload: impl FnOnce(&mut BytesMut)) {
    let start = out.len();
    out.put_u32(0);
    out.put_u8(kind);
    payload(out);
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// The connection to one peer, and what it sends there.
#[derive(Clone)]
struct Link {
    me: Identity,
    peer: u64,
    addr: SocketAddr,
    timing: LinkTiming,
}

impl Link {
    async fn run(self, queue: Arc<PeerQueue>, shutdown: CancellationToken) {
        let mut backoff = Duration::from_millis(50).min(self.timing.max_backoff);
        let mut reachable = true;
        loop {
            let connected = tokio::select! {
                connected = self.connect() => connected,
                _ = shutdown.cancelled() => return,
            };
            let stream = match connected {
                Ok(stream) => stream,
                Err(e) => {
                    if reachable {
                        tracing::info!(peer = self.peer, addr = %self.addr, "peer unreachable: {e}");
                        reachable = false;
                    }
                    queue.disconnected();
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = shutdown.cancelled() => return,
                    }
                    backoff = (backoff * 2).min(self.timing.max_backoff);
                    continue;
                }
            };
            if !reachable {
                tracing::info!(peer = self.peer, addr = %self.addr, "peer reachable again");
                reachable = true;
            }
            backoff = Duration::from_millis(50).min(self.timing.max_backoff);
            let pumped = self.pump(stream, &queue, &shutdown).await;
            queue.disconnected();
            match pumped {
                Ok(()) => return,
                Err(e) => {
                    tracing::info!(peer = self.peer, addr = %self.addr, "peer link lost: {e}")
                }
            }
        }
    }

    /// Streams the snapshot file at `path` on a new connection; the bytes sent once
    /// the peer confirmed it has the file, verified.
    async fn send_snapshot(&self, message: Message, path: &Path) -> std::io::Result<u64> {
        let mut file = tokio::fs::File::open(path).await?;
        let len = file.metadata().await?.len();
        let mut stream = self.connect().await?;
        let mut out = BytesMut::with_capacity(SNAPSHOT_CHUNK + 64);
        self.hello(&mut out);
        let header = message
            .write_to_bytes()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        encode(&mut out, KIND_SNAPSHOT_BEGIN, |b| {
            b.put_u64(len);
            b.put_slice(&header);
        });
        let mut sent = 0u64;
        let mut chunk = vec![0u8; SNAPSHOT_CHUNK];
        loop {
            self.write_bounded(&mut stream, &out).await?;
            out.clear();
            if sent == len {
                break;
            }
            let n = file.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the snapshot file shrank while being sent",
                ));
            }
            sent += n as u64;
            encode(&mut out, KIND_SNAPSHOT_CHUNK, |b| b.put_slice(&chunk[..n]));
            if sent == len {
                encode(&mut out, KIND_SNAPSHOT_END, |_| {});
            }
        }
        // The receiver fsyncs, verifies and decodes the whole file before it answers.
        let answer_limit = self.timing.stall_limit * 4 + Duration::from_secs(300);
        let mut reply = BytesMut::new();
        let frame = tokio::time::timeout(answer_limit, async {
            loop {
                if let Some(frame) = next_frame(&mut reply).map_err(std::io::Error::other)? {
                    return Ok::<Bytes, std::io::Error>(frame);
                }
                if stream.read_buf(&mut reply).await? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
            }
        })
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer"))??;
        match frame.as_ref() {
            [KIND_SNAPSHOT_DONE, 1] => Ok(sent),
            _ => Err(std::io::Error::other("the peer refused the snapshot")),
        }
    }

    fn hello(&self, out: &mut BytesMut) {
        encode(out, KIND_HELLO, |b| {
            b.put_u64(self.me.id);
            b.put_u8(u8::from(self.me.has_state.load(Ordering::Acquire)));
        });
    }

    /// Writes `bytes` and flushes them (a TLS session may hold some back), within the
    /// stall limit.
    async fn write_bounded(&self, stream: &mut Connection, bytes: &[u8]) -> std::io::Result<()> {
        tokio::time::timeout(self.timing.stall_limit, stream.write_all(bytes))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "write stalled"))?
    }

    async fn connect(&self) -> std::io::Result<Connection> {
        let timed_out = |what| std::io::Error::new(std::io::ErrorKind::TimedOut, what);
        let stream = tokio::time::timeout(self.timing.stall_limit, TcpStream::connect(self.addr))
            .await
            .map_err(|_| timed_out("connect timed out"))??;
        stream.set_nodelay(true)?;
        socket2::SockRef::from(&stream).set_tcp_user_timeout(Some(self.timing.unacked_limit))?;
        let Some(tls) = &self.me.tls else {
            return Ok(Connection::Plain(Arc::new(stream)));
        };
        let name = tls.names.get(&self.peer).cloned().ok_or_else(|| {
            std::io::Error::other(format!("no TLS name for server.{}", self.peer))
        })?;
        let secured =
            tokio::time::timeout(self.timing.stall_limit, tls.connector.connect(name, stream))
                .await
                .map_err(|_| timed_out("TLS handshake timed out"))??;
        Ok(Connection::Tls(Box::new(secured)))
    }

    /// Writes what is queued until the connection fails (an error) or the server
    /// shuts down (`Ok`).
    async fn pump(
        &self,
        mut stream: Connection,
        queue: &PeerQueue,
        shutdown: &CancellationToken,
    ) -> std::io::Result<()> {
        let mut hello = BytesMut::new();
        self.hello(&mut hello);
        self.write_bounded(&mut stream, &hello).await?;
        queue.connected(stream.direct());
        loop {
            if let Some(batch) = queue.take() {
                self.write_bounded(&mut stream, &batch).await?;
                queue.written();
                continue;
            }
            tokio::select! {
                _ = queue.woken() => {}
                _ = tokio::time::sleep(self.timing.keepalive) => {
                    queue.push(|out| encode(out, KIND_KEEPALIVE, |_| {}));
                    queue.flush();
                }
                _ = shutdown.cancelled() => return Ok(()),
            }
        }
    }
}

/// A link's connection: the task writes to either kind; senders write directly to a
/// plain one (see `queue`).
enum Connection {
    Plain(Arc<TcpStream>),
    Tls(PeerStream),
}

impl Connection {
    fn direct(&self) -> Option<Arc<TcpStream>> {
        match self {
            Connection::Plain(stream) => Some(stream.clone()),
            Connection::Tls(_) => None,
        }
    }

    async fn write_all(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Connection::Plain(stream) => {
                while !bytes.is_empty() {
                    stream.writable().await?;
                    match stream.try_write(bytes) {
                        Ok(n) => bytes = &bytes[n..],
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
            Connection::Tls(stream) => {
                stream.write_all(bytes).await?;
                stream.flush().await
            }
        }
    }

    /// For the snapshot stream, which also reads the peer's answer.
    async fn read_buf(&mut self, buf: &mut BytesMut) -> std::io::Result<usize> {
        match self {
            Connection::Plain(stream) => loop {
                stream.readable().await?;
                match stream.try_read_buf(buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    read => return read,
                }
            },
            Connection::Tls(stream) => stream.read_buf(buf).await,
        }
    }
}

fn encode_report(out: &mut BytesMut, report: &LivenessReport) {
    encode(out, KIND_REPORT, |b| {
        b.put_u64(report.seq);
        b.put_u32(report.sessions.len() as u32);
        for (session, age) in &report.sessions {
            b.put_i64(*session);
            b.put_u32(*age);
        }
    })
}

fn encode_ack(out: &mut BytesMut, seq: u64, commit: u64) {
    encode(out, KIND_ACK, |b| {
        b.put_u64(seq);
        b.put_u64(commit);
    })
}

/// Encodes straight into the queue's buffer: sized first, then written in place.
/// (protobuf's `write_to_writer` allocates an 8 KiB buffer per message and copies out
/// of it; on the raft thread that was a malloc, a free and a copy per peer message.)
fn encode_raft(out: &mut BytesMut, message: &Message) {
    let start = out.len();
    let mut failed = None;
    encode(out, KIND_RAFT, |b| {
        let size = message.compute_size() as usize;
        let at = b.len();
        b.resize(at + size, 0);
        // Writing past `size` is an error here; writing less (a protobuf bug) would
        // leave zeros, which no peer decodes (tag 0 is invalid), not a wrong message.
        let mut os = CodedOutputStream::bytes(&mut b[at..]);
        if let Err(e) = message.write_to_with_cached_sizes(&mut os) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        out.truncate(start);
        tracing::error!("cannot encode a raft message: {e}");
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<PeerTls>,
    deliver: Deliver,
    handover: Option<Handover>,
    timing: LinkTiming,
    snapshots: SnapshotDir,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.cancelled() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let deliver = deliver.clone();
                let shutdown = shutdown.clone();
                let snapshots = snapshots.clone();
                let tls = tls.clone();
                let handover = handover.clone();
                tokio::spawn(async move {
                    let receiver = Receiver {
                        deliver: &*deliver,
                        silence_limit: timing.silence_limit,
                        snapshots: &snapshots,
                        hand_over: tls.is_none() && handover.is_some(),
                    };
                    let Some(tls) = tls else {
                        let ended = tokio::select! {
                            result = receiver.run(stream) => result,
                            _ = shutdown.cancelled() => return,
                        };
                        match ended {
                            Ok(Some((stream, buffered, from))) => {
                                let handover = handover.as_deref();
                                match (stream.into_std(), handover) {
                                    (Ok(stream), Some(handover)) => handover(AdoptedPeer {
                                        stream,
                                        buffered,
                                        from,
                                        silence_limit: timing.silence_limit,
                                        deliver: deliver.clone(),
                                    }),
                                    (Err(e), _) => {
                                        tracing::warn!(%peer, "cannot hand a peer connection over: {e}")
                                    }
                                    (Ok(_), None) => {}
                                }
                            }
                            Ok(None) => {}
                            Err(e) => tracing::debug!(%peer, "peer stream ended: {e}"),
                        }
                        return;
                    };
                    let handshake =
                        tokio::time::timeout(timing.stall_limit, tls.acceptor.accept(stream));
                    let stream = match handshake.await {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(e)) => {
                            tracing::warn!(%peer, "refused a peer connection: TLS handshake failed: {e}");
                            return;
                        }
                        Err(_) => {
                            tracing::warn!(%peer, "refused a peer connection: no TLS handshake within {:?}", timing.stall_limit);
                            return;
                        }
                    };
                    tokio::select! {
                        result = receiver.run(stream) => {
                            if let Err(e) = result {
                                tracing::debug!(%peer, "peer stream ended: {e}");
                            }
                        }
                        _ = shutdown.cancelled() => {}
                    }
                });
            }
            Err(e) => {
                tracing::warn!("peer accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    #[error("closed by the peer")]
    Closed,
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("peer frame of {0} bytes is over the limit")]
    TooLarge(usize),
    #[error("malformed peer frame")]
    Malformed,
    #[error("peer silent for {0:?}")]
    Silent(Duration),
    #[error("snapshot from the leader: {0}")]
    Snapshot(String),
}

/// The receiving end of one peer connection.
struct Receiver<'a> {
    deliver: &'a (dyn Fn(PeerEvent) + Send + Sync),
    silence_limit: Duration,
    snapshots: &'a SnapshotDir,
    /// Whether a message link is handed over once open (`Handover`).
    hand_over: bool,
}

/// A snapshot arriving on a connection.
struct Incoming {
    message: Message,
    index: u64,
    len: u64,
    written: u64,
    path: PathBuf,
    file: tokio::fs::File,
}

/// How receiving on a connection ended.
enum Pumped {
    /// The peer closed it, or a snapshot stream is done.
    Closed,
    /// It is a message link, to be handed over.
    MessageLink,
}

/// How a snapshot stream ended on the receiving side.
enum Received {
    Verified(Box<(Message, LoadedSnapshot)>),
    Refused,
}

impl Receiver<'_> {
    /// Receives until the peer closes the connection, or, for a link to hand over, until
    /// its first frame after the hello: then returns the stream, the bytes read past
    /// that frame and the peer's id.
    async fn run<S: PeerIo>(
        &self,
        mut stream: S,
    ) -> Result<Option<(S, BytesMut, u64)>, ReceiveError> {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let mut from = None;
        let mut incoming: Option<Incoming> = None;
        let result = self
            .pump(&mut stream, &mut buf, &mut from, &mut incoming)
            .await;
        if let Some(unfinished) = incoming {
            let _ = tokio::fs::remove_file(&unfinished.path).await;
        }
        match (result?, from) {
            (Pumped::MessageLink, Some(from)) => Ok(Some((stream, buf, from))),
            _ => Ok(None),
        }
    }

    async fn pump<S: PeerIo>(
        &self,
        stream: &mut S,
        buf: &mut BytesMut,
        from: &mut Option<u64>,
        incoming: &mut Option<Incoming>,
    ) -> Result<Pumped, ReceiveError> {
        loop {
            while let Some(frame) = next_frame(buf)? {
                let kind = frame.first().copied();
                let snapshot_frame =
                    kind.is_some_and(|k| (KIND_SNAPSHOT_BEGIN..=KIND_SNAPSHOT_END).contains(&k));
                if !snapshot_frame {
                    if let Some(event) = decode(frame, from)? {
                        (self.deliver)(event);
                    }
                    if self.hand_over && kind != Some(KIND_HELLO) && from.is_some() {
                        return Ok(Pumped::MessageLink);
                    }
                    continue;
                }
                if from.is_none() {
                    return Err(ReceiveError::Malformed);
                }
                let Some(received) = self.snapshot_frame(frame, incoming).await? else {
                    continue;
                };
                let ok = match received {
                    Received::Verified(verified) => {
                        let (message, snapshot) = *verified;
                        let (prepared, done) = tokio::sync::oneshot::channel();
                        (self.deliver)(PeerEvent::Snapshot {
                            message,
                            snapshot,
                            prepared,
                        });
                        // The leader waits on the answer (within its limit).
                        done.await.unwrap_or(false)
                    }
                    Received::Refused => false,
                };
                stream
                    .write_all(&[0, 0, 0, 2, KIND_SNAPSHOT_DONE, u8::from(ok)])
                    .await?;
                stream.flush().await?;
                return Ok(Pumped::Closed);
            }
            let read = tokio::time::timeout(self.silence_limit, stream.read_buf(buf))
                .await
                .map_err(|_| ReceiveError::Silent(self.silence_limit))?;
            if read? == 0 {
                return Ok(Pumped::Closed);
            }
        }
    }

    /// Takes one frame of a snapshot stream; at its end, what it came to.
    async fn snapshot_frame(
        &self,
        mut frame: Bytes,
        incoming: &mut Option<Incoming>,
    ) -> Result<Option<Received>, ReceiveError> {
        let kind = frame.get_u8();
        match (kind, incoming.as_mut()) {
            (KIND_SNAPSHOT_BEGIN, None) if frame.len() >= 8 => {
                let len = frame.get_u64();
                let message =
                    Message::parse_from_bytes(&frame).map_err(|_| ReceiveError::Malformed)?;
                if message.get_msg_type() != MessageType::MsgSnapshot {
                    return Err(ReceiveError::Malformed);
                }
                let index = message.get_snapshot().get_metadata().index;
                let path = self.snapshots.incoming_path(index);
                let file = tokio::fs::File::create(&path).await?;
                tracing::info!(
                    from = message.from,
                    "receiving snapshot {index} ({len} bytes) from the leader"
                );
                *incoming = Some(Incoming {
                    message,
                    index,
                    len,
                    written: 0,
                    path,
                    file,
                });
                Ok(None)
            }
            (KIND_SNAPSHOT_CHUNK, Some(stream)) => {
                stream.written += frame.len() as u64;
                if stream.written > stream.len {
                    return Err(ReceiveError::Snapshot("more bytes than announced".into()));
                }
                stream.file.write_all(&frame).await?;
                Ok(None)
            }
            (KIND_SNAPSHOT_END, Some(_)) if frame.is_empty() => {
                let Some(mut done) = incoming.take() else {
                    return Err(ReceiveError::Malformed);
                };
                if done.written != done.len {
                    let _ = tokio::fs::remove_file(&done.path).await;
                    return Err(ReceiveError::Snapshot("fewer bytes than announced".into()));
                }
                done.file.flush().await?;
                done.file.sync_all().await?;
                drop(done.file);
                let snapshots = self.snapshots.clone();
                let (path, index) = (done.path.clone(), done.index);
                let adopted = tokio::task::spawn_blocking(move || snapshots.adopt(&path, index))
                    .await
                    .map_err(|e| ReceiveError::Snapshot(e.to_string()))?;
                match adopted {
                    Ok(snapshot) => {
                        Ok(Some(Received::Verified(Box::new((done.message, snapshot)))))
                    }
                    Err(e) => {
                        tracing::error!("a snapshot from the leader failed verification: {e}");
                        Ok(Some(Received::Refused))
                    }
                }
            }
            _ => Err(ReceiveError::Malformed),
        }
    }
}

/// Decodes one frame; `from` is the peer's id once its hello has arrived (every other
/// frame before it is refused).
fn decode(mut frame: Bytes, from: &mut Option<u64>) -> Result<Option<PeerEvent>, ReceiveError> {
    if frame.is_empty() {
        return Err(ReceiveError::Malformed);
    }
    let kind = frame.get_u8();
    if kind == KIND_HELLO {
        if from.is_some() || !(frame.len() == 8 || frame.len() == 9) {
            return Err(ReceiveError::Malformed);
        }
        let id = frame.get_u64();
        let has_state = frame.first().is_none_or(|flags| flags & 1 == 1);
        *from = Some(id);
        return Ok(Some(PeerEvent::Hello {
            from: id,
            has_state,
        }));
    }
    let Some(from) = *from else {
        return Err(ReceiveError::Malformed);
    };
    let event = match kind {
        // Parsed from the frame's `Bytes`, each entry's data is a slice of the frame
        // rather than a copy in an allocation of its own; what keeps entries (the
        // in-memory log) is bounded, and a node's data is copied out when applied.
        KIND_RAFT => PeerEvent::Raft(
            Message::parse_from_carllerche_bytes(&frame).map_err(|_| ReceiveError::Malformed)?,
        ),
        KIND_REPORT => {
            if frame.len() < 12 {
                return Err(ReceiveError::Malformed);
            }
            let seq = frame.get_u64();
            let count = frame.get_u32() as usize;
            if frame.len() != count * 12 {
                return Err(ReceiveError::Malformed);
            }
            let sessions = (0..count)
                .map(|_| (frame.get_i64(), frame.get_u32()))
                .collect();
            PeerEvent::Report {
                from,
                report: LivenessReport { seq, sessions },
            }
        }
        KIND_ACK if frame.len() == 16 => PeerEvent::Ack {
            from,
            seq: frame.get_u64(),
            commit: frame.get_u64(),
        },
        KIND_KEEPALIVE if frame.is_empty() => return Ok(None),
        _ => return Err(ReceiveError::Malformed),
    };
    Ok(Some(event))
}

fn next_frame(buf: &mut BytesMut) -> Result<Option<Bytes>, ReceiveError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_PEER_FRAME {
        return Err(ReceiveError::TooLarge(len));
    }
    if buf.len() < 4 + len {
        buf.reserve(4 + len - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

#[path = "transport/adopted.rs"]
mod adopted;
#[path = "transport/queue.rs"]
mod queue;
#[cfg(test)]
#[path = "transport/tests.rs"]
mod tests;

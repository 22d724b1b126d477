//! The raft loop: one thread owns the `RawNode`, takes proposals, peer messages,
//! read-index requests and the log writer's fsync reports from one inbox (a channel,
//! and the peer connections it reads itself: `super::inbox`), ticks, and
//! handles each `Ready` in the order raft-rs documents for asynchronous persistence
//! (`crate::store::storage` spells the contract out). Committed entries go to the
//! [`Applier`] in log order; every `snapCount` or so, the applier's image is written
//! to a snapshot in the background and the log is compacted behind it.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use raft::prelude::{Entry, EntryType, HardState, Message, MessageType, Snapshot};
use raft::{RawNode, SnapshotStatus, StateRole};

use crate::fatal::fatal;
use crate::metrics::{observe_millis, RaftMetrics};
use crate::monotonic::AtomicInstant;
use crate::store::DurableStorage;
use crate::txn::{Origin, ORIGIN_LEN};

use super::after_fsync::AfterFsync;
use super::contact::QuorumContact;
use super::inbox::{inbox, Inbox, InboxSender};
use super::logger::raft_logger;
use super::lost_data;
use super::quorum_ack::QuorumAckClock;
use super::recovery::{RaftStateOnDisk, VoteGuard};
use super::replica::Replica;
use super::transport::{AdoptedPeer, Transport};

/// What the loop hands committed entries and confirmed reads to: the state machine.
pub trait Applier: Send + 'static {
    /// Applies committed entries in order. The `index` of each entry is its zxid.
    fn apply(&mut self, entries: &[Entry]);
    /// A read-index request is confirmed and everything up to its index is applied:
    /// a read now sees every write committed before it was asked for.
    fn read_ready(&mut self, request: u64);
    /// raft refused to take a proposal (no leader known): it will never commit.
    /// `head` is the proposal's first [`ORIGIN_LEN`] bytes.
    fn dropped(&mut self, head: &[u8]);
    /// Replaces the whole state with a snapshot the leader sent: its payload is in the
    /// message, or (streamed) in dataDir under the snapshot's index.
    fn restore(&mut self, snapshot: &Snapshot);
    /// A consistent image of the state as of the last applied entry, taken now and
    /// written out later, off the raft thread.
    fn image(&mut self) -> SnapshotWriter;
}

/// Writes a state image into a snapshot file's payload.
pub type SnapshotWriter = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

#[derive(Debug, Clone)]
pub struct ConsensusConfig {
    pub id: u64,
    pub voters: Vec<u64>,
    /// Observers: raft learners, which replicate and serve but do not vote.
    pub learners: Vec<u64>,
    /// One raft tick. Elections take 10 to 20 ticks, heartbeats go every 3.
    pub tick: Duration,
    /// The index the state machine was restored to (its snapshot's), 0 for none.
    pub applied: u64,
    /// `snapCount`: a snapshot every this many entries, randomized within
    /// [snapCount/2, snapCount] so that servers don't all snapshot at once.
    pub snap_count: u64,
    /// Whether the raft state survived on disk: if not, the server rejoins without a
    /// vote until it has caught up (see `recovery`).
    pub raft_state: RaftStateOnDisk,
    /// Set once this server has raft state (told to peers in the hello).
    pub has_state: Arc<AtomicBool>,
}

/// What other threads ask of the raft loop.
enum Input {
    Propose(Vec<u8>),
    Peer(Message),
    /// A ReadIndex barrier for `sync`, identified by a request number.
    ReadIndex(u64),
    /// The log writer's report: every `Ready` up to this number is durable.
    Persisted(u64),
    /// A background snapshot at this index is written.
    SnapshotWritten(u64),
    /// A peer's hello: whether it has raft state.
    Hello {
        from: u64,
        has_state: bool,
    },
    /// Our snapshot stream to `to` ended, delivered or not.
    SnapshotReport {
        to: u64,
        ok: bool,
    },
    /// A peer's message link, from now on read by this thread.
    AdoptPeer(AdoptedPeer),
}

/// The cheap handle other threads use to reach the raft thread.
#[derive(Clone)]
pub struct Proposer {
    tx: InboxSender<Input>,
    after_fsync: Arc<AfterFsync>,
}

/// The channel between proposers and the raft thread, made before either exists.
pub fn channel() -> io::Result<(Proposer, Proposals)> {
    let (tx, rx) = inbox()?;
    let after_fsync = Arc::new(AfterFsync::default());
    Ok((
        Proposer {
            tx,
            after_fsync: after_fsync.clone(),
        },
        Proposals { rx, after_fsync },
    ))
}

/// The raft thread's end of [`channel`].
pub struct Proposals {
    rx: Inbox<Input>,
    after_fsync: Arc<AfterFsync>,
}

impl Proposer {
    /// Queues `data` to be proposed (a follower's raft forwards it to the leader).
    pub fn propose(&self, data: Vec<u8>) -> Result<(), ConsensusStopped> {
        self.tx
            .send(Input::Propose(data))
            .map_err(|_| ConsensusStopped)
    }

    /// Hands a message from a peer to raft.
    pub fn step(&self, message: Message) {
        let _ = self.tx.send(Input::Peer(message));
    }

    /// Hands a peer's message link to the raft thread, which reads it from then on.
    pub fn adopt_peer(&self, peer: AdoptedPeer) {
        let _ = self.tx.send(Input::AdoptPeer(peer));
    }

    /// Tells raft how streaming a snapshot to `to` ended: until it hears, it sends that
    /// follower nothing more.
    pub fn report_snapshot(&self, to: u64, ok: bool) {
        let _ = self.tx.send(Input::SnapshotReport { to, ok });
    }

    /// Passes on a peer's hello (for the vote guard of a server that lost its state).
    pub fn hello(&self, from: u64, has_state: bool) {
        let _ = self.tx.send(Input::Hello { from, has_state });
    }

    /// Asks for a ReadIndex barrier; `Applier::read_ready(request)` follows once it
    /// holds, or never if leadership is lost meanwhile (callers time out).
    pub fn read_index(&self, request: u64) -> Result<(), ConsensusStopped> {
        self.tx
            .send(Input::ReadIndex(request))
            .map_err(|_| ConsensusStopped)
    }

    /// The hook the log writer calls after each fsync (on its own thread): sends the
    /// votes and acks that waited for it, then tells the raft loop.
    pub fn persisted_hook(&self) -> impl FnMut(u64) + Send + 'static {
        let tx = self.tx.clone();
        let after_fsync = self.after_fsync.clone();
        move |number| {
            after_fsync.release(number);
            let _ = tx.send(Input::Persisted(number));
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the consensus thread has stopped")]
pub struct ConsensusStopped;

/// The raft role, as `srvr` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Role {
    Follower = 0,
    Candidate = 1,
    Leader = 2,
    Observer = 3,
}

impl Role {
    const ALL: [Role; 4] = [
        Role::Follower,
        Role::Candidate,
        Role::Leader,
        Role::Observer,
    ];

    /// What a raft state means here (an observer is a follower that cannot vote).
    fn of(state: StateRole, observer: bool) -> Role {
        match state {
            StateRole::Leader => Role::Leader,
            StateRole::Candidate | StateRole::PreCandidate => Role::Candidate,
            StateRole::Follower if observer => Role::Observer,
            StateRole::Follower => Role::Follower,
        }
    }
}

/// What the raft loop publishes for the rest of the server.
#[derive(Debug, Default)]
pub struct Status {
    role: AtomicU8,
    leader: AtomicU64,
    term: AtomicU64,
    /// On the leader: voters and learners other than itself, and how many of them have
    /// every entry the leader has.
    followers: AtomicU64,
    synced_followers: AtomicU64,
    /// The index of the last entry applied (of any kind).
    applied: AtomicU64,
    /// The index of the last entry known committed.
    commit: AtomicU64,
    /// Elections and snapshots, for `/metrics`.
    pub metrics: RaftMetrics,
    /// On the leader: the newest time by which a majority of voters had answered it.
    leader_contact: AtomicInstant,
}

impl Status {
    pub fn role(&self) -> Role {
        let stored = self.role.load(Ordering::Acquire);
        Role::ALL
            .into_iter()
            .find(|role| *role as u8 == stored)
            .unwrap_or(Role::Follower)
    }

    pub fn is_leader(&self) -> bool {
        self.role() == Role::Leader
    }

    /// The current leader's id, 0 if none is known.
    pub fn leader(&self) -> u64 {
        self.leader.load(Ordering::Acquire)
    }

    pub fn term(&self) -> u64 {
        self.term.load(Ordering::Acquire)
    }

    pub fn applied(&self) -> u64 {
        self.applied.load(Ordering::Acquire)
    }

    pub fn commit(&self) -> u64 {
        self.commit.load(Ordering::Acquire)
    }

    /// What the raft loop would publish on a follower of `leader`.
    #[cfg(test)]
    pub fn set_follower_of(&self, leader: u64) {
        self.role.store(Role::Follower as u8, Ordering::Release);
        self.leader.store(leader, Ordering::Release);
    }

    /// On the leader, when it last had a quorum answering it; `None` elsewhere.
    pub fn leader_contact(&self) -> Option<Instant> {
        self.leader_contact.load()
    }

    pub fn followers(&self) -> (u64, u64) {
        (
            self.followers.load(Ordering::Acquire),
            self.synced_followers.load(Ordering::Acquire),
        )
    }
}

/// The running raft thread.
pub struct Consensus {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Consensus {
    /// Starts the raft thread; it keeps `status` current for the rest of the server.
    pub fn start(
        config: ConsensusConfig,
        proposals: Proposals,
        proposer: Proposer,
        storage: DurableStorage,
        status: Arc<Status>,
        transport: Option<Transport>,
        applier: impl Applier,
    ) -> Result<Consensus, raft::Error> {
        let raft_config = raft::Config {
            id: config.id,
            election_tick: 10,
            heartbeat_tick: 3,
            pre_vote: true,
            check_quorum: true,
            max_inflight_msgs: 256,
            max_size_per_msg: 1024 * 1024,
            // Replaying a long log after a restart comes in bounded Readys, so the loop
            // sees a shutdown request between them instead of after the whole log.
            max_committed_size_per_ready: MAX_COMMITTED_BYTES_PER_READY,
            applied: config.applied,
            ..Default::default()
        };
        raft_config.validate()?;
        let mut node = RawNode::new(&raft_config, storage.clone(), &raft_logger())?;
        if config.voters == [config.id] {
            // A group of one needs no election timeout to pass before serving.
            node.campaign()?;
        }
        status.applied.store(config.applied, Ordering::Release);
        let stop = Arc::new(AtomicBool::new(false));
        let observer = config.learners.contains(&config.id);
        proposals.after_fsync.connect(transport.clone());
        let mut raft_loop = RaftLoop {
            stop: stop.clone(),
            replica: Replica::new(
                node,
                VoteGuard::new(config.id, config.voters.clone(), config.raft_state),
                QuorumContact::new(config.id, config.voters.clone()),
            ),
            inbox: proposals.rx,
            peer_messages: Vec::new(),
            applier,
            tick: config.tick,
            status,
            transport,
            observer,
            applied: config.applied,
            released: config.applied,
            pending_reads: Vec::new(),
            storage,
            proposer,
            after_fsync: proposals.after_fsync,
            snapshot_ready: None,
            submitted_ready: 0,
            persisted_ready: 0,
            unrecorded_hard_state: None,
            snapshots: SnapshotPolicy::new(config.snap_count, config.applied),
            has_state: config.has_state.clone(),
            leaderless_since: Some(Instant::now()),
            quorum_acks: QuorumAckClock::default(),
        };
        raft_loop.status.metrics.looking.inc();
        let thread = std::thread::Builder::new()
            .name("raft".into())
            // Debug builds of raft-rs and the persistent maps use deep frames.
            .stack_size(32 * 1024 * 1024)
            .spawn(move || {
                // A panic here would leave a server that answers clients but never
                // commits: end the process instead.
                let ran =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| raft_loop.run()));
                if ran.is_err() {
                    fatal(format_args!("the raft thread"), &"panicked");
                }
            })
            .map_err(raft::Error::Io)?;
        Ok(Consensus {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the raft thread (within a tick) and waits for it.
    pub fn join(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct RaftLoop<A: Applier> {
    /// Set at shutdown. The input channel does not disconnect on its own: the log
    /// writer's fsync hook and the transport send on it, and this loop owns the one and
    /// outlives the other. (The applier holds no sender: applying never proposes.)
    stop: Arc<AtomicBool>,
    /// raft-rs's node with the vote guard, the quorum contact and the wiped-follower
    /// repair around it.
    replica: Replica<DurableStorage>,
    storage: DurableStorage,
    /// For the background snapshot writer's report.
    proposer: Proposer,
    /// Each `Ready`'s persisted messages (votes, append responses), held until the
    /// fsync that covers it; the log writer sends them.
    after_fsync: Arc<AfterFsync>,
    /// A `Ready` that carried a snapshot, until it is durable: raft's applied index
    /// may not pass its persisted one, so `advance_apply` waits.
    snapshot_ready: Option<u64>,
    /// The number of the last `Ready` handed to the log writer, and of the last one
    /// it reported durable: the writer has nothing in flight when they are equal.
    submitted_ready: u64,
    persisted_ready: u64,
    /// The hard state of a `Ready` finished here, not yet given to the writer: it goes
    /// with the next `Ready` the writer takes, so the commit index the meta database
    /// records lags by one write at most.
    unrecorded_hard_state: Option<HardState>,
    snapshots: SnapshotPolicy,
    inbox: Inbox<Input>,
    /// Raft messages read from peer sockets in this turn (kept for its allocation).
    peer_messages: Vec<Message>,
    applier: A,
    tick: Duration,
    status: Arc<Status>,
    transport: Option<Transport>,
    observer: bool,
    /// The index of the last entry handed to the applier.
    applied: u64,
    /// Entries up to this index are no longer kept in memory (see `release_entries`).
    released: u64,
    /// Confirmed read-index requests waiting for `applied` to reach their index.
    pending_reads: Vec<(u64, u64)>,
    has_state: Arc<AtomicBool>,
    /// Since when this server has known no leader, for `election_time`.
    leaderless_since: Option<Instant>,
    /// The leader's proposals awaiting a quorum, for `quorum_ack_latency`.
    quorum_acks: QuorumAckClock,
}

/// Committed entry bytes handed out per `Ready` (raft-rs: `max_committed_size_per_ready`).
const MAX_COMMITTED_BYTES_PER_READY: u64 = 1024 * 1024;

/// `Ready`s handled per turn of the loop at most.
const READIES_PER_TURN: usize = 4;

/// Inputs taken per turn of the loop, so a flood of writes can't starve ticks.
const MAX_INPUTS_PER_TURN: usize = 4096;

/// Log entries kept behind a snapshot for followers that are a little behind (at most;
/// never more than half of snapCount).
const SNAPSHOT_CATCHUP_ENTRIES: u64 = 5_000;

/// Durable, applied entries kept in memory for followers a little behind; older ones
/// are read back from the txn log when a follower needs them. Released in steps of
/// `RELEASE_STEP`, so the storage's lock is not taken for it on every `Ready`.
const IN_MEMORY_ENTRIES: u64 = 4_096;
const RELEASE_STEP: u64 = 1_024;

/// When to snapshot: every `snapCount` entries, the first threshold drawn at random
/// from [snapCount/2, snapCount] (as ZooKeeper does) so servers spread their snapshots;
/// or sooner once the entries since the last one pass `SNAP_SIZE_LIMIT` bytes, which
/// bounds the log a restart replays.
struct SnapshotPolicy {
    every: u64,
    last: u64,
    next_after: u64,
    in_progress: bool,
    bytes_since: u64,
}

/// Bytes of log since the last snapshot that trigger a new one (ZooKeeper's
/// `snapSizeLimitInKb` plays this part, with a 4 GiB default meant for a log on disk).
const SNAP_SIZE_LIMIT: u64 = 64 * 1024 * 1024;

impl SnapshotPolicy {
    fn new(snap_count: u64, applied: u64) -> Self {
        let snap_count = snap_count.max(2);
        let mut seed = [0u8; 8];
        // Only the spread depends on it; a fixed half is fine if randomness fails.
        let _ = getrandom::getrandom(&mut seed);
        let jitter = u64::from_le_bytes(seed) % (snap_count / 2 + 1);
        SnapshotPolicy {
            every: snap_count,
            last: applied,
            next_after: snap_count / 2 + jitter,
            in_progress: false,
            bytes_since: 0,
        }
    }

    fn applied_bytes(&mut self, bytes: u64) {
        self.bytes_since = self.bytes_since.saturating_add(bytes);
    }

    fn due(&self, applied: u64) -> bool {
        !self.in_progress
            && (applied.saturating_sub(self.last) >= self.next_after
                || self.bytes_since >= SNAP_SIZE_LIMIT)
    }

    fn started(&mut self, index: u64) {
        self.in_progress = true;
        self.last = index;
        self.next_after = self.every;
        self.bytes_since = 0;
    }

    fn written(&mut self, index: u64) {
        self.in_progress = false;
        self.last = self.last.max(index);
    }

    /// A snapshot from the leader replaced the state: count from it.
    fn installed(&mut self, index: u64) {
        self.last = self.last.max(index);
    }
}

impl<A: Applier> RaftLoop<A> {
    fn run(&mut self) {
        let mut next_tick = Instant::now() + self.tick;
        while !self.stop.load(Ordering::Acquire) {
            let wait = next_tick.saturating_duration_since(Instant::now());
            if self.inbox.wait(wait).is_err() {
                return;
            }
            for _ in 0..MAX_INPUTS_PER_TURN {
                let Some(input) = self.inbox.next_input() else {
                    break;
                };
                self.handle(input);
            }
            self.inbox
                .read_peers(&mut self.peer_messages, Instant::now());
            let mut messages = std::mem::take(&mut self.peer_messages);
            for message in messages.drain(..) {
                self.step(message);
            }
            self.peer_messages = messages;
            let now = Instant::now();
            if now >= next_tick {
                if self.replica.tick() {
                    // Must be durable before this server votes (the next tick).
                    self.storage.rejoined();
                }
                // One tick however late: after a pause (SIGSTOP, a stalled VM) a burst
                // of catch-up ticks would fire elections and timeouts at once.
                next_tick = (next_tick + self.tick).max(now);
                self.inbox.drop_silent(now);
                self.publish_progress();
            }
            self.on_ready();
        }
    }

    fn handle(&mut self, input: Input) {
        let result = match input {
            Input::Propose(data) => {
                // The txn's head names its waiter; kept (not the whole txn) in case
                // raft refuses it, so the write path copies nothing.
                let mut head = [0u8; ORIGIN_LEN];
                let kept = data.len().min(ORIGIN_LEN);
                head[..kept].copy_from_slice(&data[..kept]);
                let proposed = self.replica.node.propose(vec![], data);
                if proposed.is_err() {
                    // No leader to take it (raft-rs drops proposals then): its waiter
                    // learns at once rather than when it times out.
                    self.applier.dropped(&head[..kept]);
                }
                proposed
            }
            Input::Peer(message) => {
                self.step(message);
                Ok(())
            }
            Input::AdoptPeer(peer) => {
                self.inbox.adopt(peer, Instant::now());
                Ok(())
            }
            Input::ReadIndex(request) => {
                self.replica
                    .node
                    .read_index(read_context(self.replica.node.raft.id, request).to_vec());
                Ok(())
            }
            Input::Persisted(number) => {
                self.on_persisted(number);
                Ok(())
            }
            Input::Hello { from, has_state } => {
                if self.replica.peer_hello(from, has_state) {
                    // Must be durable before this server votes.
                    self.storage.rejoined();
                }
                Ok(())
            }
            Input::SnapshotReport { to, ok } => {
                let status = if ok {
                    SnapshotStatus::Finish
                } else {
                    SnapshotStatus::Failure
                };
                self.replica.node.report_snapshot(to, status);
                Ok(())
            }
            Input::SnapshotWritten(index) => {
                self.snapshots.written(index);
                // Keep some log behind the snapshot so a follower a little behind
                // catches up from the log rather than a whole snapshot.
                let margin = SNAPSHOT_CATCHUP_ENTRIES.min(self.snapshots.every / 2);
                let mut keep = index.saturating_sub(margin);
                // And what a follower being caught up needs next: compacting past the
                // snapshot it is being sent would make it need another once installed,
                // for ever under a steady write load.
                if let Some(floor) = lost_data::catch_up_floor(&self.replica.node) {
                    keep = keep.min(floor);
                }
                if keep > 0 {
                    if let Err(e) = self.storage.compact(keep) {
                        tracing::warn!("compacting the raft log to {keep}: {e}");
                    }
                }
                Ok(())
            }
        };
        if let Err(e) = result {
            // A proposal with no leader to take it, or a stale message: the waiter
            // times out and the client retries.
            tracing::debug!("raft input dropped: {e}");
        }
    }

    /// Steps raft with a peer's message.
    fn step(&mut self, message: Message) {
        match self.replica.step(message, Instant::now()) {
            Ok(replies) => self.send(replies),
            // A stale message: raft's peers retransmit what matters.
            Err(e) => tracing::debug!("raft input dropped: {e}"),
        }
    }

    /// Handles what raft has to say: a `Ready` finished here (one with nothing to make
    /// durable) may leave another behind it, which should not wait for the next input.
    fn on_ready(&mut self) {
        for _ in 0..READIES_PER_TURN {
            if !self.replica.node.has_ready() {
                return;
            }
            self.handle_ready();
        }
    }

    /// Handles one `Ready` in raft-rs's documented order for asynchronous persistence.
    fn handle_ready(&mut self) {
        let mut ready = self.replica.node.ready();
        if let Some(ss) = ready.ss() {
            let role = Role::of(ss.raft_state, self.observer);
            if ss.raft_state == StateRole::Leader {
                self.replica.elected(Instant::now());
            }
            if role != self.status.role() {
                tracing::info!(
                    "server {} is now {role:?} at term {} (leader: {})",
                    self.replica.node.raft.id,
                    self.replica.node.raft.term,
                    ss.leader_id
                );
            }
            self.status.role.store(role as u8, Ordering::Release);
            self.status.leader.store(ss.leader_id, Ordering::Release);
            match (ss.leader_id, self.leaderless_since) {
                (0, None) => {
                    self.leaderless_since = Some(Instant::now());
                    self.status.metrics.looking.inc();
                }
                (leader, Some(since)) if leader != 0 => {
                    observe_millis(&self.status.metrics.election_time, since.elapsed());
                    self.leaderless_since = None;
                }
                _ => {}
            }
            self.status
                .term
                .store(self.replica.node.raft.term, Ordering::Release);
        }
        let committed = self.replica.node.raft.raft_log.committed;
        self.status.commit.store(committed, Ordering::Release);
        self.time_quorum_acks(&ready, committed);
        // A leader's messages may go out before its own entries are durable, and in
        // any order with applying: entries go first (the followers' fsyncs overlap
        // everything below), and so do commit notices to the servers that proposed a
        // committed entry (their clients wait for them); the other notices only after
        // applying, so no reply of this server's waits behind their sends.
        let (urgent, notices) = by_urgency(
            self.replica.outgoing(ready.take_messages()),
            ready.committed_entries(),
        );
        self.send(urgent);
        if !ready.snapshot().is_empty() {
            // Must be durable, and the state replaced, before this Ready's entries.
            if let Err(e) = self.storage.apply_snapshot(ready.snapshot()) {
                fatal(format_args!("installing a snapshot from the leader"), &e);
            }
            let index = ready.snapshot().get_metadata().index;
            tracing::info!("installed a snapshot at index {index} from the leader");
            self.applier.restore(ready.snapshot());
            self.applied = index;
            self.status.applied.store(index, Ordering::Release);
            self.release_reads();
            self.snapshots.installed(index);
            self.snapshot_ready = Some(ready.number());
        }
        // raft-rs hands out only entries that are committed and durable here.
        self.apply(ready.take_committed_entries());
        self.send(notices);
        for state in ready.take_read_states() {
            if self
                .replica
                .take_recovery_read(&state.request_ctx, state.index)
            {
                continue;
            }
            self.confirm_read(state.index, &state.request_ctx);
        }
        if ready.hs().is_some_and(|hs| hs.term > 0) {
            self.has_state.store(true, Ordering::Release);
        }
        let number = ready.number();
        if !ready.must_sync() && self.persisted_ready >= self.submitted_ready {
            // Nothing to make durable (at most a new commit index) and nothing in
            // flight at the log writer: finish here, not by a round trip through it.
            let messages = self.replica.outgoing(ready.take_persisted_messages());
            self.send(messages);
            if let Some(hs) = ready.hs() {
                self.storage.note_commit(hs);
                self.unrecorded_hard_state = Some(hs.clone());
            }
            self.replica.node.advance_append_async(ready);
            self.replica.node.on_persist_ready(number);
            self.submitted_ready = number;
            self.persisted_ready = number;
        } else {
            // Must not send votes or append acks before the fsync that covers them;
            // held before the Ready reaches the writer, whose fsync releases them.
            let acks = self.replica.outgoing(ready.take_persisted_messages());
            self.after_fsync.hold(number, acks);
            // Every such Ready goes to the log writer, so its number is reported in
            // order.
            // A newer hard state (term, vote, commit) replaces one finished here.
            let hard_state = match ready.hs() {
                Some(hs) => {
                    self.unrecorded_hard_state = None;
                    Some(hs.clone())
                }
                None => self.unrecorded_hard_state.take(),
            };
            if let Err(e) = self
                .storage
                .append(number, ready.take_entries(), hard_state)
            {
                fatal(format_args!("appending to the raft log"), &e);
            }
            self.submitted_ready = number;
            self.replica.node.advance_append_async(ready);
        }
        if self.snapshot_ready.is_none() {
            self.replica.node.advance_apply();
        }
        self.release_entries();
        self.maybe_snapshot();
    }

    /// `quorum_ack_latency`: the leader times each `Ready`'s entries from now, when it
    /// appends them, until the commit index covers them.
    fn time_quorum_acks(&mut self, ready: &raft::Ready, committed: u64) {
        if self.replica.node.raft.state != StateRole::Leader {
            self.quorum_acks.clear();
            return;
        }
        let now = Instant::now();
        for waited in self.quorum_acks.committed(committed, now) {
            observe_millis(&self.status.metrics.quorum_ack_latency, waited);
        }
        if let Some(last) = ready.entries().last() {
            self.quorum_acks.appended(last.index, now);
        }
    }

    /// Drops the in-memory copies of entries well behind what is both applied and
    /// durable here: the txn log holds them for the rare follower that needs them.
    fn release_entries(&mut self) {
        let persisted = self.replica.node.raft.raft_log.persisted;
        let up_to = self
            .applied
            .min(persisted)
            .saturating_sub(IN_MEMORY_ENTRIES);
        if up_to >= self.released + RELEASE_STEP {
            self.storage.release(up_to);
            self.released = up_to;
        }
    }

    /// The log writer made every `Ready` up to `number` durable.
    fn on_persisted(&mut self, number: u64) {
        self.persisted_ready = self.persisted_ready.max(number);
        self.replica.node.on_persist_ready(number);
        if self.snapshot_ready.is_some_and(|n| n <= number) {
            self.snapshot_ready = None;
            self.replica.node.advance_apply();
        }
    }

    /// Starts a background snapshot when enough has been applied since the last one.
    fn maybe_snapshot(&mut self) {
        if !self.snapshots.due(self.applied) {
            return;
        }
        let index = self.applied;
        let image = self.applier.image();
        let storage = self.storage.clone();
        let conf_state = storage.conf_state();
        let done = self.proposer.tx.clone();
        let snapshot_time = self.status.metrics.snapshot_time.clone();
        self.snapshots.started(index);
        let spawned = std::thread::Builder::new()
            .name("snapshot".into())
            .spawn(move || {
                let started = Instant::now();
                match storage.create_snapshot(index, conf_state, image) {
                    Ok(_) => {
                        observe_millis(&snapshot_time, started.elapsed());
                        tracing::info!(
                            "snapshot at index {index} written in {:?}",
                            started.elapsed()
                        );
                        let _ = done.send(Input::SnapshotWritten(index));
                    }
                    Err(e) => fatal(format_args!("writing the snapshot at {index}"), &e),
                }
            });
        if let Err(e) = spawned {
            fatal(format_args!("starting the snapshot thread"), &e);
        }
    }

    fn apply(&mut self, entries: Vec<Entry>) {
        let Some(last) = entries.last() else {
            return;
        };
        let last_index = last.index;
        let bytes: usize = entries.iter().map(|e| e.data.len()).sum();
        self.snapshots.applied_bytes(bytes as u64);
        let normal: Vec<Entry> = entries
            .into_iter()
            .filter(|e| e.get_entry_type() == EntryType::EntryNormal && !e.data.is_empty())
            .collect();
        if !normal.is_empty() {
            self.applier.apply(&normal);
        }
        self.applied = last_index;
        self.status.applied.store(last_index, Ordering::Release);
        self.release_reads();
    }

    /// Confirms the reads waiting for an index now applied.
    fn release_reads(&mut self) {
        let applied = self.applied;
        let (ready, waiting): (Vec<_>, Vec<_>) = self
            .pending_reads
            .drain(..)
            .partition(|(index, _)| *index <= applied);
        self.pending_reads = waiting;
        for (_, request) in ready {
            self.applier.read_ready(request);
        }
    }

    fn confirm_read(&mut self, index: u64, ctx: &[u8]) {
        let Some(request) = request_of_read_context(self.replica.node.raft.id, ctx) else {
            return;
        };
        if index <= self.applied {
            self.applier.read_ready(request);
        } else {
            self.pending_reads.push((index, request));
        }
    }

    /// On the leader, how many peers follow and how many have caught up.
    fn publish_progress(&mut self) {
        if self.replica.node.raft.state != StateRole::Leader {
            self.status.followers.store(0, Ordering::Release);
            self.status.synced_followers.store(0, Ordering::Release);
            self.status.leader_contact.clear();
            return;
        }
        match self.replica.quorum_contact(Instant::now()) {
            Some(at) => self.status.leader_contact.store(at),
            None => self.status.leader_contact.clear(),
        }
        let me = self.replica.node.raft.id;
        let last = self.replica.node.raft.raft_log.last_index();
        let (mut followers, mut synced) = (0, 0);
        for (id, progress) in self.replica.node.raft.prs().iter() {
            if *id == me {
                continue;
            }
            followers += 1;
            if progress.matched == last {
                synced += 1;
            }
        }
        self.status.followers.store(followers, Ordering::Release);
        self.status
            .synced_followers
            .store(synced, Ordering::Release);
    }

    fn send(&mut self, messages: Vec<Message>) {
        if messages.is_empty() {
            return;
        }
        match &self.transport {
            Some(transport) => transport.send(messages),
            None => tracing::trace!("{} raft messages with no peers", messages.len()),
        }
    }
}

/// Splits a `Ready`'s messages into those to send at once and those that may wait until
/// the committed entries are applied: commit notices and heartbeats to a peer that
/// proposed none of the `committed` entries (no client there waits for them). A peer
/// sent anything else keeps all its messages, in order, in the first part.
fn by_urgency(messages: Vec<Message>, committed: &[Entry]) -> (Vec<Message>, Vec<Message>) {
    let notice = |m: &Message| {
        matches!(
            m.get_msg_type(),
            MessageType::MsgAppend | MessageType::MsgHeartbeat
        ) && m.entries.is_empty()
    };
    if committed.is_empty() || !messages.iter().any(notice) {
        return (messages, Vec::new());
    }
    let mut proposers: Vec<u64> = committed
        .iter()
        .filter_map(|e| Origin::from_txn_head(&e.data).map(|origin| origin.server))
        .collect();
    proposers.sort_unstable();
    proposers.dedup();
    let urgent_peers: Vec<u64> = messages
        .iter()
        .filter(|m| !notice(m) || proposers.binary_search(&m.to).is_ok())
        .map(|m| m.to)
        .collect();
    messages
        .into_iter()
        .partition(|m| urgent_peers.contains(&m.to))
}

/// A ReadIndex context: the leader keys pending reads by it, so it names the server as
/// well as the request (request numbers alone repeat across servers).
fn read_context(server: u64, request: u64) -> [u8; 16] {
    let mut ctx = [0u8; 16];
    ctx[..8].copy_from_slice(&server.to_be_bytes());
    ctx[8..].copy_from_slice(&request.to_be_bytes());
    ctx
}

/// The request a read state confirms, if it is one of this server's.
fn request_of_read_context(server: u64, ctx: &[u8]) -> Option<u64> {
    let ctx = <[u8; 16]>::try_from(ctx).ok()?;
    let (owner, request) = ctx.split_at(8);
    if u64::from_be_bytes(owner.try_into().ok()?) != server {
        return None;
    }
    Some(u64::from_be_bytes(request.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::{Txn, TxnKind};

    /// The same request number on two servers must make two distinct ReadIndex keys:
    /// the leader keeps one pending read per key, so a collision left a `sync` without
    /// an answer until it timed out.
    fn message(to: u64, kind: MessageType, entries: usize) -> Message {
        let mut m = Message {
            to,
            entries: vec![Entry::default(); entries].into(),
            ..Default::default()
        };
        m.set_msg_type(kind);
        m
    }

    fn proposed_by(server: u64) -> Entry {
        let origin = Origin { server, request: 9 };
        let txn = Txn {
            head: crate::txn::Head {
                origin,
                session_id: 1,
                xid: 1,
                conn: 1,
                seq: 1,
                time: 0,
            },
            caller: vec![],
            kind: TxnKind::CloseSession,
        };
        Entry {
            data: txn.encode().into(),
            ..Default::default()
        }
    }

    /// Replication goes out before applying; a commit notice waits unless its peer
    /// proposed one of the committed entries (its client waits for that notice); a
    /// peer's messages stay together and in order.
    #[test]
    fn only_commit_notices_nobody_waits_for_go_after_applying() {
        let (now, later) = by_urgency(
            vec![
                message(2, MessageType::MsgHeartbeat, 0),
                message(3, MessageType::MsgAppend, 0),
                message(2, MessageType::MsgAppend, 1),
                message(4, MessageType::MsgSnapshot, 0),
                message(5, MessageType::MsgAppend, 0),
                message(6, MessageType::MsgReadIndexResp, 0),
            ],
            &[proposed_by(1), proposed_by(5)],
        );
        let kinds = |ms: &[Message]| -> Vec<(u64, MessageType, usize)> {
            ms.iter()
                .map(|m| (m.to, m.get_msg_type(), m.entries.len()))
                .collect()
        };
        assert_eq!(
            kinds(&now),
            [
                (2, MessageType::MsgHeartbeat, 0),
                (2, MessageType::MsgAppend, 1),
                (4, MessageType::MsgSnapshot, 0),
                (5, MessageType::MsgAppend, 0),
                (6, MessageType::MsgReadIndexResp, 0),
            ]
        );
        assert_eq!(kinds(&later), [(3, MessageType::MsgAppend, 0)]);
    }

    #[test]
    fn read_contexts_differ_across_servers() {
        assert_ne!(read_context(1, 7), read_context(2, 7));
        assert_eq!(request_of_read_context(2, &read_context(2, 7)), Some(7));
        assert_eq!(request_of_read_context(1, &read_context(2, 7)), None);
        assert_eq!(request_of_read_context(1, &7u64.to_be_bytes()), None);
    }
}

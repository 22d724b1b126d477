//! The raft loop: one thread owns the `RawNode`, takes proposals, peer messages and
//! read-index requests from a channel, ticks, and handles each `Ready` in the order
//! raft-rs documents. Committed entries go to the [`Applier`] in log order.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use raft::prelude::{ConfState, Entry, EntryType, Message};
use raft::storage::MemStorage;
use raft::{RawNode, StateRole};

use super::logger::raft_logger;
use super::transport::Transport;

/// What the loop hands committed entries and confirmed reads to: the state machine.
pub trait Applier: Send + 'static {
    /// Applies committed entries in order. The `index` of each entry is its zxid.
    fn apply(&mut self, entries: &[Entry]);
    /// A read-index request is confirmed and everything up to its index is applied:
    /// a read now sees every write committed before it was asked for.
    fn read_ready(&mut self, request: u64);
}

#[derive(Debug, Clone)]
pub struct ConsensusConfig {
    pub id: u64,
    pub voters: Vec<u64>,
    /// Observers: raft learners, which replicate and serve but do not vote.
    pub learners: Vec<u64>,
    /// One raft tick. Elections take 10 to 20 ticks, heartbeats go every 3.
    pub tick: Duration,
}

/// What other threads ask of the raft loop.
enum Input {
    Propose(Vec<u8>),
    Peer(Message),
    /// A ReadIndex barrier for `sync`, identified by a request number.
    ReadIndex(u64),
}

/// The cheap handle other threads use to reach the raft thread.
#[derive(Clone)]
pub struct Proposer {
    tx: Sender<Input>,
}

/// The channel between proposers and the raft thread, made before either exists.
pub fn channel() -> (Proposer, Proposals) {
    let (tx, rx) = mpsc::channel();
    (Proposer { tx }, Proposals { rx })
}

/// The raft thread's end of [`channel`].
pub struct Proposals {
    rx: Receiver<Input>,
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

    /// Asks for a ReadIndex barrier; `Applier::read_ready(request)` follows once it
    /// holds, or never if leadership is lost meanwhile (callers time out).
    pub fn read_index(&self, request: u64) -> Result<(), ConsensusStopped> {
        self.tx
            .send(Input::ReadIndex(request))
            .map_err(|_| ConsensusStopped)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the consensus thread has stopped")]
pub struct ConsensusStopped;

/// The raft role, as `srvr` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Follower,
    Candidate,
    Leader,
    Observer,
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
}

impl Status {
    pub fn role(&self) -> Role {
        match self.role.load(Ordering::Acquire) {
            2 => Role::Leader,
            1 => Role::Candidate,
            3 => Role::Observer,
            _ => Role::Follower,
        }
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
            ..Default::default()
        };
        raft_config.validate()?;
        let conf = ConfState::from((config.voters.clone(), config.learners.clone()));
        let storage = MemStorage::new_with_conf_state(conf);
        let mut node = RawNode::new(&raft_config, storage, &raft_logger())?;
        if config.voters == [config.id] {
            // A group of one needs no election timeout to pass before serving.
            node.campaign()?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let observer = config.learners.contains(&config.id);
        let mut raft_loop = RaftLoop {
            stop: stop.clone(),
            node,
            inputs: proposals.rx,
            applier,
            tick: config.tick,
            status,
            transport,
            observer,
            applied: 0,
            pending_reads: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("raft".into())
            // Debug builds of raft-rs and the persistent maps use deep frames.
            .stack_size(32 * 1024 * 1024)
            .spawn(move || raft_loop.run())
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
    /// Set at shutdown. The applier holds the server state, which holds a Proposer, so
    /// the input channel alone never disconnects.
    stop: Arc<AtomicBool>,
    node: RawNode<MemStorage>,
    inputs: Receiver<Input>,
    applier: A,
    tick: Duration,
    status: Arc<Status>,
    transport: Option<Transport>,
    observer: bool,
    /// The index of the last entry handed to the applier.
    applied: u64,
    /// Confirmed read-index requests waiting for `applied` to reach their index.
    pending_reads: Vec<(u64, u64)>,
}

/// Inputs taken per turn of the loop, so a flood of writes can't starve ticks.
const MAX_INPUTS_PER_TURN: usize = 4096;

impl<A: Applier> RaftLoop<A> {
    fn run(&mut self) {
        let mut next_tick = Instant::now() + self.tick;
        while !self.stop.load(Ordering::Acquire) {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match self.inputs.recv_timeout(wait) {
                Ok(input) => {
                    self.handle(input);
                    let more: Vec<Input> =
                        self.inputs.try_iter().take(MAX_INPUTS_PER_TURN).collect();
                    for input in more {
                        self.handle(input);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if Instant::now() >= next_tick {
                self.node.tick();
                next_tick += self.tick;
                self.publish_progress();
            }
            self.on_ready();
        }
    }

    fn handle(&mut self, input: Input) {
        let result = match input {
            Input::Propose(data) => self.node.propose(vec![], data),
            Input::Peer(message) => self.node.step(message),
            Input::ReadIndex(request) => {
                self.node.read_index(request.to_be_bytes().to_vec());
                Ok(())
            }
        };
        if let Err(e) = result {
            // A proposal with no leader to take it, or a stale message: the waiter
            // times out and the client retries.
            tracing::debug!("raft input dropped: {e}");
        }
    }

    /// Handles one `Ready` in raft-rs's documented order.
    fn on_ready(&mut self) {
        if !self.node.has_ready() {
            return;
        }
        let mut ready = self.node.ready();
        if let Some(ss) = ready.ss() {
            let role = match ss.raft_state {
                StateRole::Leader => 2,
                StateRole::Candidate | StateRole::PreCandidate => 1,
                StateRole::Follower if self.observer => 3,
                StateRole::Follower => 0,
            };
            self.status.role.store(role, Ordering::Release);
            self.status.leader.store(ss.leader_id, Ordering::Release);
            self.status
                .term
                .store(self.node.raft.term, Ordering::Release);
        }
        // A leader's messages may go out before its own entries are persisted.
        self.send(ready.take_messages());
        if !ready.snapshot().is_empty() {
            let snapshot = ready.snapshot().clone();
            if let Err(e) = self.node.store().wl().apply_snapshot(snapshot) {
                fatal(&format!("applying a raft snapshot failed: {e}"));
            }
        }
        self.apply(ready.take_committed_entries());
        for state in ready.take_read_states() {
            self.confirm_read(state.index, &state.request_ctx);
        }
        // Must persist entries and hard state before sending persisted messages.
        let store = self.node.store().clone();
        if !ready.entries().is_empty() {
            if let Err(e) = store.wl().append(ready.entries()) {
                fatal(&format!("appending to the raft log failed: {e}"));
            }
        }
        if let Some(hs) = ready.hs() {
            store.wl().set_hardstate(hs.clone());
        }
        self.send(ready.take_persisted_messages());
        let mut light = self.node.advance(ready);
        if let Some(commit) = light.commit_index() {
            store.wl().mut_hard_state().set_commit(commit);
        }
        self.send(light.take_messages());
        self.apply(light.take_committed_entries());
        self.node.advance_apply();
    }

    fn apply(&mut self, entries: Vec<Entry>) {
        let Some(last) = entries.last() else {
            return;
        };
        let last_index = last.index;
        let normal: Vec<Entry> = entries
            .into_iter()
            .filter(|e| e.get_entry_type() == EntryType::EntryNormal && !e.data.is_empty())
            .collect();
        if !normal.is_empty() {
            self.applier.apply(&normal);
        }
        self.applied = last_index;
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
        let Ok(bytes) = <[u8; 8]>::try_from(ctx) else {
            return;
        };
        let request = u64::from_be_bytes(bytes);
        if index <= self.applied {
            self.applier.read_ready(request);
        } else {
            self.pending_reads.push((index, request));
        }
    }

    /// On the leader, how many peers follow and how many have caught up.
    fn publish_progress(&mut self) {
        if self.node.raft.state != StateRole::Leader {
            self.status.followers.store(0, Ordering::Release);
            self.status.synced_followers.store(0, Ordering::Release);
            return;
        }
        let me = self.node.raft.id;
        let last = self.node.raft.raft_log.last_index();
        let (mut followers, mut synced) = (0, 0);
        for (id, progress) in self.node.raft.prs().iter() {
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

/// A failure of the log the process can't recover from in place.
fn fatal(message: &str) -> ! {
    tracing::error!("{message}; exiting");
    std::process::exit(1);
}

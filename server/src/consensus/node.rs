//! The raft loop: one thread owns the `RawNode`, takes proposals from a channel, ticks,
//! and handles each `Ready` in the order raft-rs documents. Committed entries go to the
//! [`Applier`] in log order.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use raft::prelude::{ConfState, Entry, EntryType, Message};
use raft::storage::MemStorage;
use raft::{RawNode, StateRole};

use super::logger::raft_logger;

/// What the loop hands committed entries to: the state machine.
pub trait Applier: Send + 'static {
    /// Applies committed entries in order. `index` of each entry is its zxid.
    fn apply(&mut self, entries: &[Entry]);
}

#[derive(Debug, Clone)]
pub struct ConsensusConfig {
    pub id: u64,
    pub voters: Vec<u64>,
    /// One raft tick. Elections take 10 ticks, heartbeats 3.
    pub tick: Duration,
}

/// The cheap handle that submits proposals to the raft thread.
#[derive(Clone)]
pub struct Proposer {
    tx: Sender<Vec<u8>>,
}

/// The channel between proposers and the raft thread, made before either exists.
pub fn channel() -> (Proposer, Proposals) {
    let (tx, rx) = mpsc::channel();
    (Proposer { tx }, Proposals { rx })
}

/// The raft thread's end of [`channel`].
pub struct Proposals {
    rx: Receiver<Vec<u8>>,
}

impl Proposer {
    /// Queues `data` to be proposed. Fails only when the raft thread has stopped.
    pub fn propose(&self, data: Vec<u8>) -> Result<(), ConsensusStopped> {
        self.tx.send(data).map_err(|_| ConsensusStopped)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the consensus thread has stopped")]
pub struct ConsensusStopped;

/// The running raft loop, observable from other threads.
pub struct Consensus {
    commit_index: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Consensus {
    /// Starts the raft thread. `is_leader` is kept current for the rest of the server.
    pub fn start(
        config: ConsensusConfig,
        proposals: Proposals,
        is_leader: Arc<AtomicBool>,
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
        let storage =
            MemStorage::new_with_conf_state(ConfState::from((config.voters.clone(), vec![])));
        let mut node = RawNode::new(&raft_config, storage, &raft_logger())?;
        if config.voters == [config.id] {
            // A group of one needs no election timeout to pass before serving.
            node.campaign()?;
        }
        let commit_index = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut raft_loop = RaftLoop {
            stop: stop.clone(),
            node,
            proposals: proposals.rx,
            applier,
            tick: config.tick,
            is_leader: is_leader.clone(),
            commit_index: commit_index.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("raft".into())
            .spawn(move || raft_loop.run())
            .map_err(raft::Error::Io)?;
        Ok(Consensus {
            commit_index,
            stop,
            thread: Some(thread),
        })
    }

    pub fn commit_index(&self) -> u64 {
        self.commit_index.load(Ordering::Acquire)
    }
}

impl Consensus {
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
    /// the proposal channel alone never disconnects.
    stop: Arc<AtomicBool>,
    node: RawNode<MemStorage>,
    proposals: Receiver<Vec<u8>>,
    applier: A,
    tick: Duration,
    is_leader: Arc<AtomicBool>,
    commit_index: Arc<AtomicU64>,
}

/// Proposals taken per turn of the loop, so a flood of writes can't starve ticks.
const MAX_PROPOSALS_PER_TURN: usize = 4096;

impl<A: Applier> RaftLoop<A> {
    fn run(&mut self) {
        let mut next_tick = Instant::now() + self.tick;
        while !self.stop.load(Ordering::Acquire) {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match self.proposals.recv_timeout(wait) {
                Ok(data) => {
                    self.propose(data);
                    let more: Vec<Vec<u8>> = self
                        .proposals
                        .try_iter()
                        .take(MAX_PROPOSALS_PER_TURN)
                        .collect();
                    for data in more {
                        self.propose(data);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if Instant::now() >= next_tick {
                self.node.tick();
                next_tick += self.tick;
            }
            self.on_ready();
        }
    }

    fn propose(&mut self, data: Vec<u8>) {
        if let Err(e) = self.node.propose(vec![], data) {
            // Not leader (or a leader transfer in progress): the proposer's waiter is
            // failed by the state machine when it sees the leader change.
            tracing::debug!("proposal dropped: {e}");
        }
    }

    /// Handles one `Ready` in raft-rs's documented order.
    fn on_ready(&mut self) {
        if !self.node.has_ready() {
            return;
        }
        let mut ready = self.node.ready();
        if let Some(ss) = ready.ss() {
            self.is_leader
                .store(ss.raft_state == StateRole::Leader, Ordering::Release);
        }
        // Must send messages before persisting only when they are not votes/appends
        // responses; raft-rs puts those in `persisted_messages`.
        self.send(ready.take_messages());
        if !ready.snapshot().is_empty() {
            // Snapshots arrive with the storage and ensemble work; a one-voter group
            // never receives one.
            tracing::warn!("ignoring a raft snapshot: not supported by in-memory storage");
        }
        self.apply(ready.take_committed_entries());
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
        self.commit_index.store(last.index, Ordering::Release);
        let normal: Vec<Entry> = entries
            .into_iter()
            .filter(|e| e.get_entry_type() == EntryType::EntryNormal && !e.data.is_empty())
            .collect();
        if !normal.is_empty() {
            self.applier.apply(&normal);
        }
    }

    fn send(&mut self, messages: Vec<Message>) {
        if !messages.is_empty() {
            tracing::trace!("{} raft messages with no transport", messages.len());
        }
    }
}

/// A failure of the log the process can't recover from in place.
fn fatal(message: &str) -> ! {
    tracing::error!("{message}; exiting");
    std::process::exit(1);
}

//! `DurableStorage` against raft's `Storage` contract, across reopens, and driving real
//! `RawNode`s through the async-ready flow documented in the parent module.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use bytes::Bytes;
use raft::prelude::{ConfState, EntryType, HardState, Message, MessageType, Snapshot};
use raft::{GetEntriesContext, RawNode, StateRole, Storage as _};

use super::*;

use crate::store::txnlog::tests::entry;

fn config(root: &Path, node_id: u64) -> StoreConfig {
    let mut log = LogConfig::new(root.join("log"));
    log.segment_size = 16 * 1024;
    log.pre_alloc_size = 16 * 1024;
    StoreConfig {
        data_dir: root.join("data"),
        log,
        node_id,
        initial_conf_state: ConfState::from((vec![1], vec![])),
        purge_after_snapshot: None,
    }
}

fn open(root: &Path) -> (Opened, Receiver<u64>) {
    let (tx, rx) = mpsc::channel();
    let opened = DurableStorage::open(config(root, 1), move |n| {
        let _ = tx.send(n); // the test may have stopped listening
    })
    .unwrap();
    (opened, rx)
}

fn wait_for(rx: &Receiver<u64>, number: u64) {
    while rx.recv_timeout(Duration::from_secs(10)).expect("persisted") < number {}
}

fn hard_state(term: u64, vote: u64, commit: u64) -> HardState {
    HardState {
        term,
        vote,
        commit,
        ..Default::default()
    }
}

#[test]
fn entries_hard_state_and_conf_state_survive_a_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (opened, rx) = open(tmp.path());
        assert!(opened.snapshot.is_none());
        let s = opened.storage;
        assert_eq!(
            s.initial_state().unwrap().conf_state,
            ConfState::from((vec![1], vec![]))
        );
        s.append(
            1,
            (1..=50).map(|i| entry(i, 1, b"x")).collect(),
            Some(hard_state(1, 1, 0)),
        )
        .unwrap();
        s.append(2, vec![], Some(hard_state(1, 1, 50))).unwrap();
        s.set_conf_state(ConfState::from((vec![1, 2], vec![3])));
        wait_for(&rx, 2);
    }
    let (opened, _) = open(tmp.path());
    let s = opened.storage;
    let state = s.initial_state().unwrap();
    assert_eq!(state.hard_state, hard_state(1, 1, 50));
    assert_eq!(state.conf_state, ConfState::from((vec![1, 2], vec![3])));
    assert_eq!((s.first_index().unwrap(), s.last_index().unwrap()), (1, 50));
    let all = s
        .entries(1, 51, None, GetEntriesContext::empty(false))
        .unwrap();
    assert_eq!(all, (1..=50).map(|i| entry(i, 1, b"x")).collect::<Vec<_>>());
}

#[test]
fn the_raft_storage_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let (opened, rx) = open(tmp.path());
    let s = opened.storage;
    s.append(1, (1..=10).map(|i| entry(i, 1, &[7; 100])).collect(), None)
        .unwrap();
    // A new leader's entries replace the suffix from 8 on.
    s.append(2, (8..=9).map(|i| entry(i, 2, &[8; 100])).collect(), None)
        .unwrap();
    assert_eq!(s.last_index().unwrap(), 9);
    assert_eq!(s.term(7).unwrap(), 1);
    assert_eq!(s.term(8).unwrap(), 2);
    assert!(matches!(
        s.term(10),
        Err(raft::Error::Store(StorageError::Unavailable))
    ));
    // Appends may not leave a gap or reach behind the log's start.
    assert!(matches!(
        s.append(3, vec![entry(11, 2, b"")], None),
        Err(StoreError::Gap {
            first: 11,
            last_index: 9
        })
    ));
    // max_size: at least one entry, then as many as fit.
    let ctx = || GetEntriesContext::empty(false);
    let one = u64::from(entry(1, 1, &[7; 100]).compute_size());
    assert_eq!(s.entries(1, 10, 0, ctx()).unwrap().len(), 1);
    assert_eq!(s.entries(1, 10, one * 3, ctx()).unwrap().len(), 3);
    assert_eq!(s.entries(1, 10, one * 3 + 1, ctx()).unwrap().len(), 3);
    assert_eq!(s.entries(1, 10, None, ctx()).unwrap().len(), 9);
    assert!(matches!(
        s.entries(1, 11, None, ctx()),
        Err(raft::Error::Store(StorageError::Unavailable))
    ));
    // Compaction needs a snapshot covering it.
    wait_for(&rx, 2);
    assert!(matches!(
        s.compact(5),
        Err(StoreError::CompactPastSnapshot { .. })
    ));
    s.create_snapshot(6, ConfState::from((vec![1], vec![])), |w| {
        w.write_all(b"state at 6")
    })
    .unwrap();
    s.compact(5).unwrap();
    assert_eq!(s.first_index().unwrap(), 6);
    assert_eq!(
        s.term(5).unwrap(),
        1,
        "the term before the first entry is kept"
    );
    assert!(matches!(
        s.term(4),
        Err(raft::Error::Store(StorageError::Compacted))
    ));
    assert!(matches!(
        s.entries(5, 7, None, ctx()),
        Err(raft::Error::Store(StorageError::Compacted))
    ));
    assert!(matches!(
        s.append(4, vec![entry(5, 3, b"")], None),
        Err(StoreError::OverwriteCompacted { .. })
    ));
    // Metadata only: the transport streams the file itself.
    let snap = s.snapshot(0, 2).unwrap();
    assert_eq!(snap.get_metadata().index, 6);
    assert!(snap.data.is_empty());
    let file = s.load_snapshot(6).unwrap().unwrap();
    assert_eq!(&file.payload[..], b"state at 6");
    assert!(matches!(
        s.snapshot(7, 2),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    ));
}

/// Writes entries 1..=n in term 1, one Ready each, and waits for them.
fn fill(s: &DurableStorage, rx: &Receiver<u64>, range: std::ops::RangeInclusive<u64>) {
    let last = *range.end();
    for i in range {
        s.append(i, vec![entry(i, 1, format!("entry {i}").as_bytes())], None)
            .unwrap();
    }
    s.append(last + 1, vec![], Some(hard_state(1, 1, last)))
        .unwrap();
    wait_for(rx, last + 1);
}

fn snapshot_at(s: &DurableStorage, index: u64) {
    s.create_snapshot(index, ConfState::from((vec![1], vec![])), |w| {
        write!(w, "state at {index}")
    })
    .unwrap();
}

#[test]
fn restart_from_a_snapshot_and_the_log_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (opened, rx) = open(tmp.path());
        let s = opened.storage;
        fill(&s, &rx, 1..=2100);
        for index in [400, 800, 1200, 1600, 2000] {
            snapshot_at(&s, index);
        }
        s.compact(2000).unwrap();
        s.purge(3).unwrap();
        // A Ready after the purge: its report means the purge is done.
        s.append(10_000, vec![], None).unwrap();
        wait_for(&rx, 10_000);
    }
    let data = tmp.path().join("data");
    let mut names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("snapshot."))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [1200u64, 1600, 2000]
            .map(crate::store::snapshot::snapshot_name)
            .to_vec()
    );
    // The log is kept from the oldest retained snapshot on, and only from there: the
    // first segment holds entry 1201, the second starts after it.
    let mut segments: Vec<u64> = std::fs::read_dir(tmp.path().join("log"))
        .unwrap()
        .filter_map(|e| txnlog::segment::parse_segment_name(e.unwrap().file_name().to_str()?))
        .collect();
    segments.sort();
    assert!(segments[0] > 1 && segments[0] <= 1201, "{segments:?}");
    assert!(segments[1] > 1201, "{segments:?}");

    let (opened, _) = open(tmp.path());
    let snapshot = opened.snapshot.unwrap();
    assert_eq!(snapshot.metadata.index, 2000);
    assert_eq!(&snapshot.payload[..], b"state at 2000");
    let s = opened.storage;
    assert_eq!(
        (s.first_index().unwrap(), s.last_index().unwrap()),
        (2001, 2100)
    );
    assert_eq!(s.initial_state().unwrap().hard_state.commit, 2100);
}

/// Snapshot files and log segments in `root`'s data and log dirs, sorted.
fn files(root: &Path) -> (Vec<u64>, Vec<u64>) {
    let mut snapshots: Vec<u64> = std::fs::read_dir(root.join("data"))
        .unwrap()
        .filter_map(|e| crate::store::parse_hex_name(e.unwrap().file_name().to_str()?, "snapshot."))
        .collect();
    let mut segments: Vec<u64> = std::fs::read_dir(root.join("log"))
        .unwrap()
        .filter_map(|e| txnlog::segment::parse_segment_name(e.unwrap().file_name().to_str()?))
        .collect();
    snapshots.sort();
    segments.sort();
    (snapshots, segments)
}

#[test]
fn with_autopurge_each_new_snapshot_purges_old_snapshots_and_log() {
    // Disk use stays near snapRetainCount snapshots plus the log since the oldest of
    // them, however fast snapshots come, instead of growing until the hourly purge.
    let tmp = tempfile::tempdir().unwrap();
    let mut config = config(tmp.path(), 1);
    config.purge_after_snapshot = Some(3);
    let (tx, rx) = mpsc::channel();
    let opened = DurableStorage::open(config, move |n| {
        let _ = tx.send(n); // the test may have stopped listening
    })
    .unwrap();
    let s = opened.storage;
    fill(&s, &rx, 1..=2100);
    let mut ready = 5_000;
    for index in [400, 800, 1200, 1600, 2000] {
        snapshot_at(&s, index);
        // As the raft loop does once the snapshot is written; the purge of the next
        // snapshot stops there (raft may read the log after the compacted index).
        s.compact(index).unwrap();
        // A Ready after the purge: its report means the log purge is done too.
        ready += 1;
        s.append(ready, vec![], None).unwrap();
        wait_for(&rx, ready);
        let (snapshots, segments) = files(tmp.path());
        assert!(snapshots.len() <= 3, "after {index}: {snapshots:?}");
        assert_eq!(snapshots.last(), Some(&index));
        // The log reaches back to the oldest kept snapshot, and not a segment further.
        let oldest = snapshots[0];
        assert!(segments[0] <= oldest + 1, "after {index}: {segments:?}");
        if snapshots.len() == 3 {
            assert!(
                segments.get(1).is_none_or(|second| *second > oldest + 1),
                "after {index}: a segment wholly behind {oldest} is kept: {segments:?}"
            );
        }
    }
    assert_eq!(files(tmp.path()).0, [1200, 1600, 2000]);
}

#[test]
fn a_corrupt_newest_snapshot_falls_back_to_an_older_one_and_more_log() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (opened, rx) = open(tmp.path());
        let s = opened.storage;
        fill(&s, &rx, 1..=300);
        snapshot_at(&s, 100);
        snapshot_at(&s, 250);
    }
    let newest = tmp.path().join("data").join("snapshot.00000000000000fa");
    let mut bytes = std::fs::read(&newest).unwrap();
    bytes[40] ^= 0xff;
    std::fs::write(&newest, bytes).unwrap();
    let (opened, _) = open(tmp.path());
    assert_eq!(opened.rejected_snapshots.len(), 1);
    assert_eq!(opened.snapshot.unwrap().metadata.index, 100);
    let s = opened.storage;
    assert_eq!(
        (s.first_index().unwrap(), s.last_index().unwrap()),
        (101, 300)
    );
}

#[test]
fn a_snapshot_from_the_leader_replaces_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (opened, rx) = open(tmp.path());
        let s = opened.storage;
        fill(&s, &rx, 1..=20);
        let snapshot = Snapshot {
            data: Bytes::from_static(b"the leader's state at 1000"),
            metadata: Some(SnapshotMetadata {
                index: 1000,
                term: 5,
                conf_state: Some(ConfState::from((vec![1, 2, 3], vec![]))).into(),
                ..Default::default()
            })
            .into(),
            ..Default::default()
        };
        s.apply_snapshot(&snapshot).unwrap();
        assert_eq!(
            (s.first_index().unwrap(), s.last_index().unwrap()),
            (1001, 1000)
        );
        assert_eq!(s.term(1000).unwrap(), 5);
        assert!(matches!(
            s.apply_snapshot(&snapshot),
            Err(StoreError::SnapshotOutOfDate { .. })
        ));
        s.append(
            100,
            (1001..=1010).map(|i| entry(i, 5, b"y")).collect(),
            Some(hard_state(5, 0, 1005)),
        )
        .unwrap();
        wait_for(&rx, 100);
    }
    let (opened, _) = open(tmp.path());
    assert_eq!(
        &opened.snapshot.unwrap().payload[..],
        b"the leader's state at 1000"
    );
    let s = opened.storage;
    assert_eq!(
        (s.first_index().unwrap(), s.last_index().unwrap()),
        (1001, 1010)
    );
    let state = s.initial_state().unwrap();
    assert_eq!(state.conf_state, ConfState::from((vec![1, 2, 3], vec![])));
    assert_eq!(state.hard_state.commit, 1005);
}

// ---------------------------------------------------------------------------------
// Real raft nodes through the async-ready flow.

/// One raft node, its storage, and what it applied.
struct Node {
    raw: RawNode<DurableStorage>,
    persisted: Receiver<u64>,
    /// Each Ready's persisted messages, held until the writer reports it durable.
    pending: VecDeque<(u64, Vec<Message>)>,
    applied: Vec<Bytes>,
    applied_index: u64,
    /// The number of a Ready that carried a snapshot, until it is durable: raft's applied
    /// index may not pass its persisted index, so `advance_apply` waits for it.
    snapshot_ready: Option<u64>,
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

impl Node {
    /// Proposes each payload in turn (this node must lead).
    fn propose_each(&mut self, payloads: impl IntoIterator<Item = String>) {
        for payload in payloads {
            self.raw.propose(vec![], payload.into_bytes()).unwrap();
        }
    }

    fn start(root: &Path, id: u64, voters: &[u64]) -> Node {
        let (tx, persisted) = mpsc::channel();
        let mut config = config(root, id);
        config.initial_conf_state = ConfState::from((voters.to_vec(), vec![]));
        let opened = DurableStorage::open(config, move |n| {
            let _ = tx.send(n); // the node may be gone
        })
        .unwrap();
        // The state machine restarts from the snapshot; raft replays the rest.
        let (applied, applied_index) = match &opened.snapshot {
            Some(s) => (
                s.payload
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(Bytes::copy_from_slice)
                    .collect(),
                s.metadata.index,
            ),
            None => (Vec::new(), 0),
        };
        let raft_config = raft::Config {
            id,
            election_tick: 10,
            heartbeat_tick: 3,
            applied: applied_index,
            max_size_per_msg: 1024 * 1024,
            max_inflight_msgs: 256,
            ..Default::default()
        };
        let raw = RawNode::new(&raft_config, opened.storage, &logger()).unwrap();
        Node {
            raw,
            persisted,
            pending: VecDeque::new(),
            applied,
            applied_index,
            snapshot_ready: None,
        }
    }

    fn storage(&self) -> &DurableStorage {
        self.raw.store()
    }

    /// Steps 1-7 of the parent module's flow.
    fn on_ready(&mut self, outbox: &mut Vec<Message>) {
        if !self.raw.has_ready() {
            return;
        }
        let mut ready = self.raw.ready();
        outbox.extend(ready.take_messages());
        if !ready.snapshot().is_empty() {
            self.storage().apply_snapshot(ready.snapshot()).unwrap();
            self.applied = ready
                .snapshot()
                .data
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(Bytes::copy_from_slice)
                .collect();
            self.applied_index = ready.snapshot().get_metadata().index;
            self.snapshot_ready = Some(ready.number());
        }
        let durable = self.storage().log_stats().snapshot().durable_index;
        for e in ready.take_committed_entries() {
            // Only entries durable here are handed out as committed.
            assert!(
                e.index <= durable,
                "entry {} applied before its fsync",
                e.index
            );
            if e.get_entry_type() == EntryType::EntryNormal && !e.data.is_empty() {
                self.applied.push(e.data.clone());
            }
            self.applied_index = e.index;
        }
        self.storage()
            .append(ready.number(), ready.take_entries(), ready.hs().cloned())
            .unwrap();
        self.pending
            .push_back((ready.number(), ready.take_persisted_messages()));
        self.raw.advance_append_async(ready);
        if self.snapshot_ready.is_none() {
            self.raw.advance_apply();
        }
        self.release();
    }

    /// Keeps nothing durable and applied in memory, as the raft loop does past its
    /// window: every read of an older entry goes to the log's files.
    fn release(&self) {
        let persisted = self.raw.raft.raft_log.persisted;
        self.storage().release(self.applied_index.min(persisted));
    }

    /// Steps 8-9: the writer's reports.
    fn on_persisted(&mut self, outbox: &mut Vec<Message>) {
        while let Ok(number) = self.persisted.try_recv() {
            self.raw.on_persist_ready(number);
            if self.snapshot_ready.is_some_and(|n| n <= number) {
                self.snapshot_ready = None;
                self.raw.advance_apply();
            }
            while self.pending.front().is_some_and(|(n, _)| *n <= number) {
                if let Some((_, messages)) = self.pending.pop_front() {
                    self.check_votes_are_durable(&messages);
                    outbox.extend(messages);
                }
            }
        }
        self.release();
    }

    /// Raft §5.2: a server votes at most once per term, so its vote must be on disk
    /// before the vote leaves.
    fn check_votes_are_durable(&self, messages: &[Message]) {
        for m in messages {
            let is_vote = matches!(
                m.get_msg_type(),
                MessageType::MsgRequestVoteResponse | MessageType::MsgRequestPreVoteResponse
            );
            if is_vote && !m.reject && m.get_msg_type() == MessageType::MsgRequestVoteResponse {
                let recorded = self
                    .storage()
                    .meta()
                    .hard_state()
                    .unwrap()
                    .unwrap_or_default();
                assert_eq!(
                    (recorded.term, recorded.vote),
                    (m.term, m.to),
                    "vote sent before it was durable"
                );
            }
        }
    }

    fn snapshot_now(&self) {
        let payload: Vec<u8> = self
            .applied
            .iter()
            .flat_map(|d| d.iter().copied().chain(std::iter::once(b'\n')))
            .collect();
        self.storage()
            .create_snapshot(self.applied_index, self.storage().conf_state(), |w| {
                w.write_all(&payload)
            })
            .unwrap();
        self.storage().compact(self.applied_index).unwrap();
    }
}

/// Runs the nodes, delivering messages in memory, until `done` or a time limit.
fn run(nodes: &mut [Node], mut done: impl FnMut(&mut [Node]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last_tick = Instant::now();
    while !done(nodes) {
        assert!(Instant::now() < deadline, "the cluster made no progress");
        let mut outbox = Vec::new();
        for node in nodes.iter_mut() {
            node.on_persisted(&mut outbox);
            node.on_ready(&mut outbox);
        }
        for mut m in outbox {
            if m.get_msg_type() == MessageType::MsgSnapshot {
                // What the transport does: carry the sender's snapshot file over.
                let index = m.get_snapshot().get_metadata().index;
                let from = nodes.iter().find(|n| n.raw.raft.id == m.from);
                let file = from.and_then(|n| n.storage().load_snapshot(index).unwrap());
                m.mut_snapshot().data = file.expect("the snapshot file").payload;
            }
            if let Some(to) = nodes.iter_mut().find(|n| n.raw.raft.id == m.to) {
                to.raw.step(m).unwrap();
            }
        }
        if last_tick.elapsed() >= Duration::from_millis(5) {
            last_tick = Instant::now();
            for node in nodes.iter_mut() {
                node.raw.tick();
            }
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Nodes 1, 2 and 3, voters all, each under its own directory in `dir` (the same ones
/// on every call: a restart).
fn start_three(dir: &Path) -> Vec<Node> {
    (1..=3u64)
        .map(|id| Node::start(&dir.join(format!("n{id}")), id, &[1, 2, 3]))
        .collect()
}

fn leader(nodes: &[Node]) -> Option<usize> {
    nodes
        .iter()
        .position(|n| n.raw.raft.state == StateRole::Leader)
}

#[test]
fn a_single_node_commits_through_group_commit_and_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 2000;
    {
        let mut nodes = vec![Node::start(tmp.path(), 1, &[1])];
        nodes[0].raw.campaign().unwrap();
        run(&mut nodes, |nodes| {
            nodes[0].raw.raft.state == StateRole::Leader
        });
        for i in 0..n {
            nodes[0]
                .raw
                .propose(vec![], format!("w{i}").into_bytes())
                .unwrap();
            if i % 100 == 99 {
                let mut outbox = Vec::new();
                nodes[0].on_persisted(&mut outbox);
                nodes[0].on_ready(&mut outbox);
            }
        }
        run(&mut nodes, |nodes| nodes[0].applied.len() == n);
        let stats = nodes[0].storage().log_stats().snapshot();
        assert!(stats.fsyncs < n as u64 / 4, "group commit: {stats:?}");
        nodes[0].snapshot_now();
        for i in 0..10 {
            nodes[0]
                .raw
                .propose(vec![], format!("after{i}").into_bytes())
                .unwrap();
        }
        run(&mut nodes, |nodes| nodes[0].applied.len() == n + 10);
    }
    // Restart: the snapshot, then raft replays the log after it.
    let mut nodes = vec![Node::start(tmp.path(), 1, &[1])];
    assert_eq!(nodes[0].applied.len(), n);
    nodes[0].raw.campaign().unwrap();
    run(&mut nodes, |nodes| nodes[0].applied.len() == n + 10);
    assert_eq!(nodes[0].applied[n + 9], Bytes::from_static(b"after9"));
    assert_eq!(nodes[0].applied[0], Bytes::from_static(b"w0"));
}

/// Three nodes in memory: an election (votes must be durable before they are sent),
/// replication, a follower that falls behind the leader's compaction catching up by
/// snapshot, and every node agreeing on what was applied after a restart of all.
#[test]
fn three_nodes_replicate_catch_up_by_snapshot_and_restart() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut nodes = start_three(tmp.path());
        nodes[0].raw.campaign().unwrap();
        run(&mut nodes, |nodes| leader(nodes).is_some());
        let l = leader(&nodes).unwrap();
        nodes[l].propose_each((0..300).map(|i| format!("a{i}")));
        run(&mut nodes, |nodes| {
            nodes.iter().all(|n| n.applied.len() == 300)
        });
        // Node 3 goes away; the others go on and compact past what it has.
        let down = if l == 2 { 1 } else { 2 };
        let mut stopped = nodes.remove(down);
        let l = leader(&nodes).unwrap();
        nodes[l].propose_each((0..200).map(|i| format!("b{i}")));
        run(&mut nodes, |nodes| {
            nodes.iter().all(|n| n.applied.len() == 500)
        });
        for node in &nodes {
            node.snapshot_now();
        }
        // Drain what the stopped node had queued, then bring it back.
        let mut dropped = Vec::new();
        stopped.on_persisted(&mut dropped);
        nodes.insert(down, stopped);
        run(&mut nodes, |nodes| {
            nodes.iter().all(|n| n.applied.len() == 500)
        });
        let returned = &nodes[down];
        assert!(
            returned.storage().first_index().unwrap() > 301,
            "the returning node caught up by snapshot"
        );
        let expected = nodes[0].applied.clone();
        assert!(nodes.iter().all(|n| n.applied == expected));
    }
    let mut nodes = start_three(tmp.path());
    nodes[1].raw.campaign().unwrap();
    run(&mut nodes, |nodes| leader(nodes).is_some());
    let l = leader(&nodes).unwrap();
    nodes[l].raw.propose(vec![], b"c".to_vec()).unwrap();
    run(&mut nodes, |nodes| {
        nodes.iter().all(|n| n.applied.len() == 501)
    });
    let expected = nodes[0].applied.clone();
    assert!(nodes.iter().all(|n| n.applied == expected));
    assert_eq!(expected[0], Bytes::from_static(b"a0"));
    assert_eq!(expected[500], Bytes::from_static(b"c"));
}

/// A follower that was down while the others went on catches up from the leader's log
/// files: the entries it lacks are no longer in the leader's memory (the harness keeps
/// none that are durable and applied), and there is no snapshot to fall back on.
#[test]
fn a_follower_behind_catches_up_from_entries_read_back_from_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let mut nodes = start_three(tmp.path());
    nodes[0].raw.campaign().unwrap();
    run(&mut nodes, |nodes| leader(nodes).is_some());
    let l = leader(&nodes).unwrap();
    let down = if l == 2 { 1 } else { 2 };
    let mut stopped = nodes.remove(down);
    let behind = stopped.storage().last_index().unwrap();
    let l = leader(&nodes).unwrap();
    // 16 KiB segments: a few hundred of these fill several.
    nodes[l].propose_each((0..600).map(|i| format!("entry {i} {:0>64}", i)));
    run(&mut nodes, |nodes| {
        nodes.iter().all(|n| n.applied.len() == 600)
    });
    assert!(nodes[l].storage().released() > behind + 500);
    let mut dropped = Vec::new();
    stopped.on_persisted(&mut dropped);
    nodes.insert(down, stopped);
    run(&mut nodes, |nodes| {
        nodes.iter().all(|n| n.applied.len() == 600)
    });
    let expected = nodes[0].applied.clone();
    assert!(nodes.iter().all(|n| n.applied == expected));
    assert_eq!(
        nodes[down].storage().first_index().unwrap(),
        1,
        "caught up from the log, not by a snapshot"
    );
    // Read back through raft's Storage, across segments, with its size rule.
    let s = nodes[l].storage();
    let last = s.last_index().unwrap();
    let all = s
        .entries(1, last + 1, None, GetEntriesContext::empty(false))
        .unwrap();
    assert_eq!(all.len() as u64, last);
    assert!(all.iter().zip(1..).all(|(e, i)| e.index == i));
    let some = s
        .entries(2, last + 1, 300, GetEntriesContext::empty(false))
        .unwrap();
    assert!(!some.is_empty() && some.len() < 10, "{}", some.len());
    assert_eq!(some[..], all[1..some.len() + 1]);
    for e in &all {
        assert_eq!(s.term(e.index).unwrap(), e.term);
    }
}

/// Released entries: read back from the log within raft's size rule, their terms known
/// without them, compaction across them, purging never past the compacted index, and a
/// restart that finds them all again.
#[test]
fn released_entries_are_read_back_compacted_and_found_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (opened, rx) = open(tmp.path());
        let s = opened.storage;
        fill(&s, &rx, 1..=1000);
        // A new term from 1001 on.
        s.append(
            2000,
            (1001..=1200).map(|i| entry(i, 2, b"term two")).collect(),
            Some(hard_state(2, 1, 1200)),
        )
        .unwrap();
        wait_for(&rx, 2000);
        let before = s
            .entries(1, 1201, None, GetEntriesContext::empty(false))
            .unwrap();
        s.release(1100);
        assert_eq!(s.released(), 1100);
        assert_eq!(
            (s.first_index().unwrap(), s.last_index().unwrap()),
            (1, 1200)
        );
        let after = s
            .entries(1, 1201, None, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(after, before, "the same entries, from files and memory");
        // The size rule holds across the two: 3 entries' worth from 1099 on.
        let budget = before[1098..1101]
            .iter()
            .map(|e| u64::from(e.compute_size()))
            .sum::<u64>();
        let limited = s
            .entries(1099, 1201, budget, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(limited, before[1098..1101]);
        assert_eq!(s.term(1000).unwrap(), 1);
        assert_eq!(s.term(1001).unwrap(), 2);
        assert_eq!(s.term(1100).unwrap(), 2);
        assert_eq!(s.term(1101).unwrap(), 2);
        // Entries below the released point cannot be replaced.
        assert!(matches!(
            s.append(2001, vec![entry(1050, 3, b"")], None),
            Err(StoreError::OverwriteApplied { first: 1050, .. })
        ));
        for index in [200, 400, 600] {
            snapshot_at(&s, index);
        }
        s.compact(300).unwrap();
        assert_eq!(s.first_index().unwrap(), 301);
        assert_eq!(s.term(300).unwrap(), 1);
        assert!(matches!(
            s.entries(300, 302, None, GetEntriesContext::empty(false)),
            Err(raft::Error::Store(StorageError::Compacted))
        ));
        // The oldest snapshot kept is at 400 but the log is compacted only to 300: the
        // segments that hold 301..400 stay, since raft may still ask for them.
        s.purge(3).unwrap();
        s.append(2002, vec![], None).unwrap();
        wait_for(&rx, 2002);
        let read = s
            .entries(301, 1201, None, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(read, before[300..]);
        // Compacting into the entries still in memory.
        snapshot_at(&s, 1150);
        s.compact(1150).unwrap();
        assert_eq!(s.term(1150).unwrap(), 2);
        assert_eq!(
            s.entries(1151, 1201, None, GetEntriesContext::empty(false))
                .unwrap(),
            before[1150..]
        );
    }
    let (opened, _) = open(tmp.path());
    let s = opened.storage;
    assert_eq!(opened.snapshot.unwrap().metadata.index, 1150);
    assert_eq!(
        s.entries(1151, 1201, None, GetEntriesContext::empty(false))
            .unwrap()
            .len(),
        50
    );
}

/// A server that lost its raft state stays "rejoining" across restarts until it has
/// caught up: a wiped server that learnt a term (its hard state looks whole again) and
/// crashed before catching up must not come back as an intact voter (found by the
/// simulated ensemble: two replicas then applied different txns at one index).
#[test]
fn a_server_rejoining_after_a_loss_stays_so_across_restarts_until_it_caught_up() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (opened, rx) = open(tmp.path());
        assert_eq!(opened.raft_state, RaftStateOnDisk::Blank);
        let s = opened.storage;
        s.rejoining();
        // It hears a leader: a term and a few entries, durable.
        s.append(
            1,
            (1..=3).map(|i| entry(i, 2, b"x")).collect(),
            Some(hard_state(2, 0, 0)),
        )
        .unwrap();
        wait_for(&rx, 1);
    }
    let (opened, _rx) = open(tmp.path());
    assert_eq!(opened.raft_state, RaftStateOnDisk::Rejoining);
    opened.storage.rejoined();
    drop(opened);
    let (opened, _rx) = open(tmp.path());
    assert_eq!(opened.raft_state, RaftStateOnDisk::Intact);
}

//! The simulated ensemble: servers, clients, the network, the clock and the faults.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use paddock_wire::{Acl, CreateRequest, ErrorCode, EventType, Request};
use raft::prelude::{ConfState, Entry, EntryType, Message};
use raft::storage::MemStorage;
use raft::{RawNode, StateRole};

use crate::apply::{apply, Effect, Rules};
use crate::consensus::{LivenessReport, QuorumContact, RaftStateOnDisk, Replica, VoteGuard};
use crate::liveness::{serving_window, Action, LivenessCore, LivenessEvent, View};
use crate::query::zxids;
use crate::replicated::Db;
use crate::session::SessionTable;
use crate::tree::DataTree;
use crate::txn::{Origin, Txn, TxnKind};
use crate::watch::{Change, Rearm, WatchKind, WatchRegistry};

const VOTERS: [u64; 3] = [1, 2, 3];
/// tickTime and one raft tick (a tenth of it), in virtual milliseconds.
const TICK_TIME: u64 = 500;
const RAFT_TICK: u64 = TICK_TIME / 10;
/// The shortest session timeout ZooKeeper allows: two tickTimes.
const SESSION_TIMEOUT: u64 = 2 * TICK_TIME;
/// Virtual milliseconds per step.
const STEP: u64 = 5;
/// A request not answered after this long counts as lost: the client's connection
/// closes and it reconnects (the server's lost-proposal limit is 10 ticks).
const LOST_REQUEST: u64 = 10 * TICK_TIME;
/// Faults are injected until then; then everything heals and the run goes on.
const FAULTS_UNTIL: u64 = 20_000;
const RUN_FOR: u64 = 30_000;
const CLIENTS: u64 = 6;

const RULES: Rules = Rules {
    extended_types: false,
    enforce_quota: false,
};

/// A small seeded generator (xorshift), so every run replays from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n` (0 for n = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A fault the schedule injects, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The server is cut from its peers (its clients still reach it).
    Isolate(u64),
    /// kill -9, then a restart from what is durable.
    Crash(u64),
    /// A crash that loses the server's raft state; it restarts blank.
    Wipe(u64),
    /// SIGSTOP: no ticks, nothing handled or sent, until SIGCONT; then it carries on
    /// with what it believed (a leader still believes it leads).
    Pause(u64),
}

impl Fault {
    fn server(self) -> u64 {
        match self {
            Fault::Isolate(id) | Fault::Crash(id) | Fault::Wipe(id) | Fault::Pause(id) => id,
        }
    }
}

/// What one run did and found.
#[derive(Debug, Default)]
pub struct SimReport {
    pub faults: Vec<(u64, Fault)>,
    pub acknowledged: usize,
    pub expired: usize,
    pub elections: usize,
    /// Watch events clients were told of (live, or on re-arming after a reconnect).
    pub events: usize,
    pub violations: Vec<String>,
}

enum Payload {
    Raft(Message),
    Report(LivenessReport),
    Ack { seq: u64, commit: u64 },
}

struct InFlight {
    from: u64,
    to: u64,
    payload: Payload,
}

struct Server {
    id: u64,
    storage: MemStorage,
    /// The durable "rejoining" mark (the meta database's, in the server): kept across
    /// a crash, as the storage is.
    rejoining: bool,
    replica: Replica<MemStorage>,
    db: Db,
    liveness: LivenessCore,
    up: bool,
    /// When it was paused (SIGSTOP), while it is.
    paused_at: Option<u64>,
    serving: bool,
    next_request: u64,
    /// The sessions whose clients are connected here, and when each was last heard.
    heard: BTreeMap<i64, u64>,
    /// The watches this server's connections set (lost when it goes down).
    watches: WatchRegistry<u64>,
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

fn empty_db() -> Db {
    Db {
        tree: DataTree::new(),
        sessions: SessionTable::default(),
        last_zxid: 0,
    }
}

impl Server {
    /// `incarnation`: unique to this start of this server, in the run; `election`: its
    /// election timeout in ticks (raft-rs draws it from an unseeded generator within
    /// [min, max), so the run fixes it to one value, drawn from the run's seed).
    fn start(
        id: u64,
        incarnation: u64,
        election: usize,
        storage: MemStorage,
        on_disk: RaftStateOnDisk,
        now: Instant,
    ) -> Server {
        let config = raft::Config {
            id,
            election_tick: 10,
            min_election_tick: election,
            max_election_tick: election + 1,
            heartbeat_tick: 3,
            pre_vote: true,
            check_quorum: true,
            max_inflight_msgs: 256,
            max_size_per_msg: 1024 * 1024,
            ..Default::default()
        };
        let node = RawNode::new(&config, storage.clone(), &logger()).expect("a raft node");
        Server {
            id,
            storage,
            rejoining: on_disk != RaftStateOnDisk::Intact,
            replica: Replica::new(
                node,
                VoteGuard::new(id, VOTERS.to_vec(), on_disk),
                QuorumContact::new(id, VOTERS.to_vec()),
            ),
            db: empty_db(),
            liveness: LivenessCore::new(serving_window(Duration::from_millis(TICK_TIME)), now),
            up: true,
            paused_at: None,
            serving: false,
            // Unique to this incarnation, as the server's request ids are (`ids.rs`):
            // a replayed txn must never complete a request of the new incarnation.
            next_request: incarnation << 32,
            heard: BTreeMap::new(),
            watches: WatchRegistry::new(),
        }
    }

    fn fresh_storage() -> MemStorage {
        MemStorage::new_with_conf_state(ConfState::from((VOTERS.to_vec(), vec![])))
    }

    /// Up and not paused: it ticks, handles messages and answers.
    fn running(&self) -> bool {
        self.up && self.paused_at.is_none()
    }

    fn is_leader(&self) -> bool {
        self.replica.node.raft.state == StateRole::Leader
    }

    fn origin(&mut self) -> Origin {
        let request = self.next_request;
        self.next_request += 1;
        Origin {
            server: self.id,
            request,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Asking {
    Create,
    Move,
    Write(String),
}

struct Client {
    session: i64,
    server: u64,
    conn: u64,
    connected: bool,
    next_seq: u64,
    pending: Option<(Origin, Asking, u64)>,
    next_ping: u64,
    writes: u64,
    /// When it may try to connect again.
    retry_at: u64,
    /// Paths this session waits to see created (armed exists watches, not yet fired).
    watching: BTreeSet<String>,
    /// Paths whose creation this session was told of.
    told: BTreeSet<String>,
    /// The last zxid the client saw, in replies and events: a server behind it refuses
    /// the connection, and re-arming compares with it.
    last_zxid: i64,
    /// The zxid of the last event it was told (stamped with the reply's zxid for the
    /// events re-arming finds already fired).
    last_event: i64,
}

/// A write applied on one server: (index, data), for state machine safety.
type AppliedLog = HashMap<u64, Bytes>;

pub struct Cluster {
    rng: Rng,
    /// When in each raft tick each server ticks.
    phases: Vec<u64>,
    base: Instant,
    now: u64,
    servers: Vec<Server>,
    clients: Vec<Client>,
    wire: BTreeMap<(u64, u64), InFlight>,
    sent: u64,
    isolated: Vec<u64>,
    drop_percent: u64,
    applied: AppliedLog,
    leaders: HashMap<u64, u64>,
    expired: HashMap<i64, u64>,
    acknowledged: Vec<String>,
    next_session: i64,
    next_conn: u64,
    /// Server starts so far (each gets its own request ids).
    incarnations: u64,
    report: SimReport,
    /// `PADDOCK_SIM_TRACE=1`: print what happens, to read a failing seed's run.
    trace: bool,
}

impl Cluster {
    pub fn new(seed: u64) -> Cluster {
        let base = Instant::now();
        let mut rng = Rng::new(seed);
        let servers = VOTERS
            .iter()
            .map(|id| {
                Server::start(
                    *id,
                    *id,
                    10 + rng.below(10) as usize,
                    Server::fresh_storage(),
                    RaftStateOnDisk::Blank,
                    base,
                )
            })
            .collect();
        let clients = (0..CLIENTS)
            .map(|i| Client {
                session: 0,
                server: VOTERS[(i % 3) as usize],
                conn: 0,
                connected: false,
                next_seq: 0,
                pending: None,
                next_ping: 0,
                writes: 0,
                retry_at: rng.below(500),
                watching: BTreeSet::new(),
                told: BTreeSet::new(),
                last_zxid: 0,
                last_event: 0,
            })
            .collect();
        let mut cluster = Cluster {
            phases: Vec::new(),
            drop_percent: 1 + rng.below(5),
            rng,
            base,
            now: 0,
            servers,
            clients,
            wire: BTreeMap::new(),
            sent: 0,
            isolated: Vec::new(),
            applied: HashMap::new(),
            leaders: HashMap::new(),
            expired: HashMap::new(),
            acknowledged: Vec::new(),
            next_session: 0x0100_0000_0000_0000,
            next_conn: 1,
            incarnations: 3,
            report: SimReport::default(),
            trace: std::env::var_os("PADDOCK_SIM_TRACE").is_some(),
        };
        // A new ensemble: every server says it has no state.
        for i in 0..3 {
            for peer in VOTERS {
                if cluster.servers[i].replica.peer_hello(peer, false) {
                    cluster.servers[i].rejoining = false;
                }
            }
        }
        cluster
    }

    fn at(&self, ms: u64) -> Instant {
        self.base + Duration::from_millis(ms)
    }

    fn index(id: u64) -> usize {
        (id - 1) as usize
    }

    /// Runs the schedule to the end and checks the invariants.
    pub fn run(mut self) -> SimReport {
        let mut next_fault = 2_000 + self.rng.below(1_000);
        // Faults overlap: each server has at most one, healed at its own time.
        let mut active: Vec<(Fault, u64)> = Vec::new();
        let mut wiped = false;
        self.draw_phases();
        // Writes stop at RUN_FOR; then up to five seconds more for the replicas to agree.
        while self.now < RUN_FOR + 5_000 {
            let now = self.now;
            let (due, pending): (Vec<_>, Vec<_>) =
                active.into_iter().partition(|(_, heal_at)| *heal_at <= now);
            active = pending;
            for (fault, _) in due {
                self.heal(fault);
            }
            if self.now >= next_fault && self.now < FAULTS_UNTIL {
                let faulted: Vec<u64> = active.iter().map(|(f, _)| f.server()).collect();
                if let Some(fault) = self.pick_fault(&faulted, &mut wiped) {
                    self.inject(fault);
                    active.push((fault, self.now + 1_000 + self.rng.below(2_500)));
                }
                next_fault = self.now + 500 + self.rng.below(1_500);
            }
            if self.now >= FAULTS_UNTIL && !active.is_empty() {
                for (fault, _) in std::mem::take(&mut active) {
                    self.heal(fault);
                }
            }
            self.step();
            if self.now >= RUN_FOR && self.converged() {
                break;
            }
        }
        self.finish()
    }

    /// Each server ticks at its own phase within a raft tick.
    fn draw_phases(&mut self) {
        self.phases = VOTERS
            .iter()
            .map(|_| self.rng.below(RAFT_TICK / STEP) * STEP)
            .collect();
    }

    /// One step of the virtual clock.
    fn step(&mut self) {
        self.deliver();
        for i in 0..self.servers.len() {
            if self.servers[i].running() && self.now % RAFT_TICK == self.phases[i] {
                self.tick_server(i);
            }
            self.handle_ready(i);
        }
        self.drive_clients();
        self.now += STEP;
    }

    /// A run whose faults the caller injects and heals ([`Cluster::inject`],
    /// [`Cluster::heal`]) between stretches of [`Cluster::run_until`], for a scenario
    /// the seeded schedule is unlikely to hit; [`Cluster::finish_script`] ends it.
    pub fn scripted(seed: u64) -> Cluster {
        let mut cluster = Cluster::new(seed);
        cluster.draw_phases();
        cluster
    }

    /// Steps until `done` holds (true) or `limit` virtual milliseconds pass (false).
    pub fn run_until(&mut self, limit: u64, done: impl Fn(&Cluster) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }

    /// Heals nothing: the caller healed what it injected. Runs to the end of the
    /// schedule (writes stop at its usual time) and checks the invariants.
    pub fn finish_script(mut self) -> SimReport {
        while self.now < RUN_FOR + 5_000 {
            self.step();
            if self.now >= RUN_FOR && self.converged() {
                break;
            }
        }
        self.finish()
    }

    /// The server that leads, as it believes, with its term (the highest such term).
    pub fn leader(&self) -> Option<(u64, u64)> {
        self.servers
            .iter()
            .filter(|s| s.running() && s.is_leader())
            .map(|s| (s.id, s.replica.node.raft.term))
            .max_by_key(|(_, term)| *term)
    }

    /// Acknowledged writes so far.
    pub fn acknowledged(&self) -> usize {
        self.acknowledged.len()
    }

    /// A fault for a server that has none now, if any is left.
    fn pick_fault(&mut self, faulted: &[u64], wiped: &mut bool) -> Option<Fault> {
        let free: Vec<u64> = VOTERS
            .iter()
            .copied()
            .filter(|id| !faulted.contains(id))
            .collect();
        if free.is_empty() {
            return None;
        }
        let id = free[self.rng.below(free.len() as u64) as usize];
        Some(match self.rng.below(10) {
            0..=3 => Fault::Isolate(id),
            4 => Fault::Pause(id),
            // One wipe per run at most: two would lose a majority's data.
            5 if !*wiped => {
                *wiped = true;
                Fault::Wipe(id)
            }
            _ => Fault::Crash(id),
        })
    }

    pub fn inject(&mut self, fault: Fault) {
        self.trace(|| format!("fault {fault:?}"));
        self.report.faults.push((self.now, fault));
        match fault {
            Fault::Isolate(id) => self.isolated.push(id),
            Fault::Pause(id) => self.servers[Self::index(id)].paused_at = Some(self.now),
            Fault::Crash(id) | Fault::Wipe(id) => {
                let server = &mut self.servers[Self::index(id)];
                server.up = false;
                server.serving = false;
                server.heard.clear();
                // Every connection to it breaks, connected or still handshaking.
                for client in &mut self.clients {
                    if client.server == id && (client.connected || client.pending.is_some()) {
                        client.connected = false;
                        client.conn = 0;
                        client.pending = None;
                    }
                }
            }
        }
    }

    pub fn heal(&mut self, fault: Fault) {
        self.trace(|| format!("heal {fault:?}"));
        let now = self.at(self.now);
        match fault {
            Fault::Isolate(id) => self.isolated.retain(|cut| *cut != id),
            Fault::Pause(id) => self.servers[Self::index(id)].paused_at = None,
            Fault::Crash(id) => {
                let i = Self::index(id);
                let storage = self.servers[i].storage.clone();
                let on_disk = if self.servers[i].rejoining {
                    RaftStateOnDisk::Rejoining
                } else {
                    RaftStateOnDisk::Intact
                };
                self.incarnations += 1;
                let election = 10 + self.rng.below(10) as usize;
                self.servers[i] =
                    Server::start(id, self.incarnations, election, storage, on_disk, now);
            }
            Fault::Wipe(id) => {
                let i = Self::index(id);
                self.incarnations += 1;
                let election = 10 + self.rng.below(10) as usize;
                self.servers[i] = Server::start(
                    id,
                    self.incarnations,
                    election,
                    Server::fresh_storage(),
                    RaftStateOnDisk::Blank,
                    now,
                );
                // Its peers have state, and say so in their hellos.
                for peer in VOTERS {
                    if peer != id && self.servers[i].replica.peer_hello(peer, true) {
                        self.servers[i].rejoining = false;
                    }
                }
            }
        }
    }

    fn linked(&self, a: u64, b: u64) -> bool {
        !self.isolated.contains(&a) && !self.isolated.contains(&b)
    }

    fn send(&mut self, from: u64, to: u64, payload: Payload) {
        if !self.linked(from, to) || self.rng.chance(self.drop_percent) {
            return;
        }
        self.sent += 1;
        let at = self.now + 1 + self.rng.below(20);
        self.wire
            .insert((at, self.sent), InFlight { from, to, payload });
    }

    fn deliver(&mut self) {
        while let Some(entry) = self.wire.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let message = entry.remove();
            let i = Self::index(message.to);
            // A paused server's socket buffers would hold it; dropping it is as good.
            if !self.servers[i].running() || !self.linked(message.from, message.to) {
                continue;
            }
            let now = self.at(self.now);
            match message.payload {
                Payload::Raft(m) => {
                    if let Ok(replies) = self.servers[i].replica.step(m, now) {
                        for reply in replies {
                            let to = reply.to;
                            self.send(message.to, to, Payload::Raft(reply));
                        }
                    }
                }
                Payload::Report(report) => self.liveness_event(
                    i,
                    LivenessEvent::Report {
                        from: message.from,
                        report,
                    },
                ),
                Payload::Ack { seq, commit } => self.liveness_event(
                    i,
                    LivenessEvent::Ack {
                        from: message.from,
                        seq,
                        commit,
                    },
                ),
            }
        }
    }

    fn liveness_event(&mut self, i: usize, event: LivenessEvent) {
        let (view, now) = (self.view(i), self.at(self.now));
        let actions = self.servers[i].liveness.on_event(event, view, now);
        self.carry_out(i, actions);
    }

    fn view(&self, i: usize) -> View {
        let server = &self.servers[i];
        let leader = server.is_leader();
        View {
            standalone: false,
            leader,
            leader_id: server.replica.node.raft.leader_id,
            applied: server.replica.node.raft.raft_log.applied,
            leader_contact: if leader {
                server.replica.quorum_contact(self.at(self.now))
            } else {
                None
            },
        }
    }

    fn tick_server(&mut self, i: usize) {
        if self.servers[i].replica.tick() {
            self.servers[i].rejoining = false;
        }
        let now = self.at(self.now);
        let view = self.view(i);
        let heard: Vec<(i64, Instant)> = self.servers[i]
            .heard
            .iter()
            .map(|(session, ms)| (*session, self.at(*ms)))
            .collect();
        let actions = self.servers[i].liveness.tick(view, heard, now);
        self.carry_out(i, actions);
    }

    fn carry_out(&mut self, i: usize, actions: Vec<Action>) {
        let id = self.servers[i].id;
        for action in actions {
            match action {
                Action::Expire(session) => {
                    self.trace(|| format!("server {id} proposes the expiry of {session:#x}"));
                    let conn = self.servers[i]
                        .db
                        .sessions
                        .get(session)
                        .map_or(0, |s| s.conn);
                    let txn = Txn {
                        head: crate::txn::Head {
                            origin: Origin::default(),
                            session_id: session,
                            xid: 0,
                            conn,
                            seq: 0,
                            time: self.now as i64,
                        },
                        caller: Vec::new(),
                        kind: TxnKind::ExpireSession,
                    };
                    let _ = self.servers[i].replica.node.propose(vec![], txn.encode());
                }
                Action::Report { leader, report } => self.send(id, leader, Payload::Report(report)),
                Action::Ack { follower, seq } => {
                    let commit = self.servers[i].replica.node.raft.raft_log.applied;
                    self.send(id, follower, Payload::Ack { seq, commit });
                }
                Action::StopServing { .. } => {
                    self.trace(|| format!("server {id} stops serving"));
                    self.servers[i].serving = false;
                    self.servers[i].heard.clear();
                    self.servers[i].watches = WatchRegistry::new();
                    for client in &mut self.clients {
                        if client.server == id && (client.connected || client.pending.is_some()) {
                            // The server closed every connection, handshakes too: the
                            // client is told.
                            client.connected = false;
                            client.conn = 0;
                            client.pending = None;
                            client.retry_at = self.now + 50;
                        }
                    }
                }
                Action::StartServing => {
                    self.trace(|| format!("server {id} serves"));
                    self.servers[i].serving = true;
                }
            }
        }
    }

    /// raft-rs's `Ready`, persisted at once (the log is a `MemStorage`).
    fn handle_ready(&mut self, i: usize) {
        if !self.servers[i].running() || !self.servers[i].replica.node.has_ready() {
            return;
        }
        let id = self.servers[i].id;
        let mut ready = self.servers[i].replica.node.ready();
        if let Some(ss) = ready.ss() {
            if ss.raft_state == StateRole::Leader {
                let now = self.at(self.now);
                self.servers[i].replica.elected(now);
                let term = self.servers[i].replica.node.raft.term;
                self.trace(|| format!("server {id} leads in term {term}"));
                self.report.elections += 1;
                if let Some(other) = self.leaders.insert(term, id) {
                    if other != id {
                        self.violation(format!("two leaders in term {term}: {other} and {id}"));
                    }
                }
            }
        }
        let messages = self.servers[i].replica.outgoing(ready.take_messages());
        self.send_all(id, messages);
        let committed = ready.take_committed_entries();
        self.apply_entries(i, committed);
        for state in ready.take_read_states() {
            self.servers[i]
                .replica
                .take_recovery_read(&state.request_ctx, state.index);
        }
        {
            let mut store = self.servers[i].storage.wl();
            if !ready.entries().is_empty() {
                store.append(ready.entries()).expect("append");
            }
            if let Some(hs) = ready.hs() {
                store.set_hardstate(hs.clone());
            }
        }
        let persisted = self.servers[i]
            .replica
            .outgoing(ready.take_persisted_messages());
        self.send_all(id, persisted);
        let mut light = self.servers[i].replica.node.advance(ready);
        if let Some(commit) = light.commit_index() {
            self.servers[i]
                .storage
                .wl()
                .mut_hard_state()
                .set_commit(commit);
        }
        let messages = self.servers[i].replica.outgoing(light.take_messages());
        self.send_all(id, messages);
        let committed = light.take_committed_entries();
        self.apply_entries(i, committed);
        self.servers[i].replica.node.advance_apply();
    }

    fn send_all(&mut self, from: u64, messages: Vec<Message>) {
        for message in messages {
            let to = message.to;
            self.send(from, to, Payload::Raft(message));
        }
    }

    fn apply_entries(&mut self, i: usize, entries: Vec<Entry>) {
        let id = self.servers[i].id;
        for entry in entries {
            if entry.get_entry_type() != EntryType::EntryNormal || entry.data.is_empty() {
                continue;
            }
            match self.applied.get(&entry.index) {
                Some(data) if *data != entry.data => self.violation(format!(
                    "server {id} applied another txn at index {} than a replica before it",
                    entry.index
                )),
                Some(_) => {}
                None => {
                    self.applied.insert(entry.index, entry.data.clone());
                }
            }
            let Ok(txn) = Txn::decode(entry.data.clone()) else {
                self.violation(format!("undecodable txn at {}", entry.index));
                continue;
            };
            let zxid = entry.index as i64;
            let outcome = apply(RULES, &mut self.servers[i].db, &txn, zxid);
            // As the state machine does: events are queued before the other effects and
            // before the reply.
            for trigger in outcome.triggers {
                let Some(change) = Change::of(trigger.event) else {
                    continue;
                };
                let Some(fired) = self.servers[i].watches.trigger(&trigger.path, change) else {
                    continue;
                };
                for conn in fired.watchers {
                    self.tell(id, conn, &trigger.path, trigger.event, zxid);
                }
            }
            for effect in outcome.effects {
                match effect {
                    Effect::SessionOpened { session, timeout } => {
                        let timeout = Duration::from_millis(u64::try_from(timeout).unwrap_or(0));
                        self.liveness_event(i, LivenessEvent::Opened { session, timeout });
                    }
                    Effect::SessionEnded { session, expired } => {
                        self.liveness_event(i, LivenessEvent::Ended { session });
                        if expired {
                            self.session_expired(i, session);
                        }
                    }
                    Effect::SessionMoved { session, .. } => {
                        self.liveness_event(i, LivenessEvent::Reattached { session });
                    }
                }
            }
            if txn.head.origin.server == id {
                self.complete(
                    txn.head.origin,
                    entry.index as i64,
                    outcome.result.map(|_| ()),
                );
            }
        }
    }

    /// A server applied the expiry of `session`. Its client must not be connected to a
    /// serving server at the first such moment: that is when another client can first
    /// see the session's ephemeral nodes gone.
    fn session_expired(&mut self, i: usize, session: i64) {
        let id = self.servers[i].id;
        self.trace(|| format!("server {id} applies the expiry of {session:#x}"));
        if !self.expired.contains_key(&session) {
            self.expired.insert(session, self.now);
            self.report.expired += 1;
            if let Some(client) = self.clients.iter().find(|c| c.session == session) {
                if client.connected {
                    self.violation(format!(
                        "session {session:#x} expired (on server {id}) while its client was \
                         connected to serving server {}",
                        client.server
                    ));
                }
            }
        }
        self.servers[i].heard.remove(&session);
        for client in &mut self.clients {
            if client.session == session && client.server == id {
                self.servers[i].watches.remove_connection(client.conn);
                // Its server closes the connection; the client learns Expired.
                client.session = 0;
                client.connected = false;
                client.conn = 0;
                client.pending = None;
            }
        }
    }

    fn complete(&mut self, origin: Origin, zxid: i64, result: Result<(), ErrorCode>) {
        let Some(c) = self
            .clients
            .iter()
            .position(|c| c.pending.as_ref().is_some_and(|(o, _, _)| *o == origin))
        else {
            return;
        };
        let Some((_, asking, _)) = self.clients[c].pending.take() else {
            return;
        };
        let client = &mut self.clients[c];
        client.last_zxid = client.last_zxid.max(zxid);
        let server = self.clients[c].server;
        let serving = self.servers[Self::index(server)].serving;
        match (asking, result) {
            (asking @ (Asking::Create | Asking::Move), Ok(())) if serving => {
                let (s, conn) = (self.clients[c].session, self.clients[c].conn);
                self.trace(|| format!("client {c} ({s:#x}) connected to {server} (conn {conn})"));
                let client = &mut self.clients[c];
                client.connected = true;
                client.next_ping = self.now;
                if asking == Asking::Create {
                    // A new session: the old one's watches died with it.
                    client.watching.clear();
                    client.told.clear();
                    client.last_event = 0;
                }
                let session = client.session;
                self.servers[Self::index(server)]
                    .heard
                    .insert(session, self.now);
                self.rearm(c);
            }
            (Asking::Write(path), Ok(())) => self.acknowledged.push(path),
            (Asking::Move, Err(ErrorCode::SessionExpired)) => self.clients[c].session = 0,
            // Anything else: the connection closes, the client reconnects.
            _ => self.close_connection(c, self.now + 50),
        }
    }

    /// Client `c`'s connection closes (whatever it had in flight is lost to it); it may
    /// reconnect from `retry_at`.
    fn close_connection(&mut self, c: usize, retry_at: u64) {
        let client = &mut self.clients[c];
        let conn = client.conn;
        client.connected = false;
        client.conn = 0;
        client.pending = None;
        client.retry_at = retry_at;
        let (server, session) = (client.server, client.session);
        let i = Self::index(server);
        self.servers[i].heard.remove(&session);
        self.servers[i].watches.remove_connection(conn);
    }

    fn drive_clients(&mut self) {
        for c in 0..self.clients.len() {
            let now = self.now;
            let server = Self::index(self.clients[c].server);
            if self.clients[c].connected {
                // A paused server answers nothing: the client gives up on the connection
                // after its read timeout (two thirds of the session timeout), as
                // ZooKeeper's does.
                if let Some(since) = self.servers[server].paused_at {
                    if now - since >= SESSION_TIMEOUT * 2 / 3 {
                        self.close_connection(c, now);
                    }
                    continue;
                }
            }
            if self.clients[c].connected && now >= self.clients[c].next_ping {
                // Pings go out whatever else is in flight.
                let session = self.clients[c].session;
                self.servers[server].heard.insert(session, now);
                self.clients[c].next_ping =
                    now + SESSION_TIMEOUT / 3 - self.rng.below(SESSION_TIMEOUT / 10);
            }
            if let Some((_, _, sent)) = &self.clients[c].pending {
                if now - sent > LOST_REQUEST {
                    self.close_connection(c, now);
                }
                continue;
            }
            if self.clients[c].connected {
                self.client_works(c);
            } else if now >= self.clients[c].retry_at {
                self.client_connects(c);
            }
        }
    }

    fn client_connects(&mut self, c: usize) {
        let server = VOTERS[self.rng.below(3) as usize];
        let i = Self::index(server);
        // A server behind what the client saw refuses it (ZooKeeper's rule: the client
        // tries another), so a client never goes back in time.
        if !self.servers[i].running()
            || !self.servers[i].serving
            || self.servers[i].db.last_zxid < self.clients[c].last_zxid
        {
            self.clients[c].retry_at = self.now + 100;
            return;
        }
        let conn = self.next_conn;
        self.next_conn += 1;
        let origin = self.servers[i].origin();
        let s = self.clients[c].session;
        self.trace(|| format!("client {c} ({s:#x}) connects to {server} (conn {conn})"));
        let client = &mut self.clients[c];
        client.server = server;
        client.conn = conn;
        client.next_seq = 1;
        let (kind, asking) = if client.session == 0 {
            self.next_session += 1;
            client.session = self.next_session;
            let kind = TxnKind::CreateSession {
                timeout: SESSION_TIMEOUT as i32,
                passwd: Bytes::from_static(&[0; 16]),
            };
            (kind, Asking::Create)
        } else {
            (TxnKind::MoveSession, Asking::Move)
        };
        let txn = Txn {
            head: crate::txn::Head {
                origin,
                session_id: client.session,
                xid: 0,
                conn,
                seq: 0,
                time: self.now as i64,
            },
            caller: Vec::new(),
            kind,
        };
        client.pending = Some((origin, asking, self.now));
        let _ = self.servers[i].replica.node.propose(vec![], txn.encode());
    }

    fn client_works(&mut self, c: usize) {
        let now = self.now;
        let server = self.clients[c].server;
        let i = Self::index(server);
        if now >= RUN_FOR || !self.rng.chance(10) {
            return;
        }
        if self.rng.chance(30) {
            self.watch_for_creation(c);
            return;
        }
        if self.clients[c].writes >= 200 {
            return;
        }
        let origin = self.servers[i].origin();
        let client = &mut self.clients[c];
        client.writes += 1;
        let path = format!("/c{c}-{}", client.writes);
        let txn = Txn {
            head: crate::txn::Head {
                origin,
                session_id: client.session,
                xid: 1,
                conn: client.conn,
                seq: client.next_seq,
                time: now as i64,
            },
            caller: Vec::new(),
            kind: TxnKind::Client(Request::Create(CreateRequest {
                path: path.clone(),
                data: Bytes::from_static(b"x").into(),
                acl: Acl::open_unsafe(),
                flags: 0,
            })),
        };
        client.next_seq += 1;
        client.pending = Some((origin, Asking::Write(path), now));
        // A request is heard from its client as a ping is.
        let session = client.session;
        self.servers[i].heard.insert(session, now);
        if self.servers[i]
            .replica
            .node
            .propose(vec![], txn.encode())
            .is_err()
        {
            // Refused at once (no leader): the server closes the connection.
            self.close_connection(c, now + 50);
        }
    }

    /// Client `c` calls `exists` with a watch on a path some client may create soon: a
    /// read, answered by its server from its own state.
    fn watch_for_creation(&mut self, c: usize) {
        let target = self.rng.below(CLIENTS) as usize;
        let n = self.clients[target].writes + 1 + self.rng.below(3);
        let path = format!("/c{target}-{n}");
        let client = &self.clients[c];
        if client.watching.contains(&path) || client.told.contains(&path) {
            return;
        }
        let (i, conn) = (Self::index(client.server), client.conn);
        let server = &mut self.servers[i];
        let exists = server.db.tree.node(&path).is_some();
        if !exists {
            server.watches.add_watch(conn, &path, WatchKind::Data);
        }
        let client = &mut self.clients[c];
        client.last_zxid = client.last_zxid.max(server.db.last_zxid);
        if !exists {
            client.watching.insert(path);
        }
    }

    /// Client `c` has just connected: it re-arms its watches (`setWatches`, with the
    /// last zxid it saw), and hears at once of what they missed meanwhile.
    fn rearm(&mut self, c: usize) {
        let client = &self.clients[c];
        if client.watching.is_empty() {
            return;
        }
        let (id, conn) = (client.server, client.conn);
        let exist: Vec<String> = client.watching.iter().cloned().collect();
        let request = Rearm {
            relative_zxid: client.last_zxid,
            data: &[],
            exist: &exist,
            child: &[],
            persistent: &[],
            persistent_recursive: &[],
        };
        let server = &mut self.servers[Self::index(id)];
        let missed = server
            .watches
            .set_watches(conn, request, |path| zxids(&server.db, path));
        let zxid = server.db.last_zxid;
        for event in missed {
            self.tell(id, conn, &event.path, event.event_type, zxid);
        }
    }

    /// Server `id` tells connection `conn` of an event, stamped `zxid`.
    fn tell(&mut self, id: u64, conn: u64, path: &str, event: EventType, zxid: i64) {
        let Some(c) = self
            .clients
            .iter()
            .position(|client| client.conn == conn && client.server == id && client.connected)
        else {
            self.violation(format!(
                "server {id} fired a watch of connection {conn}, which it does not hold"
            ));
            return;
        };
        self.trace(|| format!("client {c} is told {event:?} {path} at {zxid:#x}"));
        self.report.events += 1;
        let client = &mut self.clients[c];
        let first = client.told.insert(path.to_owned());
        let armed = client.watching.remove(path);
        let in_order = zxid >= client.last_event;
        client.last_event = zxid;
        client.last_zxid = client.last_zxid.max(zxid);
        if event != EventType::NodeCreated {
            self.violation(format!(
                "client {c} was told {event:?} {path}: nothing deletes"
            ));
        } else if !first {
            self.violation(format!("client {c} was told twice that {path} was created"));
        } else if !armed {
            self.violation(format!(
                "client {c} was told of {path}, which it did not watch"
            ));
        } else if !in_order {
            self.violation(format!("client {c} was told of {path} out of zxid order"));
        }
    }

    fn trace(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("{:>6} ms  {}", self.now, what());
        }
    }

    fn violation(&mut self, what: String) {
        self.report
            .violations
            .push(format!("at {} ms: {what}", self.now));
    }

    fn converged(&self) -> bool {
        let first = &self.servers[0];
        self.servers.iter().all(|s| {
            s.replica.node.raft.raft_log.applied == first.replica.node.raft.raft_log.applied
                && s.db.tree.digest() == first.db.tree.digest()
        })
    }

    /// After the run: every replica at the same state, with every acknowledged write.
    fn finish(mut self) -> SimReport {
        let states: Vec<(u64, u64)> = self
            .servers
            .iter()
            .map(|s| (s.replica.node.raft.raft_log.applied, s.db.tree.digest()))
            .collect();
        if states.windows(2).any(|w| w[0] != w[1]) {
            self.violation(format!(
                "replicas did not converge: (applied, digest) {states:?}"
            ));
        }
        let mut missing = Vec::new();
        for path in std::mem::take(&mut self.acknowledged) {
            for server in &self.servers {
                if server.db.tree.node(&path).is_none() {
                    missing.push(format!(
                        "acknowledged {path} is missing on server {}",
                        server.id
                    ));
                }
            }
            self.report.acknowledged += 1;
        }
        // A session connected at the end was told of every creation it watched for.
        for (c, client) in self.clients.iter().enumerate() {
            if !client.connected {
                continue;
            }
            let server = &self.servers[Self::index(client.server)];
            for path in &client.watching {
                if server.db.tree.node(path).is_some() {
                    missing.push(format!(
                        "client {c} was never told that {path}, which it watched, was created"
                    ));
                }
            }
        }
        for what in missing {
            self.violation(what);
        }
        self.report
    }
}

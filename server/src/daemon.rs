//! Starts a server from its config: the raft thread, the state machine, the client
//! listener and the leader's housekeeping; runs until shutdown.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use paddock_wire::codec::FRAME_ALLOWANCE;
use raft::prelude::ConfState;

use crate::config::{Autopurge, Config, Ensemble};
use crate::conns::ConnRegistry;
use crate::consensus::{
    self, Consensus, ConsensusConfig, Handover, Identity, LinkTiming, PeerEvent, Proposer,
    RaftStateOnDisk, Status, Transport,
};
use crate::health::Health;
use crate::image::Image;
use crate::listener::{ClientTls, Security};
use crate::liveness::{self, Liveness, LivenessEvent, LivenessTask};
use crate::metrics::Metrics;
use crate::replicated::Replicated;
use crate::server::{now_millis, Server, Settings};
use crate::state_machine::{self, install, SnapshotInbox, StateMachine};
use crate::store::snapshot::SnapshotDir;
use crate::store::txnlog::LogConfig;
use crate::store::{DurableStorage, Opened, StoreConfig, StoreError};
use crate::txn::TxnKind;
use crate::wait::WaitRegistry;
use crate::writes::Writes;

pub fn settings(config: &Config) -> Settings {
    Settings {
        server_id: config.server_id,
        standalone: config.is_standalone(),
        client_addr: config.client_addr,
        secure_client_addr: config.secure_client_addr,
        tick: config.tick_time,
        min_session_timeout: config.min_session_timeout,
        max_session_timeout: config.max_session_timeout,
        max_client_cnxns: config.max_client_cnxns.map_or(0, |n| n.get() as usize),
        global_outstanding_limit: config.global_outstanding_limit as usize,
        jute_max_buffer: config.jute_max_buffer as usize,
        max_frame: config.jute_max_buffer as usize + FRAME_ALLOWANCE,
        max_client_outgoing: config.max_client_outgoing_bytes as usize,
        extended_types: config.extended_types_enabled,
        enforce_quota: config.enforce_quota,
        super_digest: config
            .super_digest
            .as_ref()
            .map(|d| format!("{}:{}", d.user, d.digest)),
        four_letter_words: config.four_letter_words.clone(),
        data_dir: config.data_dir.clone(),
        data_log_dir: config.data_log_dir.clone(),
        ensemble: config.ensemble.clone(),
    }
}

/// A running server.
pub struct Daemon {
    server: Arc<Server>,
    pub local_addr: std::net::SocketAddr,
    consensus: Consensus,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Daemon {
    pub async fn start(config: &Config) -> anyhow::Result<Daemon> {
        // Uptime counts from here, restoring the state included.
        let started = Instant::now();
        let settings = settings(config);
        let listeners = client_listeners(config).await?;
        let local_addr = listeners
            .first()
            .map(|(listener, _)| listener.local_addr())
            .ok_or_else(|| anyhow::anyhow!("no client port"))??;
        let admin = crate::admin::Listeners::bind(&config.admin).await?;
        let (proposer, proposals) = consensus::channel()
            .map_err(|e| anyhow::anyhow!("cannot make the raft thread's inbox: {e}"))?;
        let (liveness, liveness_events) = liveness::channel();
        let status = Arc::new(Status::default());
        let consensus_config = consensus_config(config);
        let opened = open_store(config, &consensus_config, &proposer)?;
        // Clients wait until this server has replayed as far as its log went, so that
        // a restarted server never answers from an older state than it acknowledged.
        let replay_to = raft::Storage::last_index(&opened.storage).unwrap_or(0);
        // Each part has one writer: the state machine writes `replicated` and completes
        // `waits`; the liveness task writes `health`'s serving flag; connection tasks
        // register in `conns` and propose through `writes`.
        let replicated = Arc::new(Replicated::new());
        let waits = Arc::new(WaitRegistry::new(settings.server_id));
        let conns = Arc::new(ConnRegistry::default());
        let metrics = Arc::new(Metrics::default());
        let health = Arc::new(Health::new(status.clone(), settings.standalone, replay_to));
        let writes = Arc::new(Writes::new(
            settings.server_id,
            proposer.clone(),
            waits.clone(),
            settings.global_outstanding_limit,
        ));
        let shutdown = CancellationToken::new();
        let applied = opened.snapshot.as_ref().map_or(0, |s| s.metadata.index);
        let raft_state = opened.raft_state;
        let voter = consensus_config.voters.len() > 1
            && consensus_config.voters.contains(&config.server_id);
        if voter && raft_state != RaftStateOnDisk::Intact {
            report_raft_state(config, raft_state);
            // Durable before the server takes part in anything (see `recovery`).
            opened.storage.rejoining();
        }
        consensus_config.has_state.store(
            raft_state != RaftStateOnDisk::Blank,
            std::sync::atomic::Ordering::Release,
        );
        if let Some(snapshot) = opened.snapshot {
            // A large state takes a while to restore: say what is going on meanwhile.
            tracing::info!(
                "restoring the state from {} ({} bytes)",
                snapshot.path.display(),
                snapshot.payload.len()
            );
            let image = Image::read_from(snapshot.payload).map_err(|e| {
                anyhow::anyhow!("snapshot {} is unreadable: {e}", snapshot.path.display())
            })?;
            tracing::info!(
                "restored {} znodes and {} sessions from {} (zxid {:#x})",
                image.tree.node_count(),
                image.sessions.len(),
                snapshot.path.display(),
                image.last_zxid
            );
            install(&replicated, &liveness, image);
        }
        let storage = opened.storage;
        let inbox = SnapshotInbox::default();
        let transport = match &config.ensemble {
            None => None,
            Some(ensemble) => Some(
                start_transport(
                    config,
                    ensemble,
                    &liveness,
                    &shutdown,
                    proposer.clone(),
                    consensus_config.has_state.clone(),
                    inbox.clone(),
                )
                .await?,
            ),
        };
        let consensus = Consensus::start(
            ConsensusConfig {
                applied,
                raft_state,
                ..consensus_config
            },
            proposals,
            proposer,
            storage.clone(),
            status,
            transport.clone(),
            StateMachine::new(
                state_machine::Parts {
                    replicated: replicated.clone(),
                    conns: conns.clone(),
                    waits,
                    liveness: liveness.clone(),
                    metrics: metrics.clone(),
                },
                &settings,
                inbox,
            ),
        )?;

        let liveness_task = LivenessTask {
            tick_time: settings.tick,
            standalone: settings.standalone,
            health: health.clone(),
            conns: conns.clone(),
            replicated: replicated.clone(),
            writes: writes.clone(),
            transport: transport.clone(),
            shutdown: shutdown.clone(),
        };
        let housekeeping = Housekeeping {
            tick_time: settings.tick,
            health: health.clone(),
            replicated: replicated.clone(),
            writes: writes.clone(),
            shutdown: shutdown.clone(),
        };
        let server = Arc::new(Server {
            settings,
            replicated,
            writes,
            conns,
            health,
            metrics,
            log_stats: storage.log_stats().clone(),
            shutdown: shutdown.clone(),
            started,
        });
        // Said before the client listeners accept, so that a server answering clients
        // has said all it says at start-up (tests and operators wait on the answer).
        let mut tasks = admin.serve(server.clone());
        let mut serving = Vec::new();
        for (listener, security) in &listeners {
            let addr = listener.local_addr()?;
            serving.push(match security {
                Security::Plain => format!("{addr}"),
                Security::Tls(_) => format!("{addr} (TLS)"),
                Security::Unified(_) => format!("{addr} (plain and TLS)"),
            });
        }
        tracing::info!(
            "paddock {} serving clients on {}",
            env!("CARGO_PKG_VERSION"),
            serving.join(", ")
        );
        for (listener, security) in listeners {
            tasks.push(tokio::spawn(crate::listener::run(
                listener,
                server.clone(),
                security,
            )));
        }
        tasks.extend([
            tokio::spawn(liveness::run(liveness_task, liveness_events)),
            tokio::spawn(housekeeping.run()),
            tokio::spawn(autopurge(shutdown, storage, config.autopurge)),
        ]);
        Ok(Daemon {
            server,
            local_addr,
            consensus,
            tasks,
        })
    }

    /// Stops accepting, closes connections, and waits for the tasks and raft thread.
    pub async fn shutdown(self) {
        self.server.shutdown.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
        tokio::task::spawn_blocking(move || self.consensus.join())
            .await
            .ok();
    }
}

/// The client ports, bound, each with how its connections are secured. TLS files are
/// read here, so a missing or bad one stops the server at start-up.
async fn client_listeners(config: &Config) -> anyhow::Result<Vec<(TcpListener, Security)>> {
    let tls = match &config.client_tls {
        None => None,
        Some(tls) => Some(ClientTls {
            acceptor: crate::tls::client_acceptor(tls)
                .map_err(|e| anyhow::anyhow!("client TLS: {e}"))?,
            super_user: tls.super_user.as_deref().map(Arc::from),
        }),
    };
    let plain = config.client_addr.map(|addr| {
        let security = match (&tls, config.port_unification) {
            (Some(tls), true) => Security::Unified(tls.clone()),
            _ => Security::Plain,
        };
        (addr, security)
    });
    let secure = config
        .secure_client_addr
        .zip(tls.clone())
        .map(|(addr, tls)| (addr, Security::Tls(tls)));
    let mut listeners = Vec::new();
    for (addr, security) in plain.into_iter().chain(secure) {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        listeners.push((listener, security));
    }
    Ok(listeners)
}

/// How far a server has replayed its own log (readable after shutdown too).
#[derive(Clone)]
pub struct Replay(Arc<Health>);

impl Replay {
    /// The last log index applied.
    pub fn applied(&self) -> u64 {
        self.0.status.applied()
    }

    /// The last log index this server had at start-up.
    pub fn target(&self) -> u64 {
        self.0.replay_to
    }
}

impl Daemon {
    pub fn replay(&self) -> Replay {
        Replay(self.server.health.clone())
    }
}

/// Says at start-up what this server found of its raft state, and what it will do.
fn report_raft_state(config: &Config, state: RaftStateOnDisk) {
    let (data, log) = (config.data_dir.display(), config.data_log_dir.display());
    match state {
        RaftStateOnDisk::Intact => {}
        RaftStateOnDisk::Blank => tracing::info!(
            "no raft state in {data} or {log}: a new server. It votes once a majority of the              ensemble is new too, or once it has caught up from a leader"
        ),
        RaftStateOnDisk::LostHardState { log_last } => tracing::warn!(
            "{data} has no raft state (term and vote) but the log in {log} goes to index              {log_last}: dataDir was lost. Rejoining without a vote until caught up from the              leader"
        ),
        RaftStateOnDisk::Rejoining => tracing::warn!(
            "this server had lost its raft state and had not caught up when it stopped: \
             rejoining without a vote until caught up from the leader"
        ),
        RaftStateOnDisk::LostLog { commit, log_last } => tracing::warn!(
            "the raft state in {data} records commits up to index {commit} but the log in              {log} ends at {log_last}: dataLogDir was lost. Rejoining without a vote until              caught up from the leader"
        ),
    }
}

/// Raft timing from tickTime: a raft tick is a tenth of it, so an election timeout
/// (10–20 raft ticks) is one to two tickTimes and heartbeats go every 0.3 tickTime.
fn consensus_config(config: &Config) -> ConsensusConfig {
    let (voters, learners) = match &config.ensemble {
        None => (vec![config.server_id], Vec::new()),
        Some(ensemble) => (
            ensemble.participants().map(|s| s.id).collect(),
            ensemble.observers().map(|s| s.id).collect(),
        ),
    };
    ConsensusConfig {
        id: config.server_id,
        voters,
        learners,
        tick: config.tick_time / 10,
        applied: 0,
        snap_count: u64::from(config.snap_count),
        raft_state: RaftStateOnDisk::Intact,
        has_state: Arc::new(std::sync::atomic::AtomicBool::new(false)),
    }
}

/// Opens (or creates) the txn log in dataLogDir and snapshots and raft state in dataDir.
fn open_store(
    config: &Config,
    consensus: &ConsensusConfig,
    proposer: &Proposer,
) -> anyhow::Result<Opened> {
    let mut log = LogConfig::new(&config.data_log_dir);
    log.pre_alloc_size = config.pre_alloc_size;
    log.max_batch_entries = u64::from(config.group_commit_max_entries);
    log.force_sync = config.force_sync;
    if !config.force_sync {
        tracing::warn!("forceSync=no: the txn log is not fsynced; a crash can lose writes");
    }
    let opened = DurableStorage::open(
        StoreConfig {
            data_dir: config.data_dir.clone(),
            log,
            node_id: config.server_id,
            initial_conf_state: ConfState::from((
                consensus.voters.clone(),
                consensus.learners.clone(),
            )),
            purge_after_snapshot: config
                .autopurge
                .interval
                .map(|_| config.autopurge.snap_retain_count as usize),
        },
        proposer.persisted_hook(),
    )
    .map_err(|e| match e {
        // Already names the directory and the fix.
        StoreError::Dir(e) => anyhow::anyhow!("{e}"),
        e => anyhow::anyhow!("cannot open the data in {}: {e}", config.data_dir.display()),
    })?;
    for rejected in &opened.rejected_snapshots {
        tracing::error!("skipped a corrupt snapshot: {rejected}");
    }
    Ok(opened)
}

/// `autopurge`: every purgeInterval, keep the newest snapRetainCount snapshots and the
/// log they need; delete the rest.
async fn autopurge(shutdown: CancellationToken, storage: DurableStorage, autopurge: Autopurge) {
    let Some(interval) = autopurge.interval else {
        return;
    };
    let retain = autopurge.snap_retain_count as usize;
    let mut ticker = tokio::time::interval(interval);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.cancelled() => return,
        }
        let storage = storage.clone();
        let purged = tokio::task::spawn_blocking(move || storage.purge(retain)).await;
        match purged {
            Ok(Ok(())) => tracing::info!("autopurge kept the newest {retain} snapshots"),
            Ok(Err(e)) => tracing::warn!("autopurge failed: {e}"),
            Err(e) => tracing::warn!("autopurge task failed: {e}"),
        }
    }
}

/// Connects this server to its peers (each `server.N`'s first port).
async fn start_transport(
    config: &Config,
    ensemble: &Ensemble,
    liveness: &Liveness,
    shutdown: &CancellationToken,
    proposer: Proposer,
    has_state: Arc<std::sync::atomic::AtomicBool>,
    inbox: SnapshotInbox,
) -> anyhow::Result<Transport> {
    let mut peers = HashMap::new();
    for server in ensemble.servers.values() {
        let addr = resolve(&server.host, server.peer_port).await?;
        peers.insert(server.id, addr);
    }
    let me = peers
        .get(&config.server_id)
        .copied()
        .ok_or_else(|| anyhow::anyhow!("server.{} is missing", config.server_id))?;
    let listen = if ensemble.quorum_listen_on_all_ips {
        SocketAddr::new([0, 0, 0, 0].into(), me.port())
    } else {
        me
    };
    let liveness = liveness.clone();
    let snapshots = SnapshotDir::open(&config.data_dir)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", config.data_dir.display()))?;
    let tls = match &config.quorum_tls {
        None => None,
        Some(tls) => {
            let hosts = ensemble
                .servers
                .values()
                .map(|server| (server.id, server.host.clone()))
                .collect();
            Some(crate::tls::peer_tls(tls, &hosts).map_err(|e| anyhow::anyhow!("peer TLS: {e}"))?)
        }
    };
    let me = Identity {
        id: config.server_id,
        has_state,
        tls,
    };
    // The raft thread reads plain-TCP message links itself once they are open.
    let handover: Handover = {
        let proposer = proposer.clone();
        Arc::new(move |peer| proposer.adopt_peer(peer))
    };
    let transport = Transport::start(
        me,
        listen,
        peers,
        LinkTiming::from_tick_time(config.tick_time),
        snapshots,
        move |event| match event {
            PeerEvent::Raft(message) => proposer.step(message),
            PeerEvent::Hello { from, has_state } => proposer.hello(from, has_state),
            PeerEvent::Report { from, report } => {
                liveness.send(LivenessEvent::Report { from, report })
            }
            PeerEvent::Ack { from, seq, commit } => {
                liveness.send(LivenessEvent::Ack { from, seq, commit })
            }
            PeerEvent::SnapshotSent { to, ok } => proposer.report_snapshot(to, ok),
            PeerEvent::Snapshot {
                message,
                snapshot,
                prepared,
            } => {
                // Decoded here, off the raft thread; raft installs it with a swap.
                let (inbox, proposer) = (inbox.clone(), proposer.clone());
                tokio::task::spawn_blocking(move || {
                    let ok = inbox.prepare(&snapshot);
                    if ok {
                        proposer.step(message);
                    }
                    let _ = prepared.send(ok);
                });
            }
        },
        Some(handover),
        shutdown.clone(),
    )
    .await
    .map_err(|e| anyhow::anyhow!("cannot listen for peers on {listen}: {e}"))?;
    tracing::info!(
        "server {} replicating with peers from {listen}",
        config.server_id
    );
    Ok(transport)
}

async fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| anyhow::anyhow!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{host} has no address"))
}

/// Ticks after which a write not yet applied counts as lost (its connection closes):
/// long enough that a slow fsync or a busy leader is not mistaken for a loss. A proposal
/// raft refuses (no leader) fails at once, and a server out of touch with its quorum
/// closes its connections anyway; this catches a proposal dropped on its way to the
/// leader, which raft-rs does not resend.
const LOST_PROPOSAL_TICKS: u32 = 10;

/// Once a tick: fail the writes whose proposal was lost, and (on the leader) remove
/// empty containers and expired TTL nodes (ZooKeeper's ContainerManager checks once a
/// minute by default; a check here is a scan of the containers index alone, so Paddock
/// checks every tick).
/// What the housekeeping task works with.
struct Housekeeping {
    tick_time: std::time::Duration,
    health: Arc<Health>,
    replicated: Arc<Replicated>,
    writes: Arc<Writes>,
    shutdown: CancellationToken,
}

impl Housekeeping {
    async fn run(self) {
        let mut ticker = tokio::time::interval(self.tick_time);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Reaps in flight, by when they were proposed: re-proposed only if still due ten
        // ticks later (the proposal was lost to a leader change).
        let mut reaping: HashMap<String, Instant> = HashMap::new();
        let retry_after = self.tick_time * 10;
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = self.shutdown.cancelled() => return,
            }
            self.writes
                .expire_lost(self.tick_time * LOST_PROPOSAL_TICKS);
            if !self.health.is_leader() {
                reaping.clear();
                continue;
            }
            let due = self
                .replicated
                .db
                .read()
                .tree
                .expired_containers_and_ttls(now_millis(), 0);
            let now = Instant::now();
            reaping.retain(|path, _| due.contains(path));
            for path in due {
                let stale = reaping
                    .get(&path)
                    .is_none_or(|proposed| now.duration_since(*proposed) >= retry_after);
                if stale {
                    reaping.insert(path.clone(), now);
                    self.writes
                        .propose_internal(0, 0, TxnKind::DeleteContainer { path });
                }
            }
        }
    }
}

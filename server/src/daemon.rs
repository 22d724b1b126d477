//! Starts a server from its config: the raft thread, the state machine, the client
//! listener and the leader's housekeeping; runs until shutdown.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::consensus::{self, Consensus, ConsensusConfig};
use crate::server::{now_millis, Settings, Shared};
use crate::state_machine::StateMachine;
use crate::txn::TxnKind;

pub fn settings(config: &Config) -> Settings {
    Settings {
        server_id: config.server_id,
        standalone: config.is_standalone(),
        client_addr: config.client_addr,
        tick: config.tick_time,
        min_session_timeout: config.min_session_timeout,
        max_session_timeout: config.max_session_timeout,
        max_client_cnxns: config.max_client_cnxns.map_or(0, |n| n.get() as usize),
        global_outstanding_limit: config.global_outstanding_limit as usize,
        max_frame: config.jute_max_buffer as usize + 1024,
        extended_types: config.extended_types_enabled,
        super_digest: config
            .super_digest
            .as_ref()
            .map(|d| format!("{}:{}", d.user, d.digest)),
        four_letter_words: config.four_letter_words.clone(),
    }
}

/// A running server.
pub struct Daemon {
    pub shared: Arc<Shared>,
    pub local_addr: std::net::SocketAddr,
    consensus: Consensus,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Daemon {
    pub async fn start(config: &Config) -> anyhow::Result<Daemon> {
        let settings = settings(config);
        let listener = TcpListener::bind(settings.client_addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", settings.client_addr))?;
        let local_addr = listener.local_addr()?;
        let (proposer, proposals) = consensus::channel();
        let is_leader = Arc::new(AtomicBool::new(false));
        let consensus_config = ConsensusConfig {
            id: settings.server_id,
            voters: vec![settings.server_id],
            // Ten ticks to an election: a tenth of tickTime keeps failover within a
            // couple of ZooKeeper ticks.
            tick: settings.tick / 10,
        };
        let shared = Arc::new(Shared::new(settings, proposer, is_leader.clone()));
        let consensus = Consensus::start(
            consensus_config,
            proposals,
            is_leader,
            StateMachine::new(shared.clone()),
        )?;
        let tasks = vec![
            tokio::spawn(crate::listener::run(listener, shared.clone())),
            tokio::spawn(leader_duties(shared.clone())),
        ];
        tracing::info!(
            "paddock {} serving clients on {local_addr}",
            env!("CARGO_PKG_VERSION")
        );
        Ok(Daemon {
            shared,
            local_addr,
            consensus,
            tasks,
        })
    }

    /// Stops accepting, closes connections, and waits for the tasks and raft thread.
    pub async fn shutdown(self) {
        self.shared.shutdown.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
        tokio::task::spawn_blocking(move || self.consensus.join())
            .await
            .ok();
    }
}

/// The leader's housekeeping, once a tick: expire silent sessions, remove empty
/// containers and expired TTL nodes (ZooKeeper's ContainerManager checks once a minute
/// by default; a check here is a scan of the containers index alone, so Paddock checks
/// every tick). Every server runs this loop; only the leader acts.
async fn leader_duties(shared: Arc<Shared>) {
    let mut ticker = tokio::time::interval(shared.settings.tick);
    let mut was_leader = false;
    // Reaps in flight, by when they were proposed: re-proposed only if still due ten
    // ticks later (the proposal was lost to a leader change).
    let mut reaping: HashMap<String, Instant> = HashMap::new();
    let retry_after = shared.settings.tick * 10;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shared.shutdown.cancelled() => return,
        }
        let leader = shared.is_leader();
        if leader && !was_leader {
            // Nobody knows when clients were last heard from: a full timeout for all.
            shared.expiry.lock().reset_all(Instant::now());
        }
        was_leader = leader;
        if !leader {
            continue;
        }
        let expired = shared.expiry.lock().take_expired(Instant::now());
        for session in expired {
            tracing::info!("expiring session {session:#x}");
            shared.propose_internal(session, TxnKind::ExpireSession);
        }
        let due = shared
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
                shared.propose_internal(0, TxnKind::DeleteContainer { path });
            }
        }
    }
}

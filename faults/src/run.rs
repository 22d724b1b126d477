//! One run: start the cluster, start the workloads, drive the nemesis for some cycles,
//! stop, collect the final state, and check everything.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use paddock_client::{Client, ConnectOptions};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, Timing};
use crate::convergence;
use crate::error::Error;
use crate::history::{micros, ms, Clock, Micros, Violation};
use crate::nemesis::{self, NemesisKind};
use crate::net::SERVERS;
use crate::report::{Cycle, Report};
use crate::rng::Rng;
use crate::sessions::{self, CutOff, Sessions};
use crate::workload::{
    cache::Caches, ensure, ephemeral::Ephemerals, listing, lock::Locks, order::Order, probe::Probe,
    register::Register, unique::Unique, watch::Watches, Checked, Ctx,
};

/// The workloads a run can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// CAS registers, linearizability.
    Register,
    /// Unique and sequential creates.
    Unique,
    /// Pipelined creates per session.
    Order,
    /// The lock recipe.
    Lock,
    /// Ephemerals and sessions.
    Ephemeral,
    /// One-shot watches.
    Watch,
    /// Tree caches.
    Cache,
}

impl WorkloadKind {
    /// Every workload.
    pub const ALL: [WorkloadKind; 7] = [
        WorkloadKind::Register,
        WorkloadKind::Unique,
        WorkloadKind::Order,
        WorkloadKind::Lock,
        WorkloadKind::Ephemeral,
        WorkloadKind::Watch,
        WorkloadKind::Cache,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Register => "register",
            WorkloadKind::Unique => "unique",
            WorkloadKind::Order => "order",
            WorkloadKind::Lock => "lock",
            WorkloadKind::Ephemeral => "ephemeral",
            WorkloadKind::Watch => "watch",
            WorkloadKind::Cache => "cache",
        }
    }

    /// The workload called `name`.
    pub fn parse(name: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Each cycle's fault is drawn from these.
    pub nemeses: Vec<NemesisKind>,
    /// The workloads, all running at once on separate nodes.
    pub workloads: Vec<WorkloadKind>,
    /// Fault/heal cycles.
    pub cycles: usize,
    /// Everything random follows from it.
    pub seed: u64,
    /// How long a fault lasts, ms (drawn uniformly from the range). Longer than a
    /// session timeout, so that sessions on a cut-off server do expire.
    pub fault_ms: (u64, u64),
    /// How long the cluster stays healed after it converged, ms.
    pub heal_ms: (u64, u64),
    /// The clients' session timeout.
    pub session_timeout: Duration,
    /// The servers' timing.
    pub timing: Timing,
    /// The longest wait for the servers to converge after a heal.
    pub converge_limit: Duration,
    /// How soon after a heal the servers must have caught up: ten ticks, time for a
    /// peer link to be re-established and an election to finish, not for TCP's
    /// retransmission backoff to run its course.
    pub recovery_limit: Duration,
    /// Where to copy the servers' logs when a run finds violations.
    pub keep_logs: Option<PathBuf>,
}

impl Options {
    /// The short version run by `cargo test`: two cycles of `nemesis`, every workload.
    pub fn short(nemesis: NemesisKind, seed: u64) -> Options {
        Options {
            nemeses: vec![nemesis],
            workloads: WorkloadKind::ALL.to_vec(),
            cycles: 2,
            seed,
            fault_ms: (5_500, 7_000),
            heal_ms: (1_500, 2_500),
            session_timeout: Duration::from_secs(4),
            timing: Timing::default(),
            converge_limit: Duration::from_secs(20),
            recovery_limit: Duration::from_secs(5),
            keep_logs: Some(
                std::env::temp_dir().join(format!("paddock-faults-{seed}-{}", nemesis.name())),
            ),
        }
    }

    fn has(&self, workload: WorkloadKind) -> bool {
        self.workloads.contains(&workload)
    }
}

/// The workloads' shared state, for checking at the end.
#[derive(Default)]
struct Workloads {
    register: Register,
    unique: Unique,
    order: Order,
    locks: Locks,
    ephemerals: Ephemerals,
    watches: Watches,
    caches: Caches,
    probe: Probe,
}

/// Runs `options` against a fresh cluster and checks the result.
pub async fn run(options: &Options) -> Result<Report, Error> {
    let mut cluster = Cluster::start(options.timing).await?;
    let topology = cluster.topology();
    let clock = Clock::start();
    let sessions = Sessions::new(clock, topology.clone(), options.session_timeout);
    let ctx = Ctx {
        clock,
        topology: topology.clone(),
        sessions: sessions.clone(),
        stop: CancellationToken::new(),
    };
    let all: Vec<String> = (0..SERVERS).map(|i| topology.pinned(i)).collect();
    let mut admin = Admin {
        connect: all.join(","),
        timeout: options.session_timeout,
        client: None,
    };
    let w = Workloads::default();
    for path in [
        "/uniq",
        "/order",
        "/lock",
        "/eph",
        "/probe/s0",
        "/probe/s1",
        "/probe/s2",
    ] {
        admin
            .retry(|c| async move { ensure(&c, path).await })
            .await?;
    }
    admin
        .retry(|c| async move { Watches::prepare(&c).await })
        .await?;
    admin
        .retry(|c| async move { Caches::prepare(&c).await })
        .await?;
    let register = w.register.clone();
    admin
        .retry(|c| {
            let register = register.clone();
            async move { register.prepare_epoch(&c, 1).await }
        })
        .await?;

    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    // The caches run on until the cluster is quiet, then record their mirrors.
    let caches_quiet = CancellationToken::new();
    let mut cache_handles: Vec<JoinHandle<()>> = Vec::new();
    let final_wait = options.session_timeout + Duration::from_secs(4);
    for server in 0..SERVERS {
        let seed = options.seed;
        handles.push(w.probe.spawn(ctx.clone(), server, seed));
        for kind in &options.workloads {
            let c = ctx.clone();
            match kind {
                WorkloadKind::Register => handles.push(w.register.spawn(c, server, seed)),
                WorkloadKind::Unique => handles.push(w.unique.spawn(c, server, seed)),
                WorkloadKind::Order => handles.push(w.order.spawn(c, server, seed)),
                WorkloadKind::Lock => {
                    for lock in 0..crate::workload::lock::LOCKS {
                        handles.push(w.locks.spawn(c.clone(), server, lock, seed));
                    }
                }
                WorkloadKind::Ephemeral => handles.push(w.ephemerals.spawn(c, server, seed)),
                WorkloadKind::Watch => {
                    handles.push(w.watches.spawn_writer(c.clone(), server, seed));
                    handles.push(w.watches.spawn_watcher(c, server, seed, final_wait));
                }
                WorkloadKind::Cache => {
                    handles.push(w.caches.spawn_writer(c.clone(), server, seed));
                    cache_handles.push(w.caches.spawn_cache(c, server, caches_quiet.clone()));
                }
            }
        }
    }

    let mut rng = Rng::new(options.seed);
    let mut cycles = Vec::new();
    let mut violations: Vec<Violation> = Vec::new();
    // Let every worker connect and the locks be taken before the first fault.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for cycle in 0..options.cycles {
        let kind = options.nemeses[rng.index(options.nemeses.len())];
        let fault = nemesis::inject(kind, &mut cluster, &topology, &mut rng).await?;
        let start = clock.now();
        let hold = rng.millis(options.fault_ms.0, options.fault_ms.1);
        println!(
            "cycle {}: {} at {:.0} ms for {} ms: {}",
            cycle + 1,
            kind.name(),
            ms(start),
            hold.as_millis(),
            fault.description
        );
        tokio::time::sleep(hold).await;
        nemesis::heal(&fault, &mut cluster).await?;
        let end = clock.now();
        let converged = convergence::wait(&topology, &clock, options.converge_limit, false).await;
        println!(
            "cycle {}: healed at {:.0} ms, converged {}",
            cycle + 1,
            ms(end),
            converged
                .took
                .map_or("never".to_owned(), |t| format!("after {:.0} ms", ms(t)))
        );
        violations.extend(converged.violations.iter().cloned());
        if let Some(took) = converged
            .took
            .filter(|t| *t > micros(options.recovery_limit))
        {
            violations.push(Violation {
                check: "heal-recovery",
                at: end,
                detail: format!(
                    "after healing ({}) the servers took {:.0} ms to catch up (> {:.0} ms)",
                    fault.description,
                    ms(took),
                    ms(micros(options.recovery_limit))
                ),
            });
        }
        cycles.push(Cycle {
            kind,
            fault,
            start,
            end,
            converged: converged.took,
        });
        // Fresh registers for the next cycle; failure only means fewer of them.
        let epoch = u64::try_from(cycle).unwrap_or(0) + 2;
        let register = w.register.clone();
        let _ = admin
            .retry(|c| {
                let register = register.clone();
                async move { register.prepare_epoch(&c, epoch).await }
            })
            .await;
        tokio::time::sleep(rng.millis(options.heal_ms.0, options.heal_ms.1)).await;
    }

    // Stop: workloads finish their current operation; watchers wait for a last write.
    let settle = convergence::wait(&topology, &clock, options.converge_limit, false).await;
    violations.extend(settle.violations);
    ctx.stop.cancel();
    tokio::time::sleep(Duration::from_millis(500)).await;
    if options.has(WorkloadKind::Watch) {
        let last = admin
            .retry(|c| async move {
                c.set_data(crate::workload::watch::NODE, b"last", None)
                    .await
                    .map(drop)
            })
            .await;
        if let Err(err) = last {
            println!("the last write for the watchers failed: {err}");
        }
    }
    let join_limit = final_wait + options.session_timeout * 2 + Duration::from_secs(5);
    let aborts: Vec<_> = handles.iter().map(JoinHandle::abort_handle).collect();
    if tokio::time::timeout(join_limit, futures::future::join_all(handles))
        .await
        .is_err()
    {
        println!("some workers did not stop within {join_limit:?}; aborted");
        aborts.iter().for_each(tokio::task::AbortHandle::abort);
    }
    let quiet = convergence::wait(&topology, &clock, options.converge_limit, true).await;
    violations.extend(quiet.violations);
    caches_quiet.cancel();
    let cache_limit = options.session_timeout * 6 + Duration::from_secs(10);
    let cache_aborts: Vec<_> = cache_handles.iter().map(JoinHandle::abort_handle).collect();
    if tokio::time::timeout(cache_limit, futures::future::join_all(cache_handles))
        .await
        .is_err()
    {
        println!("some caches did not stop within {cache_limit:?}; aborted");
        cache_aborts
            .iter()
            .for_each(tokio::task::AbortHandle::abort);
    }
    // Every owner's session has ended by now; give the quorum a session timeout (and a
    // tick) to expire those it could not close.
    tokio::time::sleep(options.session_timeout + options.timing.tick * 2).await;

    let mut checks: Vec<Checked> = Vec::new();
    for kind in &options.workloads {
        let checked = match kind {
            WorkloadKind::Register => w.register.check(),
            WorkloadKind::Unique => {
                let nodes = admin
                    .retry(|c| async move { listing(&c, "/uniq").await })
                    .await?;
                w.unique.check(&nodes)
            }
            WorkloadKind::Order => {
                let mut executed = HashMap::new();
                for parent in w.order.parents() {
                    let children = admin
                        .retry(|c| {
                            let parent = parent.clone();
                            async move {
                                c.sync(&parent).await?;
                                c.get_children(&parent).await
                            }
                        })
                        .await?;
                    executed.insert(parent, children);
                }
                w.order.check(&executed)
            }
            WorkloadKind::Lock => w.locks.check(),
            WorkloadKind::Ephemeral => {
                let left = admin
                    .retry(|c| async move {
                        c.sync("/eph").await?;
                        c.get_children("/eph").await
                    })
                    .await?;
                w.ephemerals.check(&left)
            }
            WorkloadKind::Watch => w.watches.check(),
            WorkloadKind::Cache => {
                let mut finals = std::collections::BTreeMap::new();
                for server in 0..SERVERS {
                    let path = crate::workload::cache::node(server);
                    let data = admin
                        .retry(|c| {
                            let path = path.clone();
                            async move {
                                c.sync(&path).await?;
                                c.get_data(&path).await.map(|(data, _)| data)
                            }
                        })
                        .await?;
                    let value = std::str::from_utf8(&data)
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(-1);
                    finals.insert(path, value);
                }
                w.caches.check(&finals)
            }
        };
        checks.push(checked);
    }
    if let Some(client) = admin.client.take() {
        let _ = client.close().await;
    }

    let cut_off = |c: &Cycle| {
        c.fault.cut_off.map(|server| CutOff {
            server,
            start: c.start,
            end: c.end,
        })
    };
    let cut_offs: Vec<CutOff> = cycles.iter().filter_map(cut_off).collect();
    let bound = options.session_timeout + options.timing.tick;
    let (told, told_violations) = sessions::time_to_tell(&sessions.changes(), &cut_offs, bound);
    violations.extend(told_violations);
    let leader_cuts: Vec<CutOff> = cycles
        .iter()
        .filter(|c| {
            c.fault.leader_cut && matches!(c.kind, NemesisKind::Isolate | NemesisKind::Split)
        })
        .filter_map(cut_off)
        .collect();
    let stalls: Vec<Micros> = w.probe.stalls(&leader_cuts);
    for checked in &checks {
        violations.extend(checked.violations.iter().cloned());
    }
    violations.sort_by_key(|v| v.at);

    let report = Report {
        seed: options.seed,
        instance: cluster.net().instance(),
        cycles,
        checks,
        probe: w.probe.tally(),
        stalls,
        told,
        told_bound: micros(bound),
        violations,
    };
    if !report.violations.is_empty() {
        if let Some(dir) = &options.keep_logs {
            if cluster.keep_logs(dir).is_ok() {
                println!("server logs kept in {}", dir.display());
            }
        }
    }
    Ok(report)
}

/// The harness's own client, on every server: for setup and the final listings, not
/// part of any history. Each call is retried (on a new session if need be) a few times.
struct Admin {
    connect: String,
    timeout: Duration,
    client: Option<Client>,
}

impl Admin {
    async fn client(&mut self) -> Result<Client, paddock_client::Error> {
        if let Some(client) = &self.client {
            if !client.state().is_terminal() {
                return Ok(client.clone());
            }
        }
        let options = ConnectOptions {
            session_timeout: self.timeout,
            connect_timeout: Some(self.timeout * 2),
            ..ConnectOptions::default()
        };
        let client = Client::connect(&self.connect, options).await?;
        self.client = Some(client.clone());
        Ok(client)
    }

    /// Runs `op` until it succeeds, at most 5 times, each bounded by two session
    /// timeouts; the last error if none did.
    async fn retry<T, F, Fut>(&mut self, op: F) -> Result<T, paddock_client::Error>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T, paddock_client::Error>>,
    {
        let mut last = paddock_client::Error::Timeout;
        for _ in 0..5 {
            match self.client().await {
                Ok(client) => match tokio::time::timeout(self.timeout * 2, op(client)).await {
                    Ok(Ok(value)) => return Ok(value),
                    Ok(Err(err)) => last = err,
                    Err(_) => last = paddock_client::Error::Timeout,
                },
                Err(err) => last = err,
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(last)
    }
}

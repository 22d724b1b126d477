//! One run: connect, claim this process's node, wait for the start, load, report,
//! stop, clean up.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use paddock_client::{Client, ConnectOptions, Error};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::histlog::{self, End, LogWriter};
use crate::plan::{Plan, Scenario, StopAt};
use crate::report::{Row, RunInfo, Summary};
use crate::resources::{self, Sample, Sampler, Source};
use crate::scenario::{self, Ctx};
use crate::series::Series;
use crate::stats::{Interval, Op, Stats};

/// Connections opened at once while setting up.
const CONNECT_CONCURRENCY: usize = 64;
/// How often the stop conditions are checked.
const POLL: Duration = Duration::from_millis(20);

/// What a run (or a merge of runs) produced.
pub struct Outcome {
    pub summary: Summary,
    pub rows: Vec<Row>,
    /// Every sample, per operation: the plot's distributions.
    pub totals: Interval,
}

/// Runs `plan` until its duration or request count, or until `interrupt` resolves;
/// `live` sees each interval's row as it is made.
pub async fn run(
    plan: Plan,
    interrupt: impl Future<Output = ()>,
    live: impl FnMut(&Row),
) -> anyhow::Result<Outcome> {
    plan.validate()?;
    let plan = Arc::new(plan);
    let options = ConnectOptions::with_session_timeout(
        Duration::try_from_secs_f64(plan.session_timeout).unwrap_or(Duration::from_secs(30)),
    );
    // A wrong address or a server that is down: say so now, not after the timeout.
    let first = ConnectOptions {
        fail_fast_when_refused: true,
        ..options.clone()
    };
    let admin = Client::connect(&plan.servers, first)
        .await
        .with_context(|| format!("cannot connect to {}", plan.servers))?;
    admin
        .ensure_path(&plan.root)
        .await
        .with_context(|| format!("cannot create {}", plan.root))?;
    let base = plan.base();
    claim(&admin, &base).await?;
    let outcome = drive(&plan, &base, &options, interrupt, live).await;
    // This process's nodes go whatever happened; the root only once no process uses it.
    match admin.delete_all(&base).await {
        Ok(()) | Err(Error::Keeper(paddock_wire::ErrorCode::NoNode)) => {}
        Err(e) => tracing::warn!("could not clean {base} up: {e}"),
    }
    match admin.delete(&plan.root, None).await {
        Ok(())
        | Err(Error::Keeper(paddock_wire::ErrorCode::NotEmpty | paddock_wire::ErrorCode::NoNode)) =>
            {}
        Err(e) => tracing::warn!("could not remove {}: {e}", plan.root),
    }
    let _ = admin.close().await;
    outcome
}

/// Creates this process's parent node; one that exists means another process with the
/// same --client-id runs (or one died before cleaning up).
async fn claim(admin: &Client, base: &str) -> anyhow::Result<()> {
    match admin
        .create(base, b"", paddock_wire::CreateMode::Persistent)
        .await
    {
        Ok(_) => Ok(()),
        Err(Error::Keeper(paddock_wire::ErrorCode::NodeExists)) => anyhow::bail!(
            "{base} exists: another paddock-loadgen with this --client-id is running, or one \
             was killed before cleaning up (then remove it: paddock-cli -c \"deleteall {base}\")"
        ),
        Err(e) => Err(e).with_context(|| format!("cannot create {base}")),
    }
}

async fn drive(
    plan: &Arc<Plan>,
    base: &str,
    options: &ConnectOptions,
    interrupt: impl Future<Output = ()>,
    mut live: impl FnMut(&Row),
) -> anyhow::Result<Outcome> {
    let info = RunInfo::from_plan(plan);
    let clients = connect_all(plan, options).await?;
    tokio::pin!(interrupt);
    let mut interrupted = false;
    if let Some(at) = plan.start_at {
        let wait = until_unix(at, clients.len())?;
        tokio::select! {
            () = &mut interrupt => interrupted = true,
            () = tokio::time::sleep(wait) => {}
        }
    }
    let stats = Arc::new(Stats::default());
    let stop = CancellationToken::new();
    let load_start = Instant::now();
    let ctx = Ctx {
        plan: plan.clone(),
        stats: stats.clone(),
        stop: stop.clone(),
        base: base.into(),
        load_start,
    };
    let mut workers = if interrupted {
        JoinSet::new()
    } else {
        spawn_workers(&ctx, clients.clone())
    };
    if !interrupted {
        tokio::select! {
            () = &mut interrupt => interrupted = true,
            () = tokio::time::sleep_until((load_start + plan.warmup()).into()) => {}
        }
    }

    let mut series = Series::new(plan.scenario, plan.get_after_notify, plan.data_size);
    let mut measured = 0.0;
    let mut samples = Vec::new();
    let mut log = None;
    if !interrupted {
        stats.reset();
        let since = Instant::now();
        let wall = SystemTime::now();
        if let Some(path) = &plan.hist_log {
            log = Some(LogWriter::create(path, &info, wall)?);
        }
        let sampling = spawn_sampler(plan, stop.child_token());
        let take = |stats: &Stats, start: &mut f64| {
            let now = histlog::whole_ms(since.elapsed().as_secs_f64());
            let interval = stats.take(*start, now - *start);
            *start = now;
            interval
        };
        let every = plan.interval();
        let mut start = 0.0;
        let mut next_row = since + every;
        let counted = plan.scenario.counted_ops();
        loop {
            let wake = next_row.min(Instant::now() + POLL);
            tokio::select! {
                () = &mut interrupt => {
                    interrupted = true;
                    break;
                }
                () = tokio::time::sleep_until(wake.into()) => {}
            }
            // The end first: its interval is taken below, after closing, so the last
            // row is never an empty sliver next to a tick.
            let done = match plan.stop_at() {
                StopAt::Elapsed(limit) => since.elapsed() >= limit,
                StopAt::Requests(n) => stats.done(counted) >= n,
            };
            if done {
                break;
            }
            if Instant::now() >= next_row {
                let interval = take(&stats, &mut start);
                emit(&interval, &mut log, &mut series, &mut live)?;
                while next_row <= Instant::now() {
                    next_row += every;
                }
            }
        }
        // From here on nothing is counted, so the last row and the summary agree.
        stats.close();
        measured = histlog::whole_ms(since.elapsed().as_secs_f64());
        let last = take(&stats, &mut start);
        if series.rows().is_empty() || !is_empty(&last) {
            emit(&last, &mut log, &mut series, &mut live)?;
        }
        if let Some((token, handle)) = sampling {
            token.cancel();
            samples = handle.await.unwrap_or_default();
        }
    }
    stop.cancel();
    // Workers finish the request in hand; pub/sub subscribers may wait out an event.
    let grace = Duration::try_from_secs_f64(plan.event_timeout).unwrap_or_default()
        + Duration::from_secs(5);
    let deadline = tokio::time::sleep(grace);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            next = workers.join_next() => if next.is_none() { break },
            _ = &mut deadline => {
                tracing::warn!("workers still busy after {grace:?}; abandoning them");
                workers.abort_all();
                break;
            }
        }
    }
    for client in clients {
        let _ = client.close().await;
    }
    let summary = Summary::new(
        &info,
        &series,
        measured,
        interrupted,
        resources::summarize(&samples),
    );
    if let Some(log) = log {
        log.end(&End {
            seconds: measured,
            interrupted,
            samples,
        })?;
    }
    let totals = series.totals().clone();
    Ok(Outcome {
        summary,
        rows: series.into_rows(),
        totals,
    })
}

/// Logs an interval, adds it to the series and shows its row.
fn emit(
    interval: &Interval,
    log: &mut Option<LogWriter>,
    series: &mut Series,
    live: &mut impl FnMut(&Row),
) -> anyhow::Result<()> {
    if let Some(log) = log {
        log.interval(interval)?;
    }
    live(series.push(interval));
    Ok(())
}

fn is_empty(interval: &Interval) -> bool {
    Op::ALL
        .iter()
        .all(|&op| interval.hist(op).is_empty() && interval.failures(op) == 0)
}

/// How long until `at` (Unix seconds); an error if it has passed.
fn until_unix(at: f64, connections: usize) -> anyhow::Result<Duration> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .context("the clock is before 1970")?
        .as_secs_f64();
    if at < now {
        anyhow::bail!(
            "--start-at {at:.3} passed {:.1} s ago, before the {connections} connections \
             were open: give the processes more lead time",
            now - at
        );
    }
    Ok(Duration::from_secs_f64(at - now))
}

/// The servers' resources, sampled every interval until `token` is cancelled.
fn spawn_sampler(
    plan: &Plan,
    token: CancellationToken,
) -> Option<(CancellationToken, tokio::task::JoinHandle<Vec<Sample>>)> {
    let source = if plan.no_server_stats {
        return None;
    } else if plan.server_pids.is_empty() {
        // The connect string's servers, without a chroot.
        let hosts = plan.servers.split('/').next().unwrap_or_default();
        Source::Mntr(
            hosts
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    } else {
        Source::Proc(plan.server_pids.clone())
    };
    let every = plan.interval();
    let stopped = token.clone();
    let handle = tokio::spawn(async move {
        let mut sampler = Sampler::new(source);
        let mut samples = Vec::new();
        let start = Instant::now();
        loop {
            samples.extend(sampler.sample(start.elapsed().as_secs_f64()).await);
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = stopped.cancelled() => return samples,
            }
        }
    });
    Some((token, handle))
}

/// Opens every connection, spread evenly over the servers of the connect string.
async fn connect_all(plan: &Arc<Plan>, options: &ConnectOptions) -> anyhow::Result<Vec<Client>> {
    let servers: Vec<String> = plan
        .servers
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let gate = Arc::new(Semaphore::new(CONNECT_CONCURRENCY));
    let mut pending = JoinSet::new();
    for i in 0..plan.total_connections() {
        let server = servers[i % servers.len()].clone();
        let options = options.clone();
        let gate = gate.clone();
        pending.spawn(async move {
            let _permit = gate.acquire_owned().await;
            (i, Client::connect(&server, options).await)
        });
    }
    let mut clients: Vec<Option<Client>> = vec![None; plan.total_connections()];
    while let Some(joined) = pending.join_next().await {
        let (i, client) = joined.context("connect task failed")?;
        clients[i] = Some(client.with_context(|| format!("connection {i} failed"))?);
    }
    Ok(clients.into_iter().flatten().collect())
}

fn spawn_workers(ctx: &Ctx, clients: Vec<Client>) -> JoinSet<()> {
    let mut workers = JoinSet::new();
    let plan = &ctx.plan;
    match plan.scenario {
        Scenario::CreateDelete => {
            for (i, client) in clients.into_iter().enumerate() {
                workers.spawn(scenario::create_delete::worker(ctx.clone(), client, i));
            }
        }
        Scenario::SetData => {
            for (i, client) in clients.into_iter().enumerate() {
                workers.spawn(scenario::set_data::worker(ctx.clone(), client, i));
            }
        }
        Scenario::Pubsub => {
            // Publishers first, then each group's subscribers.
            let (publishers, subscribers) = clients.split_at(plan.conns);
            for (g, publisher) in publishers.iter().enumerate() {
                let group = scenario::pubsub::Group::new(ctx, g);
                let subs = &subscribers[g * plan.subs_per_path..(g + 1) * plan.subs_per_path];
                for sub in subs {
                    workers.spawn(scenario::pubsub::subscriber(
                        ctx.clone(),
                        sub.clone(),
                        group.clone(),
                    ));
                }
                workers.spawn(scenario::pubsub::publisher(
                    ctx.clone(),
                    publisher.clone(),
                    group,
                ));
            }
        }
    }
    workers
}

//! One run: connect, load, report, stop, clean up.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use paddock_client::{Client, ConnectOptions, Error};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::plan::{Plan, Scenario, StopAt};
use crate::report::{Row, Summary};
use crate::scenario::{self, Ctx};
use crate::stats::Stats;

/// Connections opened at once while setting up.
const CONNECT_CONCURRENCY: usize = 64;
/// How often the stop conditions are checked.
const POLL: Duration = Duration::from_millis(20);

/// What a run produced.
pub struct Outcome {
    pub summary: Summary,
    pub rows: Vec<Row>,
}

/// Runs `plan` until its duration or request count, or until `interrupt` resolves;
/// `live` sees each interval's row as it is made.
pub async fn run(
    plan: Plan,
    interrupt: impl Future<Output = ()>,
    mut live: impl FnMut(&Row),
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
    ensure_path(&admin, &plan.root).await?;

    let clients = connect_all(&plan, &options).await?;
    let stats = Arc::new(Stats::default());
    let stop = CancellationToken::new();
    let ctx = Ctx {
        plan: plan.clone(),
        stats: stats.clone(),
        stop: stop.clone(),
    };
    let mut workers = spawn_workers(&ctx, clients.clone());

    let warmup = plan.warmup();
    let started = Instant::now();
    tokio::pin!(interrupt);
    let mut interrupted = false;
    let mut measuring_since = None;
    let mut rows = Vec::new();
    let mut last_row = Instant::now();
    loop {
        tokio::select! {
            _ = &mut interrupt => {
                interrupted = true;
                break;
            }
            _ = tokio::time::sleep(POLL) => {}
        }
        let Some(since) = measuring_since else {
            if started.elapsed() >= warmup {
                stats.reset();
                measuring_since = Some(Instant::now());
                last_row = Instant::now();
            }
            continue;
        };
        if last_row.elapsed() >= plan.interval() {
            let row = Row::take(&stats, &plan, since.elapsed(), last_row.elapsed());
            last_row = Instant::now();
            live(&row);
            rows.push(row);
        }
        let done = match plan.stop_at() {
            StopAt::Elapsed(limit) => since.elapsed() >= limit,
            StopAt::Requests(n) => {
                stats.requests.total_count() + stats.requests.total_failures() >= n
            }
        };
        if done {
            break;
        }
    }
    // From here on nothing is counted, so the last row and the summary agree.
    stats.requests.close();
    let measured = measuring_since.map_or(Duration::ZERO, |since| since.elapsed());
    if let Some(since) = measuring_since {
        // The last, partial interval, if anything happened in it.
        let counted = (
            stats.requests.total_count(),
            stats.requests.total_failures(),
        );
        if rows
            .last()
            .is_none_or(|row: &Row| (row.total_req, row.fail_total) != counted)
        {
            let row = Row::take(&stats, &plan, since.elapsed(), last_row.elapsed());
            live(&row);
            rows.push(row);
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
    let summary = Summary::new(&plan, &stats, measured, interrupted);
    for client in clients {
        let _ = client.close().await;
    }
    if let Err(e) = delete_tree(&admin, &plan.root).await {
        tracing::warn!("could not clean {} up: {e}", plan.root);
    }
    let _ = admin.close().await;
    Ok(Outcome { summary, rows })
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

/// Creates `path` and any missing parents.
async fn ensure_path(client: &Client, path: &str) -> anyhow::Result<()> {
    let mut prefix = String::new();
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        prefix.push('/');
        prefix.push_str(segment);
        scenario::ensure(client, &prefix, b"")
            .await
            .with_context(|| format!("cannot create {prefix}"))?;
    }
    Ok(())
}

/// Deletes `path` and everything below it.
async fn delete_tree(client: &Client, path: &str) -> Result<(), Error> {
    let mut stack = vec![(path.to_owned(), false)];
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            match client.delete(&node, None).await {
                Ok(()) | Err(Error::Keeper(paddock_wire::ErrorCode::NoNode)) => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        let children = match client.get_children(&node).await {
            Ok(children) => children,
            Err(Error::Keeper(paddock_wire::ErrorCode::NoNode)) => continue,
            Err(e) => return Err(e),
        };
        stack.push((node.clone(), true));
        for child in children {
            stack.push((format!("{node}/{child}"), false));
        }
    }
    Ok(())
}

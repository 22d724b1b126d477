//! Tree caches: a cache never misses, repeats or reorders a change, across partitions,
//! pauses, crashes and the reconnects they cause.
//!
//! Writers (one per server) set their own node `/cache/sN` to 1, 2, 3, ... one write at
//! a time, so each node's values grow in commit order. A `TreeCache` of `/cache` runs
//! on a session pinned to each server; it records every event it emits. A session that
//! ends starts a new session and a new cache (a new process). Checks, per cache:
//! - each node's reported values strictly grow, with its `mzxid` (a repeated, stale or
//!   reordered event fails this), and every reported value was written;
//! - no node is reported deleted (nothing deletes them);
//! - a cache whose session lived to the end holds, once the run is quiet, each node's
//!   final value (read after a `sync`): it missed no change that mattered to its
//!   mirror.

use std::collections::BTreeMap;

use paddock_client::cache::{CacheEvent, TreeCache};
use paddock_client::{Client, CreateMode, Error as ClientError, ErrorCode};
use tokio::task::JoinHandle;

use super::{ensure, worker_rng, Checked, Ctx};
use crate::history::{History, Micros, Op, Outcome, Violation};
use crate::net::SERVERS;

/// The cached subtree.
pub const ROOT: &str = "/cache";

/// Writer `server`'s node.
pub fn node(server: usize) -> String {
    format!("{ROOT}/s{server}")
}

/// What one cache (one session) reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// Each Created or Changed event: (when, path, value, mzxid); a value that is not a
    /// number is recorded as -1.
    pub events: Vec<(Micros, String, i64, i64)>,
    /// Deleted events: (when, path).
    pub deleted: Vec<(Micros, String)>,
    /// The mirror when the run was quiet (path → value), if the session lived to the
    /// end and the cache still ran.
    pub at_end: Option<BTreeMap<String, i64>>,
    /// Why the cache stopped early, if it did.
    pub ended: Option<String>,
}

/// The workload.
#[derive(Clone, Default)]
pub struct Caches {
    seen: History<Seen, ()>,
    writes: History<(usize, i64), ()>,
}

/// The cache's writer nodes and their values.
fn mirror_of(cache: &TreeCache) -> BTreeMap<String, i64> {
    cache
        .snapshot()
        .into_iter()
        .filter(|(path, _)| path != ROOT)
        .map(|(path, node)| (path, value_of(&node.data)))
        .collect()
}

/// Every writer node's value, read on `client` after a `sync`; `None` if that fails.
async fn read_nodes(ctx: &Ctx, client: &Client) -> Option<BTreeMap<String, i64>> {
    ctx.bounded(client.sync(ROOT)).await.ok()?;
    let mut values = BTreeMap::new();
    for server in 0..SERVERS {
        let (data, _) = ctx.bounded(client.get_data(&node(server))).await.ok()?;
        values.insert(node(server), value_of(&data));
    }
    Some(values)
}

fn value_of(data: &[u8]) -> i64 {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1)
}

impl Caches {
    /// Makes the root and every writer's node (at 0).
    pub async fn prepare(client: &Client) -> Result<(), ClientError> {
        ensure(client, ROOT).await?;
        for server in 0..SERVERS {
            match client
                .create(&node(server), b"0", CreateMode::Persistent)
                .await
            {
                Ok(_) | Err(ClientError::Keeper(ErrorCode::NodeExists)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// The writer pinned to `server`: its node's values 1, 2, 3, ...
    pub fn spawn_writer(&self, ctx: Ctx, server: usize, seed: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut rng = worker_rng(seed, 8, server);
            let path = node(server);
            let mut n = 0i64;
            while let Some((process, client)) = ctx.session(server).await {
                while !ctx.stop.is_cancelled() && !client.state().is_terminal() {
                    n += 1;
                    let invoke = ctx.clock.now();
                    let result = ctx
                        .bounded(client.set_data(&path, n.to_string().as_bytes(), None))
                        .await;
                    this.writes.push(Op {
                        process,
                        invoke,
                        complete: ctx.clock.now(),
                        input: (server, n),
                        outcome: result.map_or_else(
                            |e| crate::history::outcome_of_error(&e),
                            |_| Outcome::Ok(()),
                        ),
                    });
                    ctx.pause(rng.millis(20, 80)).await;
                }
                if ctx.stop.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// The cache pinned to `server`. When `quiet` is cancelled (the runner does so once
    /// the writers are done and the servers agree), it reads the nodes itself (after a
    /// `sync`), lets its mirror catch up with them for a bounded time, and records it.
    pub fn spawn_cache(
        &self,
        ctx: Ctx,
        server: usize,
        quiet: tokio_util::sync::CancellationToken,
    ) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            while let Some((process, client)) = ctx.session(server).await {
                let invoke = ctx.clock.now();
                let mut seen = Seen::default();
                match TreeCache::start(&client, ROOT) {
                    Ok((cache, mut events)) => {
                        // Once quiet: the values to catch up with, and until when.
                        let mut settling: Option<(BTreeMap<String, i64>, tokio::time::Instant)> =
                            None;
                        loop {
                            if let Some((target, until)) = &settling {
                                let mirror = mirror_of(&cache);
                                let caught_up =
                                    target.iter().all(|(p, v)| mirror.get(p) == Some(v));
                                if caught_up || tokio::time::Instant::now() >= *until {
                                    seen.at_end = Some(mirror);
                                    break;
                                }
                            }
                            tokio::select! {
                                event = events.next_event() => match event {
                                    Some(Ok(CacheEvent::Created { path, node }))
                                    | Some(Ok(CacheEvent::Changed { path, new: node, .. })) => {
                                        seen.events.push((
                                            ctx.clock.now(),
                                            path,
                                            value_of(&node.data),
                                            node.stat.mzxid,
                                        ));
                                    }
                                    Some(Ok(CacheEvent::Deleted { path, .. })) => {
                                        seen.deleted.push((ctx.clock.now(), path));
                                    }
                                    Some(Ok(CacheEvent::Initialized)) => {}
                                    Some(Err(err)) => {
                                        seen.ended = Some(err.to_string());
                                        break;
                                    }
                                    None => {
                                        seen.ended = Some("the event stream ended".into());
                                        break;
                                    }
                                },
                                () = quiet.cancelled(), if settling.is_none() => {
                                    match read_nodes(&ctx, &client).await {
                                        Some(target) => {
                                            let until = tokio::time::Instant::now()
                                                + ctx.op_limit() * 2;
                                            settling = Some((target, until));
                                        }
                                        // The session is gone or cut off: not a cache
                                        // that lived to the end.
                                        None => break,
                                    }
                                }
                                () = tokio::time::sleep(std::time::Duration::from_millis(50)),
                                    if settling.is_some() => {}
                            }
                        }
                    }
                    Err(err) => seen.ended = Some(err.to_string()),
                }
                this.seen.push(Op {
                    process,
                    invoke,
                    complete: ctx.clock.now(),
                    input: seen,
                    outcome: Outcome::Ok(()),
                });
                let _ = client.close().await;
                if quiet.is_cancelled() {
                    break;
                }
            }
        })
    }

    /// Checks the caches against the final values (path → value, read after a sync).
    pub fn check(&self, finals: &BTreeMap<String, i64>) -> Checked {
        let writes = self.writes.snapshot();
        let mut checked = check(&self.seen.snapshot(), &writes, finals);
        checked.count(&writes);
        checked
    }
}

/// The checker.
pub fn check(
    caches: &[Op<Seen, ()>],
    writes: &[Op<(usize, i64), ()>],
    finals: &BTreeMap<String, i64>,
) -> Checked {
    let mut checked = Checked::new("caches", caches);
    // The largest value each writer attempted (any of 1..=it may have been applied).
    let mut attempted: BTreeMap<String, i64> = BTreeMap::new();
    for op in writes {
        let (server, n) = op.input;
        let top = attempted.entry(node(server)).or_insert(0);
        *top = (*top).max(n);
    }
    let mut events = 0;
    for op in caches {
        let seen = &op.input;
        let mut flag = |check: &'static str, at: Micros, detail: String| {
            checked.violations.push(Violation {
                check,
                at,
                detail: format!("p{} cache: {detail}", op.process),
            });
        };
        let mut last: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for (at, path, value, mzxid) in &seen.events {
            events += 1;
            if path == ROOT {
                continue;
            }
            let top = attempted.get(path).copied().unwrap_or(0);
            if *value < 0 || *value > top {
                flag(
                    "cache-unwritten",
                    *at,
                    format!("{path} reported {value}, never written (writes went to {top})"),
                );
            }
            if let Some((before, before_mzxid)) = last.get(path.as_str()) {
                if value <= before || mzxid <= before_mzxid {
                    flag(
                        "cache-order",
                        *at,
                        format!(
                            "{path} reported {value} (mzxid {mzxid:#x}) after {before} (mzxid \
                             {before_mzxid:#x}): repeated or out of order"
                        ),
                    );
                }
            }
            last.insert(path, (*value, *mzxid));
        }
        for (at, path) in &seen.deleted {
            flag(
                "cache-deleted",
                *at,
                format!("{path} reported deleted; nothing deletes it"),
            );
        }
        if let Some(mirror) = &seen.at_end {
            for (path, value) in finals {
                let held = mirror.get(path).copied();
                if held != Some(*value) {
                    flag(
                        "cache-missed",
                        op.complete,
                        format!(
                            "at the end the cache held {path} = {held:?}, the server {value}: \
                             a change was missed"
                        ),
                    );
                }
            }
        }
    }
    checked.notes.push(format!(
        "{} caches, {events} events, {} still running at the end",
        caches.len(),
        caches.iter().filter(|op| op.input.at_end.is_some()).count()
    ));
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(events: &[(&str, i64, i64)], at_end: Option<&[(&str, i64)]>) -> Op<Seen, ()> {
        Op {
            process: 1,
            invoke: 0,
            complete: 10,
            input: Seen {
                events: events
                    .iter()
                    .map(|(p, v, z)| (0, (*p).to_owned(), *v, *z))
                    .collect(),
                deleted: Vec::new(),
                at_end: at_end.map(|m| m.iter().map(|(p, v)| ((*p).to_owned(), *v)).collect()),
                ended: None,
            },
            outcome: Outcome::Ok(()),
        }
    }

    fn writes(top: i64) -> Vec<Op<(usize, i64), ()>> {
        (1..=top)
            .map(|n| Op {
                process: 2,
                invoke: 0,
                complete: 1,
                input: (0, n),
                outcome: Outcome::Ok(()),
            })
            .collect()
    }

    fn finals(value: i64) -> BTreeMap<String, i64> {
        BTreeMap::from([("/cache/s0".to_owned(), value)])
    }

    #[test]
    fn a_cache_that_saw_every_state_in_order_passes() {
        let c = cache(
            &[
                ("/cache/s0", 0, 1),
                ("/cache/s0", 2, 5),
                ("/cache/s0", 3, 9),
            ],
            Some(&[("/cache/s0", 3)]),
        );
        assert!(check(&[c], &writes(3), &finals(3)).violations.is_empty());
    }

    #[test]
    fn a_repeated_event_fails() {
        let c = cache(&[("/cache/s0", 2, 5), ("/cache/s0", 2, 5)], None);
        let checked = check(&[c], &writes(3), &finals(3));
        assert_eq!(checked.violations[0].check, "cache-order");
    }

    #[test]
    fn an_older_state_after_a_newer_one_fails() {
        let c = cache(&[("/cache/s0", 3, 9), ("/cache/s0", 2, 5)], None);
        let checked = check(&[c], &writes(3), &finals(3));
        assert_eq!(checked.violations[0].check, "cache-order");
    }

    #[test]
    fn a_missed_last_change_fails() {
        let c = cache(&[("/cache/s0", 2, 5)], Some(&[("/cache/s0", 2)]));
        let checked = check(&[c], &writes(3), &finals(3));
        assert_eq!(checked.violations[0].check, "cache-missed");
    }

    #[test]
    fn a_value_never_written_fails() {
        let c = cache(&[("/cache/s0", 7, 5)], None);
        let checked = check(&[c], &writes(3), &finals(3));
        assert_eq!(checked.violations[0].check, "cache-unwritten");
    }
}

//! A tree cache while the server it is connected to is killed (SIGKILL), or cut off
//! (SIGSTOP: it answers neither its clients nor its peers, until SIGCONT brings it back
//! behind the others), in the middle of a stream of writes, on a three-server ensemble
//! on loopback (Paddock's or Apache ZooKeeper's, as the test binary's target says). The writer works through the two
//! other servers and records every value it writes; the cache's events are then checked
//! against that history: each is a state the writer made (its data, and its `mzxid`
//! where the writer learnt it), each moves its node forward, none is repeated
//! ([`Replay`]), and once the writer is done the mirror equals the server's subtree.

use std::collections::HashMap;
use std::time::Duration;

use paddock_client::cache::{CacheEvent, TreeCache};
use paddock_client::{Client, CreateMode, Error, ErrorCode};

use crate::cache::Replay;
use crate::support::{options, start_ensemble, unique, within};

/// Writes by the writer; the kill comes after a third of them.
const WRITES: usize = 240;
/// Nodes the writer works on, each with at most one child.
const KEYS: u64 = 6;

/// What the writer wrote: each value (unique) → its node and, if the reply came, the
/// `mzxid` it got.
type History = HashMap<String, (String, Option<i64>)>;

/// A small deterministic generator (xorshift), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One random write on `root`'s keys: create a missing node, or set, add or remove a
/// child, or delete a present one (its child first). Outcomes the writer cannot know (a
/// lost connection) are fine: the next write looks at the node again.
async fn write_once(client: &Client, root: &str, rng: &mut Rng, n: usize, history: &mut History) {
    let key = format!("{root}/k{}", rng.below(KEYS));
    let child = format!("{key}/c");
    let value = format!("w{n}");
    let roll = rng.below(4);
    let present = matches!(client.exists(&key).await, Ok(Some(_)));
    let result: Result<(), Error> = async {
        if !present {
            history.insert(value.clone(), (key.clone(), None));
            let (_, stat) = client
                .create2(&key, value.as_bytes(), CreateMode::Persistent)
                .await?;
            history.insert(value.clone(), (key.clone(), Some(stat.mzxid)));
            return Ok(());
        }
        match roll {
            0 | 1 => {
                history.insert(value.clone(), (key.clone(), None));
                let stat = client.set_data(&key, value.as_bytes(), None).await?;
                history.insert(value.clone(), (key.clone(), Some(stat.mzxid)));
            }
            2 => {
                if client.exists(&child).await?.is_some() {
                    client.delete(&child, None).await?;
                } else {
                    history.insert(value.clone(), (child.clone(), None));
                    let (_, stat) = client
                        .create2(&child, value.as_bytes(), CreateMode::Persistent)
                        .await?;
                    history.insert(value.clone(), (child.clone(), Some(stat.mzxid)));
                }
            }
            _ => client.delete_all(&key).await?,
        }
        Ok(())
    }
    .await;
    match result {
        Ok(())
        | Err(Error::ConnectionLoss)
        | Err(Error::Keeper(ErrorCode::NoNode | ErrorCode::NodeExists | ErrorCode::NotEmpty)) => {}
        Err(Error::MultiFailed { .. }) => {}
        Err(err) => panic!("writer: {err}"),
    }
}

/// What happens to the cache's server a third of the way through the writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// SIGKILL: gone for good.
    Kill,
    /// SIGSTOP until the cache has moved to another server, then SIGCONT: the server
    /// comes back behind the others, with the cache's old connection on it.
    Pause,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_misses_nothing_when_its_server_is_killed_mid_stream() {
    misses_nothing_when_its_server_fails(false, Fault::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_tree_cache_misses_nothing_when_its_server_is_killed_mid_stream() {
    misses_nothing_when_its_server_fails(true, Fault::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_misses_nothing_when_its_server_is_cut_off_mid_stream() {
    misses_nothing_when_its_server_fails(false, Fault::Pause).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_tree_cache_misses_nothing_when_its_server_is_cut_off_mid_stream() {
    misses_nothing_when_its_server_fails(true, Fault::Pause).await;
}

// A test body, run by four tests (per watch mode and fault).
#[allow(clippy::unwrap_used)]
async fn misses_nothing_when_its_server_fails(one_shot: bool, fault: Fault) {
    crate::support::init_tracing();
    within(Duration::from_secs(240), async {
        let servers = tokio::task::spawn_blocking(|| start_ensemble(3))
            .await
            .unwrap();
        let hosts: Vec<String> = servers.iter().map(|s| s.addr.clone()).collect();
        let cache_client = Client::connect(&hosts.join(","), options(10_000))
            .await
            .unwrap();
        let victim = cache_client.server_addr().unwrap().to_string();
        let victim = hosts.iter().position(|h| *h == victim).unwrap();
        let others: Vec<&str> = hosts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != victim)
            .map(|(_, h)| h.as_str())
            .collect();
        let writer = Client::connect(&others.join(","), options(10_000))
            .await
            .unwrap();
        let root = unique("cache-kill");
        writer.ensure_path(&root).await.unwrap();
        for k in 0..KEYS {
            writer
                .create(&format!("{root}/k{k}"), b"start", CreateMode::Persistent)
                .await
                .unwrap();
        }
        let (cache, mut events) = TreeCache::builder(&cache_client, &root)
            .one_shot_watches(one_shot)
            .start()
            .expect("start the cache");

        // The consumer: applies every event, checking the rules, until the writer's
        // last node appears.
        let done = format!("{root}/done");
        let consumer = tokio::spawn({
            let done = done.clone();
            async move {
                let mut replay = Replay::default();
                replay
                    .take_until(
                        &mut events,
                        |e| matches!(e, CacheEvent::Created { path, .. } if *path == done),
                    )
                    .await;
                (replay, events)
            }
        });
        cache.initialized().await.unwrap();

        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut history = History::new();
        for k in 0..KEYS {
            history.insert("start".to_owned(), (format!("{root}/k{k}"), None));
        }
        let mut servers = servers;
        let mut paused = None;
        for n in 0..WRITES {
            if n == WRITES / 3 {
                let server = servers.remove(victim);
                match fault {
                    Fault::Kill => tokio::task::spawn_blocking(move || {
                        server.kill9();
                        drop(server);
                    })
                    .await
                    .unwrap(),
                    Fault::Pause => {
                        server.signal("STOP");
                        paused = Some(server);
                    }
                }
            }
            write_once(&writer, &root, &mut rng, n, &mut history).await;
        }
        if let Some(server) = paused.take() {
            // Back once the cache has given up on it and moved (its session lives on
            // another server): its old connection, if the server still holds it, must
            // not feed the cache anything stale.
            within(Duration::from_secs(60), async {
                while cache_client
                    .server_addr()
                    .is_none_or(|addr| addr.to_string() == hosts[victim])
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .await;
            server.signal("CONT");
            servers.push(server);
        }
        writer
            .create(&done, b"done", CreateMode::Persistent)
            .await
            .unwrap();
        let (mut replay, mut events) = within(Duration::from_secs(60), consumer).await.unwrap();
        replay.converge(&mut events, &writer, &root).await;
        assert_ne!(
            cache_client.server_addr().unwrap().to_string(),
            hosts[victim],
            "the cache's client should have moved to another server"
        );

        // Every event is of a state the writer made; some of states made before the
        // fault and some of states made after it (one-shot watches and a resync may
        // coalesce many writes into one event, so no count is promised).
        let mut reported = 0;
        let (mut before_fault, mut after_fault) = (false, false);
        for event in &replay.events {
            let (path, node) = match event {
                CacheEvent::Created { path, node } => (path, node),
                CacheEvent::Changed { path, new, .. } => (path, new),
                _ => continue,
            };
            reported += 1;
            let data = String::from_utf8_lossy(&node.data).into_owned();
            if *path == root || *path == done || path.contains("/probe-") {
                continue;
            }
            let (written_to, mzxid) = history
                .get(&data)
                .unwrap_or_else(|| panic!("{path} = {data:?}: never written"));
            if data != "start" {
                assert_eq!(written_to, path, "{data} reported on the wrong node");
                let n: usize = data[1..].parse().expect("the writer writes w<n>");
                before_fault |= n < WRITES / 3;
                after_fault |= n >= WRITES / 3;
            }
            if let Some(mzxid) = mzxid {
                assert_eq!(*mzxid, node.stat.mzxid, "{path} = {data}: wrong mzxid");
            }
        }
        assert!(
            before_fault && after_fault,
            "the stream did not go on across the fault ({reported} events: of writes \
             before it: {before_fault}, after it: {after_fault})"
        );
        eprintln!(
            "cache_kill (one-shot: {one_shot}, {fault:?}): failed {}, cache moved to {}, {} events ({reported} created or changed)",
            hosts[victim],
            cache_client.server_addr().unwrap(),
            replay.events.len()
        );
        // The mirror is the events applied, and the server's subtree.
        assert_eq!(replay.nodes, cache.snapshot());
        drop(cache);
        tokio::task::spawn_blocking(move || drop(servers))
            .await
            .unwrap();
    })
    .await;
}

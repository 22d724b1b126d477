//! Membership recipes: kazoo's `Party`/`ShallowParty`, Curator's `LeaderLatch` and
//! `PersistentNode`, and Curator's `MultiLock`.

use std::time::Duration;

use paddock_client::recipes::{
    LatchState, LeaderLatch, Lock, MultiLock, NodeState, Party, PersistentNode, SetPartitioner,
    ShallowParty, TtlNode,
};
use paddock_client::{Client, CreateMode, Error, EventType, SessionState};

use crate::support::{connect, connect_with, options, server, unique, wait_for_state, within};

const LIMIT: Duration = Duration::from_secs(60);

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test]
async fn party_members_come_and_go() {
    within(LIMIT, async {
        let path = unique("party");
        let (a, b) = (connect().await, connect().await);
        let pa = Party::new(&a, &path, "alpha");
        let pb = Party::new(&b, &path, "beta");
        assert!(pa.is_empty().await.unwrap());
        pa.join().await.unwrap();
        pa.join().await.unwrap();
        pb.join().await.unwrap();
        assert_eq!(sorted(pa.members().await.unwrap()), ["alpha", "beta"]);
        pa.leave().await.unwrap();
        assert_eq!(pb.members().await.unwrap(), ["beta"]);
        // A member whose session ends leaves with it.
        b.close().await.unwrap();
        assert_eq!(pa.len().await.unwrap(), 0);

        let shallow = unique("shallow-party");
        let sa = ShallowParty::new(&a, &shallow, "host-1");
        let c = connect().await;
        let sc = ShallowParty::new(&c, &shallow, "host-2");
        sa.join().await.unwrap();
        sc.join().await.unwrap();
        assert_eq!(sorted(sa.members().await.unwrap()), ["host-1", "host-2"]);
        sc.leave().await.unwrap();
        assert_eq!(sa.members().await.unwrap(), ["host-1"]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_latch_leads_and_the_next_takes_over() {
    within(LIMIT, async {
        let path = unique("latch");
        let clients = [connect().await, connect().await, connect().await];
        let latches: Vec<LeaderLatch> = clients
            .iter()
            .enumerate()
            .map(|(i, c)| LeaderLatch::start(c, &path, &format!("p{i}")).unwrap())
            .collect();
        let leaders = |latches: &[LeaderLatch]| {
            latches
                .iter()
                .enumerate()
                .filter(|(_, l)| l.has_leadership())
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        // `start` joins in the background: wait until all three are listed, or the
        // first to lead may be counted before the others have joined.
        for attempt in 0.. {
            let joined = latches[0].participants().await.unwrap().len();
            if joined == 3 {
                break;
            }
            assert!(attempt < 200, "only {joined} of 3 latches joined");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut remaining = latches;
        for round in 0..3 {
            // Exactly one of the remaining latches ends up leading.
            let (led, leader, others) = within(
                Duration::from_secs(30),
                futures::future::select_all(
                    remaining.iter().map(|l| Box::pin(l.await_leadership())),
                ),
            )
            .await;
            drop(others);
            led.unwrap();
            assert_eq!(leaders(&remaining), [leader], "round {round}");
            let ids = remaining[0].participants().await.unwrap();
            assert_eq!(ids.len(), 3 - round);
            let closing = remaining.remove(leader);
            let id = ids[0].clone();
            closing.close().await.unwrap();
            let after = if remaining.is_empty() {
                Vec::new()
            } else {
                remaining[0].participants().await.unwrap()
            };
            assert!(!after.contains(&id), "{id} still listed after close");
        }
    })
    .await;
}

#[tokio::test]
async fn a_latch_is_not_leader_while_disconnected() {
    within(LIMIT, async {
        let path = unique("latch-disconnect");
        let client = connect().await;
        let latch = LeaderLatch::start(&client, &path, "solo").unwrap();
        latch.await_leadership().await.unwrap();
        let mut listener = latch.listener();
        listener.borrow_and_update();
        client.debug_drop_connection(Duration::from_millis(500));
        // As Curator: suspended means not leader, then leader again on the same node.
        within(
            Duration::from_secs(10),
            listener.wait_for(|s| matches!(s, LatchState::NotLeader)),
        )
        .await
        .unwrap();
        wait_for_state(&client, SessionState::Connected, Duration::from_secs(10)).await;
        within(Duration::from_secs(10), latch.await_leadership())
            .await
            .unwrap();
        assert_eq!(latch.participants().await.unwrap(), ["solo"]);
        latch.close().await.unwrap();
    })
    .await;
}

/// Waits (bounded) until `path` is created, by a watch.
async fn until_created(client: &Client, path: &str) {
    for _ in 0..100 {
        let (stat, created) = client.exists_w(path).await.expect("exists");
        if stat.is_some() {
            return;
        }
        let event = within(Duration::from_secs(20), created)
            .await
            .expect("watch");
        assert_eq!(event.event_type, EventType::NodeCreated);
    }
    panic!("{path} never created");
}

#[tokio::test]
async fn a_persistent_node_comes_back_after_deletion_and_session_loss() {
    within(LIMIT, async {
        let path = format!("{}/member", unique("persistent-node"));
        let observer = connect().await;
        let short = connect_with(options(2_000)).await;
        let node = PersistentNode::start(&short, &path, b"v1", CreateMode::Ephemeral).unwrap();
        assert_eq!(node.wait_created().await.unwrap(), path);
        let (_, stat) = observer.get_data(&path).await.unwrap();
        assert_eq!(stat.ephemeral_owner, short.session_id());

        // Deleted by somebody else: created again, with the newest data.
        node.set_data(&short, b"v2").await.unwrap();
        observer.delete(&path, None).await.unwrap();
        until_created(&observer, &path).await;
        assert_eq!(&observer.get_data(&path).await.unwrap().0[..], b"v2");

        // The session ends: the node goes with it; restarted on a new session, it is
        // back, owned by that session.
        short.debug_drop_connection(Duration::from_secs(3600));
        let mut states = node.state_watcher();
        within(
            Duration::from_secs(30),
            states.wait_for(|s| matches!(s, NodeState::Ended(Error::SessionExpired))),
        )
        .await
        .unwrap();
        let fresh = Client::connect(&server().await, options(10_000))
            .await
            .unwrap();
        node.restart(&fresh).unwrap();
        node.wait_created().await.unwrap();
        observer.sync(&path).await.unwrap();
        let (data, stat) = observer.get_data(&path).await.unwrap();
        assert_eq!(
            (&data[..], stat.ephemeral_owner),
            (&b"v2"[..], fresh.session_id())
        );

        node.close().await.unwrap();
        assert!(observer.exists(&path).await.unwrap().is_none());
    })
    .await;
}

#[tokio::test]
async fn a_sequential_persistent_node_is_protected_and_kept() {
    within(LIMIT, async {
        let parent = unique("persistent-seq");
        let client = connect().await;
        let node = PersistentNode::start(
            &client,
            &format!("{parent}/worker-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .unwrap();
        let first = node.wait_created().await.unwrap();
        let name = first.rsplit('/').next().unwrap();
        assert!(
            name.starts_with("_c_") && name.contains("-worker-"),
            "{name}"
        );
        client.delete(&first, None).await.unwrap();
        let mut states = node.state_watcher();
        let second = within(
            Duration::from_secs(20),
            states.wait_for(|s| matches!(s, NodeState::Created(p) if *p != first)),
        )
        .await
        .unwrap()
        .clone();
        let NodeState::Created(second) = second else {
            unreachable!()
        };
        assert_eq!(client.get_children(&parent).await.unwrap().len(), 1);
        assert!(client.exists(&second).await.unwrap().is_some());
        node.close().await.unwrap();
        assert!(client.get_children(&parent).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multilock_holds_all_or_nothing() {
    within(LIMIT, async {
        let base = unique("multilock");
        let (a, b) = (connect().await, connect().await);
        let (one, two) = (format!("{base}/one"), format!("{base}/two"));
        let both_a = MultiLock::new(vec![Lock::new(&a, &one), Lock::new(&a, &two)]);
        let both_b = MultiLock::new(vec![Lock::new(&b, &one), Lock::new(&b, &two)]);
        let held = both_a.acquire().await.unwrap();
        assert_eq!(held.fencing_tokens().len(), 2);
        // Someone holding only the second lock makes B's attempt fail, holding nothing.
        held.release().await.unwrap();
        let second = Lock::new(&a, &two).acquire().await.unwrap();
        let err = both_b
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout), "{err}");
        let first_free = Lock::new(&a, &one).try_acquire().await.unwrap();
        assert!(
            first_free.is_some(),
            "the failed multilock kept the first lock"
        );
        drop(first_free);
        second.release().await.unwrap();
        let held = within(Duration::from_secs(20), both_b.acquire())
            .await
            .unwrap();
        assert!(Lock::new(&a, &one).try_acquire().await.unwrap().is_none());
        held.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_ttl_node_lives_while_touched_and_goes_a_ttl_after_its_owner() {
    within(LIMIT, async {
        let path = format!("{}/worker", unique("ttl-node"));
        let observer = connect().await;
        let short = connect_with(options(2_000)).await;
        let ttl = Duration::from_secs(2);
        let node = TtlNode::start(&short, &path, b"busy", ttl).unwrap();
        assert_eq!(node.wait_created().await.unwrap(), path);
        // Well past its TTL, the touched node is still there.
        tokio::time::sleep(ttl * 2).await;
        observer.sync(&path).await.unwrap();
        assert_eq!(&observer.get_data(&path).await.unwrap().0[..], b"busy");
        assert!(observer
            .exists(&format!("{path}/touch"))
            .await
            .unwrap()
            .is_some());

        // The owner vanishes (its session expires without a close): the node goes.
        short.debug_drop_connection(Duration::from_secs(3600));
        let mut gone = false;
        for _ in 0..100 {
            let (stat, changed) = observer.exists_w(&path).await.unwrap();
            if stat.is_none() {
                gone = true;
                break;
            }
            within(Duration::from_secs(30), changed).await.unwrap();
        }
        assert!(gone, "the TTL node outlived its owner");
        drop(node);

        // Closed, it goes at once.
        let node = TtlNode::start(&observer, &path, b"", ttl).unwrap();
        node.wait_created().await.unwrap();
        node.close().await.unwrap();
        assert!(observer.exists(&path).await.unwrap().is_none());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_partitioner_divides_the_set_and_again_when_a_member_leaves() {
    within(Duration::from_secs(90), async {
        let path = unique("partitioner");
        let items: Vec<String> = (0..6).map(|i| format!("item-{i}")).collect();
        let mut clients = Vec::new();
        let mut members = Vec::new();
        for i in 0..3 {
            let client = connect().await;
            members.push(
                SetPartitioner::new(&client, &path, items.clone(), &format!("w{i}"))
                    .settle_time(Duration::from_millis(300)),
            );
            clients.push(client);
        }
        // Every member joins before any divides, so the first division is final.
        for member in &members {
            member.join().await.unwrap();
        }
        let acquired = within(
            Duration::from_secs(60),
            futures::future::try_join_all(members.iter().map(|m| m.acquire())),
        )
        .await
        .unwrap();
        let mut all: Vec<String> = Vec::new();
        for partition in &acquired {
            assert_eq!(partition.items().len(), 2, "{:?}", partition.items());
            all.extend(partition.items().iter().cloned());
        }
        all.sort();
        assert_eq!(all, items, "the shares overlap or miss an item");

        // w2 leaves: the others are told, give their shares back and divide again.
        let mut acquired = acquired;
        let leaving = acquired.pop().unwrap();
        leaving.release().await.unwrap();
        members[2].leave().await.unwrap();
        let mut again = Vec::new();
        for (member, partition) in members.iter().zip(acquired) {
            within(Duration::from_secs(20), partition.changed())
                .await
                .unwrap();
            partition.release().await.unwrap();
            again.push(member);
        }
        let acquired = within(
            Duration::from_secs(60),
            futures::future::try_join_all(again.iter().map(|m| m.acquire())),
        )
        .await
        .unwrap();
        let mut all: Vec<String> = Vec::new();
        for partition in &acquired {
            assert_eq!(partition.items().len(), 3, "{:?}", partition.items());
            all.extend(partition.items().iter().cloned());
        }
        all.sort();
        assert_eq!(all, items);
        for partition in acquired {
            partition.release().await.unwrap();
        }
    })
    .await;
}

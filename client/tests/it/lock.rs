//! The exclusive lock: mutual exclusion checked by an invariant (a holder count that must
//! go 0 → 1 → 0), no herd (a waiter wakes only when its predecessor goes), fencing tokens
//! that grow, release by session expiry, and cancellation that leaves no node behind.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use paddock_client::recipes::Lock;
use paddock_client::{CreateMode, Error, SessionState};

use crate::support::{connect, connect_with, options, unique, wait_for_state, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tasks_on_three_connections_never_overlap() {
    const TASKS: u32 = 20;
    const ROUNDS: u32 = 10;
    within(Duration::from_secs(60), async {
        let path = format!("{}/lock", unique("lock"));
        let mut clients = Vec::new();
        for _ in 0..3 {
            clients.push(connect().await);
        }
        let holders = Arc::new(AtomicU32::new(0));
        let grants = Arc::new(AtomicU32::new(0));
        let wakeups = Arc::new(AtomicU32::new(0));
        let last_token = Arc::new(Mutex::new(i64::MIN));
        let mut tasks = Vec::new();
        for task in 0..TASKS {
            let client = clients[task as usize % clients.len()].clone();
            let lock = Lock::new(&client, &path).identifier(&format!("task-{task}"));
            let (holders, grants, wakeups, last_token) = (
                holders.clone(),
                grants.clone(),
                wakeups.clone(),
                last_token.clone(),
            );
            tasks.push(tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    let guard = lock.acquire().await.unwrap();
                    // Invariant: nobody else holds it.
                    assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "overlap");
                    {
                        let mut last = last_token.lock().unwrap();
                        assert!(guard.fencing_token() > *last, "fencing token went back");
                        *last = guard.fencing_token();
                    }
                    tokio::task::yield_now().await;
                    grants.fetch_add(1, Ordering::SeqCst);
                    wakeups.fetch_add(guard.wakeups(), Ordering::SeqCst);
                    assert_eq!(holders.fetch_sub(1, Ordering::SeqCst), 1, "overlap");
                    guard.release().await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let grants = grants.load(Ordering::SeqCst);
        assert_eq!(grants, TASKS * ROUNDS);
        // Each release deletes one node, which at most one waiter (its successor)
        // watches: a herd would wake every waiter on every release.
        let wakeups = wakeups.load(Ordering::SeqCst);
        assert!(wakeups <= grants, "{wakeups} wakeups for {grants} releases");
        // Everybody cleaned up.
        assert!(clients[0].get_children(&path).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_dead_holder_releases_the_lock_once_its_session_expires() {
    within(Duration::from_secs(40), async {
        let path = format!("{}/lock", unique("lock-expiry"));
        let holder = connect_with(options(2_000)).await;
        let guard = Lock::new(&holder, &path).acquire().await.unwrap();
        let waiter = connect().await;
        let contender = Lock::new(&waiter, &path);
        let waiting = tokio::spawn(async move { contender.acquire().await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "acquired while held");

        let dropped = Instant::now();
        holder.debug_drop_connection(Duration::from_secs(3600));
        let second = within(Duration::from_secs(30), waiting)
            .await
            .unwrap()
            .unwrap();
        // The server frees the lock only by expiring the session, not on the mere loss of
        // the connection.
        let waited = dropped.elapsed();
        assert!(
            waited >= holder.session_timeout() / 2,
            "lock freed after {waited:?}, before the session could expire"
        );
        assert!(second.fencing_token() > guard.fencing_token());
        wait_for_state(&holder, SessionState::Expired, Duration::from_secs(10)).await;
        assert!(matches!(guard.lost().await, Error::SessionExpired));
        second.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn timeouts_try_and_cancellation_leave_no_node_behind() {
    within(Duration::from_secs(30), async {
        let path = format!("{}/lock", unique("lock-cancel"));
        let a = connect().await;
        let b = connect().await;
        let held = Lock::new(&a, &path).acquire().await.unwrap();
        let lock = Lock::new(&b, &path);

        assert!(lock.try_acquire().await.unwrap().is_none());
        assert_eq!(a.get_children(&path).await.unwrap().len(), 1);

        let err = lock
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout), "{err}");
        assert_eq!(a.get_children(&path).await.unwrap().len(), 1);

        // Dropping the acquire future half-way deletes its node.
        let attempt = lock.acquire();
        let dropped = tokio::time::timeout(Duration::from_millis(200), attempt).await;
        assert!(dropped.is_err());
        let mut remaining = usize::MAX;
        for _ in 0..50 {
            remaining = a.get_children(&path).await.unwrap().len();
            if remaining == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            remaining, 1,
            "the abandoned contender's node is still there"
        );

        // A dropped guard releases the lock as well.
        drop(held);
        let next = within(Duration::from_secs(10), lock.acquire())
            .await
            .unwrap();
        assert_eq!(next.wakeups(), 0);
        next.release().await.unwrap();
        assert!(a.get_children(&path).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn contenders_are_listed_holder_first() {
    within(Duration::from_secs(20), async {
        let path = format!("{}/lock", unique("lock-contenders"));
        let a = connect().await;
        let b = connect().await;
        let first = Lock::new(&a, &path).identifier("first");
        let second = Lock::new(&b, &path).identifier("second");
        let held = first.acquire().await.unwrap();
        let waiting = tokio::spawn(async move { second.acquire().await });
        let mut contenders = Vec::new();
        for _ in 0..50 {
            contenders = first.contenders().await.unwrap();
            if contenders.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(contenders, ["first", "second"]);
        held.release().await.unwrap();
        let got = waiting.await.unwrap().unwrap();
        // Woken at most once, by its predecessor's deletion (none if it had not set its
        // watch yet when the lock was released).
        assert!(got.wakeups() <= 1, "{} wakeups", got.wakeups());
        // Nodes that are not contenders are ignored.
        a.create(
            &format!("{path}/not-a-contender"),
            b"",
            CreateMode::Persistent,
        )
        .await
        .unwrap();
        assert_eq!(first.contenders().await.unwrap(), ["second"]);
    })
    .await;
}

//! The other recipes: read/write lock, semaphore, barriers, queue, counter.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use paddock_client::recipes::{
    Barrier, Counter, DoubleBarrier, Lock, Queue, ReadWriteLock, Semaphore,
};
use paddock_client::Error;

use crate::support::{connect, unique, within};

const LIMIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn readers_share_writers_exclude() {
    within(LIMIT, async {
        let path = unique("rwlock");
        let a = connect().await;
        let b = connect().await;
        let rw_a = ReadWriteLock::new(&a, &path);
        let rw_b = ReadWriteLock::new(&b, &path);
        let r1 = rw_a.read_lock().acquire().await.unwrap();
        let r2 = within(LIMIT, rw_b.read_lock().acquire()).await.unwrap();
        assert!(rw_b.write_lock().try_acquire().await.unwrap().is_none());
        let writer = rw_b.write_lock();
        let waiting = tokio::spawn(async move { writer.acquire().await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        // A reader arriving after a waiting writer queues behind it.
        assert!(rw_a.read_lock().try_acquire().await.unwrap().is_none());
        r1.release().await.unwrap();
        assert!(!waiting.is_finished());
        r2.release().await.unwrap();
        let w = within(LIMIT, waiting).await.unwrap().unwrap();
        assert!(w.fencing_token() > 0);
        assert!(rw_a.read_lock().try_acquire().await.unwrap().is_none());
        w.release().await.unwrap();
        let r = rw_a.read_lock().try_acquire().await.unwrap();
        assert!(r.is_some());
        // An exclusive Lock's node is a writer to the readers queued behind it.
        let exclusive = Lock::new(&b, &path).acquire().await.unwrap();
        drop(r);
        assert!(rw_a.read_lock().try_acquire().await.unwrap().is_none());
        exclusive.release().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_admits_at_most_its_leases() {
    within(LIMIT, async {
        let path = unique("semaphore");
        let client = connect().await;
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let mut tasks = Vec::new();
        for i in 0..6 {
            let semaphore = Semaphore::new(&client, &path, 2).identifier(&format!("s{i}"));
            let (inside, most) = (inside.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                let lease = semaphore.acquire().await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);

        let held: Vec<_> = vec![
            Semaphore::new(&client, &path, 2).acquire().await.unwrap(),
            Semaphore::new(&client, &path, 2).acquire().await.unwrap(),
        ];
        let err = Semaphore::new(&client, &path, 2)
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout), "{err}");
        assert_eq!(
            Semaphore::new(&client, &path, 2)
                .lease_holders()
                .await
                .unwrap()
                .len(),
            2
        );
        // A different maximum on the same path is refused.
        let err = Semaphore::new(&client, &path, 3)
            .acquire()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::BadArguments(_)), "{err}");
        drop(held);
    })
    .await;
}

#[tokio::test]
async fn barriers_hold_until_lowered() {
    within(LIMIT, async {
        let path = unique("barrier");
        let client = connect().await;
        let barrier = Barrier::new(&client, &path);
        assert!(barrier.wait(None).await.unwrap(), "no barrier, no wait");
        barrier.create().await.unwrap();
        assert!(!barrier
            .wait(Some(Duration::from_millis(100)))
            .await
            .unwrap());
        let waiter = Barrier::new(&connect().await, &path);
        let waiting = tokio::spawn(async move { waiter.wait(None).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished());
        assert!(barrier.remove().await.unwrap());
        assert!(within(LIMIT, waiting).await.unwrap().unwrap());
        assert!(!barrier.remove().await.unwrap());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_barrier_starts_and_ends_together() {
    within(LIMIT, async {
        let path = unique("double-barrier");
        let entered = Arc::new(AtomicU32::new(0));
        let mut tasks = Vec::new();
        for i in 0..3 {
            let client = connect().await;
            let in_task = entered.clone();
            let path = path.clone();
            tasks.push(tokio::spawn(async move {
                let entered = in_task;
                let barrier = DoubleBarrier::new(&client, &path, 3, &format!("m{i}"));
                barrier.enter().await.unwrap();
                // Nobody gets in before everybody has arrived.
                let count = entered.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(count <= 3);
                tokio::time::sleep(Duration::from_millis(20 * i)).await;
                barrier.leave().await.unwrap();
                // Nobody gets out before everybody has got in.
                assert_eq!(entered.load(Ordering::SeqCst), 3);
            }));
            if i < 2 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                assert_eq!(entered.load(Ordering::SeqCst), 0, "entered early");
            }
        }
        for task in tasks {
            task.await.unwrap();
        }
        let client = connect().await;
        assert!(client.get_children(&path).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn the_queue_is_fifo_within_priorities() {
    within(LIMIT, async {
        let path = unique("queue");
        let client = connect().await;
        let queue = Queue::new(&client, &path);
        assert!(queue.get().await.unwrap().is_none());
        queue.put(b"first").await.unwrap();
        queue.put(b"second").await.unwrap();
        queue.put_with_priority(b"urgent", 1).await.unwrap();
        assert!(queue.put_with_priority(b"x", 1000).await.is_err());
        assert_eq!(queue.len().await.unwrap(), 3);
        assert_eq!(&queue.get().await.unwrap().unwrap()[..], b"urgent");
        assert_eq!(&queue.get().await.unwrap().unwrap()[..], b"first");
        assert_eq!(&queue.take().await.unwrap()[..], b"second");
        assert!(queue.is_empty().await.unwrap());

        let consumer = Queue::new(&connect().await, &path);
        let waiting = tokio::spawn(async move { consumer.take().await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished());
        queue.put(b"late").await.unwrap();
        assert_eq!(&within(LIMIT, waiting).await.unwrap().unwrap()[..], b"late");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_add_atomically() {
    within(LIMIT, async {
        let path = unique("counter");
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let counter = Counter::new(&connect().await, &path);
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    counter.add(1).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let client = connect().await;
        let counter = Counter::new(&client, &path);
        assert_eq!(counter.get().await.unwrap(), 100);
        assert_eq!(counter.add(-10).await.unwrap(), (100, 90));
        assert_eq!(&client.get_data(&path).await.unwrap().0[..], b"90");

        let curator = Counter::curator(&client, &format!("{path}-curator"));
        assert_eq!(curator.add(5).await.unwrap(), (0, 5));
        assert_eq!(
            &client.get_data(&format!("{path}-curator")).await.unwrap().0[..],
            &[0, 0, 0, 5]
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locking_queue_hands_each_entry_to_one_consumer_until_consumed() {
    use paddock_client::recipes::LockingQueue;
    within(LIMIT, async {
        let path = unique("locking-queue");
        let (a, b) = (connect().await, connect().await);
        let qa = LockingQueue::new(&a, &path);
        let qb = LockingQueue::new(&b, &path);
        qa.put(b"one").await.unwrap();
        qa.put_all(&[b"two", b"three"], 100).await.unwrap();
        qa.put_all(&[b"urgent"], 5).await.unwrap();
        assert_eq!(qa.len().await.unwrap(), 4);

        let urgent = qa.get().await.unwrap();
        assert_eq!(&urgent.value()[..], b"urgent");
        // Locked entries are skipped by others, not removed.
        let one = qb.get().await.unwrap();
        assert_eq!(&one.value()[..], b"one");
        assert_eq!(qa.len().await.unwrap(), 4);
        // Released, it is next again.
        assert!(urgent.release().await.unwrap());
        let again = qb.get().await.unwrap();
        assert_eq!(&again.value()[..], b"urgent");
        assert!(again.holds_lock().await.unwrap());
        assert!(again.consume().await.unwrap());
        assert!(one.consume().await.unwrap());
        assert_eq!(qa.len().await.unwrap(), 2);

        // A consumer whose session ends gives its entry back.
        let two = qb.get().await.unwrap();
        assert_eq!(&two.value()[..], b"two");
        b.close().await.unwrap();
        let back = within(Duration::from_secs(20), qa.get()).await.unwrap();
        assert_eq!(&back.value()[..], b"two");
        assert!(!two.consume().await.unwrap_or(false));
        // Waiting for an entry: a put wakes the getter.
        assert!(back.consume().await.unwrap());
        let three = qa.get().await.unwrap();
        assert!(three.consume().await.unwrap());
        assert!(qa
            .get_timeout(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none());
        let waiting = tokio::spawn({
            let qa = qa.clone();
            async move { qa.get().await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        qa.put(b"late").await.unwrap();
        let late = within(Duration::from_secs(20), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&late.value()[..], b"late");
        assert!(late.consume().await.unwrap());
    })
    .await;
}

//! The whole-subtree calls (`ensure_path`, `delete_all`), kazoo's `DataWatch` and
//! `ChildrenWatch`, and a retry policy around a call that loses its connection.

use std::time::Duration;

use paddock_client::recipes::{ChildrenWatch, DataWatch};
use paddock_client::retry::RetryPolicy;
use paddock_client::{CreateMode, Error, ErrorCode};

use crate::support::{keeper, sandbox, within};

const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn ensure_path_creates_what_is_missing_and_leaves_the_rest() {
    within(LIMIT, async {
        let (client, _root) = sandbox("ensure").await;
        client
            .create("/a", b"keep", CreateMode::Persistent)
            .await
            .unwrap();
        client.ensure_path("/a/b/c").await.unwrap();
        client.ensure_path("/a/b/c").await.unwrap();
        client.ensure_path("/").await.unwrap();
        assert_eq!(&client.get_data("/a").await.unwrap().0[..], b"keep");
        assert!(client.exists("/a/b/c").await.unwrap().is_some());
        let err = client.ensure_path("/a/b/").await.unwrap_err();
        assert!(matches!(err, Error::InvalidPath { .. }), "{err}");
    })
    .await;
}

#[tokio::test]
async fn delete_all_removes_a_subtree_larger_than_one_batch() {
    within(Duration::from_secs(120), async {
        let (client, _root) = sandbox("deleteall").await;
        client.ensure_path("/d/x/y").await.unwrap();
        // 1,100 children: two multi batches.
        let mut creates = client.transaction();
        for i in 0..1100 {
            creates = creates.create(&format!("/d/x/n{i}"), b"", CreateMode::Persistent);
        }
        creates.commit().await.unwrap();
        client
            .create("/d0", b"", CreateMode::Persistent)
            .await
            .unwrap();
        client.delete_all("/d").await.unwrap();
        assert!(client.exists("/d").await.unwrap().is_none());
        // A sibling whose name starts the same is not below it.
        assert!(client.exists("/d0").await.unwrap().is_some());
        assert!(keeper(ErrorCode::NoNode)(
            &client.delete_all("/d").await.unwrap_err()
        ));
        // The root of a chroot: everything below it goes, the root stays.
        client.delete_all("/").await.unwrap();
        assert!(client.get_children("/").await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_data_watch_reports_each_new_state_of_the_node() {
    within(LIMIT, async {
        let (client, _root) = sandbox("datawatch").await;
        let mut watch = DataWatch::new(&client, "/w");
        assert_eq!(watch.next_data().await.unwrap(), None);
        client
            .create("/w", b"1", CreateMode::Persistent)
            .await
            .unwrap();
        let (data, stat) = watch.next_data().await.unwrap().unwrap();
        assert_eq!((&data[..], stat.version), (&b"1"[..], 0));
        client.set_data("/w", b"2", None).await.unwrap();
        let (data, stat) = watch.next_data().await.unwrap().unwrap();
        assert_eq!((&data[..], stat.version), (&b"2"[..], 1));
        client.delete("/w", None).await.unwrap();
        assert_eq!(watch.next_data().await.unwrap(), None);
    })
    .await;
}

#[tokio::test]
async fn a_children_watch_reports_each_new_set_until_the_node_goes() {
    within(LIMIT, async {
        let (client, _root) = sandbox("childrenwatch").await;
        client
            .create("/c", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let mut watch = ChildrenWatch::new(&client, "/c");
        assert!(watch.next_children().await.unwrap().is_empty());
        client
            .create("/c/b", b"", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(watch.next_children().await.unwrap(), ["b"]);
        client
            .create("/c/a", b"", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(watch.next_children().await.unwrap(), ["a", "b"]);
        client.delete_all("/c").await.unwrap();
        // The set may be seen empty first, if the node's deletion came later.
        let end = loop {
            match watch.next_children().await {
                Ok(children) => assert!(children.is_empty(), "{children:?}"),
                Err(err) => break err,
            }
        };
        assert!(keeper(ErrorCode::NoNode)(&end), "{end}");
    })
    .await;
}

#[tokio::test]
async fn a_retried_read_survives_a_dropped_connection() {
    within(LIMIT, async {
        let (client, _root) = sandbox("retry").await;
        client
            .create("/r", b"v", CreateMode::Persistent)
            .await
            .unwrap();
        let policy =
            RetryPolicy::exponential(Duration::from_millis(20), Duration::from_secs(1), 10);
        let mut attempts = 0;
        let (data, _) = policy
            .run(|| {
                attempts += 1;
                let first = attempts == 1;
                let client = client.clone();
                async move {
                    let mut read = Box::pin(client.get_data("/r"));
                    // The first poll sends the request; on one thread, the session
                    // takes it and the drop together, so the read's connection breaks
                    // under it.
                    assert!(futures::poll!(&mut read).is_pending());
                    if first {
                        client.debug_drop_connection(Duration::from_millis(200));
                    }
                    read.await
                }
            })
            .await
            .unwrap();
        assert_eq!(&data[..], b"v");
        assert_eq!(
            attempts, 2,
            "the first attempt should have lost its connection"
        );
        // A missing node is an answer, not a reason to retry.
        let mut calls = 0;
        let err = policy
            .run(|| {
                calls += 1;
                client.get_data("/missing")
            })
            .await
            .unwrap_err();
        assert!(keeper(ErrorCode::NoNode)(&err));
        assert_eq!(calls, 1);
    })
    .await;
}

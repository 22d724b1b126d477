//! One-shot watches: they fire once, before any read that reflects the change (ZooKeeper
//! Programmer's Guide, "Semantics of Watches": a client sees the watch event before it
//! sees the new data), survive reconnects, and end with the session.

use std::time::Duration;

use futures::FutureExt;
use paddock_client::{CreateMode, Error, EventType, SessionState, WatcherType};

use crate::support::{connect_with, options, sandbox, sandbox_with, wait_for_state, within};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn data_watch_fires_once_and_before_the_read_that_sees_the_change() {
    within(LIMIT, async {
        let (client, _root) = sandbox("w-data").await;
        client
            .create("/n", b"0", CreateMode::Persistent)
            .await
            .unwrap();
        let writer = client.clone();
        for round in 1..=20u32 {
            let (_, _, watch) = client.get_data_w("/n").await.unwrap();
            let mut watch = Box::pin(watch);
            writer
                .set_data("/n", round.to_string().as_bytes(), None)
                .await
                .unwrap();
            // The reply to set_data came after the notification on the same connection:
            // the watch must already be resolved, with no await needed.
            let event = watch
                .as_mut()
                .now_or_never()
                .expect("watch resolved before the write's reply")
                .unwrap();
            assert_eq!(event.event_type, EventType::NodeDataChanged);
            assert_eq!(event.path, "/n");
        }
        // A watch fires once: the next change is not delivered to a used-up watch.
        let (_, _, watch) = client.get_data_w("/n").await.unwrap();
        client.set_data("/n", b"a", None).await.unwrap();
        watch.await.unwrap();
        let (_, _, watch) = client.get_data_w("/n").await.unwrap();
        let mut watch = Box::pin(watch);
        client.sync("/n").await.unwrap();
        assert!(watch.as_mut().now_or_never().is_none());
        client.delete("/n", None).await.unwrap();
        assert_eq!(watch.await.unwrap().event_type, EventType::NodeDeleted);
    })
    .await;
}

#[tokio::test]
async fn watch_event_precedes_a_read_on_another_client() {
    within(LIMIT, async {
        let (watcher, root) = sandbox("w-order").await;
        let writer = crate::support::connect().await;
        watcher
            .create("/n", b"0", CreateMode::Persistent)
            .await
            .unwrap();
        for round in 1..=20u32 {
            let (_, _, watch) = watcher.get_data_w("/n").await.unwrap();
            let mut watch = Box::pin(watch);
            let value = round.to_string();
            writer
                .set_data(&format!("{root}/n"), value.as_bytes(), None)
                .await
                .unwrap();
            // Poll reads until one reflects the change; at that point the watch must
            // have fired already.
            let mut seen = false;
            for _ in 0..200 {
                let (data, _) = watcher.get_data("/n").await.unwrap();
                if data[..] == *value.as_bytes() {
                    seen = true;
                    break;
                }
                assert!(
                    watch.as_mut().now_or_never().is_none(),
                    "watch fired before the change was visible?"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert!(seen, "the change never became visible");
            let event = watch
                .as_mut()
                .now_or_never()
                .expect("watch fired before the read that reflects the change")
                .unwrap();
            assert_eq!(event.event_type, EventType::NodeDataChanged);
        }
    })
    .await;
}

#[tokio::test]
async fn exists_and_child_watches() {
    within(LIMIT, async {
        let (client, _root) = sandbox("w-exists").await;
        let (stat, created) = client.exists_w("/later").await.unwrap();
        assert!(stat.is_none());
        let (children, child_watch) = client.get_children_w("/").await.unwrap();
        assert!(children.is_empty());
        client
            .create("/later", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let event = created.await.unwrap();
        assert_eq!(event.event_type, EventType::NodeCreated);
        assert_eq!(event.path, "/later");
        let event = child_watch.await.unwrap();
        assert_eq!(event.event_type, EventType::NodeChildrenChanged);
        assert_eq!(event.path, "/");

        let (stat, deleted) = client.exists_w("/later").await.unwrap();
        assert!(stat.is_some());
        let (_, _, child_watch) = client.get_children2_w("/later").await.unwrap();
        client.delete("/later", None).await.unwrap();
        assert_eq!(deleted.await.unwrap().event_type, EventType::NodeDeleted);
        assert_eq!(
            child_watch.await.unwrap().event_type,
            EventType::NodeDeleted
        );

        // A failed read leaves no watch.
        let err = client.get_data_w("/later").await.unwrap_err();
        assert_eq!(err.code(), paddock_client::ErrorCode::NoNode);
    })
    .await;
}

#[tokio::test]
async fn remove_watches_resolves_local_watches() {
    within(LIMIT, async {
        let (client, _root) = sandbox("w-remove").await;
        client
            .create("/n", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let (_, _, data_watch) = client.get_data_w("/n").await.unwrap();
        let (_, child_watch) = client.get_children_w("/n").await.unwrap();
        client.check_watches("/n", WatcherType::Data).await.unwrap();
        client
            .remove_watches("/n", WatcherType::Data)
            .await
            .unwrap();
        assert_eq!(
            data_watch.await.unwrap().event_type,
            EventType::DataWatchRemoved
        );
        let err = client
            .check_watches("/n", WatcherType::Data)
            .await
            .unwrap_err();
        assert_eq!(err.code(), paddock_client::ErrorCode::NoWatcher);
        client.remove_watches("/n", WatcherType::Any).await.unwrap();
        assert_eq!(
            child_watch.await.unwrap().event_type,
            EventType::ChildWatchRemoved
        );
        let err = client
            .remove_watches("/n", WatcherType::Children)
            .await
            .unwrap_err();
        assert_eq!(err.code(), paddock_client::ErrorCode::NoWatcher);
    })
    .await;
}

#[tokio::test]
async fn watches_survive_a_reconnect_and_see_changes_made_meanwhile() {
    within(LIMIT, async {
        let (client, root) = sandbox_with("w-reconnect", options(6_000)).await;
        let other = crate::support::connect().await;
        client
            .create("/d", b"", CreateMode::Persistent)
            .await
            .unwrap();
        client
            .create("/quiet", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let (_, _, changed) = client.get_data_w("/d").await.unwrap();
        let (_, _, quiet) = client.get_data_w("/quiet").await.unwrap();
        let (_, created) = client.exists_w("/born").await.unwrap();
        let mut quiet = Box::pin(quiet);

        client.debug_drop_connection(Duration::from_millis(1500));
        wait_for_state(&client, SessionState::Disconnected, LIMIT).await;
        // Changes made while the client is away.
        other
            .set_data(&format!("{root}/d"), b"x", None)
            .await
            .unwrap();
        other
            .create(&format!("{root}/born"), b"", CreateMode::Persistent)
            .await
            .unwrap();
        wait_for_state(&client, SessionState::Connected, LIMIT).await;

        // setWatches2 with the last zxid seen fires them on reconnect.
        assert_eq!(
            changed.await.unwrap().event_type,
            EventType::NodeDataChanged
        );
        assert_eq!(created.await.unwrap().event_type, EventType::NodeCreated);
        // A disconnect alone delivers nothing to a watch whose node did not change...
        client.sync("/").await.unwrap();
        assert!(quiet.as_mut().now_or_never().is_none());
        // ...and the watch is still armed.
        other
            .set_data(&format!("{root}/quiet"), b"y", None)
            .await
            .unwrap();
        assert_eq!(quiet.await.unwrap().event_type, EventType::NodeDataChanged);
    })
    .await;
}

#[tokio::test]
async fn requests_made_while_disconnected_wait_for_the_reconnect() {
    within(LIMIT, async {
        let (client, _root) = sandbox_with("w-backlog", options(6_000)).await;
        client.debug_drop_connection(Duration::from_millis(500));
        wait_for_state(&client, SessionState::Disconnected, LIMIT).await;
        let path = client
            .create("/made-while-away", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        assert_eq!(path, "/made-while-away");
        assert_eq!(client.state(), SessionState::Connected);
    })
    .await;
}

#[tokio::test]
async fn session_end_resolves_watches_with_an_error() {
    within(LIMIT, async {
        let client = connect_with(options(10_000)).await;
        let (_, missing) = client.exists_w("/never-made-by-anyone").await.unwrap();
        client.close().await.unwrap();
        assert!(matches!(missing.await, Err(Error::Closed)));
        assert_eq!(client.state(), SessionState::Closed);
        assert!(matches!(client.exists("/").await, Err(Error::Closed)));
    })
    .await;
}

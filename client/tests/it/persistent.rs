//! Persistent and persistent-recursive watches (ZooKeeper 3.6 `addWatch`): they stay
//! armed after firing, survive reconnects, and recursive ones cover the whole subtree
//! without child events.

use std::time::Duration;

use futures::{FutureExt, StreamExt};
use paddock_client::{
    AddWatchMode, CreateMode, Error, EventType, PersistentWatch, SessionState, WatchedEvent,
    WatcherType,
};

use crate::support::{connect, options, sandbox, sandbox_with, wait_for_state, within};

const LIMIT: Duration = Duration::from_secs(20);

async fn next(watch: &mut PersistentWatch) -> WatchedEvent {
    within(Duration::from_secs(10), watch.next())
        .await
        .expect("stream ended")
        .expect("watch failed")
}

async fn take(watch: &mut PersistentWatch, n: usize) -> Vec<(EventType, String)> {
    let mut events = Vec::new();
    for _ in 0..n {
        let event = next(watch).await;
        events.push((event.event_type, event.path));
    }
    events
}

fn expect(events: &[(EventType, &str)]) -> Vec<(EventType, String)> {
    events.iter().map(|(t, p)| (*t, (*p).to_owned())).collect()
}

#[tokio::test]
async fn persistent_watch_fires_on_every_change_of_the_node() {
    within(LIMIT, async {
        let (client, _root) = sandbox("pw").await;
        let mut watch = client
            .add_watch("/node", AddWatchMode::Persistent)
            .await
            .unwrap();
        client
            .create("/node", b"", CreateMode::Persistent)
            .await
            .unwrap();
        for i in 0..3u8 {
            client.set_data("/node", &[i], None).await.unwrap();
        }
        client
            .create("/node/child", b"", CreateMode::Persistent)
            .await
            .unwrap();
        // A grandchild is not the node's business.
        client
            .create("/node/child/grand", b"", CreateMode::Persistent)
            .await
            .unwrap();
        client.delete("/node/child/grand", None).await.unwrap();
        client.delete("/node/child", None).await.unwrap();
        client.delete("/node", None).await.unwrap();
        assert_eq!(
            take(&mut watch, 7).await,
            expect(&[
                (EventType::NodeCreated, "/node"),
                (EventType::NodeDataChanged, "/node"),
                (EventType::NodeDataChanged, "/node"),
                (EventType::NodeDataChanged, "/node"),
                (EventType::NodeChildrenChanged, "/node"),
                (EventType::NodeChildrenChanged, "/node"),
                (EventType::NodeDeleted, "/node"),
            ])
        );
        client.sync("/").await.unwrap();
        assert!(watch.next().now_or_never().is_none(), "no further events");

        // Still armed after all that.
        client
            .create("/node", b"", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(
            take(&mut watch, 1).await,
            expect(&[(EventType::NodeCreated, "/node")])
        );

        client
            .remove_watches("/node", WatcherType::Persistent)
            .await
            .unwrap();
        assert_eq!(
            take(&mut watch, 1).await,
            expect(&[(EventType::PersistentWatchRemoved, "/node")])
        );
        assert!(within(LIMIT, watch.next()).await.is_none(), "stream ends");
    })
    .await;
}

#[tokio::test]
async fn recursive_watch_covers_the_subtree_without_child_events() {
    within(LIMIT, async {
        let (client, _root) = sandbox("rw").await;
        client
            .create("/tree", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let mut watch = client
            .add_watch("/tree", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
        client
            .create("/tree/a", b"", CreateMode::Persistent)
            .await
            .unwrap();
        client
            .create("/tree/a/b", b"", CreateMode::Persistent)
            .await
            .unwrap();
        client.set_data("/tree/a/b", b"1", None).await.unwrap();
        client
            .create("/elsewhere", b"", CreateMode::Persistent)
            .await
            .unwrap();
        client.delete("/tree/a/b", None).await.unwrap();
        assert_eq!(
            take(&mut watch, 4).await,
            expect(&[
                (EventType::NodeCreated, "/tree/a"),
                (EventType::NodeCreated, "/tree/a/b"),
                (EventType::NodeDataChanged, "/tree/a/b"),
                (EventType::NodeDeleted, "/tree/a/b"),
            ])
        );
        client.sync("/").await.unwrap();
        assert!(watch.next().now_or_never().is_none());

        // One-shot and persistent watches on the same node each get their event.
        let (_, _, one_shot) = client.get_data_w("/tree/a").await.unwrap();
        client.set_data("/tree/a", b"2", None).await.unwrap();
        assert_eq!(
            one_shot.await.unwrap().event_type,
            EventType::NodeDataChanged
        );
        assert_eq!(
            take(&mut watch, 1).await,
            expect(&[(EventType::NodeDataChanged, "/tree/a")])
        );
    })
    .await;
}

#[tokio::test]
async fn persistent_watches_survive_reconnects() {
    within(LIMIT, async {
        let (client, root) = sandbox_with("pw-reconnect", options(6_000)).await;
        let other = connect().await;
        let mut watch = client
            .add_watch("/", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
        client.debug_drop_connection(Duration::from_millis(1000));
        wait_for_state(&client, SessionState::Disconnected, LIMIT).await;
        wait_for_state(&client, SessionState::Connected, LIMIT).await;
        other
            .create(&format!("{root}/after"), b"", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(
            take(&mut watch, 1).await,
            expect(&[(EventType::NodeCreated, "/after")])
        );
    })
    .await;
}

#[tokio::test]
async fn dropping_the_stream_removes_the_server_watch() {
    within(LIMIT, async {
        let (client, _root) = sandbox("pw-drop").await;
        let first = client
            .add_watch("/n", AddWatchMode::Persistent)
            .await
            .unwrap();
        let mut second = client
            .add_watch("/n", AddWatchMode::Persistent)
            .await
            .unwrap();
        drop(first);
        // The other stream still holds the server's watch.
        client.check_watches("/n", WatcherType::Any).await.unwrap();
        client
            .create("/n", b"", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(
            take(&mut second, 1).await,
            expect(&[(EventType::NodeCreated, "/n")])
        );
        drop(second);
        let err = client
            .check_watches("/n", WatcherType::Any)
            .await
            .unwrap_err();
        assert_eq!(err.code(), paddock_client::ErrorCode::NoWatcher);
    })
    .await;
}

#[tokio::test]
async fn session_end_ends_the_stream_with_the_error() {
    within(LIMIT, async {
        let (client, _root) = sandbox("pw-end").await;
        let mut watch = client
            .add_watch("/", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
        client.close().await.unwrap();
        assert!(matches!(watch.next().await, Some(Err(Error::Closed))));
        assert!(watch.next().await.is_none());
    })
    .await;
}

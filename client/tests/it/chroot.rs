//! The chroot of the connect string applies to every path going out and coming back.

use std::time::Duration;

use paddock_client::{AddWatchMode, Client, CreateMode, EventType, OpResult};

use crate::support::{connect, server, unique, within};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn every_path_is_relative_to_the_chroot() {
    within(LIMIT, async {
        let root = unique("chroot");
        let admin = connect().await;
        admin
            .create(&root, b"", CreateMode::Persistent)
            .await
            .unwrap();
        let client = Client::connect(&format!("{}{root}", server().await), Default::default())
            .await
            .unwrap();
        assert_eq!(client.chroot(), root);

        let mut recursive = client
            .add_watch("/", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
        let (_, created) = client.exists_w("/a").await.unwrap();
        let (_, children) = client.get_children_w("/").await.unwrap();

        assert_eq!(
            client
                .create("/a", b"", CreateMode::Persistent)
                .await
                .unwrap(),
            "/a"
        );
        let seq = client
            .create("/", b"", CreateMode::EphemeralSequential)
            .await
            .unwrap();
        assert_eq!(seq, "/0000000001");
        assert_eq!(created.await.unwrap().path, "/a");
        let event = children.await.unwrap();
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (EventType::NodeChildrenChanged, "/")
        );
        let event = recursive.next_event().await.unwrap().unwrap();
        assert_eq!(event.path, "/a");

        let results = client
            .transaction()
            .create("/b", b"", CreateMode::Persistent)
            .create2("/c", b"", CreateMode::Persistent)
            .commit()
            .await
            .unwrap();
        assert_eq!(results[0], OpResult::Create { path: "/b".into() });
        assert!(matches!(
            &results[1],
            OpResult::Create2 { path, .. } | OpResult::Create { path } if path == "/c"
        ));

        assert_eq!(client.get_ephemerals("/").await.unwrap(), ["/0000000001"]);
        let mut children = client.get_children("/").await.unwrap();
        children.sort();
        assert_eq!(children, ["0000000001", "a", "b", "c"]);
        // The same nodes, seen from outside the chroot.
        let mut outside = admin.get_children(&root).await.unwrap();
        outside.sort();
        assert_eq!(outside, children);
        assert!(admin.exists(&format!("{root}/a")).await.unwrap().is_some());
        // The root of the chroot is "/".
        let (_, stat) = client.get_data("/").await.unwrap();
        assert_eq!(stat.num_children, 4);
    })
    .await;
}

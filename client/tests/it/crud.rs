//! Every op against the server, with its success and its typical failure.

use std::time::Duration;

use paddock_client::{
    perms, Acl, CreateMode, CreateOptions, Error, ErrorCode, Id, OpResult, ReadOp,
};

use crate::support::{connect, keeper, sandbox, within};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn create_get_set_delete() {
    within(LIMIT, async {
        let (client, _root) = sandbox("crud").await;
        let path = client
            .create("/a", b"one", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(path, "/a");
        let err = client
            .create("/a", b"", CreateMode::Persistent)
            .await
            .unwrap_err();
        assert!(keeper(ErrorCode::NodeExists)(&err), "{err}");
        assert_eq!(err.code(), ErrorCode::NodeExists);

        let (data, stat) = client.get_data("/a").await.unwrap();
        assert_eq!(&data[..], b"one");
        assert_eq!(stat.version, 0);
        assert_eq!(stat.data_length, 3);

        let stat = client.set_data("/a", b"two", Some(0)).await.unwrap();
        assert_eq!(stat.version, 1);
        let err = client.set_data("/a", b"x", Some(0)).await.unwrap_err();
        assert!(keeper(ErrorCode::BadVersion)(&err), "{err}");
        let stat = client.set_data("/a", b"three", None).await.unwrap();
        assert_eq!(stat.version, 2);

        let (path, stat) = client
            .create2("/a/b", b"", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(path, "/a/b");
        assert_eq!(stat.num_children, 0);
        assert!(stat.czxid > 0);

        let err = client.delete("/a", None).await.unwrap_err();
        assert!(keeper(ErrorCode::NotEmpty)(&err), "{err}");
        let err = client.delete("/a/b", Some(5)).await.unwrap_err();
        assert!(keeper(ErrorCode::BadVersion)(&err), "{err}");
        client.delete("/a/b", Some(0)).await.unwrap();
        client.delete("/a", None).await.unwrap();
        assert_eq!(client.exists("/a").await.unwrap(), None);
        let err = client.get_data("/a").await.unwrap_err();
        assert!(keeper(ErrorCode::NoNode)(&err), "{err}");
    })
    .await;
}

#[tokio::test]
async fn children_sequential_ephemeral_and_counts() {
    within(LIMIT, async {
        let (client, root) = sandbox("children").await;
        client
            .create("/p", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let first = client
            .create("/p/s-", b"", CreateMode::PersistentSequential)
            .await
            .unwrap();
        let second = client
            .create("/p/s-", b"", CreateMode::EphemeralSequential)
            .await
            .unwrap();
        assert_eq!(first, "/p/s-0000000000");
        assert_eq!(second, "/p/s-0000000001");
        client
            .create("/p/e", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        let err = client
            .create("/p/e/child", b"", CreateMode::Persistent)
            .await
            .unwrap_err();
        assert!(keeper(ErrorCode::NoChildrenForEphemerals)(&err), "{err}");

        let mut children = client.get_children("/p").await.unwrap();
        children.sort();
        assert_eq!(children, ["e", "s-0000000000", "s-0000000001"]);
        let (children, stat) = client.get_children2("/p").await.unwrap();
        assert_eq!(children.len(), 3);
        assert_eq!(stat.num_children, 3);
        assert_eq!(stat.cversion, 3);

        assert_eq!(client.get_all_children_number("/").await.unwrap(), 4);
        let mut ephemerals = client.get_ephemerals("/").await.unwrap();
        ephemerals.sort();
        assert_eq!(ephemerals, ["/p/e", "/p/s-0000000001"]);
        let (_, stat) = client.get_data("/p/e").await.unwrap();
        assert_eq!(stat.ephemeral_owner, client.session_id());

        // Ephemerals go with the session.
        client.close().await.unwrap();
        let other = connect().await;
        let mut children = other.get_children(&format!("{root}/p")).await.unwrap();
        children.sort();
        assert_eq!(children, ["s-0000000000"]);
    })
    .await;
}

#[tokio::test]
async fn acls_auth_and_whoami() {
    within(LIMIT, async {
        let (client, _root) = sandbox("acl").await;
        let who = client.who_am_i().await.unwrap();
        assert!(who.iter().all(|info| info.auth_scheme != "digest"));

        client.add_auth("digest", b"alice:secret").await.unwrap();
        let who = client.who_am_i().await.unwrap();
        assert!(
            who.iter()
                .any(|info| info.auth_scheme == "digest" && info.user == "alice"),
            "{who:?}"
        );

        client
            .create(
                "/private",
                b"s3cret",
                CreateOptions::new(CreateMode::Persistent).acl(Acl::creator_all()),
            )
            .await
            .unwrap();
        let (acl, stat) = client.get_acl("/private").await.unwrap();
        assert_eq!(acl.len(), 1);
        assert_eq!(acl[0].id.scheme, "digest");
        assert!(acl[0].id.id.starts_with("alice:"));
        assert_eq!(stat.aversion, 0);

        // A session without the credentials is refused.
        let stranger = connect().await;
        let err = stranger
            .get_data(&format!("{}/private", client.chroot()))
            .await
            .unwrap_err();
        assert!(keeper(ErrorCode::NoAuth)(&err), "{err}");

        let read_only = vec![Acl {
            perms: perms::READ,
            id: Id::new("world", "anyone"),
        }];
        let err = client
            .set_acl("/private", &read_only, Some(7))
            .await
            .unwrap_err();
        assert!(keeper(ErrorCode::BadVersion)(&err), "{err}");
        let stat = client
            .set_acl("/private", &read_only, Some(0))
            .await
            .unwrap();
        assert_eq!(stat.aversion, 1);
        let (data, _) = stranger
            .get_data(&format!("{}/private", client.chroot()))
            .await
            .unwrap();
        assert_eq!(&data[..], b"s3cret");
        let err = stranger
            .set_data(&format!("{}/private", client.chroot()), b"x", None)
            .await
            .unwrap_err();
        assert!(keeper(ErrorCode::NoAuth)(&err), "{err}");
    })
    .await;
}

#[tokio::test]
async fn ttl_and_container_nodes() {
    within(LIMIT, async {
        let (client, _root) = sandbox("ttl").await;
        let err = client
            .create("/t", b"", CreateMode::PersistentWithTtl)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::BadArguments(_)), "{err}");
        let err = client
            .create(
                "/t",
                b"",
                CreateOptions::new(CreateMode::Persistent).ttl(Duration::from_secs(1)),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, Error::BadArguments(_)), "{err}");

        let (path, stat) = client
            .create2(
                "/t",
                b"",
                CreateOptions::new(CreateMode::PersistentWithTtl).ttl(Duration::from_secs(60)),
            )
            .await
            .unwrap();
        assert_eq!(path, "/t");
        assert!(stat.czxid > 0);
        let path = client
            .create(
                "/ts-",
                b"",
                CreateOptions::new(CreateMode::PersistentSequentialWithTtl)
                    .ttl(Duration::from_secs(60)),
            )
            .await
            .unwrap();
        assert!(path.starts_with("/ts-"), "{path}");

        let path = client
            .create("/c", b"", CreateMode::Container)
            .await
            .unwrap();
        assert_eq!(path, "/c");
        assert!(client.exists("/c").await.unwrap().is_some());
    })
    .await;
}

#[tokio::test]
async fn sync_check_multi_read_and_config() {
    within(LIMIT, async {
        let (client, _root) = sandbox("misc").await;
        client
            .create("/x", b"1", CreateMode::Persistent)
            .await
            .unwrap();
        client.sync("/x").await.unwrap();
        client.check("/x", 0).await.unwrap();
        let err = client.check("/x", 3).await.unwrap_err();
        assert!(keeper(ErrorCode::BadVersion)(&err), "{err}");
        let err = client.check("/nope", 0).await.unwrap_err();
        assert!(keeper(ErrorCode::NoNode)(&err), "{err}");

        let results = client
            .multi_read([
                ReadOp::GetData("/x".into()),
                ReadOp::GetChildren("/".into()),
                ReadOp::GetData("/nope".into()),
            ])
            .await
            .unwrap();
        assert_eq!(results.len(), 3);
        assert!(matches!(&results[0], OpResult::GetData { data, .. } if &data[..] == b"1"));
        assert!(matches!(&results[1], OpResult::GetChildren { children } if children == &["x"]));
        assert_eq!(results[2], OpResult::Error(ErrorCode::NoNode));

        // The config node is read outside the chroot; standalone servers have one too.
        let (_config, stat) = client.get_config().await.unwrap();
        assert!(stat.czxid >= 0);
        // Reconfig is refused by a standalone server (and by an ensemble without
        // reconfigEnabled).
        let err = client.reconfig("", "", "", -1).await.unwrap_err();
        assert!(matches!(err, Error::Keeper(_)), "{err}");
    })
    .await;
}

#[tokio::test]
async fn paths_are_validated_before_sending() {
    within(LIMIT, async {
        let (client, _root) = sandbox("paths").await;
        for bad in ["", "a", "/a/", "/a//b", "/a/./b", "/a\u{0}"] {
            let err = client.get_data(bad).await.unwrap_err();
            assert!(matches!(err, Error::InvalidPath { .. }), "{bad:?}: {err}");
            assert_eq!(err.code(), ErrorCode::BadArguments);
        }
        // A sequential create may end in a slash.
        client
            .create("/q", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let path = client
            .create("/q/", b"", CreateMode::PersistentSequential)
            .await
            .unwrap();
        assert_eq!(path, "/q/0000000000");
        // Oversized requests are refused locally rather than killing the connection.
        let big = vec![0u8; 2 << 20];
        let err = client.set_data("/q", &big, None).await.unwrap_err();
        assert!(matches!(err, Error::BadArguments(_)), "{err}");
        client.exists("/q").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn many_requests_in_flight_from_many_tasks() {
    within(LIMIT, async {
        let (client, _root) = sandbox("inflight").await;
        let mut tasks = Vec::new();
        for t in 0..8 {
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                let futures: Vec<_> = (0..100)
                    .map(|i| {
                        let client = client.clone();
                        async move {
                            let path = format!("/n-{t}-{i}");
                            let data = path.clone().into_bytes();
                            client
                                .create(&path, &data, CreateMode::Persistent)
                                .await
                                .unwrap();
                            let (got, _) = client.get_data(&path).await.unwrap();
                            assert_eq!(&got[..], &data[..]);
                        }
                    })
                    .collect();
                futures::future::join_all(futures).await;
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(client.get_all_children_number("/").await.unwrap(), 800);
    })
    .await;
}

//! Multi: all ops or none, with one result per op, and the failing op named.

use std::time::Duration;

use paddock_client::{CreateMode, Error, ErrorCode, OpResult};

use crate::support::{sandbox, within};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_transaction_applies_every_op() {
    within(LIMIT, async {
        let (client, _root) = sandbox("multi-ok").await;
        client.create("/cfg", b"v0", CreateMode::Persistent).await.unwrap();
        client.create("/old", b"", CreateMode::Persistent).await.unwrap();
        let results = client
            .transaction()
            .create("/job-", b"j", CreateMode::PersistentSequential)
            .create2("/job2", b"", CreateMode::Persistent)
            .set_data("/cfg", b"v1", Some(0))
            .check("/cfg", 1)
            .delete("/old", None)
            .commit()
            .await
            .unwrap();
        assert_eq!(results.len(), 5);
        assert_eq!(
            results[0],
            OpResult::Create {
                path: "/job-0000000002".into()
            }
        );
        // ZooKeeper 3.8 reports a create2 in a multi as a plain create.
        assert!(
            matches!(&results[1], OpResult::Create2 { path, .. } | OpResult::Create { path } if path == "/job2"),
            "{:?}",
            results[1]
        );
        assert!(matches!(&results[2], OpResult::SetData { stat } if stat.version == 1));
        assert_eq!(results[3], OpResult::Check);
        assert_eq!(results[4], OpResult::Delete);
        assert!(client.exists("/old").await.unwrap().is_none());
        assert!(client.transaction().is_empty());
        assert_eq!(client.transaction().commit().await.unwrap(), []);
    })
    .await;
}

#[tokio::test]
async fn a_failing_op_rolls_back_the_transaction() {
    within(LIMIT, async {
        let (client, _root) = sandbox("multi-fail").await;
        client
            .create("/cfg", b"v0", CreateMode::Persistent)
            .await
            .unwrap();
        let err = client
            .transaction()
            .create("/new", b"", CreateMode::Persistent)
            .check("/cfg", 7)
            .set_data("/cfg", b"v1", None)
            .commit()
            .await
            .unwrap_err();
        let Error::MultiFailed {
            index,
            code,
            results,
        } = &err
        else {
            panic!("expected MultiFailed, got {err}");
        };
        assert_eq!(*index, 1);
        assert_eq!(*code, ErrorCode::BadVersion);
        assert_eq!(err.code(), ErrorCode::BadVersion);
        assert_eq!(
            results,
            &[
                OpResult::Error(ErrorCode::Ok),
                OpResult::Error(ErrorCode::BadVersion),
                OpResult::Error(ErrorCode::RuntimeInconsistency),
            ]
        );
        assert!(client.exists("/new").await.unwrap().is_none());
        assert_eq!(client.get_data("/cfg").await.unwrap().1.version, 0);

        // Argument errors are reported at commit, before anything is sent.
        let err = client
            .transaction()
            .create("relative", b"", CreateMode::Persistent)
            .commit()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidPath { .. }), "{err}");
    })
    .await;
}

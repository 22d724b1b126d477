//! Against an ensemble: the session moves to another server when its server goes away,
//! keeping its ephemeral nodes and its watches. Uses `PADDOCK_TEST_SERVERS` (or
//! `PADDOCK_TEST_SERVER`) if set, else a three-server ZooKeeper ensemble started here.

use std::time::Duration;

use paddock_client::{AddWatchMode, Client, CreateMode, EventType, SessionState};

use crate::support::{ensemble, options, start_ensemble, unique, wait_for_state, within};

#[tokio::test]
async fn the_session_survives_losing_its_server() {
    within(Duration::from_secs(100), async {
        // An external server (or ensemble) cannot be stopped: the connection is dropped
        // instead, and the client moves on to the next server of the list.
        let external = ensemble().or_else(|| std::env::var("PADDOCK_TEST_SERVER").ok());
        let (mut servers, hosts) = match external {
            Some(hosts) => (Vec::new(), hosts),
            None => {
                let servers = tokio::task::spawn_blocking(|| start_ensemble(3))
                    .await
                    .unwrap();
                let hosts = servers
                    .iter()
                    .map(|s| s.addr.clone())
                    .collect::<Vec<_>>()
                    .join(",");
                (servers, hosts)
            }
        };
        let root = unique("ensemble");
        let client = Client::connect(&hosts, options(10_000)).await.unwrap();
        let observer = Client::connect(&hosts, options(10_000)).await.unwrap();
        client
            .create(&root, b"", CreateMode::Persistent)
            .await
            .unwrap();
        let ephemeral = format!("{root}/e");
        client
            .create(&ephemeral, b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        let (_, _, changed) = client.get_data_w(&root).await.unwrap();
        let mut recursive = client
            .add_watch(&root, AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
        let session = client.session_id();
        let first = client.server_addr().unwrap();

        match servers.iter().position(|s| s.addr == first.to_string()) {
            // Stop the very server the client is on.
            Some(index) => drop(servers.remove(index)),
            None => client.debug_drop_connection(Duration::ZERO),
        }
        wait_for_state(&client, SessionState::Disconnected, Duration::from_secs(10)).await;
        wait_for_state(&client, SessionState::Connected, Duration::from_secs(30)).await;
        assert_eq!(client.session_id(), session);
        if !servers.is_empty() {
            assert_ne!(client.server_addr().unwrap(), first);
        }

        // The session's ephemeral node is still there, and its watches are armed on the
        // new server.
        observer.sync(&root).await.unwrap();
        assert!(observer.exists(&ephemeral).await.unwrap().is_some());
        observer.set_data(&root, b"moved", None).await.unwrap();
        let event = within(Duration::from_secs(10), changed).await.unwrap();
        assert_eq!(event.event_type, EventType::NodeDataChanged);
        let event = within(Duration::from_secs(10), recursive.next_event())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (EventType::NodeDataChanged, root.as_str())
        );
        client.sync(&root).await.unwrap();
        assert_eq!(&client.get_data(&root).await.unwrap().0[..], b"moved");
        // Stopping servers waits for their processes: not on the runtime's threads.
        tokio::task::spawn_blocking(move || drop(servers))
            .await
            .unwrap();
    })
    .await;
}

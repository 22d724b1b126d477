//! Session life: timeout negotiation, pings, reconnects, expiry, auth failure, close.

use std::time::Duration;

use paddock_client::{Client, ConnectOptions, CreateMode, Error, SessionState};

use crate::support::{connect, options, sandbox_with, server, wait_for_state, within};

const LIMIT: Duration = Duration::from_secs(30);

fn local_zookeeper() -> bool {
    std::env::var("PADDOCK_TEST_SERVER").is_err()
}

#[tokio::test]
async fn session_timeout_is_negotiated() {
    within(LIMIT, async {
        let short = crate::support::connect_with(options(100)).await;
        let long = crate::support::connect_with(options(100_000)).await;
        assert!(short.session_timeout() > Duration::ZERO);
        assert!(long.session_timeout() >= short.session_timeout());
        if local_zookeeper() {
            // The test server allows 2 to 60 ticks of 500 ms.
            assert_eq!(short.session_timeout(), Duration::from_millis(1000));
            assert_eq!(long.session_timeout(), Duration::from_millis(30_000));
        }
        assert_ne!(short.session_id(), long.session_id());
    })
    .await;
}

#[tokio::test]
async fn pings_keep_an_idle_session_alive() {
    within(LIMIT, async {
        let (client, root) = sandbox_with("ping", options(1_000)).await;
        client
            .create("/e", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        // Three session timeouts without a single request of ours.
        tokio::time::sleep(client.session_timeout() * 3).await;
        assert_eq!(client.state(), SessionState::Connected);
        let other = connect().await;
        assert!(other.exists(&format!("{root}/e")).await.unwrap().is_some());
        client.exists("/e").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn server_side_expiry_is_reported_on_reconnect() {
    within(LIMIT, async {
        let (client, root) = sandbox_with("expire", options(4_000)).await;
        client
            .create("/e", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        let (_, watch) = client.exists_w("/never").await.unwrap();

        // While our connection is down, another one attaches to the session and closes
        // it; our reconnect is then answered with timeout 0. (Were we connected, the
        // server would drop whichever connection of the session is older.)
        client.debug_drop_connection(Duration::from_millis(1500));
        wait_for_state(&client, SessionState::Disconnected, LIMIT).await;
        let thief = Client::connect(
            &server().await,
            ConnectOptions {
                session: Some(client.session_credentials()),
                ..ConnectOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(thief.session_id(), client.session_id());
        thief.close().await.unwrap();
        assert_eq!(thief.state(), SessionState::Closed);

        wait_for_state(&client, SessionState::Expired, LIMIT).await;
        assert!(matches!(watch.await, Err(Error::SessionExpired)));
        assert!(matches!(
            client.exists("/").await,
            Err(Error::SessionExpired)
        ));
        assert!(matches!(
            client.create("/x", b"", CreateMode::Persistent).await,
            Err(Error::SessionExpired)
        ));
        // The ephemeral went with the session; a new client works.
        let fresh = connect().await;
        assert!(fresh.exists(&format!("{root}/e")).await.unwrap().is_none());
    })
    .await;
}

#[tokio::test]
async fn losing_the_connection_for_longer_than_the_timeout_expires_the_session() {
    within(LIMIT, async {
        let (client, root) = sandbox_with("expire-local", options(1_000)).await;
        client
            .create("/e", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        let mut states = client.state_watcher();
        client.debug_drop_connection(Duration::from_secs(60));
        states
            .wait_for(|s| *s == SessionState::Disconnected)
            .await
            .unwrap();
        wait_for_state(&client, SessionState::Expired, LIMIT).await;
        assert!(matches!(
            client.get_data("/e").await,
            Err(Error::SessionExpired)
        ));
        // The server expires it too, for want of pings, and deletes the ephemeral.
        let other = connect().await;
        let path = format!("{root}/e");
        let mut gone = false;
        for _ in 0..100 {
            if other.exists(&path).await.unwrap().is_none() {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(gone, "the server never expired the session");
    })
    .await;
}

#[tokio::test]
async fn connect_tries_the_next_server() {
    within(LIMIT, async {
        // A port nobody listens on, next to the real server: whichever order the shuffle
        // picks, the client ends up on the live one.
        let dead = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().to_string()
        };
        for _ in 0..4 {
            let client = Client::connect(&format!("{dead},{}", server().await), options(2_000))
                .await
                .unwrap();
            client.exists("/").await.unwrap();
        }
        // No live server at all: connect gives up after the connect timeout.
        let err = Client::connect(
            &dead,
            ConnectOptions {
                connect_timeout: Some(Duration::from_millis(500)),
                ..ConnectOptions::default()
            },
        )
        .await
        .unwrap_err();
        assert!(err.is_retryable() || matches!(err, Error::Timeout), "{err}");
    })
    .await;
}

#[tokio::test]
async fn reattaching_with_credentials_keeps_the_session() {
    within(LIMIT, async {
        let first = connect().await;
        let second = Client::connect(
            &server().await,
            ConnectOptions {
                session: Some(first.session_credentials()),
                ..ConnectOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(second.session_id(), first.session_id());
        second.close().await.unwrap();

        // A wrong password is refused: the session counts as expired.
        let mut credentials = first.session_credentials();
        credentials.password = paddock_client::Bytes::from_static(&[7; 16]);
        let err = Client::connect(
            &server().await,
            ConnectOptions {
                session: Some(credentials),
                ..ConnectOptions::default()
            },
        )
        .await
        .unwrap_err();
        assert!(matches!(err, Error::SessionExpired), "{err}");
    })
    .await;
}

#[tokio::test]
async fn auth_failure_ends_the_session() {
    within(LIMIT, async {
        let client = connect().await;
        let err = client.add_auth("no-such-scheme", b"x").await.unwrap_err();
        assert!(matches!(err, Error::AuthFailed), "{err}");
        wait_for_state(&client, SessionState::AuthFailed, LIMIT).await;
        assert!(matches!(client.exists("/").await, Err(Error::AuthFailed)));

        let err = Client::connect(
            &server().await,
            ConnectOptions {
                auth: vec![("no-such-scheme".into(), b"x".to_vec())],
                ..ConnectOptions::default()
            },
        )
        .await
        .unwrap_err();
        assert!(matches!(err, Error::AuthFailed), "{err}");

        // Good credentials given up front are in place when connect returns.
        let client = crate::support::connect_with(ConnectOptions {
            auth: vec![("digest".into(), b"bob:pw".to_vec())],
            ..ConnectOptions::default()
        })
        .await;
        let who = client.who_am_i().await.unwrap();
        assert!(who.iter().any(|i| i.user == "bob"), "{who:?}");
    })
    .await;
}

#[tokio::test]
async fn close_is_idempotent_and_final() {
    within(LIMIT, async {
        let client = connect().await;
        let clone = client.clone();
        client.close().await.unwrap();
        clone.close().await.unwrap();
        assert_eq!(clone.state(), SessionState::Closed);
        assert!(matches!(clone.get_children("/").await, Err(Error::Closed)));
    })
    .await;
}

#[tokio::test]
async fn dropping_every_handle_closes_the_session() {
    within(LIMIT, async {
        let (client, root) = sandbox_with("drop", options(10_000)).await;
        client
            .create("/e", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        drop(client);
        let other = connect().await;
        let path = format!("{root}/e");
        let mut gone = false;
        // Far shorter than the 10 s session timeout: the session was closed, not expired.
        for _ in 0..40 {
            if other.exists(&path).await.unwrap().is_none() {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone);
    })
    .await;
}

//! Session handshakes at the edges: a client ahead of the server, a wrong password,
//! reattaching.

use paddock_wire::{ConnectRequest, ErrorCode, Request, WatchedPathRequest};

use crate::support::{paddock, RawClient};

#[test]
fn a_client_that_has_seen_a_newer_zxid_is_refused() {
    let server = paddock("");
    let ahead = ConnectRequest {
        last_zxid_seen: 1 << 40,
        ..RawClient::new_session()
    };
    // ZooKeeper closes such a connection without a reply, so the client moves on to a
    // server that is caught up.
    assert!(RawClient::handshake(server.addr, &ahead).is_none());
}

#[test]
fn reattaching_needs_the_sessions_password() {
    let server = paddock("");
    let (mut first, session) =
        RawClient::handshake(server.addr, &RawClient::new_session()).expect("handshake");
    assert!(session.timeout > 0);
    assert_eq!(session.passwd.len(), 16);
    let (header, _) = first.call(
        1,
        &Request::Exists(WatchedPathRequest {
            path: "/".into(),
            watch: false,
        }),
    );
    assert_eq!(header.err, ErrorCode::Ok);

    let mut wrong = session.passwd.to_vec();
    wrong[0] ^= 1;
    let (_, refused) = RawClient::handshake(
        server.addr,
        &ConnectRequest {
            session_id: session.session_id,
            passwd: wrong.into(),
            ..RawClient::new_session()
        },
    )
    .expect("a refusal is an answer");
    assert_eq!(
        refused.timeout, 0,
        "wrong password: ZooKeeper's timeout-0 refusal"
    );
    assert_eq!(refused.session_id, 0);

    let (_, again) = RawClient::handshake(
        server.addr,
        &ConnectRequest {
            session_id: session.session_id,
            passwd: session.passwd.clone(),
            ..RawClient::new_session()
        },
    )
    .expect("handshake");
    assert_eq!(again.session_id, session.session_id);
    assert_eq!(again.timeout, session.timeout);
    // The first connection of the session is closed: the session moved.
    assert!(crate::support::read_frame(&mut first.stream).is_none());
}

#[test]
fn session_timeouts_are_clamped_to_the_configured_range() {
    // tickTime=500: the defaults are 2 and 20 ticks.
    let server = paddock("");
    for (asked, granted) in [(1, 1000), (5000, 5000), (600_000, 10_000)] {
        let (_, response) = RawClient::handshake(
            server.addr,
            &ConnectRequest {
                timeout: asked,
                ..RawClient::new_session()
            },
        )
        .expect("handshake");
        assert_eq!(response.timeout, granted, "asked for {asked} ms");
    }
}

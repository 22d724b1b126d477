//! `reconfig` is answered ReconfigDisabled at once, as README promises and as a default
//! ZooKeeper 3.8 (reconfigEnabled=false) answers it: no txn is written for it.

use std::time::Duration;

use paddock_wire::{ErrorCode, ReconfigRequest, Request};

use crate::support::{eventually, four_letter, paddock, zookeeper, RawClient, Server};

/// The reconfig's error, and the server's last zxid before and after it.
fn reconfig(server: &Server) -> (ErrorCode, String, String) {
    let zxid = || {
        four_letter(server.addr, "srvr")
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix("Zxid: ").map(str::to_owned))
            .unwrap_or_default()
    };
    // ZooKeeper answers ruok a moment before it takes sessions.
    let mut client = eventually(Duration::from_secs(30), || {
        RawClient::try_connect(server.addr)
    })
    .unwrap_or_else(|| panic!("no session from {} within 30 s", server.addr));
    let before = zxid();
    let request = Request::Reconfig(ReconfigRequest {
        joining_servers: "server.9=127.0.0.1:1:2".into(),
        leaving_servers: String::new(),
        new_members: String::new(),
        cur_config_id: -1,
    });
    let (header, _) = client.call(1, &request);
    (header.err, before, zxid())
}

#[test]
fn reconfig_is_disabled_without_a_txn_as_in_zookeeper() {
    let paddock = paddock("");
    let (err, before, after) = reconfig(&paddock);
    assert_eq!(err, ErrorCode::ReconfigDisabled);
    assert!(!before.is_empty(), "srvr has no Zxid");
    assert_eq!(before, after, "reconfig wrote a txn");
    let zookeeper = zookeeper("");
    // (ZooKeeper's own zxid is not compared: its session's txn may land in between.)
    assert_eq!(reconfig(&zookeeper).0, ErrorCode::ReconfigDisabled);
}

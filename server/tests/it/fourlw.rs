//! Four-letter words on the client port, with ZooKeeper's whitelist behaviour.

use crate::support::{four_letter, paddock};

#[test]
fn four_letter_words_answer_in_zookeepers_formats() {
    let server = paddock("");
    let answer = |cmd| four_letter(server.addr, cmd).unwrap_or_default();
    assert_eq!(answer("ruok"), "imok");
    assert_eq!(answer("isro"), "rw");
    let srvr = answer("srvr");
    assert!(
        srvr.starts_with("Zookeeper version: 3.8.0-paddock"),
        "{srvr}"
    );
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
    assert!(srvr.contains("Node count: 4"), "{srvr}");
    let mntr = answer("mntr");
    for key in [
        "zk_server_state\tstandalone",
        "zk_znode_count\t4",
        "zk_watch_count\t0",
        "zk_ephemerals_count\t0",
        "zk_outstanding_requests\t0",
        "zk_avg_latency\t",
        "zk_approximate_data_size\t",
    ] {
        assert!(mntr.contains(key), "{key} missing from:\n{mntr}");
    }
    assert!(answer("envi").contains("zookeeper.version=3.8.0-paddock"));
    // Requests are counted.
    let mut client = crate::support::RawClient::connect(server.addr);
    let exists = paddock_wire::Request::Exists(paddock_wire::WatchedPathRequest {
        path: "/".into(),
        watch: false,
    });
    client.call(1, &exists);
    let srvr = answer("srvr");
    assert!(
        srvr.contains("Received: 1\n") && srvr.contains("Sent: 1\n"),
        "{srvr}"
    );
    assert!(answer("wchs").contains("connections watching"));
    assert!(answer("conf").contains(&format!("clientPort={}", server.addr.port())));
}

#[test]
fn the_whitelist_defaults_to_srvr_alone() {
    let server = paddock("4lw.commands.whitelist=srvr");
    assert!(four_letter(server.addr, "srvr")
        .unwrap_or_default()
        .contains("Mode:"));
    assert_eq!(
        four_letter(server.addr, "mntr").unwrap_or_default(),
        "mntr is not executed because it is not in the whitelist.\n"
    );
}

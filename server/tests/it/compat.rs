//! What real clients found different from ZooKeeper 3.8, each run against both
//! servers.

use crate::kazoo::{assert_has, same_as_zookeeper};
use crate::support::{four_letter, kazoo, paddock, zookeeper, zookeeper_quorum_of_one, Ensemble};

#[test]
fn null_data_reads_back_as_null() {
    // snapCount=2: the restart below restores from a snapshot and the log after it.
    let mut ours = paddock("snapCount=2");
    let theirs = zookeeper("");
    let transcript = same_as_zookeeper(&ours, &theirs, "null_data");
    assert_has(&transcript, "create-null None dataLength 0");
    assert_has(&transcript, "set-empty b'' dataLength 0");
    assert_has(&transcript, "set-null None");
    assert_has(&transcript, "create-empty b''");
    ours.restart();
    assert_has(&kazoo(&ours, "null_data_read"), "null-after-restart None");
}

#[test]
fn addauth_ip_is_accepted() {
    let ours = paddock("");
    let theirs = zookeeper("");
    let transcript = same_as_zookeeper(&ours, &theirs, "addauth_ip");
    assert_has(&transcript, "addauth-ip ok True");
    assert_has(&transcript, "after-addauth-ip ok True");
    assert_has(&transcript, "addauth-unknown-scheme error AuthFailedError");
}

#[test]
fn replies_larger_than_jute_maxbuffer_are_served() {
    // jute.maxbuffer bounds what a server accepts, not what it answers: ZooKeeper
    // sends kazoo a getChildren reply of 1.8 MB.
    let ours = paddock("");
    let theirs = zookeeper("");
    let transcript = same_as_zookeeper(&ours, &theirs, "big_children");
    assert_has(&transcript, "children 49000 reply-bytes 1764004");
}

/// `host:port` numbers differ between runs; the shape must not.
fn without_ports(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|line| {
            let mut out = String::new();
            let mut digits = false;
            for (i, c) in line.char_indices() {
                let after_colon = i > 0 && line.as_bytes()[i - 1] == b':';
                if c.is_ascii_digit() && (digits || after_colon) {
                    if !digits {
                        out.push_str("PORT");
                    }
                    digits = true;
                } else {
                    digits = false;
                    out.push(c);
                }
            }
            out
        })
        .collect()
}

#[test]
fn zookeeper_config_lists_the_ensemble() {
    let ours = Ensemble::start(1, 0);
    let theirs = zookeeper_quorum_of_one();
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| kazoo(&theirs, "config"));
        (
            kazoo(&ours.servers[0], "config"),
            b.join().expect("zookeeper run"),
        )
    });
    assert_eq!(without_ports(&a), without_ports(&b));
    assert_has(&a, "config version=0");
    assert_has(&a, "config-dataLength-matches True");
    // `conf` in an ensemble: ZooKeeper's keys in its order, then the membership.
    let conf = |server| {
        let text = four_letter(server, "conf").unwrap_or_default();
        let lines: Vec<String> = text
            .lines()
            .map(|line| match line.split_once('=') {
                Some((key, _)) if !key.starts_with("server.") && key != "version" => {
                    format!("{key}=")
                }
                _ => line.to_owned(),
            })
            .collect();
        without_ports(&lines)
    };
    assert_eq!(conf(ours.servers[0].addr), conf(theirs.addr));
    drop(ours);

    // With an observer, read on the observer.
    let ensemble = Ensemble::start(1, 1);
    let lines = without_ports(&kazoo(&ensemble.servers[1], "config"));
    assert_eq!(
        lines,
        [
            "config server.1=127.0.0.1:PORT:PORT:participant",
            "config server.2=127.0.0.1:PORT:PORT:observer",
            "config version=0",
            "config-dataLength-matches True",
        ]
    );
}

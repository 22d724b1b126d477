//! What real clients found different from ZooKeeper 3.8, each run against both
//! servers.

use crate::kazoo::{assert_has, same_as_zookeeper};
use crate::support::{kazoo, paddock, zookeeper};

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

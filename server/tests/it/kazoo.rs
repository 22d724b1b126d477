//! kazoo, a real ZooKeeper client, against Paddock — and the same scenarios against
//! Apache ZooKeeper 3.8, whose transcripts Paddock's must equal (a differential test).
//! The scenarios are in `tests/kazoo/scenarios.py`.

use crate::support::{kazoo, paddock, zookeeper, Server};

/// Runs `scenario` on both servers at once and returns Paddock's transcript after
/// checking it equals ZooKeeper's.
pub fn same_as_zookeeper(ours: &Server, theirs: &Server, scenario: &str) -> Vec<String> {
    let (ours, theirs) = std::thread::scope(|s| {
        let theirs = s.spawn(|| kazoo(theirs, scenario));
        let ours = kazoo(ours, scenario);
        (ours, theirs.join().expect("zookeeper run"))
    });
    assert_eq!(
        ours, theirs,
        "scenario {scenario}: Paddock (left) differs from Apache ZooKeeper (right)"
    );
    ours
}

pub fn assert_has(transcript: &[String], line: &str) {
    assert!(
        transcript.iter().any(|l| l == line),
        "missing {line:?} in:\n{}",
        transcript.join("\n")
    );
}

#[test]
fn kazoo_scenarios_match_apache_zookeeper() {
    let ours = paddock("");
    let theirs = zookeeper("");

    let crud = same_as_zookeeper(&ours, &theirs, "crud");
    assert_has(&crud, "create ok /scenario/a");
    assert_has(&crud, "create-again error NodeExistsError");
    assert_has(&crud, "delete-not-empty error NotEmptyError");
    assert_has(&crud, "set-bad-version error BadVersionError");
    assert_has(&crud, "delete-zookeeper error BadArgumentsError");

    let nodes = same_as_zookeeper(&ours, &theirs, "ephemeral_sequential");
    assert_has(
        &nodes,
        "sequential ['seq-0000000000', 'seq-0000000001', 'seq-0000000002']",
    );
    assert_has(
        &nodes,
        "child-of-ephemeral error NoChildrenForEphemeralsError",
    );
    // Closing the session removed its ephemerals, and only those.
    assert_has(
        &nodes,
        "after-close ['seq-0000000000', 'seq-0000000002', 'seq-0000000003']",
    );

    // One-shot watches fire once, in order, and before a read that sees the change.
    let watches = same_as_zookeeper(&ours, &theirs, "watches");
    assert_has(&watches, "read-after-event b'2' events-before-read 2");
    let events: Vec<&String> = watches.iter().filter(|l| l.starts_with("event ")).collect();
    assert_eq!(
        events,
        [
            "event exists:CREATED:/scenario/w",
            "event data:CHANGED:/scenario/w",
            "event children:CHILD:/scenario",
            "event data2:DELETED:/scenario/w",
        ]
    );

    let multi = same_as_zookeeper(&ours, &theirs, "multi");
    assert_has(
        &multi,
        "multi-fail ['RolledBackError', 'BadVersionError', 'RuntimeInconsistency']",
    );
    assert_has(&multi, "nothing-applied True True");

    let acl = same_as_zookeeper(&ours, &theirs, "acl");
    assert_has(&acl, "read-unauthenticated error NoAuthError");
    assert_has(&acl, "read-alice ok b's'");
    assert_has(&acl, "read-bob error NoAuthError");
    assert_has(&acl, "creator-acl-unauthenticated error InvalidACLError");

    let reattach = same_as_zookeeper(&ours, &theirs, "reattach");
    assert_has(&reattach, "same-session True");
    assert_has(&reattach, "ephemeral-kept True");
    // A wrong password expires the attempt; kazoo then starts a new session.
    assert_has(&reattach, "wrong-password connected False");

    let expiry = same_as_zookeeper(&ours, &theirs, "expiry");
    assert_has(&expiry, "ephemeral-removed-by-expiry True");

    // kazoo's Lock recipe: the second client stays out until the holder releases or
    // its session expires.
    let lock = same_as_zookeeper(&ours, &theirs, "lock");
    for line in [
        "a-acquires True",
        "b-blocked False",
        "b-acquires-after-release True",
        "a-blocked False",
        "a-acquires-after-expiry True",
    ] {
        assert_has(&lock, line);
    }
}

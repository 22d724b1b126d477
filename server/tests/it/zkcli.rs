//! Apache ZooKeeper's own shell, `zkCli.sh`, against Paddock: the same session of
//! commands must print the same thing as against ZooKeeper, apart from the lines that
//! show zxids, times and session ids.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{eventually, paddock, run_bounded, zookeeper, Server, ZOOKEEPER_HOME};

const SESSION: &str = "\
create /zkc hello
create /zkc/child c
create -e /zkc/eph e
create -s /zkc/seq- s
ls /zkc
get /zkc
set /zkc world
get -s /zkc
stat /zkc/child
getAcl /zkc
create /zkc x
delete /zkc
delete /zkc/child
addauth digest alice:secret
create /zkc/secure s digest:alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=:cdrwa
getAcl /zkc/secure
getAllChildrenNumber /zkc
getEphemerals /zkc
deleteall /zkc
ls /
quit
";

/// Lines that depend on the server's zxid numbering, the clock or the session.
fn comparable(line: &str) -> bool {
    let varying = [
        "cZxid",
        "mZxid",
        "pZxid",
        "ctime",
        "mtime",
        "ephemeralOwner",
        "SLF4J",
        "WATCHER",
        "WatchedEvent",
        "JLine",
        "Connecting to",
    ];
    !line.trim().is_empty() && !varying.iter().any(|v| line.contains(v))
}

fn zkcli(server: &Server) -> Vec<String> {
    assert!(
        crate::support::zookeeper_installed(),
        "zkCli.sh is not installed: run scripts/test.sh, which installs it \
         (or apt-get install zookeeper)"
    );
    let mut command = Command::new(Path::new(ZOOKEEPER_HOME).join("bin/zkCli.sh"));
    command.arg("-server").arg(server.hosts());
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("zkCli.sh");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(SESSION.as_bytes())
        .expect("commands");
    let pid = child.id();
    let output = std::thread::scope(|s| {
        let waiter = s.spawn(|| child.wait_with_output());
        if eventually(Duration::from_secs(60), || {
            waiter.is_finished().then_some(())
        })
        .is_none()
        {
            let _ = run_bounded(
                Command::new("kill").arg("-9").arg(pid.to_string()),
                Duration::from_secs(5),
            );
            panic!("zkCli.sh ran longer than 60 s");
        }
        waiter.join().expect("join").expect("output")
    });
    // zkCli prints results on stdout and "Created …" and errors on stderr.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| comparable(l))
        .map(str::to_owned)
        .collect()
}

#[test]
fn zkcli_session_matches_apache_zookeeper() {
    let ours = paddock("");
    let theirs = zookeeper("");
    let (ours, theirs) = std::thread::scope(|s| {
        let theirs_run = s.spawn(|| zkcli(&theirs));
        (zkcli(&ours), theirs_run.join().expect("zookeeper run"))
    });
    assert_eq!(ours, theirs, "Paddock (left) and ZooKeeper (right) differ");
    let text = ours.join("\n");
    for expected in [
        "Created /zkc",
        "Created /zkc/seq-0000000002",
        "[child, eph, seq-0000000002]",
        "hello",
        "world",
        "dataVersion = 1",
        "Node already exists: /zkc",
        "Node not empty: /zkc",
        "'digest,'alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=",
        "[zookeeper]",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

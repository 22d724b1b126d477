//! `paddock-loadgen` as a user meets it when nothing listens at the addresses given: it
//! fails at once naming every address tried, and prints no table header first; and
//! `merge` given nothing it can read.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::LOADGEN;

/// Two loopback ports nobody listens on (bound, noted, released).
fn closed_ports() -> Vec<u16> {
    let held: Vec<TcpListener> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

#[test]
fn refused_everywhere_fails_at_once_with_the_addresses_tried() {
    let ports = closed_ports();
    let servers = format!("127.0.0.1:{},127.0.0.1:{}", ports[0], ports[1]);
    // A session timeout of ten minutes: waiting it out would overrun the bound below.
    let mut child = Command::new(LOADGEN)
        .args([
            "--servers",
            &servers,
            "--duration",
            "1",
            "--session-timeout",
            "600",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paddock-loadgen");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("paddock-loadgen still waits for refused servers after 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        !stdout.contains("totalReq"),
        "a header before connecting: {stdout}"
    );
    for port in ports {
        assert!(
            stderr.contains(&format!("127.0.0.1:{port} (")),
            "address not named: {stderr}"
        );
    }
    assert!(stderr.contains("refused"), "{stderr}");
}

#[test]
fn merge_refuses_a_file_that_is_not_a_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("not-a-log.txt");
    std::fs::write(&path, "hello\n").expect("write");
    let output = Command::new(LOADGEN)
        .arg("merge")
        .arg(&path)
        .output()
        .expect("paddock-loadgen merge");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not a paddock-loadgen interval log"),
        "{stderr}"
    );
}

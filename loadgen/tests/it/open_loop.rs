//! `--rate`: the open loop sends at the rate asked for, however fast the servers
//! answer, and says so in the summary.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{wait_bounded, Ensemble, LOADGEN};

#[test]
fn an_open_loop_run_sends_no_more_than_its_rate() {
    let ensemble = Ensemble::start();
    let (rate, seconds, conns) = (40.0, 3.0, 4);
    let child = Command::new(LOADGEN)
        .args([
            "--servers",
            &ensemble.hosts(),
            "--scenario",
            "set-data",
            "--conns",
            &conns.to_string(),
            "--rate",
            &rate.to_string(),
            "--duration",
            &seconds.to_string(),
            "--root",
            "/loadgen-open-loop",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paddock-loadgen");
    let output = wait_bounded(child, Duration::from_secs(120), "an open-loop run");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).expect("a JSON summary");
    assert_eq!(summary["mode"], "open-loop", "{summary}");
    assert_eq!(summary["rate"], rate, "{summary}");
    let sent = summary["total_req"].as_u64().expect("total_req");
    // Only the slots that fall inside the measured seconds can be counted, whatever the
    // servers' speed: a closed loop on the same ensemble does thousands.
    let most = (rate * seconds) as u64 + conns;
    assert!(
        sent > 0 && sent <= most,
        "{sent} requests, at most {most}: {summary}"
    );
    assert_eq!(summary["ops"]["setData"]["count"].as_u64(), Some(sent));
}

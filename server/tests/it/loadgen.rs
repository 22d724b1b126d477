//! A short smoke run of each loadgen scenario, against Paddock and against Apache
//! ZooKeeper: no failures, every watch event received. Timings are not asserted here;
//! they belong to the benchmarks (BENCHMARKS.md).

use clap::Parser;
use paddock_loadgen::{run, Plan};

use crate::support::{paddock, zookeeper, Server};

fn smoke(server: &Server, scenario: &str, extra: &[&str]) -> paddock_loadgen::Summary {
    let mut args = vec![
        "paddock-loadgen",
        "--scenario",
        scenario,
        "--conns",
        "8",
        "--paths-per-conn",
        "3",
        "--duration",
        "1.5",
        "--interval",
        "0.5",
    ];
    args.extend_from_slice(extra);
    let hosts = server.hosts();
    args.extend_from_slice(&["--servers", &hosts]);
    let plan = Plan::parse_from(args);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let outcome = runtime
        .block_on(run::run(plan, std::future::pending(), |_| {}))
        .expect("the run completes");
    assert!(!outcome.rows.is_empty(), "no live rows");
    // The last live row and the summary count the same requests.
    let last = outcome
        .rows
        .last()
        .map(|row| (row.total_req, row.fail_total));
    let summary = &outcome.summary;
    assert_eq!(
        last,
        Some((summary.total_req, summary.fail_total)),
        "{scenario}: last row vs summary"
    );
    // The summary names the scenario as the flag does.
    assert!(
        summary.text().starts_with(&format!("summary: {scenario} ")),
        "{}",
        summary.text()
    );
    outcome.summary
}

fn check(summary: &paddock_loadgen::Summary, on: &str) {
    assert!(summary.total_req > 0, "{on}: no requests: {summary:?}");
    assert_eq!(summary.fail_total, 0, "{on}: failures: {summary:?}");
    if let Some(events) = &summary.events {
        assert!(events.received > 0, "{on}: no events: {summary:?}");
        assert_eq!(events.missed, 0, "{on}: missed events: {summary:?}");
    }
}

#[test]
fn every_scenario_runs_cleanly_against_paddock_and_zookeeper() {
    let ours = paddock("");
    let theirs = zookeeper("");
    for server in [&ours, &theirs] {
        let on = if std::ptr::eq(server, &ours) {
            "paddock"
        } else {
            "zookeeper"
        };
        check(&smoke(server, "create-delete", &[]), on);
        check(&smoke(server, "set-data", &["--data-size", "1024"]), on);
        check(&smoke(server, "pubsub", &["--get-after-notify"]), on);
    }
}

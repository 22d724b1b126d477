//! Several client machines as one: three `paddock-loadgen` processes on loopback
//! against one Paddock ensemble, with distinct --client-id, one --start-at and a
//! --hist-log each, then `paddock-loadgen merge`. The merged totals are the sums of
//! the parts, and its percentiles those of all the processes' samples together.

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use paddock_loadgen::histlog;
use paddock_loadgen::stats::{add, histogram, Op, Percentiles};
use serde_json::Value;

use crate::support::{wait_bounded, Ensemble, LOADGEN};

const PROCESSES: usize = 3;
const ROOT: &str = "/loadgen-multi";

fn count(summary: &Value, pointer: &str) -> u64 {
    summary
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no {pointer} in {summary}"))
}

#[test]
fn three_processes_merge_into_the_report_of_their_combined_samples() {
    let ensemble = Ensemble::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    // Lead time for three processes to connect on a loaded machine.
    let start_at = format!("{:.3}", now + 20.0);
    let pids = ensemble
        .pids()
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let logs: Vec<_> = (0..PROCESSES)
        .map(|p| dir.path().join(format!("p{p}.hlog")))
        .collect();
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let mut command = Command::new(LOADGEN);
            command.args([
                "--servers",
                &ensemble.hosts(),
                "--scenario",
                "pubsub",
                "--get-after-notify",
                "--conns",
                "2",
                "--paths-per-conn",
                "2",
                "--subs-per-path",
                "2",
                "--duration",
                "3",
                "--interval",
                "0.5",
                "--root",
                ROOT,
                "--client-id",
                &format!("p{p}"),
                "--start-at",
                &start_at,
                "--json",
            ]);
            command.arg("--hist-log").arg(&logs[p]);
            // One process samples the servers, as the one on their machine would.
            if p == 0 {
                command.args(["--server-pids", &pids]);
            } else {
                command.arg("--no-server-stats");
            }
            command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("paddock-loadgen")
        })
        .collect();
    let parts: Vec<Value> = children
        .into_iter()
        .enumerate()
        .map(|(p, child)| {
            let output = wait_bounded(child, Duration::from_secs(180), "a loadgen process");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "process {p} failed: {stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            serde_json::from_str(stdout.trim()).expect("a JSON summary")
        })
        .collect();
    for part in &parts {
        // Same root, distinct ids: no process touched another's nodes.
        assert_eq!(count(part, "/fail_total"), 0, "{part}");
        assert!(count(part, "/total_req") > 0, "{part}");
    }

    let merged = Command::new(LOADGEN)
        .arg("merge")
        .args(&logs)
        .arg("--json")
        .output()
        .expect("paddock-loadgen merge");
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let merged: Value = serde_json::from_slice(&merged.stdout).expect("merged JSON");

    // Totals: the sums of the parts.
    for pointer in [
        "/total_req",
        "/fail_total",
        "/conns",
        "/total_conns",
        "/events/received",
        "/events/expected",
        "/subscriber_reads/count",
        "/ops/getData/count",
        "/ops/dataStat/count",
    ] {
        let sum: u64 = parts.iter().map(|p| count(p, pointer)).sum();
        assert_eq!(count(&merged, pointer), sum, "{pointer}");
    }
    assert_eq!(
        merged["client_ids"],
        serde_json::json!(["p0", "p1", "p2"]),
        "{merged}"
    );

    // Percentiles: those of every process's samples in one histogram.
    let recordings: Vec<_> = logs
        .iter()
        .map(|path| histlog::read(path).expect("a readable log"))
        .collect();
    for op in [Op::Create, Op::Event, Op::Data, Op::Exists] {
        let mut all = histogram();
        let mut failures = 0;
        for recording in &recordings {
            for interval in &recording.intervals {
                add(&mut all, interval.hist(op));
                failures += interval.failures(op);
            }
        }
        let expected = serde_json::to_value(Percentiles::of(&all, failures)).expect("json");
        assert_eq!(merged["ops"][op.name()], expected, "{}", op.name());
    }
    let requests = &merged["latency"];
    assert_eq!(
        requests, &merged["ops"]["create"],
        "pub/sub's requests are its publishes"
    );

    // The servers' resources, from /proc, by the one process that sampled them.
    let usage = merged["server_resources"].as_array().expect("resources");
    assert_eq!(usage.len(), 3, "{merged}");
    for server in usage {
        assert_eq!(server["source"], "proc");
        assert!(
            server["rss_mib_max"].as_f64().is_some_and(|rss| rss > 0.0),
            "{server}"
        );
        assert!(server["cpu_percent_mean"].as_f64().is_some(), "{server}");
    }

    // The last process out removed the shared root.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let left = runtime.block_on(async {
        let client = paddock_client::Client::connect(
            &ensemble.hosts(),
            paddock_client::ConnectOptions::default(),
        )
        .await
        .expect("connect");
        let left = client.exists(ROOT).await.expect("exists");
        let _ = client.close().await;
        left
    });
    assert!(left.is_none(), "{ROOT} was left behind");
}

//! A real Prometheus server (Debian's `prometheus`) scrapes a three-server Paddock
//! ensemble's `/metrics`, and its query API returns the series ZooKeeper's dashboards
//! use.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use paddock_wire::{Acl, CreateRequest, Data, Request};
use serde_json::Value;

use crate::support::{eventually, free_port, free_ports, http_get, Ensemble, RawClient};

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// A Prometheus server with its own config and storage in a temporary directory; killed
/// and removed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` every second.
    fn start(targets: &[SocketAddr]) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: paddock\n    static_configs:\n      \
             - targets: [{}]\n",
            targets.join(", ")
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).expect("config");
        let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
        let child = Command::new(PROMETHEUS)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let mut prometheus = Prometheus { child, addr, dir };
        let ready = eventually(Duration::from_secs(60), || {
            if !matches!(prometheus.child.try_wait(), Ok(None)) {
                panic!("prometheus exited: {}", prometheus.log());
            }
            (http_get(addr, "/-/ready").map(|(s, _)| s) == Some(200)).then_some(())
        });
        assert!(
            ready.is_some(),
            "prometheus not ready: {}",
            prometheus.log()
        );
        prometheus
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query's result vector: each series' labels and value.
    fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let path = format!("/api/v1/query?query={}", percent_encode(query));
        let Some((200, body)) = http_get(self.addr, &path) else {
            return Vec::new();
        };
        let answer: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        answer["data"]["result"]
            .as_array()
            .map(|series| {
                series
                    .iter()
                    .filter_map(|s| {
                        let value = s["value"][1].as_str()?.parse().ok()?;
                        Some((s["metric"].clone(), value))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits (bounded) until `query` returns what `check` accepts; that result.
    fn wait_for(&self, query: &str, check: impl Fn(&[(Value, f64)]) -> bool) -> Vec<(Value, f64)> {
        let found = eventually(Duration::from_secs(90), || {
            let result = self.query(query);
            check(&result).then_some(result)
        });
        found.unwrap_or_else(|| {
            panic!(
                "{query} gave {:?}; prometheus log:\n{}",
                self.query(query),
                self.log()
            )
        })
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn prometheus_scrapes_an_ensemble() {
    if !Path::new(PROMETHEUS).exists() {
        // scripts/test.sh installs it; say so rather than pass in silence.
        panic!("{PROMETHEUS} is missing: run scripts/test.sh (apt-get install prometheus)");
    }
    let admin_ports = free_ports(3);
    let ensemble = Ensemble::start_each(3, 0, |i| {
        format!(
            "admin.serverAddress=127.0.0.1\nadmin.serverPort={}",
            admin_ports[i]
        )
    });
    let targets: Vec<SocketAddr> = admin_ports
        .iter()
        .map(|port| ([127, 0, 0, 1], *port).into())
        .collect();
    let mut client = RawClient::connect(ensemble.servers[0].addr);
    for i in 0..20 {
        client.call(
            i + 1,
            &Request::Create(CreateRequest {
                path: format!("/scraped-{i}"),
                data: Data::from(&b"d"[..]),
                acl: Acl::open_unsafe(),
                flags: 0,
            }),
        );
    }
    let prometheus = Prometheus::start(&targets);

    let up = prometheus.wait_for("up{job=\"paddock\"}", |r| {
        r.len() == 3 && r.iter().all(|(_, v)| *v == 1.0)
    });
    assert_eq!(up.len(), 3);
    // Every replica holds the 4 built-in znodes and the 20 created.
    prometheus.wait_for("znode_count", |r| {
        r.len() == 3 && r.iter().all(|(_, v)| *v == 24.0)
    });
    prometheus.wait_for("quorum_size", |r| {
        r.len() == 3 && r.iter().all(|(_, v)| *v == 3.0)
    });
    // The leader alone reports its synced followers.
    prometheus.wait_for("synced_followers", |r| r.len() == 1 && r[0].1 == 2.0);
    prometheus.wait_for("count(paddock_raft_term > 0)", |r| {
        r.len() == 1 && r[0].1 == 3.0
    });
    // Every replica fsynced the writes; the writes' latency is a histogram whose
    // quantiles PromQL derives.
    prometheus.wait_for("count(fsynctime_count > 0)", |r| {
        r.len() == 1 && r[0].1 == 3.0
    });
    prometheus.wait_for(
        "sum(paddock_request_latency_ms_count{op=\"create\"})",
        |r| r.len() == 1 && r[0].1 == 20.0,
    );
    prometheus.wait_for(
        "histogram_quantile(0.99, sum by (le) (paddock_request_latency_ms_bucket{op=\"create\"}))",
        |r| r.len() == 1 && r[0].1 > 0.0,
    );
    prometheus.wait_for("min(process_resident_memory_bytes)", |r| {
        r.len() == 1 && r[0].1 > 1e6
    });
    // What a scrape costs, as Prometheus saw it (printed with --nocapture).
    for query in [
        "max(scrape_duration_seconds{job=\"paddock\"})",
        "max(scrape_samples_scraped{job=\"paddock\"})",
    ] {
        let result = prometheus.wait_for(query, |r| r.len() == 1);
        eprintln!("{query} = {}", result[0].1);
    }
}

//! The servers' resources while the load runs, as the JRaft benchmark reports them:
//! CPU (percent of one core) and resident memory.
//!
//! Two sources today, each producing the same [`Sample`]:
//! - `/proc`, for server processes on this machine (`--server-pids`): `utime + stime`
//!   from `/proc/PID/stat` between two samples, and `VmRSS` from `/proc/PID/status`.
//! - `mntr`, the four-letter word, from every server of `--servers`. Neither ZooKeeper's
//!   nor Paddock's mntr reports process CPU or memory, so its samples carry the load
//!   figures it has instead ([`MNTR_KEYS`]), and the report says CPU/RSS are absent.
//!
//! A metrics endpoint (Prometheus text: `process_cpu_seconds_total`,
//! `process_resident_memory_bytes`) would be a third source filling the same fields.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The mntr figures kept: the size of the servers' state and load, and (ZooKeeper on
/// Unix) open descriptors.
pub const MNTR_KEYS: &[&str] = &[
    "zk_approximate_data_size",
    "zk_znode_count",
    "zk_watch_count",
    "zk_num_alive_connections",
    "zk_outstanding_requests",
    "zk_open_file_descriptor_count",
];

/// How long one mntr exchange may take before the sample is skipped.
const MNTR_TIMEOUT: Duration = Duration::from_secs(2);

/// One reading of one server.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    /// Seconds since measuring started.
    pub t: f64,
    /// `pid N` or `host:port`.
    pub server: String,
    /// `proc` or `mntr`.
    pub source: String,
    /// Percent of one core since the previous sample.
    pub cpu_percent: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub metrics: BTreeMap<String, f64>,
}

/// Where samples come from.
pub enum Source {
    Proc(Vec<u32>),
    Mntr(Vec<String>),
}

/// Takes samples from one source, remembering what a rate needs.
pub struct Sampler {
    source: Source,
    /// Per pid: CPU seconds used and when that was read.
    last_cpu: HashMap<u32, (f64, Instant)>,
    ticks_per_sec: f64,
}

impl Sampler {
    pub fn new(source: Source) -> Sampler {
        Sampler {
            source,
            last_cpu: HashMap::new(),
            ticks_per_sec: rustix::param::clock_ticks_per_second() as f64,
        }
    }

    /// Reads every server now; `t` is stamped on the samples. A server that cannot be
    /// read (gone, or mntr not allowed) is left out of this round.
    pub async fn sample(&mut self, t: f64) -> Vec<Sample> {
        match &self.source {
            Source::Proc(pids) => {
                let pids = pids.clone();
                pids.into_iter()
                    .filter_map(|pid| self.sample_proc(pid, t))
                    .collect()
            }
            Source::Mntr(servers) => {
                let mut out = Vec::new();
                for server in servers {
                    match tokio::time::timeout(MNTR_TIMEOUT, mntr(server)).await {
                        Ok(Ok(text)) => {
                            let metrics = parse_mntr(&text);
                            // A server whose whitelist leaves mntr out answers with a
                            // sentence, not figures: no sample.
                            if metrics.is_empty() {
                                tracing::debug!("mntr from {server}: {}", text.trim());
                                continue;
                            }
                            out.push(Sample {
                                t,
                                server: server.clone(),
                                source: "mntr".into(),
                                cpu_percent: None,
                                rss_bytes: None,
                                metrics,
                            });
                        }
                        Ok(Err(e)) => tracing::debug!("mntr from {server}: {e}"),
                        Err(_) => tracing::debug!("mntr from {server} timed out"),
                    }
                }
                out
            }
        }
    }

    fn sample_proc(&mut self, pid: u32, t: f64) -> Option<Sample> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let cpu = cpu_ticks(&stat)? as f64 / self.ticks_per_sec;
        let now = Instant::now();
        let cpu_percent = self.last_cpu.insert(pid, (cpu, now)).map(|(before, then)| {
            100.0 * (cpu - before) / now.duration_since(then).as_secs_f64().max(1e-9)
        });
        Some(Sample {
            t,
            server: format!("pid {pid}"),
            source: "proc".into(),
            cpu_percent,
            rss_bytes: rss_bytes(&status),
            metrics: BTreeMap::new(),
        })
    }
}

/// `utime + stime` (clock ticks) from a `/proc/PID/stat` line. The command name may
/// hold spaces and parentheses, so fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of stat(5), utime 14 and stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// `VmRSS` from `/proc/PID/status`, in bytes.
fn rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

async fn mntr(server: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(server).await?;
    stream.write_all(b"mntr").await?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await?;
    Ok(text)
}

/// The numeric [`MNTR_KEYS`] of an mntr answer (`key<TAB>value` lines).
fn parse_mntr(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|line| line.split_once('\t'))
        .filter(|(key, _)| MNTR_KEYS.contains(key))
        .filter_map(|(key, value)| Some((key.to_owned(), value.trim().parse().ok()?)))
        .collect()
}

/// One server's resources over the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServerUsage {
    pub server: String,
    pub source: String,
    pub samples: usize,
    pub cpu_percent_mean: Option<f64>,
    pub cpu_percent_max: Option<f64>,
    pub rss_mib_mean: Option<f64>,
    pub rss_mib_max: Option<f64>,
    /// Per metric: mean and max over the samples.
    pub metrics: BTreeMap<String, (f64, f64)>,
}

/// Each server's samples summed up, in order of first appearance.
pub fn summarize(samples: &[Sample]) -> Vec<ServerUsage> {
    let mut order: Vec<(&str, &str)> = Vec::new();
    for s in samples {
        if !order.contains(&(&s.source, &s.server)) {
            order.push((&s.source, &s.server));
        }
    }
    order
        .into_iter()
        .map(|(source, server)| {
            let mine: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.source == source && s.server == server)
                .collect();
            let cpu: Vec<f64> = mine.iter().filter_map(|s| s.cpu_percent).collect();
            let rss: Vec<f64> = mine
                .iter()
                .filter_map(|s| s.rss_bytes)
                .map(|b| b as f64 / (1024.0 * 1024.0))
                .collect();
            let mut metrics = BTreeMap::new();
            for key in mine.iter().flat_map(|s| s.metrics.keys()) {
                if metrics.contains_key(key) {
                    continue;
                }
                let values: Vec<f64> = mine
                    .iter()
                    .filter_map(|s| s.metrics.get(key))
                    .copied()
                    .collect();
                metrics.insert(
                    key.clone(),
                    (mean(&values).unwrap_or(0.0), max(&values).unwrap_or(0.0)),
                );
            }
            ServerUsage {
                server: server.to_owned(),
                source: source.to_owned(),
                samples: mine.len(),
                cpu_percent_mean: mean(&cpu),
                cpu_percent_max: max(&cpu),
                rss_mib_mean: mean(&rss),
                rss_mib_max: max(&rss),
                metrics,
            }
        })
        .collect()
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn max(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::max)
}

/// The summary's table of server resources.
pub fn table(usage: &[ServerUsage]) -> String {
    if usage.is_empty() {
        return "server resources: no samples (--no-server-stats, or the servers' \
                4lw.commands.whitelist leaves out mntr; --server-pids reads /proc instead)\n"
            .into();
    }
    let opt = |v: Option<f64>, d: usize| v.map_or("-".to_owned(), |v| format!("{v:.d$}"));
    let mut out = format!(
        "{:<22} {:>6} {:>8} {:>9} {:>8} {:>12} {:>11}\n",
        "server resources",
        "source",
        "samples",
        "cpu% mean",
        "cpu% max",
        "rss MiB mean",
        "rss MiB max"
    );
    for u in usage {
        out.push_str(&format!(
            "{:<22} {:>6} {:>8} {:>9} {:>8} {:>12} {:>11}\n",
            u.server,
            u.source,
            u.samples,
            opt(u.cpu_percent_mean, 1),
            opt(u.cpu_percent_max, 1),
            opt(u.rss_mib_mean, 1),
            opt(u.rss_mib_max, 1),
        ));
        for (key, (mean, max)) in &u.metrics {
            out.push_str(&format!("    {key}: mean {mean:.0}, max {max:.0}\n"));
        }
    }
    if usage
        .iter()
        .all(|u| u.cpu_percent_mean.is_none() && u.rss_mib_mean.is_none())
    {
        out.push_str("(mntr has no process CPU or memory: give --server-pids for them)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_after_a_name_with_spaces_and_parens() {
        let stat = "4242 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 1500 250 0 0 20 0 4 0";
        assert_eq!(cpu_ticks(stat), Some(1750));
        assert_eq!(
            rss_bytes("Name:\tx\nVmRSS:\t  2048 kB\n"),
            Some(2 * 1024 * 1024)
        );
    }

    #[test]
    fn our_own_process_can_be_sampled() {
        let mut sampler = Sampler::new(Source::Proc(vec![std::process::id()]));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let first = runtime.block_on(sampler.sample(0.0));
        assert_eq!(first.len(), 1);
        assert!(first[0].cpu_percent.is_none(), "a rate needs two readings");
        assert!(first[0].rss_bytes.unwrap_or(0) > 0);
        let second = runtime.block_on(sampler.sample(1.0));
        assert!(second[0].cpu_percent.is_some_and(|c| c >= 0.0));
    }

    #[test]
    fn mntr_keys_are_picked_and_parsed() {
        let text = "zk_version\t3.8.0\nzk_znode_count\t42\nzk_approximate_data_size\t1000\nzk_avg_latency\t0.5\n";
        let metrics = parse_mntr(text);
        assert_eq!(metrics.len(), 2);
        assert_eq!(metrics["zk_znode_count"], 42.0);
    }

    #[tokio::test]
    async fn an_mntr_refused_by_the_whitelist_is_no_sample() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut word = [0u8; 4];
            socket.read_exact(&mut word).await.unwrap();
            socket
                .write_all(b"mntr is not executed because it is not in the whitelist.\n")
                .await
                .unwrap();
        });
        let mut sampler = Sampler::new(Source::Mntr(vec![addr]));
        assert!(sampler.sample(0.0).await.is_empty());
        server.await.unwrap();
    }

    #[test]
    fn usage_is_summed_per_server() {
        let sample = |t, server: &str, cpu, rss| Sample {
            t,
            server: server.into(),
            source: "proc".into(),
            cpu_percent: cpu,
            rss_bytes: rss,
            metrics: BTreeMap::new(),
        };
        let usage = summarize(&[
            sample(0.0, "pid 1", None, Some(1 << 20)),
            sample(1.0, "pid 1", Some(50.0), Some(3 << 20)),
            sample(1.0, "pid 2", Some(10.0), None),
            sample(2.0, "pid 1", Some(150.0), Some(2 << 20)),
        ]);
        assert_eq!(usage.len(), 2);
        assert_eq!(usage[0].samples, 3);
        assert_eq!(usage[0].cpu_percent_mean, Some(100.0));
        assert_eq!(usage[0].cpu_percent_max, Some(150.0));
        assert_eq!(usage[0].rss_mib_mean, Some(2.0));
        assert_eq!(usage[0].rss_mib_max, Some(3.0));
        assert_eq!(usage[1].rss_mib_mean, None);
    }
}

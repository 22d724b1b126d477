//! What a run does, from the command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::stats::Op;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Each connection creates an ephemeral node and deletes it, on each of its paths,
    /// over and over; a create and a delete each count as a request.
    CreateDelete,
    /// A publisher connection per group creates ephemeral nodes under its paths; each
    /// path's subscriber connections watch for them (eventStat) and, with
    /// --get-after-notify, read them (dataStat).
    Pubsub,
    /// Each connection sets the data of each of its paths over and over.
    SetData,
}

impl Scenario {
    /// The operations that are the scenario's requests: its totalReq, TPS and
    /// rspTime. Pub/sub's are the publishes alone, as in the reference test.
    pub fn counted_ops(self) -> &'static [Op] {
        match self {
            Scenario::CreateDelete => &[Op::Create, Op::Delete],
            Scenario::Pubsub => &[Op::Create],
            Scenario::SetData => &[Op::SetData],
        }
    }

    /// Every operation the scenario times, in report order.
    pub fn ops(self, get_after_notify: bool) -> Vec<Op> {
        match self {
            Scenario::Pubsub if get_after_notify => {
                vec![Op::Create, Op::Exists, Op::GetData, Op::Event, Op::Data]
            }
            Scenario::Pubsub => vec![Op::Create, Op::Exists, Op::Event],
            _ => self.counted_ops().to_vec(),
        }
    }
}

impl std::fmt::Display for Scenario {
    /// The name the `--scenario` flag takes, so a report reads as the command was typed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_possible_value() {
            Some(value) => f.write_str(value.get_name()),
            None => write!(f, "{self:?}"),
        }
    }
}

/// When the measured part of a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopAt {
    Elapsed(Duration),
    Requests(u64),
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "paddock-loadgen",
    version,
    about = "Drives a ZooKeeper-protocol server with the reference load scenarios",
    after_help = "Several processes (on several machines) run as one: give each a distinct \
                  --client-id, the same --start-at and a --hist-log, then combine the logs \
                  with `paddock-loadgen merge LOG...` (see `paddock-loadgen merge --help`)."
)]
pub struct Plan {
    /// Connect string: host:port[,host:port...]. Connections are spread over the servers.
    #[arg(long, default_value = "127.0.0.1:2181")]
    pub servers: String,
    #[arg(long, value_enum, default_value = "create-delete")]
    pub scenario: Scenario,
    /// Worker connections (for pubsub: publisher connections; each also gets
    /// --subs-per-path subscriber connections).
    #[arg(long, default_value_t = 50)]
    pub conns: usize,
    /// Paths each connection works on (its own; connections never share a path).
    #[arg(long, default_value_t = 5)]
    pub paths_per_conn: usize,
    /// Bytes of znode data per write.
    #[arg(long, default_value_t = 255)]
    pub data_size: usize,
    /// Seconds to measure, after the warmup.
    #[arg(long, conflicts_with = "requests")]
    pub duration: Option<f64>,
    /// Requests to measure, after the warmup.
    #[arg(long)]
    pub requests: Option<u64>,
    /// Subscriber connections per path (pubsub).
    #[arg(long, default_value_t = 3)]
    pub subs_per_path: usize,
    /// After each watch event, read the node's data again (pubsub's dataStat).
    #[arg(long)]
    pub get_after_notify: bool,
    /// Seconds between live report lines.
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
    /// Seconds of load before measuring starts.
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
    /// Print one machine-readable summary line (JSON) instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// Write the per-interval series to this CSV file: the live columns, then each
    /// operation's count, failures, mean, p50, p95, p99, p99.9 and max.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw TPS, and mean and p99 response time, over time into this SVG file
    /// (pub/sub: also the eventStat and dataStat distributions).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// The parent znode of every process's paths: created if missing, and deleted at
    /// the end by the last process using it.
    #[arg(long, default_value = "/paddock-loadgen")]
    pub root: String,
    /// Session timeout asked for, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub session_timeout: f64,
    /// How long a subscriber waits for a watch event before counting it missed.
    #[arg(long, default_value_t = 10.0)]
    pub event_timeout: f64,
    /// Open loop: send this many requests per second in all (pub/sub: publishes),
    /// spread evenly over the connections, and measure each latency from the request's
    /// intended send time, so a stall is charged for the requests it delayed. Without
    /// it the run is closed-loop, as in the reference test: each connection sends its
    /// next request when the previous reply is in.
    #[arg(long)]
    pub rate: Option<f64>,
    /// This process's name among several driving one ensemble: it works under
    /// <root>/<client-id> and removes only that at the end (and <root> once empty).
    /// Default: <hostname>-<pid>.
    #[arg(long)]
    pub client_id: Option<String>,
    /// Start the load at this wall-clock time (Unix seconds, e.g. `$(($(date +%s) + 30))`)
    /// instead of once connected, so that processes on several machines (clocks in
    /// sync) run the same seconds. Connecting must be done by then.
    #[arg(long)]
    pub start_at: Option<f64>,
    /// Write every interval's histograms (one per operation) to this HdrHistogram
    /// interval log, losslessly, for `paddock-loadgen merge`.
    #[arg(long)]
    pub hist_log: Option<PathBuf>,
    /// Sample the CPU and resident memory of these server processes (comma-separated
    /// pids on this machine) from /proc during the run. Without it the servers' mntr
    /// is sampled instead (ZooKeeper's and Paddock's mntr have no CPU or memory
    /// figures; the report shows what it has).
    #[arg(long, value_delimiter = ',')]
    pub server_pids: Vec<u32>,
    /// Sample nothing from the servers.
    #[arg(long, conflicts_with = "server_pids")]
    pub no_server_stats: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("--{0} must be positive")]
    NotPositive(&'static str),
    #[error("--root must be an absolute znode path other than /: {0}")]
    Root(String),
    #[error("--client-id must be a single znode name (no '/', not '.' or '..'): {0:?}")]
    ClientId(String),
}

impl Plan {
    /// Checks the flags that clap can't.
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.conns == 0 {
            return Err(PlanError::NotPositive("conns"));
        }
        if self.paths_per_conn == 0 {
            return Err(PlanError::NotPositive("paths-per-conn"));
        }
        if self.scenario == Scenario::Pubsub && self.subs_per_path == 0 {
            return Err(PlanError::NotPositive("subs-per-path"));
        }
        if self.interval <= 0.0 || !self.interval.is_finite() {
            return Err(PlanError::NotPositive("interval"));
        }
        if self.root == "/" || paddock_wire::path::validate_path(&self.root, false).is_err() {
            return Err(PlanError::Root(self.root.clone()));
        }
        if self
            .rate
            .is_some_and(|rate| !(rate > 0.0 && rate.is_finite()))
        {
            return Err(PlanError::NotPositive("rate"));
        }
        let id = self.client_id();
        let child = format!("{}/{id}", self.root);
        if id.contains('/')
            || id == "."
            || id == ".."
            || paddock_wire::path::validate_path(&child, false).is_err()
        {
            return Err(PlanError::ClientId(id));
        }
        Ok(())
    }

    /// `--client-id`, or `<hostname>-<pid>`, unique among processes that run at once.
    pub fn client_id(&self) -> String {
        match &self.client_id {
            Some(id) => id.clone(),
            None => {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().replace('/', "_"))
                    .unwrap_or_default();
                let host = if host.is_empty() {
                    "client".into()
                } else {
                    host
                };
                format!("{host}-{}", std::process::id())
            }
        }
    }

    /// This process's parent znode: `<root>/<client-id>`.
    pub fn base(&self) -> String {
        format!("{}/{}", self.root, self.client_id())
    }

    /// Measured part of the run: --duration or --requests, 30 s if neither.
    pub fn stop_at(&self) -> StopAt {
        match (self.duration, self.requests) {
            (_, Some(n)) => StopAt::Requests(n),
            (Some(secs), None) => StopAt::Elapsed(secs_to_duration(secs)),
            (None, None) => StopAt::Elapsed(Duration::from_secs(30)),
        }
    }

    pub fn interval(&self) -> Duration {
        secs_to_duration(self.interval)
    }

    pub fn warmup(&self) -> Duration {
        secs_to_duration(self.warmup)
    }

    /// Every connection the run opens.
    pub fn total_connections(&self) -> usize {
        match self.scenario {
            Scenario::Pubsub => self.conns * (1 + self.subs_per_path),
            _ => self.conns,
        }
    }
}

fn secs_to_duration(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        Plan::parse_from(std::iter::once("paddock-loadgen").chain(args.iter().copied()))
    }

    #[test]
    fn client_ids_are_single_names() {
        assert!(plan(&["--client-id", "a"]).validate().is_ok());
        assert_eq!(
            plan(&["--client-id", "host-1"]).base(),
            "/paddock-loadgen/host-1"
        );
        for bad in ["a/b", "..", "", "."] {
            assert!(
                matches!(
                    plan(&["--client-id", bad]).validate(),
                    Err(PlanError::ClientId(_))
                ),
                "{bad:?}"
            );
        }
        // The default is a valid name too.
        assert!(plan(&[]).validate().is_ok());
    }

    #[test]
    fn a_rate_must_be_positive() {
        assert!(plan(&["--rate", "0"]).validate().is_err());
        assert!(plan(&["--rate", "100"]).validate().is_ok());
    }

    #[test]
    fn pubsub_counts_only_publishes() {
        assert_eq!(Scenario::Pubsub.counted_ops(), &[Op::Create]);
        assert!(Scenario::Pubsub.ops(true).contains(&Op::GetData));
        assert!(!Scenario::Pubsub.ops(false).contains(&Op::GetData));
    }
}

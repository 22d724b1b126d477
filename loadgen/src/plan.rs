//! What a run does, from the command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
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
    about = "Drives a ZooKeeper-protocol server with the reference load scenarios"
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
    /// Write the per-interval series to this CSV file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw TPS and latency over time into this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// The parent znode of every path; created at the start, deleted at the end.
    #[arg(long, default_value = "/paddock-loadgen")]
    pub root: String,
    /// Session timeout asked for, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub session_timeout: f64,
    /// How long a subscriber waits for a watch event before counting it missed.
    #[arg(long, default_value_t = 10.0)]
    pub event_timeout: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("--{0} must be positive")]
    NotPositive(&'static str),
    #[error("--root must be an absolute znode path other than /: {0}")]
    Root(String),
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
        Ok(())
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

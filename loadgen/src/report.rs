//! The reference report's columns, live every interval and as a final summary, plus
//! the per-operation tables, the servers' resources, `--json` and `--csv`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::plan::{Plan, Scenario};
use crate::resources::ServerUsage;
use crate::series::Series;
use crate::stats::{Op, Percentiles};

/// What was run, as the interval log records it; `merge` combines several.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunInfo {
    pub scenario: Scenario,
    pub servers: String,
    pub conns: usize,
    pub total_conns: usize,
    pub paths_per_conn: usize,
    pub subs_per_path: usize,
    pub data_size: usize,
    pub get_after_notify: bool,
    /// Open loop's requests per second in all; `None` for closed loop.
    pub rate: Option<f64>,
    pub client_ids: Vec<String>,
    /// Seconds between live rows (the intervals of the log).
    pub interval: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum CombineError {
    #[error("the runs differ in {0}: a merged report would mix different loads")]
    Differ(&'static str),
    #[error("client id {0:?} appears in two runs: each process needs its own --client-id")]
    DuplicateClient(String),
}

impl RunInfo {
    pub fn from_plan(plan: &Plan) -> RunInfo {
        RunInfo {
            scenario: plan.scenario,
            servers: plan.servers.clone(),
            conns: plan.conns,
            total_conns: plan.total_connections(),
            paths_per_conn: plan.paths_per_conn,
            subs_per_path: plan.subs_per_path,
            data_size: plan.data_size,
            get_after_notify: plan.get_after_notify,
            rate: plan.rate,
            client_ids: vec![plan.client_id()],
            interval: plan.interval,
        }
    }

    /// Adds another process's run of the same load: connections and rates add up.
    pub fn combine(&mut self, other: &RunInfo) -> Result<(), CombineError> {
        let same = |differs: bool, what| {
            if differs {
                Err(CombineError::Differ(what))
            } else {
                Ok(())
            }
        };
        same(self.scenario != other.scenario, "--scenario")?;
        same(self.data_size != other.data_size, "--data-size")?;
        same(
            self.get_after_notify != other.get_after_notify,
            "--get-after-notify",
        )?;
        same(
            self.paths_per_conn != other.paths_per_conn,
            "--paths-per-conn",
        )?;
        same(self.rate.is_some() != other.rate.is_some(), "loop (--rate)")?;
        same((self.interval - other.interval).abs() > 1e-9, "--interval")?;
        if let Some(id) = other
            .client_ids
            .iter()
            .find(|id| self.client_ids.contains(id))
        {
            return Err(CombineError::DuplicateClient(id.clone()));
        }
        self.conns += other.conns;
        self.total_conns += other.total_conns;
        self.rate = self.rate.zip(other.rate).map(|(a, b)| a + b);
        self.client_ids.extend(other.client_ids.iter().cloned());
        if !self
            .servers
            .split(',')
            .any(|s| other.servers.split(',').any(|o| o == s))
        {
            self.servers = format!("{};{}", self.servers, other.servers);
        }
        Ok(())
    }
}

/// One live line: the reference report's columns and the interval's p99.
#[derive(Debug, Clone)]
pub struct Row {
    /// Seconds since measuring started, at the end of the interval.
    pub t: f64,
    pub data_size: usize,
    pub total_req: u64,
    pub recent_tps: f64,
    pub avg_tps: f64,
    pub recent_rsp_time: f64,
    pub avg_rsp_time: f64,
    pub recent_p99: f64,
    pub fail_total: u64,
    /// The interval's numbers for each operation the scenario times (the CSV's).
    pub ops: Vec<(Op, Percentiles)>,
}

pub const HEADER: &str = "     t  dataSize   totalReq  recentTPS     avgTPS  recentRspTime(ms)  avgRspTime(ms)  recentP99(ms)  failTotal";

impl Row {
    pub fn line(&self) -> String {
        format!(
            "{:6.1}  {:8}  {:9}  {:9.0}  {:9.0}  {:17.2}  {:14.2}  {:13.2}  {:9}",
            self.t,
            self.data_size,
            self.total_req,
            self.recent_tps,
            self.avg_tps,
            self.recent_rsp_time,
            self.avg_rsp_time,
            self.recent_p99,
            self.fail_total
        )
    }
}

/// The end of a run (or of several merged).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub scenario: Scenario,
    pub servers: String,
    /// The processes whose samples this is: one, or several merged.
    pub client_ids: Vec<String>,
    pub conns: usize,
    pub total_conns: usize,
    pub paths_per_conn: usize,
    pub data_size: usize,
    /// `closed-loop` (the reference test's) or `open-loop` (`--rate`).
    pub mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Seconds measured (after the warmup).
    pub seconds: f64,
    /// The scenario's requests: create-delete's creates and deletes, set-data's
    /// setData calls, pub/sub's publishes (not the subscribers' reads).
    pub total_req: u64,
    /// Failed operations of every kind, missed events included.
    pub fail_total: u64,
    pub avg_tps: f64,
    /// The requests' response time, milliseconds.
    pub latency: Percentiles,
    /// Every timed operation's own distribution, by ZooKeeper's name for it.
    pub ops: BTreeMap<String, Percentiles>,
    /// Pub/sub: the subscribers' exists and getData calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscriber_reads: Option<Reads>,
    /// Pub/sub: events received and expected; a missed event is a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<EventSummary>,
    /// The servers' CPU and memory (or what their metrics offer) while measuring.
    pub server_resources: Vec<ServerUsage>,
    /// True when Ctrl-C ended the run early.
    pub interrupted: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Reads {
    pub count: u64,
    pub failures: u64,
    pub per_sec: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct EventSummary {
    pub expected: u64,
    pub received: u64,
    pub missed: u64,
    pub event_stat: Percentiles,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_stat: Option<Percentiles>,
}

impl Summary {
    pub fn new(
        info: &RunInfo,
        series: &Series,
        seconds: f64,
        interrupted: bool,
        server_resources: Vec<ServerUsage>,
    ) -> Summary {
        let totals = series.totals();
        let of = |op: Op| Percentiles::of(totals.hist(op), totals.failures(op));
        let latency = series.requests();
        let pubsub = info.scenario == Scenario::Pubsub;
        let subscriber_reads = pubsub.then(|| {
            let (exists, get) = (of(Op::Exists), of(Op::GetData));
            Reads {
                count: exists.count + get.count,
                failures: exists.failures + get.failures,
                per_sec: (exists.count + get.count) as f64 / seconds.max(1e-9),
            }
        });
        let events = pubsub.then(|| {
            let event_stat = of(Op::Event);
            EventSummary {
                expected: event_stat.count + event_stat.failures,
                received: event_stat.count,
                missed: event_stat.failures,
                event_stat,
                data_stat: info.get_after_notify.then(|| of(Op::Data)),
            }
        });
        Summary {
            scenario: info.scenario,
            servers: info.servers.clone(),
            client_ids: info.client_ids.clone(),
            conns: info.conns,
            total_conns: info.total_conns,
            paths_per_conn: info.paths_per_conn,
            data_size: info.data_size,
            mode: if info.rate.is_some() {
                "open-loop"
            } else {
                "closed-loop"
            },
            rate: info.rate,
            seconds,
            total_req: latency.count,
            fail_total: Op::ALL.iter().map(|&op| totals.failures(op)).sum(),
            avg_tps: latency.count as f64 / seconds.max(1e-9),
            latency,
            ops: series
                .shown()
                .iter()
                .map(|&op| (op.name().to_owned(), of(op)))
                .collect(),
            subscriber_reads,
            events,
            server_resources,
            interrupted,
        }
    }

    pub fn text(&self) -> String {
        let what = if self.scenario == Scenario::Pubsub {
            " (publishes)"
        } else {
            ""
        };
        let rate = self
            .rate
            .map(|r| format!(" at {r:.0}/s"))
            .unwrap_or_default();
        let clients = if self.client_ids.len() > 1 {
            format!(" clients={}", self.client_ids.len())
        } else {
            String::new()
        };
        let mut out = format!(
            "summary: {} dataSize={} conns={} ({} in all){clients} seconds={:.1} {}{rate}\n\
             totalReq={} avgTPS={:.0}{what} failTotal={}\n{}\n",
            self.scenario,
            self.data_size,
            self.conns,
            self.total_conns,
            self.seconds,
            self.mode,
            self.total_req,
            self.avg_tps,
            self.fail_total,
            percentile_line("rspTime", &self.latency),
        );
        if let Some(reads) = &self.subscriber_reads {
            out.push_str(&format!(
                "subscriber reads (exists, getData): {} ({:.0}/s), failed {}\n",
                reads.count, reads.per_sec, reads.failures
            ));
        }
        if let Some(events) = &self.events {
            out.push_str(&format!(
                "events received {} of {} (missed {})\n{}\n",
                events.received,
                events.expected,
                events.missed,
                percentile_line("eventStat", &events.event_stat)
            ));
            if let Some(data) = &events.data_stat {
                out.push_str(&percentile_line("dataStat", data));
                out.push('\n');
            }
        }
        out.push_str(&format!(
            "{:<10} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            "op (ms)", "count", "fails", "mean", "p50", "p95", "p99", "p99.9", "max"
        ));
        for op in Op::ALL {
            if let Some(p) = self.ops.get(op.name()) {
                out.push_str(&format!(
                    "{:<10} {:>9} {:>6} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}\n",
                    op.name(),
                    p.count,
                    p.failures,
                    p.mean,
                    p.p50,
                    p.p95,
                    p.p99,
                    p.p999,
                    p.max
                ));
            }
        }
        out.push_str(&crate::resources::table(&self.server_resources));
        if self.interrupted {
            out.push_str("(interrupted: the numbers so far)\n");
        }
        out
    }
}

fn percentile_line(name: &str, p: &Percentiles) -> String {
    format!(
        "{name} ms: mean={:.2} p50={:.2} p95={:.2} p99={:.2} p99.9={:.2} max={:.2}",
        p.mean, p.p50, p.p95, p.p99, p.p999, p.max
    )
}

/// Writes the per-interval series as CSV: the reference columns, the interval's p99,
/// then count, failures, mean, p50, p95, p99, p99.9 and max of each timed operation.
pub fn write_csv(path: &Path, rows: &[Row]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    write!(
        out,
        "t,dataSize,totalReq,recentTPS,avgTPS,recentRspTime,avgRspTime,recentP99,failTotal"
    )?;
    for (op, _) in rows.first().map_or(&[][..], |r| &r.ops[..]) {
        let name = op.name();
        for column in [
            "count", "failures", "mean", "p50", "p95", "p99", "p999", "max",
        ] {
            write!(out, ",{name}.{column}")?;
        }
    }
    writeln!(out)?;
    for r in rows {
        write!(
            out,
            "{:.3},{},{},{:.1},{:.1},{:.3},{:.3},{:.3},{}",
            r.t,
            r.data_size,
            r.total_req,
            r.recent_tps,
            r.avg_tps,
            r.recent_rsp_time,
            r.avg_rsp_time,
            r.recent_p99,
            r.fail_total
        )?;
        for (_, p) in &r.ops {
            write!(
                out,
                ",{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3}",
                p.count, p.failures, p.mean, p.p50, p.p95, p.p99, p.p999, p.max
            )?;
        }
        writeln!(out)?;
    }
    out.flush()
}

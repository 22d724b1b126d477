//! The reference report's columns, live every interval and as a final summary.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::plan::{Plan, Scenario};
use crate::stats::{Percentiles, Stats};

/// One live line: the reference report's columns.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    /// Seconds since measuring started.
    pub t: f64,
    pub data_size: usize,
    pub total_req: u64,
    pub recent_tps: f64,
    pub avg_tps: f64,
    pub recent_rsp_time: f64,
    pub avg_rsp_time: f64,
    pub fail_total: u64,
}

pub const HEADER: &str =
    "     t  dataSize   totalReq  recentTPS     avgTPS  recentRspTime(ms)  avgRspTime(ms)  failTotal";

impl Row {
    pub fn take(stats: &Stats, plan: &Plan, elapsed: Duration, interval: Duration) -> Row {
        let recent = stats.requests.take_interval();
        let total = stats.requests.summary();
        let secs = elapsed.as_secs_f64().max(1e-9);
        Row {
            t: elapsed.as_secs_f64(),
            data_size: plan.data_size,
            total_req: total.count,
            recent_tps: recent.count as f64 / interval.as_secs_f64().max(1e-9),
            avg_tps: total.count as f64 / secs,
            recent_rsp_time: recent.mean_ms,
            avg_rsp_time: total.mean,
            fail_total: total.failures,
        }
    }

    pub fn line(&self) -> String {
        format!(
            "{:6.1}  {:8}  {:9}  {:9.0}  {:9.0}  {:17.2}  {:14.2}  {:9}",
            self.t,
            self.data_size,
            self.total_req,
            self.recent_tps,
            self.avg_tps,
            self.recent_rsp_time,
            self.avg_rsp_time,
            self.fail_total
        )
    }
}

/// The end of a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub scenario: Scenario,
    pub servers: String,
    pub conns: usize,
    pub total_conns: usize,
    pub paths_per_conn: usize,
    pub data_size: usize,
    /// Seconds measured (after the warmup).
    pub seconds: f64,
    pub total_req: u64,
    pub fail_total: u64,
    pub avg_tps: f64,
    /// Response time of every request, milliseconds.
    pub latency: Percentiles,
    /// Pub/sub: events received and expected; a missed event is a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<EventSummary>,
    /// True when Ctrl-C ended the run early.
    pub interrupted: bool,
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
    pub fn new(plan: &Plan, stats: &Stats, measured: Duration, interrupted: bool) -> Summary {
        let latency = stats.requests.summary();
        let events = (plan.scenario == Scenario::Pubsub).then(|| {
            let event_stat = stats.events.summary();
            let missed = stats.events_missed.load(Ordering::Relaxed);
            EventSummary {
                expected: event_stat.count + missed,
                received: event_stat.count,
                missed,
                event_stat,
                data_stat: plan.get_after_notify.then(|| stats.data.summary()),
            }
        });
        let missed = events.as_ref().map_or(0, |e| e.missed);
        Summary {
            scenario: plan.scenario,
            servers: plan.servers.clone(),
            conns: plan.conns,
            total_conns: plan.total_connections(),
            paths_per_conn: plan.paths_per_conn,
            data_size: plan.data_size,
            seconds: measured.as_secs_f64(),
            total_req: latency.count,
            fail_total: latency.failures + missed,
            avg_tps: latency.count as f64 / measured.as_secs_f64().max(1e-9),
            latency,
            events,
            interrupted,
        }
    }

    pub fn text(&self) -> String {
        let mut out = format!(
            "summary: {} dataSize={} conns={} ({} in all) seconds={:.1}\n\
             totalReq={} avgTPS={:.0} failTotal={}\n{}\n",
            self.scenario,
            self.data_size,
            self.conns,
            self.total_conns,
            self.seconds,
            self.total_req,
            self.avg_tps,
            self.fail_total,
            percentile_line("rspTime", &self.latency),
        );
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

/// Writes the per-interval series as CSV.
pub fn write_csv(path: &Path, rows: &[Row]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        out,
        "t,dataSize,totalReq,recentTPS,avgTPS,recentRspTime,avgRspTime,failTotal"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:.3},{},{},{:.1},{:.1},{:.3},{:.3},{}",
            r.t,
            r.data_size,
            r.total_req,
            r.recent_tps,
            r.avg_tps,
            r.recent_rsp_time,
            r.avg_rsp_time,
            r.fail_total
        )?;
    }
    out.flush()
}

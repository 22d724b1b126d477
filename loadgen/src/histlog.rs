//! `--hist-log`: a run's intervals, losslessly, as an HdrHistogram interval log, the
//! format of Java's `HistogramLogWriter` (readable by HdrHistogram's own tools), so
//! that `paddock-loadgen merge` can add several processes' runs exactly.
//!
//! # Format
//! ```text
//! #paddock-loadgen log 1
//! #paddock-loadgen info {RunInfo as JSON}
//! #[StartTime: 1764763200.000 (seconds since epoch)]    <- measuring started
//! #[BaseTime: 1764763200.000 (seconds since epoch)]     <- timestamps count from here
//! #paddock-loadgen interval {"start":0.0,"length":1.0,"failures":{"create":2}}
//! Tag=create,0.000,1.000,12.345,HISTFAAA...             <- V2, deflate, base64; µs
//! Tag=delete,0.000,1.000,9.876,HISTFAAA...
//! ...                                                  <- one block per interval
//! #paddock-loadgen end {"seconds":30.0,"interrupted":false,"samples":[...]}
//! ```
//! Every interval has its `interval` line (with its failures per operation); a
//! histogram line follows for each operation with samples in it, tagged with the
//! operation's name ([`Op::name`]). Interval starts are whole milliseconds, so a
//! histogram's timestamp names its interval exactly. The file is flushed after each
//! interval: a process that dies leaves every interval it finished, and no `end`
//! line.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

use crate::report::RunInfo;
use crate::resources::Sample;
use crate::stats::{Interval, Op};

const PREFIX: &str = "paddock-loadgen ";
const VERSION_LINE: &str = "paddock-loadgen log 1";

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a paddock-loadgen interval log (no '#{VERSION_LINE}' line)")]
    NotOurs { path: PathBuf },
    #[error("{path}: bad {what} line: {detail}")]
    Bad {
        path: PathBuf,
        what: &'static str,
        detail: String,
    },
    #[error("{path}: {what}")]
    Missing { path: PathBuf, what: &'static str },
}

#[derive(serde::Serialize, serde::Deserialize)]
struct IntervalLine {
    start: f64,
    length: f64,
    failures: BTreeMap<String, u64>,
}

/// What a finished run adds at the end.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct End {
    pub seconds: f64,
    pub interrupted: bool,
    pub samples: Vec<Sample>,
}

/// Writes one run's log.
pub struct LogWriter {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    serializer: V2DeflateSerializer,
}

/// An interval start, in whole milliseconds (see the format).
pub fn whole_ms(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

impl LogWriter {
    /// Creates the file and writes the header; `started` is when measuring began.
    pub fn create(path: &Path, info: &RunInfo, started: SystemTime) -> Result<LogWriter, LogError> {
        let io = |source| LogError::Io {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut writer = LogWriter {
            path: path.to_owned(),
            out: std::io::BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
        };
        let info = serde_json::to_string(info).map_err(|e| io(e.into()))?;
        IntervalLogWriterBuilder::new()
            .add_comment(VERSION_LINE)
            .add_comment(&format!("{PREFIX}info {info}"))
            .with_start_time(started)
            .with_base_time(started)
            .begin_log_with(&mut writer.out, &mut writer.serializer)
            .map_err(io)?;
        writer.out.flush().map_err(io)?;
        Ok(writer)
    }

    fn io(&self, source: std::io::Error) -> LogError {
        LogError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Appends one interval (whose start is in whole milliseconds) and flushes.
    pub fn interval(&mut self, interval: &Interval) -> Result<(), LogError> {
        let line = IntervalLine {
            start: interval.start,
            length: interval.length,
            failures: Op::ALL
                .iter()
                .filter(|&&op| interval.failures(op) > 0)
                .map(|&op| (op.name().to_owned(), interval.failures(op)))
                .collect(),
        };
        let json = serde_json::to_string(&line).map_err(|e| self.io(e.into()))?;
        writeln!(self.out, "#{PREFIX}interval {json}").map_err(|e| self.io(e))?;
        let mut log = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.out, &mut self.serializer)
            .map_err(|e| LogError::Io {
                path: self.path.clone(),
                source: e,
            })?;
        for op in Op::ALL {
            let h = interval.hist(op);
            if h.is_empty() {
                continue;
            }
            log.write_histogram(
                h,
                Duration::from_secs_f64(interval.start.max(0.0)),
                Duration::from_secs_f64(interval.length.max(0.0)),
                Tag::new(op.name()),
            )
            .map_err(|e| LogError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(format!("{e:?}")),
            })?;
        }
        self.out.flush().map_err(|e| self.io(e))
    }

    /// Appends the end line and flushes.
    pub fn end(mut self, end: &End) -> Result<(), LogError> {
        let json = serde_json::to_string(end).map_err(|e| self.io(e.into()))?;
        writeln!(self.out, "#{PREFIX}end {json}").map_err(|e| self.io(e))?;
        self.out.flush().map_err(|e| self.io(e))
    }
}

/// One run, read back.
#[derive(Debug, Clone)]
pub struct Recording {
    pub info: RunInfo,
    /// When measuring started, seconds since the epoch.
    pub start_unix: f64,
    pub intervals: Vec<Interval>,
    /// `None` when the process did not finish its log.
    pub end: Option<End>,
}

impl Recording {
    /// Seconds measured: as the run said, or up to its last interval.
    pub fn seconds(&self) -> f64 {
        match &self.end {
            Some(end) => end.seconds,
            None => self.intervals.last().map_or(0.0, |i| i.start + i.length),
        }
    }
}

pub fn read(path: &Path) -> Result<Recording, LogError> {
    let bytes = std::fs::read(path).map_err(|source| LogError::Io {
        path: path.to_owned(),
        source,
    })?;
    let bad = |what, detail: String| LogError::Bad {
        path: path.to_owned(),
        what,
        detail,
    };
    let text = String::from_utf8_lossy(&bytes);
    if !text.lines().any(|l| l == format!("#{VERSION_LINE}")) {
        return Err(LogError::NotOurs {
            path: path.to_owned(),
        });
    }
    let mut info = None;
    let mut end = None;
    let mut intervals = Vec::new();
    let mut by_start: HashMap<i64, usize> = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix('#').and_then(|l| l.strip_prefix(PREFIX)) else {
            continue;
        };
        let (kind, json) = rest.split_once(' ').unwrap_or((rest, ""));
        match kind {
            "info" => {
                info = Some(
                    serde_json::from_str::<RunInfo>(json)
                        .map_err(|e| bad("info", e.to_string()))?,
                )
            }
            "interval" => {
                let line: IntervalLine =
                    serde_json::from_str(json).map_err(|e| bad("interval", e.to_string()))?;
                let mut interval = Interval::empty(line.start, line.length);
                for (name, n) in line.failures {
                    let op = Op::from_name(&name)
                        .ok_or_else(|| bad("interval", format!("unknown operation {name}")))?;
                    *interval.failures_mut(op) = n;
                }
                by_start.insert(millis(line.start), intervals.len());
                intervals.push(interval);
            }
            "end" => {
                end =
                    Some(serde_json::from_str::<End>(json).map_err(|e| bad("end", e.to_string()))?)
            }
            _ => {}
        }
    }
    let mut start_unix = None;
    let mut deserializer = Deserializer::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.map_err(|e| bad("histogram", format!("{e:?}")))?;
        match entry {
            LogEntry::StartTime(t) => start_unix = Some(t.as_secs_f64()),
            LogEntry::BaseTime(_) => {}
            LogEntry::Interval(h) => {
                let tag = h.tag().map(|t| t.as_str()).unwrap_or("");
                let op = Op::from_name(tag)
                    .ok_or_else(|| bad("histogram", format!("unknown tag {tag:?}")))?;
                let start = h.start_timestamp().as_secs_f64();
                let index = *by_start.get(&millis(start)).ok_or_else(|| {
                    bad(
                        "histogram",
                        format!("no interval line for start {start:.3}"),
                    )
                })?;
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(h.encoded_histogram())
                    .map_err(|e| bad("histogram", e.to_string()))?;
                let decoded: hdrhistogram::Histogram<u64> = deserializer
                    .deserialize(&mut &raw[..])
                    .map_err(|e| bad("histogram", format!("{e:?}")))?;
                crate::stats::add(intervals[index].hist_mut(op), &decoded);
            }
        }
    }
    let missing = |what| LogError::Missing {
        path: path.to_owned(),
        what,
    };
    Ok(Recording {
        info: info.ok_or_else(|| missing("no info line"))?,
        start_unix: start_unix.ok_or_else(|| missing("no StartTime line"))?,
        intervals,
        end,
    })
}

fn millis(secs: f64) -> i64 {
    (secs * 1000.0).round() as i64
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::Scenario;

    pub(crate) fn info(id: &str) -> RunInfo {
        RunInfo {
            scenario: Scenario::CreateDelete,
            servers: "127.0.0.1:2181".into(),
            conns: 2,
            total_conns: 2,
            paths_per_conn: 1,
            subs_per_path: 3,
            data_size: 255,
            get_after_notify: false,
            rate: None,
            client_ids: vec![id.into()],
            interval: 1.0,
        }
    }

    #[test]
    fn a_log_reads_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.hlog");
        let started = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let mut writer = LogWriter::create(&path, &info("a"), started).unwrap();
        let mut first = Interval::empty(0.0, 1.0);
        for v in [1, 17, 950, 12_345, 3_600_000_000] {
            first.hist_mut(Op::Create).record(v).unwrap();
        }
        first.hist_mut(Op::Delete).record(42).unwrap();
        *first.failures_mut(Op::Delete) = 3;
        let mut second = Interval::empty(1.0, 0.437);
        second.hist_mut(Op::Create).record(7).unwrap();
        writer.interval(&first).unwrap();
        writer.interval(&second).unwrap();
        writer
            .end(&End {
                seconds: 1.437,
                interrupted: false,
                samples: vec![],
            })
            .unwrap();

        let back = read(&path).unwrap();
        assert_eq!(back.info, info("a"));
        assert!((back.start_unix - 1_700_000_000.123).abs() < 1e-6);
        assert_eq!(back.intervals.len(), 2);
        assert_eq!(back.intervals[0].hist(Op::Create), first.hist(Op::Create));
        assert_eq!(back.intervals[0].hist(Op::Delete), first.hist(Op::Delete));
        assert_eq!(back.intervals[0].failures(Op::Delete), 3);
        assert_eq!(back.intervals[1].hist(Op::Create), second.hist(Op::Create));
        assert!((back.seconds() - 1.437).abs() < 1e-9);
    }

    #[test]
    fn the_end_line_s_numbers_read_back_to_the_bit() {
        // Decimal strings serde_json's default (fast, not correctly rounded) parser
        // reads one ulp off; the merged report is compared with its parts exactly.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.hlog");
        let writer = LogWriter::create(&path, &info("e"), SystemTime::UNIX_EPOCH).unwrap();
        let (seconds, t, cpu) = (3.9669021739130397, 1.1170611382836821, 3.9669021739130397);
        let sample = Sample {
            t,
            server: "pid 1".into(),
            source: "proc".into(),
            cpu_percent: Some(cpu),
            rss_bytes: Some(1),
            metrics: BTreeMap::new(),
        };
        writer
            .end(&End {
                seconds,
                interrupted: false,
                samples: vec![sample],
            })
            .unwrap();

        let end = read(&path).unwrap().end.expect("an end line");
        assert_eq!(end.seconds.to_bits(), seconds.to_bits());
        assert_eq!(end.samples[0].t.to_bits(), t.to_bits());
        assert_eq!(
            end.samples[0].cpu_percent.map(f64::to_bits),
            Some(cpu.to_bits())
        );
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.hlog");
        std::fs::write(&path, "Tag=a,0.0,1.0,1.0,xyz\n").unwrap();
        assert!(matches!(read(&path), Err(LogError::NotOurs { .. })));
    }
}
